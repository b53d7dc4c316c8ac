// Builders for every client->server message. Each returns one complete frame
// (4-byte little-endian length prefix + a "BCL1" ClientFrame) ready to send.
//
// Promises: every frame built here passes proto::verify_client_frame and is
// far below proto::kClientFrameMaxBytes as long as the strings given stay
// within the documented limits. Builders do not check role or clock mode;
// the server decides and answers with a graded CommandResult.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "bustle/client/ids.hpp"
#include "bustle/client/lease.hpp"
#include "bustle/client/stream.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::client {

using Frame = std::vector<std::uint8_t>;

// [Limit: client_name and token <= kMaxHelloStringBytes each; longer strings
//  are truncated so that the frame always fits the client frame cap.]
inline constexpr std::size_t kMaxHelloStringBytes = 4096;

struct HelloParams {
  std::string client_name = "bustle-cpp";
  std::string token;  // empty: no token sent
  bustle::wire::Role role = bustle::wire::Role::Viewer;
  // Overridable only so that tests can provoke a version mismatch.
  std::uint16_t protocol_version = bustle::proto::kProtocolVersion;
};

Frame build_hello(const HelloParams& params);

// Interest (protocol v2): where this client looks from and how much it can
// draw. The server validates every field (observers at most 16, radius in
// (0, 100000], budgets within their ranges, tolerance <= 1000) and rejects
// Subscribe / UpdateInterest InvalidArgument naming the field; the builders
// send what they are given, capped only so that the frame always fits.
struct InterestObserver {
  double x_m = 0.0;
  double y_m = 0.0;
  double z_m = 0.0;
  std::optional<double> heading_rad;  // 0 = +x, counter-clockwise; none: no view direction
  double radius_m = 150.0;            // area of interest; received entities stay until 1.1 x radius
  friend bool operator==(const InterestObserver&, const InterestObserver&) = default;
};
// Entities per representation this client can draw (the schema's defaults).
struct RepresentationBudgets {
  std::uint32_t actors = 256;
  std::uint32_t instances = 4096;
  std::uint32_t markers = 16384;
  friend constexpr bool operator==(const RepresentationBudgets&,
                                   const RepresentationBudgets&) = default;
};
// [Limit: the builders send at most kMaxInterestObservers observers so that
//  the frame passes the verifier's table budget; the server accepts 16.]
inline constexpr std::size_t kMaxInterestObservers = 1000;
struct SubscribeParams {
  std::vector<EntityKind> kinds = {};                 // empty: every kind
  std::vector<InterestObserver> observers = {};       // empty: the whole city
  std::optional<RepresentationBudgets> budgets = {};  // none: the server's defaults
  std::uint16_t motion_tolerance_mm = 10;             // 0: exact poses at every step
};
struct UpdateInterestParams {
  std::vector<InterestObserver> observers = {};
  std::optional<RepresentationBudgets> budgets = {};
};

// Both are answered by a CommandResult with `request_id`.
Frame build_subscribe(std::uint32_t request_id, const SubscribeParams& params = {});
Frame build_update_interest(std::uint32_t request_id, const UpdateInterestParams& params);

// Leases (lease.hpp): what this client applied, batched.
// [Limit: at most kLeaseEntriesMax leases per report; the builder sends the
//  first kLeaseEntriesMax.] request_id 0: the server does not answer.
Frame build_lease_report(std::uint32_t request_id, std::span<const Lease> leases);

// Command bodies. One struct per wire command so a CommandSpec says exactly
// what will be sent.
struct PauseCmd {};
struct ResumeCmd {};
struct StepCmd {
  std::uint32_t count = 1;  // [Limit: >= 1; the server rejects 0 as InvalidArgument]
};
struct QueryStatsCmd {
  // Steps the step timing covers: the last 1 ..= 1024 executed (0: all 1024).
  std::uint32_t step_time_window = 0;
};
struct SetPedestrianTargetCmd {
  std::uint32_t count = 0;
};
struct DespawnEntityCmd {
  EntityId id;
};

// Snapshot commands. The server checks names (1-64 characters of
// [A-Za-z0-9._-], not starting with "keyframe.") and answers InvalidArgument;
// the builder only truncates to kMaxCommandStringBytes so the frame fits.
// Checkpoint/Restore/Save/Load/DeleteSnapshot are operator commands;
// ListSnapshots and QueryJob are allowed for any role.
inline constexpr std::size_t kMaxCommandStringBytes = 4096;
struct CheckpointCmd {  // complete state: restoring continues exactly
  std::string name;
};
struct RestoreCmd {  // a checkpoint
  std::string name;
};
struct SaveCmd {  // persistent facts only
  std::string name;
};
struct LoadCmd {  // a save
  std::string name;
};
struct ListSnapshotsCmd {};
struct DeleteSnapshotCmd {
  std::string name;
};
struct QueryJobCmd {
  std::uint64_t job_id = 0;
};

// Vehicle commands. GarageRequest, CancelGarageRequest, SetVehicleStrategy and
// SetObservers are operator world commands (applied at the next step); the
// three queries are answered at once for any role. Strings are truncated to
// kMaxCommandStringBytes; the server judges them (InvalidArgument naming the
// field, Duplicate, QueueFull, NotFound).
struct GarageRequestCmd {
  std::string garage;
  std::string request_id;
  std::string prototype;
  std::string lane;            // must be the garage's entrance lane (lane id)
  std::int32_t priority = 10;  // higher first; equal priorities keep arrival order
};
struct CancelGarageRequestCmd {
  std::string garage;
  std::string request_id;
};
struct SetVehicleStrategyCmd {
  EntityId id;
  bustle::wire::VehicleStrategy strategy = bustle::wire::VehicleStrategy::RouteFollow;
};
struct ObserverPoint {
  float x_m = 0.0f;
  float y_m = 0.0f;
  friend constexpr bool operator==(const ObserverPoint&, const ObserverPoint&) = default;
};
// Importance inputs of one observer (DESIGN §3): its height and, optionally,
// where it looks (entities behind it count as farther).
struct ObserverView {
  double z_m = 0.0;
  bool has_heading = false;
  double heading_rad = 0.0;  // 0 = +x, counter-clockwise
  friend constexpr bool operator==(const ObserverView&, const ObserverView&) = default;
};
// [Limit: the server accepts at most 64 points (InvalidArgument beyond); the
//  builder sends at most kMaxObserverPoints points and kMaxObserverViews views
//  so that the frame always fits and passes the verifier's table budget.]
inline constexpr std::size_t kMaxObserverPoints = 4096;
inline constexpr std::size_t kMaxObserverViews = 1000;
struct SetObserversCmd {  // replaces every observer; empty: none
  std::vector<ObserverPoint> points;
  // Empty: no views sent (flat ground, no view direction). Otherwise one per
  // point; the server rejects any other count as InvalidArgument.
  std::vector<ObserverView> views = {};
  // Set (generation != 0): the observer follows this entity instead of
  // points (points must be empty).
  EntityId follow = {};
};
struct QueryGaragesCmd {};
struct QuerySignalsCmd {};
struct QueryVehicleCmd {
  EntityId id;
};

// Population commands. SetHour and SetTimeScale are operator world commands;
// QueryZones is answered at once for any role.
struct SetHourCmd {
  double hour = 0.0;  // [Limit: [0, 24); the server rejects others as InvalidArgument]
};
struct SetTimeScaleCmd {
  std::uint32_t scale = 1;  // game seconds per simulated second [Limit: 1..3600]
};
struct QueryZonesCmd {};
// Holds an entity in the Full tier (operator); refused at tiers.hard_full_cap.
struct ForceFullCmd {
  EntityId id;
  bool on = true;
};
// The admission mask (operator): a walking pedestrian's movement held
// (masked) or released; its tier and lifecycle are left as they are.
struct SetAdmissionMaskCmd {
  EntityId id;
  bool masked = true;
};
// Prevention (operator): the response level (raising queues response units,
// lowering cancels and despawns them), and a pedestrian death event.
struct SetPreventionLevelCmd {
  std::uint32_t level = 0;
};
struct KillPedestrianCmd {
  EntityId id;
};
// Lane closure (operator): close or open a lane, named by id and/or index
// (lane_index UINT32_MAX: not given). Nobody enters a closed lane.
struct SetLaneClosedCmd {
  std::string lane;
  std::uint32_t lane_index = UINT32_MAX;
  bool closed = true;  // false: OpenLane
};

// Spawn pipeline (DESIGN §3). SpawnPedestrian, CancelSpawn, SetLifecycle and
// LifecycleBatch are operator world commands. ReportAttached is not: it is
// the representation axis (a shorthand for a lease Assigned), any role may
// send it, and it is answered at once, without a step; the handle then
// reaches ReadyForGameplay at the next step. A subscribed client that
// reports leases (Client::report_leases) needs no ReportAttached at all. The
// three queries are answered at once for any role.
// [Limit: the server accepts routes of at most 256 lanes (InvalidArgument
//  beyond, "route: N lanes, ..."); the builder sends at most kMaxRouteLanes
//  lanes, each truncated to kMaxRouteLaneBytes, so that the frame of one
//  spawn always fits the client frame cap.]
inline constexpr std::size_t kMaxRouteLanes = 300;
inline constexpr std::size_t kMaxRouteLaneBytes = 1024;
struct SpawnPedestrianCmd {
  std::string zone;  // zone id; empty: any sidewalk
  std::string lane;  // pedestrian lane id; empty: any lane (of the zone)
  // Sent as given, so a test can send an unknown value (InvalidArgument).
  bustle::wire::PriorityClass priority = bustle::wire::PriorityClass::Quest;
  std::uint32_t timeout_ms = 0;  // 0: the scenario's spawn.timeout_ms
  // Optional walk: lane ids, each a pedestrian successor of the one before.
  // The pedestrian starts at the beginning of route[0] (lane must be empty or
  // route[0]; with a zone, route[0] must be one of its lanes), follows the
  // route, then wanders. Empty: not sent (wander from the start). The server
  // rejects a bad route InvalidArgument naming the entry ("route[2]: ...").
  std::vector<std::string> route = {};
};
struct CancelSpawnCmd {  // only before the entity is registered
  std::uint64_t handle = 0;
};
struct ReportAttachedCmd {  // this client holds an actor for the entity (RepresentationRequested ->
                            // Attached)
  EntityId id;
};
struct SetLifecycleCmd {  // runtime lifecycle settings (the schema's defaults)
  std::uint32_t growth_quota = 2;
  std::uint32_t recycle_quota = 2;
  std::uint32_t interval_ms = 250;
  std::uint32_t migration_budget = 4;
};
struct LifecycleOpSpec {
  bustle::wire::LifecycleOpKind kind = bustle::wire::LifecycleOpKind::Spawn;
  SpawnPedestrianCmd spawn = {};  // Spawn
  EntityId id = {};               // Despawn
  static LifecycleOpSpec spawn_op(SpawnPedestrianCmd s) {
    return LifecycleOpSpec{bustle::wire::LifecycleOpKind::Spawn, std::move(s), {}};
  }
  static LifecycleOpSpec despawn_op(EntityId e) {
    return LifecycleOpSpec{bustle::wire::LifecycleOpKind::Despawn, {}, e};
  }
};
// [Limit: the server applies at most 256 ops (InvalidArgument beyond, nothing
//  applied); the builder sends at most kMaxLifecycleOps so that the frame
//  always passes the verifier's table budget.]
inline constexpr std::size_t kMaxLifecycleOps = 500;
struct LifecycleBatchCmd {  // all ops validated, then all committed (or none)
  std::vector<LifecycleOpSpec> ops;
};
struct QueryEntityCmd {  // every axis of one entity
  EntityId id;
};
struct QueryPopulationCmd {};
struct QuerySpawnCmd {
  std::uint64_t handle = 0;
};
// This client's leases against the server's hints (any role, answered at
// once: CommandReply::leases).
struct QueryLeasesCmd {};

using CommandSpec = std::variant<
    PauseCmd, ResumeCmd, StepCmd, QueryStatsCmd, SetPedestrianTargetCmd, DespawnEntityCmd,
    CheckpointCmd, RestoreCmd, SaveCmd, LoadCmd, ListSnapshotsCmd, DeleteSnapshotCmd, QueryJobCmd,
    GarageRequestCmd, CancelGarageRequestCmd, SetVehicleStrategyCmd, SetObserversCmd,
    QueryGaragesCmd, QuerySignalsCmd, QueryVehicleCmd, SetHourCmd, SetTimeScaleCmd, QueryZonesCmd,
    ForceFullCmd, SpawnPedestrianCmd, CancelSpawnCmd, ReportAttachedCmd, SetLifecycleCmd,
    LifecycleBatchCmd, QueryEntityCmd, QueryPopulationCmd, QuerySpawnCmd, QueryLeasesCmd,
    SetAdmissionMaskCmd, SetPreventionLevelCmd, KillPedestrianCmd, SetLaneClosedCmd>;

// Short lowercase name of the command ("pause", "step", "checkpoint",
// "list_snapshots", "garage_request", "query_leases", ...), for logs.
const char* command_name(const CommandSpec& command);

// True for commands that change the world and are therefore answered when the
// sim applies them, at the start of the next step (under a manual clock only
// after a Step): SetPedestrianTarget, DespawnEntity, GarageRequest,
// CancelGarageRequest, SetVehicleStrategy, SetObservers, SetHour,
// SetTimeScale, ForceFull, SpawnPedestrian, CancelSpawn, ReportAttached,
// SetLifecycle, LifecycleBatch, SetAdmissionMask, SetPreventionLevel,
// KillPedestrian, CloseLane / OpenLane. Everything else is answered without
// waiting for a step.
bool is_world_command(const CommandSpec& command);

// The request id is echoed by the server in the CommandResult; the caller
// chooses it (Client uses a counter starting at 1).
Frame build_command(std::uint32_t request_id, const CommandSpec& command);

// The payload of a frame built above (the bytes after the length prefix).
// [Limit: frame.size() >= 4]
std::span<const std::uint8_t> frame_payload(const Frame& frame);

}  // namespace bustle::client
