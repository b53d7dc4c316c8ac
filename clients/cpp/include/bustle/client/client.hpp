// Client: a small blocking session over Connection for tools and tests.
//
// It performs the handshake (Hello -> Welcome or Error), subscribes, hands out
// Deltas one at a time, and runs commands: command() sends one Command with a
// fresh request id and waits for the CommandResult with that id, buffering
// every Delta that arrives meanwhile so next_delta() still sees them in order.
// World commands are answered when the sim applies them (the start of the
// next step); under a manual clock that is only after a Step, so such callers
// use send_command(), then Step, then wait_result().
//
// Snapshot jobs (checkpoint, save, restore, load): the CommandResult carries
// the job (id and first state); every later state arrives as a JobUpdate
// pushed to this client. JobUpdates are buffered like Deltas, whatever call
// is reading, and handed out per job by next_job_update() / wait_job(). A
// JobUpdate may arrive before the CommandResult that names its job (the
// server's persistence thread and sim thread answer independently); it waits
// in the buffer until asked for. Spawn handles (SpawnPedestrian) work the
// same way with SpawnUpdates: next_spawn_update() / wait_spawn().
//
// Invariants:
//   1. Request ids are unique per Client (a counter starting at 1).
//   2. Deltas, JobUpdates and SpawnUpdates reach the caller in the order the
//      server sent them (updates: per job / per handle), none dropped: if a
//      buffer is full, the reading call stops with BacklogFull instead.
//   3. After Closed, ServerError, ProtocolError or TransportError the
//      connection is closed; later calls return NotConnected.
//   4. A CommandResult for an outstanding request (sent, not yet taken by
//      wait_result(), not forgotten) is kept until wait_result() takes it; one
//      for any other id (e.g. after command() timed out) is counted in
//      stray_results() and dropped.
//   5. At most max_outstanding_commands requests are outstanding.
//
// Lifecycle: Disconnected --connect()--> Ready --subscribe()--> Streaming.
// connect() again restarts from Disconnected.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bustle/client/connection.hpp"
#include "bustle/client/messages.hpp"
#include "bustle/client/stream.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::client {

enum class ClientStatus : std::uint8_t {
  Ok,
  ConnectFailed,   // TCP connection could not be opened (message says why)
  Timeout,         // nothing expected arrived in time; the connection stays open
  Closed,          // the server closed the connection
  ServerError,     // the server sent an Error frame (see server_error) and closes
  ProtocolError,   // bad frame or unexpected message; the connection was closed
  TransportError,  // socket error or send timeout; the connection was closed
  BacklogFull,     // too many Deltas buffered while waiting for a CommandResult
  NotConnected,    // no handshaken connection
  UnknownRequest,  // wait_result() for a request id that is not outstanding
  Rejected,        // subscribe()/update_interest(): the server rejected it (value: the reply)
};
const char* to_string(ClientStatus s);

// The Error a server sends before it closes: e.g. ProtocolVersionMismatch (a
// v1 client), IdleTimeout (nothing read or sent for the idle timeout),
// TooManyConnections (this address holds the most connections allowed).
struct ServerErrorInfo {
  bustle::wire::ErrorCode code = bustle::wire::ErrorCode::Unknown;
  std::string message;
};

struct Status {
  ClientStatus status = ClientStatus::NotConnected;
  std::string message;                          // a sentence for humans
  std::optional<ServerErrorInfo> server_error;  // set with ServerError
  bool ok() const { return status == ClientStatus::Ok; }
};

template <class T>
struct Result : Status {
  T value{};
};

// Owned copies of the server's answers, so they outlive the read buffer
// (the Welcome and Delta types are in stream.hpp).

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
  bustle::wire::EntityKind kind = bustle::wire::EntityKind::Pedestrian;
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
  bool accepted() const { return status == bustle::wire::CommandStatus::Accepted; }
};
CommandReply to_command_reply(const bustle::wire::CommandResult& result);

struct ClientOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 7777;
  std::string token;  // empty: none sent
  std::string client_name = "bustle-cpp";
  bustle::wire::Role role = bustle::wire::Role::Viewer;
  std::chrono::milliseconds connect_timeout{3000};    // TCP connect
  std::chrono::milliseconds handshake_timeout{3000};  // Hello -> Welcome
  std::chrono::milliseconds send_timeout{3000};
  // [Limit: >= 1] Deltas kept while command() waits for its result.
  std::size_t max_buffered_deltas = 4096;
  // [Limit: >= 1] Requests sent but whose result was not taken yet.
  std::size_t max_outstanding_commands = 256;
  // [Limit: >= 1] JobUpdates kept until next_job_update()/wait_job() take them.
  std::size_t max_buffered_job_updates = 1024;
  // [Limit: >= 1] SpawnUpdates kept until next_spawn_update()/wait_spawn() take them.
  std::size_t max_buffered_spawn_updates = 4096;
};

class Client {
 public:
  explicit Client(ClientOptions options);

  // Connects and performs the handshake. Ok: value holds the Welcome.
  // ServerError: the server answered Hello with an Error (e.g. version
  // mismatch, unauthorized). A Welcome whose protocol_version differs from
  // ours is a ProtocolError.
  Result<WelcomeInfo> connect();

  // Sends Subscribe with a fresh request id and waits up to `timeout` for its
  // CommandResult, buffering Deltas that arrive meanwhile (next_delta() hands
  // them out). Ok: accepted; the first Delta after it is a baseline.
  // Rejected: the server refused (value holds the reply, message names the
  // reason and field); the previous subscription, if any, is unchanged.
  Result<CommandReply> subscribe(const SubscribeParams& params = {},
                                 std::chrono::milliseconds timeout = std::chrono::milliseconds(3000));
  // Changes observers and budgets of a subscribed client, like subscribe()
  // (no new baseline). Rejected when not subscribed.
  Result<CommandReply> update_interest(const UpdateInterestParams& params,
                                       std::chrono::milliseconds timeout = std::chrono::milliseconds(3000));
  // Sends a LeaseReport and waits for its CommandResult (Rejected when not
  // subscribed). Lease reports change nothing in the simulation.
  Result<CommandReply> report_leases(std::span<const Lease> leases,
                                     std::chrono::milliseconds timeout = std::chrono::milliseconds(3000));

  // The next Delta (buffered ones first), decoded, waiting up to `timeout`.
  // A Delta that does not decode (e.g. a malformed motion vector) is a
  // ProtocolError naming what is wrong. CommandResults nobody waits for are
  // dropped (stray_results()); JobUpdates are buffered (BacklogFull when that
  // buffer is full).
  Result<Delta> next_delta(std::chrono::milliseconds timeout);

  // Sends the command with a fresh request id and waits up to `timeout` for
  // its CommandResult. Ok means a result arrived: check value.accepted().
  // On Timeout the request is forgotten (a late result counts as stray).
  Result<CommandReply> command(const CommandSpec& spec, std::chrono::milliseconds timeout);

  // Sends the command without waiting. Ok: value is its request id, which
  // stays outstanding until wait_result() returns its result or forget().
  // BacklogFull when max_outstanding_commands requests are outstanding.
  Result<std::uint32_t> send_command(const CommandSpec& spec);

  // Waits up to `timeout` for the result of an outstanding request, buffering
  // Deltas and keeping results of other outstanding requests meanwhile.
  // Timeout keeps the request outstanding. An id that is not outstanding
  // (never sent, already taken, or forgotten) returns UnknownRequest.
  Result<CommandReply> wait_result(std::uint32_t request_id, std::chrono::milliseconds timeout);

  // Stops tracking a request; its result, if it comes, counts as stray.
  void forget(std::uint32_t request_id);

  // The next JobUpdate of `job_id` (the oldest buffered one first), waiting up
  // to `timeout` and buffering Deltas, results of outstanding requests and
  // other jobs' updates meanwhile. Taken updates leave the buffer.
  Result<JobInfo> next_job_update(std::uint64_t job_id, std::chrono::milliseconds timeout);

  // The states of `job_id` as they arrive, up to and including the terminal
  // one, within `timeout` overall. On Timeout (or any failure) `value` holds
  // the states taken so far; they are consumed either way. The job's first
  // state is in the CommandResult (CommandReply::job), not repeated here.
  Result<std::vector<JobInfo>> wait_job(std::uint64_t job_id, std::chrono::milliseconds timeout);

  // Drops the buffered JobUpdates of `job_id`; returns how many there were.
  std::size_t discard_job_updates(std::uint64_t job_id);

  // Spawn handles work like jobs: the CommandResult of SpawnPedestrian (or
  // LifecycleBatch) names the handle, and every state change arrives as a
  // SpawnUpdate pushed to this client, buffered whatever call is reading.
  // The next SpawnUpdate of `handle` (oldest first), waiting up to `timeout`.
  Result<SpawnStatusInfo> next_spawn_update(std::uint64_t handle, std::chrono::milliseconds timeout);
  // The states of `handle` as they arrive, up to and including the first one
  // that is `until` or terminal, within `timeout` overall. On Timeout `value`
  // holds the states taken so far. (ReadyForGameplay needs some client to
  // hold the entity first: a lease Assigned from any subscribed client, or a
  // ReportAttached once the handle is RepresentationRequested.)
  Result<std::vector<SpawnStatusInfo>> wait_spawn(std::uint64_t handle, bustle::wire::SpawnState until,
                                                  std::chrono::milliseconds timeout);
  // Drops the buffered SpawnUpdates of `handle`; returns how many there were.
  std::size_t discard_spawn_updates(std::uint64_t handle);

  void close();
  bool connected() const { return handshaken_ && connection_.is_open(); }
  const WelcomeInfo& welcome() const { return welcome_; }
  const ClientOptions& options() const { return options_; }
  std::size_t buffered_deltas() const { return buffered_.size(); }
  std::size_t buffered_job_updates() const { return job_updates_.size(); }
  std::size_t buffered_spawn_updates() const { return spawn_updates_.size(); }
  std::uint64_t stray_results() const { return stray_results_; }
  std::size_t outstanding_commands() const { return outstanding_.size(); }
  std::uint32_t last_request_id() const { return next_request_id_ - 1; }
  Connection& connection() { return connection_; }

 private:
  // Reads one frame and classifies transport/protocol failures.
  Status receive(std::chrono::milliseconds timeout, ReceiveResult& out);
  Status fail(ClientStatus status, std::string message);
  // Stores the result of an outstanding request; true if it was `wanted`.
  bool take_result(const bustle::wire::CommandResult& result, std::uint32_t wanted);
  // BacklogFull (as a Status) if reading another frame could overflow a
  // buffer: Deltas unless `delta_wanted`, JobUpdates always. Ok otherwise.
  Status check_room(bool delta_wanted, const char* waiting_for);
  // Buffers a Delta/JobUpdate/SpawnUpdate or stores a CommandResult (for
  // `wanted`); any other message is a ProtocolError. `what` names the
  // caller's wait.
  Status stash(const ReceiveResult& frame, std::uint32_t wanted, const char* what);
  // Decodes a Delta frame; a ProtocolError (connection closed) when it does not decode.
  Status decode(const ReceiveResult& frame, Delta& out);
  // Sends the frame build(fresh request id) and tracks the request as outstanding.
  Result<std::uint32_t> send_request(const char* name, const std::function<Frame(std::uint32_t)>& build);
  // send_request(), then waits for its result; Rejected when not accepted.
  Result<CommandReply> interest_request(const char* name, const std::function<Frame(std::uint32_t)>& build,
                                        std::chrono::milliseconds timeout);
  // Takes the oldest update in `buffer` whose key(update) == key, reading
  // (and stashing) frames until one arrives or `timeout` passes.
  template <class T, class Key>
  Result<T> next_buffered(std::deque<T>& buffer, Key key_of, std::uint64_t key, const std::string& waiting_for,
                          std::chrono::milliseconds timeout);

  struct Pending {
    const char* name = "";
    std::optional<CommandReply> reply;  // set once the result arrived
  };

  ClientOptions options_;
  Connection connection_;
  bool handshaken_ = false;
  WelcomeInfo welcome_;
  std::deque<Delta> buffered_;
  std::deque<JobInfo> job_updates_;               // in arrival order, every job
  std::deque<SpawnStatusInfo> spawn_updates_;     // in arrival order, every handle
  std::map<std::uint32_t, Pending> outstanding_;  // by request id
  std::uint32_t next_request_id_ = 1;
  std::uint64_t stray_results_ = 0;
};

}  // namespace bustle::client
