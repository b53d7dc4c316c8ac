// Phase 2 of World::step(): time of day and the zone lifecycle.
//
// The population clock advances every step; at each lifecycle interval the
// schedule coordinator moves residents between activities, completed
// migrations re-place their representation in the new zone
// (move_resident), residents recycled within quota go dormant, and those
// activated get a lane position in their zone (place_resident).
#include <algorithm>
#include <cassert>

#include "bustle/core/world.hpp"

namespace bustle::core {

void World::phase_time_and_zones() {
  if (!population_.advance_clock(step_index_ * scenario_.step_us, scenario_.step_us)) return;
  const ResidentStore& rs = population_.residents();
  // Asked only for recycle candidates (walking residents).
  const auto distance = [&](std::uint32_t r) {
    const std::uint32_t slot = pedestrians_.dense_of[rs.id[r].index];
    if (slot == PedestrianStore::kNoSlot) return 0.0;
    const Vec2 p = lanes_.position(pedestrians_.lane[slot], pedestrians_.s_m[slot]);
    return nearest_observer_m(tier_observers_, p.x_m, p.y_m);
  };
  to_activate_.clear();
  to_deactivate_.clear();
  to_move_.clear();
  // Zones whose every lane is closed defer their growth (population.hpp).
  zone_closed_scratch_.clear();
  if (!closed_lanes_.empty()) {
    for (const std::vector<LaneIndex>& lanes : population_.zone_lanes()) {
      const bool all_closed = std::all_of(lanes.begin(), lanes.end(),
                                          [&](LaneIndex l) { return lane_closed_[l] != 0; });
      zone_closed_scratch_.push_back(all_closed ? 1 : 0);
    }
  }
  population_.set_zones_closed(zone_closed_scratch_);
  population_.lifecycle(distance, to_activate_, to_deactivate_, to_move_);
  [[maybe_unused]] const std::uint32_t walking_before = pedestrians_.size();
  assert(to_deactivate_.size() <= walking_before);
  for (const std::uint32_t r : to_move_) move_resident(r);
  for (const std::uint32_t r : to_deactivate_) {
    remove_pedestrian(rs.id[r]);
    population_.on_deactivated(r);
  }
  for (const std::uint32_t r : to_activate_) place_resident(r);
  // Rows conserved: one row left per deactivation, one came per activation.
  assert(pedestrians_.size() + to_deactivate_.size() == walking_before + to_activate_.size());
}

void World::place_resident(std::uint32_t r) {
  const ResidentStore& rs = population_.residents();
  assert(r < rs.size());
  const auto& lanes = population_.zone_lanes()[rs.zone[r]];
  assert(!lanes.empty());
  // An open lane of the zone. Growth of a zone with every lane closed is
  // deferred by the coordinator (set_zones_closed), so the fallback below
  // is a safety net only.
  LaneIndex lane = pick_open_lane(lanes);
  if (lane == kAnyLane) lane = lanes[rng_.next_below(static_cast<std::uint32_t>(lanes.size()))];
  assert(lane < lanes_.size());
  const double s = rng_.next_unit() * lanes_.lane(lane).length_m;
  push_pedestrian(rs.id[r], lane, s, r, PriorityClass::Community, PedestrianOrigin::Resident);
  population_.on_activated(r);
}

void World::move_resident(std::uint32_t r) {
  // A completed handoff: the representation re-enters on a lane of its new
  // zone; identity, tier and route counter are kept.
  const ResidentStore& rs = population_.residents();
  const std::uint32_t slot = pedestrians_.dense_of[rs.id[r].index];
  if (slot == PedestrianStore::kNoSlot) return;
  const auto& lanes = population_.zone_lanes()[rs.zone[r]];
  LaneIndex lane = pick_open_lane(lanes);  // as place_resident
  if (lane == kAnyLane) lane = lanes[rng_.next_below(static_cast<std::uint32_t>(lanes.size()))];
  if (!lane_waiters_.empty()) drop_lane_waiter(rs.id[r]);  // off the lane end it waited at
  pedestrian_digest_sum_ -= pedestrian_row_hash(slot) +
                            pedestrian_motion_hash(pedestrians_.id[slot], pedestrians_.s_m[slot]);
  assert(lane < lanes_.size());
  assert(pedestrians_.id[slot] == rs.id[r]);
  pedestrians_.lane[slot] = lane;
  pedestrians_.s_m[slot] = rng_.next_unit() * lanes_.lane(lane).length_m;
  pedestrian_lanes_written_.mark(slot);
  pedestrian_digest_sum_ += pedestrian_row_hash(slot) +
                            pedestrian_motion_hash(pedestrians_.id[slot], pedestrians_.s_m[slot]);
}

}  // namespace bustle::core
