// Despawn phase (phase 10) and the read-only views over lifecycle state:
// describe() (every axis of one entity) and the distant-dot counts.
//
// One exit for every reason. In EntityId order, each entity leaving the
// active arrays is demoted (it no longer competes for tiers), moved into the
// orphan set (sorted by id) and, when it may still be on screen, appended to
// the retiring FIFO with a release step fade_ms later. Coarse entities (far,
// off-screen) and vehicles (their DespawnPending step is their exit) skip the
// fade. Final deletion pops the FIFO head while it is due: a resident goes
// dormant with its identity, anything else releases its id to the back of
// the registry FIFO. Notices are collected in despawn_notices_ and read after
// the step, never delivered from inside the phase.
#include <algorithm>
#include <cassert>

#include "bustle/core/world.hpp"

namespace bustle::core {

void World::request_despawn(EntityId id, DespawnReason reason) {
  if (despawn_pending_[id.index] != 0) return;  // first reason wins
  despawn_pending_[id.index] = 1;
  despawn_requests_.push_back({id, reason});
}

void World::finalize_orphan(const OrphanRecord& o, EntityKind kind) {
  despawn_notices_.push_back({o.id, o.reason, DespawnStage::Gone, kind});
  if (o.resident != UINT32_MAX) {
    // A resident's representation is gone; its identity stays (dormant) and
    // is not counted as a despawn of an identity.
    population_.on_deactivated(o.resident);
    return;
  }
  const ReleaseStatus rs = registry_.release(o.id);
  assert(rs == ReleaseStatus::Released);
  (void)rs;
  ++counters_.despawned_total;
  ++counters_.despawned_by_reason[static_cast<std::size_t>(o.reason)];
}

void World::phase_despawn() {
  std::sort(despawn_requests_.begin(), despawn_requests_.end(),
            [](const DespawnRequest& a, const DespawnRequest& b) { return a.id < b.id; });
  const std::uint64_t fade_steps =
      (std::uint64_t{scenario_.despawn.fade_ms} * 1000 + scenario_.step_us - 1) / scenario_.step_us;
  for (const DespawnRequest& req : despawn_requests_) {
    despawn_pending_[req.id.index] = 0;
    const std::int32_t resident = population_.resident_of(req.id);
    // A released identity cannot stay forced (residents keep theirs).
    if (resident == ResidentStore::kNone) {
      auto f = std::lower_bound(forced_full_.begin(), forced_full_.end(), req.id);
      if (f != forced_full_.end() && *f == req.id) forced_full_.erase(f);
    }
    if (vehicles_.is_vehicle(req.id)) {
      vehicles_.remove(req.id);
      ++counters_.fade_skipped_total;
      finalize_orphan({req.id, req.reason, 0, 0.0, UINT32_MAX, step_index_}, EntityKind::Vehicle);
      continue;
    }
    const std::uint32_t slot = peds_.dense_of[req.id.index];
    if (slot == PedestrianStore::kNoSlot) continue;  // left by another path this step
    OrphanRecord o{req.id, req.reason, peds_.lane[slot], peds_.s_m[slot],
                   resident == ResidentStore::kNone ? UINT32_MAX : static_cast<std::uint32_t>(resident),
                   step_index_ + fade_steps};
    const bool off_screen = peds_.tier[slot] == static_cast<std::uint8_t>(SimTier::Coarse);
    // Only spawned pedestrians can hold a live handle (a linear search).
    if (peds_.origin[slot] == static_cast<std::uint8_t>(PedestrianOrigin::Spawned)) {
      if (SpawnHandleState* h = live_spawn_of(req.id); h != nullptr) {
        set_spawn_state(*h, SpawnState::Failed, SpawnFailure::EntityGone);
      }
    }
    if (resident != ResidentStore::kNone) population_.on_retiring(static_cast<std::uint32_t>(resident));
    remove_pedestrian(req.id);  // demoted: no longer in tier competition
    if (off_screen || fade_steps == 0) {
      ++counters_.fade_skipped_total;
      o.release_step = step_index_;
      finalize_orphan(o, EntityKind::Pedestrian);
      continue;
    }
    ++counters_.faded_total;
    const auto at = std::lower_bound(orphans_.begin(), orphans_.end(), o.id,
                                     [](const OrphanRecord& r, EntityId v) { return r.id < v; });
    assert(at == orphans_.end() || !(at->id == o.id));  // orphan invariant 1, read back at final deletion
    orphans_.insert(at, o);
    retiring_fifo_.push_back(o.id);
    despawn_notices_.push_back({o.id, o.reason, DespawnStage::Retiring, EntityKind::Pedestrian});
  }
  despawn_requests_.clear();
  retire_terminal_spawns();

  // Final deletion: the FIFO head while its fade is complete.
  std::size_t done = 0;
  while (done < retiring_fifo_.size()) {
    auto o = std::lower_bound(orphans_.begin(), orphans_.end(), retiring_fifo_[done],
                              [](const OrphanRecord& r, EntityId v) { return r.id < v; });
    assert(o != orphans_.end() && o->id == retiring_fifo_[done]);
    if (o->release_step > step_index_) break;
    const OrphanRecord record = *o;
    orphans_.erase(o);
    finalize_orphan(record, EntityKind::Pedestrian);
    ++done;
  }
  retiring_fifo_.erase(retiring_fifo_.begin(), retiring_fifo_.begin() + static_cast<std::ptrdiff_t>(done));
}

// Derived views -------------------------------------------------------------

void World::chain_dots(std::vector<std::uint32_t>& out) const {
  out.assign(lanes_.chains().size(), 0);
  for (std::uint32_t i = 0; i < peds_.size(); ++i) {
    if (peds_.tier[i] == static_cast<std::uint8_t>(SimTier::Coarse)) ++out[lanes_.chain_of(peds_.lane[i])];
  }
  for (const OrphanRecord& o : orphans_) ++out[lanes_.chain_of(o.lane)];
}

namespace {
RepresentationHint hint_for(SimTier t) {
  switch (t) {
    case SimTier::Full: return RepresentationHint::Actor;
    case SimTier::Simulated: return RepresentationHint::Instanced;
    case SimTier::Coarse: return RepresentationHint::Marker;
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
  if (vehicles_.is_vehicle(id)) {
    const VehicleStore& v = vehicles_.store();
    const std::uint32_t k = v.dense_of[id.index];
    e.kind = EntityKind::Vehicle;
    e.lifecycle = LifecycleState::Active;
    e.tier = static_cast<SimTier>(v.tier[k]);
    e.representation = hint_for(e.tier);
    e.lane = static_cast<std::int32_t>(v.lane[k]);
    e.s_m = v.s_m[k];
    e.pose = vehicles_.pose(k);
    e.effective_distance_m = effective_distance_at({e.pose.x_m, e.pose.y_m}, v.lane[k], PriorityClass::Background, true);
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
    e.saveable = scenario_.communities[rs.community[ri]].saveable;
    e.priority = PriorityClass::Community;
    e.origin = PedestrianOrigin::Resident;
    e.lifecycle = rs.active[ri] == ResidentStore::kDormant ? LifecycleState::Dormant : LifecycleState::Active;
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
  if (const std::uint32_t slot = peds_.dense_of[id.index]; slot != PedestrianStore::kNoSlot) {
    e.lifecycle = LifecycleState::Active;
    e.tier = static_cast<SimTier>(peds_.tier[slot]);
    e.representation = hint_for(e.tier);
    e.priority = static_cast<PriorityClass>(peds_.priority[slot]);
    e.origin = static_cast<PedestrianOrigin>(peds_.origin[slot]);
    e.lane = static_cast<std::int32_t>(peds_.lane[slot]);
    e.s_m = peds_.s_m[slot];
    e.pose = pedestrian_pose(slot);
    e.effective_distance_m = effective_distance_at({e.pose.x_m, e.pose.y_m}, peds_.lane[slot], e.priority, false);
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
