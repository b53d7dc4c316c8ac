// The gateway's loop (gateway.hpp).
#include "bustle/gateway/gateway.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace bustle::gateway {

Gateway::Gateway(const core::Scenario& scenario, const core::LaneGraph& lanes, net::Server& server,
                 net::CommandQueue& commands, std::vector<FeedSettings> feeds, CityFacts city)
    : merger_(scenario, lanes),
      server_(server),
      commands_(commands),
      inbox_(merger_.district_count(), kFeedDepth),
      lanes_(lanes),
      step_us_(scenario.step_us) {
  for (FeedSettings& f : feeds) {
    relays_.push_back(std::make_unique<CommandRelay>(f, server_));
    feeds_.push_back(std::make_unique<DistrictFeed>(std::move(f), city, inbox_));
  }
  for (const std::string& id : merger_.map().district_ids) status_.districts.push_back({id});
  // A garage dispatches in the district of its entrance lane (docs/districts.md).
  for (const core::GarageSpec& g : scenario.garages) {
    const auto lane = lanes.find(g.lane);
    if (lane && *lane < merger_.map().lane_owner.size())
      garage_district_[g.id] = merger_.map().lane_owner[*lane];
  }
  note_status();
}

Gateway::~Gateway() {
  inbox_.close();
  for (auto& f : feeds_) f->stop();
  for (auto& r : relays_) r->stop();
}

int Gateway::run(const std::atomic<bool>& stop) {
  for (auto& f : feeds_) f->start();
  for (auto& r : relays_) r->start();
  while (!stop.load()) {
    while (auto cmd = commands_.try_pop()) handle(std::move(*cmd));
    follow_interest();
    if (!merge_ready_steps()) return 2;
    note_status();
    inbox_.wait(std::chrono::milliseconds(50));
  }
  return 0;
}

// In place: the loop turns on every Delta, and the districts' ids were
// copied once (constructor), so a turn allocates nothing.
void Gateway::note_status() {
  const auto now = std::chrono::steady_clock::now();
  const std::lock_guard lock(status_mu_);
  status_.published = published_;
  status_.published_step = published_step_;
  status_.published_entities = published_entities_;
  for (std::size_t d = 0; d < merger_.district_count(); ++d) {
    const DistrictState& ds = merger_.district(d);
    GatewayStatus::District& out = status_.districts[d];
    out.streaming = ds.streaming;
    out.step = ds.step;
    out.entities = ds.entities;
  }
  status_.merger = merger_.counters();
  status_.heartbeat = now;
}

GatewayStatus Gateway::status() const {
  const std::lock_guard lock(status_mu_);
  return status_;
}

bool Gateway::merge_ready_steps() {
  const std::size_t n = merger_.district_count();
  for (;;) {
    // Events other than Deltas first: they say what happened before the
    // Deltas behind them.
    for (std::size_t d = 0; d < n; ++d) {
      while (!inbox_.empty(d) && !inbox_.front_step(d)) {
        FeedEvent e = inbox_.pop(d);
        if (e.kind == FeedEvent::Kind::Fatal) return false;
        if (e.kind == FeedEvent::Kind::Interest) {
          merger_.interest_applied(d, e.interest_version);
        } else {
          merger_.lost(d);
        }
      }
    }
    std::uint64_t k = UINT64_MAX;
    for (std::size_t d = 0; d < n; ++d) {
      const std::optional<std::uint64_t> s = inbox_.front_step(d);
      if (!s) return true;  // a district has not sent its next step yet
      k = std::min(k, *s);
    }
    for (std::size_t d = 0; d < n; ++d) {
      if (inbox_.front_step(d) != k) continue;
      const FeedEvent e = inbox_.pop(d);
      if (std::string problem = merger_.apply(d, e.delta); !problem.empty()) {
        spdlog::warn("district '{}' at step {}: {}; subscribing again for a baseline",
                     merger_.map().district_ids[d], k, problem);
        feeds_[d]->request_baseline();
      }
    }
    // A step the gateway already published (a district came back from a
    // restart at an earlier step) only updates the mirrors.
    if (published_ && k <= published_step_) continue;
    std::shared_ptr<const net::PublishedFrame> frame = merger_.frame(k, streamed_coverage());
    published_entities_ = static_cast<std::uint32_t>(frame->entities.size());
    server_.publish(std::move(frame));
    published_step_ = k;
    published_ = true;
  }
}

void Gateway::follow_interest() {
  // Every wake asks; only a change copies the sessions' discs.
  if (server_.interest_coverage().version() == requested_version_) return;
  std::uint64_t version = 0;
  net::Coverage coverage = server_.interest_coverage().current(&version);
  requested_version_ = version;
  FeedInterest ask;
  ask.version = version;
  // A Subscribe carries at most 16 observers of radius at most 100 km.
  ask.whole = coverage.whole || coverage.discs.size() > 16 ||
              std::any_of(coverage.discs.begin(), coverage.discs.end(),
                          [](const net::CoverageDisc& c) { return c.radius_m > 100'000.0; });
  if (ask.whole) {
    coverage = net::Coverage{};
  } else {
    for (const net::CoverageDisc& c : coverage.discs)
      ask.observers.push_back({c.x_m, c.y_m, 0.0, std::nullopt, c.radius_m});
  }
  coverage.version = version;
  requested_[version] = coverage;
  for (auto& f : feeds_) f->request_interest(ask);
}

net::Coverage Gateway::streamed_coverage() {
  const std::uint64_t v = merger_.interest_version();
  requested_.erase(requested_.begin(), requested_.lower_bound(v));
  const auto it = requested_.find(v);
  if (it != requested_.end()) return it->second;
  net::Coverage nothing;  // not reached: every applied version was requested
  nothing.whole = false;
  return nothing;
}

void Gateway::handle(net::InboundCommand cmd) {
  const auto* ctl = std::get_if<net::ControlCommand>(&cmd.body);
  using Kind = net::ControlCommand::Kind;
  // The network side's own notices: no district's tiers follow a gateway's
  // viewers (the districts rank from their own observers).
  if (ctl != nullptr && (ctl->kind == Kind::ClientObservers || ctl->kind == Kind::LeasesHeld))
    return;
  net::OutboundResult r;
  r.session_id = cmd.session_id;
  r.request_id = cmd.request_id;
  r.applied_step = published_step_;
  if (ctl != nullptr && ctl->kind == Kind::QueryStats) {
    r.status = core::CommandStatus::Accepted;
    r.stats.emplace(stats());
    server_.deliver_result(std::move(r));
    return;
  }
  if (city_wide(cmd, r.reason, r.message)) {
    broadcast(cmd);
    return;
  }
  r.status = core::CommandStatus::Rejected;
  if (r.reason != core::RejectReason::None) {
    server_.deliver_result(std::move(r));
    return;
  }
  const std::optional<std::size_t> d = target_district(cmd, r.reason, r.message);
  if (d && cmd.wire == nullptr) {
    r.reason = core::RejectReason::InvariantFailure;  // keep_wire_commands is set in main
    r.message = "the gateway kept no copy of the command to relay";
  } else if (d && !relays_[*d]->submit({cmd.session_id, cmd.request_id, std::move(cmd.wire)})) {
    r.reason = core::RejectReason::InboxFull;
    r.message = "district '" + merger_.map().district_ids[*d] +
                "': " + std::to_string(kRelayDepth) + " commands wait already; try again";
  } else if (d) {
    return;  // the relay answers
  }
  server_.deliver_result(std::move(r));
}

bool Gateway::city_wide(const net::InboundCommand& cmd, core::RejectReason& reason,
                        std::string& why) {
  using Kind = net::ControlCommand::Kind;
  if (const auto* ctl = std::get_if<net::ControlCommand>(&cmd.body))
    return ctl->kind == Kind::Pause || ctl->kind == Kind::Resume;
  const auto& w = std::get<core::WorldCommand>(cmd.body);
  if (const auto* o = std::get_if<core::SetObservers>(&w); o != nullptr && !o->follow.is_null()) {
    // The followed entity is one district's; the others could not follow it.
    reason = core::RejectReason::InvalidArgument;
    why =
        "SetObservers.follow: the gateway sends observers to every district, which cannot "
        "all follow one entity; give points";
    return false;
  }
  return std::holds_alternative<core::SetObservers>(w) ||
         std::holds_alternative<core::SetHour>(w) || std::holds_alternative<core::SetTimeScale>(w);
}

void Gateway::broadcast(net::InboundCommand& cmd) {
  // Every district's answer, in map order; the last to answer composes the
  // client's (on its relay's thread: the server takes results from any).
  struct Answers {
    std::mutex mu;
    std::size_t left = 0;
    std::vector<net::OutboundResult> of;
  };
  if (cmd.wire == nullptr) {  // keep_wire_commands is set in main
    net::OutboundResult r;
    r.session_id = cmd.session_id;
    r.request_id = cmd.request_id;
    r.reason = core::RejectReason::InvariantFailure;
    r.message = "the gateway kept no copy of the command to relay";
    server_.deliver_result(std::move(r));
    return;
  }
  const std::size_t n = relays_.size();
  auto answers = std::make_shared<Answers>();
  answers->left = n;
  answers->of.resize(n);
  const auto compose = [this, answers, ids = merger_.map().district_ids, session = cmd.session_id,
                        request = cmd.request_id]() {
    net::OutboundResult r;
    r.session_id = session;
    r.request_id = request;
    r.status = core::CommandStatus::Accepted;
    std::string applied, refused;
    for (std::size_t d = 0; d < answers->of.size(); ++d) {
      const net::OutboundResult& a = answers->of[d];
      const auto status =
          a.forwarded ? static_cast<core::CommandStatus>(a.forwarded->status) : a.status;
      if (status == core::CommandStatus::Accepted) {
        r.applied_step = std::max(r.applied_step, a.forwarded ? a.forwarded->applied_step : 0);
        applied += (applied.empty() ? "" : ", ") + ids[d];
        continue;
      }
      if (r.status == core::CommandStatus::Accepted) {
        r.status = core::CommandStatus::Rejected;
        r.reason = a.forwarded ? static_cast<core::RejectReason>(a.forwarded->reason) : a.reason;
      }
      refused += (refused.empty() ? "" : "; ") + ("district '" + ids[d] + "': ") +
                 (a.forwarded ? a.forwarded->message : a.message);
    }
    if (r.status != core::CommandStatus::Accepted)
      r.message =
          refused + (applied.empty() ? "; no district applied it" : "; applied in " + applied);
    server_.deliver_result(std::move(r));
  };
  for (std::size_t d = 0; d < n; ++d) {
    CommandRelay::Job job{cmd.session_id, cmd.request_id,
                          std::make_shared<wire::CommandT>(*cmd.wire),
                          [answers, d, compose](net::OutboundResult a) {
                            std::lock_guard lock(answers->mu);
                            answers->of[d] = std::move(a);
                            if (--answers->left == 0) compose();
                          }};
    if (!relays_[d]->submit(std::move(job))) {
      net::OutboundResult full;
      full.reason = core::RejectReason::InboxFull;
      full.message = std::to_string(kRelayDepth) + " commands wait already; try again";
      std::lock_guard lock(answers->mu);
      answers->of[d] = std::move(full);
      if (--answers->left == 0) compose();
    }
  }
}

std::optional<std::size_t> Gateway::entity_district(core::EntityId id, core::RejectReason& reason,
                                                    std::string& why) const {
  const client::EntityId cid{id.index, id.generation};
  if (const auto d = merger_.district_of(cid)) return d;
  reason = core::RejectReason::UnknownEntity;
  const std::string name = std::to_string(id.index) + ":" + std::to_string(id.generation);
  why = merger_.crossing(cid)
            ? "entity " + name + " is crossing between two districts; ask again next step"
            : "no district streams entity " + name;
  return std::nullopt;
}

std::optional<std::size_t> Gateway::target_district(const net::InboundCommand& cmd,
                                                    core::RejectReason& reason,
                                                    std::string& why) const {
  using Kind = net::ControlCommand::Kind;
  if (const auto* ctl = std::get_if<net::ControlCommand>(&cmd.body)) {
    if (ctl->kind == Kind::QueryEntity || ctl->kind == Kind::QueryVehicle)
      return entity_district(ctl->entity, reason, why);
  } else {
    const auto& w = std::get<core::WorldCommand>(cmd.body);
    std::optional<core::EntityId> id;
    if (const auto* c = std::get_if<core::DespawnEntity>(&w)) id = c->id;
    if (const auto* c = std::get_if<core::KillPedestrian>(&w)) id = c->id;
    if (const auto* c = std::get_if<core::ForceFull>(&w)) id = c->id;
    if (const auto* c = std::get_if<core::SetVehicleStrategy>(&w)) id = c->id;
    if (const auto* c = std::get_if<core::SetAdmissionMask>(&w)) id = c->id;
    if (id) return entity_district(*id, reason, why);
    std::optional<std::string> garage;
    if (const auto* c = std::get_if<core::GarageRequest>(&w)) garage = c->garage;
    if (const auto* c = std::get_if<core::CancelGarageRequest>(&w)) garage = c->garage;
    if (garage) {
      if (const auto it = garage_district_.find(*garage); it != garage_district_.end())
        return it->second;
      reason = core::RejectReason::InvalidArgument;
      why = "garage: no garage '" + *garage + "' in the city";
      return std::nullopt;
    }
    if (const auto* c = std::get_if<core::SetLaneClosed>(&w)) {
      std::uint32_t lane = c->lane_index;
      if (lane == UINT32_MAX) lane = lanes_.find(c->lane).value_or(UINT32_MAX);
      if (lane < merger_.map().lane_owner.size()) return merger_.map().lane_owner[lane];
      reason = core::RejectReason::InvalidArgument;
      why = "SetLaneClosed: no lane '" + c->lane + "' in the city";
      return std::nullopt;
    }
  }
  reason = core::RejectReason::UnknownCommand;
  why =
      "the gateway relays commands about one entity, lane or garage, sends the clock and "
      "observers to every district and answers QueryStats; send others to the district "
      "servers";
  return std::nullopt;
}

net::StatsSnapshot Gateway::stats() const {
  net::StatsSnapshot s;
  s.step = published_step_;
  s.sim_time_us = published_step_ * step_us_;
  s.digest = merger_.city_digest();
  s.step_us = step_us_;
  s.clock_mode = wire::ClockMode::Realtime;
  s.pedestrians = published_entities_;
  s.clients = server_.client_count();
  for (std::size_t d = 0; d < merger_.district_count(); ++d) {
    const DistrictState& st = merger_.district(d);
    auto ds = std::make_unique<wire::DistrictStatusT>();
    ds->id = merger_.map().district_ids[d];
    ds->streaming = st.streaming;
    ds->step = st.step;
    ds->digest = st.digest;
    ds->entities = st.entities;
    s.districts.push_back(std::move(ds));
  }
  return s;
}

}  // namespace bustle::gateway
