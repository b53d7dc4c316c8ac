// Command LifecycleBatch: up to 256 spawns and despawns validated together,
// committed together or not at all, then checked (BatchStatus).
#include <algorithm>

#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const LifecycleBatch& b, CommandResult& r) {
  r.status = CommandStatus::Rejected;
  r.reason = RejectReason::InvalidArgument;
  r.batch = BatchStatus::RejectedNoChange;
  if (b.ops.empty() || b.ops.size() > 256) {
    r.message = "ops: a batch holds 1 to 256 operations";
    return;
  }
  // 1. Validate everything; nothing changes on any error.
  std::vector<std::int32_t> zones(b.ops.size(), kAnyZone);
  std::vector<std::uint32_t> lanes(b.ops.size(), kAnyLane);
  std::vector<EntityId> despawned;
  std::vector<std::vector<LaneIndex>> routes(b.ops.size());
  std::size_t spawns = 0;
  for (std::size_t k = 0; k < b.ops.size(); ++k) {
    const LifecycleOp& op = b.ops[k];
    const std::string at = "ops[" + std::to_string(k) + "].";
    std::string why;
    if (op.kind == LifecycleOp::Kind::Spawn) {
      why = validate_spawn(op.spawn, zones[k], lanes[k], &routes[k]).message();
      ++spawns;
    } else {
      why = validate_despawn(op.id).message();
      if (why.empty() && std::find(despawned.begin(), despawned.end(), op.id) != despawned.end()) {
        why = "entity appears twice in the batch";
      }
      if (why.empty() && despawn_pending_[op.id.index] != 0)
        why = "entity already leaves this step";
      despawned.push_back(op.id);
      if (!why.empty()) why = "id: " + why;
    }
    if (!why.empty()) {
      r.message = at + why;
      return;
    }
  }
  if (spawn_.live.size() + spawns > scenario_.spawn.queue_depth) {
    r.reason = RejectReason::QueueFull;
    r.message = "ops: " + std::to_string(spawns) + " spawns would exceed spawn.queue_depth (" +
                std::to_string(scenario_.spawn.queue_depth) + ")";
    return;
  }
  // 2. Commit everything.
  const std::size_t live_before = spawn_.live.size();
  for (std::size_t k = 0; k < b.ops.size(); ++k) {
    const LifecycleOp& op = b.ops[k];
    if (op.kind == LifecycleOp::Kind::Spawn) {
      r.handles.push_back(accept_spawn(op.spawn, zones[k], lanes[k], routes[k], r.origin));
    } else {
      if (vehicles_.is_vehicle(op.id)) vehicles_.mark_despawn(op.id);
      request_despawn(op.id, DespawnReason::Requested);
    }
  }
  // 3. Check what the commit promised; a failure here is a bug, reported.
  std::string broken;
  if (spawn_.live.size() != live_before + spawns) broken = "spawn handles: count after commit";
  for (const EntityId id : despawned) {
    if (broken.empty() && despawn_pending_[id.index] == 0) broken = "despawn not recorded";
  }
  if (broken.empty()) broken = check_lifecycle_counts().message();
  if (!broken.empty()) {
    r.batch = BatchStatus::InvariantFailure;
    r.reason = RejectReason::InvariantFailure;
    r.message = "invariant failed after commit: " + broken;
    return;
  }
  r.status = CommandStatus::Accepted;
  r.reason = RejectReason::None;
  r.batch = BatchStatus::Committed;
  r.message.clear();
}

}  // namespace bustle::core
