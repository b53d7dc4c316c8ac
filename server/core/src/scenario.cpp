#include "bustle/core/scenario.hpp"

#include <cmath>
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
  return errors;
}

}  // namespace bustle::core
