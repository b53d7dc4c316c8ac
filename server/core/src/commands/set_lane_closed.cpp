// Command SetLaneClosed (CloseLane / OpenLane on the wire): lane closure
// events of seed 000 §6, and what the phases ask of the closed set.
//
// A closure changes no object at once: entities on the lane keep moving off
// it; nobody enters it afterwards. A pedestrian reaching the end of its lane
// takes an open successor (the seeded choice of phase 6 among the open ones)
// or, when its route's next lane or every successor is closed, waits there
// (lane_waiters_). Vehicles follow their garage's route: one whose next lane
// is closed stops at the lane end (PolicyReason::LaneClosed) and drives on
// when it opens; a garage whose entrance lane is closed does not dispatch or
// turn around (EntranceBlocked). Spawns pick open lanes. Background
// pedestrians waiting longer than kLaneDeadEndWait_us are cleaned up by the
// despawn phase (LaneDeadEnd), never from here.
//
// Invariants (check_lane_closures, world_invariants.cpp):
//   1. closed_lanes_ is sorted, unique, at most kMaxClosedLanes valid lanes,
//      and lane_closed_ is 1 exactly for them.
//   2. lane_waiters_ is sorted by id; each is a walking pedestrian standing
//      at the end of its lane, waiting since a step not after now.
// With nothing closed and nobody waiting, no phase does any closure work.
#include <algorithm>
#include <cassert>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {
namespace {

// Where `id` is or would go in a waiter list sorted by id (const or not).
template <class Waiters>
auto find_waiter(Waiters& waiters, EntityId id) {
  return std::lower_bound(waiters.begin(), waiters.end(), id,
                          [](const LaneWaiter& w, EntityId x) { return w.id < x; });
}

// The lanes of `pool` not closed, and the k-th of them (k < that count).
std::uint32_t count_open(std::span<const LaneIndex> pool, const std::vector<std::uint8_t>& closed) {
  std::uint32_t open = 0;
  for (const LaneIndex l : pool) open += closed[l] == 0;
  return open;
}
LaneIndex kth_open(std::span<const LaneIndex> pool, const std::vector<std::uint8_t>& closed,
                   std::uint64_t k) {
  for (const LaneIndex l : pool) {
    if (closed[l] != 0) continue;
    if (k == 0) return l;
    --k;
  }
  assert(false);
  return kAnyLane;
}

}  // namespace

void World::apply_command(const SetLaneClosed& c, CommandResult& r) {
  LaneIndex lane = c.lane_index;
  if (!c.lane.empty()) {
    const std::optional<LaneIndex> found = lanes_.find(c.lane);
    if (!found) {
      reject(r, RejectReason::InvalidArgument, "lane: unknown lane '" + c.lane + "'");
      return;
    }
    if (c.lane_index != UINT32_MAX && c.lane_index != *found) {
      reject(r, RejectReason::InvalidArgument,
             "lane_index: " + std::to_string(c.lane_index) + " is not lane '" + c.lane +
                 "' (its index is " + std::to_string(*found) + ")");
      return;
    }
    lane = *found;
  } else if (lane == UINT32_MAX || lane >= lanes_.size()) {
    reject(r, RejectReason::InvalidArgument,
           lane == UINT32_MAX
               ? std::string("lane: give a lane id or a lane_index")
               : "lane_index: " + std::to_string(lane) + " is out of range (the city has " +
                     std::to_string(lanes_.size()) + " lanes)");
    return;
  }
  auto it = std::lower_bound(closed_lanes_.begin(), closed_lanes_.end(), lane);
  const bool present = it != closed_lanes_.end() && *it == lane;
  if (present == c.closed) {
    accept(r);  // already so: idempotent, not counted
    return;
  }
  if (c.closed && closed_lanes_.size() >= kMaxClosedLanes) {
    reject(r, RejectReason::InvalidArgument,
           "lane closure refused: " + std::to_string(kMaxClosedLanes) +
               " lanes are closed already (open some first)");
    return;
  }
  if (c.closed) {
    closed_lanes_.insert(it, lane);
    ++lane_closure_.closures_total;
  } else {
    closed_lanes_.erase(it);
    ++lane_closure_.openings_total;
  }
  lane_closed_[lane] = c.closed ? 1 : 0;
  vehicles_.set_closed_lanes(closed_lanes_);
  accept(r);
}

LaneIndex World::pick_open_lane(std::span<const LaneIndex> pool) {
  const auto n = static_cast<std::uint32_t>(pool.size());
  if (closed_lanes_.empty()) return pool[rng_.next_below(n)];
  const std::uint32_t open = count_open(pool, lane_closed_);
  return open == 0 ? kAnyLane : kth_open(pool, lane_closed_, rng_.next_below(open));
}

LaneIndex World::open_successor(std::uint32_t i, std::span<const LaneIndex> next, std::uint64_t h,
                                bool& rerouted) const {
  rerouted = false;
  if (pedestrians_.route[i] != kNoRoute) {
    // A route is a promise: its next lane closed means waiting, not a detour.
    if (const std::optional<LaneIndex> routed = routes_.peek(pedestrians_.route[i]))
      return lane_closed_[*routed] != 0 ? kAnyLane : *routed;
  }
  const LaneIndex chosen = next[static_cast<std::size_t>(h % next.size())];
  if (lane_closed_[chosen] == 0) return chosen;
  const std::uint32_t open = count_open(next, lane_closed_);
  if (open == 0) return kAnyLane;
  rerouted = true;
  // A second mix of the same seeded hash: still a pure function of the id
  // and its hop count, independent of the order rows are processed in.
  return kth_open(next, lane_closed_, mix64(h ^ 0x1A7E'C105'ED00'0001ull) % open);
}

bool World::is_lane_waiter(EntityId id) const {
  const auto it = find_waiter(lane_waiters_, id);
  return it != lane_waiters_.end() && it->id == id;
}

void World::drop_lane_waiter(EntityId id) {
  auto it = find_waiter(lane_waiters_, id);
  if (it != lane_waiters_.end() && it->id == id) lane_waiters_.erase(it);
}

void World::merge_lane_waits() {
  // New waiters (every due step a waiting row reports again: keep the first
  // since_step), then departures; both in id order.
  wait_scratch_.clear();
  for (const MovePart& part : move_parts_) {
    lane_closure_.reroutes_total += part.reroutes;
    wait_scratch_.insert(wait_scratch_.end(), part.waits.begin(), part.waits.end());
  }
  std::sort(wait_scratch_.begin(), wait_scratch_.end());
  for (const EntityId id : wait_scratch_) {
    auto it = find_waiter(lane_waiters_, id);
    if (it == lane_waiters_.end() || it->id != id) lane_waiters_.insert(it, {id, step_index_});
  }
  for (const MovePart& part : move_parts_) {
    for (const EntityId id : part.departures) {
      drop_lane_waiter(id);
    }
  }
}

void World::request_lane_dead_ends() {
  const std::uint64_t wait_steps =
      (kLaneDeadEndWait_us + scenario_.step_us - 1) / scenario_.step_us;
  for (const LaneWaiter& w : lane_waiters_) {
    if (step_index_ - w.since_step < wait_steps) continue;
    const std::uint32_t slot = pedestrians_.dense_of[w.id.index];
    if (static_cast<PedestrianOrigin>(pedestrians_.origin[slot]) != PedestrianOrigin::Background)
      continue;
    if (despawn_pending_[w.id.index] != 0) continue;
    request_despawn(w.id, DespawnReason::LaneDeadEnd);
    ++lane_closure_.dead_ends_total;
  }
}

std::optional<RestoreError> World::restore_lane_closures(const WorldCheckpoint& cp) {
  const LaneClosureCounters& k = cp.lane_closure;
  if (cp.closed_lanes.size() > kMaxClosedLanes)
    return RestoreError{"closed_lanes", std::to_string(cp.closed_lanes.size()) +
                                            " closed lanes, more than the limit of " +
                                            std::to_string(kMaxClosedLanes)};
  if (k.openings_total > k.closures_total ||
      k.closures_total - k.openings_total != cp.closed_lanes.size()) {
    return RestoreError{"lane_closure.openings_total",
                        std::to_string(k.closures_total) + " closures and " +
                            std::to_string(k.openings_total) + " openings do not leave " +
                            std::to_string(cp.closed_lanes.size()) + " lanes closed"};
  }
  for (std::size_t n = 0; n < cp.closed_lanes.size(); ++n) {
    const std::uint32_t l = cp.closed_lanes[n];
    const std::string at = "closed_lanes[" + std::to_string(n) + "]";
    if (l >= lanes_.size())
      return RestoreError{at, "lane index " + std::to_string(l) +
                                  " is out of range (the city has " +
                                  std::to_string(lanes_.size()) + " lanes)"};
    if (n > 0 && !(cp.closed_lanes[n - 1] < l)) return RestoreError{at, "not sorted or duplicated"};
  }
  for (std::size_t n = 0; n < cp.lane_waiters.size(); ++n) {
    const LaneWaiter& wt = cp.lane_waiters[n];
    const std::string at = "lane_waiters[" + std::to_string(n) + "]";
    if (n > 0 && !(cp.lane_waiters[n - 1].id < wt.id))
      return RestoreError{at, "not sorted or duplicated"};
    const std::uint32_t slot = walking_slot(registry_, pedestrians_, wt.id);
    if (slot == PedestrianStore::kNoSlot)
      return RestoreError{at, entity_text(wt.id) + " is not a walking pedestrian"};
    if (pedestrians_.s_m[slot] != lanes_.lane(pedestrians_.lane[slot]).length_m)
      return RestoreError{at, entity_text(wt.id) + " is not at the end of its lane"};
    if (wt.since_step > cp.step_index)
      return RestoreError{at + ".since_step", std::to_string(wt.since_step) +
                                                  " is after the checkpoint's step " +
                                                  std::to_string(cp.step_index)};
  }
  closed_lanes_ = cp.closed_lanes;
  for (const LaneIndex l : closed_lanes_) lane_closed_[l] = 1;
  lane_waiters_ = cp.lane_waiters;
  lane_closure_ = k;
  vehicles_.set_closed_lanes(closed_lanes_);
  return std::nullopt;
}

Status World::check_lane_closures() const {
  if (closed_lanes_.size() > kMaxClosedLanes)
    return Status::internal("lane closures: invariant 1: more than kMaxClosedLanes lanes closed");
  std::size_t flagged = 0;
  for (const std::uint8_t f : lane_closed_) flagged += f != 0;
  if (flagged != closed_lanes_.size())
    return Status::internal(
        "lane closures: invariant 1: the per-lane flags disagree with the closed list");
  for (std::size_t n = 0; n < closed_lanes_.size(); ++n) {
    if ((n > 0 && !(closed_lanes_[n - 1] < closed_lanes_[n])) ||
        closed_lanes_[n] >= lanes_.size() || lane_closed_[closed_lanes_[n]] == 0)
      return Status::internal("lane closures: invariant 1: closed lane entry " + std::to_string(n) +
                              " is unsorted, duplicated, out of range or not flagged");
  }
  for (std::size_t n = 0; n < lane_waiters_.size(); ++n) {
    const LaneWaiter& wt = lane_waiters_[n];
    const std::uint32_t slot = walking_slot(registry_, pedestrians_, wt.id);
    if ((n > 0 && !(lane_waiters_[n - 1].id < wt.id)) || slot == PedestrianStore::kNoSlot ||
        wt.since_step > step_index_)
      return Status::internal(
          "lane closures: invariant 2: waiter entry " + std::to_string(n) +
          " is unsorted, duplicated, not a walking pedestrian or from the future");
    if (pedestrians_.s_m[slot] != lanes_.lane(pedestrians_.lane[slot]).length_m)
      return Status::internal("lane closures: invariant 2: waiter " + entity_text(wt.id) +
                              " is not at the end of its lane");
  }
  return {};
}

}  // namespace bustle::core
