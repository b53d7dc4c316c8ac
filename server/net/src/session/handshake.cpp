// The connection's life: the handshake deadline and Hello, the idle timeout,
// and closing (an Error frame flushed within a bound, then the socket).
#include <spdlog/spdlog.h>

#include "bustle/net/client_text.hpp"
#include "bustle/net/encode.hpp"
#include "session.hpp"

namespace bustle::net {

namespace {

SharedBytes make_error_frame(wire::ErrorCode code, const std::string& message) {
  flatbuffers::FlatBufferBuilder fbb(256);
  encode_error(code, message, fbb);
  return finish_frame(fbb);
}

}  // namespace

Session::Session(Server::Impl& server, tcp::socket socket, std::uint32_t id)
    : server_(server),
      socket_(std::move(socket)),
      handshake_timer_(socket_.get_executor()),
      close_timer_(socket_.get_executor()),
      decoder_(proto::kClientFrameMaxBytes),
      id_(id) {
  asio::error_code ec;
  const auto ep = socket_.remote_endpoint(ec);
  address_ = ec ? "?" : ep.address().to_string();
  peer_ = ec ? "?" : address_ + ":" + std::to_string(ep.port());
  last_activity_ = std::chrono::steady_clock::now();
  rate_tokens_ = 2.0 * server_.options_.commands_per_second_max;
  rate_refilled_ = last_activity_;
  // Stats and QueryLeases ask for this grace: the tracker keeps that summary.
  tracker_.set_lease_grace_steps(server_.options_.lease_grace_steps);
}

void Session::start() {
  asio::error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);
  handshake_timer_.expires_after(std::chrono::milliseconds(server_.options_.handshake_timeout_ms));
  handshake_timer_.async_wait([self = shared_from_this()](const asio::error_code& e) {
    if (!e && self->phase_ == Phase::AwaitHello) {
      self->fail(
          wire::ErrorCode::HandshakeTimeout,
          "no Hello within " + std::to_string(self->server_.options_.handshake_timeout_ms) + " ms");
    }
  });
  read_more();
}

void Session::handle_hello(const wire::Hello& hello) {
  if (hello.protocol_version() != proto::kProtocolVersion) {
    std::string why = "server speaks protocol " + std::to_string(proto::kProtocolVersion) +
                      ", client sent " + std::to_string(hello.protocol_version());
    if (hello.protocol_version() < proto::kProtocolVersion) {
      why += hello.protocol_version() < 2
                 ? " (protocol 2 streams per-client interest, representation hints and "
                   "lane-relative motion; protocol 3 adds corpses to the stream: update the "
                   "client library)"
                 : " (protocol 3 adds corpses to the stream, a change field a protocol-2 "
                   "decoder refuses: update the client library)";
    }
    fail(wire::ErrorCode::ProtocolVersionMismatch, why);
    return;
  }
  const ServerOptions& opt = server_.options_;
  role_ = hello.role() == wire::Role::Operator ? Role::Operator : Role::Viewer;
  if (role_ == Role::Operator && !opt.token.empty()) {
    const std::string given = hello.token() != nullptr ? hello.token()->str() : std::string();
    if (given != opt.token) {
      fail(wire::ErrorCode::Unauthorized, "operator role requires a valid token");
      return;
    }
  }
  if (hello.client_name() != nullptr) {
    if (hello.client_name()->size() > kClientNameMaxBytes) {
      fail(wire::ErrorCode::MalformedFrame,
           "Hello.client_name: " + std::to_string(hello.client_name()->size()) +
               " bytes exceeds the " + std::to_string(kClientNameMaxBytes) + "-byte limit");
      return;
    }
    // Kept only for logs: printable and short whatever the client sent.
    name_ = client_text(hello.client_name()->string_view());
  }
  handshake_timer_.cancel();
  phase_ = Phase::Ready;
  arm_idle_timer();
  spdlog::info("client_joined: client {} ({}) {} joined as {}", id_, peer_, name_,
               role_ == Role::Operator ? "operator" : "viewer");
  joined_ = true;
  server_.counters().joined_by_role[role_ == Role::Operator ? 1 : 0].fetch_add(1);

  const std::uint64_t current = server_.latest_seen_ ? server_.latest_seen_->step : 0;
  flatbuffers::FlatBufferBuilder fbb(4096);
  encode_welcome(server_.welcome_, id_, role_, current, fbb);
  enqueue(finish_frame(fbb), Frame::Push);
}

void Session::arm_idle_timer() {
  const auto idle = std::chrono::milliseconds(server_.options_.idle_timeout_ms);
  idle_timer_.expires_at(last_activity_ + idle);
  idle_timer_.async_wait([self = shared_from_this(), idle](const asio::error_code& e) {
    if (e || self->phase_ != Phase::Ready) return;
    if (std::chrono::steady_clock::now() - self->last_activity_ >= idle) {
      self->fail(wire::ErrorCode::IdleTimeout,
                 "nothing received from this client and nothing written to it for " +
                     std::to_string(self->server_.options_.idle_timeout_ms) + " ms");
      return;
    }
    self->arm_idle_timer();
  });
}

// Sends an Error frame, then closes this connection only.
void Session::fail(wire::ErrorCode code, const std::string& message) {
  if (phase_ == Phase::Closing || phase_ == Phase::Closed) return;
  spdlog::info("client_disconnect: client {} ({}): closing: {}: {}", id_, peer_,
               wire::EnumNameErrorCode(code), message);
  leave_joined();
  count_disconnect(static_cast<std::size_t>(code));
  phase_ = Phase::Closing;
  handshake_timer_.cancel();
  overflow_timer_.cancel();
  idle_timer_.cancel();
  if (code == wire::ErrorCode::OutboundOverflow) drop_unsent();
  if (read_paused_) {
    // Drain (and discard) what the client still sends, so closing does not
    // reset the connection over unread input and lose the Error frame.
    read_paused_ = false;
    read_more();
  }
  // Bound the time a peer that never reads can hold the connection open.
  close_timer_.expires_after(std::chrono::seconds(1));
  close_timer_.async_wait([self = shared_from_this()](const asio::error_code& e) {
    if (!e) self->close_now();
  });
  enqueue(make_error_frame(code, message), Frame::Error);
}

void Session::close_now() {
  if (phase_ == Phase::Closed) return;
  phase_ = Phase::Closed;
  settle_baseline();  // a client that is gone owes nothing
  if (subscribed_) server_.subscriber_count().fetch_sub(1);
  subscribed_ = false;
  server_.interest_coverage().erase(id_);
  if (observers_announced_) {
    // Its observers stop counting for the tiers.
    tracker_.set_interest(ClientInterest{}, false);
    announce_observers();
  }
  handshake_timer_.cancel();
  close_timer_.cancel();
  overflow_timer_.cancel();
  idle_timer_.cancel();
  asio::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  leave_joined();
  server_.remove(id_, peak_out_bytes_);
}

// A closing or closed client no longer counts as joined (bustle_clients).
void Session::leave_joined() {
  if (joined_) server_.counters().joined_by_role[role_ == Role::Operator ? 1 : 0].fetch_sub(1);
  joined_ = false;
}

// One disconnect per connection, by the first reason it closed for.
void Session::count_disconnect(std::size_t reason) {
  if (disconnect_counted_) return;
  disconnect_counted_ = true;
  server_.counters().disconnects[reason].fetch_add(1, std::memory_order_relaxed);
}

// Closes a connection that was never started (no Error frame).
void Session::abort() {
  phase_ = Phase::Closed;
  asio::error_code ec;
  socket_.close(ec);
}

}  // namespace bustle::net
