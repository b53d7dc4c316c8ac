// bustle-server: loads the scenario, creates the World, and runs the sim
// thread (this thread) beside one network thread. See usage_text().
#include <pthread.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "bustle/core/world.hpp"
#include "bustle/net/command_queue.hpp"
#include "bustle/net/server.hpp"
#include "bustle/persist/persist_worker.hpp"
#include "bustle/persist/recorder.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "options.hpp"
#include "sim_driver.hpp"

namespace {

constexpr const char* kVersion = BUSTLE_VERSION;

// Routes the core's log sink into spdlog (the core cannot include it).
class SpdlogSink final : public bustle::core::LogSink {
 public:
  void log(bustle::core::LogLevel level, std::string_view message) override {
    switch (level) {
      case bustle::core::LogLevel::Debug: spdlog::debug("core: {}", message); break;
      case bustle::core::LogLevel::Info: spdlog::info("core: {}", message); break;
      case bustle::core::LogLevel::Warn: spdlog::warn("core: {}", message); break;
      case bustle::core::LogLevel::Error: spdlog::error("core: {}", message); break;
    }
  }
};

// --record FILE: creates the recording (it refuses to overwrite an existing
// file, so a recording is never lost). False, with the reason printed, when
// it cannot.
bool open_recording(const bustle::app::AppOptions& opt, const std::string& scenario_json,
                    std::unique_ptr<bustle::persist::Recorder>& out) {
  if (!opt.record_path) return true;
  if (auto e = bustle::persist::Recorder::create(*opt.record_path, scenario_json, out); !e.ok()) {
    std::fprintf(stderr, "bustle-server: --record: %s\n", e.to_string().c_str());
    return false;
  }
  return true;
}

// A start that fails after its recording was created removes that file again:
// it is new (create refuses existing files) and holds no ticks, and left
// behind it would make the next start with the same --record refuse.
void discard_new_recording(std::unique_ptr<bustle::persist::Recorder>& recorder) {
  if (!recorder) return;
  const std::string path = recorder->path();
  recorder.reset();
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
}

// Flushes the recording; false (printed) when its writer failed.
bool finish_recording(bustle::persist::Recorder& recorder) {
  recorder.flush();
  const auto rs = recorder.status();
  if (rs.failed) {
    spdlog::error("recording {} failed: {}", recorder.path(), rs.error);
    return false;
  }
  spdlog::info("recording {}: {} ticks, {} keyframes", recorder.path(), rs.ticks_written, rs.keyframes_written);
  return true;
}

// Batch mode outruns the recording's writer thread: waiting for it every this
// many ticks (and after every keyframe) bounds what is queued in memory.
constexpr std::uint64_t kBatchRecordFlushTicks = 4096;

// --steps N: runs N steps back to back in this thread, recording them when
// --record is set (ticks, digests and keyframes as the sim thread would; there
// are no commands), and exits. Options that need a listener, a clock or the
// snapshot store were refused by parse_options.
int run_batch(bustle::core::World& world, const bustle::app::AppOptions& opt, const std::string& scenario_id,
              bustle::persist::Recorder* recorder) {
  for (std::uint64_t tick = 1; tick <= *opt.batch_steps; ++tick) {
    bool keyframed = false;
    if (recorder != nullptr) {
      if (const auto reason = bustle::persist::keyframe_due(tick, false, opt.record_keyframe_steps)) {
        recorder->record_keyframe(tick, *reason, world.capture());
        keyframed = true;
      }
    }
    world.step();
    if (recorder != nullptr) {
      recorder->record_tick(bustle::persist::RecordedTick{tick, world.step_index(), world.digest(), {}});
      if (keyframed || tick % kBatchRecordFlushTicks == 0) recorder->flush();
    }
    if (opt.check_invariants && !bustle::app::check_world_invariants(world).empty()) {
      // The recording so far is kept: it replays to the broken step.
      if (recorder != nullptr) finish_recording(*recorder);
      return bustle::app::kExitInvariantBroken;
    }
  }
  if (opt.print_digest) {
    std::printf("step %" PRIu64 " digest %016" PRIx64 "\n", world.step_index(), world.digest());
  }
  spdlog::info("batch: {} steps of '{}' with seed {}: {} pedestrians, {} vehicles, digest {:016x}",
               world.step_index(), scenario_id, opt.seed, world.pedestrians().size(),
               world.vehicles().store().size(), world.digest());
  // A batch run exists to produce its output: a recording that failed is a
  // failed run (the live server logs it and carries on instead).
  if (recorder != nullptr && !finish_recording(*recorder)) {
    std::fprintf(stderr, "bustle-server: --record: recording %s failed: %s\n", recorder->path().c_str(),
                 recorder->status().error.c_str());
    return 1;
  }
  return 0;
}

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const auto parsed = bustle::app::parse_options(args, [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
  });
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "bustle-server: %s\n", parsed.error.c_str());
    return 2;
  }
  const bustle::app::AppOptions& opt = parsed.options;
  if (opt.show_help) {
    std::fputs(bustle::app::usage_text().c_str(), stdout);
    return 0;
  }
  if (opt.show_version) {
    std::printf("bustle-server %s (protocol %u)\n", kVersion, 1u);
    return 0;
  }

  auto logger = spdlog::stderr_color_mt("bustle");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(opt.log_level));

  // Scenario: a named file must load; the embedded default applies only when
  // no file is named (a typo never silently falls back to the default).
  auto loaded = opt.config_path ? bustle::scenario::load_scenario_file(*opt.config_path)
                                : bustle::scenario::load_embedded_default();
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) std::fprintf(stderr, "bustle-server: %s\n", e.to_string().c_str());
    std::fprintf(stderr, "bustle-server: refusing to start: %zu error(s) in scenario %s\n",
                 loaded.errors.size(), opt.config_path ? opt.config_path->c_str() : "<embedded default>");
    return 1;
  }
  bustle::core::Scenario scenario = std::move(*loaded.scenario);
  if (opt.rate_hz) scenario.step_us = static_cast<std::uint32_t>(std::lround(1e6 / *opt.rate_hz));
  // The scenario as run (rate override applied) is what snapshots and
  // recordings keep, so a restore or a replay rebuilds exactly this city.
  const std::string scenario_json = bustle::scenario::effective_scenario_text(loaded.text, scenario.step_us);

  SpdlogSink core_log;
  auto created = bustle::core::World::create(scenario, opt.seed, &core_log);
  if (!created.world) {
    for (const auto& e : created.errors) {
      std::fprintf(stderr, "bustle-server: scenario: %s: %s\n", e.path.c_str(), e.message.c_str());
    }
    return 1;
  }
  std::unique_ptr<bustle::core::World> world_owner = std::move(created.world);
  bustle::core::World& world = *world_owner;

  std::unique_ptr<bustle::persist::Recorder> recorder;
  if (opt.batch_steps) {
    if (!open_recording(opt, scenario_json, recorder)) return 1;
    return run_batch(world, opt, scenario.id, recorder.get());
  }

  if (std::string why = bustle::net::check_bind_policy(opt.server); !why.empty()) {
    std::fprintf(stderr, "bustle-server: %s\n", why.c_str());
    return 2;
  }

  bustle::net::CommandQueue commands(4096);
  bustle::net::WelcomeInfo welcome = bustle::net::make_welcome_info(world, kVersion, opt.clock);
  bustle::net::Server server(opt.server, std::move(welcome), commands);

  // Listen before creating any file (recording, snapshot store): a start that
  // fails on its port leaves nothing behind. Connections wait in the backlog
  // until the network thread runs.
  const auto listening = server.listen();
  if (!listening.ok) {
    std::fprintf(stderr, "bustle-server: %s\n", listening.error.c_str());
    return 1;
  }

  if (!open_recording(opt, scenario_json, recorder)) return 1;

  bustle::app::SimDriver driver(std::move(world_owner), server, commands,
                                {opt.clock, opt.catchup_steps_max, 100'000, opt.autosave_steps,
                                 opt.record_keyframe_steps, opt.check_invariants});

  // Declared after the server and the driver, so it is destroyed (queue
  // finished, thread joined) before the objects its callbacks reach.
  std::unique_ptr<bustle::persist::PersistWorker> persist;
  bustle::persist::PersistWorker::Callbacks callbacks;
  callbacks.on_update = [&server](const bustle::persist::JobStatus& job, const bustle::persist::JobOrigin& origin) {
    if (job.state == bustle::persist::JobState::Failed) {
      spdlog::warn("{} '{}' failed: {}", bustle::persist::to_string(job.kind), job.name, job.message);
    } else {
      spdlog::info("{} '{}' {} (step {})", bustle::persist::to_string(job.kind), job.name,
                   bustle::persist::to_string(job.state), job.step);
    }
    if (origin.session_id != 0) server.deliver_job_update(origin.session_id, bustle::app::to_job_info(job));
  };
  callbacks.on_candidate = [&driver](bustle::persist::PersistWorker::Candidate c) { driver.offer_candidate(std::move(c)); };
  callbacks.on_list = [&server](const bustle::persist::JobOrigin& origin, const bustle::persist::StoreError& e,
                                std::vector<bustle::persist::SnapshotInfo> infos) {
    bustle::net::OutboundResult r;
    r.session_id = origin.session_id;
    r.request_id = origin.request_id;
    if (!e.ok()) {
      r.status = bustle::core::CommandStatus::Rejected;
      r.reason = bustle::core::RejectReason::StorageError;
      r.message = e.to_string();
    } else {
      r.status = bustle::core::CommandStatus::Accepted;
      std::vector<bustle::net::SnapshotEntry> entries;
      for (auto& i : infos) {
        entries.push_back({i.name, i.kind, i.scenario_id, i.step, i.sim_time_us, i.digest, i.pedestrians,
                           i.created_unix_ms});
      }
      r.snapshots = std::move(entries);
    }
    server.deliver_result(std::move(r));
  };
  callbacks.on_delete = [&server](const bustle::persist::JobOrigin& origin, const bustle::persist::StoreError& e,
                                  bool found) {
    bustle::net::OutboundResult r;
    r.session_id = origin.session_id;
    r.request_id = origin.request_id;
    r.status = e.ok() && found ? bustle::core::CommandStatus::Accepted : bustle::core::CommandStatus::Rejected;
    r.reason = !e.ok() ? bustle::core::RejectReason::StorageError
               : found ? bustle::core::RejectReason::None
                       : bustle::core::RejectReason::NotFound;
    r.message = !e.ok() ? e.to_string() : found ? "" : "no snapshot with that name";
    server.deliver_result(std::move(r));
  };
  if (auto e = bustle::persist::PersistWorker::start(opt.snapshot_db, scenario, scenario_json, std::move(callbacks),
                                                     persist);
      !e.ok()) {
    std::fprintf(stderr, "bustle-server: --snapshot-db: %s\n", e.to_string().c_str());
    discard_new_recording(recorder);
    return 1;
  }
  if (opt.snapshot_db_max_pages > 0) persist->set_max_page_count(opt.snapshot_db_max_pages);
  driver.attach_persistence(persist.get());
  driver.attach_recorder(recorder.get());

  std::atomic<bool> stop{false};
  server.on_signal([&](int sig) {
    spdlog::info("signal {}: shutting down", sig);
    stop.store(true);
    commands.close();
  });
  std::thread net_thread([&] {
    // Named so that per-thread CPU (top -H, /proc/PID/task) tells the network
    // thread from the sim thread (the main thread) and the writers.
    pthread_setname_np(pthread_self(), "bustle-net");
    server.run();
  });

  std::printf("bustle-server listening on %s:%u\n", listening.address.c_str(), listening.port);
  std::fflush(stdout);
  spdlog::info("bustle-server {} serving '{}' ({} lanes, {} pedestrians) at {} Hz, clock {}, seed {}", kVersion,
               scenario.id, driver.world().lanes().size(), scenario.pedestrians.count, 1e6 / scenario.step_us,
               opt.clock == bustle::net::ClockMode::Realtime ? "realtime"
               : opt.clock == bustle::net::ClockMode::Fast   ? "fast"
                                                             : "manual",
               opt.seed);

  if (recorder) spdlog::info("recording to {}", recorder->path());
  spdlog::info("snapshot store {}", opt.snapshot_db);
  driver.run(stop);

  server.stop();
  net_thread.join();
  persist->drain();
  if (recorder) finish_recording(*recorder);  // a failed recording is logged; the session itself ran
  spdlog::info("stopped at step {} (digest {:016x})", driver.world().step_index(), driver.world().digest());
  return driver.invariant_failure().empty() ? 0 : bustle::app::kExitInvariantBroken;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bustle-server: fatal: %s\n", e.what());
    return 1;
  }
}
