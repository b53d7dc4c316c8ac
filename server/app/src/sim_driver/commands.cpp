// Command dispatch on the sim thread: a world command goes to the world's
// inbox and is answered after the next step (or refused when the inbox is
// full); a control command is a notice (leases, client observers), a clock
// control (Pause, Resume, Step), a query (queries.cpp) or a snapshot job
// (snapshots.cpp), answered at once or by the persistence thread.
#include <spdlog/spdlog.h>

#include <string>
#include <utility>

#include "internal.hpp"
#include "sim_driver.hpp"

namespace bustle::app {

void SimDriver::drain_commands() {
  while (!deferred_.empty()) {
    net::InboundCommand cmd = std::move(deferred_.front());
    deferred_.pop_front();
    handle(std::move(cmd));
  }
  while (auto cmd = commands_.try_pop()) handle(std::move(*cmd));
}

void SimDriver::answer_queries_while_waiting() {
  while (auto cmd = commands_.try_pop()) {
    const auto* ctl = std::get_if<net::ControlCommand>(&cmd->body);
    net::OutboundResult r;
    r.session_id = cmd->session_id;
    r.request_id = cmd->request_id;
    r.applied_step = world_->step_index();
    r.status = core::CommandStatus::Accepted;
    if (ctl != nullptr && answer_query(*ctl, r)) {
      server_.deliver_result(std::move(r));
    } else if (ctl != nullptr && deferred_.empty() &&
               (ctl->kind == Kind::Pause || ctl->kind == Kind::Resume)) {
      // Only whether the loop steps: a gateway pausing the city reaches a
      // district held at its barrier by a neighbour it paused first.
      handle(std::move(*cmd));
    } else {
      deferred_.push_back(std::move(*cmd));
    }
  }
}

void SimDriver::handle(net::InboundCommand cmd) {
  net::OutboundResult r;
  r.session_id = cmd.session_id;
  r.request_id = cmd.request_id;
  r.applied_step = world_->step_index();

  if (auto* world_cmd = std::get_if<core::WorldCommand>(&cmd.body)) {
    const core::CommandEnvelope env{core::CommandOrigin{cmd.session_id, cmd.request_id},
                                    *world_cmd};
    if (world_->submit(env) == core::SubmitStatus::Queued) {
      if (recorder_ != nullptr) submitted_since_step_.push_back(env);
      awaiting_result_.insert({cmd.session_id, cmd.request_id});
      return;  // answered after the next step
    }
    r.status = core::CommandStatus::Rejected;
    r.reason = core::RejectReason::InboxFull;
    r.message = "world command inbox is full";
    server_.deliver_result(std::move(r));
    return;
  }

  const auto& ctl = std::get<net::ControlCommand>(cmd.body);
  r.status = core::CommandStatus::Accepted;
  switch (ctl.kind) {
    case Kind::LeasesHeld:  // a notice: never answered
      leases_held(ctl.entities);
      return;
    case Kind::ClientObservers:  // a notice: never answered
      if (ctl.observers.empty()) {
        session_observers_.erase(cmd.session_id);
      } else {
        session_observers_[cmd.session_id] = ctl.observers;
      }
      client_observers_dirty_ = true;
      return;
    case Kind::ReportAttached:
      report_attached(ctl.entity, r);
      break;
    case Kind::Pause:
      paused_ = true;
      spdlog::info("paused at step {} by client {}", world_->step_index(), cmd.session_id);
      break;
    case Kind::Resume:
      if (paused_)
        spdlog::info("resumed at step {} by client {}", world_->step_index(), cmd.session_id);
      paused_ = false;
      clock_.request_resync();  // no catch-up burst for the time spent paused
      break;
    case Kind::Step:
      step_command(ctl, r);
      break;
    default:
      if (answer_query(ctl, r)) break;
      if (handle_snapshot_command(cmd, ctl, r)) return;  // answered by the persistence thread
      break;
  }
  server_.deliver_result(std::move(r));
}

void SimDriver::step_command(const net::ControlCommand& ctl, net::OutboundResult& r) {
  if (options_.clock != net::ClockMode::Manual) {
    r.status = core::CommandStatus::Rejected;
    r.reason = core::RejectReason::WrongClockMode;
    r.message = "Step is only valid with --clock manual";
    return;
  }
  if (ctl.step_count < 1 || ctl.step_count > options_.manual_step_max) {
    r.status = core::CommandStatus::Rejected;
    r.reason = core::RejectReason::InvalidArgument;
    r.message = "count must be in [1, " + std::to_string(options_.manual_step_max) + "]";
    return;
  }
  for (std::uint32_t k = 0; k < ctl.step_count && invariant_failure_.ok(); ++k) run_step();
  r.applied_step = world_->step_index();
}

}  // namespace bustle::app
