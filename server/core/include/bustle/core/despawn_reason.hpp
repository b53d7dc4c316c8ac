// Why an entity leaves the city (the despawn phase, phase 9 of World::step).
// Shared by the World and the VehicleSystem, whose stuck and route-completed
// vehicles request their despawn with one of these.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bustle::core {

enum class DespawnReason : std::uint8_t {
  OutOfRange = 0,
  Stuck = 1,
  SpawnError = 2,
  LaneDeadEnd = 3,
  Requested = 4,
  Overpopulated = 5,
  RouteCompleted = 6,  // a vehicle reached the end of a garage-ending route
};
inline constexpr std::size_t kDespawnReasonCount = 7;
const char* to_string(DespawnReason r);

}  // namespace bustle::core
