// Command SetLifecycle: the population's growth and recycle quotas, lifecycle
// interval and migration budget (validate_lifecycle_settings).
#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SetLifecycle& c, CommandResult& r) {
  const LifecycleSettings settings{c.growth_quota, c.recycle_quota, c.interval_ms,
                                   c.migration_budget};
  if (std::string why = validate_lifecycle_settings(settings); !why.empty()) {
    reject(r, RejectReason::InvalidArgument, std::move(why));
    return;
  }
  population_.set_settings(settings, sim_time_us());
  accept(r);
}

}  // namespace bustle::core
