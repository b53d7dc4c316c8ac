// Command SetAdmissionMask: the admission mask of seed 001. A masked
// pedestrian is skipped by the movement phase (phase 6) and nothing else: it
// keeps its tier resolution, its lifecycle and its representation, so a
// renderer can tell "not advanced this step" from "gone". The list is
// bounded (kMaxAdmissionMasked) and sorted by id; the row bit mirrors it.
#include <algorithm>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SetAdmissionMask& c, CommandResult& r) {
  const std::uint32_t slot = walking_slot_or_reject(
      registry_, pedestrians_, vehicles_.is_vehicle(c.id), c.id,
      "the admission mask holds pedestrians on a lane; vehicles, dormant residents and fading "
      "entities cannot be masked",
      r);
  if (slot == PedestrianStore::kNoSlot) return;
  if (is_corpse(c.id)) {
    reject(r, RejectReason::InvalidArgument,
           entity_text(c.id) + " is a corpse (it does not move; corpse cleanup removes it)");
    return;
  }
  auto it = std::lower_bound(admission_masked_.begin(), admission_masked_.end(), c.id);
  const bool present = it != admission_masked_.end() && *it == c.id;
  if (present == c.masked) {
    accept(r);  // already so: idempotent
    return;
  }
  if (c.masked && admission_masked_.size() >= kMaxAdmissionMasked) {
    reject(r, RejectReason::InvalidArgument,
           "admission mask refused: " + std::to_string(kMaxAdmissionMasked) +
               " pedestrians are masked already (unmask some first)");
    return;
  }
  if (c.masked) {
    admission_masked_.insert(it, c.id);
  } else {
    admission_masked_.erase(it);
  }
  set_admission_mask_bit(slot, c.masked);
  accept(r);
}

void World::set_admission_mask_bit(std::uint32_t slot, bool masked) {
  pedestrian_digest_sum_ -= pedestrian_row_hash(slot);
  const std::uint8_t id_phase = pedestrians_.phase[slot] & PedestrianStore::kIdPhaseMask;
  pedestrians_.phase[slot] =
      static_cast<std::uint8_t>(id_phase | (masked ? PedestrianStore::kAdmissionMaskedBit : 0));
  // A held row stands, so it keeps no catch-up; released, it walks on like a
  // row just placed (sim_tier.hpp).
  pedestrians_.catch_up_steps[slot] =
      masked ? std::int8_t{0}
             : static_cast<std::int8_t>(catch_up_for_placement(placed_as_of_step(), id_phase,
                                                               pedestrians_.sim_tier[slot]));
  pedestrian_tiers_written_.mark(slot);
  pedestrian_digest_sum_ += pedestrian_row_hash(slot);
}

bool World::is_admission_masked(EntityId id) const {
  return std::binary_search(admission_masked_.begin(), admission_masked_.end(), id);
}

}  // namespace bustle::core
