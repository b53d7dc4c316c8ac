// DistrictFeed: the gateway's subscription to one district server.
//
// One thread per district holds an ordinary client connection (the C++
// SDK's blocking Client): Hello as a viewer, the Welcome checked against the
// gateway's own city (same scenario id, step, lanes and archetypes, or the feed
// stops with a Fatal event naming the difference), then one Subscribe to the
// whole city with exact poses and the largest budgets. Every decoded Delta
// goes into the FeedInbox in arrival order. A lost connection is an event
// too; the feed reconnects every `retry` until stopped, and the new
// subscription starts with a baseline.
//
// The inbox holds at most `depth` events per district. A feed whose queue
// is full stops reading its socket, so TCP pushes back and the district
// server coalesces its Deltas for the gateway as for any slow client: the
// gateway's memory stays bounded while one district is missing and the
// others go on.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bustle/client/messages.hpp"
#include "bustle/client/stream.hpp"

namespace bustle::client {
class Client;
}

namespace bustle::gateway {

struct FeedEvent {
  // Interest: from the next Delta on, the district streams what the
  // gateway's interest of `interest_version` asked for.
  enum class Kind : std::uint8_t { Delta, Lost, Fatal, Interest };
  Kind kind = Kind::Delta;
  client::Delta delta;                 // Kind::Delta
  std::string message;                 // Lost / Fatal: what happened
  std::uint64_t interest_version = 0;  // Kind::Interest
};

// What the gateway asks a district to stream: the whole city, or the
// entities near these discs (the gateway's clients' needs, hysteresis
// included); `version` is the gateway's coverage registry's.
struct FeedInterest {
  std::uint64_t version = 0;
  bool whole = true;
  std::vector<client::InterestObserver> observers;  // when not whole, one per disc
};

class FeedInbox {
 public:
  FeedInbox(std::size_t districts, std::size_t depth);
  // Feed threads: queues `e` for district `d`, waiting while its queue is
  // full. False once closed (nothing queued).
  bool push(std::size_t d, FeedEvent e);
  // The gateway: waits until something is pushed, `timeout` passes or close().
  void wait(std::chrono::milliseconds timeout);
  // The step of district d's first queued event if it is a Delta; nullopt
  // when its queue is empty or starts with another kind.
  std::optional<std::uint64_t> front_step(std::size_t d) const;
  bool empty(std::size_t d) const;
  FeedEvent pop(std::size_t d);  // [requires !empty(d)]
  void close();

 private:
  mutable std::mutex mu_;
  std::condition_variable pushed_, popped_;
  std::vector<std::deque<FeedEvent>> queues_;
  const std::size_t depth_;
  bool closed_ = false;
  bool signalled_ = false;
};

struct FeedSettings {
  std::size_t index = 0;  // district index in the scenario's map
  std::string district;   // its id
  std::string host;
  std::uint16_t port = 0;
  std::string token;  // sent in Hello (empty: none)
  std::chrono::milliseconds retry{500};
};

// What the feed expects of the district's Welcome.
struct CityFacts {
  std::string scenario_id;
  std::uint32_t step_us = 0;
  std::size_t lanes = 0;
  std::vector<std::string> archetypes;
};

class DistrictFeed {
 public:
  DistrictFeed(FeedSettings settings, CityFacts city, FeedInbox& inbox);
  ~DistrictFeed();
  DistrictFeed(const DistrictFeed&) = delete;
  DistrictFeed& operator=(const DistrictFeed&) = delete;

  void start();
  void stop();  // joins; call inbox.close() first so a blocked push returns
  // The stream broke (the gateway could not apply a Delta): subscribe again
  // for a new baseline.
  void request_baseline() { baseline_wanted_.store(true); }
  // Stream this from now on (UpdateInterest upstream, an Interest event
  // once the district applies it). Thread-safe.
  void request_interest(FeedInterest interest);
  const FeedSettings& settings() const { return settings_; }

 private:
  void run();
  // One connection's life; returns when it ends. False: stop for good.
  bool stream_once(bool& announced_down);

  const FeedSettings settings_;
  const CityFacts city_;
  FeedInbox& inbox_;
  // Asks for `interest` on `c` (Subscribe when `subscribe`), then queues the
  // Deltas that came before the answer and the Interest event. False: the
  // connection or the inbox ended.
  bool apply_interest(client::Client& c, const FeedInterest& interest, bool subscribe,
                      std::string& why);
  FeedInterest wanted();

  std::atomic<bool> stop_{false};
  std::atomic<bool> baseline_wanted_{false};
  std::mutex interest_mu_;
  FeedInterest wanted_;                           // guarded by interest_mu_
  std::atomic<std::uint64_t> wanted_version_{0};  // wanted_.version, read without the lock
  std::thread thread_;
};

}  // namespace bustle::gateway
