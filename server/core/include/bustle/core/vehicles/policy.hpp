// A vehicle's strategy (long-lived intent), its control policy this step
// and the reason for it, and the arbitration between them (DESIGN §4), a
// pure function of one vehicle's inputs. Part of vehicles.hpp, which
// includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "bustle/core/scenario.hpp"

namespace bustle::core {

enum class VehicleStrategy : std::uint8_t {
  RouteFollow = 0,
  LaneFollow = 1,
  Parked = 2,
  Manual = 3
};
enum class ControlPolicy : std::uint8_t {
  RouteFollow = 0,
  LaneFollow = 1,
  Yielding = 2,
  WaitingAtSignal = 3,
  Parked = 4,
  Manual = 5,
  DespawnPending = 6,
};
enum class PolicyReason : std::uint8_t {
  Clear = 0,
  DespawnRequested = 1,
  ManualControl = 2,
  ParkedStrategy = 3,
  SignalClosed = 4,
  SignalYield = 5,
  PedestrianHazard = 6,
  LeaderBlocked = 7,  // leader at or within headway_block_m: no movement
  LeaderCaution = 8,  // leader within headway_caution_m: reduced speed
  AwaitingTurnaround = 9,
  NotDue = 10,      // reserved: not emitted (a vehicle keeps its last reason between evaluations)
  LaneClosed = 11,  // its route's next lane is closed: it stops at this lane's end (Yielding)
  MergeYield = 12,  // another feeder's vehicle has the merge ahead: no movement or reduced speed
};
inline constexpr std::size_t kControlPolicyCount = 7;
const char* to_string(VehicleStrategy s);
const char* to_string(ControlPolicy p);
const char* to_string(PolicyReason r);

// One vehicle's inputs for this step, all read from the pre-step snapshot.
struct PolicyInputs {
  bool despawn_requested = false;
  VehicleStrategy strategy = VehicleStrategy::RouteFollow;
  bool signal_closed = false;  // a closed stop line within this step's travel
  bool signal_yield = false;   // inside a yielding approach
  bool pedestrian_hazard = false;
  double leader_gap_m = std::numeric_limits<double>::infinity();
  // Distance to the merge point ahead minus the merge winner's distance to it
  // (the winner taken as a virtual leader; may be negative); infinity when
  // no merge within reach or this vehicle is the winner.
  double merge_gap_m = std::numeric_limits<double>::infinity();
  bool has_route = true;
};

struct PolicyDecision {
  ControlPolicy policy = ControlPolicy::RouteFollow;
  PolicyReason reason = PolicyReason::Clear;
  bool advance = true;
  double speed_multiplier = 1.0;
  bool leader_recorded = false;
};

// The fixed arbitration order (DESIGN §4): despawn -> Manual -> Parked ->
// signal closed -> signal yield -> pedestrian hazard -> leader or merge
// (whichever gap is smaller; a tie goes to the leader) -> follow.
// Pure: the same inputs always give the same decision.
PolicyDecision arbitrate_policy(const PolicyInputs& in, const VehicleRules& rules);

}  // namespace bustle::core
