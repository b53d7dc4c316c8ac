// Command SetPreventionLevel (prevention.hpp): raising the level queues the
// units of each level gained (within prevention.max_units, the rest counted
// as capped); lowering it cancels the queued units of the levels above and
// asks phase 9 to despawn the active ones (PreventionLowered), which stay
// Retiring until their entity has left the lane.
#include <algorithm>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SetPreventionLevel& c, CommandResult& r) {
  const auto levels = static_cast<std::uint32_t>(scenario_.prevention.units_per_level.size());
  if (c.level > levels) {
    reject(r, RejectReason::InvalidArgument,
           "level: " + std::to_string(c.level) + " is above the scenario's highest level " +
               std::to_string(levels) + " (prevention.units_per_level has " +
               std::to_string(levels) + " entries)");
    return;
  }
  PreventionState& p = prevention_;
  for (std::uint32_t level = p.level + 1; level <= c.level; ++level) {
    PreventionLevelCounts& counts = p.per_level[level - 1];
    for (std::uint32_t k = 0; k < scenario_.prevention.units_per_level[level - 1]; ++k) {
      if (p.units.size() >= scenario_.prevention.max_units) {
        ++counts.capped;
        continue;
      }
      p.units.push_back(
          {p.next_handle++, level, ResponseUnitState::Queued, EntityId{}, step_index_});
      ++counts.queued;
    }
  }
  if (c.level < p.level) {
    // Queued units above the new level end here; active ones retire through phase 9.
    std::erase_if(p.units, [&](ResponseUnit& u) {
      if (u.level <= c.level) return false;
      if (u.state == ResponseUnitState::Queued) {
        ++p.per_level[u.level - 1].canceled;
        return true;
      }
      if (u.state != ResponseUnitState::Active) return false;
      if (walking_slot(registry_, pedestrians_, u.entity) == PedestrianStore::kNoSlot) {
        ++p.per_level[u.level - 1].lost;  // left by another path since the last phase 4b
        return true;
      }
      u.state = ResponseUnitState::Retiring;
      u.state_step = step_index_;
      request_despawn(u.entity, DespawnReason::PreventionLowered);
      return false;
    });
  }
  p.level = c.level;
  accept(r);
}

}  // namespace bustle::core
