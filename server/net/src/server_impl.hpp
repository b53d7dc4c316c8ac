// Server::Impl: the network thread's state behind bustle::net::Server (the
// acceptor, the sessions, the latest published frame and its spatial index).
// Private to the library: the sessions (session/) and server.cpp share it.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <csignal>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "bustle/net/server.hpp"
#include "bustle/proto/framing.hpp"

namespace bustle::net {

using asio::ip::tcp;
using Bytes = std::vector<std::uint8_t>;
using SharedBytes = std::shared_ptr<const Bytes>;

// A finished builder as one length-prefixed frame, shared by every queue
// that sends it.
inline SharedBytes finish_frame(const flatbuffers::FlatBufferBuilder& fbb) {
  return std::make_shared<const Bytes>(proto::make_frame(fbb));
}

class Session;

class Server::Impl {
 public:
  Impl(Server& owner, ServerOptions options, WelcomeInfo welcome, CommandQueue& commands)
      : owner_(owner),
        options_(std::move(options)),
        welcome_(std::move(welcome)),
        commands_(commands),
        acceptor_(io_),
        signals_(io_, SIGINT, SIGTERM, SIGHUP),
        stop_timer_(io_) {}

  ListenResult listen();
  void start_accept();
  // Every SIGINT/SIGTERM/SIGHUP goes to signal_fn_ until stop().
  void wait_signal() {
    signals_.async_wait([this](const asio::error_code& e, int sig) {
      if (e) return;
      if (signal_fn_) signal_fn_(sig);
      if (!stopping_) wait_signal();
    });
  }
  void publish(std::shared_ptr<const PublishedFrame> frame);
  // Every session's delta of `frame`: encoded on options_.encode_threads
  // when there are several, queued in session order.
  void deliver_frame(const std::vector<std::shared_ptr<Session>>& sessions,
                     const std::shared_ptr<const PublishedFrame>& frame);
  void deliver_result(OutboundResult result);
  void deliver_job_update(std::uint32_t session_id, JobInfo job);
  void deliver_spawn_update(std::uint32_t session_id, SpawnReport spawn);
  template <class F>
  void post_to_session(std::uint32_t session_id, F fn);
  void stop();
  void remove(std::uint32_t id, std::size_t peak_out_bytes);
  void schedule_trim();
  NetCounters& counters() { return owner_.counters_; }
  std::atomic<std::uint32_t>& baselines_owed() { return owner_.baselines_owed_; }
  std::atomic<std::uint32_t>& subscriber_count() { return owner_.subscriber_count_; }
  CoverageRegistry& interest_coverage() { return owner_.interest_coverage_; }

  Server& owner_;
  ServerOptions options_;
  WelcomeInfo welcome_;
  CommandQueue& commands_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  asio::signal_set signals_;
  asio::steady_timer stop_timer_;
  std::function<void(int)> signal_fn_;
  std::map<std::uint32_t, std::shared_ptr<Session>> sessions_;
  std::map<std::uint32_t, std::shared_ptr<Session>> refused_;  // answered ServerFull, closing
  std::uint32_t next_session_id_ = 1;
  asio::steady_timer trim_timer_{io_};
  bool trim_pending_ = false;
  bool stopping_ = false;

  // The spatial index over `frame`, built at most once per frame and only
  // when a client with observers asks (network thread).
  const SpatialIndex& index_for(const std::shared_ptr<const PublishedFrame>& frame) {
    if (index_frame_ != frame) {
      index_frame_ = frame;  // keeps the frame alive as long as the index points into it
      index_.build(*frame);
    }
    return index_;
  }

  // Connections from one address, joined or still in the handshake.
  std::uint32_t connections_from(const std::string& address) const;
  // Stats: lease totals over every subscribed session.
  void add_lease_totals(StatsSnapshot& s) const;

  std::mutex latest_mu_;
  std::shared_ptr<const PublishedFrame> latest_;  // guarded by latest_mu_
  std::atomic<bool> notify_pending_{false};
  std::shared_ptr<const PublishedFrame> latest_seen_;  // network thread only
  std::shared_ptr<const PublishedFrame> index_frame_;  // network thread only
  SpatialIndex index_;                                 // network thread only
};

}  // namespace bustle::net
