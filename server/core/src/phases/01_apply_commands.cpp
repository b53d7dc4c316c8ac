// Phase 1 of World::step(): the inbox is drained in arrival order and each
// command applied by its own function (server/core/src/commands/<command>.cpp),
// which fills the command's one CommandResult.
#include <variant>

#include "bustle/core/world.hpp"

namespace bustle::core {

void World::phase_apply_commands() {
  while (inbox_count_ > 0) {
    CommandEnvelope env = std::move(inbox_[inbox_head_]);
    inbox_head_ = (inbox_head_ + 1) % inbox_.size();
    --inbox_count_;
    CommandResult r = apply(env);
    if (r.status == CommandStatus::Accepted) {
      ++counters_.commands_accepted;
    } else {
      ++counters_.commands_rejected;
    }
    results_.push_back(std::move(r));
  }
}

// One function per command kind (commands/<command>.cpp), chosen by overload.
CommandResult World::apply(const CommandEnvelope& env) {
  CommandResult r;
  r.origin = env.origin;
  r.step = step_index_;
  std::visit([&](const auto& command) { apply_command(command, r); }, env.command);
  return r;
}

}  // namespace bustle::core
