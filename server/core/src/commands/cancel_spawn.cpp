// Command CancelSpawn: a spawn handle that has no registered entity yet
// (Queued or IdentityCreated) is canceled; its id, if any, goes back.
#include <algorithm>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const CancelSpawn& c, CommandResult& r) {
  auto it =
      std::lower_bound(spawn_.live.begin(), spawn_.live.end(), c.handle,
                       [](const SpawnHandleState& h, std::uint64_t v) { return h.handle < v; });
  r.status = CommandStatus::Rejected;
  if (it == spawn_.live.end() || it->handle != c.handle) {
    const auto ended = find_spawn(c.handle);
    if (ended && ended->state == SpawnState::RepresentationRequested) {
      // The core's part ended, but its entity walks: as for Registered.
      reject(r, RejectReason::InvalidArgument,
             "spawn " + std::to_string(c.handle) +
                 " is representation_requested: its entity exists; despawn it instead");
      return;
    }
    reject(r, RejectReason::NotFound,
           ended ? "spawn " + std::to_string(c.handle) + " already ended (" +
                       to_string(ended->state) + ")"
                 : "no spawn handle " + std::to_string(c.handle));
    return;
  }
  if (it->state != SpawnState::Queued && it->state != SpawnState::IdentityCreated) {
    reject(r, RejectReason::InvalidArgument,
           "spawn " + std::to_string(c.handle) + " is " + to_string(it->state) +
               ": its entity exists; despawn it instead");
    return;
  }
  r.handle = c.handle;
  if (it->state == SpawnState::IdentityCreated) {
    r.entity = it->entity;
    registry_.release(it->entity);
  }
  set_spawn_state(*it, SpawnState::Canceled);
  retire_terminal_spawns();
  accept(r);
}

}  // namespace bustle::core
