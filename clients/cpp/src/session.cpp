// StreamSession (session.hpp): connection states, when to build backends,
// what to send when.
#include "bustle/client/session.hpp"

#include <vector>

namespace bustle::client {

bool should_connect(NetMode mode) {
  return mode != NetMode::DedicatedServer;
}

bool same_representation(const WelcomeInfo& built_for, const WelcomeInfo& next) {
  return built_for.archetypes == next.archetypes;
}

const char* to_string(SessionState v) {
  switch (v) {
    case SessionState::Idle:
      return "idle";
    case SessionState::Connecting:
      return "connecting";
    case SessionState::Welcomed:
      return "welcomed";
    case SessionState::Subscribed:
      return "subscribed";
    case SessionState::Streaming:
      return "streaming";
  }
  return "?";
}

StreamSession::StreamSession(SessionConfig config, SessionGlue& glue, LogSink* log)
    : config_(std::move(config)), glue_(glue), log_(log), pacer_(config_.pacer) {}

StreamSession::~StreamSession() {
  shut_down();
}

void StreamSession::shut_down() {
  // The layer first: it deactivates every instance and deinitializes every
  // backend while they still exist.
  layer_.reset();
  if (built_for_) glue_.destroy_backends();
  built_for_.reset();
  state_ = SessionState::Idle;
}

std::uint32_t StreamSession::next_request_id() {
  if (++request_counter_ == 0) ++request_counter_;  // 0 asks for no answer
  return request_counter_;
}

void StreamSession::on_connecting() {
  // A new connection: whatever this one was subscribed to is gone.
  state_ = SessionState::Connecting;
  pacer_.reset();
}

void StreamSession::on_welcome(const WelcomeInfo& welcome) {
  if (built_for_ && !same_representation(*built_for_, welcome)) {
    log_to(log_, LogLevel::Info, "session", "the archetype table changed: backends rebuilt");
    shut_down();
  }
  if (!layer_) {
    layer_ = std::make_unique<RepresentationLayer>(config_.representation, log_);
    layer_->set_observer(this);
    layer_->set_world(welcome);
    glue_.make_backends(*layer_, welcome);
    built_for_ = welcome;
    ++counters_.backend_builds;
  } else {
    layer_->set_world(welcome);  // same archetypes: every backend and actor is kept
  }
  state_ = SessionState::Welcomed;
  pacer_.reset();
  glue_.on_event(SessionEvent{SessionEventKind::Connected, {}, {}, RepresentationHint::None, {}});
}

void StreamSession::on_disconnected(std::string_view why) {
  // What is drawn stays until the next baseline replaces it.
  state_ = SessionState::Idle;
  pacer_.reset();
  glue_.on_event(SessionEvent{
      SessionEventKind::Disconnected, {}, {}, RepresentationHint::None, std::string(why)});
}

std::optional<ApplySummary> StreamSession::on_delta(const Delta& delta,
                                                    std::int64_t local_receive_us) {
  const bool subscribed = state_ == SessionState::Subscribed || state_ == SessionState::Streaming;
  // After (re)subscribing, everything before the baseline is stale.
  if (!layer_ || !subscribed || (state_ == SessionState::Subscribed && !delta.baseline)) {
    ++counters_.deltas_dropped;
    return std::nullopt;
  }
  state_ = SessionState::Streaming;
  ++counters_.deltas_applied;
  return layer_->apply(delta, local_receive_us);
}

void StreamSession::on_reply(const CommandReply& reply) {
  if (reply.accepted()) return;
  ++counters_.rejected_replies;
  if (reply.request_id == subscribe_request_id_) {
    log_to(log_, LogLevel::Error, "session", "Subscribe rejected: " + reply.message);
    if (state_ == SessionState::Subscribed) state_ = SessionState::Welcomed;  // tried again
  } else {
    log_to(log_, LogLevel::Warning, "session",
           "request " + std::to_string(reply.request_id) + " rejected: " + reply.message);
  }
}

void StreamSession::subscribe(std::int64_t now_us) {
  const std::optional<InterestObserver> observer = glue_.observer();
  if (!observer) return;  // no camera yet
  SubscribeParams params;
  params.observers.push_back(*observer);
  params.budgets = config_.budgets;
  params.motion_tolerance_mm = config_.motion_tolerance_mm;
  subscribe_request_id_ = next_request_id();
  glue_.send(SessionMessage::Subscribe, build_subscribe(subscribe_request_id_, params));
  pacer_.sent(*observer, now_us);
  state_ = SessionState::Subscribed;
  ++counters_.subscribes;
}

void StreamSession::update_interest(std::int64_t now_us) {
  const std::optional<InterestObserver> observer = glue_.observer();
  if (!observer || !pacer_.due(*observer, now_us)) return;
  UpdateInterestParams params;
  params.observers.push_back(*observer);
  params.budgets = config_.budgets;
  // The answer carries nothing the client needs; an UpdateInterest cannot
  // go without a request id, so a fresh one is sent and its reply ignored.
  glue_.send(SessionMessage::UpdateInterest, build_update_interest(next_request_id(), params));
  pacer_.sent(*observer, now_us);
  ++counters_.interest_updates;
}

void StreamSession::report_leases(std::int64_t now_us) {
  if (layer_->queued_leases() == 0 || now_us - last_lease_report_us_ < config_.lease_interval_us)
    return;
  last_lease_report_us_ = now_us;
  while (layer_->queued_leases() > 0) {
    const std::vector<Lease> leases = layer_->take_leases();
    // Request id 0: no answer wanted.
    glue_.send(SessionMessage::LeaseReport, build_lease_report(0, leases));
    ++counters_.lease_reports;
  }
}

void StreamSession::tick(std::int64_t local_now_us) {
  if (!layer_) return;
  if (state_ == SessionState::Welcomed) {
    subscribe(local_now_us);
  } else if (state_ == SessionState::Subscribed || state_ == SessionState::Streaming) {
    update_interest(local_now_us);
  }
  layer_->render(local_now_us);
  if (state_ == SessionState::Streaming) report_leases(local_now_us);
}

void StreamSession::on_drawn(EntityId id, SlotId slot, RepresentationHint drawn_as) {
  glue_.on_event(SessionEvent{drawn_as == RepresentationHint::None
                                  ? SessionEventKind::EntityReleased
                                  : SessionEventKind::EntityRepresented,
                              id,
                              slot,
                              drawn_as,
                              {}});
}

}  // namespace bustle::client
