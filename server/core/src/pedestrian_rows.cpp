// The pedestrian rows (PedestrianStore in world.hpp): push, swap-remove and
// route changes, each keeping the digest's pedestrian sum current; and the
// derived per-row views (pose, speed).
#include <algorithm>
#include <cassert>

#include "bustle/core/world.hpp"

namespace bustle::core {

void World::push_pedestrian(EntityId id, LaneIndex lane, double s_m, std::uint32_t resident,
                            PriorityClass cls, PedestrianOrigin origin) {
  // Pedestrian invariants 1-3 where they are written (read back by remove_pedestrian).
  assert(pedestrians_.dense_of[id.index] == PedestrianStore::kNoSlot);
  assert(registry_.is_alive(id));
  assert((origin == PedestrianOrigin::Resident) == (resident != PedestrianStore::kNoResident));
  assert(resident == PedestrianStore::kNoResident ||
         population_.resident_of(id) ==
             static_cast<std::int32_t>(resident));  // invariant 3: derived from the id
  (void)resident;
  pedestrians_.dense_of[id.index] = pedestrians_.size();
  pedestrians_.id.push_back(id);
  pedestrians_.lane.push_back(lane);
  pedestrians_.s_m.push_back(s_m);
  pedestrians_.hops.push_back(0);
  const SimTier sim_tier = initial_sim_tier(lane, s_m, cls);
  pedestrians_.sim_tier.push_back(sim_tier);
  pedestrians_.catch_up_steps.push_back(static_cast<std::int8_t>(
      catch_up_for_placement(placed_as_of_step(), id_phase(id), sim_tier)));
  pedestrians_.priority.push_back(static_cast<std::uint8_t>(cls));
  pedestrians_.origin.push_back(static_cast<std::uint8_t>(origin));
  pedestrians_.phase.push_back(id_phase(id));
  pedestrians_.route.push_back(kNoRoute);
  pedestrians_.capacity_tier.push_back(pedestrians_.sim_tier.back());  // not resolved yet
  mark_pedestrian_row_written(pedestrians_.size() - 1);
  if (origin == PedestrianOrigin::Background) ++background_count_;
  pedestrian_digest_sum_ +=
      pedestrian_row_hash(pedestrians_.size() - 1) + pedestrian_motion_hash(id, s_m);
}

void World::set_pedestrian_route(std::uint32_t slot, std::uint32_t route) {
  pedestrian_digest_sum_ -= pedestrian_row_hash(slot);
  pedestrians_.route[slot] = route;
  pedestrian_lanes_written_.mark(slot);
  pedestrian_digest_sum_ += pedestrian_row_hash(slot);
}

void World::remove_pedestrian(EntityId id) {
  const std::uint32_t slot = pedestrians_.dense_of[id.index];
  assert(slot != PedestrianStore::kNoSlot);
  assert(pedestrians_.id[slot] == id);  // invariant 1, as push_pedestrian wrote it
  const std::uint32_t last = pedestrians_.size() - 1;
  pedestrian_digest_sum_ -=
      pedestrian_row_hash(slot) + pedestrian_motion_hash(id, pedestrians_.s_m[slot]);
  if (pedestrians_.route[slot] != kNoRoute) routes_.release(pedestrians_.route[slot]);
  // The admission mask holds walking pedestrians only: leaving the lane (by
  // any path) ends it.
  // The same for a corpse (the held bit marks both; never both lists).
  if (pedestrians_.phase[slot] & PedestrianStore::kAdmissionMaskedBit) {
    auto m = std::lower_bound(admission_masked_.begin(), admission_masked_.end(), id);
    if (m != admission_masked_.end() && *m == id) {
      admission_masked_.erase(m);
    } else {
      std::vector<CorpseRecord>& corpses = prevention_.corpses;
      auto k = std::lower_bound(corpses.begin(), corpses.end(), id,
                                [](const CorpseRecord& c, EntityId v) { return c.id < v; });
      assert(k != corpses.end() && k->id == id);
      corpses.erase(k);
    }
  }
  if (!lane_waiters_.empty()) drop_lane_waiter(id);  // a closure's wait ends with the row
  if (pedestrians_.origin[slot] == static_cast<std::uint8_t>(PedestrianOrigin::Background))
    --background_count_;
  if (slot != last) {
    pedestrians_.id[slot] = pedestrians_.id[last];
    pedestrians_.lane[slot] = pedestrians_.lane[last];
    pedestrians_.s_m[slot] = pedestrians_.s_m[last];
    pedestrians_.hops[slot] = pedestrians_.hops[last];
    pedestrians_.sim_tier[slot] = pedestrians_.sim_tier[last];
    pedestrians_.catch_up_steps[slot] = pedestrians_.catch_up_steps[last];
    pedestrians_.priority[slot] = pedestrians_.priority[last];
    pedestrians_.origin[slot] = pedestrians_.origin[last];
    pedestrians_.phase[slot] = pedestrians_.phase[last];
    pedestrians_.route[slot] = pedestrians_.route[last];
    pedestrians_.capacity_tier[slot] = pedestrians_.capacity_tier[last];
    pedestrians_.dense_of[pedestrians_.id[slot].index] = slot;
    mark_pedestrian_row_written(slot);
  }
  pedestrians_.id.pop_back();
  pedestrians_.lane.pop_back();
  pedestrians_.s_m.pop_back();
  pedestrians_.hops.pop_back();
  pedestrians_.sim_tier.pop_back();
  pedestrians_.catch_up_steps.pop_back();
  pedestrians_.priority.pop_back();
  pedestrians_.origin.pop_back();
  pedestrians_.phase.pop_back();
  pedestrians_.route.pop_back();
  pedestrians_.capacity_tier.pop_back();
  pedestrians_.dense_of[id.index] = PedestrianStore::kNoSlot;
}

Pose World::pedestrian_pose(std::uint32_t dense) const {
  return lanes_.sample(pedestrians_.lane[dense], pedestrians_.s_m[dense]);
}

std::uint32_t World::pedestrian_steps_since_moved(std::uint32_t dense) const {
  const int since = static_cast<int>(steps_since_due(step_index_, pedestrians_.phase[dense],
                                                     pedestrians_.sim_tier[dense])) +
                    pedestrians_.catch_up_steps[dense];
  assert(since >= 0);  // pedestrian invariant 5b: no row is ahead of the step
  return static_cast<std::uint32_t>(std::max(since, 0));
}

double World::pedestrian_speed_mps(std::uint32_t dense) const {
  // The speed a client extrapolates with (dead reckoning): the lane's limit
  // while the pedestrian walks, 0 while it stands, else a standing client's
  // copy would slide ahead and snap back at every correction.
  if (pedestrians_.phase[dense] & PedestrianStore::kAdmissionMaskedBit)
    return 0.0;  // masked, corpse
  const LaneIndex lane = pedestrians_.lane[dense];
  const double s_m = pedestrians_.s_m[dense];
  const Lane& L = lanes_.lane(lane);
  if (!lane_waiters_.empty() && s_m == L.length_m && is_lane_waiter(pedestrians_.id[dense]))
    return 0.0;
  // Only a row on an anchor lane can stand at its slot or place in line, so
  // other rows skip the resident look-up (the frame build asks every row).
  if (has_anchors_ && lane_is_anchor_[lane] != 0 &&
      pedestrians_.origin[dense] == static_cast<std::uint8_t>(PedestrianOrigin::Resident)) {
    RowAnchor anchor;  // standing at its work-point slot or place in line?
    if (row_anchor(dense, anchor) && lane == anchor.lane && s_m == anchor.s_m) return 0.0;
  }
  return L.speed_mps_limit;
}

}  // namespace bustle::core
