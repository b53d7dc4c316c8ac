// `districts` (issue 34) builds the district city (district_city.cpp) and
// steps it on one process, following every pedestrian and vehicle through
// the district map: crossings per kind and per border (an entity on a lane
// of another district than at the step before), how many live in each
// district, and the border lanes. It checks that the map is valid, that
// every live entity stands on a lane of exactly one district at every step,
// and that both pedestrians and vehicles crossed a border (with 2 or more
// districts); it fails otherwise. The city the district servers will split.
// With --write-scenario PATH it writes the city as a scenario file instead
// (scenario_writer.hpp), for bustle-server --config, and steps nothing.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_support.hpp"
#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "measure.hpp"

namespace bustle::bench {
namespace {

constexpr std::uint8_t kNowhere = 0xff;

struct Crossings {
  std::uint64_t pedestrians = 0;
  std::uint64_t vehicles = 0;
  std::map<std::pair<std::uint8_t, std::uint8_t>, std::uint64_t> per_border;  // (from, to)
};

// --write-scenario: the city as a scenario file at a.write_scenario; 0, or 1
// when the city is refused, too large for the loader or cannot be written.
int write_district_city(const Args& a) {
  // Qualified: in a unity build fanout.cpp's unnamed district_city() would hide it.
  const core::Scenario s = bench::district_city(a.grid, a.districts, a.agents, a.vehicles);
  const std::size_t bytes = write_scenario_file(s, a.write_scenario);
  if (bytes == 0) return 1;
  std::printf("wrote %s: scenario %s, %zu bytes, %zu lanes, %zu districts\n",
              a.write_scenario.c_str(), s.id.c_str(), bytes, s.lanes.size(), s.districts.size());
  return 0;
}

}  // namespace

int bench_districts(const Args& a) {
  if (a.districts > a.grid) {
    std::fprintf(stderr, "bustle-bench: --districts %u needs --grid of at least %u\n", a.districts,
                 a.districts);
    return 2;
  }
  if (!a.write_scenario.empty()) return write_district_city(a);
  const BuiltWorld built =
      build_world([&] { return district_city(a.grid, a.districts, a.agents, a.vehicles); }, a.seed);
  if (!built.world) return 1;  // the map was refused (errors printed)
  core::World& w = *built.world;
  std::vector<std::uint8_t> last(w.registry().capacity(), kNowhere);  // by entity index
  std::vector<std::uint32_t> last_generation(w.registry().capacity(), 0);
  Crossings crossed;
  std::uint64_t homeless = 0;
  std::vector<std::uint64_t> resident_steps(a.districts, 0);
  std::vector<double> t(a.steps, 0.0);
  const auto follow = [&](core::EntityId id, core::LaneIndex lane, bool vehicle) {
    const std::int32_t of = lane < w.lanes().size() ? w.lane_district(lane) : -1;
    if (of < 0) {  // in no district, which the map forbids
      ++homeless;
      return;
    }
    const auto k = static_cast<std::uint8_t>(of);
    ++resident_steps[k];
    const bool same = last_generation[id.index] == id.generation;
    if (same && last[id.index] != kNowhere && last[id.index] != k) {
      ++(vehicle ? crossed.vehicles : crossed.pedestrians);
      ++crossed.per_border[{last[id.index], k}];
    }
    last[id.index] = k;
    last_generation[id.index] = id.generation;
  };
  for (std::uint64_t step = 0; step < a.steps; ++step) {
    const auto b = Clock::now();
    w.step();
    t[step] = ms(Clock::now() - b);
    const core::PedestrianStore& peds = w.pedestrians();
    for (std::uint32_t i = 0; i < peds.size(); ++i) follow(peds.id[i], peds.lane[i], false);
    const core::VehicleStore& v = w.vehicles().store();
    for (std::uint32_t i = 0; i < v.size(); ++i) follow(v.id[i], v.lane[i], true);
  }

  const core::Scenario& s = built.scenario;
  std::printf(
      "districts: %u x %u nodes in %u strips, %zu lanes, %zu garages, %zu signals; %u "
      "pedestrians and %u vehicles live at the end; %" PRIu64 " steps, seed %" PRIu64 "\n",
      a.grid, a.grid, a.districts, s.lanes.size(), s.garages.size(), s.signals.size(),
      w.pedestrians().size(), w.vehicles().store().size(), a.steps, a.seed);
  for (std::size_t k = 0; k < s.districts.size(); ++k) {
    std::printf(
        "  %s: %zu lanes (%zu on its borders), %zu garages, %zu signals; %.1f entities "
        "per step\n",
        s.districts[k].id.c_str(), s.districts[k].lanes.size(), s.districts[k].border_lanes.size(),
        s.districts[k].garages.size(), s.districts[k].signals.size(),
        static_cast<double>(resident_steps[k]) / static_cast<double>(a.steps));
  }
  std::printf(
      "  crossings: pedestrians %" PRIu64 ", vehicles %" PRIu64 " (%.2f per step)\n",
      crossed.pedestrians, crossed.vehicles,
      static_cast<double>(crossed.pedestrians + crossed.vehicles) / static_cast<double>(a.steps));
  for (const auto& [border, count] : crossed.per_border)
    std::printf("    d%u -> d%u: %" PRIu64 "\n", border.first, border.second, count);
  std::printf("  step ms  p50 %.3f  p99 %.3f (one process, the whole city)\n", percentile(t, 0.5),
              percentile(t, 0.99));
  std::printf("RESULT districts=%u pedestrian_crossings=%" PRIu64 " vehicle_crossings=%" PRIu64
              " homeless=%" PRIu64 "\n",
              a.districts, crossed.pedestrians, crossed.vehicles, homeless);
  bool ok = true;
  if (homeless > 0) {
    std::printf("DISTRICT CHECK FAILED: %" PRIu64 " entity-steps on a lane of no district\n",
                homeless);
    ok = false;
  }
  if (a.districts > 1 && a.agents > 0 && crossed.pedestrians == 0) {
    std::printf("DISTRICT CHECK FAILED: no pedestrian crossed a border\n");
    ok = false;
  }
  if (a.districts > 1 && a.vehicles > 0 && crossed.vehicles == 0) {
    std::printf("DISTRICT CHECK FAILED: no vehicle crossed a border\n");
    ok = false;
  }
  return ok ? 0 : 1;
}

}  // namespace bustle::bench
