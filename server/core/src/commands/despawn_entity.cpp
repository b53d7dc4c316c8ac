// Command DespawnEntity: an active pedestrian or vehicle leaves through the
// despawn phase (phase 9); a spawn that has an identity but no registration
// yet is canceled instead, and its id goes back.
#include <algorithm>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const DespawnEntity& c, CommandResult& r) {
  if (SpawnHandleState* h = live_spawn_of(c.id);
      h != nullptr && h->state == SpawnState::IdentityCreated) {
    r.handle = h->handle;
    r.entity = c.id;
    set_spawn_state(*h, SpawnState::Canceled);
    registry_.release(c.id);
    retire_terminal_spawns();
    r.status = CommandStatus::Accepted;
    r.message = "spawn " + std::to_string(r.handle) + " canceled before registration; id released";
    return;
  }
  if (Status why = validate_despawn(c.id); !why.ok()) {
    reject(r, RejectReason::UnknownEntity, why.message());
    return;
  }
  if (vehicles_.is_vehicle(c.id)) vehicles_.mark_despawn(c.id);  // policy DespawnPending this step
  request_despawn(c.id, DespawnReason::Requested);
  accept(r);
}

Status World::validate_despawn(EntityId id) const {
  const std::string name = entity_text(id);
  if (!registry_.is_alive(id)) return Status::failed_precondition(name + " is not alive");
  if (vehicles_.is_vehicle(id)) return {};
  // Dispatched, not on the road yet: it enters and can leave from there.
  if (std::string mouth = vehicles_.mouth_text(id); !mouth.empty())
    return Status::failed_precondition(name + ": " + mouth);
  if (pedestrians_.dense_of[id.index] != PedestrianStore::kNoSlot) return {};
  auto o = std::lower_bound(orphans_.begin(), orphans_.end(), id,
                            [](const OrphanRecord& rec, EntityId v) { return rec.id < v; });
  if (o != orphans_.end() && o->id == id)
    return Status::failed_precondition(name + " is already retiring");
  if (population_.resident_of(id) != ResidentStore::kNone)
    return Status::failed_precondition(name + " is a dormant resident (nothing to despawn)");
  return Status::failed_precondition(name +
                                     " has no representation yet (a spawn in progress: cancel it)");
}

}  // namespace bustle::core
