// Command SetVehicleStrategy: a vehicle's control strategy (route_follow,
// lane_follow, parked, manual).
#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SetVehicleStrategy& c, CommandResult& r) {
  if (c.strategy > 3) {
    reject(r, RejectReason::InvalidArgument,
           "strategy must be 0-3 (route_follow, lane_follow, parked, manual)");
    return;
  }
  if (!vehicles_.set_strategy(c.id, static_cast<VehicleStrategy>(c.strategy))) {
    if (std::string mouth = vehicles_.mouth_text(c.id); !mouth.empty()) {
      reject(r, RejectReason::InvalidArgument, entity_text(c.id) + ": " + mouth);
      return;
    }
    reject(r, RejectReason::UnknownEntity, entity_text(c.id) + " is not a vehicle");
    return;
  }
  accept(r);
}

}  // namespace bustle::core
