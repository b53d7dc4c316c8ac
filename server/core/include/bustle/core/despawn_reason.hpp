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
};
inline constexpr std::size_t kDespawnReasonCount = 7;  // counter slots, value 2 unused
inline constexpr bool is_despawn_reason(std::size_t v) {
  return v < kDespawnReasonCount && v != 2;
}
const char* to_string(DespawnReason r);

}  // namespace bustle::core
