#include "bustle/core/lane_graph.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>

namespace bustle::core {

LaneGraph::LaneGraph(const Scenario& scenario) {
  std::map<std::string, LaneIndex, std::less<>>& by_id = by_id_;
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
    lane.elevation_m = spec.elevation_m;
    lane.cumulative_m.resize(spec.points.size(), 0.0);
    for (std::size_t k = 1; k < spec.points.size(); ++k) {
      // sqrt(dx*dx + dy*dy), not std::hypot, whose rounding differs between
      // C libraries: clients on other platforms rebuild these lengths from
      // Welcome's points and must get the same bits (proto/motion.hpp).
      const double dx = spec.points[k].x_m - spec.points[k - 1].x_m;
      const double dy = spec.points[k].y_m - spec.points[k - 1].y_m;
      lane.cumulative_m[k] = lane.cumulative_m[k - 1] + std::sqrt(dx * dx + dy * dy);
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
  build_chains();
  build_fragments(scenario.pedestrians.fragment_length_m);
  build_segments();
}

void LaneGraph::build_segments() {
  lane_segments_.clear();
  segments_.clear();
  for (const Lane& lane : lanes_) {
    LaneSegments ls{static_cast<std::uint32_t>(segments_.size()), 0, lane.length_m};
    for (std::size_t k = 1; k < lane.points.size(); ++k) {
      const Vec2& a = lane.points[k - 1];
      const Vec2& b = lane.points[k];
      segments_.push_back({lane.cumulative_m[k - 1], lane.cumulative_m[k],
                           lane.cumulative_m[k] - lane.cumulative_m[k - 1], a.x_m, a.y_m,
                           b.x_m - a.x_m, b.y_m - a.y_m});
    }
    ls.count = static_cast<std::uint32_t>(segments_.size()) - ls.first;
    assert(ls.count >= 1);  // validation: every lane has at least two points
    lane_segments_.push_back(ls);
  }
  // segment_at's window may read up to kSegmentWindow ends past a lane's
  // first segment (it never uses them): padding after the last lane's.
  segment_end_m_.clear();
  for (const Segment& g : segments_) segment_end_m_.push_back(g.end_m);
  segment_end_m_.resize(segment_end_m_.size() + kSegmentWindow, 0.0);
}

void LaneGraph::build_chains() {
  const std::uint32_t n = size();
  auto same_class = [&](LaneIndex a, LaneIndex b) {
    return is_pedestrian_lane(lanes_[a].kind) == is_pedestrian_lane(lanes_[b].kind);
  };
  std::vector<std::uint32_t> in_degree(n, 0), out_degree(n, 0);
  std::vector<LaneIndex> only_successor(n, 0);
  for (LaneIndex i = 0; i < n; ++i) {
    for (const LaneIndex s : lanes_[i].successors) {
      if (!same_class(i, s)) continue;
      ++out_degree[i];
      ++in_degree[s];
      only_successor[i] = s;
    }
  }
  // A link i -> s continues a chain when it is the only way out of i and the
  // only way into s.
  auto linked = [&](LaneIndex i) {
    return out_degree[i] == 1 && in_degree[only_successor[i]] == 1;
  };
  std::vector<std::uint8_t> has_chain_predecessor(n, 0);
  for (LaneIndex i = 0; i < n; ++i) {
    if (linked(i)) has_chain_predecessor[only_successor[i]] = 1;
  }
  chain_of_.assign(n, UINT32_MAX);
  auto walk = [&](LaneIndex start, bool cyclic) {
    LaneChain chain;
    chain.cyclic = cyclic;
    chain.pedestrian = is_pedestrian_lane(lanes_[start].kind);
    const auto c = static_cast<std::uint32_t>(chains_.size());
    LaneIndex at = start;
    // Visited marks make the walk stop on a ring (cycle detection) and bound it by n.
    while (chain_of_[at] == UINT32_MAX) {
      chain_of_[at] = c;
      chain.lanes.push_back(at);
      chain.length_m += lanes_[at].length_m;
      if (!linked(at)) break;
      at = only_successor[at];
    }
    chains_.push_back(std::move(chain));
  };
  for (LaneIndex i = 0; i < n; ++i) {
    if (!has_chain_predecessor[i]) walk(i, false);
  }
  // Whatever is left lies on rings where every lane has a chain predecessor.
  for (LaneIndex i = 0; i < n; ++i) {
    if (chain_of_[i] == UINT32_MAX) walk(i, true);
  }
}

void LaneGraph::build_fragments(double fragment_length_m) {
  fragment_first_.assign(size(), kNoFragment);
  fragment_count_.assign(size(), 0);
  const double piece = fragment_length_m > 0.0 ? fragment_length_m : 25.0;
  for (const LaneIndex l : sidewalks_) {
    const double len = lanes_[l].length_m;
    const auto count = static_cast<std::uint32_t>(std::max(1.0, std::ceil(len / piece)));
    fragment_first_[l] = static_cast<std::uint32_t>(fragments_.size());
    fragment_count_[l] = count;
    for (std::uint32_t k = 0; k < count; ++k) {
      fragments_.push_back({l, len * k / count, len / count});
    }
  }
}

std::optional<LaneIndex> LaneGraph::find(std::string_view id) const {
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::int16_t> lane_districts(const Scenario& scenario, const LaneGraph& lanes) {
  std::vector<std::int16_t> of;
  if (scenario.districts.empty()) return of;
  of.assign(lanes.size(), -1);
  for (std::size_t d = 0; d < scenario.districts.size(); ++d) {
    for (const std::string& id : scenario.districts[d].lanes)
      if (const auto lane = lanes.find(id)) of[*lane] = static_cast<std::int16_t>(d);
  }
  return of;
}

std::uint32_t LaneGraph::fragment_of(LaneIndex lane, double s_m) const {
  const std::uint32_t first = fragment_first_[lane];
  if (first == kNoFragment) return kNoFragment;
  const std::uint32_t count = fragment_count_[lane];
  const double len = lanes_[lane].length_m;
  auto k = static_cast<std::int64_t>(s_m / len * count);
  k = std::clamp<std::int64_t>(k, 0, count - 1);
  return first + static_cast<std::uint32_t>(k);
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
  return Pose{a.x_m + (b.x_m - a.x_m) * t, a.y_m + (b.y_m - a.y_m) * t,
              std::atan2(b.y_m - a.y_m, b.x_m - a.x_m)};
}

}  // namespace bustle::core
