// The arbitration rule (DESIGN §4) and the holds applied after it, inlined
// into the vehicle kernel (kernel.cpp) and behind arbitrate_policy()
// (arbitration.cpp), so the rule is written once. Not part of the core's
// interface.
#pragma once

#include "bustle/core/vehicles.hpp"

namespace bustle::core {
namespace {

[[gnu::always_inline]] inline PolicyDecision arbitrate(const PolicyInputs& in,
                                                       const VehicleRules& rules) {
  PolicyDecision d;
  if (in.despawn_requested)
    return {ControlPolicy::DespawnPending, PolicyReason::DespawnRequested, false, 0.0, false};
  if (in.strategy == VehicleStrategy::Manual)
    return {ControlPolicy::Manual, PolicyReason::ManualControl, true, 1.0, false};
  if (in.strategy == VehicleStrategy::Parked)
    return {ControlPolicy::Parked, PolicyReason::ParkedStrategy, false, 0.0, false};
  if (in.signal_closed)
    return {ControlPolicy::WaitingAtSignal, PolicyReason::SignalClosed, false, 0.0, false};
  if (in.signal_yield) {
    return {ControlPolicy::Yielding, PolicyReason::SignalYield, true, rules.yield_multiplier,
            false};
  }
  if (in.pedestrian_hazard)
    return {ControlPolicy::Yielding, PolicyReason::PedestrianHazard, false, 0.0, false};
  // A merge winner nearer than the leader is this step's leader (invariant 6).
  if (in.merge_gap_m < in.leader_gap_m) {
    if (in.merge_gap_m <= rules.headway_block_m)
      return {ControlPolicy::Yielding, PolicyReason::MergeYield, false, 0.0, true};
    if (in.merge_gap_m < rules.headway_caution_m) {
      return {ControlPolicy::Yielding, PolicyReason::MergeYield, true, rules.yield_multiplier,
              true};
    }
  }
  // The emergency guard (<= block headway) is part of the same model.
  if (in.leader_gap_m <= rules.headway_block_m) {
    return {ControlPolicy::Yielding, PolicyReason::LeaderBlocked, false, 0.0, true};
  }
  if (in.leader_gap_m < rules.headway_caution_m) {
    return {ControlPolicy::Yielding, PolicyReason::LeaderCaution, true, rules.yield_multiplier,
            true};
  }
  const bool route = in.has_route && in.strategy == VehicleStrategy::RouteFollow;
  d.policy = route ? ControlPolicy::RouteFollow : ControlPolicy::LaneFollow;
  return d;
}

}  // namespace

// Defined inline here, not in a source file, for the kernel's sake: it runs
// once per evaluated vehicle.
inline void VehicleSystem::hold(PolicyDecision& dec, bool awaiting, LaneIndex next_in_reach) const {
  if (awaiting && dec.advance) {
    dec.advance = false;
    dec.reason = PolicyReason::AwaitingTurnaround;
  }
  // A closed next lane within this evaluation's reach: drive up to this
  // lane's end and wait there (the advance stops at it).
  if (closures_active_ && dec.advance && next_in_reach != kNoLaneAhead &&
      lane_closed_[next_in_reach] != 0) {
    dec.policy = ControlPolicy::Yielding;
    dec.reason = PolicyReason::LaneClosed;
  }
}

}  // namespace bustle::core
