// Garage state: the request queue, the dispatched set, the mouth, the
// dispatch gate's outcome per step and the counters; the content plan's
// cursor; what enqueue and cancel answer. The request lifecycle and the
// invariants are in vehicles.hpp, which includes this.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bustle/core/entity_id.hpp"

namespace bustle::core {

enum class DispatchGate : std::uint8_t {
  Dispatched = 0,  // at least one vehicle left the garage this step
  QueueEmpty = 1,
  Cooldown = 2,
  Capacity = 3,
  EntranceBlocked = 4,
  PerStepMax = 5,  // dispatched the per-step maximum and more are waiting
};
inline constexpr std::size_t kDispatchGateCount = 6;
const char* to_string(DispatchGate g);

struct QueuedRequest {
  std::string request_id;
  std::uint32_t prototype = 0;
  std::int32_t priority = 0;
  std::uint64_t enqueue_ordinal = 0;
};

// A dispatched vehicle waiting in its garage's mouth for the entrance: it
// has its identity and VehicleId and counts against capacity, and is not on
// the road yet (no lane, no tier, not streamed).
struct MouthVehicle {
  EntityId id;
  std::uint64_t ordinal = 0;  // VehicleId ordinal
  std::uint32_t prototype = 0;
  std::string request_id;
};

struct GarageState {
  std::vector<QueuedRequest> queue;     // invariant 2
  std::vector<std::string> dispatched;  // request ids that received a vehicle, sorted
  std::vector<MouthVehicle> mouth;      // dispatched, waiting for the entrance; front first
  std::uint64_t frame_index = 0;        // queue frames (one per step)
  bool has_dispatched = false;
  std::uint64_t last_dispatch_frame = 0;
  std::uint64_t next_enqueue_ordinal = 0;
  std::uint64_t next_vehicle_ordinal = 0;
  std::uint64_t turnarounds = 0;
  DispatchGate last_gate = DispatchGate::QueueEmpty;
  std::array<std::uint64_t, kDispatchGateCount> gate_steps{};  // steps per outcome
  std::uint64_t rejected_invalid = 0;
  std::uint64_t rejected_duplicate = 0;
  std::uint64_t rejected_queue_full = 0;
  std::uint64_t canceled = 0;
  // District worlds: this garage's vehicles on the road in other districts
  // (they count against its capacity; 0 in a whole city).
  std::uint64_t away = 0;
};

struct PlanState {
  std::uint64_t cursor = 0;  // planned requests offered so far (in plan order)
  std::uint64_t accepted = 0;
  std::uint64_t rejected = 0;
};

enum class EnqueueStatus : std::uint8_t { Accepted = 0, Invalid = 1, Duplicate = 2, QueueFull = 3 };
struct EnqueueResult {
  EnqueueStatus status = EnqueueStatus::Invalid;
  std::uint64_t ordinal = 0;  // EnqueueOrdinal when accepted
  std::string field;          // which field was invalid
  std::string message;
};

enum class CancelStatus : std::uint8_t {
  Canceled = 0,
  NotQueued = 1,
  AlreadyDispatched = 2,
  UnknownGarage = 3
};

}  // namespace bustle::core
