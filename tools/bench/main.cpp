// bustle-bench: scale measurements that are not unit tests.
//
//   bustle-bench step     [--agents N] [--steps S] [--seed K]
//   bustle-bench snapshot [--agents N] [--repeat R] [--dir DIR]
//
// `step` times World::step (p50/p99/max, agent updates per second, peak RSS).
// `snapshot` times what a checkpoint costs each thread: the sim-thread copy
// (World::capture), the writer-thread commit (SnapshotStore::write_checkpoint),
// and a restore (read + validate + build the candidate world), and reports
// the file size. Scenario: the default city's geometry with N pedestrians.
// Figures go to the README's Performance section with machine and command.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bustle/core/world.hpp"
#include "bustle/persist/snapshot_store.hpp"
#include "bustle/scenario/scenario_loader.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string mode;
  std::uint32_t agents = 100'000;
  std::uint64_t steps = 1000;
  std::uint32_t repeat = 10;
  std::uint64_t seed = 1;
  std::string dir = "/tmp";
};

[[noreturn]] void usage(const char* msg) {
  if (msg != nullptr) std::fprintf(stderr, "bustle-bench: %s\n", msg);
  std::fprintf(stderr,
               "usage: bustle-bench step|snapshot [--agents N] [--steps S] [--repeat R] [--seed K] [--dir DIR]\n");
  std::exit(2);
}

Args parse(int argc, char** argv) {
  if (argc < 2) usage(nullptr);
  Args a;
  a.mode = argv[1];
  if (a.mode != "step" && a.mode != "snapshot") usage("unknown mode");
  for (int i = 2; i < argc; ++i) {
    const std::string f = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + f).c_str());
    const std::string v = argv[++i];
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    const bool numeric = end != nullptr && *end == '\0' && !v.empty();
    if (f == "--dir") {
      a.dir = v;
    } else if (!numeric) {
      usage(("expected a number for " + f).c_str());
    } else if (f == "--agents") {
      a.agents = static_cast<std::uint32_t>(n);
    } else if (f == "--steps") {
      a.steps = n;
    } else if (f == "--repeat") {
      a.repeat = static_cast<std::uint32_t>(std::max(1ull, n));
    } else if (f == "--seed") {
      a.seed = n;
    } else {
      usage(("unknown option " + f).c_str());
    }
  }
  return a;
}

bustle::core::Scenario scenario_for(std::uint32_t agents) {
  auto loaded = bustle::scenario::load_embedded_default();
  if (!loaded.ok()) {
    std::fprintf(stderr, "bustle-bench: %s\n", loaded.errors[0].to_string().c_str());
    std::exit(1);
  }
  bustle::core::Scenario s = *loaded.scenario;
  s.id = "bustle.bench." + std::to_string(agents);
  std::uint32_t cap = 1024;
  while (cap < agents + agents / 4) cap *= 2;
  s.entity_capacity = cap;
  s.pedestrians.count = agents;
  s.pedestrians.spawn_per_step_max = std::max<std::uint32_t>(agents, 1);
  return s;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

long peak_rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

std::unique_ptr<bustle::core::World> populated(const Args& a, const bustle::core::Scenario& s) {
  auto w = std::move(bustle::core::World::create(s, a.seed).world);
  w->step();  // spawns everyone (spawn cap = agents)
  for (int k = 0; k < 9; ++k) w->step();
  return w;
}

int bench_step(const Args& a) {
  const auto s = scenario_for(a.agents);
  auto w = populated(a, s);
  std::vector<double> t;
  t.reserve(a.steps);
  const auto t0 = Clock::now();
  for (std::uint64_t k = 0; k < a.steps; ++k) {
    const auto b = Clock::now();
    w->step();
    t.push_back(ms(Clock::now() - b));
  }
  const double total_s = ms(Clock::now() - t0) / 1000.0;
  const double updates = static_cast<double>(w->pedestrians().size()) * static_cast<double>(a.steps);
  std::printf("step: %u agents, %" PRIu64 " steps (digest included)\n", w->pedestrians().size(), a.steps);
  std::printf("  step ms  p50 %.3f  p99 %.3f  max %.3f\n", percentile(t, 0.5), percentile(t, 0.99),
              *std::max_element(t.begin(), t.end()));
  std::printf("  agent updates/s  %.1f M\n", updates / total_s / 1e6);
  std::printf("  peak RSS  %.1f MiB\n", static_cast<double>(peak_rss_kb()) / 1024.0);
  std::printf("  final digest %016" PRIx64 "\n", w->digest());
  return 0;
}

int bench_snapshot(const Args& a) {
  const auto s = scenario_for(a.agents);
  auto w = populated(a, s);
  const std::string path = a.dir + "/bustle-bench-" + std::to_string(::getpid()) + ".db";
  std::filesystem::remove(path);
  bustle::persist::SnapshotStore store;
  if (auto e = bustle::persist::SnapshotStore::open(path, bustle::persist::FileKind::Snapshots, true, store); !e.ok()) {
    std::fprintf(stderr, "bustle-bench: %s\n", e.to_string().c_str());
    return 1;
  }
  std::vector<double> copy_ms, commit_ms, restore_ms;
  bustle::core::WorldCheckpoint cp;
  for (std::uint32_t r = 0; r < a.repeat; ++r) {
    w->step();
    const auto b = Clock::now();
    cp = w->capture();
    copy_ms.push_back(ms(Clock::now() - b));
    const auto c = Clock::now();
    if (auto e = store.write_checkpoint("bench", "checkpoint", cp, "{}", 0); !e.ok()) {
      std::fprintf(stderr, "bustle-bench: %s\n", e.to_string().c_str());
      return 1;
    }
    commit_ms.push_back(ms(Clock::now() - c));
    const auto d = Clock::now();
    bustle::persist::LoadedCheckpoint lc;
    if (auto e = store.read_checkpoint("bench", lc); !e.ok()) {
      std::fprintf(stderr, "bustle-bench: %s\n", e.to_string().c_str());
      return 1;
    }
    auto restored = bustle::core::World::restore(s, lc.checkpoint);
    restore_ms.push_back(ms(Clock::now() - d));
    if (!restored.world || restored.world->digest() != w->compute_digest()) {
      std::fprintf(stderr, "bustle-bench: restore did not reproduce the state\n");
      return 1;
    }
  }
  store.db().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  std::printf("snapshot: %zu agents, entity capacity %u, %u repetitions\n", cp.pedestrians.id.size(),
              s.entity_capacity, a.repeat);
  std::printf("  sim-thread copy (capture)     ms  p50 %.3f  max %.3f\n", percentile(copy_ms, 0.5),
              *std::max_element(copy_ms.begin(), copy_ms.end()));
  std::printf("  writer commit (one txn, WAL)  ms  p50 %.3f  max %.3f\n", percentile(commit_ms, 0.5),
              *std::max_element(commit_ms.begin(), commit_ms.end()));
  std::printf("  restore (read+check+validate) ms  p50 %.3f  max %.3f\n", percentile(restore_ms, 0.5),
              *std::max_element(restore_ms.begin(), restore_ms.end()));
  std::printf("  file size  %.2f MiB (one checkpoint)\n", static_cast<double>(bytes) / (1024.0 * 1024.0));
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  return a.mode == "step" ? bench_step(a) : bench_snapshot(a);
}
