// Command SpawnPedestrian: a validated request becomes a spawn handle
// (Queued) that phase 4 advances; validation and handles: world_spawn.cpp.
// At spawn.queue_depth a request displaces the weakest Queued handle when it
// is more important (spawn_pipeline.hpp, Displacement), else it is refused.
#include <cassert>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SpawnPedestrian& c, CommandResult& r) {
  std::int32_t zone = kAnyZone;
  std::uint32_t lane = kAnyLane;
  std::vector<LaneIndex> route;
  if (Status why = validate_spawn(c, zone, lane, &route); !why.ok()) {
    reject(r, RejectReason::InvalidArgument, why.message());
    return;
  }
  if (spawn_.live.size() >= scenario_.spawn.queue_depth) {
    // Ranked against the observers as they stand now (a SetObservers earlier
    // in this step counts), like phase 4 after this phase.
    prepare_importance();
    const std::optional<SpawnRank> weakest = weakest_queued_spawn();
    const auto priority = static_cast<PriorityClass>(c.priority);
    const SpawnRank incoming{spawn_effective_distance(zone, lane, priority),
                             static_cast<std::uint8_t>(c.priority), spawn_.next_handle, 0};
    if (!weakest || !(incoming < *weakest)) {
      reject(r, RejectReason::QueueFull,
             "spawn queue is at its depth (" + std::to_string(scenario_.spawn.queue_depth) +
                 ") and no queued request is less important");
      return;
    }
    SpawnHandleState& displaced = spawn_.live[weakest->live_index];
    assert(displaced.handle == weakest->handle);
    set_spawn_state(displaced, SpawnState::Canceled, SpawnFailure::Displaced);
    ++spawn_.counters.displaced_total;
    retire_terminal_spawns();
  }
  r.handle = accept_spawn(c, zone, lane, route, r.origin);
  accept(r);
}

}  // namespace bustle::core
