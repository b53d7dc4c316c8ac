// Commands that change the world, and their graded results.
//
// Commands enter a bounded inbox (World::submit) and are applied in arrival
// order at the start of the next step (phase 1). Every command gets exactly one
// CommandResult: the inbox rejects immediately when full; otherwise the result
// is produced when the command is applied. The arrival order is what a session
// recording stores, so it fully determines replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "bustle/core/entity_id.hpp"

namespace bustle::core {

// Sets the pedestrian population target; the world grows or shrinks towards
// it within the per-step spawn cap. [Limit: count <= entity_capacity]
struct SetPedestrianTarget {
  std::uint32_t count = 0;
};

// Despawns one entity with reason Requested. A stale or unknown id is rejected.
struct DespawnEntity {
  EntityId id;
};

// Offers a request to a garage queue; validated fully before anything changes.
struct GarageRequest {
  std::string garage;
  std::string request_id;
  std::string prototype;
  std::string lane;
  std::int32_t priority = 10;
};

// Removes a still-queued request (a dispatched one cannot be canceled).
struct CancelGarageRequest {
  std::string garage;
  std::string request_id;
};

// Long-lived intent of one vehicle: 0 RouteFollow, 1 LaneFollow, 2 Parked, 3 Manual.
struct SetVehicleStrategy {
  EntityId id;
  std::uint8_t strategy = 0;
};

struct ObserverPoint {
  double x_m = 0.0;
  double y_m = 0.0;
  double z_m = 0.0;          // height (importance: height difference)
  bool has_heading = false;  // view direction given (importance: behind the observer)
  double heading_rad = 0.0;
  friend bool operator==(const ObserverPoint&, const ObserverPoint&) = default;
};

// Replaces the observers that drive simulation tiers. [Limit: <= 64 points]
// With `follow` set (not null) the operator observer follows that entity
// instead: one observer at its position, moved at the start of every step
// (phase 2) from the positions the previous step left; `points` must then be
// empty. The entity must be alive and on a lane (a walking pedestrian or a
// vehicle). When it leaves (despawned, dormant) the observer stays fixed at
// its last position and the follow ends (World::followed()).
struct SetObservers {
  std::vector<ObserverPoint> points;
  EntityId follow{};
};

// The observers of the connected clients (Subscribe / UpdateInterest), as one
// set: the app submits it, recorded like any command, whenever the union of
// the clients' observers changes. Kept apart from SetObservers (scenario and
// operator); the tier resolver ranks by the nearest of both sets.
// [Limit: <= kClientObserversMax points]
inline constexpr std::size_t kClientObserversMax = 256;
struct SetClientObservers {
  std::vector<ObserverPoint> points;
};

// Time of day for the schedule coordinator. [Limit: 0 <= hour < 24]
struct SetHour {
  double hour = 6.0;
};

// Game seconds per simulated second. [Limit: 1..3600]
struct SetTimeScale {
  std::uint32_t scale = 1;
};

// Holds one entity (pedestrian or vehicle) in the Full tier regardless of
// distance and full_cap; refused once tiers.hard_full_cap entities are forced.
struct ForceFull {
  EntityId id;
  bool on = true;
};

// The admission mask (seed 001): holds one walking pedestrian's movement
// (masked) or lets it move again (not masked). A masked pedestrian keeps its
// lane position, route cursor and hop count; its sim tier is still resolved
// as before and its lifecycle follows the same rules as everyone's, so the
// mask only decides whether the movement phase advances it. Refused for
// vehicles, dormant residents and fading entities; at most kMaxAdmissionMasked
// pedestrians are masked at once.
struct SetAdmissionMask {
  EntityId id;
  bool masked = true;
};
inline constexpr std::uint32_t kMaxAdmissionMasked = 4096;

// Prevention (prevention.hpp): moves the response level to `level` (0 ..
// prevention.units_per_level size). Raising queues the units of each level
// gained; lowering cancels the queued units above it and despawns the active
// ones (DespawnReason::PreventionLowered).
struct SetPreventionLevel {
  std::uint32_t level = 0;
};

// A pedestrian death event (prevention.hpp): a walking, non-resident
// pedestrian stops and becomes a corpse until corpse cleanup removes it.
struct KillPedestrian {
  EntityId id;
};

// Lane closure (seed 000 §6): closes a lane (closed) or opens it again (not
// closed). Nobody enters a closed lane: a pedestrian or vehicle reaching the
// end of its lane takes an open successor instead or waits there; entities
// already on it walk or drive off; spawns avoid it. The lane is named by id
// (lane) and/or by index (lane_index, UINT32_MAX when not given); when
// both are given they must name the same lane. At most kMaxClosedLanes lanes
// are closed at once.
struct SetLaneClosed {
  std::string lane;
  std::uint32_t lane_index = UINT32_MAX;
  bool closed = true;
};
inline constexpr std::uint32_t kMaxClosedLanes = 1024;

// Asks for one pedestrian with a spawn handle (spawn_pipeline.hpp). Zone and
// lane are optional (empty: any sidewalk / any lane of the zone); the lane must
// be a pedestrian lane and, with a zone, one of the zone's lanes.
struct SpawnPedestrian {
  std::string zone;
  std::string lane;
  std::uint8_t priority = 1;     // PriorityClass: 0 story, 1 quest, 2 community, 3 background
  std::uint32_t timeout_ms = 0;  // 0: spawn.timeout_ms
  // Optional walk: lane ids, each a pedestrian successor of the one before;
  // the pedestrian starts on route[0] and afterwards wanders. [Limit: <= 256]
  std::vector<std::string> route{};
};

// Cancels a spawn that has no registered entity yet (Queued or
// IdentityCreated); the identity, if one was created, is released.
struct CancelSpawn {
  std::uint64_t handle = 0;
};

// (ReportAttached is not a world command: the representation stages of a
// spawn handle live outside the simulation; see spawn_pipeline.hpp.)

// Runtime lifecycle settings (start from scenario.population).
struct SetLifecycle {
  std::uint32_t growth_quota = 2;
  std::uint32_t recycle_quota = 2;
  std::uint32_t interval_ms = 250;
  std::uint32_t migration_budget = 4;
};

// One operation of a lifecycle batch.
struct LifecycleOp {
  enum class Kind : std::uint8_t { Spawn = 0, Despawn = 1 };
  Kind kind = Kind::Spawn;
  SpawnPedestrian spawn;  // Kind::Spawn
  EntityId id;            // Kind::Despawn
};

// Several lifecycle operations applied atomically: every operation is
// validated first and nothing changes unless all are valid. [Limit: <= 256 ops]
struct LifecycleBatch {
  std::vector<LifecycleOp> ops;
};

// A city split across district servers (issue 34; world_districts.cpp): one
// pedestrian crossing a border. It left the sender's last lane in the
// sender's step `sent_step` and enters `lane` (a lane of the receiving
// district) with its id unchanged.
struct BorderPedestrian {
  EntityId id;
  std::uint32_t lane = 0;    // lane index (every district loads the same lane graph)
  double time_left_s = 0.0;  // walking time left at the border, spent on `lane` on arrival
  std::uint32_t hops = 0;    // lanes entered so far: seeds its later route choices
  friend bool operator==(const BorderPedestrian&, const BorderPedestrian&) = default;
};

// A vehicle crossing a border: its whole row as the sender's step left it
// (on `lane`, a lane of the receiving district), adopted by the receiver with
// its id, VehicleId (garage and ordinal) and route unchanged. Its garage
// stays the one that dispatched it: the garage's district counts it as away
// until it comes back or its id goes home.
struct BorderVehicle {
  EntityId id;
  std::uint32_t garage = 0;  // scenario garage index
  std::uint64_t ordinal = 0;
  std::uint32_t prototype = 0;
  std::uint32_t route_index = 0;
  std::uint32_t lane = 0;
  double s_m = 0.0;
  double speed_mps = 0.0;
  std::uint8_t strategy = 0;  // VehicleStrategy
  std::uint8_t control_policy = 0;
  std::uint8_t reason = 0;  // PolicyReason
  std::uint8_t sim_tier = 0;
  EntityId leader;
  std::uint64_t steps_advanced = 0;
  std::uint64_t last_advance_step = 0;
  std::uint64_t waiting_since = 0;
  std::string request_id;
  friend bool operator==(const BorderVehicle&, const BorderVehicle&) = default;
};

// A vehicle of another district near this one, as that district's step left
// it: read (never written) by this district's next vehicle phase, for its
// leaders, merges and entrances across the border, then dropped.
struct VehicleGhost {
  EntityId id;
  std::uint32_t garage = 0;  // its route: the garage's
  std::uint32_t route_index = 0;
  std::uint32_t lane = 0;
  double s_m = 0.0;
  friend bool operator==(const VehicleGhost&, const VehicleGhost&) = default;
};

// A vehicle's id on its way home after the vehicle left the city away from
// its garage's district: the home counts one vehicle fewer away.
struct ReturnedVehicle {
  EntityId id;  // with the generation its home issues next, as in `returned`
  std::uint32_t garage = 0;
  friend bool operator==(const ReturnedVehicle&, const ReturnedVehicle&) = default;
};

// What one neighbouring district's step `sent_step` sent this district:
// applied at the receiver's step sent_step + 1, after the clients' commands
// of that step, in from_district order. A district server submits it when the
// neighbour's step end arrives, so the receiver's recording holds it like
// any command and the district replays alone. Never accepted from a client.
// [Limit: <= kBorderPedestriansMax pedestrians]
inline constexpr std::size_t kBorderPedestriansMax = 1u << 20;
// `returned`: ids going home (entity_id.hpp invariant 5), each with the
// generation its home issues next: released in a district that is not their
// home, passed on district by district (a shortest way over the map's
// borders) until their home queues them again.
// `vehicles` cross, `ghosts` are read for one step, `returned_vehicles` are
// ids going home like `returned` that were a vehicle's, `crossings` are the
// sender's crossing lanes with a pedestrian on them (the receiver's cars
// yield to them next step).
struct BorderArrivals {
  std::uint32_t from_district = 0;
  std::uint64_t sent_step = 0;
  std::vector<BorderPedestrian> pedestrians;
  std::vector<EntityId> returned;
  std::vector<BorderVehicle> vehicles;
  std::vector<VehicleGhost> ghosts;
  std::vector<ReturnedVehicle> returned_vehicles;
  std::vector<std::uint32_t> crossings;  // lane indices, ascending
};

using WorldCommand =
    std::variant<SetPedestrianTarget, DespawnEntity, GarageRequest, CancelGarageRequest,
                 SetVehicleStrategy, SetObservers, SetHour, SetTimeScale, ForceFull,
                 SpawnPedestrian, CancelSpawn, SetLifecycle, LifecycleBatch, SetClientObservers,
                 SetAdmissionMask, SetPreventionLevel, KillPedestrian, SetLaneClosed,
                 BorderArrivals>;

const char* command_name(const WorldCommand& c);

// Who asked: the session (client) id and that client's own request id. Client
// 0 is the server itself (e.g. a scripted start-up command).
struct CommandOrigin {
  std::uint32_t client_id = 0;
  std::uint32_t request_id = 0;
  friend bool operator==(const CommandOrigin&, const CommandOrigin&) = default;
};

struct CommandEnvelope {
  CommandOrigin origin;
  WorldCommand command;
};

enum class CommandStatus : std::uint8_t {
  Accepted = 0,  // applied at `step`
  Rejected = 1,  // nothing changed; see reason
};

enum class RejectReason : std::uint8_t {
  None = 0,
  InboxFull = 1,
  InvalidArgument = 2,
  UnknownEntity = 3,  // stale or never-issued EntityId
  NotAuthorized = 4,
  WrongClockMode = 5,
  UnknownCommand = 6,
  ShuttingDown = 7,
  NotFound = 8,        // no snapshot or job with that name or id
  StorageError = 9,    // the snapshot store failed; the message names the cause
  WorldReplaced = 10,  // the world was replaced (restore/load) before this command applied
  Duplicate = 11,      // a garage request id already queued or dispatched
  QueueFull = 12,      // the garage queue is at its depth
  InvariantFailure =
      13,  // a lifecycle batch broke an invariant after commit (a bug; reported, never silent)
  RateLimited = 14,  // over the client's command rate (network side); nothing changed
};

// Outcome of a lifecycle batch. PartiallyCommitted exists so a caller can tell
// it apart, but validate-then-commit means it is never produced.
enum class BatchStatus : std::uint8_t {
  None = 0,  // not a batch
  RejectedNoChange = 1,
  Committed = 2,
  PartiallyCommitted = 3,
  InvariantFailure = 4,
};
const char* to_string(BatchStatus s);

const char* to_string(CommandStatus s);
const char* to_string(RejectReason r);

struct CommandResult {
  CommandOrigin origin;
  CommandStatus status = CommandStatus::Rejected;
  RejectReason reason = RejectReason::None;
  std::uint64_t step = 0;    // the step whose phase 1 applied (or rejected) it
  std::string message;       // human-readable detail, empty when accepted
  std::uint64_t handle = 0;  // SpawnPedestrian: the spawn handle
  EntityId entity;  // CancelSpawn / DespawnEntity of an unregistered spawn: the id given back
  BatchStatus batch = BatchStatus::None;
  std::vector<std::uint64_t> handles;  // LifecycleBatch: one spawn handle per Spawn op, in op order
  std::optional<std::uint64_t> enqueue_ordinal;  // GarageRequest accepted: its EnqueueOrdinal
};

}  // namespace bustle::core
