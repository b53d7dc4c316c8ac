// One lane graph for sidewalks, crossings and roads.
//
// Built once from a validated Scenario and immutable afterwards. Lanes are
// addressed by a dense LaneIndex (their order in the scenario); string ids are
// kept for the wire and for error messages. Each lane caches the cumulative
// length of its polyline so sampling a pose at a distance is a binary search.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bustle/core/scenario.hpp"

namespace bustle::core {

using LaneIndex = std::uint32_t;

struct Pose {
  double x_m = 0.0;
  double y_m = 0.0;
  double heading_rad = 0.0;  // atan2(dy, dx) of the segment
};

struct Lane {
  std::string id;
  LaneKind kind = LaneKind::Sidewalk;
  std::vector<Vec2> points;
  std::vector<double> cumulative_m;  // cumulative_m[i] = length up to points[i]
  double length_m = 0.0;
  double speed_mps_limit = 0.0;
  std::vector<LaneIndex> successors;             // all successors, scenario order
  std::vector<LaneIndex> pedestrian_successors;  // those a pedestrian may take
};

class LaneGraph {
 public:
  // [Precondition: validate_scenario(scenario) is empty]
  explicit LaneGraph(const Scenario& scenario);

  const std::vector<Lane>& lanes() const { return lanes_; }
  const Lane& lane(LaneIndex i) const { return lanes_[i]; }
  std::uint32_t size() const { return static_cast<std::uint32_t>(lanes_.size()); }
  // Sidewalk lanes, in index order: where new pedestrians are placed.
  const std::vector<LaneIndex>& sidewalks() const { return sidewalks_; }

  // Pose at distance s along a lane, clamped to [0, length].
  Pose sample(LaneIndex lane, double s_m) const;
  // Position only (no heading: skips atan2 on hot paths such as tiering).
  Vec2 position(LaneIndex lane, double s_m) const;

 private:
  std::vector<Lane> lanes_;
  std::vector<LaneIndex> sidewalks_;
};

}  // namespace bustle::core
