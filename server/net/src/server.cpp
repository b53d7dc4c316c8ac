#include "bustle/net/server.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <asio.hpp>
#include <chrono>
#include <csignal>
#include <deque>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "bustle/net/client_text.hpp"
#include "bustle/net/command_parser.hpp"
#include "bustle/net/encode.hpp"
#include "bustle/proto/framing.hpp"

namespace bustle::net {

using asio::ip::tcp;
using Bytes = std::vector<std::uint8_t>;
using SharedBytes = std::shared_ptr<const Bytes>;

namespace {

SharedBytes finish_frame(const flatbuffers::FlatBufferBuilder& fbb) {
  return std::make_shared<const Bytes>(proto::make_frame(fbb));
}

SharedBytes make_error_frame(wire::ErrorCode code, const std::string& message) {
  flatbuffers::FlatBufferBuilder fbb(256);
  encode_error(code, message, fbb);
  return finish_frame(fbb);
}

}  // namespace

WelcomeInfo make_welcome_info(const core::World& world, std::string server_version,
                              ClockMode clock_mode) {
  const core::Scenario& scenario = world.scenario();
  WelcomeInfo w;
  w.server_version = std::move(server_version);
  w.scenario_id = scenario.id;
  w.step_us = scenario.step_us;
  w.clock_mode = clock_mode;
  w.lanes = world.lanes().lanes();
  w.chains = world.lanes().chains();
  w.dots_every_steps = scenario.pedestrians.dots_every_steps;
  auto lane_index = [&](const std::string& id) {
    for (std::uint32_t l = 0; l < world.lanes().size(); ++l) {
      if (world.lanes().lane(l).id == id) return l;
    }
    return 0u;
  };
  for (const core::GarageSpec& g : scenario.garages) {
    GarageGeometry geo{g.id, lane_index(g.lane), {}};
    for (const std::string& l : g.route) geo.route.push_back(lane_index(l));
    w.garages.push_back(std::move(geo));
  }
  for (const core::SignalSpec& sg : scenario.signals) {
    w.signals.push_back({sg.id, lane_index(sg.lane), static_cast<float>(sg.stop_alpha),
                         static_cast<float>(sg.yield_alpha)});
  }
  w.archetypes = make_archetypes(scenario);
  StreamContext& ctx = w.stream;
  ctx.step_us = scenario.step_us;
  for (std::uint32_t l = 0; l < world.lanes().size(); ++l) {
    ctx.lane_length_mm.push_back(proto::to_mm(world.lanes().lane(l).length_m));
    ctx.lane_chain.push_back(world.lanes().chain_of(l));
  }
  ctx.chain_count = w.chains.size();
  ctx.importance = scenario.tiers.importance;
  for (const core::GarageSpec& g : scenario.garages) {
    ctx.garage_ids.push_back(g.id);
    ctx.vehicle_id_formats.push_back(g.vehicle_id_format);
  }
  ctx.scenario_id = scenario.id;
  for (std::uint32_t c = 0; c < scenario.communities.size(); ++c) {
    ctx.community_first_resident.push_back(world.population().community_first(c));
    ctx.community_ids.push_back(scenario.communities[c].id);
  }
  return w;
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

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Server::Impl& server, tcp::socket socket, std::uint32_t id)
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

  std::uint32_t id() const { return id_; }
  const std::string& peer() const { return peer_; }
  const std::string& address() const { return address_; }

  void start() {
    asio::error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
    handshake_timer_.expires_after(
        std::chrono::milliseconds(server_.options_.handshake_timeout_ms));
    handshake_timer_.async_wait([self = shared_from_this()](const asio::error_code& e) {
      if (!e && self->phase_ == Phase::AwaitHello) {
        self->fail(wire::ErrorCode::HandshakeTimeout,
                   "no Hello within " +
                       std::to_string(self->server_.options_.handshake_timeout_ms) + " ms");
      }
    });
    read_more();
  }

  // A published frame's delta in three parts, so that several sessions'
  // deltas can be encoded at once (Impl::deliver_frame): whether and how to
  // send one (network thread), the encode (any encode thread: it touches
  // this session's tracker and builder and the shared, immutable frame and
  // index only), and the queueing (network thread).
  struct DeltaPlan {
    bool encode = false;
    bool send_dots = false;
    const SpatialIndex* index = nullptr;
  };
  void on_frame_published(const std::shared_ptr<const PublishedFrame>& frame) {
    const DeltaPlan plan = plan_delta(frame);
    if (!plan.encode) return;
    encode_delta(*frame, plan);
    queue_delta(*frame);
  }

  DeltaPlan plan_delta(const std::shared_ptr<const PublishedFrame>& frame) {
    if (phase_ != Phase::Ready || !subscribed_) return {};
    if (frame->world_epoch != epoch_) {
      // The world was replaced: never diff ids across worlds. The client
      // re-reports its leases from the baseline on, and every one of them
      // may matter to the new world's spawn handles again.
      epoch_ = frame->world_epoch;
      tracker_.reset();
      forwarded_.clear();
      // Owed until the baseline of the new world is written (RepresentationRebuilt).
      if (!owes_baseline_) {
        owes_baseline_ = true;
        server_.baselines_owed().fetch_add(1);
      }
      baseline_queued_ = false;
      for (Queued& q : outq_)
        q.first_of_epoch = false;  // an older world's baseline settles nothing
    }
    // A frame without entities (nobody was subscribed when it was built):
    // the sim thread publishes this step in full once it sees this session.
    if (!frame->entities_built) return {};
    if (frame->step <= last_sent_step_ && !tracker_.baseline_pending() && !interest_changed_)
      return {};
    if (over_soft_cap()) {
      // Behind: skip this step. When the backlog drains below the cap,
      // on_backlog_changed() sends one delta that coalesces everything missed
      // (even if no further step is ever published: paused or manual clock).
      delta_pending_ = true;
      ++deltas_coalesced_;
      server_.counters().deltas_coalesced.fetch_add(1, std::memory_order_relaxed);
      return {};
    }
    delta_pending_ = false;
    // Dots go out with the first delta at or after each dot step (so a
    // coalesced delta carries them once), and with every baseline; they are
    // this client's own (what it does not receive with identity) at this step.
    const std::uint32_t every = server_.welcome_.dots_every_steps;
    DeltaPlan plan;
    plan.encode = true;
    plan.send_dots =
        every > 0 && (tracker_.baseline_pending() || frame->step / every > last_sent_step_ / every);
    // Built here, on the network thread, before any encode reads it.
    plan.index = tracker_.interest().observers.empty() ? nullptr : &server_.index_for(frame);
    return plan;
  }

  void encode_delta(const PublishedFrame& frame, const DeltaPlan& plan) {
    tracker_.encode(frame, plan.index, server_.welcome_.stream, fbb_, plan.send_dots);
  }

  void queue_delta(const PublishedFrame& frame) {
    last_sent_step_ = frame.step;
    interest_changed_ = false;
    // Deltas are only built under the soft cap, so they never meet the hard one.
    const bool first_of_epoch = owes_baseline_ && !baseline_queued_;
    baseline_queued_ = baseline_queued_ || owes_baseline_;
    enqueue(finish_frame(fbb_), Frame::Delta, first_of_epoch);
  }

  // The answer to a command this session counted in flight (handle_command
  // or reject): it stays in flight until its bytes are written.
  void send_result(const OutboundResult& r) {
    if (phase_ != Phase::Ready) {
      release_inflight();
      return;
    }
    NetCounters& c = server_.counters();
    if (r.status == core::CommandStatus::Accepted) {
      c.commands_accepted.fetch_add(1, std::memory_order_relaxed);
    } else {
      c.commands_rejected[static_cast<std::size_t>(r.reason) % c.commands_rejected.size()]
          .fetch_add(1, std::memory_order_relaxed);
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

  void send_job_update(const JobInfo& j) {
    if (phase_ != Phase::Ready) return;
    encode_job_update(j, fbb_);
    enqueue(finish_frame(fbb_), Frame::Push);
  }

  void send_spawn_update(const SpawnReport& s) {
    if (phase_ != Phase::Ready) return;
    encode_spawn_update(s, fbb_);
    enqueue(finish_frame(fbb_), Frame::Push);
  }

  // Sends an Error frame, then closes this connection only.
  void fail(wire::ErrorCode code, const std::string& message) {
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

  void close_now() {
    if (phase_ == Phase::Closed) return;
    phase_ = Phase::Closed;
    settle_baseline();  // a client that is gone owes nothing
    if (subscribed_) server_.subscriber_count().fetch_sub(1);
    subscribed_ = false;
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
  void leave_joined() {
    if (joined_) server_.counters().joined_by_role[role_ == Role::Operator ? 1 : 0].fetch_sub(1);
    joined_ = false;
  }

  // One disconnect per connection, by the first reason it closed for.
  void count_disconnect(std::size_t reason) {
    if (disconnect_counted_) return;
    disconnect_counted_ = true;
    server_.counters().disconnects[reason].fetch_add(1, std::memory_order_relaxed);
  }

  // Closes a connection that was never started (no Error frame).
  void abort() {
    phase_ = Phase::Closed;
    asio::error_code ec;
    socket_.close(ec);
  }

 private:
  enum class Phase { AwaitHello, Ready, Closing, Closed };

  void read_more() {
    socket_.async_read_some(asio::buffer(read_buf_),
                            [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
                              self->on_read(ec, n);
                            });
  }

  void on_read(const asio::error_code& ec, std::size_t n) {
    if (phase_ == Phase::Closed) return;
    if (ec) {
      if (phase_ != Phase::Closing && ec != asio::error::eof) {
        spdlog::debug("client {} ({}): read error: {}", id_, peer_, ec.message());
      }
      // Closed first, then counted: a scrape that sees the disconnect no
      // longer counts the client as joined.
      const bool peer_closed = phase_ != Phase::Closing;
      if (peer_closed) {
        spdlog::debug("client_disconnect: client {} ({}): peer closed the connection", id_, peer_);
      }
      close_now();
      if (peer_closed) count_disconnect(kDisconnectPeerClosed);
      return;
    }
    if (phase_ == Phase::Closing) {
      // Drain and discard until the peer closes, so our Error frame is not
      // destroyed by a reset caused by unread input.
      read_more();
      return;
    }
    touch();
    decoder_.feed({read_buf_.data(), n});
    pump();
  }

  // Handles the frames already buffered, then reads more — unless this
  // client's outbound backlog is over the soft cap: then reading pauses (TCP
  // pushes back on the client) and resumes when the backlog drains
  // (on_backlog_changed). A client that sends without reading can therefore
  // never make the server queue more than a bounded amount for it.
  //
  // At most kFramesPerTurn frames are handled per turn; the rest wait for a
  // turn posted behind what the network thread already has queued (other
  // clients' reads, the next frame's deltas), so a client that pipelines
  // requests gets its share of the thread and no more.
  static constexpr int kFramesPerTurn = 16;
  void pump() {
    std::span<const std::uint8_t> payload;
    int handled = 0;
    while ((phase_ == Phase::AwaitHello || phase_ == Phase::Ready) && !over_soft_cap()) {
      if (handled++ == kFramesPerTurn) {
        asio::post(socket_.get_executor(), [self = shared_from_this()] {
          if (self->phase_ != Phase::Closed) self->pump();
        });
        return;
      }
      const proto::DecodeStatus st = decoder_.next(payload);
      if (st == proto::DecodeStatus::NeedMore) break;
      if (st == proto::DecodeStatus::FrameTooLarge) {
        fail(wire::ErrorCode::FrameTooLarge,
             "frame of " + std::to_string(decoder_.declared_length()) + " bytes exceeds the " +
                 std::to_string(proto::kClientFrameMaxBytes) + "-byte cap");
        break;
      }
      if (st == proto::DecodeStatus::EmptyFrame) {
        fail(wire::ErrorCode::MalformedFrame, "zero-length frame");
        break;
      }
      handle_payload(payload);
    }
    if (phase_ == Phase::Closed) return;
    if ((phase_ == Phase::AwaitHello || phase_ == Phase::Ready) && over_soft_cap()) {
      read_paused_ = true;
      return;
    }
    read_more();
  }

  void handle_payload(std::span<const std::uint8_t> payload) {
    std::string error;
    const wire::ClientFrame* frame = proto::verify_client_frame(payload, error);
    if (frame == nullptr) {
      fail(wire::ErrorCode::MalformedFrame, error);
      return;
    }
    const wire::ClientMessage type = frame->message_type();
    if (phase_ == Phase::AwaitHello) {
      if (type != wire::ClientMessage::Hello || frame->message_as_Hello() == nullptr) {
        fail(wire::ErrorCode::HandshakeRequired, "the first frame must be Hello");
        return;
      }
      handle_hello(*frame->message_as_Hello());
      return;
    }
    switch (type) {
      case wire::ClientMessage::Subscribe:
        if (frame->message_as_Subscribe() != nullptr)
          return handle_subscribe(*frame->message_as_Subscribe());
        break;
      case wire::ClientMessage::Command:
        if (frame->message_as_Command() != nullptr)
          return handle_command(*frame->message_as_Command());
        break;
      case wire::ClientMessage::UpdateInterest:
        if (frame->message_as_UpdateInterest() != nullptr) {
          return handle_update_interest(*frame->message_as_UpdateInterest());
        }
        break;
      case wire::ClientMessage::LeaseReport:
        if (frame->message_as_LeaseReport() != nullptr)
          return handle_lease_report(*frame->message_as_LeaseReport());
        break;
      case wire::ClientMessage::Hello:
        fail(wire::ErrorCode::UnknownMessage, "Hello is only valid as the first frame");
        return;
      default:
        break;
    }
    fail(wire::ErrorCode::UnknownMessage,
         "unknown message type " + std::to_string(static_cast<int>(type)));
  }

  void handle_hello(const wire::Hello& hello) {
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

  void handle_subscribe(const wire::Subscribe& sub) {
    if (!take_rate_token(sub.request_id())) return;
    ClientInterest interest;
    if (std::string why = read_subscribe(sub, interest, server_.options_.default_budgets);
        !why.empty()) {
      return reject(sub.request_id(), core::RejectReason::InvalidArgument, "Subscribe." + why);
    }
    tracker_.set_interest(interest, true);
    if (server_.latest_seen_) epoch_ = server_.latest_seen_->world_epoch;
    if (!subscribed_) {
      server_.subscriber_count().fetch_add(1);
      // Wake the sim thread (paused or between steps) to publish in full.
      if (server_.latest_seen_ && !server_.latest_seen_->entities_built) server_.commands_.notify();
    }
    subscribed_ = true;
    announce_observers();
    answer(sub.request_id());
    // Late join is normal: send the baseline now from the latest frame rather
    // than waiting for the next step (which, in manual mode, may never come).
    if (server_.latest_seen_) on_frame_published(server_.latest_seen_);
  }

  void handle_update_interest(const wire::UpdateInterest& upd) {
    if (!take_rate_token(upd.request_id())) return;
    if (!subscribed_) {
      return reject(upd.request_id(), core::RejectReason::InvalidArgument,
                    "UpdateInterest: not subscribed (send Subscribe first)");
    }
    ClientInterest interest = tracker_.interest();
    if (std::string why = read_update_interest(upd, interest); !why.empty()) {
      return reject(upd.request_id(), core::RejectReason::InvalidArgument, "UpdateInterest." + why);
    }
    tracker_.set_interest(interest, false);
    announce_observers();
    answer(upd.request_id());
    // Applied now, at the current step (entities enter and leave at once),
    // not only at the next step.
    interest_changed_ = true;
    if (server_.latest_seen_) on_frame_published(server_.latest_seen_);
  }

  // Leases are this client's view, kept here; only "some client holds an
  // awaited spawned entity" reaches the sim thread (forward_held), and never
  // the World.
  void handle_lease_report(const wire::LeaseReport& report) {
    const std::uint32_t request_id = report.request_id();
    const std::size_t n = report.entries() != nullptr ? report.entries()->size() : 0;
    if (n > kLeaseEntriesMax) {
      if (request_id != 0) {
        reject(request_id, core::RejectReason::InvalidArgument,
               "LeaseReport.entries: " + std::to_string(n) + " entries exceed the limit of " +
                   std::to_string(kLeaseEntriesMax));
      }
      return;
    }
    if (!subscribed_) {
      if (request_id != 0) {
        reject(request_id, core::RejectReason::InvalidArgument,
               "LeaseReport: not subscribed (send Subscribe first)");
      }
      return;
    }
    if (report.entries() != nullptr) {
      held_.clear();
      tracker_.apply_leases(*report.entries(), last_sent_step_, &held_);
      forward_held();
    }
    if (request_id != 0) answer(request_id);
  }

  // The leases that matter to a spawn handle (its entity is in the latest
  // frame's awaiting_representation) go to the sim thread, each at most once
  // per session while it is awaited: that is what moves the handle to
  // Attached (representation_stages.hpp). Everything else stays here.
  void forward_held() {
    const auto& frame = server_.latest_seen_;
    if (!frame) return;
    const auto& awaiting = frame->awaiting_representation;
    const auto awaited = [&](core::EntityId id) {
      return std::binary_search(
          awaiting.begin(), awaiting.end(), id,
          [](core::EntityId a, core::EntityId b) { return a.packed() < b.packed(); });
    };
    std::erase_if(forwarded_, [&](core::EntityId id) { return !awaited(id); });
    ControlCommand notice;
    notice.kind = ControlCommand::Kind::LeasesHeld;
    for (const core::EntityId id : held_) {
      if (!awaited(id) || std::find(forwarded_.begin(), forwarded_.end(), id) != forwarded_.end())
        continue;
      forwarded_.push_back(id);
      notice.entities.push_back(id);
    }
    if (notice.entities.empty()) return;
    InboundCommand in;
    in.session_id = id_;
    in.role = role_;
    in.body = std::move(notice);
    server_.commands_.push_internal(std::move(in));
  }

  // This session's observers feed the tier resolver (the sim driver unites
  // every session's into one recorded SetClientObservers). Sent when they
  // change, and once empty when the session leaves.
  void announce_observers() {
    const auto& obs = tracker_.interest().observers;
    if (obs.empty() && !observers_announced_) return;
    ControlCommand notice;
    notice.kind = ControlCommand::Kind::ClientObservers;
    for (const ClientObserver& o : obs)
      notice.observers.push_back({o.x_m, o.y_m, o.z_m, o.has_heading, o.heading_rad});
    observers_announced_ = !obs.empty();
    InboundCommand in;
    in.session_id = id_;
    in.role = role_;
    in.body = std::move(notice);
    server_.commands_.push_internal(std::move(in));
  }

  void answer_lease_query(std::uint32_t request_id) {
    OutboundResult r = network_answer(request_id, core::CommandStatus::Accepted);
    r.applied_step = last_sent_step_;
    r.leases = tracker_.lease_summary(last_sent_step_, server_.options_.lease_grace_steps);
    r.lease_grace_steps = server_.options_.lease_grace_steps;
    send_network_answer(r);
  }

  // The per-client command rate (a token bucket): `commands_per_second_max`
  // sustained, bursts up to twice that. Excess is answered RateLimited and
  // the connection stays.
  bool take_rate_token(std::uint32_t request_id) {
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
  OutboundResult network_answer(std::uint32_t request_id, core::CommandStatus status) const {
    OutboundResult r;
    r.session_id = id_;
    r.request_id = request_id;
    r.status = status;
    r.applied_step = server_.latest_seen_ ? server_.latest_seen_->step : 0;
    return r;
  }

  void send_network_answer(const OutboundResult& r) {
    ++inflight_;  // released when the answer is written
    send_result(r);
  }

  void answer(std::uint32_t request_id) {
    send_network_answer(network_answer(request_id, core::CommandStatus::Accepted));
  }

  // Idle: nothing received from the client and nothing written to it for
  // idle_timeout_ms (a peer that vanished, or one that neither reads nor
  // sends). Re-armed lazily: activity only moves a timestamp.
  void touch() { last_activity_ = std::chrono::steady_clock::now(); }

  void arm_idle_timer() {
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

  void reject(std::uint32_t request_id, core::RejectReason reason, std::string message) {
    OutboundResult r = network_answer(request_id, core::CommandStatus::Rejected);
    r.reason = reason;
    r.message = std::move(message);
    send_network_answer(r);
  }

  void handle_command(const wire::Command& cmd) {
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

  // What a queued frame is, for the budget: deltas are built only under the
  // soft cap; answers release an in-flight command slot when written; the
  // Error frame that closes a connection is always queued.
  using Frame = FrameKind;

  struct Queued {
    SharedBytes bytes;
    Frame frame = Frame::Push;
    bool first_of_epoch = false;  // the baseline of a replaced world (baselines_owed)
  };

  void settle_baseline() {
    if (!owes_baseline_) return;
    owes_baseline_ = false;
    server_.baselines_owed().fetch_sub(1);
  }

  // Every frame counts against one per-client budget: its bytes plus the
  // bookkeeping that holds it, so a flood of tiny frames is charged for the
  // memory it really takes.
  static std::size_t charge(const Bytes& b) { return b.size() + kQueuedFrameOverheadBytes; }

  bool over_soft_cap() const { return out_bytes_ > server_.options_.outbound_bytes_max; }

  std::size_t hard_cap() const { return outbound_hard_max_bytes(server_.options_); }

  void enqueue(SharedBytes bytes, Frame frame, bool first_of_epoch = false) {
    if (phase_ == Phase::Closed) {
      if (frame == Frame::Answer) release_inflight();
      return;
    }
    const std::size_t cost = charge(*bytes);
    if (frame != Frame::Error && frame != Frame::Delta && out_bytes_ + cost > hard_cap()) {
      if (frame == Frame::Answer) release_inflight();
      fail(wire::ErrorCode::OutboundOverflow,
           "client is not reading: " + std::to_string(out_bytes_ + cost) +
               " bytes queued would exceed the " + std::to_string(hard_cap()) + "-byte hard limit");
      return;
    }
    out_bytes_ += cost;
    peak_out_bytes_ = std::max(peak_out_bytes_, out_bytes_);
    outq_.push_back(Queued{std::move(bytes), frame, first_of_epoch});
    on_backlog_changed();
    if (!writing_) write_next();
  }

  void release_inflight() {
    if (inflight_ > 0) --inflight_;
  }

  // Frees every queued frame except the one being written (asio still reads
  // it): on overflow nothing queued will ever be read in time.
  void drop_unsent() {
    const std::size_t keep = writing_ ? 1 : 0;
    while (outq_.size() > keep) {
      if (outq_.back().frame == Frame::Answer) release_inflight();
      out_bytes_ -= charge(*outq_.back().bytes);
      outq_.pop_back();
    }
    std::deque<Queued>(std::make_move_iterator(outq_.begin()), std::make_move_iterator(outq_.end()))
        .swap(outq_);
  }

  // Called whenever the backlog grows or shrinks. Over the soft cap: deltas
  // are skipped (coalesced), reading pauses, and a client still over it after
  // overflow_disconnect_ms is closed. Back under it: reading resumes and a
  // skipped delta is sent at once with the latest frame.
  void on_backlog_changed() {
    if (phase_ == Phase::Closed) return;
    if (over_soft_cap()) {
      if (!over_cap_ && phase_ != Phase::Closing) {
        over_cap_ = true;
        const std::uint32_t ms = server_.options_.overflow_disconnect_ms;
        overflow_timer_.expires_after(std::chrono::milliseconds(ms));
        overflow_timer_.async_wait([self = shared_from_this(), ms](const asio::error_code& e) {
          if (e || !self->over_cap_) return;
          self->fail(wire::ErrorCode::OutboundOverflow,
                     "client did not read for " + std::to_string(ms) + " ms with more than " +
                         std::to_string(self->server_.options_.outbound_bytes_max) +
                         " bytes queued");
        });
      }
      return;
    }
    if (!over_cap_) return;
    over_cap_ = false;
    overflow_timer_.cancel();
    if (phase_ != Phase::Ready && phase_ != Phase::AwaitHello) return;
    if (delta_pending_ && subscribed_ && server_.latest_seen_) {
      on_frame_published(server_.latest_seen_);
    }
    if (read_paused_ && !over_soft_cap()) {
      read_paused_ = false;
      // Not from inside a write completion's call chain: post, so frames
      // handled now cannot re-enter write_next() half-way.
      asio::post(socket_.get_executor(), [self = shared_from_this()] { self->pump(); });
    }
  }

  void write_next() {
    if (phase_ == Phase::Closed) return;
    if (outq_.empty()) {
      writing_ = false;
      if (phase_ == Phase::Closing) {
        // Error flushed: half-close so the peer reads it and then EOF; the
        // read loop (draining) or the close timer finishes the job.
        asio::error_code ec;
        socket_.shutdown(tcp::socket::shutdown_send, ec);
      }
      return;
    }
    writing_ = true;
    asio::async_write(socket_, asio::buffer(*outq_.front().bytes),
                      [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
                        if (self->phase_ == Phase::Closed) return;
                        const Queued& done = self->outq_.front();
                        if (done.frame == Frame::Answer) self->release_inflight();
                        if (!ec) {
                          NetCounters& c = self->server_.counters();
                          c.bytes_sent.fetch_add(done.bytes->size(), std::memory_order_relaxed);
                          c.frames_sent[static_cast<std::size_t>(done.frame)].fetch_add(
                              1, std::memory_order_relaxed);
                          if (done.first_of_epoch) self->settle_baseline();
                        }
                        self->out_bytes_ -= charge(*done.bytes);
                        self->outq_.pop_front();
                        if (ec) {
                          spdlog::debug("client {} ({}): write error: {}", self->id_, self->peer_,
                                        ec.message());
                          // Closed first, then counted: a scrape that sees the
                          // disconnect no longer counts the client as joined.
                          self->close_now();
                          self->count_disconnect(kDisconnectWriteError);
                          return;
                        }
                        self->touch();
                        self->writing_ = false;
                        self->on_backlog_changed();
                        if (!self->writing_) self->write_next();
                      });
  }

  Server::Impl& server_;
  tcp::socket socket_;
  asio::steady_timer handshake_timer_;
  asio::steady_timer close_timer_;
  proto::FrameDecoder decoder_;
  std::array<std::uint8_t, 16384> read_buf_{};
  std::uint32_t id_;
  std::string peer_;
  std::string name_;
  Phase phase_ = Phase::AwaitHello;
  Role role_ = Role::Viewer;
  bool subscribed_ = false;
  std::string address_;
  std::uint64_t last_sent_step_ = 0;
  std::uint64_t epoch_ = 0;
  bool owes_baseline_ = false;     // counted in Server::baselines_owed()
  bool baseline_queued_ = false;   // its baseline delta is in outq_
  bool interest_changed_ = false;  // UpdateInterest: re-encode even at the same step
  StreamTracker tracker_;
  bool observers_announced_ = false;  // the sim thread has non-empty observers of this session
  std::vector<core::EntityId> held_;  // scratch: entities a lease report says are held
  std::vector<core::EntityId>
      forwarded_;  // held entities already sent to the sim thread (awaited ones)
  std::chrono::steady_clock::time_point last_activity_;

 public:
  const StreamTracker& tracker() const { return tracker_; }
  bool subscribed() const { return subscribed_; }
  std::uint64_t last_sent_step() const { return last_sent_step_; }

 private:
  asio::steady_timer idle_timer_{socket_.get_executor()};
  double rate_tokens_ = 0.0;
  std::chrono::steady_clock::time_point rate_refilled_;
  flatbuffers::FlatBufferBuilder fbb_{1 << 16};
  std::deque<Queued> outq_;
  std::size_t out_bytes_ = 0;  // charged bytes queued (see charge())
  std::size_t peak_out_bytes_ = 0;
  bool writing_ = false;
  bool over_cap_ = false;       // out_bytes_ over the soft cap; overflow_timer_ armed
  bool read_paused_ = false;    // reading stopped until the backlog drains
  bool delta_pending_ = false;  // a delta was skipped over the cap
  asio::steady_timer overflow_timer_{socket_.get_executor()};
  std::uint64_t deltas_coalesced_ = 0;
  bool joined_ = false;  // counted in NetCounters::joined_by_role
  bool disconnect_counted_ = false;
  std::uint32_t inflight_ = 0;  // commands answered or to be answered, answer not yet written
};

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

std::string check_bind_policy(const ServerOptions& options) {
  asio::error_code ec;
  const auto addr = asio::ip::make_address(options.bind_address, ec);
  if (ec) return "invalid bind address '" + options.bind_address + "': " + ec.message();
  if (!addr.is_loopback() && options.token.empty()) {
    return "refusing to bind non-loopback address " + options.bind_address +
           " without a token (set --token or BUSTLE_TOKEN)";
  }
  return {};
}

Server::ListenResult Server::Impl::listen() {
  ListenResult r;
  if (std::string why = check_bind_policy(options_); !why.empty()) {
    r.error = why;
    return r;
  }
  asio::error_code ec;
  const auto addr = asio::ip::make_address(options_.bind_address, ec);
  if (ec) {
    r.error = "invalid bind address '" + options_.bind_address + "': " + ec.message();
    return r;
  }
  const tcp::endpoint ep(addr, options_.port);
  const std::string where = options_.bind_address + ":" + std::to_string(options_.port);
  if (acceptor_.open(ep.protocol(), ec); ec) {
    r.error = "open " + where + ": " + ec.message();
    return r;
  }
  acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (acceptor_.bind(ep, ec); ec) {
    r.error = "bind " + where + ": " + ec.message();
    return r;
  }
  if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec) {
    r.error = "listen " + where + ": " + ec.message();
    return r;
  }
  const auto local = acceptor_.local_endpoint(ec);
  r.ok = true;
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
