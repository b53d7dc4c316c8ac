// Command SetPedestrianTarget: the background pedestrian target that phase 3
// grows or trims towards (at most entity_capacity).
#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SetPedestrianTarget& c, CommandResult& r) {
  if (c.count > scenario_.entity_capacity) {
    reject(r, RejectReason::InvalidArgument,
           "count " + std::to_string(c.count) + " exceeds entity_capacity " +
               std::to_string(scenario_.entity_capacity));
    return;
  }
  pedestrian_target_ = c.count;
  accept(r);
}

}  // namespace bustle::core
