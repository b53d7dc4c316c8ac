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
// 4-byte little-endian length and a JSON object: {"type":"hello",
// "district":K,"scenario":ID} once from the dialler, then
// {"type":"step_end","step":k,"digest":D,"arrivals":{...}} per step from
// both sides. A frame out of order, from a district that is not a
// neighbour, or for another scenario ends the link with an error naming it.
//
// Threads: one accepts, one per link dials and reads; the sim thread (or the
// batch loop) sends and waits. Nothing here decides what a step computes:
// the arrivals are commands, so a district replays alone from its recording.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
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
};

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

  // Sends StepEnd(step) to every neighbour: the digest and, for each, the
  // departures bound for it. A link not connected yet gets it on connection.
  void send_step_end(std::uint64_t step, std::uint64_t digest,
                     std::span<const core::BorderDeparture> departures);

  // Blocks until StepEnd(step) arrived from every neighbour and returns them
  // in neighbour order, or nullopt when `stop` is set or a link failed
  // (error() says which). Logs a line every few seconds while it waits.
  std::optional<std::vector<StepEnd>> await_step_end(std::uint64_t step,
                                                     const std::atomic<bool>& stop);
  core::Status error() const;

  // The two calls around a step (the sim thread's and batch mode's): before
  // it, await the neighbours' StepEnd of the world's current step and submit
  // their arrivals in sender order, appending each submitted envelope to
  // `recorded` (for the recording); false when `stop` is set or a link failed
  // (error()), or when the inbox refused an arrival (which is never dropped:
  // the district stops instead). After it, send this world's StepEnd.
  bool feed(core::World& world, const std::atomic<bool>& stop,
            std::vector<core::CommandEnvelope>& recorded);
  void step_ended(const core::World& world) {
    send_step_end(world.step_index(), world.digest(), world.border_departures());
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
  void read_loop(Link& link);
  void fail(Link& link, const std::string& why);
  Link* link_of(std::uint32_t district);
  std::string name(std::uint32_t district) const;

  DistrictLinkOptions options_;
  std::unique_ptr<Impl> impl_;
  std::vector<std::unique_ptr<Link>> links_;   // one per neighbour, in neighbour order
  std::vector<std::thread> threads_;           // accept, dial (started by start())
  std::vector<std::thread> accepted_threads_;  // one per accepted connection (under mutex_)
  std::uint16_t listen_port_ = 0;
  std::atomic<bool> closing_{false};
  mutable std::mutex mutex_;  // inbound queues, link states, error_
  std::condition_variable arrived_;
  core::Status error_;
  std::map<std::uint32_t, std::string> link_errors_;  // why a link ended, by district
  std::atomic<std::uint64_t> bytes_sent_{0}, bytes_received_{0};
  std::atomic<std::uint64_t> wait_ns_{0}, waits_{0};
};

}  // namespace bustle::app
