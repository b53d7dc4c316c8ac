// bustle-replay serve: re-simulates a recording and streams it through the
// same net::Server as the live bustle-server, so any client can watch it.
//
// Threads: this (sim) thread owns the Replayer and its World; one network
// thread runs the Server. As in the live server, the network side only
// enqueues commands and sends frames the sim thread published.
//
// Playback state:
//   Playing --Pause--> Paused --Resume--> Playing
//   Playing --last tick--> Ended (keeps serving the last frame)
//                      \--with --loop--> Playing from the start keyframe
//   any --read/restore error--> Ended (logged; the last good frame stays)
#include <spdlog/spdlog.h>

#include <atomic>
#include <cassert>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <thread>

#include "bustle/app/fixed_step_clock.hpp"
#include "bustle/app/process_startup.hpp"
#include "bustle/net/command_queue.hpp"
#include "bustle/net/published_frame.hpp"
#include "bustle/net/server.hpp"
#include "bustle/replay/commands.hpp"
#include "bustle/replay/replayer.hpp"

#ifndef BUSTLE_VERSION
#define BUSTLE_VERSION "unknown"
#endif

namespace bustle::replay {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kCatchupStepsMax = 5;
constexpr const char* kReadOnly = "replay is read-only";

class ReplayDriver {
 public:
  ReplayDriver(Replayer& replayer, net::Server& server, net::CommandQueue& commands,
               net::ClockMode clock, std::chrono::microseconds interval, std::uint64_t start_tick,
               bool loop)
      : rep_(replayer),
        server_(server),
        commands_(commands),
        clock_(clock),
        interval_(interval),
        step_clock_(interval, kCatchupStepsMax),
        start_tick_(start_tick),
        loop_(loop),
        archetypes_(net::make_archetypes(rep_.world().scenario())) {
    assert(rep_.has_world());
    assert(interval_.count() > 0);
    publish();
    if (rep_.at_end()) end_of_recording();
  }

  void run(const std::atomic<bool>& stop) {
    while (!stop.load()) {
      while (auto cmd = commands_.try_pop()) handle(std::move(*cmd));
      if (stop.load()) break;
      if (paused_ || ended_) {
        commands_.wait_until(Clock::now() + std::chrono::milliseconds(200));
        continue;
      }
      if (clock_ == net::ClockMode::Fast) {
        advance();
        continue;
      }
      // Realtime: the live server's fixed-step clock, catch-up capped so a
      // stall never turns into a burst.
      const app::FixedStepClock::Due due = step_clock_.poll(Clock::now());
      if (due.dropped > 0) {
        dropped_steps_ += due.dropped;
        spdlog::warn("replay fell behind: dropped {} steps of wall-clock debt (total {})",
                     due.dropped, dropped_steps_);
      }
      if (due.steps == 0) {
        commands_.wait_until(due.wake_at);
        continue;
      }
      for (std::uint64_t k = 0; k < due.steps && !stop.load() && !ended_ && !paused_; ++k) {
        advance();
        step_clock_.stepped();
      }
    }
  }

 private:
  void publish() { server_.publish(frames_.make(rep_.world(), archetypes_, rep_.world_epoch())); }

  void advance() {
    assert(!ended_);
    TickOutcome oc;
    if (ReplayError e = rep_.next_tick(oc); !e.ok()) {
      spdlog::error("replay stopped at tick {}: {}", rep_.next_tick_number(), e.message);
      ended_ = true;
      return;
    }
    ++pass_ticks_;
    if (oc.diverged()) {
      if (pass_diverged_ == 0) {
        spdlog::warn("DIVERGED at tick {} step {}: recorded {:016x} replayed {:016x}", oc.tick,
                     oc.recorded_step, oc.recorded_digest, oc.replayed_digest);
      }
      ++pass_diverged_;
    }
    publish();
    if (rep_.at_end()) end_of_recording();
  }

  void end_of_recording() {
    if (pass_diverged_ > 0) {
      spdlog::warn("end of recording: {} of {} replayed ticks diverged from the recorded digests",
                   pass_diverged_, pass_ticks_);
    } else {
      spdlog::info("end of recording at tick {} (step {}): {} ticks verified", rep_.last_tick(),
                   rep_.world().step_index(), pass_ticks_);
    }
    pass_ticks_ = 0;
    pass_diverged_ = 0;
    if (loop_ && rep_.last_tick() > 0) {
      if (ReplayError e = rep_.seek(start_tick_); !e.ok()) {
        spdlog::error("cannot loop: {}", e.message);
        ended_ = true;
        return;
      }
      spdlog::info("looping: restarting at tick {} (step {})", rep_.next_tick_number(),
                   rep_.world().step_index());
      publish();
      return;
    }
    ended_ = true;
  }

  void handle(net::InboundCommand cmd) {
    spdlog::debug("command {} from client {}", cmd.request_id, cmd.session_id);
    net::OutboundResult r;
    r.session_id = cmd.session_id;
    r.request_id = cmd.request_id;
    r.applied_step = rep_.world().step_index();
    r.status = core::CommandStatus::Accepted;
    const auto* ctl = std::get_if<net::ControlCommand>(&cmd.body);
    using Kind = net::ControlCommand::Kind;
    // The network side's own notices (a viewer's observers, leases held):
    // nothing to answer, and a recording's tiers never follow its viewers.
    if (ctl != nullptr && (ctl->kind == Kind::ClientObservers || ctl->kind == Kind::LeasesHeld))
      return;
    if (ctl != nullptr && ctl->kind == Kind::Pause) {
      if (!paused_)
        spdlog::info("paused at step {} by client {}", rep_.world().step_index(), cmd.session_id);
      paused_ = true;
    } else if (ctl != nullptr && ctl->kind == Kind::Resume) {
      if (paused_)
        spdlog::info("resumed at step {} by client {}", rep_.world().step_index(), cmd.session_id);
      paused_ = false;
      step_clock_.request_resync();
    } else if (ctl != nullptr && ctl->kind == Kind::QueryStats) {
      r.stats.emplace(stats());
    } else {
      // World commands, Step, snapshots: nothing may change a recording.
      r.status = core::CommandStatus::Rejected;
      r.reason = core::RejectReason::NotAuthorized;
      r.message = kReadOnly;
    }
    server_.deliver_result(std::move(r));
  }

  net::StatsSnapshot stats() const {
    const core::World& w = rep_.world();
    net::StatsSnapshot s;
    s.step = w.step_index();
    s.sim_time_us = w.sim_time_us();
    s.digest = w.digest();
    s.step_us = w.step_us();
    s.clock_mode = static_cast<wire::ClockMode>(clock_);
    s.paused = paused_ || ended_;  // nothing steps once the recording has ended
    s.pedestrians = w.pedestrians().size();
    s.pedestrian_target = w.pedestrian_target();
    s.entity_capacity = w.registry().capacity();
    s.clients = server_.client_count();
    s.spawned_total = w.counters().spawned_total;
    s.despawned_total = w.counters().despawned_total;
    s.commands_accepted = w.counters().commands_accepted;
    s.commands_rejected = w.counters().commands_rejected;
    s.dropped_steps = dropped_steps_;
    s.hour = w.population().hour();
    s.time_scale = w.population().time_scale();
    return s;
  }

  Replayer& rep_;
  net::Server& server_;
  net::CommandQueue& commands_;
  const net::ClockMode clock_;
  const std::chrono::microseconds interval_;
  app::FixedStepClock step_clock_;  // realtime: which ticks are due
  const std::uint64_t start_tick_;
  const bool loop_;
  const net::ArchetypeTable archetypes_;  // Welcome.archetypes of the recording's scenario
  net::FramePool frames_;                 // published frames, reused once the network side lets go
  bool paused_ = false;
  bool ended_ = false;
  std::uint64_t dropped_steps_ = 0;
  std::uint64_t pass_ticks_ = 0;
  std::uint64_t pass_diverged_ = 0;
};

}  // namespace

int run_serve(const ReplayOptions& options) {
  // --log-level is checked by the option parser (it also accepts "critical").
  app::ignore_hangup();
  app::start_logging("text", options.log_level);

  app::SpdlogSink core_log("core: ");
  std::unique_ptr<Replayer> rep;
  if (ReplayError e = Replayer::open(options.file, rep, &core_log); !e.ok()) {
    std::fprintf(stderr, "bustle-replay: %s\n", e.message.c_str());
    return 2;
  }
  std::uint64_t start_tick = 1;
  if (options.from_step) {
    std::optional<std::uint64_t> t;
    if (ReplayError e = rep->first_tick_at_step(*options.from_step, t); !e.ok()) {
      std::fprintf(stderr, "bustle-replay: %s\n", e.message.c_str());
      return 2;
    }
    if (!t) {
      std::fprintf(stderr,
                   "bustle-replay: %s: table recording_ticks: no tick reaches step %" PRIu64
                   " (--from-step)\n",
                   options.file.c_str(), *options.from_step);
      return 2;
    }
    start_tick = *t;
  }
  if (ReplayError e = rep->seek(start_tick); !e.ok()) {
    std::fprintf(stderr, "bustle-replay: %s\n", e.message.c_str());
    return 2;
  }
  const core::World& world = rep->world();
  const net::ClockMode clock =
      options.clock == ReplayClock::Fast ? net::ClockMode::Fast : net::ClockMode::Realtime;
  const auto interval = std::chrono::microseconds(
      options.rate_hz ? std::max<std::int64_t>(1, std::llround(1e6 / *options.rate_hz))
                      : world.step_us());

  net::ServerOptions server_options;
  server_options.bind_address = options.bind_address;
  server_options.port = options.port;
  server_options.token = options.token;
  net::CommandQueue commands(4096);
  // The same Welcome facts (lanes, garages, signals) the live server sends.
  net::WelcomeInfo welcome = net::make_welcome_info(world, BUSTLE_VERSION, clock);
  if (const bustle::core::Status s = net::check_bind_policy(server_options); !s.ok()) {
    std::fprintf(stderr, "bustle-replay: %s\n", s.message().c_str());
    return 2;
  }
  net::Server server(server_options, std::move(welcome), commands);
  const auto listening = server.listen();
  if (!listening.status.ok()) {
    std::fprintf(stderr, "bustle-replay: %s\n", listening.status.message().c_str());
    return 1;
  }
  std::atomic<bool> stop{false};
  server.on_signal(app::shutdown_handler("nothing to reopen", [&] {
    stop.store(true);
    commands.close();
  }));
  std::thread net_thread([&] { server.run(); });

  std::printf("bustle-replay listening on %s:%u\n", listening.address.c_str(), listening.port);
  std::fflush(stdout);
  spdlog::info(
      "replaying {} ('{}', ticks {}..{}, {} keyframes) at {}, clock {}{}", options.file,
      world.scenario().id, rep->next_tick_number(), rep->last_tick(), rep->keyframes().size(),
      clock == net::ClockMode::Fast
          ? std::string("full speed")
          : fmt::format("{:.3g} Hz", 1e6 / static_cast<double>(interval.count())),
      clock == net::ClockMode::Fast ? "fast" : "realtime", options.loop ? ", looping" : "");

  ReplayDriver driver(*rep, server, commands, clock, interval, start_tick, options.loop);
  driver.run(stop);

  server.stop();
  net_thread.join();
  spdlog::info("stopped at tick {} (step {}, digest {:016x})", rep->next_tick_number() - 1,
               rep->world().step_index(), rep->world().digest());
  return 0;
}

}  // namespace bustle::replay
