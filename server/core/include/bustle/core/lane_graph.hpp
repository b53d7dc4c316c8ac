// One lane graph for sidewalks, crossings and roads.
//
// Built once from a validated Scenario and immutable afterwards. Lanes are
// addressed by a dense LaneIndex (their order in the scenario); string ids are
// kept for the wire and for error messages. Each lane caches the cumulative
// length of its polyline so sampling a pose at a distance is a binary search.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
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
  double elevation_m = 0.0;
};

// A maximal run of lanes of one class (pedestrian lanes, or roads) where each
// link has out-degree 1 at its tail and in-degree 1 at its head: the routes
// distant dots follow without decisions. A ring of such links is one chain
// marked cyclic, starting at its lowest lane index.
struct LaneChain {
  std::vector<LaneIndex> lanes;
  bool cyclic = false;
  bool pedestrian = true;  // pedestrian lanes (sidewalks, crossings) or roads
  double length_m = 0.0;
};

// A piece of a sidewalk for the lane density ledger.
struct LaneFragment {
  LaneIndex lane = 0;
  double start_m = 0.0;
  double length_m = 0.0;
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
  // position() in two halves, for loops over many points: the segment's
  // values it interpolates, then interpolate(), which has no branch (so a
  // loop of it runs several points at a time).
  struct SegmentAt {
    double along_m;   // s - the segment's start
    double length_m;  // the segment's length (0: its first point)
    double ax_m, ay_m, dx_m, dy_m;
  };
  SegmentAt segment_at(LaneIndex lane, double s_m) const;
  static Vec2 interpolate(const SegmentAt& g) {
    // t = along / length, 0 on a zero-length segment: the division always
    // runs (by 1 there) and the choice is a select, the same bits as the
    // conditional division sample() does.
    const bool has_length = g.length_m > 0.0;
    const double q = g.along_m / (has_length ? g.length_m : 1.0);
    const double t = has_length ? q : 0.0;
    return {g.ax_m + g.dx_m * t, g.ay_m + g.dy_m * t};
  }

  // Lane index of a scenario lane id (ids are unique after validation).
  std::optional<LaneIndex> find(std::string_view id) const;

  const std::vector<LaneChain>& chains() const { return chains_; }
  std::uint32_t chain_of(LaneIndex lane) const { return chain_of_[lane]; }

  // Sidewalk fragments (fragment_length_m from the scenario), lane by lane.
  static constexpr std::uint32_t kNoFragment = UINT32_MAX;
  const std::vector<LaneFragment>& fragments() const { return fragments_; }
  // Fragment holding distance s of a lane, or kNoFragment (not a sidewalk).
  std::uint32_t fragment_of(LaneIndex lane, double s_m) const;

 private:
  void build_chains();
  void build_fragments(double fragment_length_m);
  void build_segments();

  // Per lane, its polyline's segments in one flat array (position() reads
  // them instead of the Lane's separate point and length vectors): the
  // same values sample() computes from, so both give the same bits.
  struct Segment {
    double start_m;                 // cumulative length at the segment's first point
    double end_m;                   // ... at its last point
    double length_m;                // end_m - start_m (0 for a repeated point)
    double ax_m, ay_m, dx_m, dy_m;  // first point and (last - first)
  };
  struct LaneSegments {
    std::uint32_t first = 0;
    std::uint32_t count = 0;
    double length_m = 0.0;
  };
  static constexpr std::uint32_t kSegmentWindow = 8;
  std::vector<Segment> segments_;
  // segments_[k].end_m, then kSegmentWindow padding entries (segment_at's
  // window reads that many from a lane's first segment).
  std::vector<double> segment_end_m_;
  std::vector<LaneSegments> lane_segments_;

  std::vector<Lane> lanes_;
  std::map<std::string, LaneIndex, std::less<>> by_id_;
  std::vector<LaneIndex> sidewalks_;
  std::vector<LaneChain> chains_;
  std::vector<std::uint32_t> chain_of_;
  std::vector<LaneFragment> fragments_;
  std::vector<std::uint32_t> fragment_first_;  // per lane: first fragment, or kNoFragment
  std::vector<std::uint32_t> fragment_count_;  // per lane
};

// Defined here so the per-pedestrian loops of tier resolution inline it.
inline LaneGraph::SegmentAt LaneGraph::segment_at(LaneIndex li, double s_m) const {
  // locate() over the flat segments: the first segment ending after s (or
  // the last), back over zero-length ones; then the same arithmetic as
  // sample(), on the same values, so the same bits.
  const LaneSegments& ls = lane_segments_[li];
  const double s = std::clamp(s_m, 0.0, ls.length_m);
  const Segment* seg = segments_.data() + ls.first;
  // The segments' ends never decrease, so "the first segment ending after
  // s" is the count of those before the last that end at or before s. For a
  // lane of at most kSegmentWindow + 1 segments that count is taken over a
  // fixed window without a branch (which segment holds s is data a branch
  // predictor cannot guess); segment_end_m_ ends with kSegmentWindow
  // padding entries, so the window never reads past it.
  const std::uint32_t last = ls.count - 1;
  std::uint32_t k = 0;
  if (last <= kSegmentWindow) {
    const double* end = segment_end_m_.data() + ls.first;  // one cache line, not eight
    for (std::uint32_t j = 0; j < kSegmentWindow; ++j)
      k += static_cast<std::uint32_t>(j < last) & static_cast<std::uint32_t>(end[j] <= s);
  } else {
    while (k < last && seg[k].end_m <= s) ++k;
  }
  while (k > 0 && seg[k].length_m == 0.0) --k;
  const Segment& g = seg[k];
  return {s - g.start_m, g.length_m, g.ax_m, g.ay_m, g.dx_m, g.dy_m};
}

// Per lane index, the district of the scenario's map that owns it (its
// index in Scenario::districts); empty when the scenario has no map. The map
// is validated, so every lane has an owner (validate_districts).
std::vector<std::int16_t> lane_districts(const Scenario& scenario, const LaneGraph& lanes);

inline Vec2 LaneGraph::position(LaneIndex li, double s_m) const {
  return interpolate(segment_at(li, s_m));
}

}  // namespace bustle::core
