#include "bustle/net/server.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <asio.hpp>
#include <chrono>
#include <csignal>
#include <deque>

#include "bustle/net/delta_tracker.hpp"
#include "bustle/proto/framing.hpp"

namespace bustle::net {

using asio::ip::tcp;
using Bytes = std::vector<std::uint8_t>;
using SharedBytes = std::shared_ptr<const Bytes>;

namespace {

wire::ClockMode to_wire(ClockMode m) { return static_cast<wire::ClockMode>(m); }

SharedBytes finish_frame(const flatbuffers::FlatBufferBuilder& fbb) {
  return std::make_shared<const Bytes>(proto::make_frame(fbb));
}

SharedBytes make_error_frame(wire::ErrorCode code, const std::string& message) {
  flatbuffers::FlatBufferBuilder fbb(256);
  const auto err = wire::CreateErrorDirect(fbb, code, message.c_str());
  fbb.Finish(wire::CreateServerFrame(fbb, wire::ServerMessage::Error, err.Union()),
             wire::ServerFrameIdentifier());
  return finish_frame(fbb);
}

flatbuffers::Offset<wire::JobStatus> make_job_status(flatbuffers::FlatBufferBuilder& fbb, const JobInfo& j) {
  return wire::CreateJobStatusDirect(fbb, j.job_id, static_cast<wire::JobKind>(j.kind),
                                     static_cast<wire::JobState>(j.state), j.terminal, j.name.c_str(), j.step,
                                     j.message.c_str());
}

SharedBytes make_job_update_frame(const JobInfo& j) {
  flatbuffers::FlatBufferBuilder fbb(256);
  const auto status = make_job_status(fbb, j);
  const auto upd = wire::CreateJobUpdate(fbb, status);
  fbb.Finish(wire::CreateServerFrame(fbb, wire::ServerMessage::JobUpdate, upd.Union()),
             wire::ServerFrameIdentifier());
  return finish_frame(fbb);
}

SharedBytes make_result_frame(const OutboundResult& r) {
  flatbuffers::FlatBufferBuilder fbb(512);
  flatbuffers::Offset<wire::Stats> stats = 0;
  if (r.stats) {
    const StatsSnapshot& s = *r.stats;
    wire::StatsBuilder sb(fbb);
    sb.add_step(s.step);
    sb.add_sim_time_us(s.sim_time_us);
    sb.add_digest(s.digest);
    sb.add_step_us(s.step_us);
    sb.add_clock_mode(to_wire(s.clock_mode));
    sb.add_paused(s.paused);
    sb.add_pedestrians(s.pedestrians);
    sb.add_pedestrian_target(s.pedestrian_target);
    sb.add_entity_capacity(s.entity_capacity);
    sb.add_clients(s.clients);
    sb.add_spawned_total(s.spawned_total);
    sb.add_despawned_total(s.despawned_total);
    sb.add_commands_accepted(s.commands_accepted);
    sb.add_commands_rejected(s.commands_rejected);
    sb.add_dropped_steps(s.dropped_steps);
    sb.add_recording(s.recording);
    sb.add_recording_failed(s.recording_failed);
    sb.add_recorded_ticks(s.recorded_ticks);
    sb.add_vehicles(s.vehicles);
    sb.add_vehicles_full(s.vehicles_per_tier[0]);
    sb.add_vehicles_simulated(s.vehicles_per_tier[1]);
    sb.add_vehicles_coarse(s.vehicles_per_tier[2]);
    sb.add_vehicles_moving(s.vehicles_moving);
    sb.add_vehicles_waiting(s.vehicles_waiting);
    sb.add_vehicles_yielding(s.vehicles_yielding);
    sb.add_tier_transitions_deferred(s.tier_transitions_deferred);
    sb.add_hour(s.hour);
    sb.add_time_scale(s.time_scale);
    sb.add_residents(s.residents);
    sb.add_residents_active(s.residents_active);
    stats = sb.Finish();
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::GarageInfo>>> garages = 0;
  if (r.garages) {
    std::vector<flatbuffers::Offset<wire::GarageInfo>> items;
    for (const GarageReport& g : *r.garages) {
      std::vector<flatbuffers::Offset<flatbuffers::String>> queued;
      for (const std::string& q : g.queued) queued.push_back(fbb.CreateString(q));
      items.push_back(wire::CreateGarageInfoDirect(
          fbb, g.id.c_str(), &queued, g.dispatched, g.managed, g.capacity, g.frame_index, g.next_vehicle_ordinal,
          static_cast<wire::DispatchGate>(g.last_gate), &g.gate_steps, g.turnarounds, g.rejected_invalid,
          g.rejected_duplicate, g.rejected_queue_full, g.canceled, g.plan_total, g.plan_injected));
    }
    garages = fbb.CreateVector(items);
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::SignalInfo>>> signals = 0;
  if (r.signals) {
    std::vector<flatbuffers::Offset<wire::SignalInfo>> items;
    for (const SignalReport& sg : *r.signals) {
      items.push_back(wire::CreateSignalInfoDirect(fbb, sg.id.c_str(), sg.lane, static_cast<wire::SignalPhase>(sg.phase),
                                                   sg.phase_elapsed_us, sg.cycles));
    }
    signals = fbb.CreateVector(items);
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::ZoneInfo>>> zones = 0;
  if (r.zones) {
    std::vector<flatbuffers::Offset<wire::ZoneInfo>> items;
    for (const ZoneReport& z : *r.zones) {
      const core::ZoneStatus& st = z.status;
      items.push_back(wire::CreateZoneInfoDirect(fbb, z.id.c_str(), st.target, st.active, st.dormant, st.pending_spawn,
                                                 st.pending_recycle, st.activated, st.recycled, st.deferred_by_quota,
                                                 st.rejected_by_capacity, st.activated_total, st.recycled_total,
                                                 z.capacity, st.migrated_in, st.deferred_by_migration));
    }
    zones = fbb.CreateVector(items);
  }
  flatbuffers::Offset<wire::VehicleInfo> vehicle = 0;
  if (r.vehicle) {
    const VehicleReport& v = *r.vehicle;
    const wire::EntityId id(v.id.index, v.id.generation);
    const wire::EntityId leader(v.leader.index, v.leader.generation);
    vehicle = wire::CreateVehicleInfoDirect(
        fbb, &id, v.vehicle_id.c_str(), v.garage.c_str(), v.request_id.c_str(), v.prototype.c_str(), v.route_index,
        v.lane, v.s_m, v.alpha, v.x_m, v.y_m, v.speed_mps, static_cast<wire::VehicleStrategyState>(v.strategy),
        static_cast<wire::ControlPolicy>(v.policy), static_cast<wire::PolicyReason>(v.reason),
        static_cast<wire::SimTier>(v.tier), &leader, v.steps_advanced, v.awaiting_turnaround, v.despawn_requested);
  }
  flatbuffers::Offset<wire::JobStatus> job = 0;
  if (r.job) job = make_job_status(fbb, *r.job);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::SnapshotInfo>>> snapshots = 0;
  if (r.snapshots) {
    std::vector<flatbuffers::Offset<wire::SnapshotInfo>> items;
    for (const SnapshotEntry& e : *r.snapshots) {
      items.push_back(wire::CreateSnapshotInfoDirect(fbb, e.name.c_str(), e.kind.c_str(), e.scenario_id.c_str(),
                                                     e.step, e.sim_time_us, e.digest, e.pedestrians,
                                                     e.created_unix_ms));
    }
    snapshots = fbb.CreateVector(items);
  }
  const auto msg = r.message.empty() ? 0 : fbb.CreateString(r.message);
  const auto res = wire::CreateCommandResult(fbb, r.request_id,
                                             static_cast<wire::CommandStatus>(r.status),
                                             static_cast<wire::RejectReason>(r.reason), msg,
                                             r.applied_step, stats, job, snapshots, garages, signals, vehicle, zones);
  fbb.Finish(wire::CreateServerFrame(fbb, wire::ServerMessage::CommandResult, res.Union()),
             wire::ServerFrameIdentifier());
  return finish_frame(fbb);
}

}  // namespace

WelcomeInfo make_welcome_info(const core::World& world, std::string server_version, ClockMode clock_mode) {
  const core::Scenario& scenario = world.scenario();
  WelcomeInfo w{std::move(server_version), scenario.id, scenario.step_us, clock_mode, world.lanes().lanes(), {}, {}};
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
    w.signals.push_back({sg.id, lane_index(sg.lane), static_cast<float>(sg.stop_alpha), static_cast<float>(sg.yield_alpha)});
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
        signals_(io_, SIGINT, SIGTERM),
        stop_timer_(io_) {}

  ListenResult listen();
  void start_accept();
  void publish(std::shared_ptr<const PublishedFrame> frame);
  void deliver_result(OutboundResult result);
  void deliver_job_update(std::uint32_t session_id, JobInfo job);
  void stop();
  void remove(std::uint32_t id);

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
  std::uint32_t next_session_id_ = 1;
  bool stopping_ = false;

  std::mutex latest_mu_;
  std::shared_ptr<const PublishedFrame> latest_;  // guarded by latest_mu_
  std::atomic<bool> notify_pending_{false};
  std::shared_ptr<const PublishedFrame> latest_seen_;  // network thread only
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
    peer_ = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  std::uint32_t id() const { return id_; }
  const std::string& peer() const { return peer_; }

  void start() {
    asio::error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
    handshake_timer_.expires_after(std::chrono::milliseconds(server_.options_.handshake_timeout_ms));
    handshake_timer_.async_wait([self = shared_from_this()](const asio::error_code& e) {
      if (!e && self->phase_ == Phase::AwaitHello) {
        self->fail(wire::ErrorCode::HandshakeTimeout,
                   "no Hello within " + std::to_string(self->server_.options_.handshake_timeout_ms) +
                       " ms");
      }
    });
    read_more();
  }

  void on_frame_published(const std::shared_ptr<const PublishedFrame>& frame) {
    if (phase_ != Phase::Ready || !subscribed_) return;
    if (frame->world_epoch != epoch_) {
      // The world was replaced: never diff ids across worlds.
      epoch_ = frame->world_epoch;
      tracker_.reset();
    }
    if (frame->step <= last_sent_step_ && !tracker_.baseline_pending()) return;
    const auto now = std::chrono::steady_clock::now();
    if (out_bytes_ > server_.options_.outbound_bytes_max) {
      // Behind: skip this step; the next delta will coalesce everything missed.
      if (!over_cap_since_) over_cap_since_ = now;
      if (now - *over_cap_since_ > std::chrono::milliseconds(server_.options_.overflow_disconnect_ms)) {
        fail(wire::ErrorCode::OutboundOverflow,
             "client did not read for " + std::to_string(server_.options_.overflow_disconnect_ms) +
                 " ms with more than " + std::to_string(server_.options_.outbound_bytes_max) +
                 " bytes queued");
      }
      ++deltas_coalesced_;
      return;
    }
    over_cap_since_.reset();
    tracker_.encode(*frame, fbb_);
    last_sent_step_ = frame->step;
    enqueue(finish_frame(fbb_));
  }

  void send_result(const OutboundResult& r) {
    if (inflight_ > 0) --inflight_;
    if (phase_ != Phase::Ready) return;
    enqueue(make_result_frame(r));
  }

  void send_job_update(const JobInfo& j) {
    if (phase_ != Phase::Ready) return;
    enqueue(make_job_update_frame(j));
  }

  // Sends an Error frame, then closes this connection only.
  void fail(wire::ErrorCode code, const std::string& message) {
    if (phase_ == Phase::Closing || phase_ == Phase::Closed) return;
    spdlog::info("client {} ({}): closing: {}: {}", id_, peer_, wire::EnumNameErrorCode(code), message);
    phase_ = Phase::Closing;
    handshake_timer_.cancel();
    // Bound the time a peer that never reads can hold the connection open.
    close_timer_.expires_after(std::chrono::seconds(1));
    close_timer_.async_wait([self = shared_from_this()](const asio::error_code& e) {
      if (!e) self->close_now();
    });
    enqueue(make_error_frame(code, message));
  }

  void close_now() {
    if (phase_ == Phase::Closed) return;
    phase_ = Phase::Closed;
    handshake_timer_.cancel();
    close_timer_.cancel();
    asio::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    server_.remove(id_);
  }

 private:
  enum class Phase { AwaitHello, Ready, Closing, Closed };

  void read_more() {
    socket_.async_read_some(asio::buffer(read_buf_), [self = shared_from_this()](
                                                         const asio::error_code& ec, std::size_t n) {
      self->on_read(ec, n);
    });
  }

  void on_read(const asio::error_code& ec, std::size_t n) {
    if (phase_ == Phase::Closed) return;
    if (ec) {
      if (phase_ != Phase::Closing && ec != asio::error::eof) {
        spdlog::debug("client {} ({}): read error: {}", id_, peer_, ec.message());
      }
      close_now();
      return;
    }
    if (phase_ == Phase::Closing) {
      // Drain and discard until the peer closes, so our Error frame is not
      // destroyed by a reset caused by unread input.
      read_more();
      return;
    }
    decoder_.feed({read_buf_.data(), n});
    std::span<const std::uint8_t> payload;
    while (phase_ == Phase::AwaitHello || phase_ == Phase::Ready) {
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
        if (frame->message_as_Subscribe() != nullptr) return handle_subscribe(*frame->message_as_Subscribe());
        break;
      case wire::ClientMessage::Command:
        if (frame->message_as_Command() != nullptr) return handle_command(*frame->message_as_Command());
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
      fail(wire::ErrorCode::ProtocolVersionMismatch,
           "server speaks protocol " + std::to_string(proto::kProtocolVersion) + ", client sent " +
               std::to_string(hello.protocol_version()));
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
    if (hello.client_name() != nullptr) name_ = hello.client_name()->str();
    handshake_timer_.cancel();
    phase_ = Phase::Ready;
    spdlog::info("client {} ({}) '{}' joined as {}", id_, peer_, name_,
                 role_ == Role::Operator ? "operator" : "viewer");

    const WelcomeInfo& w = server_.welcome_;
    flatbuffers::FlatBufferBuilder fbb(4096);
    std::vector<flatbuffers::Offset<wire::LaneInfo>> lanes;
    lanes.reserve(w.lanes.size());
    for (std::size_t i = 0; i < w.lanes.size(); ++i) {
      const core::Lane& lane = w.lanes[i];
      std::vector<wire::Vec2> pts;
      pts.reserve(lane.points.size());
      for (const core::Vec2& p : lane.points) {
        pts.emplace_back(static_cast<float>(p.x_m), static_cast<float>(p.y_m));
      }
      lanes.push_back(wire::CreateLaneInfoDirect(
          fbb, static_cast<std::uint32_t>(i), lane.id.c_str(), static_cast<wire::LaneKind>(lane.kind),
          &pts, static_cast<float>(lane.length_m), static_cast<float>(lane.speed_mps_limit),
          &lane.successors));
    }
    std::vector<flatbuffers::Offset<wire::GarageGeometry>> garages;
    for (const GarageGeometry& g : w.garages) {
      garages.push_back(wire::CreateGarageGeometryDirect(fbb, g.id.c_str(), g.entrance_lane, &g.route));
    }
    std::vector<flatbuffers::Offset<wire::SignalGeometry>> signals;
    for (const SignalGeometry& sg : w.signals) {
      signals.push_back(wire::CreateSignalGeometryDirect(fbb, sg.id.c_str(), sg.lane, sg.stop_alpha, sg.yield_alpha));
    }
    const std::uint64_t current = server_.latest_seen_ ? server_.latest_seen_->step : 0;
    const auto welcome = wire::CreateWelcomeDirect(
        fbb, w.server_version.c_str(), proto::kProtocolVersion, id_,
        role_ == Role::Operator ? wire::Role::Operator : wire::Role::Viewer, w.step_us,
        to_wire(w.clock_mode), w.scenario_id.c_str(), current, &lanes, &garages, &signals);
    fbb.Finish(wire::CreateServerFrame(fbb, wire::ServerMessage::Welcome, welcome.Union()),
               wire::ServerFrameIdentifier());
    enqueue(finish_frame(fbb));
  }

  void handle_subscribe(const wire::Subscribe& sub) {
    std::uint32_t mask = 0;
    if (sub.kinds() == nullptr || sub.kinds()->size() == 0) {
      mask = ~0u;
    } else {
      for (const auto k : *sub.kinds()) mask |= 1u << (static_cast<std::uint32_t>(k) & 31u);
    }
    tracker_.set_kind_mask(mask);
    if (server_.latest_seen_) epoch_ = server_.latest_seen_->world_epoch;
    subscribed_ = true;
    // Late join is normal: send the baseline now from the latest frame rather
    // than waiting for the next step (which, in manual mode, may never come).
    if (server_.latest_seen_) on_frame_published(server_.latest_seen_);
  }

  void reject(std::uint32_t request_id, core::RejectReason reason, std::string message) {
    OutboundResult r;
    r.session_id = id_;
    r.request_id = request_id;
    r.status = core::CommandStatus::Rejected;
    r.reason = reason;
    r.message = std::move(message);
    r.applied_step = server_.latest_seen_ ? server_.latest_seen_->step : 0;
    ++inflight_;  // send_result() decrements
    send_result(r);
  }

  static ControlCommand named(ControlCommand::Kind kind, const flatbuffers::String* name) {
    return ControlCommand{kind, 0, name != nullptr ? name->str() : std::string(), 0, {}};
  }
  static std::string str(const flatbuffers::String* s) { return s != nullptr ? s->str() : std::string(); }

  void handle_command(const wire::Command& cmd) {
    InboundCommand in;
    in.session_id = id_;
    in.request_id = cmd.request_id();
    in.role = role_;
    bool needs_operator = true;
    if (cmd.body_type() != wire::CommandBody::NONE && cmd.body() == nullptr) {
      return reject(cmd.request_id(), core::RejectReason::InvalidArgument, "command body is missing");
    }
    switch (cmd.body_type()) {
      case wire::CommandBody::Pause:
        in.body = ControlCommand{ControlCommand::Kind::Pause, 0, {}, 0, {}};
        break;
      case wire::CommandBody::Resume:
        in.body = ControlCommand{ControlCommand::Kind::Resume, 0, {}, 0, {}};
        break;
      case wire::CommandBody::Step:
        in.body = ControlCommand{ControlCommand::Kind::Step, cmd.body_as_Step()->count(), {}, 0, {}};
        break;
      case wire::CommandBody::QueryStats:
        in.body = ControlCommand{ControlCommand::Kind::QueryStats, 0, {}, 0, {}};
        needs_operator = false;
        break;
      case wire::CommandBody::SetPedestrianTarget:
        in.body = core::WorldCommand{core::SetPedestrianTarget{cmd.body_as_SetPedestrianTarget()->count()}};
        break;
      case wire::CommandBody::DespawnEntity: {
        const wire::EntityId* id = cmd.body_as_DespawnEntity()->id();
        if (id == nullptr) return reject(cmd.request_id(), core::RejectReason::InvalidArgument, "id is required");
        in.body = core::WorldCommand{core::DespawnEntity{core::EntityId{id->index(), id->generation()}}};
        break;
      }
      case wire::CommandBody::Checkpoint:
        in.body = named(ControlCommand::Kind::Checkpoint, cmd.body_as_Checkpoint()->name());
        break;
      case wire::CommandBody::Restore:
        in.body = named(ControlCommand::Kind::Restore, cmd.body_as_Restore()->name());
        break;
      case wire::CommandBody::Save:
        in.body = named(ControlCommand::Kind::Save, cmd.body_as_Save()->name());
        break;
      case wire::CommandBody::Load:
        in.body = named(ControlCommand::Kind::Load, cmd.body_as_Load()->name());
        break;
      case wire::CommandBody::ListSnapshots:
        in.body = ControlCommand{ControlCommand::Kind::ListSnapshots, 0, {}, 0, {}};
        needs_operator = false;
        break;
      case wire::CommandBody::DeleteSnapshot:
        in.body = named(ControlCommand::Kind::DeleteSnapshot, cmd.body_as_DeleteSnapshot()->name());
        break;
      case wire::CommandBody::QueryJob:
        in.body = ControlCommand{ControlCommand::Kind::QueryJob, 0, {}, cmd.body_as_QueryJob()->job_id(), {}};
        needs_operator = false;
        break;
      case wire::CommandBody::GarageRequest: {
        const wire::GarageRequest* g = cmd.body_as_GarageRequest();
        in.body = core::WorldCommand{core::GarageRequest{str(g->garage()), str(g->request_id()), str(g->prototype()),
                                                         str(g->lane()), g->priority()}};
        break;
      }
      case wire::CommandBody::CancelGarageRequest: {
        const wire::CancelGarageRequest* c = cmd.body_as_CancelGarageRequest();
        in.body = core::WorldCommand{core::CancelGarageRequest{str(c->garage()), str(c->request_id())}};
        break;
      }
      case wire::CommandBody::SetVehicleStrategy: {
        const wire::SetVehicleStrategy* c = cmd.body_as_SetVehicleStrategy();
        if (c->id() == nullptr) return reject(cmd.request_id(), core::RejectReason::InvalidArgument, "id is required");
        in.body = core::WorldCommand{core::SetVehicleStrategy{core::EntityId{c->id()->index(), c->id()->generation()},
                                                              static_cast<std::uint8_t>(c->strategy())}};
        break;
      }
      case wire::CommandBody::SetObservers: {
        const wire::SetObservers* c = cmd.body_as_SetObservers();
        core::SetObservers obs;
        if (c->points() != nullptr) {
          for (const wire::Vec2* p : *c->points()) obs.points.push_back({p->x(), p->y()});
        }
        in.body = core::WorldCommand{std::move(obs)};
        break;
      }
      case wire::CommandBody::SetHour:
        in.body = core::WorldCommand{core::SetHour{cmd.body_as_SetHour()->hour()}};
        break;
      case wire::CommandBody::SetTimeScale:
        in.body = core::WorldCommand{core::SetTimeScale{cmd.body_as_SetTimeScale()->scale()}};
        break;
      case wire::CommandBody::ForceFull: {
        const wire::ForceFull* f = cmd.body_as_ForceFull();
        if (f->id() == nullptr) return reject(cmd.request_id(), core::RejectReason::InvalidArgument, "id is required");
        in.body = core::WorldCommand{core::ForceFull{core::EntityId{f->id()->index(), f->id()->generation()}, f->on()}};
        break;
      }
      case wire::CommandBody::QueryZones:
        in.body = ControlCommand{ControlCommand::Kind::QueryZones, 0, {}, 0, {}};
        needs_operator = false;
        break;
      case wire::CommandBody::QueryGarages:
        in.body = ControlCommand{ControlCommand::Kind::QueryGarages, 0, {}, 0, {}};
        needs_operator = false;
        break;
      case wire::CommandBody::QuerySignals:
        in.body = ControlCommand{ControlCommand::Kind::QuerySignals, 0, {}, 0, {}};
        needs_operator = false;
        break;
      case wire::CommandBody::QueryVehicle: {
        const wire::EntityId* id = cmd.body_as_QueryVehicle()->id();
        if (id == nullptr) return reject(cmd.request_id(), core::RejectReason::InvalidArgument, "id is required");
        in.body = ControlCommand{ControlCommand::Kind::QueryVehicle, 0, {}, 0,
                                 core::EntityId{id->index(), id->generation()}};
        needs_operator = false;
        break;
      }
      default:
        return reject(cmd.request_id(), core::RejectReason::UnknownCommand,
                      "unknown command type " + std::to_string(static_cast<int>(cmd.body_type())));
    }
    if (needs_operator && role_ != Role::Operator) {
      return reject(cmd.request_id(), core::RejectReason::NotAuthorized,
                    std::string(wire::EnumNameCommandBody(cmd.body_type())) + " requires the operator role");
    }
    if (inflight_ >= server_.options_.inflight_commands_max) {
      return reject(cmd.request_id(), core::RejectReason::InboxFull,
                    "more than " + std::to_string(server_.options_.inflight_commands_max) +
                        " commands in flight for this client");
    }
    if (!server_.commands_.try_push(std::move(in))) {
      return reject(cmd.request_id(),
                    server_.commands_.closed() ? core::RejectReason::ShuttingDown : core::RejectReason::InboxFull,
                    server_.commands_.closed() ? "server is shutting down" : "server command queue is full");
    }
    ++inflight_;
  }

  void enqueue(SharedBytes bytes) {
    out_bytes_ += bytes->size();
    outq_.push_back(std::move(bytes));
    if (!writing_) write_next();
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
    asio::async_write(socket_, asio::buffer(*outq_.front()),
                      [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
                        if (self->phase_ == Phase::Closed) return;
                        self->out_bytes_ -= self->outq_.front()->size();
                        self->outq_.pop_front();
                        if (ec) {
                          spdlog::debug("client {} ({}): write error: {}", self->id_, self->peer_, ec.message());
                          self->close_now();
                          return;
                        }
                        self->write_next();
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
  std::uint64_t last_sent_step_ = 0;
  std::uint64_t epoch_ = 0;
  DeltaTracker tracker_;
  flatbuffers::FlatBufferBuilder fbb_{1 << 16};
  std::deque<SharedBytes> outq_;
  std::size_t out_bytes_ = 0;
  bool writing_ = false;
  std::optional<std::chrono::steady_clock::time_point> over_cap_since_;
  std::uint64_t deltas_coalesced_ = 0;
  std::uint32_t inflight_ = 0;
};

std::string check_bind_policy(const ServerOptions& options) {
  asio::error_code ec;
  const auto addr = asio::ip::make_address(options.bind_address, ec);
  if (ec) return "invalid bind address '" + options.bind_address + "': " + ec.message();
  if (!addr.is_loopback() && options.token.empty()) {
    return "refusing to bind non-loopback address " + options.bind_address + " without a token (set --token or BUSTLE_TOKEN)";
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
  r.address = local.address().to_string();
  r.port = local.port();
  signals_.async_wait([this](const asio::error_code& e, int sig) {
    if (!e && signal_fn_) signal_fn_(sig);
  });
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
    auto session = std::make_shared<Session>(*this, std::move(socket), id);
    if (sessions_.size() >= options_.max_clients) {
      // Tell the client why before closing; it never joins.
      session->fail(wire::ErrorCode::ServerFull,
                    "server has " + std::to_string(options_.max_clients) + " clients (max)");
      sessions_.emplace(id, session);
    } else {
      sessions_.emplace(id, session);
      owner_.client_count_.store(static_cast<std::uint32_t>(sessions_.size()));
      spdlog::debug("client {} connected from {}", id, session->peer());
      session->start();
    }
    start_accept();
  });
}

void Server::Impl::remove(std::uint32_t id) {
  sessions_.erase(id);
  owner_.client_count_.store(static_cast<std::uint32_t>(sessions_.size()));
  if (stopping_ && sessions_.empty()) io_.stop();
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
    for (auto& s : targets) s->on_frame_published(latest_seen_);
  });
}

void Server::Impl::deliver_result(OutboundResult result) {
  asio::post(io_, [this, r = std::move(result)] {
    auto it = sessions_.find(r.session_id);
    if (it != sessions_.end()) it->second->send_result(r);
  });
}

void Server::Impl::deliver_job_update(std::uint32_t session_id, JobInfo job) {
  asio::post(io_, [this, session_id, j = std::move(job)] {
    auto it = sessions_.find(session_id);
    if (it != sessions_.end()) it->second->send_job_update(j);
  });
}

void Server::Impl::stop() {
  asio::post(io_, [this] {
    if (stopping_) return;
    stopping_ = true;
    asio::error_code ec;
    acceptor_.close(ec);
    signals_.cancel(ec);
    std::vector<std::shared_ptr<Session>> targets;
    for (auto& [id, s] : sessions_) targets.push_back(s);
    for (auto& s : targets) s->fail(wire::ErrorCode::ServerShuttingDown, "server is shutting down");
    if (sessions_.empty()) {
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
    : impl_(std::make_unique<Impl>(*this, std::move(options), std::move(welcome), commands)) {}

Server::~Server() = default;

Server::ListenResult Server::listen() { return impl_->listen(); }
void Server::run() { impl_->io_.run(); }
void Server::publish(std::shared_ptr<const PublishedFrame> frame) { impl_->publish(std::move(frame)); }
void Server::deliver_result(OutboundResult result) { impl_->deliver_result(std::move(result)); }
void Server::deliver_job_update(std::uint32_t session_id, JobInfo job) {
  impl_->deliver_job_update(session_id, std::move(job));
}
void Server::stop() { impl_->stop(); }
void Server::on_signal(std::function<void(int)> fn) {
  asio::post(impl_->io_, [this, f = std::move(fn)]() mutable { impl_->signal_fn_ = std::move(f); });
}

}  // namespace bustle::net
