// Commands: parsed and checked here (role, rate, in-flight limit), queued for
// the sim thread, and answered in order; answers given by the network side
// itself count in flight like the sim thread's.
#include <spdlog/spdlog.h>

#include "bustle/net/client_text.hpp"
#include "bustle/net/command_parser.hpp"
#include "bustle/net/encode.hpp"
#include "session.hpp"

namespace bustle::net {

void Session::handle_command(const wire::Command& cmd) {
  if (!take_rate_token(cmd.request_id())) return;
  if (cmd.body_type() == wire::CommandBody::QueryLeases)
    return answer_lease_query(cmd.request_id());
  ParsedCommand parsed = parse_command(cmd, role_);
  if (!parsed.ok()) return reject(cmd.request_id(), parsed.reason, std::move(parsed.message));
  InboundCommand in;
  in.session_id = id_;
  in.request_id = cmd.request_id();
  in.role = role_;
  in.body = std::move(parsed.body);
  if (server_.options_.keep_wire_commands) in.wire.reset(cmd.UnPack());
  if (inflight_ >= server_.options_.inflight_commands_max) {
    return reject(cmd.request_id(), core::RejectReason::InboxFull,
                  "more than " + std::to_string(server_.options_.inflight_commands_max) +
                      " commands in flight for this client");
  }
  if (!server_.commands_.try_push(std::move(in))) {
    return reject(
        cmd.request_id(),
        server_.commands_.closed() ? core::RejectReason::ShuttingDown
                                   : core::RejectReason::InboxFull,
        server_.commands_.closed() ? "server is shutting down" : "server command queue is full");
  }
  ++inflight_;
}

// The per-client command rate (a token bucket): `commands_per_second_max`
// sustained, bursts up to twice that. Excess is answered RateLimited and
// the connection stays.
bool Session::take_rate_token(std::uint32_t request_id) {
  const double rate = server_.options_.commands_per_second_max;
  const auto now = std::chrono::steady_clock::now();
  rate_tokens_ =
      std::min(2.0 * rate,
               rate_tokens_ + rate * std::chrono::duration<double>(now - rate_refilled_).count());
  rate_refilled_ = now;
  if (rate_tokens_ >= 1.0) {
    rate_tokens_ -= 1.0;
    return true;
  }
  reject(request_id, core::RejectReason::RateLimited,
         "more than " + std::to_string(server_.options_.commands_per_second_max) +
             " commands per second from this client (bursts up to twice that)");
  return false;
}

// Answers the network side gives itself (not from the sim thread): at the
// latest step this side has seen; counted in flight like any answer.
OutboundResult Session::network_answer(std::uint32_t request_id, core::CommandStatus status) const {
  OutboundResult r;
  r.session_id = id_;
  r.request_id = request_id;
  r.status = status;
  r.applied_step = server_.latest_seen_ ? server_.latest_seen_->step : 0;
  return r;
}

void Session::send_network_answer(const OutboundResult& r) {
  ++inflight_;  // released when the answer is written
  send_result(r);
}

void Session::answer(std::uint32_t request_id) {
  send_network_answer(network_answer(request_id, core::CommandStatus::Accepted));
}

void Session::reject(std::uint32_t request_id, core::RejectReason reason, std::string message) {
  OutboundResult r = network_answer(request_id, core::CommandStatus::Rejected);
  r.reason = reason;
  r.message = std::move(message);
  send_network_answer(r);
}

// The answer to a command this session counted in flight (handle_command
// or reject): it stays in flight until its bytes are written.
void Session::send_result(const OutboundResult& r) {
  if (phase_ != Phase::Ready) {
    release_inflight();
    return;
  }
  NetCounters& c = server_.counters();
  if (r.status == core::CommandStatus::Accepted) {
    c.commands_accepted.fetch_add(1, std::memory_order_relaxed);
  } else {
    c.commands_rejected[static_cast<std::size_t>(r.reason) % c.commands_rejected.size()].fetch_add(
        1, std::memory_order_relaxed);
    spdlog::debug("command_rejected: client {} request {}: {}: {}", id_, r.request_id,
                  core::to_string(r.reason), client_text(r.message));
  }
  if (r.stats) {
    // Lease totals live here, on the network side: added to the sim
    // thread's answer as it is written.
    OutboundResult with_leases = r;
    server_.add_lease_totals(*with_leases.stats);
    encode_command_result(with_leases, fbb_);
    enqueue(finish_frame(fbb_), Frame::Answer);
    return;
  }
  encode_command_result(r, fbb_);
  enqueue(finish_frame(fbb_), Frame::Answer);
}

void Session::send_job_update(const JobInfo& j) {
  if (phase_ != Phase::Ready) return;
  encode_job_update(j, fbb_);
  enqueue(finish_frame(fbb_), Frame::Push);
}

void Session::send_spawn_update(const SpawnReport& s) {
  if (phase_ != Phase::Ready) return;
  encode_spawn_update(s, fbb_);
  enqueue(finish_frame(fbb_), Frame::Push);
}

}  // namespace bustle::net
