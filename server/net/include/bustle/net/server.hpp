// The Asio TCP server: accepts clients, runs the handshake, verifies frames,
// forwards commands to the sim thread and streams per-client deltas.
//
// Threading: everything in Server and its sessions runs on the thread(s) that
// call run(); the only entry points for other threads are publish(),
// deliver_result(), deliver_job_update(), deliver_spawn_update(),
// client_count() and stop(), which post to the io_context.
// The sim thread therefore never waits for a socket, and the network thread
// never touches the World (it only sees immutable PublishedFrames).
//
// Per connection, the protocol is a small state machine:
//
//   AwaitHello --Hello ok--> Ready --Subscribe--> Ready+subscribed
//       |  \--bad version / not Hello / bad token / deadline--> Closing
//       any state --malformed, oversize, unknown frame, overflow--> Closing
//   Closing: the Error frame is flushed (bounded by a timer), then the socket
//   is closed. Only that connection is affected.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "bustle/core/command.hpp"
#include "bustle/core/lane_graph.hpp"
#include "bustle/core/phase_executor.hpp"
#include "bustle/core/status.hpp"
#include "bustle/core/world.hpp"
#include "bustle/net/command_queue.hpp"
#include "bustle/net/published_frame.hpp"
#include "bustle/net/stream_tracker.hpp"

namespace bustle::net {

enum class ClockMode : std::uint8_t { Realtime = 0, Fast = 1, Manual = 2 };

// Per-client limits (docs/protocol.md, "Limits"). Everything the server queues for one
// client counts against one outbound budget, charged on every enqueue as the
// frame's bytes plus kQueuedFrameOverheadBytes of bookkeeping:
//   - over outbound_bytes_max (the soft cap): deltas are skipped and later
//     coalesced into one, the server stops reading that client's commands
//     (TCP pushes back), and after overflow_disconnect_ms still over the cap
//     the client is closed with OutboundOverflow;
//   - a non-delta frame that would take the backlog over the hard limit
//     (outbound_hard_max_bytes) closes the client with OutboundOverflow at
//     once and frees what was queued.
// A command stays in flight until its answer is written to the socket, so
// inflight_commands_max also bounds the answers waiting in the queue.
struct ServerOptions {
  std::string bind_address = "127.0.0.1";
  std::uint16_t port = 7777;  // 0 = ephemeral
  std::string token;          // empty = no token (loopback only)
  std::uint32_t handshake_timeout_ms = 5000;
  std::uint32_t max_clients = 64;                 // joined clients; refused connections never count
  std::size_t outbound_bytes_max = 8u << 20;      // per client soft cap (see above)
  std::uint32_t overflow_disconnect_ms = 10'000;  // over the soft cap this long -> closed
  std::uint32_t inflight_commands_max = 64;  // per client: commands whose answer is not yet written
  std::uint32_t commands_per_second_max = 200;  // per client, sustained; bursts up to twice that
  std::uint32_t clients_per_address_max = 64;   // connections from one address (joined or joining)
  std::uint32_t idle_timeout_ms =
      300'000;  // nothing received and nothing written this long -> closed
  std::uint32_t entries_per_step_max = 1024;  // per client: entities entering its stream per step
  std::uint32_t lease_grace_steps =
      30;  // a hint not applied this long counts as waiting past grace
  // Budgets of a client whose Subscribe names none (scaled by --quality).
  RepresentationBudgets default_budgets;
  // Threads that encode a published step's deltas for several clients at
  // once (--net-threads; lent by the app, which owns them; null or one
  // thread: the network thread encodes them one after the other). Every
  // client gets the same bytes whatever the count: a delta depends on its
  // own client's state and the shared frame only.
  core::PhaseExecutor* encode_threads = nullptr;
  // Keep each command as received in InboundCommand::wire (a gateway that
  // forwards commands; the server never needs it).
  bool keep_wire_commands = false;
};

// Lease reports carry at most this many entries.
inline constexpr std::uint32_t kLeaseEntriesMax = 4096;

// Charged per queued frame on top of its bytes (shared buffer, control block
// and queue slot), so many tiny frames cannot hide their real memory.
inline constexpr std::size_t kQueuedFrameOverheadBytes = 128;
// Hello.client_name longer than this is refused (MalformedFrame).
inline constexpr std::size_t kClientNameMaxBytes = 256;
// Connections answered ServerFull that may be closing at once; beyond it a
// refused connection is closed without an Error frame.
inline constexpr std::size_t kRefusedConnectionsMax = 256;
// A session whose backlog peaked at this size triggers an allocator trim when
// it ends.
inline constexpr std::size_t kTrimAfterSessionBytes = 1u << 20;

// The hard outbound limit: twice the soft cap, and at least the soft cap plus
// 1 MiB (room for one large answer).
inline std::size_t outbound_hard_max_bytes(const ServerOptions& o) {
  return o.outbound_bytes_max +
         (o.outbound_bytes_max > (1u << 20) ? o.outbound_bytes_max : std::size_t{1} << 20);
}

struct GarageGeometry {
  std::string id;
  std::uint32_t entrance_lane = 0;
  std::vector<std::uint32_t> route;
};

struct SignalGeometry {
  std::string id;
  std::uint32_t lane = 0;
  float stop_alpha = 0.0f;
  float yield_alpha = 0.0f;
};

// Immutable facts sent in every Welcome.
struct WelcomeInfo {
  std::string server_version;
  std::string scenario_id;
  std::uint32_t step_us = 0;
  ClockMode clock_mode = ClockMode::Realtime;
  std::vector<core::Lane> lanes;
  std::vector<GarageGeometry> garages;
  std::vector<SignalGeometry> signals;
  std::vector<core::LaneChain> chains;  // Welcome.chains: Delta.dots index these
  std::uint32_t dots_every_steps = 0;   // scenario pedestrians.dots_every_steps
  ArchetypeTable archetypes;            // Welcome.archetypes and the entity mapping
  StreamContext stream;                 // what every client's stream tracker needs
};

// The bind policy (DESIGN §6): a non-loopback address needs an operator
// token. Returns Ok when allowed, else the reason (InvalidArgument: not an
// address; FailedPrecondition: no token). Server::listen enforces it;
// applications call it first to refuse before any other side effect.
core::Status check_bind_policy(const ServerOptions& options);

// The Welcome facts of a world: lanes, garages, signals and lane chains.
WelcomeInfo make_welcome_info(const core::World& world, std::string server_version,
                              ClockMode clock_mode);
// The same from the scenario alone, for a process that holds no World (the
// gateway): `community_first` is each community's first resident index
// (core::Population::community_first, empty for a city without communities).
WelcomeInfo make_welcome_info(const core::Scenario& scenario, const core::LaneGraph& lanes,
                              std::span<const std::uint32_t> community_first,
                              std::string server_version, ClockMode clock_mode);

// QueryStats: the generated object-API type of the wire's Stats table, so a
// field added to proto/fbs/server.fbs is here (and packed, and decoded by
// the SDKs) without another copy. The sim driver fills it; the network side
// adds the lease totals (add_lease_totals) when it writes the answer.
using StatsSnapshot = wire::StatsT;

struct ZoneReport {
  std::string id;
  core::ZoneStatus status;
  std::uint32_t capacity = 0;
  std::vector<wire::WorkPointInfoT> work_points;  // in this zone, scenario order
};

// QueryGarages / QuerySignals / QueryVehicle answers: the generated
// object-API types of the wire's tables (filled by the sim driver, written by
// Pack), so a field added to the schema needs no copy here.
using GarageReport = wire::GarageInfoT;
using SignalReport = wire::SignalInfoT;
using VehicleReport = wire::VehicleInfoT;

// One spawn handle (wire SpawnStatus): the core's state plus the zone's id
// (empty for "any zone").
struct SpawnReport {
  core::SpawnHandleState handle;
  std::string zone;
};

// Every axis of one entity (wire EntityInfo): the core's report plus the ids
// its indices name (empty when none).
struct EntityInfoReport {
  core::EntityReport report;
  std::string community;
  std::string zone;
  std::string work_point;
  std::string last_portal;     // zone a resident left at its last migration ("" if none)
  std::string profession;      // residents only
  std::string schedule_phase;  // the community's entry at the current hour
  std::string activity;
};

// One community of QueryPopulation (generated wire type).
using CommunityReport = wire::CommunityInfoT;

// QueryPopulation: the core's counters; encode fills the generated
// wire::PopulationInfoT from them.
struct PopulationReport {
  double hour = 0.0;
  std::uint32_t time_scale = 1;
  core::LifecycleSettings settings;
  std::vector<CommunityReport> communities;
  std::uint32_t residents = 0;
  std::uint32_t residents_active = 0;
  std::uint32_t residents_retiring = 0;
  std::uint32_t background = 0;
  std::uint32_t spawned = 0;  // pedestrians that came from spawn handles
  std::uint32_t pedestrian_target = 0;
  std::uint32_t handoffs_pending = 0;
  std::array<std::uint32_t, core::kSpawnStateCount> spawn_live{};  // live handles per SpawnState
  core::SpawnCounters spawn;
  std::uint32_t retiring = 0;  // orphans fading
  std::uint64_t faded_total = 0;
  std::uint64_t fade_skipped_total = 0;
  std::array<std::uint64_t, core::kDespawnReasonCount> despawned_by_reason{};
  core::TierCounts tiers;  // pedestrians, last resolution
  std::uint64_t force_full_refused = 0;
  std::uint32_t admission_masked = 0;  // SetAdmissionMask
  // Lane closures (CloseLane / OpenLane): closed lane ids and indices, who
  // waits at one now, the counters.
  std::vector<std::string> closed_lanes;
  std::vector<std::uint32_t> closed_lane_indices;
  std::uint32_t lane_waiting_pedestrians = 0;
  std::uint32_t lane_waiting_vehicles = 0;
  core::LaneClosureCounters lane_closure;
  core::PreventionState prevention;   // response units and corpses
  std::vector<core::Vec2> observers;  // operator/scenario observers
  core::EntityId followed{};          // SetObservers.follow (null: none)
  bool follow_first_vehicle = false;  // scenario observer_follow, still waiting
  core::LedgerSummary ledger;
  // Representation budgets of spawned handles (server/app quality.hpp).
  std::string quality;
  std::uint32_t attached_in_use = 0;
  std::uint32_t attached_limit = 0;
  std::uint32_t unattached_in_use = 0;
  std::uint32_t unattached_limit = 0;
  std::uint64_t no_slot_total = 0;
};

// A snapshot job's state and one row of ListSnapshots: generated wire types
// (net does not depend on persist; the app converts).
using JobInfo = wire::JobStatusT;
using SnapshotEntry = wire::SnapshotInfoT;

// The answer to one InboundCommand, routed back to its session.
struct OutboundResult {
  std::uint32_t session_id = 0;
  std::uint32_t request_id = 0;
  core::CommandStatus status = core::CommandStatus::Rejected;
  core::RejectReason reason = core::RejectReason::None;
  std::string message;
  std::uint64_t applied_step = 0;
  std::optional<StatsSnapshot> stats;
  std::optional<JobInfo> job;
  std::optional<std::vector<SnapshotEntry>> snapshots;
  std::optional<std::vector<GarageReport>> garages;
  std::optional<std::vector<SignalReport>> signals;
  std::optional<VehicleReport> vehicle;
  std::optional<std::vector<ZoneReport>> zones;
  std::uint64_t handle = 0;  // SpawnPedestrian: the spawn handle (0: none)
  core::EntityId entity;  // CancelSpawn / DespawnEntity of an unregistered spawn: the id given back
  core::BatchStatus batch = core::BatchStatus::None;  // LifecycleBatch
  std::vector<std::uint64_t> handles;                 // LifecycleBatch: one per Spawn op
  std::optional<std::uint64_t> enqueue_ordinal;       // GarageRequest accepted
  std::optional<EntityInfoReport> entity_info;        // QueryEntity
  std::optional<PopulationReport> population;         // QueryPopulation
  std::optional<SpawnReport> spawn;                   // QuerySpawn
  std::optional<StreamTracker::LeaseSummary> leases;  // QueryLeases (answered by the network side)
  std::uint32_t lease_grace_steps = 0;
  // A whole answer from another server, written as it is instead of the
  // fields above (a gateway relaying a district's answer; its request_id
  // must already be this client's).
  std::shared_ptr<wire::CommandResultT> forwarded;
};

// Counters the network thread keeps for metrics (relaxed atomics: written
// by the network thread, read by the metrics endpoint at any time).
// Disconnect reasons are the wire ErrorCode values (0..kErrorCodeCount-1)
// plus the two ways a peer ends a connection without an Error frame.
inline constexpr std::size_t kErrorCodeCount = 13;
inline constexpr std::size_t kDisconnectPeerClosed = kErrorCodeCount;  // EOF or reset from the peer
inline constexpr std::size_t kDisconnectWriteError = kErrorCodeCount + 1;  // a write failed
inline constexpr std::size_t kDisconnectReasonCount = kErrorCodeCount + 2;
// The metric label of a disconnect reason ("server_full", "peer_closed", ...).
const char* disconnect_reason_name(std::size_t reason);

// Frames written, by what they are: deltas, command answers, pushes (Welcome,
// job and spawn updates), the Error frame that closes a connection.
enum class FrameKind : std::uint8_t { Delta = 0, Answer = 1, Push = 2, Error = 3 };
inline constexpr std::size_t kFrameKindCount = 4;

struct NetCounters {
  template <std::size_t N>
  using Counts = std::array<std::atomic<std::uint64_t>, N>;
  std::atomic<std::uint64_t> connections_accepted{0};
  std::atomic<std::uint64_t> bytes_sent{0};  // written to sockets
  Counts<kFrameKindCount> frames_sent{};     // written to sockets, per FrameKind
  std::atomic<std::uint64_t> deltas_coalesced{
      0};  // deltas skipped over the soft cap, sent later as one
  Counts<kDisconnectReasonCount> disconnects{};
  std::atomic<std::uint64_t> commands_accepted{0};  // answers sent to clients (sim or network side)
  Counts<16> commands_rejected{};                   // answers sent, per core::RejectReason
  std::array<std::atomic<std::uint32_t>, 2> joined_by_role{};  // 0 viewer, 1 operator
  std::atomic<bool> listening{false};
};

class Server {
 public:
  Server(ServerOptions options, WelcomeInfo welcome, CommandQueue& commands);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  struct ListenResult {
    // Ok, or why not: e.g. Unavailable "bind 127.0.0.1:7777: Address already in use".
    core::Status status;
    std::string address;     // bound address
    std::uint16_t port = 0;  // bound port (the ephemeral one when port was 0)
  };
  // Binds and listens. Call before run().
  ListenResult listen();

  // Runs the io_context on the calling thread until stop().
  void run();

  // Thread-safe. Makes `frame` the latest; sessions are notified once even if
  // several frames are published before the network thread gets to them.
  void publish(std::shared_ptr<const PublishedFrame> frame);
  // Thread-safe. Sends a CommandResult to the session, if it is still connected.
  void deliver_result(OutboundResult result);
  // Thread-safe. Pushes a JobUpdate to the session, if it is still connected.
  void deliver_job_update(std::uint32_t session_id, JobInfo job);
  // Thread-safe. Pushes a SpawnUpdate to the session, if it is still connected.
  void deliver_spawn_update(std::uint32_t session_id, SpawnReport spawn);
  // Thread-safe. Sends ServerShuttingDown to every client, closes, stops run().
  void stop();
  // Thread-safe. Calls fn on the network thread for every SIGINT, SIGTERM or
  // SIGHUP that arrives until stop() (fn decides what each one means).
  void on_signal(std::function<void(int)> fn);

  std::uint32_t client_count() const { return client_count_.load(); }
  // Thread-safe: sessions subscribed to the stream. With none, nobody reads a
  // frame's entities, so the sim thread publishes frames without them
  // (PublishedFrame::entities_built); a Subscribe that finds such a frame
  // wakes the sim thread through the command queue, which then publishes the
  // current step's frame in full before anything else.
  std::uint32_t subscriber_count() const { return subscriber_count_.load(); }
  // Thread-safe: which part of the city the subscribed sessions may read
  // (coverage.hpp). The sim thread builds every frame for its current(); a
  // session whose interest the latest frame does not cover waits for the
  // next frame, and wakes the sim thread through the command queue so that
  // a paused or manual clock republishes the current step for it.
  const CoverageRegistry& interest_coverage() const { return interest_coverage_; }
  // Thread-safe. After a world replacement (a frame with a new world_epoch):
  // the newest epoch the network thread has handed to its sessions, and how
  // many subscribed clients have not yet had their baseline of it written to
  // their socket (a client that disconnects owes nothing). A load is
  // RepresentationRebuilt once epoch_handed_out() reaches its epoch and
  // baselines_owed() is 0.
  std::uint64_t epoch_handed_out() const { return epoch_handed_out_.load(); }
  std::uint32_t baselines_owed() const { return baselines_owed_.load(); }
  // Thread-safe: what the network thread counted so far (metrics).
  const NetCounters& counters() const { return counters_; }

  class Impl;  // defined in server.cpp; public only so sessions can name it

 private:
  std::unique_ptr<Impl> impl_;
  std::atomic<std::uint32_t> client_count_{0};
  std::atomic<std::uint32_t> subscriber_count_{0};
  CoverageRegistry interest_coverage_;
  std::atomic<std::uint64_t> epoch_handed_out_{0};
  std::atomic<std::uint32_t> baselines_owed_{0};
  NetCounters counters_;
};

}  // namespace bustle::net
