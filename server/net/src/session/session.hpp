// One client connection on the network thread: the protocol's state machine
// (server.hpp) and everything the server keeps for that client. Its work is
// split by concern, one file each in this folder:
//   handshake.cpp  the connection's life: Hello, idle timeout, closing
//   inbound.cpp    reading and verifying frames, dispatch by message type
//   interest.cpp   Subscribe and UpdateInterest; observers to the sim thread
//   leases.cpp     lease reports and QueryLeases
//   commands.cpp   commands to the sim thread, rate limits, answers
//   streaming.cpp  a published frame's delta: plan, encode, queue
//   outbound.cpp   the outbound queue, its budget, and writing
// Private to bustle::net: Server::Impl (server_impl.hpp) owns the sessions.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "../server_impl.hpp"

namespace bustle::net {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Server::Impl& server, tcp::socket socket, std::uint32_t id);

  std::uint32_t id() const { return id_; }
  const std::string& peer() const { return peer_; }
  const std::string& address() const { return address_; }
  const StreamTracker& tracker() const { return tracker_; }
  bool subscribed() const { return subscribed_; }
  std::uint64_t last_sent_step() const { return last_sent_step_; }

  // handshake.cpp
  void start();
  // Sends an Error frame, then closes this connection only.
  void fail(wire::ErrorCode code, const std::string& message);
  void close_now();
  // Closes a connection that was never started (no Error frame).
  void abort();

  // streaming.cpp: a published frame's delta in three parts, so that
  // several sessions' deltas can be encoded at once (Impl::deliver_frame):
  // whether and how to send one (network thread), the encode (any encode
  // thread: it touches this session's tracker and builder and the shared,
  // immutable frame and index only), and the queueing (network thread).
  struct DeltaPlan {
    bool encode = false;
    bool send_dots = false;
    const SpatialIndex* index = nullptr;
  };
  void on_frame_published(const std::shared_ptr<const PublishedFrame>& frame);
  DeltaPlan plan_delta(const std::shared_ptr<const PublishedFrame>& frame);
  void encode_delta(const PublishedFrame& frame, const DeltaPlan& plan);
  void queue_delta(const PublishedFrame& frame);

  // commands.cpp: what the sim thread sends back to this client.
  void send_result(const OutboundResult& r);
  void send_job_update(const JobInfo& j);
  void send_spawn_update(const SpawnReport& s);

 private:
  enum class Phase { AwaitHello, Ready, Closing, Closed };

  // What a queued frame is, for the budget: deltas are built only under the
  // soft cap; answers release an in-flight command slot when written; the
  // Error frame that closes a connection is always queued.
  using Frame = FrameKind;
  struct Queued {
    SharedBytes bytes;
    Frame frame = Frame::Push;
    bool first_of_epoch = false;  // the baseline of a replaced world (baselines_owed)
  };

  // handshake.cpp
  void handle_hello(const wire::Hello& hello);
  // Idle: nothing received from the client and nothing written to it for
  // idle_timeout_ms (a peer that vanished, or one that neither reads nor
  // sends). Re-armed lazily: activity only moves a timestamp.
  void touch() { last_activity_ = std::chrono::steady_clock::now(); }
  void arm_idle_timer();
  void leave_joined();
  void count_disconnect(std::size_t reason);

  // inbound.cpp
  void read_more();
  void on_read(const asio::error_code& ec, std::size_t n);
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
  void pump();
  void handle_payload(std::span<const std::uint8_t> payload);

  // interest.cpp
  void handle_subscribe(const wire::Subscribe& sub);
  void handle_update_interest(const wire::UpdateInterest& upd);
  void announce_observers();
  void file_coverage_need();
  // Whether `frame` poses everything this client may read: a whole frame, or
  // one built from the registry at or after this session's need was filed.
  bool covered_by(const PublishedFrame& frame) const {
    return frame.coverage.whole || frame.coverage.version >= coverage_filed_;
  }

  // leases.cpp
  void handle_lease_report(const wire::LeaseReport& report);
  void forward_held();
  void answer_lease_query(std::uint32_t request_id);

  // commands.cpp
  void handle_command(const wire::Command& cmd);
  bool take_rate_token(std::uint32_t request_id);
  OutboundResult network_answer(std::uint32_t request_id, core::CommandStatus status) const;
  void send_network_answer(const OutboundResult& r);
  void answer(std::uint32_t request_id);
  void reject(std::uint32_t request_id, core::RejectReason reason, std::string message);

  // outbound.cpp
  void settle_baseline();
  // Every frame counts against one per-client budget: its bytes plus the
  // bookkeeping that holds it, so a flood of tiny frames is charged for the
  // memory it really takes.
  static std::size_t charge(const Bytes& b) { return b.size() + kQueuedFrameOverheadBytes; }
  bool over_soft_cap() const { return out_bytes_ > server_.options_.outbound_bytes_max; }
  std::size_t hard_cap() const { return outbound_hard_max_bytes(server_.options_); }
  void enqueue(SharedBytes bytes, Frame frame, bool first_of_epoch = false);
  void release_inflight();
  void drop_unsent();
  void on_backlog_changed();
  void write_next();

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
  std::uint64_t coverage_filed_ = 0;  // registry version of this session's filed need
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

}  // namespace bustle::net
