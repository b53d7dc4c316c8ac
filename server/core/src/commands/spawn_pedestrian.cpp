// Command SpawnPedestrian: a validated request becomes a spawn handle
// (Queued) that phase 4 advances; validation and handles: world_spawn.cpp.
#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SpawnPedestrian& c, CommandResult& r) {
  std::int32_t zone = kAnyZone;
  std::uint32_t lane = kAnyLane;
  std::vector<LaneIndex> route;
  std::string why = validate_spawn(c, zone, lane, &route);
  if (why.empty() && spawn_.live.size() >= scenario_.spawn.queue_depth) {
    reject(r, RejectReason::QueueFull,
           "spawn queue is at its depth (" + std::to_string(scenario_.spawn.queue_depth) + ")");
    return;
  }
  if (!why.empty()) {
    reject(r, RejectReason::InvalidArgument, std::move(why));
    return;
  }
  r.handle = accept_spawn(c, zone, lane, route, r.origin);
  accept(r);
}

}  // namespace bustle::core
