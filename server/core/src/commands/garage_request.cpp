// Command GarageRequest: a vehicle request queued at a garage
// (VehicleSystem::enqueue); dispatched by phase 5.
#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const GarageRequest& c, CommandResult& r) {
  const EnqueueResult e =
      vehicles_.enqueue(c.garage, c.request_id, c.prototype, c.lane, c.priority);
  switch (e.status) {
    case EnqueueStatus::Accepted:
      r.status = CommandStatus::Accepted;
      r.message = "enqueue ordinal " + std::to_string(e.ordinal);
      r.enqueue_ordinal = e.ordinal;
      return;
    case EnqueueStatus::Invalid:
      reject(r, RejectReason::InvalidArgument, e.field + ": " + e.message);
      return;
    case EnqueueStatus::Duplicate:
      reject(r, RejectReason::Duplicate, e.message);
      return;
    case EnqueueStatus::QueueFull:
      reject(r, RejectReason::QueueFull, e.message);
      return;
  }
  r.status = CommandStatus::Rejected;
}

}  // namespace bustle::core
