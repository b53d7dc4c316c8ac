// bustle-server: loads the scenario, creates the World, and runs the sim
// thread (this thread) beside one network thread. See usage_text().
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include "bustle/app/cpu_budget.hpp"
#include "bustle/app/process_startup.hpp"
#include "bustle/app/thread_phase_executor.hpp"
#include "bustle/core/world.hpp"
#include "bustle/net/command_queue.hpp"
#include "bustle/net/server.hpp"
#include "bustle/ops/agones.hpp"
#include "bustle/ops/logging.hpp"
#include "bustle/ops/metrics_server.hpp"
#include "bustle/ops/telemetry.hpp"
#include "bustle/persist/persist_worker.hpp"
#include "bustle/persist/recorder.hpp"
#include "bustle/proto/wire.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "district_links.hpp"
#include "options.hpp"
#include "resume.hpp"
#include "sim_driver.hpp"

namespace {

constexpr const char* kVersion = BUSTLE_VERSION;

// The core's lines carry their own event names ("spawn_state: ...", "despawn: ...").
using bustle::app::SpdlogSink;

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
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    std::filesystem::remove(path + suffix, ec);
}

// Flushes the recording; false (printed) when its writer failed.
bool finish_recording(bustle::persist::Recorder& recorder) {
  recorder.flush();
  const auto rs = recorder.status();
  if (rs.failed) {
    spdlog::error("recording {} failed: {}", recorder.path(), rs.error);
    return false;
  }
  spdlog::info("recording_finished: recording {}: {} ticks, {} keyframes", recorder.path(),
               rs.ticks_written, rs.keyframes_written);
  return true;
}

// Batch mode outruns the recording's writer thread: waiting for it every this
// many ticks (and after every keyframe) bounds what is queued in memory.
constexpr std::uint64_t kBatchRecordFlushTicks = 4096;

// --steps N: runs N steps back to back in this thread, recording them when
// --record is set (ticks, digests and keyframes as the sim thread would; the
// only commands are a district's border arrivals), and exits. Options that need a listener, a clock
// or the snapshot store were refused by parse_options.
int run_batch(bustle::core::World& world, const bustle::app::AppOptions& opt,
              const std::string& scenario_id, bustle::persist::Recorder* recorder,
              bustle::app::DistrictLinks* links) {
  const std::atomic<bool> never{false};  // a batch run ends after its steps (or by a signal)
  if (links != nullptr) links->step_ended(world);  // StepEnd of the starting step
  // To step N: from 0 that is N steps; a resumed world is further on.
  for (std::uint64_t tick = 1; world.step_index() < *opt.batch_steps; ++tick) {
    // A district's step waits for its neighbours' previous one; what they
    // sent is this tick's commands.
    std::vector<bustle::core::CommandEnvelope> commands;
    if (links != nullptr && !links->feed(world, never, commands)) {
      std::fprintf(stderr, "bustle-server: district links: %s\n", links->error().message().c_str());
      if (recorder != nullptr) finish_recording(*recorder);
      return 1;
    }
    bool keyframed = false;
    if (recorder != nullptr) {
      if (const auto reason =
              bustle::persist::keyframe_due(tick, false, opt.record_keyframe_steps)) {
        recorder->record_keyframe(tick, *reason, world.capture());
        keyframed = true;
      }
    }
    world.step();
    if (links != nullptr) links->step_ended(world);
    if (recorder != nullptr) {
      recorder->record_tick(bustle::persist::RecordedTick{tick, world.step_index(), world.digest(),
                                                          std::move(commands)});
      if (keyframed || tick % kBatchRecordFlushTicks == 0) recorder->flush();
    }
    if (opt.check_invariants && !bustle::app::check_world_invariants(world).ok()) {
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
  if (links != nullptr) {
    spdlog::info(
        "district links: waited {:.3f} s for neighbours over {} steps; sent {} bytes, "
        "received {} bytes",
        links->wait_s(), links->waits(), links->bytes_sent(), links->bytes_received());
  }
  // A batch run exists to produce its output: a recording that failed is a
  // failed run (the live server logs it and carries on instead).
  if (recorder != nullptr && !finish_recording(*recorder)) {
    std::fprintf(stderr, "bustle-server: --record: recording %s failed: %s\n",
                 recorder->path().c_str(), recorder->status().error.c_str());
    return 1;
  }
  return 0;
}

// A persistence job's state change: telemetry, one log line, and the update
// to the session that asked.
void report_job(bustle::net::Server& server, bustle::ops::JobTelemetry& telemetry,
                const bustle::persist::JobStatus& job, const bustle::persist::JobOrigin& origin) {
  using bustle::persist::JobKind;
  using bustle::persist::JobState;
  const bool restore = job.kind == JobKind::Restore || job.kind == JobKind::Load;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - job.created).count();
  telemetry.on_update(static_cast<std::size_t>(job.kind), static_cast<std::size_t>(job.state),
                      job.terminal, job.state == JobState::Failed, restore, seconds);
  // Event names: <kind>_<state>, e.g. checkpoint_committed, restore_applied.
  if (job.state == JobState::Failed) {
    spdlog::warn("{}_failed: {} '{}' failed: {}", bustle::persist::to_string(job.kind),
                 bustle::persist::to_string(job.kind), job.name, job.message);
  } else {
    spdlog::info("{}_{}: {} '{}' {} (step {}{})", bustle::persist::to_string(job.kind),
                 bustle::persist::to_string(job.state), bustle::persist::to_string(job.kind),
                 job.name, bustle::persist::to_string(job.state), job.step,
                 job.terminal ? fmt::format(", {:.3f} s", seconds) : std::string());
  }
  if (origin.session_id != 0)
    server.deliver_job_update(origin.session_id, bustle::app::to_job_info(job));
}

// The answer to ListSnapshots.
bustle::net::OutboundResult list_result(const bustle::persist::JobOrigin& origin,
                                        const bustle::persist::StoreError& e,
                                        std::vector<bustle::persist::SnapshotInfo> infos) {
  bustle::net::OutboundResult r;
  r.session_id = origin.session_id;
  r.request_id = origin.request_id;
  if (!e.ok()) {
    r.status = bustle::core::CommandStatus::Rejected;
    r.reason = bustle::core::RejectReason::StorageError;
    r.message = e.to_string();
    return r;
  }
  r.status = bustle::core::CommandStatus::Accepted;
  std::vector<bustle::net::SnapshotEntry> entries;
  for (auto& i : infos) {
    bustle::net::SnapshotEntry& row = entries.emplace_back();
    row.name = i.name;
    row.kind = i.kind;
    row.scenario_id = i.scenario_id;
    row.step = i.step;
    row.sim_time_us = i.sim_time_us;
    row.digest = i.digest;
    row.pedestrians = i.pedestrians;
    row.created_unix_ms = i.created_unix_ms;
  }
  r.snapshots = std::move(entries);
  return r;
}

// The answer to DeleteSnapshot.
bustle::net::OutboundResult delete_result(const bustle::persist::JobOrigin& origin,
                                          const bustle::persist::StoreError& e, bool found) {
  bustle::net::OutboundResult r;
  r.session_id = origin.session_id;
  r.request_id = origin.request_id;
  r.status = e.ok() && found ? bustle::core::CommandStatus::Accepted
                             : bustle::core::CommandStatus::Rejected;
  r.reason = !e.ok() ? bustle::core::RejectReason::StorageError
             : found ? bustle::core::RejectReason::None
                     : bustle::core::RejectReason::NotFound;
  r.message = !e.ok() ? e.to_string() : found ? "" : "no snapshot with that name";
  return r;
}

// What the persistence thread reports, routed to telemetry, the log, the
// driver (restore candidates) and the sessions.
bustle::persist::PersistWorker::Callbacks persist_callbacks(bustle::net::Server& server,
                                                            bustle::ops::JobTelemetry& telemetry,
                                                            bustle::app::SimDriver& driver) {
  bustle::persist::PersistWorker::Callbacks callbacks;
  callbacks.on_update = [&server, &telemetry](const bustle::persist::JobStatus& job,
                                              const bustle::persist::JobOrigin& origin) {
    report_job(server, telemetry, job, origin);
  };
  callbacks.on_candidate = [&driver](bustle::persist::PersistWorker::Candidate c) {
    driver.offer_candidate(std::move(c));
  };
  callbacks.on_list = [&server](const bustle::persist::JobOrigin& origin,
                                const bustle::persist::StoreError& e,
                                std::vector<bustle::persist::SnapshotInfo> infos) {
    server.deliver_result(list_result(origin, e, std::move(infos)));
  };
  callbacks.on_delete = [&server](const bustle::persist::JobOrigin& origin,
                                  const bustle::persist::StoreError& e, bool found) {
    server.deliver_result(delete_result(origin, e, found));
  };
  return callbacks;
}

// --checkpoint-on-exit: waits for the job submitted at shutdown (the worker
// is drained) and logs its outcome; false when it did not commit.
bool exit_checkpoint_committed(const bustle::app::AppOptions& opt,
                               bustle::persist::PersistWorker& persist, std::uint64_t exit_job,
                               const bustle::core::World& world) {
  const auto job = persist.query(exit_job);
  if (!job || job->state != bustle::persist::JobState::Committed) {
    spdlog::error("checkpoint_on_exit_failed: checkpoint '{}' on exit failed: {}",
                  *opt.checkpoint_on_exit, job ? job->message : "unknown job");
    return false;
  }
  spdlog::info("checkpoint_on_exit: checkpoint '{}' committed at step {} (digest {:016x})",
               *opt.checkpoint_on_exit, job->step, world.digest());
  return true;
}

// The scenario as run and the world built from it.
struct City {
  bustle::core::Scenario scenario;
  // The scenario as run (rate override applied) is what snapshots and
  // recordings keep, so a restore or a replay rebuilds exactly this city.
  std::string scenario_json;
  std::unique_ptr<bustle::core::World> world;
};

// --district ID: the world owns that district of the scenario's map.
bool choose_district(const std::string& id, bustle::core::Scenario& s) {
  for (std::size_t d = 0; d < s.districts.size(); ++d) {
    if (s.districts[d].id == id) {
      s.own_district = static_cast<std::int32_t>(d);
      return true;
    }
  }
  std::string known;
  for (const auto& d : s.districts) known += (known.empty() ? "" : ", ") + d.id;
  std::fprintf(stderr, "bustle-server: --district %s: the scenario's district map has %s\n",
               id.c_str(), known.empty() ? "no districts" : ("only " + known).c_str());
  return false;
}

// The links to the district's neighbours (--district-peers names where those
// it dials listen), started; null with the reason printed when they cannot be.
std::unique_ptr<bustle::app::DistrictLinks> start_district_links(
    const bustle::app::AppOptions& opt, const bustle::core::Scenario& s,
    const bustle::core::World& world, const std::vector<bustle::app::ReplayedStepEnd>& replayed) {
  bustle::app::DistrictLinkOptions lo;
  lo.own = static_cast<std::uint32_t>(s.own_district);
  lo.first_step = world.step_index();
  lo.wait_limit = std::chrono::seconds(opt.district_wait_s);
  for (const auto& d : s.districts) lo.district_ids.push_back(d.id);
  lo.scenario_id = s.id;
  lo.listen_host = opt.district_listen_host;
  lo.listen_port = opt.district_listen_port;
  lo.neighbours = bustle::app::district_neighbours(s, lo.own);
  const auto index_of = [&](const std::string& id) -> std::optional<std::uint32_t> {
    for (std::uint32_t d = 0; d < s.districts.size(); ++d)
      if (s.districts[d].id == id) return d;
    return std::nullopt;
  };
  for (const auto& p : opt.district_peers) {
    const auto d = index_of(p.district);
    const bool neighbour =
        d && std::find(lo.neighbours.begin(), lo.neighbours.end(), *d) != lo.neighbours.end();
    if (!neighbour || *d > lo.own) {
      std::fprintf(stderr,
                   "bustle-server: --district-peers: '%s' is not a neighbour of '%s' with a lower "
                   "index (the districts it dials)\n",
                   p.district.c_str(), s.districts[lo.own].id.c_str());
      return nullptr;
    }
    lo.dial.push_back({*d, p.host, p.port});
  }
  for (const std::uint32_t d : lo.neighbours) {
    const bool given =
        std::any_of(lo.dial.begin(), lo.dial.end(),
                    [&](const bustle::app::DistrictPeer& p) { return p.district == d; });
    if (d < lo.own && !given) {
      std::fprintf(stderr,
                   "bustle-server: --district-peers: give where neighbour '%s' listens "
                   "(ID=HOST:PORT)\n",
                   s.districts[d].id.c_str());
      return nullptr;
    }
  }
  auto links = std::make_unique<bustle::app::DistrictLinks>(std::move(lo));
  if (const bustle::core::Status st = links->start(); !st.ok()) {
    std::fprintf(stderr, "bustle-server: %s\n", st.message().c_str());
    return nullptr;
  }
  // A resumed district's replayed steps, for neighbours that still need them.
  for (const auto& end : replayed) links->send_step_end(end.step, end.digest, end.outbox);
  // Scripts and orchestrators read the port (as "listening on" below).
  std::printf("bustle-server district %s links on %s:%u\n", s.districts[s.own_district].id.c_str(),
              opt.district_listen_host.c_str(), links->listen_port());
  std::fflush(stdout);
  return links;
}

// --agones-district: Ready, then the district and its peers from the
// allocation (agones.hpp); false with the reason printed.
bool district_from_agones(bustle::app::AppOptions& opt) {
  auto base_url = bustle::ops::agones_base_url(std::getenv("AGONES_SDK_HTTP_PORT"));
  if (!base_url.ok()) {
    std::fprintf(stderr, "bustle-server: --agones: %s\n", base_url.status().message().c_str());
    return false;
  }
  auto got = bustle::ops::agones_wait_for_district(*base_url,
                                                   std::chrono::milliseconds(opt.agones_health_ms));
  if (!got.ok()) {
    std::fprintf(stderr, "bustle-server: %s\n", got.status().message().c_str());
    return false;
  }
  opt.district = got->district;
  if (const std::string e = bustle::app::parse_district_peers(got->peers, opt.district_peers);
      !got->peers.empty() && !e.empty()) {
    std::fprintf(stderr, "bustle-server: agones annotation %s: %s\n",
                 bustle::ops::kAgonesPeersAnnotation, e.c_str());
    return false;
  }
  if (got->peers.empty()) opt.district_peers.clear();
  return true;
}

// --resume FILE: the world where that recording ends replaces the new one.
bool resume(const bustle::app::AppOptions& opt, const bustle::core::Scenario& scenario,
            SpdlogSink& core_log, std::unique_ptr<bustle::core::World>& world,
            std::vector<bustle::app::ReplayedStepEnd>& replayed) {
  bustle::app::Resumed r = bustle::app::resume_from_recording(
      *opt.resume_path, scenario, spdlog::should_log(spdlog::level::debug) ? &core_log : nullptr);
  if (!r.world) {
    std::fprintf(stderr, "bustle-server: %s\n", r.error.c_str());
    return false;
  }
  spdlog::info(
      "resumed from {}: keyframe at step {}, {} recorded steps replayed to step {} "
      "(digest {:016x})",
      *opt.resume_path, r.keyframe_step, r.step_ends.size(), r.world->step_index(),
      r.world->digest());
  world = std::move(r.world);
  replayed = std::move(r.step_ends);
  return true;
}

// The world as it starts (--resume), its step threads, and a district's
// links; false with the reason printed.
bool take_up(const bustle::app::AppOptions& opt, const bustle::core::Scenario& scenario,
             SpdlogSink& core_log, bustle::app::ThreadPhaseExecutor& sim_threads,
             std::unique_ptr<bustle::core::World>& world,
             std::unique_ptr<bustle::app::DistrictLinks>& links) {
  std::vector<bustle::app::ReplayedStepEnd> replayed;
  if (opt.resume_path && !resume(opt, scenario, core_log, world, replayed)) return false;
  if (sim_threads.threads() > 1) world->set_phase_executor(&sim_threads);
  if (!opt.district) return true;
  links = start_district_links(opt, scenario, *world, replayed);
  return links != nullptr;
}

// Loads the scenario and creates the world; false with the errors printed.
// A named file must load; the embedded default applies only when no file is
// named (a typo never silently falls back to the default).
bool load_city(const bustle::app::AppOptions& opt, bustle::core::LogSink* core_log, City& out) {
  auto loaded = opt.config_path ? bustle::scenario::load_scenario_file(*opt.config_path)
                                : bustle::scenario::load_embedded_default();
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors)
      std::fprintf(stderr, "bustle-server: %s\n", e.to_string().c_str());
    std::fprintf(stderr, "bustle-server: refusing to start: %zu error(s) in scenario %s\n",
                 loaded.errors.size(),
                 opt.config_path ? opt.config_path->c_str() : "<embedded default>");
    return false;
  }
  out.scenario = std::move(*loaded.scenario);
  if (opt.rate_hz)
    out.scenario.step_us = static_cast<std::uint32_t>(std::lround(1e6 / *opt.rate_hz));
  if (opt.district && !choose_district(*opt.district, out.scenario)) return false;
  out.scenario_json = bustle::scenario::effective_scenario_text(
      loaded.text, out.scenario.step_us, opt.district.value_or(std::string()));
  auto created = bustle::core::World::create(out.scenario, opt.seed, core_log);
  if (!created.world) {
    for (const auto& e : created.errors) {
      std::fprintf(stderr, "bustle-server: scenario: %s: %s\n", e.path.c_str(), e.message.c_str());
    }
    return false;
  }
  out.world = std::move(created.world);
  return true;
}

// --help and --version: printed without starting anything. nullopt when
// neither was asked for.
std::optional<int> print_info(const bustle::app::AppOptions& opt) {
  if (opt.show_help) {
    std::fputs(bustle::app::usage_text().c_str(), stdout);
    return 0;
  }
  if (opt.show_version) {
    std::printf("bustle-server %s (protocol %u)\n", kVersion,
                unsigned{bustle::proto::kProtocolVersion});
    return 0;
  }
  return std::nullopt;
}

// The server's options with --net-threads: the encode threads it borrows
// (run() declares them before the server, so that they outlive it). They
// poll briefly after each step's batch: the next one is a step away.
constexpr std::chrono::microseconds kEncodeSpinWindow{200};
bustle::net::ServerOptions server_options(const bustle::app::AppOptions& opt,
                                          bustle::app::ThreadPhaseExecutor& net_threads) {
  bustle::net::ServerOptions o = opt.server;
  if (opt.net_threads > 1) o.encode_threads = &net_threads;
  return o;
}

// The persist worker with the options that tune it. False, with the reason
// printed, when the snapshot store cannot be opened.
bool start_persistence(const bustle::app::AppOptions& opt, const City& city,
                       bustle::persist::PersistWorker::Callbacks callbacks, SpdlogSink& core_log,
                       std::unique_ptr<bustle::persist::PersistWorker>& persist) {
  if (auto e = bustle::persist::PersistWorker::start(
          opt.snapshot_db, city.scenario, city.scenario_json, std::move(callbacks), persist);
      !e.ok()) {
    std::fprintf(stderr, "bustle-server: --snapshot-db: %s\n", e.to_string().c_str());
    return false;
  }
  if (opt.snapshot_db_max_pages > 0) persist->set_max_page_count(opt.snapshot_db_max_pages);
  if (opt.debug_restore_delay_ms > 0)
    persist->set_debug_restore_delay_ms(opt.debug_restore_delay_ms);
  if (spdlog::should_log(spdlog::level::debug)) persist->set_core_log(&core_log);
  return true;
}

// Operations: the metrics/probe endpoint (--metrics-bind) and the Agones SDK
// client (--agones). Returns 0, or the exit status of a start that failed
// (the reason printed).
int start_operations(const bustle::app::AppOptions& opt, const bustle::ops::MetricsSources& sources,
                     const bustle::ops::HealthSettings& health,
                     std::unique_ptr<bustle::ops::MetricsServer>& metrics,
                     std::unique_ptr<bustle::ops::AgonesClient>& agones) {
  if (opt.metrics_bind) {
    auto started = bustle::ops::MetricsServer::start(*opt.metrics_bind, sources, health);
    if (!started.ok()) {
      std::fprintf(stderr, "bustle-server: --metrics-bind: %s\n",
                   started.status().message().c_str());
      return 1;
    }
    metrics = std::move(*started);
  }
  if (opt.agones) {
    bustle::ops::AgonesSettings settings;
    settings.health_period = std::chrono::milliseconds(opt.agones_health_ms);
    auto base_url = bustle::ops::agones_base_url(std::getenv("AGONES_SDK_HTTP_PORT"));
    if (!base_url.ok()) {
      std::fprintf(stderr, "bustle-server: --agones: %s\n", base_url.status().message().c_str());
      return 2;
    }
    settings.base_url = *base_url;
    settings.ready_sent = opt.agones_district;  // before the allocation (district_from_agones)
    agones = std::make_unique<bustle::ops::AgonesClient>(
        settings, [sources] { return bustle::ops::check_ready(sources).ok; },
        [sources, health] { return bustle::ops::check_health(sources, health).ok; });
  }
  return 0;
}

// The lines scripts wait for (stdout: where to connect) and the start-up
// summary (log).
void announce(const bustle::app::AppOptions& opt,
              const bustle::net::Server::ListenResult& listening,
              const bustle::ops::MetricsServer* metrics, const bustle::core::Scenario& scenario,
              const bustle::app::SimDriver& driver, const bustle::persist::Recorder* recorder) {
  std::printf("bustle-server listening on %s:%u\n", listening.address.c_str(), listening.port);
  if (metrics) {
    const std::string& bind = *opt.metrics_bind;
    std::printf("bustle-server metrics on %s:%u\n", bind.substr(0, bind.rfind(':')).c_str(),
                metrics->port());
  }
  std::fflush(stdout);
  spdlog::info(
      "bustle-server {} serving '{}' ({} lanes, {} pedestrians) at {} Hz, clock {}, seed {}",
      kVersion, scenario.id, driver.world().lanes().size(), scenario.pedestrians.count,
      1e6 / scenario.step_us,
      opt.clock == bustle::net::ClockMode::Realtime ? "realtime"
      : opt.clock == bustle::net::ClockMode::Fast   ? "fast"
                                                    : "manual",
      opt.seed);
  if (recorder) spdlog::info("recording_started: recording to {}", recorder->path());
  spdlog::info("snapshot store {}", opt.snapshot_db);
}

// Graceful shutdown once the sim loop returned: not ready any more, no new
// clients; every client gets ServerShuttingDown (bounded: 1.5 s at most)
// while the final checkpoint (--checkpoint-on-exit) commits and the
// recording is finished. Returns the exit status.
int shut_down(const bustle::app::AppOptions& opt, std::atomic<bool>& shutting_down,
              bustle::net::Server& server, std::thread& net_thread, bustle::app::SimDriver& driver,
              bustle::persist::PersistWorker& persist, bustle::persist::Recorder* recorder,
              bustle::ops::AgonesClient* agones) {
  shutting_down.store(true);
  server.stop();
  int status = driver.invariant_failure().ok() ? 0 : bustle::app::kExitInvariantBroken;
  std::uint64_t exit_job = 0;
  if (opt.checkpoint_on_exit) {
    exit_job = persist
                   .submit_checkpoint(*opt.checkpoint_on_exit, bustle::persist::JobKind::Checkpoint,
                                      driver.world().capture(), bustle::persist::JobOrigin{})
                   .job_id;
  }
  net_thread.join();
  persist.drain();
  if (exit_job != 0 && !exit_checkpoint_committed(opt, persist, exit_job, driver.world()) &&
      status == 0) {
    status = 1;
  }
  if (recorder)
    finish_recording(*recorder);  // a failed recording is logged; the session itself ran
  if (agones) agones->stop();     // POST /shutdown
  spdlog::info("stopped: stopped at step {} (digest {:016x})", driver.world().step_index(),
               driver.world().digest());
  // A district whose links failed stopped stepping: not a clean end.
  return status == 0 && !driver.district_failure().ok() ? 1 : status;
}

// --sim-threads, or with auto one per CPU this process may use; logged.
std::uint32_t sim_threads_to_run(const bustle::app::AppOptions& opt) {
  if (opt.sim_threads != 0) {
    spdlog::info("sim threads: {}", opt.sim_threads);
    return opt.sim_threads;
  }
  const std::uint32_t n = std::min(bustle::app::usable_cpus(), bustle::app::kSimThreadsAutoMax);
  spdlog::info("sim threads: {} (auto: the CPUs this process may use)", n);
  return n;
}

// The options from the command line over the BUSTLE_* environment.
bustle::app::ParseResult parse_command_line(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return bustle::app::parse_options(args, [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
  });
}

// Start-up in the order that leaves nothing behind when a step fails (port
// first, then files), objects declared so that they are destroyed in reverse
// dependency order, then the sim loop on this thread and the shutdown.
int run(int argc, char** argv) {
  const auto parsed = parse_command_line(argc, argv);
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "bustle-server: %s\n", parsed.error.c_str());
    return 2;
  }
  bustle::app::AppOptions opt = parsed.options;  // --agones-district fills in the district
  if (const auto info = print_info(opt)) return *info;

  // SIGHUP (a closed terminal, or an operator's "reload"): logs go to
  // stderr, so there is nothing to reopen; it is logged and ignored once the
  // network thread handles signals, and ignored silently until then.
  bustle::app::ignore_hangup();
  bustle::app::start_logging(opt.log_format, opt.log_level);

  // The core formats its lifecycle lines only when it has a sink: give it one
  // only when debug lines are wanted, so other levels cost the step nothing.
  if (opt.agones_district && !district_from_agones(opt)) return 1;
  SpdlogSink core_log;
  City city;
  if (!load_city(opt, spdlog::should_log(spdlog::level::debug) ? &core_log : nullptr, city))
    return 1;
  const bustle::core::Scenario& scenario = city.scenario;
  // Threads for the step's parallel parts (--sim-threads); declared before
  // the world is handed on, so that they outlive it (the driver and the
  // worlds it restores keep using them). Any count gives the same digests.
  bustle::app::ThreadPhaseExecutor sim_threads(sim_threads_to_run(opt));
  std::unique_ptr<bustle::core::World> world_owner = std::move(city.world);

  std::unique_ptr<bustle::app::DistrictLinks> district_links;
  if (!take_up(opt, scenario, core_log, sim_threads, world_owner, district_links)) return 1;

  std::unique_ptr<bustle::persist::Recorder> recorder;
  if (opt.batch_steps) {
    if (!open_recording(opt, city.scenario_json, recorder)) return 1;
    return run_batch(*world_owner, opt, scenario.id, recorder.get(), district_links.get());
  }

  if (const bustle::core::Status s = bustle::net::check_bind_policy(opt.server); !s.ok()) {
    std::fprintf(stderr, "bustle-server: %s\n", s.message().c_str());
    return 2;
  }

  bustle::app::ThreadPhaseExecutor net_threads(opt.net_threads, kEncodeSpinWindow);
  bustle::net::CommandQueue commands(4096);
  bustle::net::Server server(server_options(opt, net_threads),
                             bustle::net::make_welcome_info(*world_owner, kVersion, opt.clock),
                             commands);

  // Listen before creating any file (recording, snapshot store): a start that
  // fails on its port leaves nothing behind. Connections wait in the backlog
  // until the network thread runs.
  const auto listening = server.listen();
  if (!listening.status.ok()) {
    std::fprintf(stderr, "bustle-server: %s\n", listening.status.message().c_str());
    return 1;
  }

  if (!open_recording(opt, city.scenario_json, recorder)) return 1;

  bustle::app::SimDriver driver(
      std::move(world_owner), server, commands,
      {opt.clock, opt.catchup_steps_max, 100'000, opt.autosave_steps, opt.record_keyframe_steps,
       opt.check_invariants, opt.debug_stall_at_step, opt.debug_stall_ms, opt.quality});

  // Declared after the server and the driver, so it is destroyed (queue
  // finished, thread joined) before the objects its callbacks reach.
  std::vector<std::string> garage_ids;
  for (const auto& g : scenario.garages) garage_ids.push_back(g.id);
  bustle::ops::SimTelemetry sim_telemetry(std::move(garage_ids));
  bustle::ops::JobTelemetry job_telemetry;
  driver.attach_telemetry(&sim_telemetry);

  std::unique_ptr<bustle::persist::PersistWorker> persist;
  if (!start_persistence(opt, city, persist_callbacks(server, job_telemetry, driver), core_log,
                         persist)) {
    discard_new_recording(recorder);
    return 1;
  }

  // Operations: metrics, probes, Agones. Declared after everything they read,
  // so they are destroyed (threads stopped) first.
  std::atomic<bool> shutting_down{false};
  const bustle::ops::MetricsSources sources{
      &sim_telemetry, &job_telemetry,
      &server,        [p = persist.get()] { return p->candidates_in_flight(); },
      &shutting_down, kVersion,
      scenario.id};
  const bustle::ops::HealthSettings health{opt.health_max_lag_steps};
  std::unique_ptr<bustle::ops::MetricsServer> metrics;
  std::unique_ptr<bustle::ops::AgonesClient> agones;
  if (const int failed = start_operations(opt, sources, health, metrics, agones); failed != 0) {
    discard_new_recording(recorder);
    return failed;
  }
  driver.attach_persistence(persist.get());
  driver.attach_recorder(recorder.get());
  driver.attach_district_links(district_links.get());

  std::atomic<bool> stop{false};
  server.on_signal(bustle::app::shutdown_handler("logs go to stderr; nothing to reopen", [&] {
    shutting_down.store(true);
    stop.store(true);
    commands.close();
  }));
  std::thread net_thread([&] {
    // Named so that per-thread CPU (top -H, /proc/PID/task) tells the network
    // thread from the sim thread (the main thread) and the writers.
    pthread_setname_np(pthread_self(), "bustle-net");
    server.run();
  });

  announce(opt, listening, metrics.get(), scenario, driver, recorder.get());
  driver.run(stop);
  return shut_down(opt, shutting_down, server, net_thread, driver, *persist, recorder.get(),
                   agones.get());
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
