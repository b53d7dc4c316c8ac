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
#include "bustle/client/replies.hpp"
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
  Result<CommandReply> subscribe(
      const SubscribeParams& params = {},
      std::chrono::milliseconds timeout = std::chrono::milliseconds(3000));
  // Changes observers and budgets of a subscribed client, like subscribe()
  // (no new baseline). Rejected when not subscribed.
  Result<CommandReply> update_interest(
      const UpdateInterestParams& params,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(3000));
  // Sends a LeaseReport and waits for its CommandResult (Rejected when not
  // subscribed). Lease reports change nothing in the simulation.
  Result<CommandReply> report_leases(
      std::span<const Lease> leases,
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
  Result<SpawnStatusInfo> next_spawn_update(std::uint64_t handle,
                                            std::chrono::milliseconds timeout);
  // The states of `handle` as they arrive, up to and including the first one
  // that is `until` or terminal, within `timeout` overall. On Timeout `value`
  // holds the states taken so far. (ReadyForGameplay needs some client to
  // hold the entity first: a lease Assigned from any subscribed client, or a
  // ReportAttached once the handle is RepresentationRequested.)
  Result<std::vector<SpawnStatusInfo>> wait_spawn(std::uint64_t handle,
                                                  bustle::wire::SpawnState until,
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
  Result<std::uint32_t> send_request(const char* name,
                                     const std::function<Frame(std::uint32_t)>& build);
  // send_request(), then waits for its result; Rejected when not accepted.
  Result<CommandReply> interest_request(const char* name,
                                        const std::function<Frame(std::uint32_t)>& build,
                                        std::chrono::milliseconds timeout);
  // Takes the oldest update in `buffer` whose key(update) == key, reading
  // (and stashing) frames until one arrives or `timeout` passes.
  template <class T, class Key>
  Result<T> next_buffered(std::deque<T>& buffer, Key key_of, std::uint64_t key,
                          const std::string& waiting_for, std::chrono::milliseconds timeout);

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
