// Prevention (seed 000 §3): response units requested by level, and corpse
// cleanup. Two demand sources that share the population's spawn and despawn
// paths but not its budgets: response units never count against a zone's
// density budget or a community's target, and corpses leave through the one
// despawn phase (phase 9) like everything else.
//
// Response units. SetPreventionLevel{level} (operator) moves the level:
// raising it queues prevention.units_per_level[L - 1] units for each level L
// gained (each a handle, at most prevention.max_units live); lowering it
// cancels the queued units of the levels above and asks phase 9 to despawn
// the active ones (DespawnReason::PreventionLowered, so the fade rules apply).
// A unit's states:
//   Queued --(phase 4b, within prevention.spawn_per_step, handle order; an
//            identity, a sidewalk point in the ring [ring_min_m, ring_max_m]
//            around the first observer)--> Active (walks; origin Spawned)
//   Queued --(level lowered)--> Canceled            (terminal; counted)
//   Active --(level lowered)--> Retiring --(its entity left the lane)--> Despawned
//   Active --(entity left or died by any other path)--> Lost
// Terminal units leave `units` and are counted per level.
//
// Corpses. KillPedestrian{id} (operator) turns a walking pedestrian into a
// corpse: it stops moving (the row's held bit, as the admission mask uses),
// keeps its identity and tier, and stays until cleanup. Every
// prevention.cleanup_every_steps steps (phase 4b) each corpse is placed by its
// distance to the nearest observer (every observer the tier resolver uses):
//   d >= corpse_force_m               -> CorpseForced, deleted at once (no fade)
//   corpse_keep_m <= d < corpse_force_m -> CorpseCleanup, soft: phase 9's fade rules
//   d < corpse_keep_m                 -> kept; the farthest visible and the
//                                        farthest off-screen ones are remembered
// Resource pressure: when that pass removed nothing, more than
// corpse_pressure_count corpses exist and the live entities reach the limit
// (pressure_entities, 0 = the registry's capacity), the farthest off-screen
// kept corpse is deleted at once (CorpsePressure), else the farthest visible
// one. "Visible" is what phase 9 already uses: not in the Coarse tier.
//
// Invariants (World::check_prevention):
//   1. units is sorted by handle, every handle below next_handle; level in
//      [1, levels]; a Queued unit has no entity, Active and Retiring ones have one;
//      no unit's level is above `level` unless it is Retiring.
//   2. corpses is sorted by id; each is a walking pedestrian (a resident one
//      only when deceased) whose held bit is set and which is not in the
//      admission mask.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "bustle/core/entity_id.hpp"

namespace bustle::core {

inline constexpr std::uint32_t kMaxPreventionLevels = 8;
inline constexpr std::uint32_t kMaxCorpses = 4096;

enum class ResponseUnitState : std::uint8_t {
  Queued = 0,
  Active = 1,
  Retiring = 2,
  Canceled = 3,
  Despawned = 4,
  Lost = 5,
};
const char* to_string(ResponseUnitState s);

struct ResponseUnit {
  std::uint64_t handle = 0;  // 1, 2, ... in request order; never reused
  std::uint32_t level = 1;   // the level that asked for it
  ResponseUnitState state = ResponseUnitState::Queued;
  EntityId entity;               // null while Queued
  std::uint64_t state_step = 0;  // step of the last state change
  friend bool operator==(const ResponseUnit&, const ResponseUnit&) = default;
};

// Per level (index level - 1): entries into each state since step 0, and the
// units a raise could not queue because max_units were live.
struct PreventionLevelCounts {
  std::uint64_t queued = 0;
  std::uint64_t spawned = 0;
  std::uint64_t canceled = 0;
  std::uint64_t despawned = 0;
  std::uint64_t lost = 0;
  std::uint64_t capped = 0;
  friend bool operator==(const PreventionLevelCounts&, const PreventionLevelCounts&) = default;
};

struct CorpseRecord {
  EntityId id;
  std::uint64_t death_step = 0;
  friend bool operator==(const CorpseRecord&, const CorpseRecord&) = default;
};

struct CorpseCounters {
  std::uint64_t killed = 0;
  std::uint64_t soft_deleted = 0;      // CorpseCleanup requests (middle range)
  std::uint64_t force_deleted = 0;     // CorpseForced requests (far range)
  std::uint64_t pressure_deleted = 0;  // CorpsePressure requests
  std::uint64_t cleanup_passes = 0;
  friend bool operator==(const CorpseCounters&, const CorpseCounters&) = default;
};

struct PreventionState {
  std::uint32_t level = 0;
  std::uint64_t next_handle = 1;
  std::vector<ResponseUnit> units;  // live (Queued, Active, Retiring), sorted by handle
  std::array<PreventionLevelCounts, kMaxPreventionLevels> per_level{};
  std::uint32_t deferred_last_step = 0;  // Queued units that could not be placed
  std::vector<CorpseRecord> corpses;     // sorted by id
  CorpseCounters corpse;
  // Nothing ever happened: the digest adds no term and a checkpoint no rows,
  // so runs that never use prevention keep their digests.
  bool unused() const { return *this == PreventionState{}; }
  friend bool operator==(const PreventionState&, const PreventionState&) = default;
};

}  // namespace bustle::core
