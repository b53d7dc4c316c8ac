// Command SetHour: the population clock's time of day, in [0, 24).
#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SetHour& c, CommandResult& r) {
  if (!(c.hour >= 0.0 && c.hour < 24.0)) {
    reject(r, RejectReason::InvalidArgument, "hour must be in [0, 24)");
    return;
  }
  population_.set_hour(c.hour);
  accept(r);
}

}  // namespace bustle::core
