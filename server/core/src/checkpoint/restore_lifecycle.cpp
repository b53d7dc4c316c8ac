// Restore's lifecycle sections: observers, spawn handles, the route table,
// the orphan set and retiring FIFO, and prevention (response units and
// corpses), each failure named by its checkpoint path.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"
#include "restore_failures.hpp"

namespace bustle::core {

// Both observer sets: finite, one view per point, the clients' set bounded.
void World::restore_check_observers(const WorldCheckpoint& cp, RestoreFailures& fail) {
  if (!cp.observer_views.empty() && cp.observer_views.size() != cp.observers.size()) {
    fail("observer_views", "one view per observer is required");
  }
  for (std::size_t i = 0; i < cp.observer_views.size(); ++i) {
    const ObserverView& v = cp.observer_views[i];
    if (!std::isfinite(v.z_m) || !std::isfinite(v.heading_rad))
      fail("observer_views[" + std::to_string(i) + "]", "must be finite");
  }
  if (cp.client_observers.size() > kClientObserversMax) {
    fail("client_observers",
         "more than " + std::to_string(kClientObserversMax) + " client observers");
  }
  if (cp.client_observer_views.size() != cp.client_observers.size()) {
    fail("client_observer_views", "one view per client observer is required");
  }
  for (std::size_t i = 0; i < cp.client_observers.size(); ++i) {
    const Vec2 o = cp.client_observers[i];
    const ObserverView v =
        i < cp.client_observer_views.size() ? cp.client_observer_views[i] : ObserverView{};
    if (!std::isfinite(o.x_m) || !std::isfinite(o.y_m) || !std::isfinite(v.z_m) ||
        !std::isfinite(v.heading_rad)) {
      fail("client_observers[" + std::to_string(i) + "]", "must be finite");
    }
  }
}

// The spawn handles, live and recent.
void World::restore_spawn_handles(World& w, const WorldCheckpoint& cp, RestoreFailures& fail) {
  const std::size_t nlanes = w.lanes_.size();
  const SpawnPipelineState& sp = cp.spawn;
  auto check_handle = [&](const SpawnHandleState& h, const std::string& row, bool live) {
    if (h.handle == 0 || h.handle >= sp.next_handle)
      fail(row + ".handle", "must be in [1, next_handle)");
    if (static_cast<std::size_t>(h.state) >= kSpawnStateCount)
      fail(row + ".state", "unknown spawn state");
    // Since schema 3 the core's part of a handle ends at RepresentationRequested
    // (spawn_pipeline.hpp); a checkpoint holding a live handle in a
    // representation stage, or Attached / ReadyForGameplay at all, predates
    // that and cannot be continued exactly.
    if (h.state == SpawnState::Attached || h.state == SpawnState::ReadyForGameplay) {
      fail(row + ".state",
           std::string(to_string(h.state)) +
               " is a representation stage, not core state (a checkpoint from before schema 3)");
    } else if (live == is_core_terminal(h.state)) {
      fail(row + ".state", live ? "a live handle cannot be core-terminal (representation_requested "
                                  "ends the core's part)"
                                : "must be core-terminal");
    }
    if (static_cast<std::uint8_t>(h.failure) > static_cast<std::uint8_t>(kSpawnFailureLast))
      fail(row + ".failure", "unknown");
    if (h.zone != kAnyZone &&
        (h.zone < 0 || static_cast<std::size_t>(h.zone) >= w.scenario_.zones.size()))
      fail(row + ".zone", "unknown zone");
    if (h.lane != kAnyLane && h.lane >= nlanes) fail(row + ".lane", "unknown lane");
    if (static_cast<std::size_t>(h.priority) >= kPriorityClassCount)
      fail(row + ".priority", "unknown priority class");
    if (live && h.state != SpawnState::Queued && !w.registry_.is_alive(h.entity))
      fail(row + ".entity", "identity is not alive");
  };
  for (std::size_t k = 0; k < sp.live.size(); ++k) {
    const std::string row = "spawn.live[" + std::to_string(k) + "]";
    check_handle(sp.live[k], row, true);
    if (k > 0 && sp.live[k - 1].handle >= sp.live[k].handle)
      fail(row + ".handle", "not sorted or duplicated");
    const SpawnState st = sp.live[k].state;
    const bool registered = st >= SpawnState::Registered;
    const EntityId id = sp.live[k].entity;
    if (registered && w.registry_.is_alive(id) &&
        (w.pedestrians_.dense_of[id.index] == PedestrianStore::kNoSlot ||
         w.pedestrians_.origin[w.pedestrians_.dense_of[id.index]] !=
             static_cast<std::uint8_t>(PedestrianOrigin::Spawned))) {
      fail(row + ".entity", "a registered spawn must be an active spawned pedestrian");
    }
  }
  if (sp.recent.size() > kSpawnHistory)
    fail("spawn.recent", "more than " + std::to_string(kSpawnHistory) + " entries");
  for (std::size_t k = 0; k < sp.recent.size(); ++k)
    check_handle(sp.recent[k], "spawn.recent[" + std::to_string(k) + "]", false);
  if (sp.live.size() > w.scenario_.spawn.queue_depth)
    fail("spawn.live", "more live handles than spawn.queue_depth");
  w.spawn_ = sp;
}

// The route table: consistent, and every live route held by exactly one
// walker or one live spawn handle; false when it is not consistent.
bool World::restore_routes(World& w, const WorldCheckpoint& cp, RestoreFailures& fail) {
  const std::size_t nlanes = w.lanes_.size();
  const SpawnPipelineState& sp = cp.spawn;
  if (Status st = RouteTable::validate(cp.routes, static_cast<std::uint32_t>(nlanes)); !st.ok()) {
    const std::string& why = st.message();
    fail(why.substr(0, why.find(':')), why.substr(why.find(':') + 2));
    return false;
  }
  std::vector<std::uint8_t> held(cp.routes.count.size(), 0);
  auto hold = [&](std::uint32_t slot, const std::string& row) {
    if (slot == kNoRoute) return;
    if (slot >= held.size() || cp.routes.count[slot] == 0) {
      fail(row, "route slot " + std::to_string(slot) + " is not a live route");
    } else if (held[slot]++ != 0) {
      fail(row, "route slot " + std::to_string(slot) + " is held twice");
    }
  };
  for (std::size_t i = 0; i < w.pedestrians_.size(); ++i)
    hold(w.pedestrians_.route[i], "pedestrians[" + std::to_string(i) + "].route");
  for (std::size_t k = 0; k < sp.live.size(); ++k)
    hold(sp.live[k].route, "spawn.live[" + std::to_string(k) + "].route");
  for (std::size_t k = 0; k < sp.recent.size(); ++k) {
    if (sp.recent[k].route != kNoRoute)
      fail("spawn.recent[" + std::to_string(k) + "].route", "an ended handle holds no route");
  }
  for (std::size_t slot = 0; slot < held.size(); ++slot) {
    if (cp.routes.count[slot] != 0 && held[slot] == 0)
      fail("routes[" + std::to_string(slot) + "]", "live route held by nobody");
  }
  w.routes_.set_state(cp.routes);
  return true;
}

// The orphan set (sorted by id) and the retiring FIFO over it.
void World::restore_orphans(World& w, const WorldCheckpoint& cp, RestoreFailures& fail) {
  const std::size_t nlanes = w.lanes_.size();
  const ResidentStore& rs = w.population_.residents();
  for (std::size_t k = 0; k < cp.orphans.size(); ++k) {
    const OrphanState& o = cp.orphans[k];
    const std::string row = "orphans[" + std::to_string(k) + "]";
    if (!w.registry_.is_alive(o.id))
      fail(row + ".id", "identity is not alive");
    else if (w.pedestrians_.dense_of[o.id.index] != PedestrianStore::kNoSlot)
      fail(row + ".id", "also an active pedestrian");
    if (k > 0 && !(cp.orphans[k - 1].id < o.id))
      fail(row + ".id", "not sorted by id or duplicated");
    if (!is_despawn_reason(o.reason)) fail(row + ".reason", "unknown despawn reason");
    if (o.lane >= nlanes) {
      fail(row + ".lane", "unknown lane");
    } else if (!std::isfinite(o.s_m) || o.s_m < 0.0 || o.s_m > w.lanes_.lane(o.lane).length_m) {
      fail(row + ".s_m", "outside the lane");
    }
    if (o.resident != UINT32_MAX && (o.resident >= rs.size() || !(rs.id[o.resident] == o.id) ||
                                     (rs.active[o.resident] != ResidentStore::kRetiring &&
                                      rs.active[o.resident] != ResidentStore::kDeceased))) {
      fail(row + ".resident", "does not match a retiring or deceased resident with this identity");
    }
    w.orphans_.push_back(
        {o.id, static_cast<DespawnReason>(o.reason), o.lane, o.s_m, o.resident, o.release_step});
  }
  if (cp.retiring_fifo.size() != cp.orphans.size())
    fail("retiring_fifo", "must list every orphan once");
  for (std::size_t k = 0; k < cp.retiring_fifo.size(); ++k) {
    const std::string row = "retiring_fifo[" + std::to_string(k) + "]";
    auto o = std::lower_bound(w.orphans_.begin(), w.orphans_.end(), cp.retiring_fifo[k],
                              [](const OrphanRecord& r, EntityId v) { return r.id < v; });
    if (o == w.orphans_.end() || !(o->id == cp.retiring_fifo[k])) {
      fail(row, "not in the orphan set");
      continue;
    }
    auto prev =
        k == 0 ? w.orphans_.end()
               : std::lower_bound(w.orphans_.begin(), w.orphans_.end(), cp.retiring_fifo[k - 1],
                                  [](const OrphanRecord& r, EntityId v) { return r.id < v; });
    if (prev != w.orphans_.end() && prev->id == cp.retiring_fifo[k - 1] &&
        prev->release_step > o->release_step) {
      fail(row, "release steps must not decrease along the FIFO");
    }
  }
  w.retiring_fifo_ = cp.retiring_fifo;
}

// The lifecycle state restore() checks after the pedestrians: observers,
// spawn handles, routes, orphans.
void World::restore_lifecycle(World& w, const WorldCheckpoint& cp, RestoreFailures& fail) {
  restore_check_observers(cp, fail);
  restore_spawn_handles(w, cp, fail);
  if (!restore_routes(w, cp, fail)) return;
  restore_orphans(w, cp, fail);
}

// Response units and corpses (prevention.hpp's invariants, named by path).
void World::restore_prevention(World& w, const WorldCheckpoint& cp, RestoreFailures& fail) {
  const PreventionState& p = cp.prevention;
  const auto levels = static_cast<std::uint32_t>(w.scenario_.prevention.units_per_level.size());
  if (p.level > levels) {
    fail("prevention.level", std::to_string(p.level) + " is above the scenario's " +
                                 std::to_string(levels) + " levels");
  }
  if (p.units.size() > w.scenario_.prevention.max_units)
    fail("prevention.units", "more live units than prevention.max_units");
  for (std::size_t k = 0; k < p.units.size(); ++k) {
    const ResponseUnit& u = p.units[k];
    const std::string at = "prevention.units[" + std::to_string(k) + "]";
    if ((k > 0 && p.units[k - 1].handle >= u.handle) || u.handle == 0 || u.handle >= p.next_handle)
      fail(at + ".handle", "not sorted, duplicated or not below next_handle");
    if (u.level < 1 || u.level > levels)
      fail(at + ".level", "must be in [1, " + std::to_string(levels) + "]");
    if (u.state > ResponseUnitState::Retiring) {
      fail(at + ".state", std::string(to_string(u.state)) + " is terminal (live units only)");
    } else if ((u.state == ResponseUnitState::Queued) != u.entity.is_null()) {
      fail(at + ".entity", "a queued unit has no entity, an active or retiring one has one");
    } else if (u.level > p.level && u.state != ResponseUnitState::Retiring) {
      fail(at + ".level", "above the current level but not retiring");
    }
    if (const std::uint32_t slot = walking_slot(w.registry_, w.pedestrians_, u.entity);
        !u.entity.is_null() && slot != PedestrianStore::kNoSlot &&
        w.pedestrians_.origin[slot] != static_cast<std::uint8_t>(PedestrianOrigin::Spawned)) {
      fail(at + ".entity", id_text(u.entity) + " walks but is not a spawned pedestrian");
    }
  }
  if (p.corpses.size() > kMaxCorpses) fail("prevention.corpses", "more than 4096 corpses");
  if (fail.any()) return;
  for (std::size_t k = 0; k < p.corpses.size(); ++k) {
    const EntityId id = p.corpses[k].id;
    const std::string at = "prevention.corpses[" + std::to_string(k) + "]";
    const std::uint32_t slot = walking_slot(w.registry_, w.pedestrians_, id);
    if (k > 0 && !(p.corpses[k - 1].id < id)) {
      fail(at, "not sorted or duplicated");
    } else if (slot == PedestrianStore::kNoSlot) {
      fail(at, id_text(id) + " is not a walking pedestrian");
    } else if (w.pedestrians_.origin[slot] ==
                   static_cast<std::uint8_t>(PedestrianOrigin::Resident) &&
               !w.population_.is_deceased(id)) {
      fail(at, id_text(id) + " is a resident that is not deceased");
    } else if (w.is_admission_masked(id)) {
      fail(at, id_text(id) + " is also in admission_masked");
    } else if (p.corpses[k].death_step > cp.step_index) {
      fail(at + ".death_step", "after the checkpoint's step");
    } else if (w.pedestrians_.catch_up_steps[slot] != 0) {
      fail(at, id_text(id) + " is a corpse but its row keeps a catch-up");
    } else {
      // The held bit; the digest sum is recounted after this.
      w.pedestrians_.phase[slot] |= PedestrianStore::kAdmissionMaskedBit;
      continue;
    }
    return;
  }
  // And the other way: a deceased resident's row is its corpse.
  for (std::uint32_t i = 0; i < w.pedestrians_.size(); ++i) {
    const std::int32_t r = w.population_.resident_of(w.pedestrians_.id[i]);
    if (w.population_.is_deceased(w.pedestrians_.id[i]) &&
        !std::binary_search(
            p.corpses.begin(), p.corpses.end(), CorpseRecord{w.pedestrians_.id[i], 0},
            [](const CorpseRecord& a, const CorpseRecord& b) { return a.id < b.id; })) {
      fail("pedestrians[" + std::to_string(i) + "]",
           "resident " + std::to_string(r) + " is deceased but its row is not a corpse");
      return;
    }
  }
  w.prevention_ = p;
}

}  // namespace bustle::core
