// The vehicles bench's city, built in code: a signalised N x N grid of
// one-way road lanes with one garage per block (see grid_city() in
// cities.hpp for its shape). bench_vehicles and bench_stream use it.
#include <algorithm>
#include <array>
#include <string>

#include "bustle/citygen/cities.hpp"
#include "grid_geometry.hpp"

namespace bustle::citygen {
namespace {

constexpr double kRoadSpeedMps = 13.9;
constexpr double kLaneOffsetM = 1.75;

// The lane leaving node (i, j) towards `d`.
std::string road_id(std::uint32_t i, std::uint32_t j, GridDir d) {
  return "r." + std::to_string(i) + "." + std::to_string(j) + "." + kGridDirName[d];
}

}  // namespace

std::uint32_t capacity_for(std::uint32_t n) {
  std::uint32_t cap = 1024;
  while (cap < n + n / 4) cap *= 2;
  return cap;
}

bustle::core::Scenario grid_city(std::uint32_t n, std::uint32_t vehicles) {
  using namespace bustle::core;
  Scenario s;
  s.id = "bustle.bench.grid." + std::to_string(n) + "." + std::to_string(vehicles);
  s.name = "bench grid " + std::to_string(n) + "x" + std::to_string(n) + ", " +
           std::to_string(vehicles) + " vehicles";
  s.entity_capacity = capacity_for(vehicles);
  s.pedestrians.count = 0;
  s.pedestrians.spawn_per_step_max = 1;

  const auto inside = [n](long i, long j) {
    return i >= 0 && j >= 0 && i < long{n} && j < long{n};
  };
  constexpr std::uint32_t kCycleMs = 10'000;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) {
      for (std::uint32_t d = 0; d < 4; ++d) {
        const long ei = long{i} + kGridDx[d], ej = long{j} + kGridDy[d];
        if (!inside(ei, ej)) continue;
        const auto ti = static_cast<std::uint32_t>(ei), tj = static_cast<std::uint32_t>(ej);
        LaneSpec l;
        l.id = road_id(i, j, static_cast<GridDir>(d));
        l.kind = LaneKind::Road;
        l.speed_mps_limit = kRoadSpeedMps;
        // Right of the direction of travel (dx, dy) is (dy, -dx).
        const double ox = kLaneOffsetM * kGridDy[d], oy = -kLaneOffsetM * kGridDx[d];
        l.points = {{kGridBlockM * i + ox, kGridBlockM * j + oy},
                    {kGridBlockM * ti + ox, kGridBlockM * tj + oy}};
        for (std::uint32_t nd = 0; nd < 4; ++nd) {
          if (nd == (d + 2) % 4) continue;  // no U-turn
          if (!inside(long{ti} + kGridDx[nd], long{tj} + kGridDy[nd])) continue;
          l.successors.push_back(road_id(ti, tj, static_cast<GridDir>(nd)));
        }
        SignalSpec sg;
        sg.id = "sig." + l.id;
        sg.lane = l.id;
        sg.open_ms = 4000;
        sg.yield_ms = 1000;
        sg.closed_ms = 5000;
        const std::uint32_t stagger = ((3 * ti + 7 * tj) % 10) * 1000;
        const bool east_west = d == kEast || d == kWest;
        sg.offset_ms = (stagger + (east_west ? 0 : kCycleMs / 2)) % kCycleMs;
        s.signals.push_back(std::move(sg));
        s.lanes.push_back(std::move(l));
      }
    }
  }

  const std::uint32_t blocks = (n - 1) * (n - 1);
  for (std::uint32_t b = 0; b < blocks; ++b) {
    const std::uint32_t i = b % (n - 1), j = b / (n - 1);
    const std::uint32_t share = vehicles / blocks + (b < vehicles % blocks ? 1 : 0);
    if (share == 0) continue;
    GarageSpec g;
    g.id = "g." + std::to_string(i) + "." + std::to_string(j);
    g.route = {road_id(i, j, kEast), road_id(i + 1, j, kNorth), road_id(i + 1, j + 1, kWest),
               road_id(i, j + 1, kSouth)};
    g.lane = g.route[0];
    g.route_end = RouteEnd::Loop;
    g.prototypes = {"car"};
    g.capacity = share;
    g.queue_depth = share;
    g.dispatch_per_step_max = 1;
    g.cooldown_frames = 0;
    g.entrance_clear_m = 1.0;
    for (std::uint32_t k = 0; k < share; ++k) {
      s.vehicle_plan.requests.push_back({"q" + std::to_string(k), g.id, "car", g.lane, 10});
    }
    s.garages.push_back(std::move(g));
  }
  s.vehicle_plan.batch_size = std::max<std::uint32_t>(vehicles, 1);  // validation: at least 1
  s.vehicle_plan.batch_interval_steps = 1;

  const double centre = kGridBlockM * (n - 1) / 2.0;
  s.observers = {{centre, centre}};
  const double beyond = 2.0 * kGridBlockM * n;  // farther than any corner
  s.tiers.full_enter_m = beyond;
  s.tiers.full_exit_m = beyond;
  s.tiers.simulated_enter_m = beyond;
  s.tiers.simulated_exit_m = beyond;
  s.tiers.full_cap = vehicles;
  s.tiers.hard_full_cap =
      std::max(s.tiers.hard_full_cap, vehicles);  // the safety cap must not bind either
  s.tiers.simulated_cap = vehicles;
  s.tiers.transitions_per_step = std::max<std::uint32_t>(vehicles, 1);
  return s;
}

}  // namespace bustle::citygen
