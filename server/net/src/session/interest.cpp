// Subscribe and UpdateInterest: the client's interest, validated before it
// changes anything, and its observers forwarded to the sim thread (tiers).
#include "session.hpp"

namespace bustle::net {

void Session::handle_subscribe(const wire::Subscribe& sub) {
  if (!take_rate_token(sub.request_id())) return;
  ClientInterest interest;
  if (core::Status s = read_subscribe(sub, interest, server_.options_.default_budgets); !s.ok()) {
    return reject(sub.request_id(), core::RejectReason::InvalidArgument,
                  s.within("Subscribe.").message());
  }
  tracker_.set_interest(interest, true);
  file_coverage_need();
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

void Session::handle_update_interest(const wire::UpdateInterest& upd) {
  if (!take_rate_token(upd.request_id())) return;
  if (!subscribed_) {
    return reject(upd.request_id(), core::RejectReason::InvalidArgument,
                  "UpdateInterest: not subscribed (send Subscribe first)");
  }
  ClientInterest interest = tracker_.interest();
  if (core::Status s = read_update_interest(upd, interest); !s.ok()) {
    return reject(upd.request_id(), core::RejectReason::InvalidArgument,
                  s.within("UpdateInterest.").message());
  }
  tracker_.set_interest(interest, false);
  file_coverage_need();
  announce_observers();
  answer(upd.request_id());
  // Applied now, at the current step (entities enter and leave at once),
  // not only at the next step.
  interest_changed_ = true;
  if (server_.latest_seen_) on_frame_published(server_.latest_seen_);
}

// What this client may read, filed for the frames to come. When the latest
// frame does not cover it, the sim thread is woken: a paused or manual clock
// then republishes the current step for it (a running one's next frame does).
void Session::file_coverage_need() {
  coverage_filed_ = server_.interest_coverage().set(id_, coverage_need(tracker_.interest()));
  if (server_.latest_seen_ && !covered_by(*server_.latest_seen_)) server_.commands_.notify();
}

// This session's observers feed the tier resolver (the sim driver unites
// every session's into one recorded SetClientObservers). Sent when they
// change, and once empty when the session leaves.
void Session::announce_observers() {
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

}  // namespace bustle::net
