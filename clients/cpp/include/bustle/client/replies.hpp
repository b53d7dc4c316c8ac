// Owned SDK copies of the server's answers (CommandResult and what it
// carries), decoded from verified wire tables. Portable: no transport here,
// so an engine that runs its own socket decodes replies with the same code
// as bustle::client_asio's Client.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bustle/client/ids.hpp"
#include "bustle/client/stream.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::client {

struct StatsInfo {
  std::uint64_t step = 0;
  std::uint64_t sim_time_us = 0;
  std::uint64_t digest = 0;
  std::uint32_t step_us = 0;
  bustle::wire::ClockMode clock_mode = bustle::wire::ClockMode::Realtime;
  bool paused = false;
  std::uint32_t pedestrians = 0;
  std::uint32_t pedestrian_target = 0;
  std::uint32_t entity_capacity = 0;
  std::uint32_t clients = 0;
  std::uint64_t spawned_total = 0;
  std::uint64_t despawned_total = 0;
  std::uint64_t commands_accepted = 0;
  std::uint64_t commands_rejected = 0;
  std::uint64_t dropped_steps = 0;
  bool recording = false;            // a session recording is being written
  bool recording_failed = false;     // the recording stopped after a write failure
  std::uint64_t recorded_ticks = 0;  // ticks committed to the recording
  std::uint32_t vehicles = 0;
  std::uint32_t vehicles_full = 0;       // per simulation tier
  std::uint32_t vehicles_simulated = 0;
  std::uint32_t vehicles_coarse = 0;
  std::uint32_t vehicles_moving = 0;     // advanced on the last step
  std::uint32_t vehicles_waiting = 0;    // WaitingAtSignal
  std::uint32_t vehicles_yielding = 0;
  std::uint32_t tier_transitions_deferred = 0;
  double hour = 0.0;  // time of day [0, 24)
  std::uint32_t time_scale = 0;  // game seconds per simulated second
  std::uint32_t residents = 0;         // community identities (active + dormant)
  std::uint32_t residents_active = 0;
  // Leases of the subscribed clients, summed over (client, entity) pairs.
  std::uint32_t leases_assigned = 0;    // the client holds a representation
  std::uint32_t leases_unassigned = 0;  // applied differs from the hint
  std::uint32_t leases_unassigned_past_grace = 0;
  std::vector<std::uint32_t> leases_past_grace_by_reason;  // by UnassignedReason (None = never reported)
  std::uint64_t leases_released_total = 0;
  std::uint64_t leases_preserved_total = 0;
  std::uint64_t lease_reports_total = 0;
  // Spawn handles on the representation axis (from leases, not simulated).
  std::uint32_t spawn_awaiting_representation = 0;
  std::uint64_t spawn_attached_total = 0;
  std::uint64_t spawn_ready_total = 0;
  std::uint32_t client_observers = 0;          // feeding the tier resolver
  std::uint32_t client_observers_dropped = 0;  // beyond the server's total cap
};
StatsInfo to_stats_info(const bustle::wire::Stats& stats);

// One state of a snapshot job (wire JobStatus).
// Writes (checkpoint, save, autosave): Queued -> Copied -> Committed | Failed.
// Restore: Queued -> Validated -> Applied | Failed. Load: Queued -> Validated
// -> SnapshotApplied -> ScheduleReconciled -> RepresentationRebuilt | Failed.
struct JobInfo {
  std::uint64_t job_id = 0;
  bustle::wire::JobKind kind = bustle::wire::JobKind::Checkpoint;
  bustle::wire::JobState state = bustle::wire::JobState::Queued;
  bool terminal = false;   // no further updates follow
  std::string name;        // snapshot name
  std::uint64_t step = 0;  // step captured (writes) or restored to (restore/load)
  std::string message;     // why it failed
  bool failed() const { return state == bustle::wire::JobState::Failed; }
  // Terminal and not Failed: Committed, Applied or RepresentationRebuilt.
  bool succeeded() const { return terminal && !failed(); }
};
JobInfo to_job_info(const bustle::wire::JobStatus& job);

// One row of ListSnapshots.
struct SnapshotEntry {
  std::string name;
  std::string kind;  // "checkpoint" | "save"
  std::string scenario_id;
  std::uint64_t step = 0;
  std::uint64_t sim_time_us = 0;
  std::uint64_t digest = 0;
  std::uint32_t pedestrians = 0;
  std::int64_t created_unix_ms = 0;
};
SnapshotEntry to_snapshot_entry(const bustle::wire::SnapshotInfo& info);

// One garage of QueryGarages (wire GarageInfo).
struct GarageReport {
  std::string id;
  std::vector<std::string> queued;  // request ids in dispatch order
  std::uint32_t dispatched = 0;     // requests that received a vehicle
  std::uint32_t managed = 0;        // vehicles now on the road from this garage
  std::uint32_t capacity = 0;
  std::uint64_t frame_index = 0;
  std::uint64_t next_vehicle_ordinal = 0;
  bustle::wire::DispatchGate last_gate = bustle::wire::DispatchGate::Dispatched;
  std::vector<std::uint64_t> gate_steps;  // steps per DispatchGate value
  std::uint64_t turnarounds = 0;
  std::uint64_t rejected_invalid = 0;
  std::uint64_t rejected_duplicate = 0;
  std::uint64_t rejected_queue_full = 0;
  std::uint64_t canceled = 0;
  std::uint32_t plan_total = 0;  // content plan (all garages)
  std::uint64_t plan_injected = 0;
};
GarageReport to_garage_report(const bustle::wire::GarageInfo& info);

// One signal of QuerySignals (wire SignalInfo).
struct SignalReport {
  std::string id;
  std::uint32_t lane = 0;  // lane index
  bustle::wire::SignalPhase phase = bustle::wire::SignalPhase::Open;
  std::uint64_t phase_elapsed_us = 0;
  std::uint64_t cycles = 0;
};
SignalReport to_signal_report(const bustle::wire::SignalInfo& info);

// Every axis of one vehicle (wire VehicleInfo).
struct VehicleReport {
  EntityId id;
  std::string vehicle_id;  // vehicle.<garage>.<ordinal:06>
  std::string garage;
  std::string request_id;
  std::string prototype;
  std::uint32_t route_index = 0;
  std::uint32_t lane = 0;  // lane index
  double s_m = 0.0;
  double alpha = 0.0;  // s_m / lane length
  double x_m = 0.0;
  double y_m = 0.0;
  double speed_mps = 0.0;
  bustle::wire::VehicleStrategyState strategy = bustle::wire::VehicleStrategyState::RouteFollow;
  ControlPolicy policy = ControlPolicy::RouteFollow;
  bustle::wire::PolicyReason reason = bustle::wire::PolicyReason::Clear;
  SimTier tier = SimTier::Full;
  EntityId leader;  // 0:0 when none
  std::uint64_t steps_advanced = 0;
  bool awaiting_turnaround = false;
  bool despawn_requested = false;
  bool has_leader() const { return !(leader == EntityId{}); }
};
VehicleReport to_vehicle_report(const bustle::wire::VehicleInfo& info);

// One zone of QueryZones (wire ZoneInfo); per-interval counts are of the last
// lifecycle interval.
struct ZoneReport {
  std::string id;
  std::uint32_t target = 0;
  std::uint32_t active = 0;
  std::uint32_t dormant = 0;
  std::uint32_t pending_spawn = 0;
  std::uint32_t pending_recycle = 0;
  std::uint32_t activated = 0;
  std::uint32_t recycled = 0;
  std::uint32_t deferred_by_quota = 0;  // held back by quotas (not failed)
  std::uint32_t rejected_by_capacity = 0;
  std::uint64_t activated_total = 0;
  std::uint64_t recycled_total = 0;
  std::uint32_t capacity = 0;
  std::uint32_t migrated_in = 0;            // dormant records handed over from other zones
  std::uint32_t deferred_by_migration = 0;  // held back by the migration budget (not failed)
  std::uint32_t handoffs_started = 0;       // active members offered to this zone
  std::uint32_t handoffs_accepted = 0;      // active members that arrived
  std::uint32_t handoffs_returned = 0;      // returned to their source zone
  std::uint32_t retiring = 0;               // members fading out (counted in active)
};
ZoneReport to_zone_report(const bustle::wire::ZoneInfo& info);

// One state of a spawn handle (wire SpawnStatus): Queued -> IdentityCreated ->
// Registered -> RepresentationRequested -> Attached -> ReadyForGameplay, or
// Failed / Canceled / TimedOut; exactly one terminal state. The simulation's
// part ends at RepresentationRequested; Attached comes from any client's
// lease Assigned for the entity (or ReportAttached), ReadyForGameplay one
// step later, Failed(EntityGone) if the entity leaves first.
struct SpawnStatusInfo {
  static constexpr std::uint32_t kNoLane = 4294967295u;
  std::uint64_t handle = 0;
  bustle::wire::SpawnState state = bustle::wire::SpawnState::Queued;
  bustle::wire::SpawnFailure failure = bustle::wire::SpawnFailure::None;
  bool terminal = false;
  EntityId entity;  // 0:0 until IdentityCreated
  std::string zone;  // empty: any zone
  std::uint32_t lane = kNoLane;
  std::uint8_t priority = 0;  // wire::PriorityClass
  std::uint64_t requested_step = 0;
  std::uint64_t state_step = 0;
  bool succeeded() const { return state == bustle::wire::SpawnState::ReadyForGameplay; }
};
SpawnStatusInfo to_spawn_status(const bustle::wire::SpawnStatus& status);

// Every axis of one entity (wire EntityInfo, QueryEntity). Names are ids
// from the scenario, empty when none.
struct EntityReport {
  EntityId id;
  bool alive = false;
  EntityKind kind = EntityKind::Pedestrian;
  bustle::wire::LifecycleState lifecycle = bustle::wire::LifecycleState::Gone;
  SimTier tier = SimTier::Full;
  RepresentationHint representation = RepresentationHint::None;
  std::uint8_t priority = 0;  // wire::PriorityClass
  bustle::wire::PedestrianOrigin origin = bustle::wire::PedestrianOrigin::Background;
  bool saveable = false;
  bool forced_full = false;
  std::string community;
  std::string zone;
  std::string work_point;
  std::int32_t work_slot = -1;
  std::int32_t lane = -1;
  double s_m = 0.0;
  double x_m = 0.0;
  double y_m = 0.0;
  double effective_distance_m = 0.0;
  std::uint64_t spawn_handle = 0;
  bustle::wire::SpawnState spawn_state = bustle::wire::SpawnState::Queued;
  std::uint8_t retiring_reason = 0;  // DespawnReason when Retiring
  std::uint64_t release_step = 0;
};
EntityReport to_entity_report(const bustle::wire::EntityInfo& info);

// One community of QueryPopulation (wire CommunityInfo).
struct CommunityReport {
  std::string id;
  std::uint32_t base_population = 0;
  std::uint32_t target = 0;  // at the current hour
  std::string zone;          // where its schedule puts it now
  std::uint32_t active = 0;
  std::uint32_t dormant = 0;
  bool saveable = false;
};

// QueryPopulation (wire PopulationInfo). Per-state and per-reason arrays are
// indexed by the wire enum values (SpawnState, DespawnReason, SimTier).
struct PopulationReport {
  double hour = 0.0;
  std::uint32_t time_scale = 0;
  std::uint32_t growth_quota = 0;
  std::uint32_t recycle_quota = 0;
  std::uint32_t interval_ms = 0;
  std::uint32_t migration_budget = 0;
  std::vector<CommunityReport> communities;
  std::uint32_t residents = 0;
  std::uint32_t residents_active = 0;
  std::uint32_t residents_retiring = 0;
  std::uint32_t background = 0;
  std::uint32_t spawned = 0;
  std::uint32_t pedestrian_target = 0;
  std::uint32_t handoffs_pending = 0;
  std::vector<std::uint32_t> spawn_live;    // live handles per SpawnState
  std::vector<std::uint64_t> spawn_totals;  // entries per SpawnState since start
  std::uint64_t spawn_requested = 0;
  std::uint32_t spawn_deferred_by_cap = 0;
  std::uint32_t spawn_deferred_by_capacity = 0;
  std::uint32_t spawn_deferred_by_zone = 0;
  std::uint32_t retiring = 0;
  std::uint64_t faded_total = 0;
  std::uint64_t fade_skipped_total = 0;
  std::vector<std::uint64_t> despawned_by_reason;
  std::vector<std::uint32_t> tiers;  // pedestrians per SimTier
  std::uint32_t tier_promoted = 0;
  std::uint32_t tier_demoted = 0;
  std::uint32_t tier_deferred = 0;
  std::uint32_t forced_full = 0;
  std::uint32_t forced_overflow = 0;
  std::uint64_t force_full_refused = 0;
  std::uint32_t ledger_fragments = 0;
  double ledger_deficit = 0.0;
  double ledger_surplus = 0.0;
  double ledger_max_deficit = 0.0;
};
PopulationReport to_population_report(const bustle::wire::PopulationInfo& info);

// QueryLeases (wire LeaseSummary): this client's leases against the server's
// hints. Per-hint arrays are indexed Actor, Instanced, Marker; per-reason by
// UnassignedReason (None: never reported).
struct LeaseSummaryReport {
  std::vector<std::uint32_t> requested;
  std::vector<std::uint32_t> applied;
  std::uint32_t waiting = 0;  // applied != requested
  std::uint32_t waiting_past_grace = 0;
  std::vector<std::uint32_t> past_grace_by_reason;
  std::uint32_t grace_steps = 0;
  std::uint64_t reports = 0;
  std::uint64_t entries = 0;
  std::uint64_t unknown_entries = 0;  // entries for entities this client does not receive
};
LeaseSummaryReport to_lease_summary(const bustle::wire::LeaseSummary& summary);

// A CommandResult. Rejected with reason RateLimited: over this client's
// command rate; nothing changed and the connection stays (retry later).
struct CommandReply {
  std::uint32_t request_id = 0;
  bustle::wire::CommandStatus status = bustle::wire::CommandStatus::Rejected;
  bustle::wire::RejectReason reason = bustle::wire::RejectReason::None;
  std::string message;
  std::uint64_t applied_step = 0;
  std::optional<StatsInfo> stats;  // present for QueryStats
  std::optional<JobInfo> job;      // present for snapshot commands and QueryJob
  // Present for ListSnapshots (possibly empty), in the server's order.
  std::optional<std::vector<SnapshotEntry>> snapshots;
  // Present (possibly empty) for QueryGarages / QuerySignals / QueryZones.
  std::optional<std::vector<GarageReport>> garages;
  std::optional<std::vector<SignalReport>> signals;
  std::optional<std::vector<ZoneReport>> zones;
  std::optional<VehicleReport> vehicle;  // present for an accepted QueryVehicle
  std::uint64_t handle = 0;  // SpawnPedestrian: the spawn handle (0: none)
  std::optional<EntityId> entity;  // CancelSpawn / DespawnEntity of an unregistered spawn: the id given back
  bustle::wire::BatchStatus batch = bustle::wire::BatchStatus::None;  // LifecycleBatch
  std::vector<std::uint64_t> handles;  // LifecycleBatch: one per Spawn op, in op order
  // QueryEntity: present also when rejected UnknownEntity (lifecycle Gone).
  std::optional<EntityReport> entity_info;
  std::optional<PopulationReport> population;  // QueryPopulation
  std::optional<SpawnStatusInfo> spawn;        // an accepted QuerySpawn
  std::optional<LeaseSummaryReport> leases;    // QueryLeases
  bool accepted() const { return status == bustle::wire::CommandStatus::Accepted; }
};
CommandReply to_command_reply(const bustle::wire::CommandResult& result);

}  // namespace bustle::client
