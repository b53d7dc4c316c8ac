// Phase 9 of World::step(): the despawn phase.
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
  assert(id.index < despawn_pending_.size());
  if (despawn_pending_[id.index] != 0) return;  // first reason wins
  despawn_pending_[id.index] = 1;
  despawn_requests_.push_back({id, reason});
}

void World::finalize_orphan(const OrphanRecord& o, EntityKind kind, std::int32_t vehicle_garage) {
  despawn_notices_.push_back({o.id, o.reason, DespawnStage::Gone, kind});
  if (o.resident != UINT32_MAX) {
    // A resident's representation is gone; its identity stays (dormant) and
    // is not counted as a despawn of an identity.
    population_.on_deactivated(o.resident);
    return;
  }
  // A district world sends another district's id home (world_districts.cpp).
  const std::int32_t home = home_district(o.id.index);
  if (home >= 0 && home != scenario_.own_district) {
    const std::uint32_t next = registry_.release_away(o.id);
    assert(next != 0);
    send_home({o.id.index, next}, vehicle_garage);
  } else {
    const ReleaseStatus rs = registry_.release(o.id);
    assert(rs == ReleaseStatus::Released);
    (void)rs;
  }
  ++counters_.despawned_total;
  ++counters_.despawned_by_reason[static_cast<std::size_t>(o.reason)];
}

void World::phase_despawn() {
  // Lane closures: cleanup of background pedestrians stuck at a closure is
  // deferred to here, like every other reason.
  if (!lane_waiters_.empty()) request_lane_dead_ends();
  // District worlds: the pedestrians that crossed a border leave first, unless
  // a despawn was asked for them (world_districts.cpp).
  if (!border_crossings_.empty()) leave_by_border();
  std::sort(despawn_requests_.begin(), despawn_requests_.end(),
            [](const DespawnRequest& a, const DespawnRequest& b) { return a.id < b.id; });
  // One request per entity (despawn_pending_), so the order is strict.
  assert(std::adjacent_find(despawn_requests_.begin(), despawn_requests_.end(),
                            [](const DespawnRequest& a, const DespawnRequest& b) {
                              return !(a.id < b.id);
                            }) == despawn_requests_.end());
  // Orphan invariant 1 on entry, read back on exit.
  assert(retiring_fifo_.size() == orphans_.size());
  [[maybe_unused]] const std::uint32_t pedestrians_before = pedestrians_.size();
  [[maybe_unused]] std::uint32_t pedestrians_removed = 0;
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
      const auto garage = static_cast<std::int32_t>(
          vehicles_.store().garage[vehicles_.store().dense_of[req.id.index]]);
      vehicles_.remove(req.id);
      ++counters_.fade_skipped_total;
      finalize_orphan({req.id, req.reason, 0, 0.0, UINT32_MAX, step_index_}, EntityKind::Vehicle,
                      garage);
      continue;
    }
    const std::uint32_t slot = pedestrians_.dense_of[req.id.index];
    if (slot == PedestrianStore::kNoSlot) continue;  // left by another path this step
    OrphanRecord o{
        req.id,
        req.reason,
        pedestrians_.lane[slot],
        pedestrians_.s_m[slot],
        resident == ResidentStore::kNone ? UINT32_MAX : static_cast<std::uint32_t>(resident),
        step_index_ + fade_steps};
    // Corpses removed at once (far range, resource pressure) skip the fade.
    const bool off_screen = pedestrians_.sim_tier[slot] == SimTier::Coarse ||
                            req.reason == DespawnReason::CorpseForced ||
                            req.reason == DespawnReason::CorpsePressure;
    // Only spawned pedestrians can hold a live handle (a linear search).
    if (pedestrians_.origin[slot] == static_cast<std::uint8_t>(PedestrianOrigin::Spawned)) {
      if (SpawnHandleState* h = live_spawn_of(req.id); h != nullptr) {
        set_spawn_state(*h, SpawnState::Failed, SpawnFailure::EntityGone);
      }
    }
    if (resident != ResidentStore::kNone)
      population_.on_retiring(static_cast<std::uint32_t>(resident));
    remove_pedestrian(req.id);  // demoted: no longer in tier competition
    ++pedestrians_removed;
    if (off_screen || fade_steps == 0) {
      ++counters_.fade_skipped_total;
      o.release_step = step_index_;
      finalize_orphan(o, EntityKind::Pedestrian);
      continue;
    }
    ++counters_.faded_total;
    const auto at = std::lower_bound(orphans_.begin(), orphans_.end(), o.id,
                                     [](const OrphanRecord& r, EntityId v) { return r.id < v; });
    assert(at == orphans_.end() ||
           !(at->id == o.id));  // orphan invariant 1, read back at final deletion
    orphans_.insert(at, o);
    retiring_fifo_.push_back(o.id);
    despawn_notices_.push_back({o.id, o.reason, DespawnStage::Retiring, EntityKind::Pedestrian});
  }
  despawn_requests_.clear();
  assert(pedestrians_.size() + pedestrians_removed == pedestrians_before);
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
  retiring_fifo_.erase(retiring_fifo_.begin(),
                       retiring_fifo_.begin() + static_cast<std::ptrdiff_t>(done));
  assert(retiring_fifo_.size() == orphans_.size());
}

}  // namespace bustle::core
