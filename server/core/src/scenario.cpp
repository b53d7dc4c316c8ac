#include "bustle/core/scenario.hpp"

#include <cmath>
#include <algorithm>
#include <map>

namespace bustle::core {
namespace {

std::string lane_path(std::size_t i) { return "lanes[" + std::to_string(i) + "]"; }

double polyline_length(const std::vector<Vec2>& pts) {
  double total = 0.0;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    total += std::hypot(pts[i].x_m - pts[i - 1].x_m, pts[i].y_m - pts[i - 1].y_m);
  }
  return total;
}

template <class Fail>
void validate_vehicles(const Scenario& s, const std::map<std::string, std::size_t>& lane_index, Fail&& fail) {
  auto road = [&](const std::string& path, const std::string& id) -> const LaneSpec* {
    auto it = lane_index.find(id);
    if (it == lane_index.end()) {
      fail(path, "unknown lane id '" + id + "'");
      return nullptr;
    }
    const LaneSpec& lane = s.lanes[it->second];
    if (lane.kind != LaneKind::Road) {
      fail(path, "lane '" + id + "' is not a road");
      return nullptr;
    }
    return &lane;
  };
  std::map<std::string, std::size_t> garage_index;
  for (std::size_t g = 0; g < s.garages.size(); ++g) {
    const GarageSpec& gs = s.garages[g];
    const std::string p = "garages[" + std::to_string(g) + "]";
    if (gs.id.empty()) fail(p + ".id", "must be a non-empty string");
    if (!garage_index.emplace(gs.id, g).second) fail(p + ".id", "duplicate garage id '" + gs.id + "'");
    const LaneSpec* entrance = road(p + ".lane", gs.lane);
    if (gs.route.empty()) {
      fail(p + ".route", "must list at least one lane");
    } else if (gs.route.front() != gs.lane) {
      fail(p + ".route[0]", "must be the entrance lane '" + gs.lane + "'");
    }
    for (std::size_t k = 0; k < gs.route.size(); ++k) {
      const std::string rp = p + ".route[" + std::to_string(k) + "]";
      if (road(rp, gs.route[k]) == nullptr || k == 0) continue;
      auto prev = lane_index.find(gs.route[k - 1]);
      if (prev == lane_index.end()) continue;
      const auto& succ = s.lanes[prev->second].successors;
      if (std::find(succ.begin(), succ.end(), gs.route[k]) == succ.end()) {
        fail(rp, "lane '" + gs.route[k] + "' is not a successor of '" + gs.route[k - 1] + "'");
      }
    }
    if (gs.prototypes.empty()) fail(p + ".prototypes", "must list at least one prototype");
    for (std::size_t k = 0; k < gs.prototypes.size(); ++k) {
      if (gs.prototypes[k].empty()) fail(p + ".prototypes[" + std::to_string(k) + "]", "must be non-empty");
      for (std::size_t j = 0; j < k; ++j) {
        if (gs.prototypes[j] == gs.prototypes[k]) {
          fail(p + ".prototypes[" + std::to_string(k) + "]", "duplicate prototype '" + gs.prototypes[k] + "'");
        }
      }
    }
    if (gs.capacity < 1) fail(p + ".capacity", "must be at least 1");
    if (gs.queue_depth < 1) fail(p + ".queue_depth", "must be at least 1");
    if (gs.dispatch_per_step_max < 1) fail(p + ".dispatch_per_step_max", "must be at least 1");
    if (!(gs.entrance_clear_m >= 0.0) || (entrance != nullptr && gs.entrance_clear_m > polyline_length(entrance->points))) {
      fail(p + ".entrance_clear_m", "must be in [0, entrance lane length]");
    }
  }
  std::map<std::string, std::size_t> signal_index;
  for (std::size_t i = 0; i < s.signals.size(); ++i) {
    const SignalSpec& sg = s.signals[i];
    const std::string p = "signals[" + std::to_string(i) + "]";
    if (sg.id.empty()) fail(p + ".id", "must be a non-empty string");
    if (!signal_index.emplace(sg.id, i).second) fail(p + ".id", "duplicate signal id '" + sg.id + "'");
    road(p + ".lane", sg.lane);
    if (!(sg.stop_alpha >= 0.0 && sg.stop_alpha <= 1.0)) fail(p + ".stop_alpha", "must be in [0, 1]");
    if (!(sg.yield_alpha >= 0.0 && sg.yield_alpha <= sg.stop_alpha)) {
      fail(p + ".yield_alpha", "must be in [0, stop_alpha]");
    }
    if (sg.open_ms < 1) fail(p + ".open_ms", "must be at least 1");
    if (sg.yield_ms < 1) fail(p + ".yield_ms", "must be at least 1");
    if (sg.closed_ms < 1) fail(p + ".closed_ms", "must be at least 1");
    if (std::uint64_t{sg.offset_ms} >= std::uint64_t{sg.open_ms} + sg.yield_ms + sg.closed_ms) {
      fail(p + ".offset_ms", "must be shorter than one cycle");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (s.signals[j].lane == sg.lane) fail(p + ".lane", "lane '" + sg.lane + "' already has a signal");
    }
  }
  const VehiclePlanSpec& plan = s.vehicle_plan;
  if (plan.batch_size < 1) fail("vehicle_plan.batch_size", "must be at least 1");
  if (plan.batch_interval_steps < 1) fail("vehicle_plan.batch_interval_steps", "must be at least 1");
  std::map<std::pair<std::string, std::string>, std::size_t> seen_requests;
  for (std::size_t i = 0; i < plan.requests.size(); ++i) {
    const PlannedRequest& r = plan.requests[i];
    const std::string p = "vehicle_plan.requests[" + std::to_string(i) + "]";
    if (r.request_id.empty()) fail(p + ".request_id", "must be a non-empty string");
    if (!seen_requests.emplace(std::make_pair(r.garage, r.request_id), i).second) {
      fail(p + ".request_id", "duplicate request id '" + r.request_id + "' for garage '" + r.garage + "'");
    }
    auto g = garage_index.find(r.garage);
    if (g == garage_index.end()) {
      fail(p + ".garage", "unknown garage id '" + r.garage + "'");
      continue;
    }
    const GarageSpec& gs = s.garages[g->second];
    if (std::find(gs.prototypes.begin(), gs.prototypes.end(), r.prototype) == gs.prototypes.end()) {
      fail(p + ".prototype", "garage '" + gs.id + "' has no prototype '" + r.prototype + "'");
    }
    if (r.lane != gs.lane) fail(p + ".lane", "garage '" + gs.id + "' dispatches onto lane '" + gs.lane + "' only");
  }
  const VehicleRules& vr = s.vehicle_rules;
  if (!(vr.headway_block_m > 0.0)) fail("vehicle_rules.headway_block_m", "must be positive");
  if (!(vr.headway_caution_m >= vr.headway_block_m)) {
    fail("vehicle_rules.headway_caution_m", "must be at least headway_block_m");
  }
  if (!(vr.yield_multiplier > 0.0 && vr.yield_multiplier <= 1.0)) {
    fail("vehicle_rules.yield_multiplier", "must be in (0, 1]");
  }
  if (!(vr.pedestrian_hazard_m >= 0.0)) fail("vehicle_rules.pedestrian_hazard_m", "must be non-negative");
  const TierSpec& t = s.tiers;
  if (!(t.full_enter_m >= 0.0 && t.full_enter_m <= t.full_exit_m)) {
    fail("tiers.full_exit_m", "must be at least full_enter_m (hysteresis)");
  }
  if (!(t.simulated_enter_m >= t.full_enter_m && t.simulated_enter_m <= t.simulated_exit_m)) {
    fail("tiers.simulated_exit_m", "need full_enter_m <= simulated_enter_m <= simulated_exit_m");
  }
  if (t.transitions_per_step < 1) fail("tiers.transitions_per_step", "must be at least 1");
  for (std::size_t i = 0; i < s.observers.size(); ++i) {
    if (!std::isfinite(s.observers[i].x_m) || !std::isfinite(s.observers[i].y_m)) {
      fail("observers[" + std::to_string(i) + "]", "coordinates must be finite");
    }
  }
}

}  // namespace

std::vector<ScenarioError> validate_scenario(const Scenario& s) {
  std::vector<ScenarioError> errors;
  auto fail = [&](std::string path, std::string msg) {
    errors.push_back({std::move(path), std::move(msg)});
  };

  if (s.id.empty()) fail("id", "must be a non-empty string");
  if (s.step_us < kStepUsMin || s.step_us > kStepUsMax) {
    fail("step_us", "must be in [" + std::to_string(kStepUsMin) + ", " +
                        std::to_string(kStepUsMax) + "], got " + std::to_string(s.step_us));
  }
  if (s.entity_capacity < 1 || s.entity_capacity > kEntityCapacityMax) {
    fail("entity_capacity", "must be in [1, " + std::to_string(kEntityCapacityMax) + "], got " +
                                std::to_string(s.entity_capacity));
  }
  if (s.command_inbox_capacity < 1 || s.command_inbox_capacity > kInboxCapacityMax) {
    fail("command_inbox_capacity", "must be in [1, " + std::to_string(kInboxCapacityMax) +
                                       "], got " + std::to_string(s.command_inbox_capacity));
  }
  if (s.lanes.empty()) fail("lanes", "must contain at least one lane");

  // std::map, not a hash map: error order must not depend on hashing.
  std::map<std::string, std::size_t> first_index;
  for (std::size_t i = 0; i < s.lanes.size(); ++i) {
    const LaneSpec& lane = s.lanes[i];
    const std::string p = lane_path(i);
    if (lane.id.empty()) {
      fail(p + ".id", "must be a non-empty string");
    } else if (auto [it, inserted] = first_index.emplace(lane.id, i); !inserted) {
      fail(p + ".id", "duplicate lane id '" + lane.id + "' (first used by " +
                          lane_path(it->second) + ")");
    }
    if (lane.points.size() < 2) {
      fail(p + ".points", "must have at least 2 points, got " + std::to_string(lane.points.size()));
    } else {
      for (std::size_t k = 0; k < lane.points.size(); ++k) {
        if (!std::isfinite(lane.points[k].x_m) || !std::isfinite(lane.points[k].y_m)) {
          fail(p + ".points[" + std::to_string(k) + "]", "coordinates must be finite");
        }
      }
      const double len = polyline_length(lane.points);
      if (!(len >= kLaneLengthMinM)) {
        fail(p + ".points", "polyline length must be at least 0.01 m");
      }
    }
    if (!(lane.speed_mps_limit > 0.0) || !(lane.speed_mps_limit <= kSpeedMpsMax)) {
      fail(p + ".speed_mps_limit", "must be in (0, 100] m/s");
    }
  }
  for (std::size_t i = 0; i < s.lanes.size(); ++i) {
    const LaneSpec& lane = s.lanes[i];
    for (std::size_t k = 0; k < lane.successors.size(); ++k) {
      if (first_index.find(lane.successors[k]) == first_index.end()) {
        fail(lane_path(i) + ".successors[" + std::to_string(k) + "]",
             "unknown lane id '" + lane.successors[k] + "'");
      }
    }
  }

  if (s.pedestrians.count > 0) {
    bool any_sidewalk = false;
    for (const LaneSpec& lane : s.lanes) any_sidewalk |= lane.kind == LaneKind::Sidewalk;
    if (!any_sidewalk) fail("pedestrians.count", "is positive but the scenario has no sidewalk lane");
  }
  if (s.pedestrians.count > s.entity_capacity) {
    fail("pedestrians.count", "exceeds entity_capacity (" + std::to_string(s.entity_capacity) + ")");
  }
  if (s.pedestrians.spawn_per_step_max < 1) {
    fail("pedestrians.spawn_per_step_max", "must be at least 1");
  }
  validate_vehicles(s, first_index, fail);
  return errors;
}

}  // namespace bustle::core
