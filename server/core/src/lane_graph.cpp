#include "bustle/core/lane_graph.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>

namespace bustle::core {

LaneGraph::LaneGraph(const Scenario& scenario) {
  std::map<std::string, LaneIndex> by_id;
  for (std::size_t i = 0; i < scenario.lanes.size(); ++i) {
    by_id.emplace(scenario.lanes[i].id, static_cast<LaneIndex>(i));
  }
  lanes_.reserve(scenario.lanes.size());
  for (const LaneSpec& spec : scenario.lanes) {
    Lane lane;
    lane.id = spec.id;
    lane.kind = spec.kind;
    lane.points = spec.points;
    lane.speed_mps_limit = spec.speed_mps_limit;
    lane.cumulative_m.resize(spec.points.size(), 0.0);
    for (std::size_t k = 1; k < spec.points.size(); ++k) {
      lane.cumulative_m[k] = lane.cumulative_m[k - 1] +
                             std::hypot(spec.points[k].x_m - spec.points[k - 1].x_m,
                                        spec.points[k].y_m - spec.points[k - 1].y_m);
    }
    lane.length_m = lane.cumulative_m.back();
    for (const std::string& succ : spec.successors) {
      auto it = by_id.find(succ);
      assert(it != by_id.end());
      lane.successors.push_back(it->second);
    }
    lanes_.push_back(std::move(lane));
  }
  for (Lane& lane : lanes_) {
    for (LaneIndex s : lane.successors) {
      if (is_pedestrian_lane(lanes_[s].kind)) lane.pedestrian_successors.push_back(s);
    }
  }
  for (LaneIndex i = 0; i < size(); ++i) {
    if (lanes_[i].kind == LaneKind::Sidewalk) sidewalks_.push_back(i);
  }
}

namespace {

// The segment [points[k-1], points[k]] holding distance s (clamped), and the
// fraction t along it. Zero-length segments are skipped backwards so the
// heading of the segment is always defined.
void locate(const Lane& lane, double s_m, std::size_t& k, double& t) {
  const double s = std::clamp(s_m, 0.0, lane.length_m);
  // First cumulative entry strictly greater than s marks the segment's end.
  auto it = std::upper_bound(lane.cumulative_m.begin(), lane.cumulative_m.end(), s);
  k = static_cast<std::size_t>(it - lane.cumulative_m.begin());
  if (k >= lane.points.size()) k = lane.points.size() - 1;
  if (k == 0) k = 1;
  while (k > 1 && lane.cumulative_m[k] == lane.cumulative_m[k - 1]) --k;
  const double seg = lane.cumulative_m[k] - lane.cumulative_m[k - 1];
  t = seg > 0.0 ? (s - lane.cumulative_m[k - 1]) / seg : 0.0;
}

}  // namespace

Pose LaneGraph::sample(LaneIndex li, double s_m) const {
  const Lane& lane = lanes_[li];
  std::size_t k = 0;
  double t = 0.0;
  locate(lane, s_m, k, t);
  const Vec2& a = lane.points[k - 1];
  const Vec2& b = lane.points[k];
  return Pose{a.x_m + (b.x_m - a.x_m) * t, a.y_m + (b.y_m - a.y_m) * t, std::atan2(b.y_m - a.y_m, b.x_m - a.x_m)};
}

Vec2 LaneGraph::position(LaneIndex li, double s_m) const {
  const Lane& lane = lanes_[li];
  std::size_t k = 0;
  double t = 0.0;
  locate(lane, s_m, k, t);
  const Vec2& a = lane.points[k - 1];
  const Vec2& b = lane.points[k];
  return {a.x_m + (b.x_m - a.x_m) * t, a.y_m + (b.y_m - a.y_m) * t};
}

}  // namespace bustle::core
