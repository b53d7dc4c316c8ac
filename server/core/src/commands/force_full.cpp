// Command ForceFull: an active pedestrian or vehicle held at SimTier::Full
// (on) or released (off), within tiers.hard_full_cap per kind.
#include <algorithm>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const ForceFull& c, CommandResult& r) {
  const bool pedestrian = walking_slot(registry_, pedestrians_, c.id) != PedestrianStore::kNoSlot;
  if (!pedestrian && !vehicles_.is_vehicle(c.id)) {
    reject(r, RejectReason::UnknownEntity,
           entity_text(c.id) + " is not an active pedestrian or vehicle");
    return;
  }
  auto it = std::lower_bound(forced_full_.begin(), forced_full_.end(), c.id);
  const bool present = it != forced_full_.end() && *it == c.id;
  if (!c.on) {
    if (present) forced_full_.erase(it);
    accept(r);
    return;
  }
  if (!present) {
    std::uint32_t same_kind = 0;
    for (const EntityId f : forced_full_) same_kind += vehicles_.is_vehicle(f) == !pedestrian;
    if (same_kind >= scenario_.tiers.hard_full_cap) {
      ++force_full_refused_;
      reject(r, RejectReason::InvalidArgument,
             "ForceFull refused: the hard safety cap of " +
                 std::to_string(scenario_.tiers.hard_full_cap) + " Full entities is reached");
      return;
    }
    forced_full_.insert(it, c.id);
  }
  accept(r);
}

}  // namespace bustle::core
