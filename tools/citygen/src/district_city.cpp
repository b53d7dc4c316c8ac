// The district city (issue 34), built in code on the vehicle grid: the
// grid's roads, signals and garages, sidewalks beside every road, and a
// district map cutting the node columns into strips (see district_city() in
// cities.hpp). bench_districts and the district world tests use it.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>

#include "bustle/citygen/cities.hpp"
#include "grid_geometry.hpp"

namespace bustle::citygen {
namespace {

constexpr double kWalkOffsetM = 5.0;

std::string walk_id(std::uint32_t i, std::uint32_t j, std::uint32_t d) {
  return "w." + std::to_string(i) + "." + std::to_string(j) + "." + kGridDirName[d];
}

// Sidewalks: one per directed grid edge, right of the road that runs the
// same way; at a node a pedestrian may go on in any direction but back.
void add_sidewalks(core::Scenario& s, std::uint32_t n) {
  const auto inside = [n](long i, long j) {
    return i >= 0 && j >= 0 && i < long{n} && j < long{n};
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) {
      for (std::uint32_t d = 0; d < 4; ++d) {
        const long ei = long{i} + kGridDx[d], ej = long{j} + kGridDy[d];
        if (!inside(ei, ej)) continue;
        core::LaneSpec l;
        l.id = walk_id(i, j, d);
        l.kind = core::LaneKind::Sidewalk;
        l.speed_mps_limit = 1.4;
        const double ox = kWalkOffsetM * kGridDy[d], oy = -kWalkOffsetM * kGridDx[d];
        l.points = {{kGridBlockM * i + ox, kGridBlockM * j + oy},
                    {kGridBlockM * static_cast<double>(ei) + ox,
                     kGridBlockM * static_cast<double>(ej) + oy}};
        for (std::uint32_t nd = 0; nd < 4; ++nd) {
          if (nd == (d + 2) % 4 || !inside(ei + kGridDx[nd], ej + kGridDy[nd])) continue;
          l.successors.push_back(
              walk_id(static_cast<std::uint32_t>(ei), static_cast<std::uint32_t>(ej), nd));
        }
        s.lanes.push_back(std::move(l));
      }
    }
  }
}

// Every lane belongs to the strip of the node it leaves (its first point,
// offset a few metres from the node); garages and signals to their lane's.
void add_district_map(core::Scenario& s, std::uint32_t n, std::uint32_t districts) {
  std::map<std::string, std::size_t> owner;
  s.districts.assign(districts, {});
  for (std::uint32_t k = 0; k < districts; ++k) s.districts[k].id = "d" + std::to_string(k);
  for (const core::LaneSpec& l : s.lanes) {
    const auto column = static_cast<std::uint32_t>(
        std::clamp<long>(std::lround(l.points.front().x_m / kGridBlockM), 0, long{n} - 1));
    const std::size_t k = std::size_t{column} * districts / n;
    owner[l.id] = k;
    s.districts[k].lanes.push_back(l.id);
  }
  for (const core::LaneSpec& l : s.lanes) {
    const bool border =
        std::any_of(l.successors.begin(), l.successors.end(),
                    [&](const std::string& next) { return owner[next] != owner[l.id]; });
    if (border) s.districts[owner[l.id]].border_lanes.push_back(l.id);
  }
  for (const core::GarageSpec& g : s.garages) s.districts[owner[g.lane]].garages.push_back(g.id);
  for (const core::SignalSpec& sg : s.signals) s.districts[owner[sg.lane]].signals.push_back(sg.id);
}

}  // namespace

bustle::core::Scenario district_city(std::uint32_t n, std::uint32_t districts,
                                     std::uint32_t pedestrians, std::uint32_t vehicles) {
  core::Scenario s = grid_city(n, vehicles);
  s.id = "bustle.bench.districts." + std::to_string(n) + "." + std::to_string(districts);
  s.name = "district city: " + std::to_string(n) + "x" + std::to_string(n) + " nodes in " +
           std::to_string(districts) + " districts, " + std::to_string(pedestrians) +
           " pedestrians, " + std::to_string(vehicles) + " vehicles";
  add_sidewalks(s, n);
  s.pedestrians.count = pedestrians;
  s.pedestrians.spawn_per_step_max = std::max<std::uint32_t>(8, pedestrians / 20);
  const std::uint32_t everyone = pedestrians + vehicles;
  s.entity_capacity = capacity_for(everyone);
  // Everyone Full, as the grid's vehicles: crossings happen at every step.
  s.tiers.full_cap = everyone;
  s.tiers.hard_full_cap = std::max(s.tiers.hard_full_cap, everyone);
  s.tiers.simulated_cap = everyone;
  s.tiers.transitions_per_step = std::max<std::uint32_t>(everyone, 1);
  add_district_map(s, n, districts);
  return s;
}

}  // namespace bustle::citygen
