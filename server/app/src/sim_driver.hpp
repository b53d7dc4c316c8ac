// The sim thread: the only code that mutates the World.
//
// It drains the network's CommandQueue, handles clock commands (pause, resume,
// step, stats) itself, hands world commands to World::submit, runs steps under
// the chosen clock mode, publishes one immutable frame per step and routes
// command results back. It never touches a socket.
//
// Clock modes:
//   realtime  fixed-step accumulator: a step is due every step_us of wall time;
//             after a stall at most catchup_steps_max steps run per wake, the
//             rest are dropped and counted (dropped_steps), so the city never
//             fast-forwards in a burst;
//   fast      steps back to back (replay, bench, soak);
//   manual    steps only on a Step(n) command (scripted tests, co-simulation).
// World commands are applied at the start of the next step, so in manual mode
// (or while paused) their result arrives after the next step runs.
#pragma once

#include <atomic>
#include <cstdint>

#include "bustle/core/world.hpp"
#include "bustle/net/command_queue.hpp"
#include "bustle/net/server.hpp"

namespace bustle::app {

struct SimDriverOptions {
  net::ClockMode clock = net::ClockMode::Realtime;
  std::uint32_t catchup_steps_max = 5;
  std::uint32_t manual_step_max = 100'000;  // per Step command
};

class SimDriver {
 public:
  SimDriver(core::World& world, net::Server& server, net::CommandQueue& commands,
            SimDriverOptions options);

  // Runs until stop is set (and commands.close() wakes it).
  void run(const std::atomic<bool>& stop);

  std::uint64_t dropped_steps() const { return dropped_steps_; }

 private:
  void drain_commands();
  void handle(net::InboundCommand cmd);
  void run_step();
  net::StatsSnapshot stats() const;

  core::World& world_;
  net::Server& server_;
  net::CommandQueue& commands_;
  SimDriverOptions options_;
  bool paused_ = false;
  bool resync_clock_ = true;  // realtime: restart the schedule from "now"
  std::uint64_t dropped_steps_ = 0;
};

}  // namespace bustle::app
