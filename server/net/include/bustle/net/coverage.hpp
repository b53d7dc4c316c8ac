// Which part of the city a published frame poses: the interest coverage.
//
// Posing an entity (its pose on the wire's grid, its position, its weight)
// is most of a large city's frame build, yet a client only ever reads the
// entities inside the exit radius of its observers (stream_tracker.hpp). So
// every subscribed session files what it may read with the server's
// CoverageRegistry, the sim thread builds each frame for their union (the
// frame's Coverage), and a session encodes only from a frame whose coverage
// holds its own discs. A client without observers reads the whole city and
// makes every frame whole. What a client receives is the same either way:
// it selects from the covered entities exactly what it would select from all
// of them.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <vector>

#include "bustle/core/lane_graph.hpp"

namespace bustle::net {

// Where a client may read entities: within radius_m of (x_m, y_m).
struct CoverageDisc {
  double x_m = 0.0;
  double y_m = 0.0;
  double radius_m = 0.0;
  bool operator==(const CoverageDisc&) const = default;
};

// What a session needs posed: the whole city, or only inside these discs.
struct CoverageNeed {
  bool whole = true;
  std::vector<CoverageDisc> discs;
  bool operator==(const CoverageNeed&) const = default;
};

// The part of the city a frame poses: every entity when `whole`, else every
// entity on a stretch of lane that may reach into one of `discs` (and maybe
// more).
struct Coverage {
  bool whole = true;
  std::vector<CoverageDisc> discs;
  // The registry's version this was taken at (0: not from a registry): it
  // holds every need filed at or before it.
  std::uint64_t version = 0;
  // Whether a frame built for this coverage holds every entity `need` may
  // read: each of its discs lies inside one of ours.
  bool covers(const CoverageNeed& need) const;
};

// The sessions' needs, filed from the network thread and read by the sim
// thread before every frame (thread-safe). With no need filed the coverage
// is whole: it matters only while somebody is subscribed.
class CoverageRegistry {
 public:
  // Returns the version from which on current() holds this need: a frame
  // built from a Coverage of that version or later covers it, so a session
  // compares two numbers per frame instead of its discs with everyone's.
  std::uint64_t set(std::uint32_t session_id, CoverageNeed need);
  void erase(std::uint32_t session_id);
  // The union of every filed need; `version` grows with every change.
  Coverage current(std::uint64_t* version = nullptr) const;
  std::uint64_t version() const;

 private:
  mutable std::mutex mu_;
  std::map<std::uint32_t, CoverageNeed> needs_;  // by session id: a fixed union order
  std::uint64_t version_ = 0;
};

// The stretch of one lane a frame poses: entities whose distance along the
// lane (on the wire's grid, as the frame poses them) lies in [lo_mm, hi_mm].
// Empty (lo_mm > hi_mm): none of the lane.
struct PosedSpan {
  std::uint32_t lo_mm = 1;
  std::uint32_t hi_mm = 0;
  bool any() const { return lo_mm <= hi_mm; }
  bool holds(std::uint32_t s_mm) const { return lo_mm <= s_mm && s_mm <= hi_mm; }
};

// Which stretch of each lane a Coverage poses (sim thread). Lanes whose box,
// grown by kCoverageMarginM, meets the square around a disc are found on a
// grid over the lanes (so a coverage of many discs stays cheap); on each, the
// distances along it where its polyline comes within the disc's radius +
// kCoverageMarginM, taken from segment and circle, grown by kCoverageMarginM
// and joined over the discs into one span. A superset of what the discs hold:
// on a long lane (a loop around a block, a road across the city) a disc
// poses the part it reaches, not the whole lane.
class LaneCoverage {
 public:
  // Per lane, its posed span. Re-indexes when `lanes` is another graph or
  // the world was replaced (a new world_epoch) since the last call.
  const std::vector<PosedSpan>& mark(const core::LaneGraph& lanes, const Coverage& coverage,
                                     std::uint64_t world_epoch);
  // Whether the last mark() posed every lane from its start to its end (a
  // span reaching a lane's end runs to the last millimetre): then it poses
  // every entity, as a whole coverage does.
  bool every_lane_whole() const;

 private:
  void index(const core::LaneGraph& lanes);
  std::int64_t col(double x_m) const;
  std::int64_t row(double y_m) const;
  // Joins into spans_[lane] the distances along `lane` within the disc.
  void add_disc_span(const core::Lane& lane, core::LaneIndex index, const CoverageDisc& d);

  const core::LaneGraph* indexed_ = nullptr;
  std::uint32_t indexed_lanes_ = 0;
  std::uint64_t indexed_epoch_ = 0;
  double min_x_m_ = 0.0, min_y_m_ = 0.0, cell_m_ = 64.0;
  std::int64_t cols_ = 0, rows_ = 0;
  std::vector<std::uint32_t> cell_lane_start_;  // per cell + 1: prefix sums into cell_lanes_
  std::vector<core::LaneIndex> cell_lanes_;     // the lanes whose box spans each cell
  std::vector<std::uint32_t> lane_stamp_;       // per lane: the last disc (+ 1) that met it
  std::vector<PosedSpan> spans_;
};

// Positions are on the lane's polyline; the margin only absorbs rounding
// (a metre of it, in space and along the lane).
inline constexpr double kCoverageMarginM = 1.0;

}  // namespace bustle::net
