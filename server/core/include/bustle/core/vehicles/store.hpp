// The vehicle store (hot state, structure of arrays), the per-step counts
// and what a checkpoint holds of the vehicle system. Part of vehicles.hpp,
// which includes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bustle/core/command.hpp"
#include "bustle/core/entity_id.hpp"
#include "bustle/core/lane_graph.hpp"
#include "bustle/core/sim_tier.hpp"
#include "bustle/core/vehicles/garages.hpp"
#include "bustle/core/vehicles/policy.hpp"
#include "bustle/core/vehicles/signals.hpp"

namespace bustle::core {

// Hot vehicle state, structure-of-arrays, dense; swap-remove with dense_of.
// Rows are kept grouped by garage (VehicleSystem::regroup_store), so the
// vehicles of one route, its lanes and their leaders sit next to each other
// in memory; the row order never changes an outcome (invariant 4).
struct VehicleStore {
  static constexpr std::uint32_t kNoSlot = UINT32_MAX;
  std::vector<EntityId> id;
  std::vector<std::uint32_t> garage;
  std::vector<std::uint64_t> ordinal;  // VehicleId ordinal
  std::vector<std::uint32_t> prototype;
  std::vector<std::uint32_t> route_index;
  std::vector<LaneIndex> lane;
  std::vector<double> s_m;
  std::vector<double> speed_mps;  // speed actually driven on the last evaluated step
  std::vector<std::uint8_t> strategy;
  std::vector<std::uint8_t> control_policy;  // ControlPolicy
  std::vector<std::uint8_t> reason;
  std::vector<SimTier> sim_tier;
  std::vector<EntityId> leader;  // null when none
  std::vector<std::uint64_t> steps_advanced;
  std::vector<std::uint64_t>
      last_advance_step;                     // step it last moved (its dispatch step before that)
  std::vector<std::uint64_t> waiting_since;  // step it began awaiting turnaround (0 = not)
  std::vector<std::uint8_t> despawn_requested;
  std::vector<std::string> request_id;  // cold: the request it was dispatched for
  std::vector<std::uint32_t> dense_of;  // by entity index

  std::uint32_t size() const { return static_cast<std::uint32_t>(id.size()); }
};

struct VehicleStepCounts {
  std::uint32_t moving = 0;                            // advanced this step
  std::uint32_t per_policy[kControlPolicyCount] = {};  // over all vehicles after the step
  std::uint32_t turnarounds = 0;
  std::uint32_t dispatched = 0;
};

// Everything a checkpoint needs from the vehicle system.
struct VehicleCheckpoint {
  VehicleStore store;                   // dense_of is rebuilt, not stored
  std::vector<std::string> garage_ids;  // scenario garage ids, in index order (checked on restore)
  std::vector<std::string> signal_ids;
  std::vector<GarageState> garages;
  std::vector<SignalState> signals;
  PlanState plan;
  TierCounts last_tiers;
  VehicleStepCounts last_step;
  std::vector<VehicleGhost> ghosts;              // district worlds: VehicleSystem::ghosts()
  std::vector<std::uint32_t> foreign_crossings;  // VehicleSystem::foreign_crossings()
};

}  // namespace bustle::core
