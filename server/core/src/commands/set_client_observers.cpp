// Command SetClientObservers: the connected clients' observers (at most
// kClientObserversMax), kept apart from the scenario / operator ones; tiers
// rank by the nearest of both.
#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SetClientObservers& c, CommandResult& r) {
  if (c.points.size() > kClientObserversMax) {
    reject(r, RejectReason::InvalidArgument,
           "at most " + std::to_string(kClientObserversMax) + " client observers");
    return;
  }
  if (!set_observer_points(c.points, client_observers_, client_observer_views_, r)) return;
  accept(r);
}

}  // namespace bustle::core
