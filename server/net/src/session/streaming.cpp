// A published frame's delta for this client: whether to send one (epochs,
// coalescing over the soft cap, dots), the encode, and the queueing.
#include "session.hpp"

namespace bustle::net {

void Session::on_frame_published(const std::shared_ptr<const PublishedFrame>& frame) {
  const DeltaPlan plan = plan_delta(frame);
  if (!plan.encode) return;
  encode_delta(*frame, plan);
  queue_delta(*frame);
}

Session::DeltaPlan Session::plan_delta(const std::shared_ptr<const PublishedFrame>& frame) {
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
    for (Queued& q : outq_) q.first_of_epoch = false;  // an older world's baseline settles nothing
  }
  // A frame without entities (nobody was subscribed when it was built):
  // the sim thread publishes this step in full once it sees this session.
  if (!frame->entities_built) return {};
  // A frame built before this client's interest was filed may leave out
  // entities it reads: wait for one that covers it (file_coverage_need()).
  if (!covered_by(*frame)) return {};
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

void Session::encode_delta(const PublishedFrame& frame, const DeltaPlan& plan) {
  tracker_.encode(frame, plan.index, server_.welcome_.stream, fbb_, plan.send_dots);
}

void Session::queue_delta(const PublishedFrame& frame) {
  last_sent_step_ = frame.step;
  interest_changed_ = false;
  // Deltas are only built under the soft cap, so they never meet the hard one.
  const bool first_of_epoch = owes_baseline_ && !baseline_queued_;
  baseline_queued_ = baseline_queued_ || owes_baseline_;
  enqueue(finish_frame(fbb_), Frame::Delta, first_of_epoch);
}

}  // namespace bustle::net
