// StreamSession: the connection-level decisions of an engine plugin that
// draws the stream in one world, kept here so that they are tested without
// an engine. The engine feeds it what its socket thread decoded, in order,
// and calls tick() once per frame; the engine-specific work (the camera,
// the socket, making backends, firing events) goes through SessionGlue.
//
// Per connection (states):
//   Idle --on_connecting()--> Connecting     nothing is sent: the server has
//                                             not welcomed this connection
//   Connecting/Idle --on_welcome()--> Welcomed
//   Welcomed --tick(), camera known--> Subscribed   Subscribe sent (never
//                                             without an observer, which would
//                                             ask for the whole city)
//   Subscribed --baseline Delta--> Streaming  Deltas before it are dropped
//   any --on_disconnected()--> Idle           what is drawn stays until the
//                                             next baseline replaces it
// UpdateInterest (paced by InterestPacer) and lease reports are sent only
// while Subscribed or Streaming, so on every connection Subscribe is the
// first message after Hello, even when a Disconnected event was lost (a new
// connection always starts with on_connecting() or on_welcome()).
//
// Backends: built (SessionGlue::make_backends) on the first Welcome and
// again only when a Welcome's archetype table differs from the one they
// were built for (same_representation); a reconnect to the same world keeps
// every pooled actor, instance component and loaded asset. Before a rebuild
// the layer is destroyed (every instance deactivated, every backend
// deinitialized), then SessionGlue::destroy_backends frees the engine
// objects, so nothing of the old table leaks.
//
// Not thread-safe: the engine's game thread drives it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bustle/client/engine_glue.hpp"
#include "bustle/client/log.hpp"
#include "bustle/client/messages.hpp"
#include "bustle/client/replies.hpp"
#include "bustle/client/representation.hpp"
#include "bustle/client/stream.hpp"

namespace bustle::client {

// How the engine process runs this world (Unreal's ENetMode, by meaning).
enum class NetMode : std::uint8_t { Standalone, Client, ListenServer, DedicatedServer };
// Whether a process in `mode` connects to Bustle and draws: a dedicated
// server renders nothing, so it neither connects nor spawns.
bool should_connect(NetMode mode);

// Whether backends built for `built_for` draw `next` as they are: the same
// archetype table (names in order; poses need no rebuild, the layer takes
// the lanes and step from set_world).
bool same_representation(const WelcomeInfo& built_for, const WelcomeInfo& next);

enum class SessionState : std::uint8_t { Idle, Connecting, Welcomed, Subscribed, Streaming };
const char* to_string(SessionState v);

enum class SessionMessage : std::uint8_t { Subscribe, UpdateInterest, LeaseReport };

enum class SessionEventKind : std::uint8_t {
  Connected,          // a Welcome arrived
  Disconnected,       // the connection ended (message says why)
  EntityRepresented,  // a backend draws the entity now (drawn_as), or another one than before
  EntityReleased,     // nothing draws it any more
};
struct SessionEvent {
  SessionEventKind kind = SessionEventKind::Connected;
  EntityId id;
  SlotId slot;
  RepresentationHint drawn_as = RepresentationHint::None;
  std::string message;
};

class SessionGlue {
 public:
  virtual ~SessionGlue() = default;
  // The local camera as an observer; nullopt while there is none.
  virtual std::optional<InterestObserver> observer() = 0;
  // Queues a complete frame (length prefix included) for the server.
  virtual void send(SessionMessage kind, Frame frame) = 0;
  // Makes the backends for `welcome` and installs them with layer.set_backend.
  virtual void make_backends(RepresentationLayer& layer, const WelcomeInfo& welcome) = 0;
  // Frees the engine objects of the backends make_backends made; they are
  // no longer installed in any layer when this is called.
  virtual void destroy_backends() = 0;
  // Connection and entity events (an engine's delegates).
  virtual void on_event(const SessionEvent& /*event*/) {}
};

struct SessionConfig {
  RepresentationConfig representation = {};
  InterestPacerConfig pacer = {};
  std::optional<RepresentationBudgets> budgets = {};  // none: the server's defaults
  std::uint16_t motion_tolerance_mm = 10;
  std::int64_t lease_interval_us = 250'000;  // lease reports at most this often
};

struct SessionCounters {
  std::uint64_t subscribes = 0;
  std::uint64_t interest_updates = 0;
  std::uint64_t lease_reports = 0;
  std::uint64_t backend_builds = 0;
  std::uint64_t deltas_applied = 0;
  std::uint64_t deltas_dropped = 0;  // before Subscribe or before its baseline
  std::uint64_t rejected_replies = 0;
};

class StreamSession final : private RepresentationObserver {
 public:
  // `glue` and `log` (may be null) must outlive the session.
  StreamSession(SessionConfig config, SessionGlue& glue, LogSink* log = nullptr);
  // Destroys the layer, then the backends (SessionGlue::destroy_backends).
  ~StreamSession() override;
  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;

  // Connection events, in the order they happened.
  void on_connecting();
  void on_welcome(const WelcomeInfo& welcome);
  void on_disconnected(std::string_view why);
  // nullopt: dropped (not subscribed on this connection, or before its baseline).
  std::optional<ApplySummary> on_delta(const Delta& delta, std::int64_t local_receive_us);
  void on_reply(const CommandReply& reply);

  // Once per frame: Subscribe or UpdateInterest when due, render, leases.
  void tick(std::int64_t local_now_us);

  // Ends the world's drawing now (the world goes away): layer and backends.
  void shut_down();

  SessionState state() const { return state_; }
  // The layer (null before the first Welcome and after shut_down()).
  RepresentationLayer* layer() { return layer_.get(); }
  const RepresentationLayer* layer() const { return layer_.get(); }
  const SessionCounters& counters() const { return counters_; }
  const SessionConfig& config() const { return config_; }

 private:
  void on_drawn(EntityId id, SlotId slot, RepresentationHint drawn_as) override;
  void subscribe(std::int64_t now_us);
  void update_interest(std::int64_t now_us);
  void report_leases(std::int64_t now_us);
  std::uint32_t next_request_id();

  SessionConfig config_;
  SessionGlue& glue_;
  LogSink* log_ = nullptr;
  std::unique_ptr<RepresentationLayer> layer_;
  std::optional<WelcomeInfo> built_for_;  // the Welcome the backends were made for
  InterestPacer pacer_;
  SessionState state_ = SessionState::Idle;
  std::uint32_t request_counter_ = 0;
  std::uint32_t subscribe_request_id_ = 0;
  std::int64_t last_lease_report_us_ = 0;
  SessionCounters counters_;
};

}  // namespace bustle::client
