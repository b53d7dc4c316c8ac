// Helpers shared by the World's source files (world.cpp, phases/, commands/);
// not part of the core's interface.
#pragma once

#include <string>
#include <utility>

#include "bustle/core/command.hpp"

namespace bustle::core {

// std::visit over a set of lambdas.
template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// A command's refusal: nothing changed; `message` is the text its sender sees.
inline void reject(CommandResult& r, RejectReason reason, std::string message) {
  r.status = CommandStatus::Rejected;
  r.reason = reason;
  r.message = std::move(message);
}

inline void accept(CommandResult& r) {
  r.status = CommandStatus::Accepted;
}

// "entity <index>:<generation>", as command messages name an id.
inline std::string entity_text(EntityId id) {
  return "entity " + std::to_string(id.index) + ":" + std::to_string(id.generation);
}

}  // namespace bustle::core
