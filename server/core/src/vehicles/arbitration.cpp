// Policy arbitration's names and its public entry point: the strategies,
// control policies and reasons as text (queries, logs) and arbitrate_policy(),
// the rule in arbitration.hpp that the kernel inlines.
#include "arbitration.hpp"

#include <cassert>
#include <string>

#include "bustle/core/vehicles.hpp"

namespace bustle::core {

const char* to_string(VehicleStrategy s) {
  switch (s) {
    case VehicleStrategy::RouteFollow:
      return "route_follow";
    case VehicleStrategy::LaneFollow:
      return "lane_follow";
    case VehicleStrategy::Parked:
      return "parked";
    case VehicleStrategy::Manual:
      return "manual";
  }
  return "?";
}

const char* to_string(ControlPolicy p) {
  switch (p) {
    case ControlPolicy::RouteFollow:
      return "route_follow";
    case ControlPolicy::LaneFollow:
      return "lane_follow";
    case ControlPolicy::Yielding:
      return "yielding";
    case ControlPolicy::WaitingAtSignal:
      return "waiting_at_signal";
    case ControlPolicy::Parked:
      return "parked";
    case ControlPolicy::Manual:
      return "manual";
    case ControlPolicy::DespawnPending:
      return "despawn_pending";
  }
  return "?";
}

const char* to_string(PolicyReason r) {
  switch (r) {
    case PolicyReason::Clear:
      return "clear";
    case PolicyReason::DespawnRequested:
      return "despawn_requested";
    case PolicyReason::ManualControl:
      return "manual_control";
    case PolicyReason::ParkedStrategy:
      return "parked_strategy";
    case PolicyReason::SignalClosed:
      return "signal_closed";
    case PolicyReason::SignalYield:
      return "signal_yield";
    case PolicyReason::PedestrianHazard:
      return "pedestrian_hazard";
    case PolicyReason::LeaderBlocked:
      return "leader_blocked";
    case PolicyReason::LeaderCaution:
      return "leader_caution";
    case PolicyReason::AwaitingTurnaround:
      return "awaiting_turnaround";
    case PolicyReason::NotDue:
      return "not_due";
    case PolicyReason::LaneClosed:
      return "lane_closed";
    case PolicyReason::MergeYield:
      return "merge_yield";
  }
  return "?";
}

PolicyDecision arbitrate_policy(const PolicyInputs& in, const VehicleRules& rules) {
  const PolicyDecision dec = arbitrate(in, rules);
  // A decision that holds the vehicle drives at no speed; a leader is
  // recorded only by a yield to it.
  assert(dec.advance || dec.speed_multiplier == 0.0);
  assert(!dec.leader_recorded || dec.policy == ControlPolicy::Yielding);
  assert(static_cast<std::size_t>(dec.policy) < kControlPolicyCount);
  return dec;
}

}  // namespace bustle::core
