// The blocking Client over Connection: handshake, subscribe, commands and
// their results, and the Deltas, jobs and spawn updates kept meanwhile
// (client.hpp).
#include "bustle/client/client.hpp"

#include <cassert>
#include <functional>

#include "wire_util.hpp"

namespace bustle::client {

namespace wire = bustle::wire;
using Clock = std::chrono::steady_clock;
using detail::str;
using detail::to_vector;

namespace {

std::chrono::milliseconds remaining(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? left : std::chrono::milliseconds(0);
}

template <class T>
Result<T> with(Status status) {
  Result<T> r;
  static_cast<Status&>(r) = std::move(status);
  return r;
}

// Takes updates from next(time left) until done(update), within `timeout`
// overall. On any failure `value` holds the updates taken so far (they are
// consumed either way). Messages: "<subject> <finished> <state>" or
// "<subject> <unfinished> within T ms (last state: ...)".
template <class T, class Next, class Done, class StateName>
Result<std::vector<T>> collect_until(Next next, Done done, StateName state_name,
                                     const std::string& subject, const std::string& unfinished,
                                     const char* finished, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  Result<std::vector<T>> r;
  for (;;) {
    auto u = next(remaining(deadline));
    if (!u.ok()) {
      static_cast<Status&>(r) = std::move(u);
      if (r.status == ClientStatus::Timeout) {
        r.message = subject + " " + unfinished + " within " + std::to_string(timeout.count()) +
                    " ms (last state: " +
                    (r.value.empty() ? std::string("none received")
                                     : std::string(state_name(r.value.back().state))) +
                    ")";
      }
      return r;
    }
    const bool stop = done(u.value);
    r.value.push_back(std::move(u.value));
    if (stop) {
      r.status = ClientStatus::Ok;
      r.message = subject + " " + finished + " " + state_name(r.value.back().state);
      return r;
    }
  }
}

// Removes every buffered update whose key_of(update) == key; returns how many.
template <class T, class Key>
std::size_t discard_matching(std::deque<T>& buffer, Key key_of, std::uint64_t key) {
  const auto before = buffer.size();
  std::erase_if(buffer, [&](const T& u) { return key_of(u) == key; });
  return before - buffer.size();
}

}  // namespace

const char* to_string(ClientStatus s) {
  switch (s) {
    case ClientStatus::Ok:
      return "ok";
    case ClientStatus::ConnectFailed:
      return "connect_failed";
    case ClientStatus::Timeout:
      return "timeout";
    case ClientStatus::Closed:
      return "closed";
    case ClientStatus::ServerError:
      return "server_error";
    case ClientStatus::ProtocolError:
      return "protocol_error";
    case ClientStatus::TransportError:
      return "transport_error";
    case ClientStatus::BacklogFull:
      return "backlog_full";
    case ClientStatus::NotConnected:
      return "not_connected";
    case ClientStatus::UnknownRequest:
      return "unknown_request";
    case ClientStatus::Rejected:
      return "rejected";
  }
  return "?";
}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  assert(options_.max_buffered_deltas >= 1);
  assert(options_.max_buffered_job_updates >= 1);
}

void Client::close() {
  connection_.close();
  handshaken_ = false;
  outstanding_.clear();
}

bool Client::take_result(const wire::CommandResult& result, std::uint32_t wanted) {
  const auto it = outstanding_.find(result.request_id());
  if (it == outstanding_.end() || it->second.reply.has_value()) {
    ++stray_results_;
    return false;
  }
  it->second.reply = to_command_reply(result);
  return result.request_id() == wanted;
}

void Client::forget(std::uint32_t request_id) {
  outstanding_.erase(request_id);
}

Status Client::fail(ClientStatus status, std::string message) {
  assert(status != ClientStatus::Ok);
  // These leave the stream intact; everything else ends the session.
  if (status != ClientStatus::Timeout && status != ClientStatus::BacklogFull &&
      status != ClientStatus::UnknownRequest) {
    close();
  }
  Status s;
  s.status = status;
  s.message = std::move(message);
  return s;
}

Status Client::receive(std::chrono::milliseconds timeout, ReceiveResult& out) {
  out = connection_.read_frame(timeout);
  switch (out.status) {
    case ReceiveStatus::Frame:
      break;
    case ReceiveStatus::Timeout:
      return fail(ClientStatus::Timeout, out.message);
    case ReceiveStatus::Eof:
      return fail(ClientStatus::Closed, out.message);
    case ReceiveStatus::NotConnected:
      return fail(ClientStatus::NotConnected, out.message);
    case ReceiveStatus::FrameTooLarge:
    case ReceiveStatus::EmptyFrame:
    case ReceiveStatus::Malformed:
      return fail(ClientStatus::ProtocolError, out.message);
    case ReceiveStatus::Error:
      return fail(ClientStatus::TransportError, out.message);
  }
  assert(out.frame != nullptr);
  if (const auto* err = out.frame->message_as_Error()) {
    // Copy before fail() closes the connection; the frame views its buffer.
    ServerErrorInfo info{err->code(), str(err->message())};
    Status s = fail(
        ClientStatus::ServerError,
        std::string("server error ") + wire::EnumNameErrorCode(info.code) + ": " + info.message);
    s.server_error = std::move(info);
    return s;
  }
  Status ok;
  ok.status = ClientStatus::Ok;
  return ok;
}

Result<WelcomeInfo> Client::connect() {
  close();
  buffered_.clear();
  job_updates_.clear();
  spawn_updates_.clear();
  welcome_ = WelcomeInfo{};
  const ConnectResult c =
      connection_.connect(options_.host, options_.port, options_.connect_timeout);
  if (!c.ok()) return with<WelcomeInfo>(fail(ClientStatus::ConnectFailed, c.message));

  HelloParams hello;
  hello.client_name = options_.client_name;
  hello.token = options_.token;
  hello.role = options_.role;
  const SendResult sent = connection_.send(build_hello(hello), options_.send_timeout);
  if (!sent.ok()) return with<WelcomeInfo>(fail(ClientStatus::TransportError, sent.message));

  ReceiveResult frame;
  Status s = receive(options_.handshake_timeout, frame);
  if (s.status == ClientStatus::Timeout) {
    close();  // a half-done handshake is not worth keeping
    s.message = "no Welcome within " + std::to_string(options_.handshake_timeout.count()) + " ms";
    return with<WelcomeInfo>(std::move(s));
  }
  if (!s.ok()) return with<WelcomeInfo>(std::move(s));
  const auto* w = frame.frame->message_as_Welcome();
  if (w == nullptr) {
    return with<WelcomeInfo>(fail(ClientStatus::ProtocolError,
                                  std::string("expected Welcome or Error after Hello, got ") +
                                      wire::EnumNameServerMessage(frame.frame->message_type())));
  }
  if (w->protocol_version() != bustle::proto::kProtocolVersion) {
    return with<WelcomeInfo>(fail(ClientStatus::ProtocolError,
                                  "server speaks protocol " +
                                      std::to_string(w->protocol_version()) + ", this client " +
                                      std::to_string(bustle::proto::kProtocolVersion)));
  }
  WelcomeInfo info = to_welcome_info(*w);
  welcome_ = info;
  handshaken_ = true;
  Result<WelcomeInfo> r;
  r.status = ClientStatus::Ok;
  r.message = "connected to " + connection_.peer() + " as " + wire::EnumNameRole(info.role);
  r.value = std::move(info);
  return r;
}

Result<CommandReply> Client::interest_request(const char* name,
                                              const std::function<Frame(std::uint32_t)>& build,
                                              std::chrono::milliseconds timeout) {
  const auto sent = send_request(name, build);
  if (!sent.ok()) return with<CommandReply>(sent);
  auto r = wait_result(sent.value, timeout);
  if (!r.ok()) {
    forget(sent.value);
    return r;
  }
  if (!r.value.accepted()) {
    r.status = ClientStatus::Rejected;
    r.message = std::string(name) + " rejected (" + wire::EnumNameRejectReason(r.value.reason) +
                ")" + (r.value.message.empty() ? "" : ": " + r.value.message);
  }
  return r;
}

Result<CommandReply> Client::subscribe(const SubscribeParams& params,
                                       std::chrono::milliseconds timeout) {
  return interest_request(
      "subscribe", [&](std::uint32_t id) { return build_subscribe(id, params); }, timeout);
}

Result<CommandReply> Client::update_interest(const UpdateInterestParams& params,
                                             std::chrono::milliseconds timeout) {
  return interest_request(
      "update_interest", [&](std::uint32_t id) { return build_update_interest(id, params); },
      timeout);
}

Result<CommandReply> Client::report_leases(std::span<const Lease> leases,
                                           std::chrono::milliseconds timeout) {
  return interest_request(
      "report_leases", [&](std::uint32_t id) { return build_lease_report(id, leases); }, timeout);
}

Status Client::decode(const ReceiveResult& frame, Delta& out) {
  if (std::string error = decode_delta(*frame.frame->message_as_Delta(), out); !error.empty()) {
    return fail(ClientStatus::ProtocolError, "undecodable Delta: " + error);
  }
  Status ok;
  ok.status = ClientStatus::Ok;
  return ok;
}

Result<Delta> Client::next_delta(std::chrono::milliseconds timeout) {
  if (!buffered_.empty()) {
    Result<Delta> r;
    r.status = ClientStatus::Ok;
    r.value = std::move(buffered_.front());
    buffered_.pop_front();
    return r;
  }
  if (!connected()) return with<Delta>(fail(ClientStatus::NotConnected, "not connected"));
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (Status room = check_room(true, "a Delta"); !room.ok()) {
      return with<Delta>(std::move(room));
    }
    ReceiveResult frame;
    Status s = receive(remaining(deadline), frame);
    if (!s.ok()) return with<Delta>(std::move(s));
    if (frame.frame->message_type() == wire::ServerMessage::Delta) {
      Result<Delta> r;
      static_cast<Status&>(r) = decode(frame, r.value);
      return r;
    }
    if (Status st = stash(frame, 0, "a Delta"); !st.ok()) return with<Delta>(std::move(st));
  }
}

Status Client::check_room(bool delta_wanted, const char* waiting_for) {
  // Stop reading (rather than read and drop) once a buffer is full, so every
  // Delta and JobUpdate stays deliverable.
  if (!delta_wanted && buffered_.size() >= options_.max_buffered_deltas) {
    return fail(ClientStatus::BacklogFull, std::to_string(buffered_.size()) +
                                               " Deltas buffered while waiting for " + waiting_for +
                                               "; read them with next_delta()");
  }
  if (job_updates_.size() >= options_.max_buffered_job_updates) {
    return fail(ClientStatus::BacklogFull,
                std::to_string(job_updates_.size()) + " JobUpdates buffered while waiting for " +
                    waiting_for + "; take them with next_job_update() or discard_job_updates()");
  }
  if (spawn_updates_.size() >= options_.max_buffered_spawn_updates) {
    return fail(ClientStatus::BacklogFull,
                std::to_string(spawn_updates_.size()) +
                    " SpawnUpdates buffered while waiting for " + waiting_for +
                    "; take them with next_spawn_update() or discard_spawn_updates()");
  }
  Status ok;
  ok.status = ClientStatus::Ok;
  return ok;
}

Status Client::stash(const ReceiveResult& frame, std::uint32_t wanted, const char* what) {
  switch (frame.frame->message_type()) {
    case wire::ServerMessage::Delta: {
      Delta d;
      if (Status st = decode(frame, d); !st.ok()) return st;
      buffered_.push_back(std::move(d));
      break;
    }
    case wire::ServerMessage::CommandResult:
      take_result(*frame.frame->message_as_CommandResult(), wanted);
      break;
    case wire::ServerMessage::JobUpdate: {
      const auto* job = frame.frame->message_as_JobUpdate()->job();
      if (job == nullptr) {
        return fail(ClientStatus::ProtocolError, "JobUpdate without a job");
      }
      job_updates_.push_back(to_job_info(*job));
      break;
    }
    case wire::ServerMessage::SpawnUpdate: {
      const auto* spawn = frame.frame->message_as_SpawnUpdate()->spawn();
      if (spawn == nullptr) {
        return fail(ClientStatus::ProtocolError, "SpawnUpdate without a spawn status");
      }
      spawn_updates_.push_back(to_spawn_status(*spawn));
      break;
    }
    default:
      return fail(ClientStatus::ProtocolError,
                  std::string("unexpected ") +
                      wire::EnumNameServerMessage(frame.frame->message_type()) +
                      " frame while waiting for " + what);
  }
  Status ok;
  ok.status = ClientStatus::Ok;
  return ok;
}

Result<std::uint32_t> Client::send_request(const char* name,
                                           const std::function<Frame(std::uint32_t)>& build) {
  if (!connected()) return with<std::uint32_t>(fail(ClientStatus::NotConnected, "not connected"));
  if (outstanding_.size() >= options_.max_outstanding_commands) {
    return with<std::uint32_t>(fail(
        ClientStatus::BacklogFull,
        std::to_string(outstanding_.size()) + " commands outstanding; take their results first"));
  }
  const std::uint32_t request_id = next_request_id_++;
  const SendResult sent = connection_.send(build(request_id), options_.send_timeout);
  if (!sent.ok()) return with<std::uint32_t>(fail(ClientStatus::TransportError, sent.message));
  outstanding_.emplace(request_id, Pending{name, std::nullopt});
  Result<std::uint32_t> r;
  r.status = ClientStatus::Ok;
  r.value = request_id;
  return r;
}

Result<std::uint32_t> Client::send_command(const CommandSpec& spec) {
  return send_request(command_name(spec),
                      [&](std::uint32_t id) { return build_command(id, spec); });
}

Result<CommandReply> Client::wait_result(std::uint32_t request_id,
                                         std::chrono::milliseconds timeout) {
  const auto it = outstanding_.find(request_id);
  if (it == outstanding_.end()) {
    return with<CommandReply>(
        fail(ClientStatus::UnknownRequest,
             "request " + std::to_string(request_id) + " is not outstanding"));
  }
  const char* name = it->second.name;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (const auto found = outstanding_.find(request_id);
        found != outstanding_.end() && found->second.reply.has_value()) {
      Result<CommandReply> r;
      r.status = ClientStatus::Ok;
      r.value = std::move(*found->second.reply);
      outstanding_.erase(found);
      r.message = std::string(name) + " " + wire::EnumNameCommandStatus(r.value.status) +
                  " at step " + std::to_string(r.value.applied_step);
      return r;
    }
    if (!connected()) return with<CommandReply>(fail(ClientStatus::NotConnected, "not connected"));
    const std::string waiting_for =
        std::string(name) + " (request " + std::to_string(request_id) + ")";
    if (Status room = check_room(false, waiting_for.c_str()); !room.ok()) {
      return with<CommandReply>(std::move(room));
    }
    ReceiveResult frame;
    Status s = receive(remaining(deadline), frame);
    if (s.status == ClientStatus::Timeout) {
      s.message =
          "no result for " + waiting_for + " within " + std::to_string(timeout.count()) + " ms";
    }
    if (!s.ok()) return with<CommandReply>(std::move(s));
    // A CommandResult is stored; the loop head returns it if it was ours.
    if (Status st = stash(frame, request_id, "a CommandResult"); !st.ok()) {
      return with<CommandReply>(std::move(st));
    }
  }
}

template <class T, class Key>
Result<T> Client::next_buffered(std::deque<T>& buffer, Key key_of, std::uint64_t key,
                                const std::string& waiting_for, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    for (auto it = buffer.begin(); it != buffer.end(); ++it) {
      if (key_of(*it) != key) continue;
      Result<T> r;
      r.status = ClientStatus::Ok;
      r.value = std::move(*it);
      buffer.erase(it);
      return r;
    }
    if (!connected()) return with<T>(fail(ClientStatus::NotConnected, "not connected"));
    if (Status room = check_room(false, waiting_for.c_str()); !room.ok()) {
      return with<T>(std::move(room));
    }
    ReceiveResult frame;
    Status s = receive(remaining(deadline), frame);
    if (s.status == ClientStatus::Timeout) {
      s.message = "no " + waiting_for + " within " + std::to_string(timeout.count()) + " ms";
    }
    if (!s.ok()) return with<T>(std::move(s));
    if (Status st = stash(frame, 0, waiting_for.c_str()); !st.ok()) {
      return with<T>(std::move(st));
    }
  }
}

Result<JobInfo> Client::next_job_update(std::uint64_t job_id, std::chrono::milliseconds timeout) {
  auto r = next_buffered(
      job_updates_, [](const JobInfo& j) { return j.job_id; }, job_id,
      "update of job " + std::to_string(job_id), timeout);
  if (r.ok()) {
    r.message =
        std::string("job ") + std::to_string(job_id) + " " + wire::EnumNameJobState(r.value.state);
  }
  return r;
}

Result<SpawnStatusInfo> Client::next_spawn_update(std::uint64_t handle,
                                                  std::chrono::milliseconds timeout) {
  auto r = next_buffered(
      spawn_updates_, [](const SpawnStatusInfo& s) { return s.handle; }, handle,
      "update of spawn handle " + std::to_string(handle), timeout);
  if (r.ok()) {
    r.message = std::string("spawn handle ") + std::to_string(handle) + " " +
                wire::EnumNameSpawnState(r.value.state);
  }
  return r;
}

Result<std::vector<SpawnStatusInfo>> Client::wait_spawn(std::uint64_t handle,
                                                        wire::SpawnState until,
                                                        std::chrono::milliseconds timeout) {
  return collect_until<SpawnStatusInfo>(
      [&](std::chrono::milliseconds left) { return next_spawn_update(handle, left); },
      [&](const SpawnStatusInfo& s) { return s.terminal || s.state == until; },
      [](wire::SpawnState s) { return wire::EnumNameSpawnState(s); },
      "spawn handle " + std::to_string(handle),
      std::string("did not reach ") + wire::EnumNameSpawnState(until), "reached", timeout);
}

std::size_t Client::discard_spawn_updates(std::uint64_t handle) {
  return discard_matching(
      spawn_updates_, [](const SpawnStatusInfo& s) { return s.handle; }, handle);
}

Result<std::vector<JobInfo>> Client::wait_job(std::uint64_t job_id,
                                              std::chrono::milliseconds timeout) {
  return collect_until<JobInfo>(
      [&](std::chrono::milliseconds left) { return next_job_update(job_id, left); },
      [](const JobInfo& j) { return j.terminal; },
      [](wire::JobState s) { return wire::EnumNameJobState(s); }, "job " + std::to_string(job_id),
      "did not finish", "ended", timeout);
}

std::size_t Client::discard_job_updates(std::uint64_t job_id) {
  return discard_matching(
      job_updates_, [](const JobInfo& j) { return j.job_id; }, job_id);
}

Result<CommandReply> Client::command(const CommandSpec& spec, std::chrono::milliseconds timeout) {
  const auto sent = send_command(spec);
  if (!sent.ok()) return with<CommandReply>(sent);
  auto r = wait_result(sent.value, timeout);
  if (!r.ok()) forget(sent.value);
  return r;
}

}  // namespace bustle::client
