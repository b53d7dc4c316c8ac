// `snapshot` times what a checkpoint costs each thread: the sim-thread copy
// (World::capture), the writer-thread commit (SnapshotStore::write_checkpoint),
// and a restore (read + validate + build the candidate world), and reports
// the file size. Scenario: the default city's geometry with N pedestrians.
// --threads lends the capture T threads for its column copies; verdicts:
// issue 13's targets at 100 000, issue 17's stall target at 1 000 000.
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "bustle/app/thread_phase_executor.hpp"
#include "bustle/core/world.hpp"
#include "bustle/persist/snapshot_store.hpp"
#include "measure.hpp"
#include "report.hpp"

namespace bustle::bench {
namespace {

// Issue 13's checkpoint targets at 100 000 agents, as p99 over the repeats.
constexpr double kStallTargetMs = 1.0;
constexpr double kCommitTargetMs = 50.0;
constexpr double kRestoreTargetMs = 100.0;

// One phase of the snapshot bench, per checkpoint: wall time, this thread's
// CPU time (wall minus CPU is time the thread waited: preempted on a loaded
// machine, or blocked in I/O) and page faults, printed as p50 / p99 / max.
struct PhaseTimes {
  const char* label;
  std::vector<double> ms, cpu_ms, faults;
  double p50() const { return percentile(ms, 0.5); }
  double p99() const { return percentile(ms, 0.99); }
  double max() const { return *std::max_element(ms.begin(), ms.end()); }
  nlohmann::json json() const {
    return {{"p50", p50()},
            {"p99", p99()},
            {"max", max()},
            {"cpu_p50", percentile(cpu_ms, 0.5)},
            {"cpu_p99", percentile(cpu_ms, 0.99)},
            {"faults_p99", percentile(faults, 0.99)}};
  }
};

// Measures the calling thread from construction to stop().
class PhaseTimer {
 public:
  explicit PhaseTimer(PhaseTimes& into)
      : into_(into), wall0_(Clock::now()), cpu0_(thread_cpu_ms()), faults0_(thread_faults()) {}
  void stop() {
    into_.ms.push_back(ms(Clock::now() - wall0_));
    into_.cpu_ms.push_back(thread_cpu_ms() - cpu0_);
    into_.faults.push_back(static_cast<double>(thread_faults() - faults0_));
  }

 private:
  static double thread_cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
  }
  static long thread_faults() {
    rusage u{};
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt + u.ru_majflt;
  }
  PhaseTimes& into_;
  Clock::time_point wall0_;
  double cpu0_;
  long faults0_;
};

void print_phase(const PhaseTimes& t, double target_ms) {
  std::printf(
      "  %-36s ms  p50 %7.3f  p99 %7.3f  max %7.3f  (on CPU p50 %.3f p99 %.3f; faults p99 %.0f)",
      t.label, t.p50(), t.p99(), t.max(), percentile(t.cpu_ms, 0.5), percentile(t.cpu_ms, 0.99),
      percentile(t.faults, 0.99));
  if (target_ms > 0) {
    std::printf("  target p99 <= %g ms: %s", target_ms, t.p99() <= target_ms ? "met" : "NOT met");
  }
  std::printf("\n");
}

// Issue 17's checkpoint target at 1 000 000 active pedestrians: the
// sim-thread stall, p99 over the repeats (commit, restore and file size are
// reported, with no target).
constexpr std::uint32_t kIssue17Agents = 1'000'000;
constexpr double kStallTarget1MMs = 5.0;

// The snapshot bench's verdict line for the sizes a target is stated for;
// returns whether they were met (null for other sizes).
nlohmann::json print_snapshot_verdict(std::uint32_t agents, const PhaseTimes& stall,
                                      const PhaseTimes& commit, const PhaseTimes& restore,
                                      double mib) {
  if (agents == 100'000) {
    const bool met = stall.p99() <= kStallTargetMs && commit.p99() <= kCommitTargetMs &&
                     restore.p99() <= kRestoreTargetMs;
    std::printf("  targets (issue 13, p99): %s\n", met ? "met" : "NOT met");
    return met;
  }
  if (agents == kIssue17Agents) {
    const bool met = stall.p99() <= kStallTarget1MMs;
    std::printf(
        "  target (issue 17): stall p99 <= %g ms at 1000000 active: %s (p99 %.3f ms wall, %.3f ms "
        "cpu; judge on a quiet machine); commit p99 %.1f ms, restore p99 %.1f ms, file %.2f MiB\n",
        kStallTarget1MMs, met ? "met" : "NOT met", stall.p99(), percentile(stall.cpu_ms, 0.99),
        commit.p99(), restore.p99(), mib);
    return met;
  }
  return nullptr;
}

// Opens the bench's snapshot store as the persistence worker does: no WAL
// checkpoint inside a commit; one after each, on the writer thread (timed
// apart). False after printing why it could not.
bool open_bench_store(const std::string& path, bustle::persist::SnapshotStore& store) {
  auto e =
      bustle::persist::SnapshotStore::open(path, bustle::persist::FileKind::Snapshots, true, store);
  if (e.ok()) e = store.defer_wal_checkpoints();
  if (!e.ok()) std::fprintf(stderr, "bustle-bench: %s\n", e.to_string().c_str());
  return e.ok();
}

// The persistence worker's spares (PersistWorker::kSpareCheckpoints = 2):
// prepared with reserve_for_capture, taken in turn for each checkpoint and
// handed back after its commit. A recycled spare holds the capture before
// last, so a capture into it copies only the rows written since
// (row_write_stamps.hpp). Each spare is filled once here, before timing, as
// by a running server's first two checkpoints; the bench's fresh-allocation
// line times full copies.
void prepare_spares(const bustle::core::World& w, std::uint32_t entity_capacity,
                    std::array<bustle::core::WorldCheckpoint, 2>& spares) {
  for (bustle::core::WorldCheckpoint& spare : spares) {
    bustle::core::reserve_for_capture(spare, entity_capacity);
    w.capture_into(spare);
  }
}

double copied_mib_of(const std::vector<bustle::core::CaptureColumnBytes>& columns) {
  double copied = 0;
  for (const auto& c : columns) copied += static_cast<double>(c.copied);
  return copied / (1024.0 * 1024.0);
}

// The capture's large columns: bytes, and what the last recycled capture
// copied of them (rows written since that spare's previous capture).
void print_capture_columns(const std::vector<bustle::core::CaptureColumnBytes>& columns,
                           const std::vector<double>& copied_mib, std::uint32_t steps_between) {
  double total = 0, copied = 0;
  for (const auto& c : columns) {
    total += static_cast<double>(c.bytes);
    copied += static_cast<double>(c.copied);
  }
  std::printf(
      "  recycled-buffer capture (2 spares in turn, %u step%s between checkpoints): copied p50 "
      "%.1f MiB of %.1f MiB, last one by column:\n",
      steps_between, steps_between == 1 ? "" : "s", percentile(copied_mib, 0.5),
      total / (1024.0 * 1024.0));
  for (const auto& c : columns) {
    std::printf(
        "    %-22s %7.2f MiB  copied %7.2f MiB (%5.1f %%)\n", c.name,
        static_cast<double>(c.bytes) / (1024.0 * 1024.0),
        static_cast<double>(c.copied) / (1024.0 * 1024.0),
        c.bytes == 0 ? 0.0 : 100.0 * static_cast<double>(c.copied) / static_cast<double>(c.bytes));
  }
}

}  // namespace

int bench_snapshot(const Args& a) {
  const auto s = scenario_for(a.agents);
  auto w = populated(a, s);
  // The capture's column copies run in parts on the lent threads, as the
  // server's --sim-threads lend them (the bytes are the same for any count).
  bustle::app::ThreadPhaseExecutor pool(a.threads);
  w->set_phase_executor(&pool);
  const std::string path = a.dir + "/bustle-bench-" + std::to_string(::getpid()) + ".db";
  std::filesystem::remove(path);
  bustle::persist::SnapshotStore store;
  if (!open_bench_store(path, store)) return 1;
  PhaseTimes fresh{"sim-thread copy, fresh allocation", {}, {}, {}};
  PhaseTimes stall{"sim-thread stall (recycled buffer)", {}, {}, {}};
  PhaseTimes commit{"writer commit (one txn, WAL)", {}, {}, {}};
  PhaseTimes wal{"writer WAL checkpoint, after commit", {}, {}, {}};
  PhaseTimes restore{"restore (read+check+validate)", {}, {}, {}};
  bustle::core::WorldCheckpoint cp;
  std::array<bustle::core::WorldCheckpoint, 2> spares;
  prepare_spares(*w, s.entity_capacity, spares);
  std::vector<bustle::core::CaptureColumnBytes> columns;
  std::vector<double> copied_mib;
  for (std::uint32_t r = 0; r < a.repeat; ++r) {
    for (std::uint32_t k = 0; k < a.steps_between; ++k) w->step();
    PhaseTimer b(fresh);
    cp = w->capture();
    b.stop();
    bustle::core::WorldCheckpoint& recycled = spares[r % spares.size()];
    columns = w->capture_bytes(recycled);
    copied_mib.push_back(copied_mib_of(columns));
    PhaseTimer b2(stall);
    w->capture_into(recycled);
    b2.stop();
    PhaseTimer c(commit);
    if (auto e = store.write_checkpoint("bench", "checkpoint", recycled, "{}", 0); !e.ok()) {
      std::fprintf(stderr, "bustle-bench: %s\n", e.to_string().c_str());
      return 1;
    }
    c.stop();
    PhaseTimer c2(wal);
    if (auto e = store.checkpoint_wal(); !e.ok()) {
      std::fprintf(stderr, "bustle-bench: %s\n", e.to_string().c_str());
      return 1;
    }
    c2.stop();
    PhaseTimer d(restore);
    bustle::persist::LoadedCheckpoint lc;
    if (auto e = store.read_checkpoint("bench", lc); !e.ok()) {
      std::fprintf(stderr, "bustle-bench: %s\n", e.to_string().c_str());
      return 1;
    }
    auto restored = bustle::core::World::restore(s, lc.checkpoint);
    d.stop();
    if (!restored.world || restored.world->digest() != w->compute_digest()) {
      std::fprintf(stderr, "bustle-bench: restore did not reproduce the state\n");
      return 1;
    }
  }
  store.db().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  std::printf(
      "snapshot: %zu agents, entity capacity %u, %u checkpoints (with 51 or fewer, p99 is the "
      "max), %u thread%s\n",
      cp.pedestrians.id.size(), s.entity_capacity, a.repeat, a.threads, a.threads == 1 ? "" : "s");
  // Issue 13's targets are for 100 000 agents, issue 17's stall target for
  // 1 000 000; other sizes print no verdict.
  const bool judged = a.agents == 100'000;
  const bool judged_1m = a.agents == kIssue17Agents;
  print_phase(stall, judged ? kStallTargetMs : judged_1m ? kStallTarget1MMs : 0);
  print_phase(fresh, 0);
  print_capture_columns(columns, copied_mib, a.steps_between);
  print_phase(commit, judged ? kCommitTargetMs : 0);
  print_phase(wal, 0);
  print_phase(restore, judged ? kRestoreTargetMs : 0);
  std::printf("  file size  %.2f MiB (one checkpoint)\n", mib);
  const nlohmann::json targets_met = print_snapshot_verdict(a.agents, stall, commit, restore, mib);
  bustle::bench::figures() = {{"agents", cp.pedestrians.id.size()},
                              {"entity_capacity", s.entity_capacity},
                              {"repeat", a.repeat},
                              {"stall_ms", stall.json()},
                              {"fresh_copy_ms", fresh.json()},
                              {"commit_ms", commit.json()},
                              {"wal_checkpoint_ms", wal.json()},
                              {"restore_ms", restore.json()},
                              {"recycled_copied_mib_p50", percentile(copied_mib, 0.5)},
                              {"steps_between", a.steps_between},
                              {"file_mib", mib},
                              {"threads", a.threads},
                              {"targets_met", targets_met}};
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  return 0;
}

}  // namespace bustle::bench
