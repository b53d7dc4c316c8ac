#include "sim_driver.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

namespace bustle::app {

using Clock = std::chrono::steady_clock;

SimDriver::SimDriver(core::World& world, net::Server& server, net::CommandQueue& commands,
                     SimDriverOptions options)
    : world_(world), server_(server), commands_(commands), options_(options) {
  // Clients that join before the first step get a baseline of the initial state.
  server_.publish(net::make_published_frame(world_));
}

void SimDriver::run(const std::atomic<bool>& stop) {
  const auto step = std::chrono::microseconds(world_.step_us());
  Clock::time_point next_due{};
  while (!stop.load()) {
    drain_commands();
    if (stop.load()) break;

    if (options_.clock == net::ClockMode::Manual || paused_) {
      // Nothing runs until a command arrives (Step, Resume) or shutdown.
      commands_.wait_until(Clock::now() + std::chrono::milliseconds(200));
      continue;
    }
    if (options_.clock == net::ClockMode::Fast) {
      run_step();
      continue;
    }

    // Realtime.
    const auto now = Clock::now();
    if (resync_clock_) {
      next_due = now + step;
      resync_clock_ = false;
      continue;
    }
    if (now < next_due) {
      commands_.wait_until(next_due);
      continue;
    }
    auto due = static_cast<std::uint64_t>((now - next_due) / step) + 1;
    if (due > options_.catchup_steps_max) {
      const std::uint64_t dropped = due - options_.catchup_steps_max;
      dropped_steps_ += dropped;
      next_due += step * static_cast<std::int64_t>(dropped);
      spdlog::warn("sim thread fell behind: dropped {} steps of wall-clock debt (total {})", dropped,
                   dropped_steps_);
      due = options_.catchup_steps_max;
    }
    for (std::uint64_t k = 0; k < due && !stop.load(); ++k) {
      run_step();
      next_due += step;
    }
  }
}

void SimDriver::drain_commands() {
  while (auto cmd = commands_.try_pop()) handle(std::move(*cmd));
}

void SimDriver::handle(net::InboundCommand cmd) {
  net::OutboundResult r;
  r.session_id = cmd.session_id;
  r.request_id = cmd.request_id;
  r.applied_step = world_.step_index();

  if (auto* world_cmd = std::get_if<core::WorldCommand>(&cmd.body)) {
    const core::SubmitStatus st = world_.submit(
        core::CommandEnvelope{core::CommandOrigin{cmd.session_id, cmd.request_id}, *world_cmd});
    if (st == core::SubmitStatus::Queued) return;  // answered after the next step
    r.status = core::CommandStatus::Rejected;
    r.reason = core::RejectReason::InboxFull;
    r.message = "world command inbox is full";
    server_.deliver_result(std::move(r));
    return;
  }

  const auto& ctl = std::get<net::ControlCommand>(cmd.body);
  r.status = core::CommandStatus::Accepted;
  switch (ctl.kind) {
    case net::ControlCommand::Kind::Pause:
      paused_ = true;
      spdlog::info("paused at step {} by client {}", world_.step_index(), cmd.session_id);
      break;
    case net::ControlCommand::Kind::Resume:
      if (paused_) spdlog::info("resumed at step {} by client {}", world_.step_index(), cmd.session_id);
      paused_ = false;
      resync_clock_ = true;  // no catch-up burst for the time spent paused
      break;
    case net::ControlCommand::Kind::Step:
      if (options_.clock != net::ClockMode::Manual) {
        r.status = core::CommandStatus::Rejected;
        r.reason = core::RejectReason::WrongClockMode;
        r.message = "Step is only valid with --clock manual";
        break;
      }
      if (ctl.step_count < 1 || ctl.step_count > options_.manual_step_max) {
        r.status = core::CommandStatus::Rejected;
        r.reason = core::RejectReason::InvalidArgument;
        r.message = "count must be in [1, " + std::to_string(options_.manual_step_max) + "]";
        break;
      }
      for (std::uint32_t k = 0; k < ctl.step_count; ++k) run_step();
      r.applied_step = world_.step_index();
      break;
    case net::ControlCommand::Kind::QueryStats:
      r.stats = stats();
      break;
  }
  server_.deliver_result(std::move(r));
}

void SimDriver::run_step() {
  world_.step();
  server_.publish(net::make_published_frame(world_));
  for (const core::CommandResult& cr : world_.last_command_results()) {
    net::OutboundResult r;
    r.session_id = cr.origin.client_id;
    r.request_id = cr.origin.request_id;
    r.status = cr.status;
    r.reason = cr.reason;
    r.message = cr.message;
    r.applied_step = cr.step;
    server_.deliver_result(std::move(r));
  }
}

net::StatsSnapshot SimDriver::stats() const {
  net::StatsSnapshot s;
  s.step = world_.step_index();
  s.sim_time_us = world_.sim_time_us();
  s.digest = world_.digest();
  s.step_us = world_.step_us();
  s.clock_mode = options_.clock;
  s.paused = paused_;
  s.pedestrians = world_.pedestrians().size();
  s.pedestrian_target = world_.pedestrian_target();
  s.entity_capacity = world_.registry().capacity();
  s.clients = server_.client_count();
  s.spawned_total = world_.counters().spawned_total;
  s.despawned_total = world_.counters().despawned_total;
  s.commands_accepted = world_.counters().commands_accepted;
  s.commands_rejected = world_.counters().commands_rejected;
  s.dropped_steps = dropped_steps_;
  return s;
}

}  // namespace bustle::app
