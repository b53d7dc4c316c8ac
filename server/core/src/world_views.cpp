// Read-only views over lifecycle state: describe() (every axis of one
// entity) and the distant-dot counts per lane chain. Derived; nothing here
// changes state.
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::chain_dots(std::vector<std::uint32_t>& out) const {
  out.assign(lanes_.chains().size(), 0);
  for (std::uint32_t i = 0; i < pedestrians_.size(); ++i) {
    if (pedestrians_.sim_tier[i] == SimTier::Coarse) ++out[lanes_.chain_of(pedestrians_.lane[i])];
  }
  for (const OrphanRecord& o : orphans_) ++out[lanes_.chain_of(o.lane)];
}

namespace {
RepresentationHint hint_for(SimTier t) {
  switch (t) {
    case SimTier::Full:
      return RepresentationHint::Actor;
    case SimTier::Simulated:
      return RepresentationHint::Instanced;
    case SimTier::Coarse:
      return RepresentationHint::Marker;
  }
  return RepresentationHint::None;
}
}  // namespace

EntityReport World::describe(EntityId id) const {
  EntityReport e;
  e.id = id;
  e.alive = registry_.is_alive(id);
  if (!e.alive) return e;  // Gone
  e.forced_full = std::binary_search(forced_full_.begin(), forced_full_.end(), id);
  e.admission_masked = is_admission_masked(id);
  e.corpse = is_corpse(id);
  for (const ResponseUnit& u : prevention_.units) {
    if (u.entity == id) e.response_level = u.level;
  }
  if (vehicles_.is_vehicle(id)) {
    const VehicleStore& v = vehicles_.store();
    const std::uint32_t k = v.dense_of[id.index];
    e.kind = EntityKind::Vehicle;
    e.lifecycle = LifecycleState::Active;
    e.tier = v.sim_tier[k];
    e.representation = hint_for(e.tier);
    e.lane = static_cast<std::int32_t>(v.lane[k]);
    e.s_m = v.s_m[k];
    e.pose = vehicles_.pose(k);
    e.effective_distance_m =
        effective_distance_at({e.pose.x_m, e.pose.y_m}, v.lane[k], PriorityClass::Background, true);
    e.requested_tier = distance_tier(scenario_.tiers, e.tier, e.effective_distance_m);
    e.capacity_tier = vehicles_.capacity_tier(k);
    return e;
  }
  if (vehicles_.mouth_place(id)) {
    // Dispatched into its garage's mouth: an identity, not on a lane yet
    // (lane -1, no tier or representation until it enters the road).
    e.kind = EntityKind::Vehicle;
    e.lifecycle = LifecycleState::Requested;
    return e;
  }
  if (const std::int32_t r = population_.resident_of(id); r != ResidentStore::kNone) {
    const ResidentStore& rs = population_.residents();
    const auto ri = static_cast<std::size_t>(r);
    e.resident = r;
    e.community = static_cast<std::int32_t>(rs.community[ri]);
    e.zone = static_cast<std::int32_t>(rs.zone[ri]);
    e.work_point = rs.work_point[ri];
    e.work_slot = rs.work_slot[ri];
    e.at_work_anchor = resident_at_anchor(static_cast<std::uint32_t>(r));
    if (const ResidentMigration* m = population_.migration_of(static_cast<std::uint32_t>(r))) {
      e.migrations = m->count;
      e.last_portal = static_cast<std::int32_t>(m->last_portal);
    }
    e.saveable = scenario_.communities[rs.community[ri]].saveable;
    e.priority = PriorityClass::Community;
    e.origin = PedestrianOrigin::Resident;
    e.lifecycle = rs.active[ri] == ResidentStore::kDormant    ? LifecycleState::Dormant
                  : rs.active[ri] == ResidentStore::kDeceased ? LifecycleState::Deceased
                                                              : LifecycleState::Active;
  }
  const SpawnHandleState* h = find_live_spawn(id);
  for (auto it = spawn_.recent.rbegin(); h == nullptr && it != spawn_.recent.rend(); ++it) {
    if (it->entity == id) h = &*it;
  }
  if (h != nullptr) {
    e.spawn_handle = h->handle;
    e.spawn_state = h->state;
    e.priority = h->priority;
    e.origin = PedestrianOrigin::Spawned;
    e.zone = h->zone;  // the zone it was asked for (kAnyZone = -1: any sidewalk)
    if (h->state == SpawnState::IdentityCreated) e.lifecycle = LifecycleState::Requested;
  }
  if (const std::uint32_t slot = pedestrians_.dense_of[id.index];
      slot != PedestrianStore::kNoSlot) {
    // A deceased resident's corpse still lies here: its lifecycle says so.
    if (e.lifecycle != LifecycleState::Deceased) e.lifecycle = LifecycleState::Active;
    e.tier = pedestrians_.sim_tier[slot];
    e.representation = hint_for(e.tier);
    e.priority = static_cast<PriorityClass>(pedestrians_.priority[slot]);
    e.origin = static_cast<PedestrianOrigin>(pedestrians_.origin[slot]);
    e.lane = static_cast<std::int32_t>(pedestrians_.lane[slot]);
    e.s_m = pedestrians_.s_m[slot];
    e.pose = pedestrian_pose(slot);
    e.effective_distance_m =
        effective_distance_at({e.pose.x_m, e.pose.y_m}, pedestrians_.lane[slot], e.priority, false);
    e.requested_tier = distance_tier(scenario_.tiers, e.tier, e.effective_distance_m);
    e.capacity_tier = pedestrians_.capacity_tier[slot];
    return e;
  }
  auto o = std::lower_bound(orphans_.begin(), orphans_.end(), id,
                            [](const OrphanRecord& r, EntityId v) { return r.id < v; });
  if (o != orphans_.end() && o->id == id) {
    e.lifecycle = LifecycleState::Retiring;
    e.tier = SimTier::Coarse;  // demoted before deletion
    e.representation = RepresentationHint::Marker;
    e.retiring_reason = o->reason;
    e.release_step = o->release_step;
    e.lane = static_cast<std::int32_t>(o->lane);
    e.s_m = o->s_m;
    e.pose = lanes_.sample(o->lane, o->s_m);
  }
  return e;
}

}  // namespace bustle::core
