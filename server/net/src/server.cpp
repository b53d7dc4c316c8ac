// bustle::net::Server: listening, accepting (with the per-address and
// max-clients limits), handing each published frame to the sessions
// (session/), posting the sim thread's answers to them, and stopping.
#include "bustle/net/server.hpp"

#include <spdlog/spdlog.h>

#include <csignal>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "server_impl.hpp"
#include "session/session.hpp"

namespace bustle::net {

const char* disconnect_reason_name(std::size_t reason) {
  static constexpr const char* kNames[kDisconnectReasonCount] = {"unknown",
                                                                 "protocol_version_mismatch",
                                                                 "handshake_timeout",
                                                                 "handshake_required",
                                                                 "unauthorized",
                                                                 "malformed_frame",
                                                                 "frame_too_large",
                                                                 "unknown_message",
                                                                 "outbound_overflow",
                                                                 "server_shutting_down",
                                                                 "server_full",
                                                                 "idle_timeout",
                                                                 "too_many_connections",
                                                                 "peer_closed",
                                                                 "write_error"};
  static_assert(static_cast<std::size_t>(wire::ErrorCode::MAX) + 1 == kErrorCodeCount,
                "a new wire ErrorCode needs its disconnect reason name");
  return reason < kDisconnectReasonCount ? kNames[reason] : "unknown";
}

core::Status check_bind_policy(const ServerOptions& options) {
  asio::error_code ec;
  const auto addr = asio::ip::make_address(options.bind_address, ec);
  if (ec) {
    return core::Status::invalid_argument("invalid bind address '" + options.bind_address +
                                          "': " + ec.message());
  }
  if (!addr.is_loopback() && options.token.empty()) {
    return core::Status::failed_precondition("refusing to bind non-loopback address " +
                                             options.bind_address +
                                             " without a token (set --token or BUSTLE_TOKEN)");
  }
  return {};
}

Server::ListenResult Server::Impl::listen() {
  ListenResult r;
  if (r.status = check_bind_policy(options_); !r.status.ok()) return r;
  asio::error_code ec;
  const auto addr = asio::ip::make_address(options_.bind_address, ec);
  if (ec) {  // never: check_bind_policy parsed it
    r.status = core::Status::invalid_argument("invalid bind address '" + options_.bind_address +
                                              "': " + ec.message());
    return r;
  }
  const tcp::endpoint ep(addr, options_.port);
  const std::string where = options_.bind_address + ":" + std::to_string(options_.port);
  if (acceptor_.open(ep.protocol(), ec); ec) {
    r.status = core::Status::unavailable("open " + where + ": " + ec.message());
    return r;
  }
  acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (acceptor_.bind(ep, ec); ec) {
    r.status = core::Status::unavailable("bind " + where + ": " + ec.message());
    return r;
  }
  if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec) {
    r.status = core::Status::unavailable("listen " + where + ": " + ec.message());
    return r;
  }
  const auto local = acceptor_.local_endpoint(ec);
  owner_.counters_.listening.store(true);
  r.address = local.address().to_string();
  r.port = local.port();
  wait_signal();
  start_accept();
  return r;
}

void Server::Impl::start_accept() {
  acceptor_.async_accept([this](const asio::error_code& ec, tcp::socket socket) {
    if (ec) {
      if (ec != asio::error::operation_aborted) {
        spdlog::warn("accept failed: {}", ec.message());
        if (!stopping_) start_accept();
      }
      return;
    }
    if (stopping_) return;
    const std::uint32_t id = next_session_id_++;
    owner_.counters_.connections_accepted.fetch_add(1, std::memory_order_relaxed);
    auto session = std::make_shared<Session>(*this, std::move(socket), id);
    const bool full = sessions_.size() >= options_.max_clients;
    const bool crowded =
        !full && connections_from(session->address()) >= options_.clients_per_address_max;
    if (full || crowded) {
      // Tell the client why before closing; it never joins. A refused
      // connection lives apart from the sessions (bounded by its close timer)
      // and never counts against max_clients, so a slot freed now is free now.
      if (refused_.size() >= kRefusedConnectionsMax) {
        session->abort();  // a flood of refusals: no Error frame, just close
      } else {
        refused_.emplace(id, session);
        if (full) {
          session->fail(wire::ErrorCode::ServerFull,
                        "server has " + std::to_string(options_.max_clients) + " clients (max)");
        } else {
          session->fail(wire::ErrorCode::TooManyConnections,
                        "address " + session->address() + " already has " +
                            std::to_string(options_.clients_per_address_max) +
                            " connections (max per address)");
        }
      }
    } else {
      sessions_.emplace(id, session);
      owner_.client_count_.store(static_cast<std::uint32_t>(sessions_.size()));
      spdlog::debug("client_connected: client {} connected from {}", id, session->peer());
      session->start();
    }
    start_accept();
  });
}

void Server::Impl::add_lease_totals(StatsSnapshot& s) const {
  // One entry per UnassignedReason, also when no client is subscribed.
  constexpr std::size_t reasons = std::size(StreamTracker::LeaseSummary{}.past_grace_by_reason);
  if (s.leases_past_grace_by_reason.size() < reasons)
    s.leases_past_grace_by_reason.resize(reasons, 0);
  for (const auto& [id, session] : sessions_) {
    if (!session->subscribed()) continue;
    const StreamTracker::LeaseSummary sum =
        session->tracker().lease_summary(session->last_sent_step(), options_.lease_grace_steps);
    for (const std::uint32_t a : sum.applied) s.leases_assigned += a;
    s.leases_unassigned += sum.waiting;
    s.leases_unassigned_past_grace += sum.waiting_past_grace;
    for (std::size_t r = 0; r < reasons; ++r)
      s.leases_past_grace_by_reason[r] += sum.past_grace_by_reason[r];
    s.leases_released_total +=
        sum.entries_by_state[static_cast<std::size_t>(wire::LeaseState::Released)];
    s.leases_preserved_total +=
        sum.entries_by_state[static_cast<std::size_t>(wire::LeaseState::Preserved)];
    s.lease_reports_total += sum.reports;
  }
}

std::uint32_t Server::Impl::connections_from(const std::string& address) const {
  std::uint32_t n = 0;
  for (const auto& [id, s] : sessions_) n += s->address() == address;
  return n;
}

void Server::Impl::remove(std::uint32_t id, std::size_t peak_out_bytes) {
  if (refused_.erase(id) == 0) sessions_.erase(id);
  owner_.client_count_.store(static_cast<std::uint32_t>(sessions_.size()));
  if (stopping_ && sessions_.empty() && refused_.empty()) {
    io_.stop();
    return;
  }
  if (peak_out_bytes >= kTrimAfterSessionBytes) schedule_trim();
}

// A session that held megabytes leaves the allocator with free memory it may
// keep (glibc keeps freed chunks in its arenas). Give it back to the system,
// at most once per second, so a burst of hostile or slow clients does not
// leave the process at its peak RSS.
void Server::Impl::schedule_trim() {
  if (trim_pending_) return;
  trim_pending_ = true;
  trim_timer_.expires_after(std::chrono::seconds(1));
  trim_timer_.async_wait([this](const asio::error_code& e) {
    trim_pending_ = false;
    if (e) return;
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
  });
}

void Server::Impl::publish(std::shared_ptr<const PublishedFrame> frame) {
  {
    std::lock_guard lock(latest_mu_);
    latest_ = std::move(frame);
  }
  if (notify_pending_.exchange(true)) return;  // a notification is already queued
  asio::post(io_, [this] {
    notify_pending_.store(false);
    {
      std::lock_guard lock(latest_mu_);
      latest_seen_ = latest_;
    }
    // Copy: a session may close (and erase itself) while being notified.
    std::vector<std::shared_ptr<Session>> targets;
    targets.reserve(sessions_.size());
    for (auto& [id, s] : sessions_) targets.push_back(s);
    deliver_frame(targets, latest_seen_);
    // After the sessions: whoever owes a baseline of this epoch is counted.
    if (latest_seen_) owner_.epoch_handed_out_.store(latest_seen_->world_epoch);
  });
}

void Server::Impl::deliver_frame(const std::vector<std::shared_ptr<Session>>& sessions,
                                 const std::shared_ptr<const PublishedFrame>& frame) {
  core::PhaseExecutor* threads = options_.encode_threads;
  if (threads == nullptr || threads->threads() < 2) {
    // Session by session: each delta is queued as soon as it is encoded,
    // not after every other client's encode.
    for (const auto& s : sessions) s->on_frame_published(frame);
    return;
  }
  // Plans and queueing on this thread, in session order; the encodes, each
  // touching its own session only, on the encode threads.
  struct Encodes {
    const PublishedFrame* frame;
    std::vector<std::pair<Session*, Session::DeltaPlan>> plans;
  } job{frame.get(), {}};
  for (const auto& s : sessions) {
    const Session::DeltaPlan plan = s->plan_delta(frame);
    if (plan.encode) job.plans.emplace_back(s.get(), plan);
  }
  const auto encode = [](void* context, std::uint32_t k) {
    const Encodes& j = *static_cast<const Encodes*>(context);
    j.plans[k].first->encode_delta(*j.frame, j.plans[k].second);
  };
  const auto n = static_cast<std::uint32_t>(job.plans.size());
  if (n >= 2) {
    threads->run(n, encode, &job);
  } else {
    for (std::uint32_t k = 0; k < n; ++k) encode(&job, k);
  }
  for (const auto& [session, plan] : job.plans) session->queue_delta(*frame);
}

template <class F>
void Server::Impl::post_to_session(std::uint32_t session_id, F fn) {
  asio::post(io_, [this, session_id, f = std::move(fn)] {
    auto it = sessions_.find(session_id);
    if (it != sessions_.end()) f(*it->second);
  });
}

void Server::Impl::deliver_result(OutboundResult result) {
  const std::uint32_t id = result.session_id;
  post_to_session(id, [r = std::move(result)](Session& s) { s.send_result(r); });
}

void Server::Impl::deliver_job_update(std::uint32_t session_id, JobInfo job) {
  post_to_session(session_id, [j = std::move(job)](Session& s) { s.send_job_update(j); });
}

void Server::Impl::deliver_spawn_update(std::uint32_t session_id, SpawnReport spawn) {
  post_to_session(session_id, [sp = std::move(spawn)](Session& s) { s.send_spawn_update(sp); });
}

void Server::Impl::stop() {
  asio::post(io_, [this] {
    if (stopping_) return;
    stopping_ = true;
    owner_.counters_.listening.store(false);
    asio::error_code ec;
    acceptor_.close(ec);
    signals_.cancel(ec);
    std::vector<std::shared_ptr<Session>> targets;
    for (auto& [id, s] : sessions_) targets.push_back(s);
    for (auto& s : targets) s->fail(wire::ErrorCode::ServerShuttingDown, "server is shutting down");
    if (sessions_.empty() && refused_.empty()) {
      io_.stop();
      return;
    }
    // Sessions close themselves within their 1 s close timer; this is the
    // backstop so shutdown is bounded whatever the peers do.
    stop_timer_.expires_after(std::chrono::milliseconds(1500));
    stop_timer_.async_wait([this](const asio::error_code& e) {
      if (!e) io_.stop();
    });
  });
}

Server::Server(ServerOptions options, WelcomeInfo welcome, CommandQueue& commands)
    : impl_(std::make_unique<Impl>(*this, std::move(options), std::move(welcome), commands)) {
  impl_->welcome_.stream.entries_per_step_max = impl_->options_.entries_per_step_max;
}

Server::~Server() = default;

Server::ListenResult Server::listen() {
  return impl_->listen();
}
void Server::run() {
  impl_->io_.run();
}
void Server::publish(std::shared_ptr<const PublishedFrame> frame) {
  impl_->publish(std::move(frame));
}
void Server::deliver_result(OutboundResult result) {
  impl_->deliver_result(std::move(result));
}
void Server::deliver_job_update(std::uint32_t session_id, JobInfo job) {
  impl_->deliver_job_update(session_id, std::move(job));
}
void Server::deliver_spawn_update(std::uint32_t session_id, SpawnReport spawn) {
  impl_->deliver_spawn_update(session_id, std::move(spawn));
}
void Server::stop() {
  impl_->stop();
}
void Server::on_signal(std::function<void(int)> fn) {
  asio::post(impl_->io_, [this, f = std::move(fn)]() mutable { impl_->signal_fn_ = std::move(f); });
}

}  // namespace bustle::net
