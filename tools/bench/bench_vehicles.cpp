// `vehicles` (issue 4) builds a signalised grid city in code (grid_city(),
// grid_city.cpp), warms up until V vehicles are managed, all in the Full tier, then
// times S steps: step p50/p99/max, vehicle updates per second (managed
// vehicles x steps / wall time of those steps, digest included; --threads T
// lends the step T threads), vehicles
// moving per step, the policy mix, heap allocations per step (counted by the
// operator new replacement in allocations.cpp) and the final digest. Its SUMO
// peer is tools/bench/sumo_grid.py; tools/bench/compare_sumo.sh runs both.
#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "bustle/app/thread_phase_executor.hpp"
#include "bustle/core/world.hpp"
#include "measure.hpp"
#include "report.hpp"

namespace bustle::bench {

namespace {

struct VehicleWarmUp {
  bool ok = false;
  std::uint64_t steps = 0;
  double seconds = 0.0;
};

// Warm-up: until `vehicles` are managed. Each garage dispatches about one
// vehicle per headway gap (~7 steps), so this is bounded by the largest
// garage share; the cap below only catches a broken scenario.
VehicleWarmUp warm_up_vehicles(bustle::core::World& w, std::uint32_t vehicles) {
  const std::uint64_t warmup_max = 100'000;
  const auto warm0 = Clock::now();
  VehicleWarmUp out;
  while (w.vehicles().store().size() < vehicles && out.steps < warmup_max) {
    w.step();
    ++out.steps;
  }
  out.seconds = ms(Clock::now() - warm0) / 1000.0;
  out.ok = w.vehicles().store().size() >= vehicles;
  if (!out.ok) {
    std::fprintf(stderr,
                 "bustle-bench: only %u of %u vehicles managed after %" PRIu64 " warm-up steps\n",
                 w.vehicles().store().size(), vehicles, out.steps);
  }
  return out;
}

}  // namespace

int bench_vehicles(const Args& a) {
  using namespace bustle::core;
  const BuiltWorld built = build_world([&] { return grid_city(a.grid, a.vehicles); }, a.seed);
  if (!built.world) return 1;
  const Scenario& s = built.scenario;
  World& w = *built.world;
  // Threads for the step's parallel parts (the vehicle kernel, tier
  // distances); the digest is the same for every count.
  bustle::app::ThreadPhaseExecutor pool(a.threads);
  w.set_phase_executor(&pool);

  const VehicleWarmUp warm = warm_up_vehicles(w, a.vehicles);
  if (!warm.ok) return 1;
  const std::uint64_t warmup = warm.steps;
  const double warm_s = warm.seconds;

  // Timed steps. Everything the loop touches is allocated before it starts.
  std::vector<double> t(a.steps, 0.0);
  std::uint64_t moving = 0, managed = 0, allocs_max = 0;
  std::array<std::uint64_t, kControlPolicyCount> policy{};
  const std::uint64_t allocs0 = heap_allocations();
  const auto t0 = Clock::now();
  for (std::uint64_t k = 0; k < a.steps; ++k) {
    const std::uint64_t before = heap_allocations();
    const auto b = Clock::now();
    w.step();
    const auto e = Clock::now();
    allocs_max = std::max(allocs_max, heap_allocations() - before);
    t[k] = ms(e - b);
    const VehicleStepCounts& c = w.vehicles().last_step();
    moving += c.moving;
    managed += w.vehicles().store().size();
    for (std::size_t p = 0; p < kControlPolicyCount; ++p) policy[p] += c.per_policy[p];
  }
  const double total_s = ms(Clock::now() - t0) / 1000.0;
  const std::uint64_t allocs = heap_allocations() - allocs0;

  const double steps = static_cast<double>(a.steps);
  const TierCounts& tiers = w.vehicles().last_tiers();
  std::printf(
      "vehicles: grid %ux%u (%zu road lanes, %zu signals, %zu garages), %u vehicles, %" PRIu64
      " timed steps of %u us, seed %" PRIu64 ", %u thread%s\n",
      a.grid, a.grid, s.lanes.size(), s.signals.size(), s.garages.size(),
      w.vehicles().store().size(), a.steps, s.step_us, a.seed, a.threads,
      a.threads == 1 ? "" : "s");
  std::printf("  build %.2f s, warm-up %" PRIu64 " steps in %.2f s\n", built.build_s, warmup,
              warm_s);
  std::printf("  tiers at end  full %u  simulated %u  coarse %u\n", tiers.per_tier[0],
              tiers.per_tier[1], tiers.per_tier[2]);
  std::printf("  step ms  p50 %.3f  p99 %.3f  max %.3f  mean %.3f\n", percentile(t, 0.5),
              percentile(t, 0.99), *std::max_element(t.begin(), t.end()), total_s * 1000.0 / steps);
  std::printf("  vehicle updates/s  %.2f M  (%.0f vehicles x %" PRIu64
              " steps in %.3f s, digest included)\n",
              static_cast<double>(managed) / total_s / 1e6, static_cast<double>(managed) / steps,
              a.steps, total_s);
  std::printf("  moving per step  %.1f (%.1f%%)\n", static_cast<double>(moving) / steps,
              100.0 * static_cast<double>(moving) /
                  static_cast<double>(std::max<std::uint64_t>(managed, 1)));
  std::printf("  policy mix per step ");
  for (std::size_t p = 0; p < kControlPolicyCount; ++p) {
    if (policy[p] == 0) continue;
    std::printf(" %s %.1f", to_string(static_cast<ControlPolicy>(p)),
                static_cast<double>(policy[p]) / steps);
  }
  std::printf("\n");
  std::printf("  heap allocations per step  mean %.2f  max %" PRIu64 "\n",
              static_cast<double>(allocs) / steps, allocs_max);
  std::printf("  peak RSS  %.1f MiB\n", static_cast<double>(peak_rss_kb()) / 1024.0);
  std::printf("  final digest %016" PRIx64 "\n", w.digest());
  // One machine-readable line for compare_sumo.sh.
  std::printf("RESULT bustle vehicles=%u steps=%" PRIu64
              " seconds=%.6f ups=%.1f p50_ms=%.4f p99_ms=%.4f\n",
              w.vehicles().store().size(), a.steps, total_s, static_cast<double>(managed) / total_s,
              percentile(t, 0.5), percentile(t, 0.99));
  bustle::bench::figures() = {
      {"grid", a.grid},
      {"vehicles", w.vehicles().store().size()},
      {"steps", a.steps},
      {"threads", a.threads},
      {"seconds", total_s},
      {"vehicle_updates_per_s", static_cast<double>(managed) / total_s},
      {"step_ms",
       {{"p50", percentile(t, 0.5)},
        {"p99", percentile(t, 0.99)},
        {"max", *std::max_element(t.begin(), t.end())},
        {"mean", total_s * 1000.0 / steps}}},
      {"moving_per_step", static_cast<double>(moving) / steps},
      {"allocations_per_step",
       {{"mean", static_cast<double>(allocs) / steps}, {"max", allocs_max}}},
      {"peak_rss_mib", static_cast<double>(peak_rss_kb()) / 1024.0},
      {"digest", hex_digest(w.digest())}};
  return 0;
}

}  // namespace bustle::bench
