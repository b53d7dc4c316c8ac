// The deterministic world: all authoritative simulation state and the fixed step.
//
// A World is created from a validated Scenario and a seed. It owns its PRNG,
// its entity registry, its lane graph and its populations, and advances only in
// step(). It performs no I/O, reads no clock and starts no thread: time is
// step_index() * step_us. Given the same scenario, seed and sequence of
// submitted commands (and the steps at which they were submitted), every step
// produces the same digest.
//
// Step phases, in the order World::step() runs them (DESIGN §2; later phases
// never feed earlier ones in one step). Each lives in its own file,
// server/core/src/phases/NN_<phase>.cpp; command application is one function
// per command, server/core/src/commands/<command>.cpp.
//   1. apply commands (arrival order) -> command results; then the
//      importance field is prepared from the (possibly new) observers
//   2. time and zones: time of day; at each lifecycle interval the schedule
//      coordinator, migration of active members between zones (two-phase
//      handoff, budget) and the zone lifecycle: activate / recycle resident
//      identities within quotas (population.hpp)
//   3. background upkeep: grow or trim anonymous pedestrians towards the
//      target, guided by the lane density ledger
//   4. spawn pipeline: advance handles within the per-step creation cap
//   4b. prevention (prevention.hpp): response units by level within their own
//      budget; corpse cleanup every few steps (three ranges, resource pressure)
//   5. vehicles: content plan, signals, garage dispatch gates, pre-step
//      snapshot, policy arbitration, route advance, turnaround gate
//   6. pedestrian movement: advance along lanes at lane speed, carrying the
//      remaining time across lane ends; dead ends request a despawn
//   7. simulation tiers for vehicles and pedestrians (sim_tier.hpp): Full moves
//      every step, Simulated every 2nd, Coarse every 8th, by the same amount
//      of time in total
//   8. representation requests for registered spawns
//   9. despawn phase: one exit for all reasons, in EntityId order: demote,
//      move to the orphan set (sorted by id), fade in the retiring FIFO
//      (Coarse, i.e. off-screen, entities skip the fade), final deletion and
//      id release to the back of the FIFO; notifications are collected and
//      exposed after the phase, never emitted from inside it
//  10. digest over the canonical state
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bustle/core/checkpoint.hpp"
#include "bustle/core/command.hpp"
#include "bustle/core/despawn_reason.hpp"
#include "bustle/core/entity_id.hpp"
#include "bustle/core/importance.hpp"
#include "bustle/core/lane_graph.hpp"
#include "bustle/core/log_sink.hpp"
#include "bustle/core/phase_executor.hpp"
#include "bustle/core/population.hpp"
#include "bustle/core/prevention.hpp"
#include "bustle/core/prng.hpp"
#include "bustle/core/row_write_stamps.hpp"
#include "bustle/core/scenario.hpp"
#include "bustle/core/spawn_pipeline.hpp"
#include "bustle/core/status.hpp"
#include "bustle/core/vehicles.hpp"

namespace bustle::core {

enum class EntityKind : std::uint8_t { Pedestrian = 0, Vehicle = 1 };

enum class SubmitStatus : std::uint8_t { Queued, InboxFull };

// Where a pedestrian came from (lifecycle axis): background upkeep
// (regenerable), a community resident (identity kept while dormant), or a
// spawn request (a handle tracks it).
enum class PedestrianOrigin : std::uint8_t { Background = 0, Resident = 1, Spawned = 2 };
const char* to_string(PedestrianOrigin o);

enum class DespawnStage : std::uint8_t { Retiring = 0, Gone = 1 };

// The phases of World::step(), numbered as at the top of this file, for a
// StepPhaseHook.
enum class StepPhase : std::uint8_t {
  ApplyCommands = 0,
  TimeAndZones,
  BackgroundUpkeep,
  SpawnPipeline,
  Prevention,  // 4b
  Vehicles,
  MovePedestrians,
  SimTiers,
  RepresentationRequests,
  Despawn,
  Digest,
};
inline constexpr std::size_t kStepPhaseCount = 11;
const char* to_string(StepPhase p);

// Told as each phase of a step ends, on the thread that runs step(): the
// application times phases with it (the core reads no clock). It must not
// touch the world. Never changes what a step computes.
class StepPhaseHook {
 public:
  virtual ~StepPhaseHook() = default;
  virtual void phase_end(StepPhase phase) = 0;
};

// Collected in the despawn phase and exposed after it (World::despawn_notices).
struct DespawnNotice {
  EntityId id;
  DespawnReason reason = DespawnReason::Requested;
  DespawnStage stage = DespawnStage::Retiring;
  EntityKind kind = EntityKind::Pedestrian;
};

// An entity that left the active arrays and waits, fading, for final
// deletion.
//
// Invariants (World::check_invariants):
//   1. The orphan set is sorted by EntityId, without repeats; the retiring
//      FIFO holds the same ids, each once, with release steps non-decreasing
//      from the front (so deleting from the front in order is complete).
//   2. An orphan is alive and on no lane (neither a pedestrian nor a
//      vehicle); a resident orphan is that resident, retiring, and the
//      population's retiring count equals the resident orphans.
struct OrphanRecord {
  EntityId id;
  DespawnReason reason = DespawnReason::Requested;
  LaneIndex lane = 0;  // where it stopped (clients fade it there)
  double s_m = 0.0;
  std::uint32_t resident = UINT32_MAX;  // resident index, or none
  std::uint64_t release_step = 0;       // final deletion at or after this step
  friend bool operator==(const OrphanRecord&, const OrphanRecord&) = default;
};

// A pedestrian that left a district world across a border in the last step
// (World::border_departures): its id is away here now, and it arrives at
// district `to_district` in that world's next step (BorderArrivals).
struct BorderDeparture {
  std::uint32_t to_district = 0;
  BorderPedestrian pedestrian;
};

// An id on its way home (entity_id.hpp invariant 5; World::border_returns):
// released here, or passed on, towards the neighbour `to_district` on a
// shortest way to its home; `id` carries the generation its home issues next.
struct BorderReturn {
  std::uint32_t to_district = 0;
  EntityId id;
  std::int32_t garage = -1;  // a vehicle's garage (its home counts it away), else -1
};

// A vehicle that left a district world across a border in the last step
// (World::border_vehicles), and a ghost this world's last step gives a
// neighbour (World::border_ghosts; vehicles/borders.cpp).
struct BorderVehicleDeparture {
  std::uint32_t to_district = 0;
  BorderVehicle vehicle;
};
struct BorderGhost {
  std::uint32_t to_district = 0;
  VehicleGhost ghost;
};

// Lifecycle state of one entity, as reported by World::describe.
enum class LifecycleState : std::uint8_t {
  Requested = 0,  // a spawn handle holds the id (IdentityCreated), or a garage mouth does
  Active = 1,
  Dormant = 2,   // a resident without representation
  Retiring = 3,  // in the orphan set, fading
  Gone = 4,      // not alive (stale or never issued)
  Deceased = 5,  // a killed resident: its corpse, then its record only
};
const char* to_string(LifecycleState s);

// Representation hint the server gives clients for an entity (DESIGN §1):
// derived from the tier, never fed back into the simulation.
enum class RepresentationHint : std::uint8_t { Actor = 0, Instanced = 1, Marker = 2, None = 3 };
const char* to_string(RepresentationHint h);

// Everything the server knows about one entity, one field per axis.
struct EntityReport {
  EntityId id;
  bool alive = false;
  EntityKind kind = EntityKind::Pedestrian;
  LifecycleState lifecycle = LifecycleState::Gone;
  SimTier tier = SimTier::Coarse;  // meaningful when active or retiring
  // The tier the effective distance alone asks for now (distance_tier): it
  // differs from `tier` while the caps, the transition budget, ForceFull or
  // the resolve cadence hold the entity elsewhere. Active entities only.
  SimTier requested_tier = SimTier::Coarse;
  // Stage 2 of its last tier resolution: the tier the Full / Simulated caps
  // allowed (before the transition budget). Derived, not state (sim_tier.hpp):
  // the applied tier until its slice is resolved after it appeared or after a
  // restore. Active entities only.
  SimTier capacity_tier = SimTier::Coarse;
  RepresentationHint representation = RepresentationHint::None;
  PriorityClass priority = PriorityClass::Background;
  PedestrianOrigin origin = PedestrianOrigin::Background;
  bool saveable = false;
  bool forced_full = false;
  bool admission_masked = false;     // held in place by SetAdmissionMask
  bool corpse = false;               // killed (KillPedestrian), awaiting corpse cleanup
  std::uint32_t response_level = 0;  // a response unit's level, or 0
  std::int32_t resident = -1;        // resident index, or -1
  std::int32_t community = -1;       // community index, or -1
  std::int32_t zone = -1;            // zone index, or -1
  std::int32_t work_point = -1;
  std::int32_t work_slot = -1;
  bool at_work_anchor = false;    // holds an anchored slot and stands at it
  std::uint32_t migrations = 0;   // a resident's zone changes so far
  std::int32_t last_portal = -1;  // zone index it left last, or -1
  std::int32_t lane = -1;         // lane index, or -1 when not on a lane
  double s_m = 0.0;
  Pose pose;
  double effective_distance_m = 0.0;  // importance-weighted distance at the last query
  std::uint64_t spawn_handle = 0;     // 0 when it did not come from a live or recent spawn handle
  SpawnState spawn_state = SpawnState::Queued;
  DespawnReason retiring_reason = DespawnReason::Requested;  // when Retiring
  std::uint64_t release_step = 0;                            // when Retiring
};

// Lane density ledger summary (derived, not authoritative).
struct LedgerSummary {
  std::uint32_t fragments = 0;
  double deficit = 0.0;  // sum over fragments of max(0, target - actual)
  double surplus = 0.0;  // sum over fragments of max(0, actual - target)
  double max_deficit = 0.0;
};

// Hot pedestrian state, structure-of-arrays, dense. Removal is swap-remove;
// dense_of maps an entity index to its dense slot (kNoSlot when absent), so
// iteration order is a deterministic function of history, never of addresses.
//
// Invariants (World::check_invariants):
//   1. Every column has size() rows; dense_of[id[i].index] == i, and every
//      other entry is kNoSlot.
//   2. Every id is alive in the registry and is not a vehicle.
//   3. origin is Resident exactly when the population maps the id to a
//      resident (PopulationSystem::resident_of), and then that resident is
//      active (walking); background_pedestrians() counts origin Background.
//      The resident index is not a column: resident_of(id) gives it, so the
//      hot row stays at 33 bytes.
//   4. lane is a pedestrian lane and 0 <= s_m <= its length; tier, priority
//      and origin are known values; phase == id_phase(id), with
//      kAdmissionMaskedBit set exactly when the id is in admission_masked_
//      or is a corpse (prevention_.corpses; never both).
//   5. route is kNoRoute or a live route-table slot that no one else holds.
//   5b. |catch_up_steps| <= kMaxCatchUpSteps; between steps no row stands
//      ahead of the step (steps_since_due + catch_up_steps >= 0); a held row
//      (masked, a corpse) keeps none.
//   6. The digest's pedestrian sum (World::pedestrian_digest_sum_) equals a recount of
//      pedestrian_row_hash + pedestrian_motion_hash over all rows.
// Written by push_pedestrian / remove_pedestrian (which assert 1 and 2).
struct PedestrianStore {
  static constexpr std::uint32_t kNoSlot = UINT32_MAX;
  std::vector<EntityId> id;
  std::vector<LaneIndex> lane;
  std::vector<double> s_m;          // distance along the lane
  std::vector<std::uint32_t> hops;  // lanes entered so far; seeds route choice
  std::vector<SimTier> sim_tier;    // how often this pedestrian's logic runs
  // Steps the next due step adds to its stride's time (negative: takes off),
  // so the row's progress is the steps since it last moved whatever its tier
  // history (sim_tier.hpp, catch_up_after_tier_change): set when the row is
  // placed or its tier changes, 0 again once it moves. |value| < 16.
  std::vector<std::int8_t> catch_up_steps;
  std::vector<std::uint8_t> priority;  // PriorityClass (importance)
  std::vector<std::uint8_t> origin;    // PedestrianOrigin
  // id_phase(id) (derived from the id, never stored), plus kAdmissionMaskedBit
  // while the admission mask holds the pedestrian (World::admission_masked_
  // is the list; this bit lets the movement loop skip it without a search).
  std::vector<std::uint8_t> phase;
  static constexpr std::uint8_t kAdmissionMaskedBit = 0x40;
  static constexpr std::uint8_t kIdPhaseMask = 0x3F;
  static constexpr std::uint32_t kPhaseBytes = 128;  // values a phase byte can hold
  std::vector<std::uint32_t> route;                  // slot in the shared route table, or kNoRoute
  std::vector<std::uint32_t> dense_of;
  // Cold (outside the 33-byte hot row): the capacity target of the row's last
  // tier resolution (TierResolver::capacity_targets), written only for the
  // resolved slice's members; the applied tier when a row is pushed or
  // restored. A derived observation for QueryEntity: never digested, never
  // checkpointed, never read by the step (sim_tier.hpp).
  std::vector<SimTier> capacity_tier;
  static constexpr std::uint32_t kNoResident = UINT32_MAX;

  std::uint32_t size() const { return static_cast<std::uint32_t>(id.size()); }
};

struct WorldCounters {
  std::uint64_t spawned_total = 0;
  std::uint64_t despawned_total = 0;
  std::uint64_t despawned_by_reason[kDespawnReasonCount] = {};
  std::uint64_t spawn_failed_capacity = 0;
  std::uint64_t commands_accepted = 0;
  std::uint64_t commands_rejected = 0;
  std::uint64_t faded_total = 0;         // despawns that went through the fade
  std::uint64_t fade_skipped_total = 0;  // off-screen despawns deleted at once
};

class World {
 public:
  struct CreateResult {
    std::unique_ptr<World> world;  // null when errors is non-empty
    std::vector<ScenarioError> errors;
  };
  // Validates the scenario first; never throws for bad input.
  static CreateResult create(const Scenario& scenario, std::uint64_t seed, LogSink* log = nullptr);

  struct RestoreResult {
    std::unique_ptr<World> world;  // the candidate; null when errors is non-empty
    std::vector<RestoreError> errors;
  };
  // Builds a candidate world from a checkpoint of `scenario`, validating every
  // collection, reference and range first (and the stored digest last).
  // Never touches any existing world. [Precondition: none; bad input -> errors]
  static RestoreResult restore(const Scenario& scenario, const WorldCheckpoint& checkpoint,
                               LogSink* log = nullptr);

  // Threads for the parallel parts of a step (pedestrian movement, tier
  // distances); not owned, must outlive the world or be reset. nullptr =
  // inline. Never changes what a step computes (phase_executor.hpp).
  void set_phase_executor(PhaseExecutor* executor) { lent_executor_ = executor; }
  PhaseExecutor* lent_phase_executor() const { return lent_executor_; }
  // Called at the end of every phase (nullptr = none); not owned.
  void set_phase_hook(StepPhaseHook* hook) { phase_hook_ = hook; }

  // Copies the complete authoritative state (call between steps).
  WorldCheckpoint capture() const;
  // The same into an existing checkpoint, reusing its buffers: a caller that
  // recycles checkpoints pays no allocation or page faults on the sim thread.
  // When `out` holds an earlier capture of this world (out.capture_stamp),
  // the large row columns copy only the chunks of rows written since
  // (row_write_stamps.hpp); the result is byte for byte a full capture.
  void capture_into(WorldCheckpoint& out) const;
  // Per large column: its bytes, and how many of them capture_into(into)
  // would copy now (what a delta capture saves; for reports and benches).
  std::vector<CaptureColumnBytes> capture_bytes(const WorldCheckpoint& into) const;

  // Persistent facts only; see SaveState.
  SaveState capture_save() const;
  // A fresh world carrying the saved facts: same clock and population target,
  // an empty population that the normal spawn phase regenerates. The PRNG is
  // derived from (seed, step) so a loaded city does not replay the spawns of
  // step 0.
  static RestoreResult load_save(const Scenario& scenario, const SaveState& save,
                                 LogSink* log = nullptr);

  // Queues a command for the next step. Never blocks; a full inbox rejects.
  SubmitStatus submit(CommandEnvelope envelope);
  std::uint32_t inbox_size() const { return static_cast<std::uint32_t>(inbox_count_); }
  // Removes and returns the queued commands (arrival order) without applying
  // them; used when this world is about to be replaced, so each still gets a
  // result.
  std::vector<CommandEnvelope> take_inbox();

  // Advances one fixed step through all phases.
  void step();

  std::uint64_t step_index() const { return step_index_; }
  std::uint64_t sim_time_us() const { return step_index_ * scenario_.step_us; }
  std::uint32_t step_us() const { return scenario_.step_us; }
  std::uint64_t seed() const { return seed_; }
  // Digest of the state after the last step (or after creation).
  std::uint64_t digest() const { return digest_; }

  const Scenario& scenario() const { return scenario_; }
  const LaneGraph& lanes() const { return lanes_; }
  const EntityRegistry& registry() const { return registry_; }
  const PedestrianStore& pedestrians() const { return pedestrians_; }
  std::uint32_t pedestrian_target() const { return pedestrian_target_; }
  const WorldCounters& counters() const { return counters_; }
  // Work-point anchors (work_point_anchors.cpp): the place of a slot (false
  // when the work-point has no anchor), and whether a resident holding an
  // anchored slot stands at it now.
  bool slot_anchor(std::size_t work_point, std::uint32_t slot, LaneIndex& lane, double& s_m) const;
  bool resident_at_anchor(std::uint32_t resident) const;
  const VehicleSystem& vehicles() const { return vehicles_; }
  const PopulationSystem& population() const { return population_; }
  const TierCounts& pedestrian_tiers() const { return pedestrian_tier_counts_; }
  // Pedestrians the last step's movement phase ran (due by tier and id
  // phase, not held by the admission mask). An observation (bustle-bench
  // reads it), recomputed every step: not state (no digest, no checkpoint).
  std::uint32_t pedestrians_due_last_step() const { return pedestrians_due_; }
  const std::vector<EntityId>& forced_full() const { return forced_full_; }
  std::uint64_t force_full_refused() const { return force_full_refused_; }
  // Pedestrians the admission mask holds (SetAdmissionMask), sorted by id.
  const std::vector<EntityId>& admission_masked() const { return admission_masked_; }
  bool is_admission_masked(EntityId id) const;
  // Response units and corpses (prevention.hpp).
  const PreventionState& prevention() const { return prevention_; }
  bool is_corpse(EntityId id) const;
  // Lane closures (SetLaneClosed; commands/set_lane_closed.cpp): the closed
  // lanes (sorted by index), the pedestrians waiting at one (sorted by id,
  // each at the end of its lane), and the counters.
  const std::vector<LaneIndex>& closed_lanes() const { return closed_lanes_; }
  bool lane_closed(LaneIndex lane) const { return lane_closed_[lane] != 0; }
  const std::vector<LaneWaiter>& lane_waiters() const { return lane_waiters_; }
  const LaneClosureCounters& lane_closure_counters() const { return lane_closure_; }
  // A background pedestrian waiting at a closure this long is despawned with
  // LaneDeadEnd by the despawn phase (residents and spawned ones wait on).
  static constexpr std::uint64_t kLaneDeadEndWait_us = 30'000'000;
  std::uint32_t background_pedestrians() const { return background_count_; }
  const std::vector<Vec2>& observers() const { return observers_; }
  // The entity the operator observer follows (SetObservers.follow), or null.
  EntityId followed() const { return follow_; }
  // Scenario observer_follow = first_vehicle, and no vehicle has been on the
  // road yet (nor has an operator SetObservers cancelled the wait).
  bool follow_first_vehicle_pending() const { return follow_first_vehicle_; }
  const std::vector<ObserverView>& observer_views() const { return observer_views_; }
  // The connected clients' observers (SetClientObservers), kept apart from
  // the scenario / operator ones above; tiers rank by the nearest of both.
  const std::vector<Vec2>& client_observers() const { return client_observers_; }
  const std::vector<ObserverView>& client_observer_views() const { return client_observer_views_; }
  const RouteTable& routes() const { return routes_; }
  const Prng& prng() const { return rng_; }

  // Spawn pipeline (spawn_pipeline.hpp).
  const SpawnPipelineState& spawn_pipeline() const { return spawn_; }
  // A live or recently terminal handle.
  std::optional<SpawnHandleState> find_spawn(std::uint64_t handle) const;
  // State changes of the last step, in the order they happened.
  std::span<const SpawnEvent> spawn_events() const { return spawn_events_; }

  // Despawn phase: the orphan set (sorted by id), the retiring FIFO (front
  // first) and the notices of the last step's phase.
  const std::vector<OrphanRecord>& orphans() const { return orphans_; }
  const std::vector<EntityId>& retiring_fifo() const { return retiring_fifo_; }
  std::span<const DespawnNotice> despawn_notices() const { return despawn_notices_; }

  // Everything about one entity (all axes); Gone for stale or unknown ids.
  EntityReport describe(EntityId id) const;

  // A city split across district servers (world_districts.cpp). The district
  // this world owns (Scenario::own_district; -1: the whole city), the
  // district that owns a lane (-1 without a district map), and the
  // pedestrians that left across a border in the last step, sorted by id.
  std::int32_t own_district() const { return scenario_.own_district; }
  std::int32_t lane_district(LaneIndex lane) const {
    return lane_district_.empty() ? -1 : lane_district_[lane];
  }
  std::span<const BorderDeparture> border_departures() const { return border_departures_; }
  // The ids sent home (or passed on towards it) in the last step, in order.
  std::span<const BorderReturn> border_returns() const { return border_returns_; }
  // The vehicles that left across a border in the last step, by id, and the
  // ghosts it gives the neighbours.
  std::span<const BorderVehicleDeparture> border_vehicles() const { return border_vehicles_; }
  std::span<const BorderGhost> border_ghosts() const { return border_ghosts_; }
  // Everything the last step sends district `to` (its StepEnd's arrivals):
  // pedestrians and vehicles crossing, ghosts and ids going home.
  BorderArrivals border_message(std::uint32_t to) const;
  // border_message() for every district of the map, by index.
  std::vector<BorderArrivals> border_outbox() const;
  // The district whose range holds slot `index` (-1: the whole city).
  std::int32_t home_district(std::uint32_t index) const;

  // Lane density ledger: per sidewalk fragment, target - actual background
  // pedestrians (derived from the current state; fills `out`).
  void density_ledger(std::vector<double>& out) const;
  LedgerSummary ledger_summary() const;
  // Distant dots: per lane chain, the Coarse pedestrians on its lanes plus
  // the orphans fading there (anonymous; derived).
  void chain_dots(std::vector<std::uint32_t>& out) const;

  // Results of the commands applied in the last step, in arrival order.
  std::span<const CommandResult> last_command_results() const { return results_; }

  // Derived, not authoritative: pose and speed of a pedestrian by dense slot.
  // The speed is the lane's limit while it walks and 0 while it stands
  // (admission-masked or a corpse, waiting at a closed lane's end, at its
  // work-point anchor): what a client's dead reckoning may extrapolate.
  Pose pedestrian_pose(std::uint32_t dense) const;
  double pedestrian_speed_mps(std::uint32_t dense) const;
  // Steps since the row's pose was last advanced, between steps: where a
  // client extrapolates it from (its last due step less its catch-up,
  // sim_tier.hpp). 0 for Full rows that moved this step.
  std::uint32_t pedestrian_steps_since_moved(std::uint32_t dense) const;

  // Recomputes the digest from scratch over the canonical state.
  std::uint64_t compute_digest() const;

  // Every invariant the core headers number, checked against the current
  // state (call between steps): the registry (entity_id.hpp), the pedestrian
  // arrays (PedestrianStore), vehicles (vehicles.hpp), population
  // (population.hpp), the spawn pipeline (spawn_pipeline.hpp), the orphan set
  // and retiring FIFO (OrphanRecord), the route table, and that every live id
  // has exactly one holder. Ok when all hold; otherwise Internal with the
  // first broken one, named "<area>: invariant N: <what, with ids>" (for example
  // "registry: invariant 3: free FIFO holds live index 41"). O(entity
  // capacity + residents + vehicles log vehicles): opt-in, never run by
  // step() itself (bustle-server --check-invariants runs it after each step).
  Status check_invariants() const;

 private:
  // Tests only (tests/core/invariant_probe.hpp): corrupts state so the tests
  // can prove check_invariants() names each broken invariant. Checkpoint
  // restore validates too much (and the digest) to be that seam.
  friend struct InvariantProbe;
  World(const Scenario& scenario, std::uint64_t seed, LogSink* log);

  // The phases, numbered as in the list at the top (phases/NN_<phase>.cpp).
  void phase_apply_commands();     // 1
  void phase_time_and_zones();     // 2
  void phase_background_upkeep();  // 3
  void phase_spawn_pipeline();     // 4
  void phase_vehicles();           // 5
  // What phases 6 and 7 hand on, named in step() (defined below with the
  // parts they point into).
  struct TierSlice;
  struct Moved;
  Moved phase_move_pedestrians();                         // 6
  std::uint64_t phase_sim_tiers(const TierSlice& slice);  // 7: returns its digest terms
  // Digest terms (a phase's change of the pedestrian digest sum, row hashes
  // taken out and put back) folded into the sum phase 10 digests. The sum is
  // modulo 2^64, so when a phase's terms are folded never changes it.
  void fold_pedestrian_terms(std::uint64_t terms) { pedestrian_digest_sum_ += terms; }
  void phase_representation_requests();  // 8
  void phase_despawn();                  // 9
  // 10 is compute_digest() (public).

  // Phase 1: one function per command (commands/<command>.cpp).
  CommandResult apply(const CommandEnvelope& env);
  void apply_command(const SetPedestrianTarget& c, CommandResult& r);
  void apply_command(const DespawnEntity& c, CommandResult& r);
  void apply_command(const GarageRequest& c, CommandResult& r);
  void apply_command(const CancelGarageRequest& c, CommandResult& r);
  void apply_command(const SetVehicleStrategy& c, CommandResult& r);
  void apply_command(const SetObservers& c, CommandResult& r);
  void apply_command(const SetHour& c, CommandResult& r);
  void apply_command(const SetTimeScale& c, CommandResult& r);
  void apply_command(const ForceFull& c, CommandResult& r);
  void apply_command(const SpawnPedestrian& c, CommandResult& r);
  void apply_command(const CancelSpawn& c, CommandResult& r);
  void apply_command(const SetLifecycle& c, CommandResult& r);
  void apply_command(const LifecycleBatch& c, CommandResult& r);
  void apply_command(const SetClientObservers& c, CommandResult& r);
  void apply_command(const SetAdmissionMask& c, CommandResult& r);
  void apply_command(const SetPreventionLevel& c, CommandResult& r);
  void apply_command(const KillPedestrian& c, CommandResult& r);
  void apply_command(const BorderArrivals& c, CommandResult& r);
  // Districts (world_districts.cpp): the registry of this world's share of
  // the city's ids, lane owners and this district's share of the pedestrian
  // target (at creation); whether entering `lane` leaves this district
  // (phase 6); phase 9's removal of the pedestrians that crossed.
  static EntityRegistry make_registry(const Scenario& scenario);
  void init_district();
  bool leaves_district(LaneIndex lane) const {
    return scenario_.own_district >= 0 && lane_district_[lane] != scenario_.own_district;
  }
  Status validate_border_arrivals(const BorderArrivals& c) const;
  void leave_by_border();
  std::vector<std::int16_t> lane_district_;              // per lane; empty without a district map
  std::vector<BorderPedestrian> border_crossings_;       // phase 6 -> phase 9, this step
  std::vector<BorderDeparture> border_departures_;       // border_departures()
  std::vector<BorderReturn> border_returns_;             // border_returns()
  std::vector<BorderVehicleDeparture> border_vehicles_;  // border_vehicles()
  std::vector<BorderGhost> border_ghosts_;               // border_ghosts()
  void leave_by_border_vehicles();                       // phase 5, after the vehicles moved
  // After phase 9: which crossing lanes have a pedestrian on them, for the
  // neighbours whose cars yield there (vehicles/borders.cpp).
  void share_crossings();
  std::vector<std::pair<std::uint32_t, LaneIndex>> border_crossing_lanes_;  // (to, lane)
  // Scratch of leave_by_border_vehicles and share_crossings, kept between
  // steps so a district's step allocates nothing after warm-up.
  std::vector<EntityId> border_leaving_;
  std::vector<BorderVehicle> border_departed_;
  std::vector<std::pair<std::uint32_t, VehicleGhost>> border_ghost_scratch_;
  std::vector<LaneIndex> border_lane_scratch_;
  std::vector<std::uint32_t> range_first_;  // per district: first slot of its range
  std::vector<std::int16_t> next_hop_;      // per home district: the neighbour towards it
  void send_home(EntityId id, std::int32_t garage = -1);  // an id whose home is elsewhere
  // Phase 4b (phases/04b_prevention.cpp): response units, then corpse cleanup.
  void phase_prevention();
  void advance_response_units();
  bool place_response_unit(ResponseUnit& u);
  void clean_up_corpses();
  Status check_prevention() const;
  // Sets or clears a row's kAdmissionMaskedBit, keeping the digest sum current.
  void set_admission_mask_bit(std::uint32_t slot, bool masked);
  void apply_command(const SetLaneClosed& c, CommandResult& r);
  // Work-point anchors (work_point_anchors.cpp), derived from the scenario
  // at creation: per work-point its anchor lane (kAnyLane: none) and, per
  // lane, the pedestrian successor on a shortest way there (kAnyLane: none).
  void build_anchor_routes();
  struct RowAnchor {
    LaneIndex lane = kAnyLane;
    double s_m = 0.0;
    const LaneIndex* next_hop = nullptr;  // per lane
  };
  // Where pedestrian row `row` heads on a work-point anchor lane, if anywhere
  // (phase 6): its slot, or its place in the line of those waiting for one.
  bool row_anchor(std::uint32_t row, RowAnchor& out) const;
  std::vector<LaneIndex> anchor_lane_;
  std::vector<std::uint8_t> lane_is_anchor_;  // per lane: 1 when some work-point anchors on it
  std::vector<std::vector<LaneIndex>> anchor_next_hop_;
  bool has_anchors_ = false;
  // Lane closures: a lane of `pool` chosen with the world PRNG, skipping
  // closed ones (the one draw of before when nothing is closed); kAnyLane
  // when every lane of the pool is closed.
  LaneIndex pick_open_lane(std::span<const LaneIndex> pool);
  // Phase 6 with closures: the lane a pedestrian at the end of its lane
  // takes next, or kAnyLane to wait there (its route's next lane or every
  // successor closed). `rerouted`: its seeded choice was closed.
  LaneIndex open_successor(std::uint32_t row, std::span<const LaneIndex> next, std::uint64_t h,
                           bool& rerouted) const;
  // After phase 6: the parts' waits, departures and reroutes into lane_waiters_.
  void merge_lane_waits();
  void drop_lane_waiter(EntityId id);      // no-op when not waiting
  bool is_lane_waiter(EntityId id) const;  // waiting at a closed lane's end
  // Phase 9: background waiters past kLaneDeadEndWait_us request LaneDeadEnd.
  void request_lane_dead_ends();
  void request_despawn(EntityId id, DespawnReason reason);
  bool spawn_pedestrian(std::uint32_t fragment);
  void place_resident(std::uint32_t resident);
  void move_resident(std::uint32_t resident);
  SimTier initial_sim_tier(LaneIndex lane, double s_m, PriorityClass cls) const;
  void push_pedestrian(EntityId id, LaneIndex lane, double s_m, std::uint32_t resident,
                       PriorityClass cls, PedestrianOrigin origin);
  void remove_pedestrian(EntityId id);
  // The pedestrian section of the digest is a sum over pedestrians of two
  // hashes, kept current as rows change (like the resident rows in
  // population/residents.cpp), so compute_digest() does not visit every pedestrian:
  // pedestrian_motion_hash covers the distance along the lane, which changes
  // whenever a pedestrian moves; pedestrian_row_hash every other field, which
  // changes only at a lane end, a tier change, a route or a handoff. Every
  // write to a PedestrianStore column goes through these (check_pedestrians
  // recounts the sum).
  static std::uint64_t pedestrian_motion_hash(EntityId id, double s_m) {
    // For a fixed id a bijection of the distance's bits (mix64 is one), so
    // any change of s_m changes the term; keyed by the id so the sum does
    // not depend on which slot holds whom.
    return mix64(mix64(id.packed() ^ 0x5EDE'5712'1A4E'0001ull) ^ std::bit_cast<std::uint64_t>(s_m));
  }
  std::uint64_t pedestrian_row_hash(std::uint32_t slot) const;
  std::uint64_t pedestrian_digest_sum_recount() const;
  void set_pedestrian_route(std::uint32_t slot, std::uint32_t route);
  // The importance-weighted distance (effective_distance_at) of `count`
  // pedestrian rows into out_m.
  void pedestrian_effective_distances(const std::uint32_t* rows, std::uint32_t count,
                                      double* out_m) const;
  // Importance-weighted distance (importance.hpp) from the prepared observers.
  double effective_distance_at(Vec2 p, LaneIndex lane, PriorityClass cls, bool vehicle) const;
  void prepare_importance();
  // Validates finite points and replaces (out, views); false with r filled otherwise.
  std::vector<RestoreError> place_saved_active_set(const SaveState& save);
  bool set_observer_points(std::span<const ObserverPoint> points, std::vector<Vec2>& out,
                           std::vector<ObserverView>& views, CommandResult& r);
  // tier_observers_ = observers_ followed by client_observers_ (derived).
  void refresh_tier_observers();
  // Position of an entity on a lane (walking pedestrian or vehicle); false
  // when it is gone, dormant or retiring off its lane.
  bool entity_position(EntityId id, Vec2& out) const;
  // Start of phase 2: the following observer moves to the followed entity,
  // or stays at its last position and the follow ends when it left.
  void update_follow_observer();

  // Spawn handles (world_spawn.cpp).
  // Validates a spawn request; Ok, or InvalidArgument "field: message".
  Status validate_spawn(const SpawnPedestrian& c, std::int32_t& zone, std::uint32_t& lane,
                        std::vector<LaneIndex>* route = nullptr) const;
  Status validate_spawn_place(const SpawnPedestrian& c, std::int32_t& zone,
                              std::uint32_t& lane) const;
  std::uint64_t accept_spawn(const SpawnPedestrian& c, std::int32_t zone, std::uint32_t lane,
                             std::span<const LaneIndex> route, CommandOrigin origin);
  void set_spawn_state(SpawnHandleState& h, SpawnState s, SpawnFailure f = SpawnFailure::None);
  // Importance of a request for this place and class (SpawnRank, spawn_pipeline.hpp).
  double spawn_effective_distance(std::int32_t zone, std::uint32_t lane, PriorityClass cls) const;
  SpawnRank spawn_rank(const SpawnHandleState& h, std::uint32_t live_index) const;
  // The weakest Queued handle (largest rank), if any: what a request displaces.
  std::optional<SpawnRank> weakest_queued_spawn() const;
  // Phase 4's IdentityCreated -> Registered (zone room re-validated).
  void register_spawn(SpawnHandleState& h);
  template <class Count>
  void defer_or_time_out(SpawnHandleState& h, Count& deferred);  // phase 4
  void retire_terminal_spawns();
  SpawnHandleState* live_spawn_of(EntityId id);
  // Ok when `id` can be despawned now, else FailedPrecondition naming it.
  Status validate_despawn(EntityId id) const;
  // The counts a lifecycle batch must leave intact (pedestrian maps and
  // origins, residents walking + retiring, orphan order): the O(pedestrians)
  // part of check_invariants() that a LifecycleBatch runs after every commit.
  Status check_lifecycle_counts() const;
  Status check_pedestrians() const;
  Status check_spawn_pipeline() const;
  Status check_orphans() const;
  Status check_holders() const;
  Status check_observers() const;
  const SpawnHandleState* find_live_spawn(EntityId id) const;
  void finalize_orphan(const OrphanRecord& o, EntityKind kind, std::int32_t vehicle_garage = -1);
  void digest_lifecycle_into(class Digest& d) const;
  void digest_prevention_into(class Digest& d) const;
  // restore()'s sections (checkpoint/restore.cpp, restore_lifecycle.cpp), in
  // the order it runs them.
  struct RestoreFailures;
  static bool restore_pedestrians(World& w, const WorldCheckpoint& cp, RestoreFailures& fail,
                                  std::size_t& spawned_pedestrians);
  static void restore_pedestrian_row(World& w, const PedestrianState& p, std::size_t i,
                                     std::uint64_t step, RestoreFailures& fail);
  static void restore_lifecycle(World& w, const WorldCheckpoint& cp, RestoreFailures& fail);
  static void restore_check_observers(const WorldCheckpoint& cp, RestoreFailures& fail);
  static void restore_spawn_handles(World& w, const WorldCheckpoint& cp, RestoreFailures& fail);
  static bool restore_routes(World& w, const WorldCheckpoint& cp, RestoreFailures& fail);
  static void restore_orphans(World& w, const WorldCheckpoint& cp, RestoreFailures& fail);
  static bool restore_identities_and_vehicles(World& w, const WorldCheckpoint& cp,
                                              std::size_t spawned_pedestrians,
                                              RestoreFailures& fail);
  static bool restore_observers_and_forced(World& w, const WorldCheckpoint& cp,
                                           RestoreFailures& fail);
  static void restore_prevention(World& w, const WorldCheckpoint& cp, RestoreFailures& fail);
  void restore_clock_and_counters(const WorldCheckpoint& cp);
  // The closed lanes, waiters and counters (commands/set_lane_closed.cpp),
  // after the pedestrians; the first failure, naming its checkpoint path.
  std::optional<RestoreError> restore_lane_closures(const WorldCheckpoint& cp);
  Status check_lane_closures() const;

  Scenario scenario_;
  LaneGraph lanes_;
  LogSink* log_;
  NullLogSink null_log_;
  std::uint64_t seed_;
  Prng rng_;
  std::uint64_t route_salt_;  // derived stream key for per-entity route choices
  EntityRegistry registry_;
  PedestrianStore pedestrians_;
  // Checkpoint capture bookkeeping (issue 17), not state: per chunk of
  // pedestrian rows, the capture epoch of the last write to
  //   - rows_written: id, priority, origin (and the derived resident
  //     column): push_pedestrian, remove_pedestrian's swap;
  //   - lanes_written: lane, hops, route: lane hops, set_pedestrian_route,
  //     move_resident (and push/swap);
  //   - tiers_written: sim_tier: write_slice_tiers (and push/swap).
  // s_m changes for every moving row every step and is always copied.
  RowWriteStamps pedestrian_rows_written_;
  RowWriteStamps pedestrian_lanes_written_;
  RowWriteStamps pedestrian_tiers_written_;
  // This world's captures (never another world's) are what a stamped
  // checkpoint may hold; the epoch advances at each capture.
  std::uint64_t capture_lineage_;
  mutable std::uint64_t capture_epoch_ = 1;
  void capture_resident_column(PedestrianState& p, PhaseExecutor& parts, std::uint64_t held) const;
  void start_next_capture_epoch() const;
  void mark_pedestrian_row_written(std::uint32_t slot) {
    pedestrian_rows_written_.mark(slot);
    pedestrian_lanes_written_.mark(slot);
    pedestrian_tiers_written_.mark(slot);
  }
  std::uint32_t pedestrian_target_;
  std::uint64_t step_index_ = 0;
  // Within step(), until phase 6 has moved the pedestrians: a row placed now
  // stands as of the step before (placed_as_of_step, sim_tier.hpp).
  bool movement_pending_ = false;
  std::uint64_t placed_as_of_step() const {
    return movement_pending_ ? step_index_ - 1 : step_index_;
  }
  std::uint64_t digest_ = 0;
  WorldCounters counters_;

  std::vector<CommandEnvelope> inbox_;  // ring buffer, fixed capacity
  std::size_t inbox_head_ = 0;
  std::size_t inbox_count_ = 0;
  std::vector<CommandResult> results_;

  struct DespawnRequest {
    EntityId id;
    DespawnReason reason;
  };
  std::vector<DespawnRequest> despawn_requests_;
  VehicleSystem vehicles_;
  PopulationSystem population_;
  std::uint32_t background_count_ = 0;  // pedestrians without a resident identity
  // Sum of pedestrian_row_hash + pedestrian_motion_hash (derived; rebuilt on restore).
  std::uint64_t pedestrian_digest_sum_ = 0;
  std::vector<double> slice_distance_;  // per slice member (scratch)
  std::vector<std::uint32_t> slice_;    // dense slots resolved this step (scratch)
  std::vector<EntityId> slice_ids_;
  std::vector<SimTier> slice_sim_tier_;
  TierResolver pedestrian_tier_resolver_;
  TierCounts pedestrian_tier_counts_;
  std::uint32_t pedestrians_due_ = 0;  // pedestrians_due_last_step()
  std::vector<EntityId> forced_full_;  // sorted by EntityId; bounded by 2 x hard_full_cap
  std::uint64_t force_full_refused_ = 0;
  std::vector<EntityId> admission_masked_;  // sorted; each a walking pedestrian
  PreventionState prevention_;              // response units and corpses
  std::vector<LaneIndex> closed_lanes_;     // sorted; at most kMaxClosedLanes
  std::vector<std::uint8_t> lane_closed_;   // per lane: 1 when closed (derived)
  std::vector<LaneWaiter> lane_waiters_;    // sorted by id; each walking, at its lane end
  LaneClosureCounters lane_closure_;
  std::vector<EntityId> wait_scratch_;
  std::vector<std::uint8_t> zone_closed_scratch_;  // phase 2: per zone, all lanes closed
  std::vector<std::uint8_t> force_scratch_;
  void fill_force(std::span<const EntityId> ids);
  std::vector<std::uint32_t> to_activate_, to_deactivate_;
  std::vector<Vec2> observers_;
  std::vector<std::uint8_t> crossing_occupied_;  // per lane, pre-step (phase 5 input)
  std::vector<VehicleSystem::DespawnRequest> vehicle_despawns_;
  std::vector<std::uint8_t> despawn_pending_;  // by entity index; cleared in phase 9
  std::vector<ObserverView> observer_views_;   // parallel to observers_
  // Followed entity (SetObservers.follow; null: observers_ fixed). While set,
  // observers_ is exactly its position (digested, checkpointed).
  EntityId follow_{};
  // Scenario observer_follow = first_vehicle still waiting for its vehicle:
  // phase 2 of the first step that finds one on the road follows the first
  // of them (the store keeps dispatch order). Digested, checkpointed.
  bool follow_first_vehicle_ = false;
  std::vector<Vec2> client_observers_;               // SetClientObservers (authoritative, digested)
  std::vector<ObserverView> client_observer_views_;  // parallel to client_observers_
  // Invariants (check_observers): 1. client_observers_ holds at most
  // kClientObserversMax points, one view each; 2. tier_observers_ /
  // tier_views_ are observers_ then client_observers_ (with their views).
  std::vector<Vec2> tier_observers_;      // derived: observers_ then client_observers_
  std::vector<ObserverView> tier_views_;  // parallel to tier_observers_
  ImportanceField importance_;
  SpawnPipelineState spawn_;
  RouteTable routes_;
  std::vector<SpawnEvent> spawn_events_;
  std::vector<SpawnRank> spawn_order_;   // scratch: phase 4's Queued handles by importance
  std::vector<OrphanRecord> orphans_;    // sorted by id
  std::vector<EntityId> retiring_fifo_;  // front first
  std::vector<DespawnNotice> despawn_notices_;
  std::vector<std::uint32_t> to_move_;
  std::vector<std::uint32_t> ledger_actual_;  // scratch: background pedestrians per fragment
  std::vector<double> ledger_target_;         // per fragment, for the current target
  std::uint32_t ledger_target_for_ = UINT32_MAX;
  void refresh_ledger_target();
  void ledger_targets(std::vector<double>& out) const;  // per fragment, for pedestrian_target_
  // Background pedestrians per fragment; optionally each one's fragment by dense slot.
  void ledger_counts(std::vector<std::uint32_t>& out,
                     std::vector<std::uint32_t>* fragment_of_slot = nullptr) const;
  std::vector<std::uint32_t> fragment_of_slot_;  // scratch for trimming
  // Scratch for growth and trimming: fragments as a heap, largest gap or
  // surplus first; trimming's candidates grouped by fragment.
  std::vector<std::pair<double, std::uint32_t>> ledger_gaps_;
  std::vector<std::uint32_t> trim_plan_;    // per trim, its fragment
  std::vector<std::uint8_t> trim_touched_;  // per fragment: planned
  std::vector<std::uint64_t> trim_rows_;    // candidates of planned fragments: fragment, row
  std::vector<std::uint32_t> trim_next_;    // per fragment: its group's next candidate
  void grow_background(std::uint32_t n);
  void trim_background(std::uint32_t n);

  // Parallel parts (phase_executor.hpp). One MovePart per kRowsPerPart
  // pedestrians: what phase 6 would have done to shared state, queued in row
  // order and applied in part order after every part ran.
  struct alignas(64) MovePart {
    std::uint64_t sum_delta = 0;                 // wrapping change of ped_sum_
    std::vector<DespawnRequest> despawns;        // LaneDeadEnd, in row order
    std::vector<std::uint32_t> released_routes;  // route slots used up, in row order
    // Lane closures: rows waiting at a closed way on, rows that left a lane
    // end they waited at, and reroutes (all empty / 0 when nothing is closed).
    std::vector<EntityId> waits;
    std::vector<EntityId> departures;
    std::uint64_t reroutes = 0;
    std::uint32_t due_rows = 0;  // rows due this step (moved, waited or held at an anchor)
    std::vector<BorderPedestrian> crossings;  // district worlds: rows that entered another's lane
  };
  // Phase 6's rows [begin, end) also count phase 7's slice members and the
  // other rows' tiers into `slice` (TierPart below): neither the rows nor
  // their tiers and phases change between the two phases, and the rows are
  // read here anyway.
  struct TierPart;
  void move_pedestrian_rows(std::uint32_t begin, std::uint32_t end,
                            const std::uint8_t (&due)[kSimTierCount][PedestrianStore::kPhaseBytes],
                            const std::uint8_t (&in_slice)[64], double dt_s, MovePart& out,
                            TierPart& slice, std::uint32_t* slice_rows);
  void move_pedestrian_row(std::uint32_t row, double dt_s, MovePart& out);
  bool hop_to_next_lane(std::uint32_t row, const std::vector<LaneIndex>& next, std::uint64_t h,
                        LaneIndex steer, LaneIndex open_pick, double time_left_s, LaneIndex& lane,
                        double& s, MovePart& out);
  LaneIndex next_pedestrian_lane(std::uint32_t row, const std::vector<LaneIndex>& next,
                                 std::uint64_t h, LaneIndex steer, LaneIndex open_pick,
                                 MovePart& out);
  std::vector<MovePart> move_parts_;
  // Phase 7's parts: slice members and the other tiers per part (counted
  // by phase 6), where the part's members start in the slice, and the
  // digest sum's change.
  struct alignas(64) TierPart {
    std::uint32_t members = 0;
    std::uint32_t first = 0;
    std::uint32_t others[kSimTierCount] = {};
    std::uint64_t sum_delta = 0;
  };
  std::vector<TierPart> tier_parts_;
  // Phase 7's slice members as phase 6 found them: part p's rows, in row
  // order, from p * kRowsPerPart (each part has at most that many).
  std::vector<std::uint32_t> slice_rows_;
  // Phase 7's slice as phase 6 found it: per part its members and the other
  // rows' tiers (phase 7 adds where its members start and its digest terms),
  // and part p's member rows from rows + p * kRowsPerPart. Views of
  // tier_parts_ and slice_rows_, valid until the next step.
  struct TierSlice {
    std::span<TierPart> parts;
    const std::uint32_t* rows = nullptr;
  };
  // What phase 6 hands on: phase 7's slice, the digest terms of the rows it
  // moved, and how many rows were due.
  struct Moved {
    TierSlice tier_slice;
    std::uint64_t digest_terms = 0;
    std::uint32_t due_rows = 0;
  };
  // Phase 7's slice this step, by id phase (< 64): 1 for the phases it
  // resolves (no division per pedestrian).
  void tier_slice_phases(std::uint8_t (&in_slice)[64]) const;
  std::uint32_t lay_out_tier_slice(const TierSlice& slice, std::uint32_t (&others)[kSimTierCount]);
  void build_tier_slice(const TierSlice& slice, bool classify);
  std::uint64_t write_slice_tiers(const TierSlice& slice);
  InlineExecutor inline_executor_;
  PhaseExecutor* lent_executor_ = nullptr;  // the app's threads, if it lent some
  StepPhaseHook* phase_hook_ = nullptr;
  void phase_ended(StepPhase phase) {
    if (phase_hook_ != nullptr) phase_hook_->phase_end(phase);
  }
  PhaseExecutor& executor() {
    return lent_executor_ != nullptr ? *lent_executor_ : inline_executor_;
  }
};

}  // namespace bustle::core
