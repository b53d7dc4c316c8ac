// What the VehicleSystem builds once from the scenario: the garages' routes
// as lane indices, the lane table the kernel reads (LaneHot), crossing
// conflicts, signals' lanes, the lanes feeding each entrance (invariant 5)
// and the merges (invariant 6).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "bustle/core/vehicles.hpp"

namespace bustle::core {

namespace {

// Intersection of segments p1p2 and q1q2; returns the fraction along p.
bool segment_intersection(const Vec2& p1, const Vec2& p2, const Vec2& q1, const Vec2& q2,
                          double& t_out) {
  const double rx = p2.x_m - p1.x_m, ry = p2.y_m - p1.y_m;
  const double sx = q2.x_m - q1.x_m, sy = q2.y_m - q1.y_m;
  const double denom = rx * sy - ry * sx;
  if (std::abs(denom) < 1e-12) return false;
  const double qpx = q1.x_m - p1.x_m, qpy = q1.y_m - p1.y_m;
  const double t = (qpx * sy - qpy * sx) / denom;
  const double u = (qpx * ry - qpy * rx) / denom;
  if (t < 0.0 || t > 1.0 || u < 0.0 || u > 1.0) return false;
  t_out = t;
  return true;
}

}  // namespace

VehicleSystem::VehicleSystem(const Scenario& scenario, const LaneGraph& lanes,
                             std::uint32_t entity_capacity)
    : scenario_(&scenario), lanes_(&lanes) {
  for (const GarageSpec& g : scenario.garages) {
    std::vector<LaneIndex> route;
    for (const std::string& l : g.route) route.push_back(*lanes.find(l));
    routes_.push_back(std::move(route));
  }
  garages_.resize(scenario.garages.size());
  managed_.assign(scenario.garages.size(), 0);
  dispatched_hash_.assign(scenario.garages.size(), 0);
  signal_of_lane_.assign(lanes.size(), -1);
  for (std::size_t i = 0; i < scenario.signals.size(); ++i) {
    const SignalSpec& sg = scenario.signals[i];
    signal_of_lane_[*lanes.find(sg.lane)] = static_cast<std::int32_t>(i);
    signal_lane_.push_back(*lanes.find(sg.lane));  // its LaneHot.phase: Open until step 1
    signal_us_.push_back({std::uint64_t{sg.open_ms} * 1000, std::uint64_t{sg.yield_ms} * 1000,
                          std::uint64_t{sg.closed_ms} * 1000});
    SignalState st;
    st.phase_elapsed_us = std::uint64_t{sg.offset_ms} * 1000;
    // Apply the offset through the normal phase machine.
    const std::uint64_t durations[3] = {std::uint64_t{sg.open_ms} * 1000,
                                        std::uint64_t{sg.yield_ms} * 1000,
                                        std::uint64_t{sg.closed_ms} * 1000};
    while (st.phase_elapsed_us >= durations[static_cast<int>(st.phase)]) {
      st.phase_elapsed_us -= durations[static_cast<int>(st.phase)];
      st.phase = static_cast<SignalPhase>((static_cast<int>(st.phase) + 1) % 3);
    }
    signals_.push_back(st);
  }
  // Crossing conflicts: where a walkable crossing's polyline cuts a road's.
  conflicts_.resize(lanes.size());
  for (LaneIndex r = 0; r < lanes.size(); ++r) {
    const Lane& road = lanes.lane(r);
    if (road.kind != LaneKind::Road) continue;
    for (LaneIndex c = 0; c < lanes.size(); ++c) {
      const Lane& cross = lanes.lane(c);
      if (cross.kind != LaneKind::Crossing) continue;
      for (std::size_t a = 1; a < road.points.size(); ++a) {
        for (std::size_t b = 1; b < cross.points.size(); ++b) {
          double t = 0.0;
          if (segment_intersection(road.points[a - 1], road.points[a], cross.points[b - 1],
                                   cross.points[b], t)) {
            const double s =
                road.cumulative_m[a - 1] + t * (road.cumulative_m[a] - road.cumulative_m[a - 1]);
            conflicts_[r].push_back({s, c});
          }
        }
      }
    }
    std::sort(conflicts_[r].begin(), conflicts_[r].end(), [](const Conflict& x, const Conflict& y) {
      return x.s_on_road_m != y.s_on_road_m ? x.s_on_road_m < y.s_on_road_m
                                            : x.crossing < y.crossing;
    });
  }
  store_.dense_of.assign(entity_capacity, VehicleStore::kNoSlot);
  lane_start_.assign(lanes.size() + 1, 0);
  // The per-lane facts the kernel reads, in one dense table.
  lane_hot_.resize(lanes.size());  // value-initialized: no signal fields, phase Open
  for (LaneIndex l = 0; l < lanes.size(); ++l) {
    const Lane& L = lanes.lane(l);
    LaneHot& h = lane_hot_[l];
    h.length_m = L.length_m;
    h.speed_mps = L.speed_mps_limit;
    h.signal = signal_of_lane_[l];
    if (h.signal >= 0) {
      const SignalSpec& sg = scenario.signals[static_cast<std::size_t>(h.signal)];
      h.stop_m = sg.stop_alpha * L.length_m;
      h.yield_m = sg.yield_alpha * L.length_m;
    }
    h.conflicts = static_cast<std::uint32_t>(conflicts_[l].size());
  }
  build_route_tables();
  waiting_.resize(scenario.garages.size());
  // A garage's waiting list never outgrows its capacity: no allocation per step.
  for (std::size_t g = 0; g < scenario.garages.size(); ++g)
    waiting_[g].reserve(scenario.garages[g].capacity);
  // Straight (two-point) lanes, for the tier distance without the lane walk:
  // the same arithmetic as LaneGraph::position.
  lane_geo_.resize(lanes.size());
  for (LaneIndex l = 0; l < lanes.size(); ++l) {
    const Lane& L = lanes.lane(l);
    LaneGeo& g = lane_geo_[l];
    g.straight = L.points.size() == 2;
    g.elevation_m = L.elevation_m;
    if (!g.straight) continue;
    g.ax = L.points[0].x_m;
    g.ay = L.points[0].y_m;
    g.dx = L.points[1].x_m - L.points[0].x_m;
    g.dy = L.points[1].y_m - L.points[0].y_m;
    g.s0 = L.cumulative_m[0];
    g.seg = L.cumulative_m[1] - L.cumulative_m[0];
    g.length_m = L.length_m;
  }
}

// The routes as the kernel reads them (concatenated, loop flags), then the
// lanes that lead onto entrances (build_feeders) and onto merges (build_merges).
void VehicleSystem::build_route_tables() {
  for (const GarageSpec& g : scenario_->garages)
    route_loops_.push_back(g.route_end == RouteEnd::Loop ? 1 : 0);
  route_begin_.push_back(0);
  for (const auto& r : routes_) {
    route_lanes_.insert(route_lanes_.end(), r.begin(), r.end());
    route_begin_.push_back(static_cast<std::uint32_t>(route_lanes_.size()));
  }
  build_feeders();
  build_merges();
}

// Invariant 5 at the entrance: per garage, its clearance and the lanes that
// lead onto its entrance lane within it, walked back along every route that
// enters the entrance lane (the loop seam included) and kept once per lane at
// the shortest distance.
void VehicleSystem::build_feeders() {
  const std::size_t garages = scenario_->garages.size();
  entrance_clear_m_.assign(garages, 0.0);
  feeders_.assign(garages, {});
  route_max_speed_.assign(garages, 0.0);
  for (std::size_t g = 0; g < garages; ++g) {
    for (const LaneIndex l : routes_[g])
      route_max_speed_[g] = std::max(route_max_speed_[g], lane_hot_[l].speed_mps);
    const double clear =
        std::max(scenario_->garages[g].entrance_clear_m, scenario_->vehicle_rules.headway_block_m);
    entrance_clear_m_[g] = clear;
    const LaneIndex entrance = routes_[g][0];
    std::vector<Feeder>& out = feeders_[g];
    for (std::size_t h = 0; h < garages; ++h) {
      const auto& route = routes_[h];
      const auto size = static_cast<std::uint32_t>(route.size());
      const bool loops = route_loops_[h] != 0;
      for (std::uint32_t k = 0; k < size; ++k) {
        if (route[k] != entrance || (k == 0 && !loops)) continue;
        const bool own = h == g && k == 0;
        std::uint32_t idx = k == 0 ? size - 1 : k - 1;
        double acc = 0.0;
        for (std::uint32_t hop = 0; hop < 64 && acc < clear; ++hop) {
          const LaneIndex lane = route[idx];
          auto it = std::find_if(out.begin(), out.end(),
                                 [lane](const Feeder& f) { return f.lane == lane; });
          if (it == out.end()) {
            out.push_back({lane, acc, own});
          } else {
            it->to_entrance_m = std::min(it->to_entrance_m, acc);
            it->own = it->own || own;
          }
          acc += lane_hot_[lane].length_m;
          if (idx > 0) {
            --idx;
          } else if (loops) {
            idx = size - 1;
          } else {
            break;
          }
        }
      }
    }
  }
}

// Invariant 6: the merge lanes, each with its distinct feeder lanes (route
// predecessors, the loop seam included), in lane order.
void VehicleSystem::build_merges() {
  const std::uint32_t lanes = lanes_->size();
  std::vector<std::vector<LaneIndex>> feeders(lanes);
  for (std::size_t g = 0; g < routes_.size(); ++g) {
    const auto& route = routes_[g];
    for (std::size_t k = 0; k < route.size(); ++k) {
      if (k + 1 == route.size() && route_loops_[g] == 0) break;
      const LaneIndex from = route[k];
      const LaneIndex onto = route[k + 1 < route.size() ? k + 1 : 0];
      if (from == onto) continue;  // a one-lane loop is not a merge
      feeders[onto].push_back(from);
    }
  }
  merge_lane_.clear();
  merge_feeders_.clear();
  merge_feeder_begin_.assign(1, 0);
  for (LaneIndex l = 0; l < lanes; ++l) {
    auto& f = feeders[l];
    std::sort(f.begin(), f.end());
    f.erase(std::unique(f.begin(), f.end()), f.end());
    lane_hot_[l].merge = -1;
    if (f.size() < 2) continue;
    lane_hot_[l].merge = static_cast<std::int32_t>(merge_lane_.size());
    merge_lane_.push_back(l);
    merge_feeders_.insert(merge_feeders_.end(), f.begin(), f.end());
    merge_feeder_begin_.push_back(static_cast<std::uint32_t>(merge_feeders_.size()));
  }
  merge_winner_.assign(merge_lane_.size(), VehicleStore::kNoSlot);
  merge_winner_d_m_.assign(merge_lane_.size(), 0.0);
}

LaneIndex VehicleSystem::next_on_route(std::uint32_t i) const {
  const bool ghost = i >= store_.size();  // a snapshot row past the store's
  const std::uint32_t g = ghost ? ghosts_[i - store_.size()].garage : store_.garage[i];
  const std::uint32_t ri =
      (ghost ? ghosts_[i - store_.size()].route_index : store_.route_index[i]) + 1;
  if (ri < route_begin_[g + 1] - route_begin_[g]) return route_lanes_[route_begin_[g] + ri];
  return route_loops_[g] != 0 ? route_lanes_[route_begin_[g]] : kNoLaneAhead;
}

}  // namespace bustle::core
