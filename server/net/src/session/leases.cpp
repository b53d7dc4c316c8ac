// Leases are this client's view and stay here: reports are kept by the
// tracker, QueryLeases is answered on the network side, and only "a client
// holds an awaited spawned entity" reaches the sim thread.
#include <algorithm>

#include "session.hpp"

namespace bustle::net {

// Leases are this client's view, kept here; only "some client holds an
// awaited spawned entity" reaches the sim thread (forward_held), and never
// the World.
void Session::handle_lease_report(const wire::LeaseReport& report) {
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
void Session::forward_held() {
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

void Session::answer_lease_query(std::uint32_t request_id) {
  OutboundResult r = network_answer(request_id, core::CommandStatus::Accepted);
  r.applied_step = last_sent_step_;
  r.leases = tracker_.lease_summary(last_sent_step_, server_.options_.lease_grace_steps);
  r.lease_grace_steps = server_.options_.lease_grace_steps;
  send_network_answer(r);
}

}  // namespace bustle::net
