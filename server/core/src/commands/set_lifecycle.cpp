// Command SetLifecycle: the population's growth and recycle quotas, lifecycle
// interval and migration budget (validate_lifecycle_settings).
#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SetLifecycle& c, CommandResult& r) {
  const LifecycleSettings settings{c.growth_quota, c.recycle_quota, c.interval_ms,
                                   c.migration_budget};
  if (Status why = validate_lifecycle_settings(settings); !why.ok()) {
    reject(r, RejectReason::InvalidArgument, why.message());
    return;
  }
  population_.set_settings(settings, sim_time_us());
  accept(r);
}

}  // namespace bustle::core
