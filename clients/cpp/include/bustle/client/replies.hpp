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

// Generated tables (flatc object API, proto/fbs/server.fbs): the SDK's
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
// The generated wire::JobStatusT (every field of the schema) plus helpers.
struct JobInfo : bustle::wire::JobStatusT {
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

// Every axis of one vehicle: the generated wire::VehicleInfoT (`id` and
// `leader` are the wire's EntityId structs; leader 0:0 when none) plus helpers
// in the SDK's types.
struct VehicleReport : bustle::wire::VehicleInfoT {
  EntityId entity() const { return EntityId::from_wire(id); }
  EntityId leader_entity() const { return EntityId::from_wire(leader); }
  bool has_leader() const { return !(leader_entity() == EntityId{}); }
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
// The generated wire::SpawnStatusT plus helpers: `entity` is 0:0 until
// IdentityCreated, `zone` empty for any zone, `lane` kNoLane (the schema's
// default) for any lane.
struct SpawnStatusInfo : bustle::wire::SpawnStatusT {
  static constexpr std::uint32_t kNoLane = 4294967295u;
  EntityId entity_id() const { return EntityId::from_wire(entity); }
  std::optional<std::uint32_t> lane_index() const {
    return lane == kNoLane ? std::nullopt : std::optional<std::uint32_t>(lane);
  }
  bool succeeded() const { return state == bustle::wire::SpawnState::ReadyForGameplay; }
};
SpawnStatusInfo to_spawn_status(const bustle::wire::SpawnStatus& status);

// Every axis of one entity (QueryEntity): the generated wire::EntityInfoT
// plus helpers. Names are ids from the scenario, empty when none;
// `work_slot` and `lane` are -1 (the schema's defaults) when none.
struct EntityReport : bustle::wire::EntityInfoT {
  EntityId entity_id() const { return EntityId::from_wire(id); }
  std::optional<std::uint32_t> lane_index() const {
    return lane < 0 ? std::nullopt : std::optional<std::uint32_t>(static_cast<std::uint32_t>(lane));
  }
  std::optional<std::uint32_t> work_slot_index() const {
    return work_slot < 0 ? std::nullopt
                         : std::optional<std::uint32_t>(static_cast<std::uint32_t>(work_slot));
  }
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
  std::uint64_t handle = 0;              // SpawnPedestrian: the spawn handle (0: none)
  std::optional<EntityId>
      entity;  // CancelSpawn / DespawnEntity of an unregistered spawn: the id given back
  bustle::wire::BatchStatus batch = bustle::wire::BatchStatus::None;  // LifecycleBatch
  std::vector<std::uint64_t> handles;  // LifecycleBatch: one per Spawn op, in op order
  // QueryEntity: present also when rejected UnknownEntity (lifecycle Gone).
  std::optional<EntityReport> entity_info;
  std::optional<PopulationReport> population;    // QueryPopulation
  std::optional<SpawnStatusInfo> spawn;          // an accepted QuerySpawn
  std::optional<LeaseSummaryReport> leases;      // QueryLeases
  std::optional<std::uint64_t> enqueue_ordinal;  // an accepted GarageRequest: its EnqueueOrdinal
  bool accepted() const { return status == bustle::wire::CommandStatus::Accepted; }
};
CommandReply to_command_reply(const bustle::wire::CommandResult& result);

}  // namespace bustle::client
