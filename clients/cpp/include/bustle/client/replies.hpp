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

// Generated tables (flatc object API, proto/schema/server.fbs): the SDK's
// reply types below are the schema's own *T types, so every field the schema
// has is decoded (UnPack) and nothing is copied by hand. Field names, types
// and comments: see the schema. Vectors the server left out decode empty.

// QueryStats (wire Stats): counts, clock, leases and step timing.
using StatsInfo = bustle::wire::StatsT;
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

// One row of ListSnapshots (wire SnapshotInfo).
using SnapshotEntry = bustle::wire::SnapshotInfoT;
SnapshotEntry to_snapshot_entry(const bustle::wire::SnapshotInfo& info);

// One garage of QueryGarages (wire GarageInfo).
using GarageReport = bustle::wire::GarageInfoT;
GarageReport to_garage_report(const bustle::wire::GarageInfo& info);

// One signal of QuerySignals (wire SignalInfo).
using SignalReport = bustle::wire::SignalInfoT;
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
using ZoneReport = bustle::wire::ZoneInfoT;
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
  bustle::wire::PriorityClass priority = bustle::wire::PriorityClass::Story;
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
  bustle::wire::PriorityClass priority = bustle::wire::PriorityClass::Story;
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
  bustle::wire::DespawnReason retiring_reason = bustle::wire::DespawnReason::OutOfRange;  // when Retiring
  std::uint64_t release_step = 0;
};
EntityReport to_entity_report(const bustle::wire::EntityInfo& info);

// One community of QueryPopulation (wire CommunityInfo).
using CommunityReport = bustle::wire::CommunityInfoT;

// QueryPopulation (wire PopulationInfo). Per-state and per-reason arrays are
// indexed by the wire enum values (SpawnState, DespawnReason, SimTier);
// communities are held by std::unique_ptr (object API).
using PopulationReport = bustle::wire::PopulationInfoT;
PopulationReport to_population_report(const bustle::wire::PopulationInfo& info);

// QueryLeases (wire LeaseSummary): this client's leases against the server's
// hints. Per-hint arrays are indexed Actor, Instanced, Marker; per-reason by
// UnassignedReason (None: never reported).
using LeaseSummaryReport = bustle::wire::LeaseSummaryT;
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
