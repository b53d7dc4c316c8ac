// Why an entity leaves the city (the despawn phase, phase 9 of World::step).
// Shared by the World and the VehicleSystem, whose stuck and route-completed
// vehicles request their despawn with one of these.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bustle::core {

// Value 2 is retired (it was SpawnError and no path ever produced it): a
// spawn's placement cannot fail once its stage runs. The zone's room and the
// registry's capacity are re-validated at each stage and what does not fit
// waits (deferred, then TimedOut), and so does a spawn whose lanes are all
// closed (SetLaneClosed); the only failure after validation is the entity
// leaving first (SpawnFailure::EntityGone). LaneDeadEnd covers a lane with no
// pedestrian successor and a background pedestrian waiting too long at a
// closed lane (World::kLaneDeadEndWait_us). Its slot
// in the per-reason counters stays and is always 0, so counters keep their
// index and the wire value is never reused.
enum class DespawnReason : std::uint8_t {
  OutOfRange = 0,
  Stuck = 1,
  LaneDeadEnd = 3,
  Requested = 4,
  Overpopulated = 5,
  RouteCompleted = 6,  // a vehicle reached the end of a garage-ending route
  // Prevention (prevention.hpp): a response unit of a level above the new
  // one; a corpse in the middle range (soft: the fade rules apply), beyond
  // corpse_force_m (at once) or chosen by the resource-pressure path (at once).
  PreventionLowered = 7,
  CorpseCleanup = 8,
  CorpseForced = 9,
  CorpsePressure = 10,
};
inline constexpr std::size_t kDespawnReasonCount = 11;  // counter slots, value 2 unused
// The reasons before prevention: the digest hashes the later slots only when
// one is non-zero, so runs without prevention keep their digests.
inline constexpr std::size_t kDespawnReasonCountBeforePrevention = 7;
inline constexpr bool is_despawn_reason(std::size_t v) {
  return v < kDespawnReasonCount && v != 2;
}
const char* to_string(DespawnReason r);
// The reasons corpse cleanup removes a corpse with (a fading corpse is still one).
inline constexpr bool is_corpse_reason(DespawnReason r) {
  return r == DespawnReason::CorpseCleanup || r == DespawnReason::CorpseForced ||
         r == DespawnReason::CorpsePressure;
}

}  // namespace bustle::core
