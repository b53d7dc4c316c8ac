// Work-point anchors (seed 000 §6: work-points are spatial anchors): where a
// resident holding a slot goes. A work-point with an anchor
// (scenario work_points[].anchor) places slot k on its anchor lane at
// s_m + k x slot_spacing_m. In phase 6 a resident holding such a slot takes,
// at each lane end, the successor on a shortest way to the anchor lane
// (ties: the first in successor order; closed lanes are never entered), and
// on the anchor lane it stops at its slot and stands there while its
// schedule keeps the slot. Releasing the slot (the schedule moves on, the
// resident goes dormant or leaves) lets it walk on. Residents waiting in a
// work-point's FIFO gather the same way in a line before the first slot
// (place k of the line at s_m - (k + 1) x slot_spacing_m, not before the
// lane's start) and move up as the line does; given a slot, they walk on
// to it.
//
// No new state: "at its anchor" is (lane, s_m) of the resident's row equal
// to its slot's place, and the slot, lane and distance are digested and
// checkpointed already, so a restored world continues the same walk and a
// scenario without anchors steps exactly as before.
#include <algorithm>
#include <cassert>
#include <deque>
#include <optional>

#include "bustle/core/world.hpp"

namespace bustle::core {

void World::build_anchor_routes() {
  const std::uint32_t lane_count = lanes_.size();
  anchor_lane_.assign(scenario_.work_points.size(), kAnyLane);
  lane_is_anchor_.assign(lane_count, 0);
  anchor_next_hop_.assign(scenario_.work_points.size(), {});
  // Predecessors over pedestrian links, for a breadth-first search backwards
  // from each anchor lane.
  std::vector<std::vector<LaneIndex>> preds(lane_count);
  for (LaneIndex l = 0; l < lane_count; ++l) {
    for (const LaneIndex n : lanes_.lane(l).pedestrian_successors) preds[n].push_back(l);
  }
  constexpr std::uint32_t kFar = UINT32_MAX;
  std::vector<std::uint32_t> hops(lane_count);
  std::deque<LaneIndex> queue;
  for (std::size_t w = 0; w < scenario_.work_points.size(); ++w) {
    const WorkPointSpec& wp = scenario_.work_points[w];
    if (!wp.has_anchor) continue;
    const std::optional<LaneIndex> anchor = lanes_.find(wp.anchor.lane);
    assert(anchor.has_value());  // validated with the scenario
    if (!anchor) continue;
    has_anchors_ = true;
    anchor_lane_[w] = *anchor;
    lane_is_anchor_[*anchor] = 1;
    // Lanes (hops) from each lane's end to the anchor lane's start.
    std::fill(hops.begin(), hops.end(), kFar);
    hops[*anchor] = 0;
    queue.assign(1, *anchor);
    while (!queue.empty()) {
      const LaneIndex l = queue.front();
      queue.pop_front();
      for (const LaneIndex p : preds[l]) {
        if (hops[p] != kFar) continue;
        hops[p] = hops[l] + 1;
        queue.push_back(p);
      }
    }
    std::vector<LaneIndex>& next = anchor_next_hop_[w];
    next.assign(lane_count, kAnyLane);
    for (LaneIndex l = 0; l < lane_count; ++l) {
      std::uint32_t best = kFar;
      for (const LaneIndex n : lanes_.lane(l).pedestrian_successors) {
        if (hops[n] < best) {
          best = hops[n];
          next[l] = n;
        }
      }
    }
  }
}

bool World::row_anchor(std::uint32_t row, RowAnchor& out) const {
  const std::int32_t r = population_.resident_of(pedestrians_.id[row]);
  if (r == ResidentStore::kNone) return false;
  const ResidentStore& rs = population_.residents();
  const auto ri = static_cast<std::size_t>(r);
  if (rs.work_point[ri] == ResidentStore::kNone) return false;
  const auto w = static_cast<std::size_t>(rs.work_point[ri]);
  if (anchor_lane_[w] == kAnyLane) return false;
  const WorkPointSpec& wp = scenario_.work_points[w];
  out.lane = anchor_lane_[w];
  out.next_hop = anchor_next_hop_[w].data();
  if (rs.work_slot[ri] != ResidentStore::kNone) {
    out.s_m = wp.slot_s_m(static_cast<std::uint32_t>(rs.work_slot[ri]));
    return true;
  }
  // Waiting in the work-point's FIFO: in line before the first slot, one
  // spacing apart, the first in line nearest, so a waiter given a slot
  // walks forward to it (at the lane's start when the line is longer).
  const std::vector<std::uint32_t>& waiting = population_.work_points()[w].waiting;
  const auto it = std::find(waiting.begin(), waiting.end(), static_cast<std::uint32_t>(ri));
  if (it == waiting.end()) return false;
  const auto place = static_cast<double>(it - waiting.begin() + 1);
  out.s_m = std::max(0.0, wp.anchor.s_m - place * wp.anchor.slot_spacing_m);
  return true;
}

bool World::slot_anchor(std::size_t work_point, std::uint32_t slot, LaneIndex& lane,
                        double& s_m) const {
  if (work_point >= anchor_lane_.size() || anchor_lane_[work_point] == kAnyLane) return false;
  lane = anchor_lane_[work_point];
  s_m = scenario_.work_points[work_point].slot_s_m(slot);
  return true;
}

bool World::resident_at_anchor(std::uint32_t resident) const {
  const ResidentStore& rs = population_.residents();
  if (resident >= rs.size() || rs.work_slot[resident] == ResidentStore::kNone) return false;
  const std::uint32_t row = pedestrians_.dense_of[rs.id[resident].index];
  if (row == PedestrianStore::kNoSlot) return false;
  RowAnchor a;
  return row_anchor(row, a) && pedestrians_.lane[row] == a.lane && pedestrians_.s_m[row] == a.s_m;
}

}  // namespace bustle::core
