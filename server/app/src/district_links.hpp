// The links between district servers (docs/districts.md): neighbour
// lockstep over TCP. A district starts step k only when StepEnd(k - 1) has
// arrived from every neighbour; StepEnd(k) carries the sender's digest after
// step k and the pedestrians that crossed into the receiver (a
// core::BorderArrivals), which the receiver submits before its step k + 1,
// in sender order, recorded like any command.
//
// Wiring: every district listens (--district-listen); a district dials its
// neighbours with a lower index (--district-peers names where they listen)
// and is dialled by the others, so each pair shares one connection and the
// districts can start in index order with ephemeral ports. A frame is a
// 4-byte little-endian length and a JSON object. On every connection both
// sides first send {"type":"hello","district":K,"scenario":ID,"next_step":n}
// (n: the first StepEnd it still needs), then
// {"type":"step_end","step":k,"digest":D,"arrivals":{...}} per step.
//
// Recovery: a link that drops is dialled again (or accepted again) until the
// neighbour is back; each side keeps the StepEnds it sent for the last
// kResendSteps steps and, on a hello, sends again those from its next_step.
// A receiver applies each step once (a repeat is dropped; a gap is an
// error), so a district restarted from its recording (--resume) and the
// neighbours that waited for it go on as if nothing happened. Waiting longer
// than wait_limit for a neighbour ends the district with an error naming it.
//
// Threads: one accepts, one per link dials and reads, one per accepted
// connection reads; the sim thread (or the batch loop) sends and waits.
// Nothing here decides what a step computes: the arrivals are commands.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bustle/core/command.hpp"
#include "bustle/core/scenario.hpp"
#include "bustle/core/status.hpp"
#include "bustle/core/world.hpp"

namespace bustle::app {

// Where a neighbour with a lower index listens.
struct DistrictPeer {
  std::uint32_t district = 0;
  std::string host;
  std::uint16_t port = 0;
};

struct DistrictLinkOptions {
  std::uint32_t own = 0;
  std::vector<std::string> district_ids;  // the map's ids, index order (for messages)
  std::string scenario_id;
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 0;          // 0: any free port (listen_port() says which)
  std::vector<std::uint32_t> neighbours;  // sorted
  std::vector<DistrictPeer> dial;         // every neighbour below `own`, where it listens
  std::uint64_t first_step = 0;           // the world's step at start: the first StepEnd needed
  std::chrono::milliseconds wait_limit{60'000};  // waiting longer for a neighbour fails
};

// How many of its last StepEnds a district can send again to a neighbour
// that comes back (a restarted one needs those since its last recorded tick).
inline constexpr std::uint64_t kResendSteps = 4096;
// How often a district waiting at its barrier calls await_step_end's idle.
inline constexpr std::chrono::milliseconds kIdleEvery{50};

// The districts whose lanes lead into district `own`'s or that its lanes lead
// into (the district map's borders), sorted.
std::vector<std::uint32_t> district_neighbours(const core::Scenario& s, std::uint32_t own);

// One neighbour's end of a step.
struct StepEnd {
  std::uint32_t from = 0;
  std::uint64_t step = 0;
  std::uint64_t digest = 0;
  core::BorderArrivals arrivals;  // who crossed into this district (may be none)
};

class DistrictLinks {
 public:
  explicit DistrictLinks(DistrictLinkOptions options);
  ~DistrictLinks();  // closes every link and joins the threads
  DistrictLinks(const DistrictLinks&) = delete;
  DistrictLinks& operator=(const DistrictLinks&) = delete;

  // Binds the listener (an error names the address) and starts accepting
  // and dialling.
  core::Status start();
  std::uint16_t listen_port() const { return listen_port_; }

  // Sends StepEnd(step) to every neighbour: the digest and what the step
  // sends it, `outbox[its index]` (World::border_outbox: pedestrians and
  // vehicles crossing, ghosts, ids going home). A link not connected yet
  // gets it on connection.
  void send_step_end(std::uint64_t step, std::uint64_t digest,
                     std::span<const core::BorderArrivals> outbox);

  // Blocks until StepEnd(step) arrived from every neighbour and returns them
  // in neighbour order, or nullopt when `stop` is set or a link failed
  // (error() says which). Logs a line every few seconds while it waits, and
  // calls `idle` (if any) about every kIdleEvery meanwhile, on the caller's
  // thread, no lock held: the sim thread answers queries there.
  std::optional<std::vector<StepEnd>> await_step_end(std::uint64_t step,
                                                     const std::atomic<bool>& stop,
                                                     const std::function<void()>& idle = {});
  core::Status error() const;

  // The two calls around a step (the sim thread's and batch mode's): before
  // it, await the neighbours' StepEnd of the world's current step and submit
  // their arrivals in sender order, appending each submitted envelope to
  // `recorded` (for the recording); false when `stop` is set or a link failed
  // (error()), or when the inbox refused an arrival (which is never dropped:
  // the district stops instead). After it, send this world's StepEnd.
  bool feed(core::World& world, const std::atomic<bool>& stop,
            std::vector<core::CommandEnvelope>& recorded, const std::function<void()>& idle = {});
  void step_ended(const core::World& world) {
    send_step_end(world.step_index(), world.digest(), world.border_outbox());
  }

  std::uint64_t bytes_sent() const { return bytes_sent_.load(); }
  std::uint64_t bytes_received() const { return bytes_received_.load(); }
  // Wall time spent in await_step_end (the barrier's cost), and its calls.
  double wait_s() const { return static_cast<double>(wait_ns_.load()) * 1e-9; }
  std::uint64_t waits() const { return waits_.load(); }

 private:
  struct Link;
  struct Impl;
  void accept_loop();
  void handshake(std::size_t accepted);  // an accepted connection's hello, then its reads
  void dial_loop(Link& link, DistrictPeer peer);
  // A connection whose hellos are exchanged: the link sends again what the
  // neighbour still needs, then reads its StepEnds until the connection ends.
  void serve(Link& link, std::uint64_t peer_next_step);
  void read_loop(Link& link);
  void link_down(Link& link, const std::string& why);
  void fail(const std::string& why);  // an error that ends the district
  Link* link_of(std::uint32_t district);
  std::string name(std::uint32_t district) const;

  DistrictLinkOptions options_;
  std::unique_ptr<Impl> impl_;
  std::vector<std::unique_ptr<Link>> links_;   // one per neighbour, in neighbour order
  std::vector<std::thread> threads_;           // accept, dial (started by start())
  std::vector<std::thread> accepted_threads_;  // one per accepted connection (under mutex_)
  std::atomic<std::uint64_t> next_needed_{0};  // the StepEnd this district waits for next
  std::uint16_t listen_port_ = 0;
  std::atomic<bool> closing_{false};
  mutable std::mutex mutex_;  // inbound queues, link states, error_
  std::condition_variable arrived_;
  core::Status error_;
  std::atomic<std::uint64_t> bytes_sent_{0}, bytes_received_{0};
  std::atomic<std::uint64_t> wait_ns_{0}, waits_{0};
};

}  // namespace bustle::app
