// A checkpoint: the complete authoritative state of a World, as plain data.
//
// World::capture() copies the state at a step boundary (the sim thread pays
// only for this copy); World::restore() validates a checkpoint completely into
// a *candidate* world and returns it, or returns errors and no world — the
// caller swaps the candidate in at a step boundary, so a bad checkpoint never
// touches the live world.
//
// Completeness rule: every field that compute_digest() reads is here, and
// restore + continue yields the digest chain of an uninterrupted run. The
// completeness guard (tests/core/checkpoint_test.cpp) enforces this for every
// scenario, so state added later without a checkpoint field fails a test.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bustle/core/command.hpp"
#include "bustle/core/despawn_reason.hpp"
#include "bustle/core/entity_id.hpp"
#include "bustle/core/importance.hpp"
#include "bustle/core/lane_graph.hpp"
#include "bustle/core/population.hpp"
#include "bustle/core/prevention.hpp"
#include "bustle/core/spawn_pipeline.hpp"
#include "bustle/core/vehicles.hpp"

namespace bustle::core {

struct RegistryState {
  std::vector<std::uint32_t> generation;  // per slot, size = capacity
  std::vector<std::uint8_t> alive;        // per slot, 0/1
  std::vector<std::uint32_t> free_fifo;   // free slot indices, front to back
  std::uint64_t pop_seq = 0;              // sequence number of the FIFO front
};

struct PedestrianState {
  // Dense order, as stored (iteration order is part of exact continuation).
  std::vector<EntityId> id;
  std::vector<LaneIndex> lane;
  std::vector<double> s_m;
  std::vector<std::uint32_t> hops;
  std::vector<std::uint32_t> resident;  // resident index or PedestrianStore::kNoResident
  std::vector<SimTier> sim_tier;
  std::vector<std::int8_t> catch_up_steps;  // PedestrianStore::catch_up_steps
  std::vector<std::uint8_t> priority;       // PriorityClass
  std::vector<std::uint8_t> origin;         // PedestrianOrigin
  std::vector<std::uint32_t> route;         // route slot or kNoRoute
};

// An orphan (retiring entity) as stored; see world.hpp OrphanRecord.
struct OrphanState {
  EntityId id;
  std::uint8_t reason = 0;  // DespawnReason
  LaneIndex lane = 0;
  double s_m = 0.0;
  std::uint32_t resident = UINT32_MAX;
  std::uint64_t release_step = 0;
};

struct CounterState {
  std::uint64_t spawned_total = 0;
  std::uint64_t despawned_total = 0;
  std::array<std::uint64_t, kDespawnReasonCount> despawned_by_reason{};  // DespawnReason order
  std::uint64_t spawn_failed_capacity = 0;
  std::uint64_t commands_accepted = 0;
  std::uint64_t commands_rejected = 0;
  std::uint64_t faded_total = 0;
  std::uint64_t fade_skipped_total = 0;
};

// Lane closures (SetLaneClosed): a pedestrian waiting at the end of its lane
// because the way on is closed, and since which step.
struct LaneWaiter {
  EntityId id;
  std::uint64_t since_step = 0;
  friend bool operator==(const LaneWaiter&, const LaneWaiter&) = default;
};
struct LaneClosureCounters {
  std::uint64_t closures_total = 0;         // lanes closed (a transition from open)
  std::uint64_t openings_total = 0;         // lanes opened again
  std::uint64_t reroutes_total = 0;         // pedestrians that took another successor
  std::uint64_t dead_ends_total = 0;        // background waiters despawned (LaneDeadEnd)
  std::uint64_t spawns_deferred_total = 0;  // spawn steps deferred: every lane closed
  friend bool operator==(const LaneClosureCounters&, const LaneClosureCounters&) = default;
};

// Which capture a WorldCheckpoint's columns hold (issue 17): World::capture_into
// copies into a checkpoint stamped by the same world only the rows written
// since that epoch. Not state: never saved, restored or digested. Copying a
// checkpoint copies the stamp (the columns are the same); moving one leaves
// the source unstamped (its columns are gone). Code that edits a captured
// checkpoint's columns and then captures into it again must reset the stamp.
struct CaptureStamp {
  std::uint64_t lineage = 0;  // the capturing World's; 0: holds no capture
  std::uint64_t epoch = 0;    // that world's capture epoch when captured
  CaptureStamp() = default;
  CaptureStamp(std::uint64_t l, std::uint64_t e) : lineage(l), epoch(e) {}
  CaptureStamp(const CaptureStamp&) = default;
  CaptureStamp& operator=(const CaptureStamp&) = default;
  CaptureStamp(CaptureStamp&& o) noexcept : lineage(o.lineage), epoch(o.epoch) { o.reset(); }
  CaptureStamp& operator=(CaptureStamp&& o) noexcept {
    if (this != &o) {
      lineage = o.lineage;
      epoch = o.epoch;
      o.reset();
    }
    return *this;
  }
  void reset() {
    lineage = 0;
    epoch = 0;
  }
};

// One large column of a capture: its size and what a capture copies of it.
struct CaptureColumnBytes {
  const char* name = "";
  std::size_t bytes = 0;   // the column's bytes
  std::size_t copied = 0;  // bytes a capture into the given checkpoint copies
};

struct WorldCheckpoint {
  std::string scenario_id;
  std::uint32_t step_us = 0;
  std::uint64_t seed = 0;
  std::uint64_t step_index = 0;
  std::array<std::uint64_t, 4> rng_state{};
  std::uint64_t route_salt = 0;
  std::uint32_t pedestrian_target = 0;
  RegistryState registry;
  PedestrianState pedestrians;
  CounterState counters;
  std::vector<CommandEnvelope> inbox;  // pending commands, arrival order
  VehicleCheckpoint vehicles;
  PopulationCheckpoint population;
  TierCounts pedestrian_tiers;        // last resolution's counts
  std::vector<EntityId> forced_full;  // ForceFull entities, sorted by EntityId
  // SetAdmissionMask: walking pedestrians held by the admission mask, sorted
  // by EntityId (at most kMaxAdmissionMasked).
  std::vector<EntityId> admission_masked;
  // Response units and corpses (prevention.hpp; schema 7, migration 0007).
  PreventionState prevention;
  // SetLaneClosed (schema 8; none in older snapshots): closed lanes by index,
  // sorted; the pedestrians waiting at a closure, sorted by id; counters.
  std::vector<std::uint32_t> closed_lanes;
  std::vector<LaneWaiter> lane_waiters;
  LaneClosureCounters lane_closure;
  std::uint64_t force_full_refused = 0;
  std::vector<Vec2> observers;
  std::vector<ObserverView> observer_views;  // parallel to observers
  // SetObservers.follow: the entity observers[0] follows (null: none; then
  // observers are fixed). Set only with exactly one observer.
  EntityId follow{};
  // Scenario observer_follow = first_vehicle, still waiting for a vehicle
  // (never together with `follow`).
  bool follow_first_vehicle = false;
  // SetClientObservers (schema 3; empty in older snapshots).
  std::vector<Vec2> client_observers;
  std::vector<ObserverView> client_observer_views;  // parallel to client_observers
  SpawnPipelineState spawn;
  RouteTableState routes;
  std::vector<OrphanState> orphans;     // sorted by id
  std::vector<EntityId> retiring_fifo;  // front first
  std::uint64_t digest = 0;             // digest of this state (checked on restore)
  CaptureStamp capture_stamp;           // not state (see CaptureStamp)
};

// Makes `cp` ready to be captured into without growing: the per-pedestrian
// columns and the registry blobs get capacity for `entity_capacity` entries,
// and their pages are written once (so the capture that first fills them does
// not page-fault them in on the sim thread). They are left holding
// `entity_capacity` zeros (not a valid checkpoint until captured into), so
// that first capture only shrinks them. The persistence worker prepares
// its spare checkpoints with this on its own thread. Costs about 50 bytes per
// entity slot of memory per prepared checkpoint.
void reserve_for_capture(WorldCheckpoint& cp, std::uint32_t entity_capacity);

// A save: persistent facts only (DESIGN §5). Background population is not
// saved; it regenerates after loading. Saveable identities, zone ownership,
// time of day and garage counters join this struct as those systems arrive.
struct SaveState {
  std::string scenario_id;
  std::uint32_t step_us = 0;
  std::uint64_t seed = 0;
  std::uint64_t step_index = 0;  // the clock: sim time = step_index * step_us
  std::uint32_t pedestrian_target = 0;
  std::uint64_t day_us = 0;  // time of day
  std::uint32_t time_scale = 1;
  // Per garage: the next VehicleId ordinal, so a loaded city never reissues
  // a VehicleId (garage counters are persistent facts).
  std::vector<std::uint64_t> garage_vehicle_ordinals;
  // Zone ownership of saveable residents (communities with saveable: true),
  // in resident order: their identities are recreated with the same EntityIds
  // on load and keep their zone.
  std::vector<EntityId> saveable_ids;
  std::vector<std::string> saveable_zones;  // zone id per saveable resident
  // Per saveable resident, 1 when it is deceased (killed): a load recreates
  // it deceased. Empty (saves of schema < 11): nobody died.
  std::vector<std::uint8_t> saveable_deceased;
  LifecycleSettings lifecycle;
  // What the load's reconciliation needs (seed 001): every resident walking
  // when the save was taken, with its zone and lane position, in resident
  // order. A load places exactly these again in one reconciling step, so the
  // active set right after a load is the saved one (quotas apply from the
  // next lifecycle interval on). Empty in saves of schema < 4: the lifecycle
  // then regrows the active set within its quotas.
  struct ActiveResident {
    EntityId id;
    std::string zone;  // zone id
    std::string lane;  // lane id (a sidewalk of that zone)
    double s_m = 0.0;  // distance along the lane
    friend bool operator==(const ActiveResident&, const ActiveResident&) = default;
  };
  std::vector<ActiveResident> active_residents;
  // The operator/scenario observers the tiers measure from (SetObservers);
  // client observers are the connected clients' and are re-sent by them.
  // has_observers false (schema < 4): the scenario's observers.
  bool has_observers = false;
  std::vector<ObserverPoint> observers;
};

// One validation failure: `path` names the collection, row and field, e.g.
// "pedestrians[12].lane" or "registry.free_fifo[3]".
struct RestoreError {
  std::string path;
  std::string message;
};

}  // namespace bustle::core
