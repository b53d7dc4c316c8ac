// Command SetTimeScale: game seconds per simulated second, in [1, 3600].
#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SetTimeScale& c, CommandResult& r) {
  if (c.scale < 1 || c.scale > 3600) {
    reject(r, RejectReason::InvalidArgument,
           "time scale must be in [1, 3600] game seconds per second");
    return;
  }
  population_.set_time_scale(c.scale);
  accept(r);
}

}  // namespace bustle::core
