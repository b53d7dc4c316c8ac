// The outbound queue: every frame charged against one per-client budget,
// deltas coalesced over the soft cap, reading paused until it drains, and
// writes one frame at a time.
#include <spdlog/spdlog.h>

#include "session.hpp"

namespace bustle::net {

void Session::settle_baseline() {
  if (!owes_baseline_) return;
  owes_baseline_ = false;
  server_.baselines_owed().fetch_sub(1);
}

void Session::enqueue(SharedBytes bytes, Frame frame, bool first_of_epoch) {
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

void Session::release_inflight() {
  if (inflight_ > 0) --inflight_;
}

// Frees every queued frame except the one being written (asio still reads
// it): on overflow nothing queued will ever be read in time.
void Session::drop_unsent() {
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
void Session::on_backlog_changed() {
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
                       std::to_string(self->server_.options_.outbound_bytes_max) + " bytes queued");
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

void Session::write_next() {
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

}  // namespace bustle::net
