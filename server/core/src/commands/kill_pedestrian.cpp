// Command KillPedestrian (prevention.hpp): a pedestrian death event. A
// walking pedestrian becomes a corpse: the row's held bit stops its movement
// (as the admission mask does; a masked pedestrian leaves the mask list for
// the corpse list), its identity, lane position and tier stay, and corpse
// cleanup (phase 4b) removes it later. A resident's record is deceased from
// now on (population.hpp): it lets its work-point go, is never activated or
// handed over again, keeps its identity, and a save names it.
#include <algorithm>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const KillPedestrian& c, CommandResult& r) {
  const std::uint32_t slot =
      walking_slot_or_reject(registry_, pedestrians_, vehicles_.is_vehicle(c.id), c.id,
                             "vehicles, dormant residents and fading entities cannot be killed", r);
  if (slot == PedestrianStore::kNoSlot) return;
  std::vector<CorpseRecord>& corpses = prevention_.corpses;
  auto it = std::lower_bound(corpses.begin(), corpses.end(), c.id,
                             [](const CorpseRecord& k, EntityId v) { return k.id < v; });
  if (it != corpses.end() && it->id == c.id) {
    reject(r, RejectReason::InvalidArgument, entity_text(c.id) + " is already a corpse");
    return;
  }
  if (corpses.size() >= kMaxCorpses) {
    reject(r, RejectReason::QueueFull,
           "kill refused: " + std::to_string(kMaxCorpses) + " corpses exist already");
    return;
  }
  corpses.insert(it, {c.id, step_index_});
  ++prevention_.corpse.killed;
  if (pedestrians_.origin[slot] == static_cast<std::uint8_t>(PedestrianOrigin::Resident)) {
    population_.on_died(static_cast<std::uint32_t>(population_.resident_of(c.id)));
  }
  if (auto m = std::lower_bound(admission_masked_.begin(), admission_masked_.end(), c.id);
      m != admission_masked_.end() && *m == c.id) {
    admission_masked_.erase(m);  // the bit stays: it holds the corpse now
  } else {
    set_admission_mask_bit(slot, true);
  }
  r.entity = c.id;
  accept(r);
}

bool World::is_corpse(EntityId id) const {
  const std::vector<CorpseRecord>& corpses = prevention_.corpses;
  auto it = std::lower_bound(corpses.begin(), corpses.end(), id,
                             [](const CorpseRecord& k, EntityId v) { return k.id < v; });
  return it != corpses.end() && it->id == id;
}

}  // namespace bustle::core
