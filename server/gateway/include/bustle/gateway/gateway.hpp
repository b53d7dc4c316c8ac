// The gateway's loop (bustle-gateway; docs/districts.md, "The gateway").
//
// Interest: the districts stream what the gateway's clients need. The
// union of the sessions' needs (net::CoverageRegistry: the whole city, or
// discs around their observers, hysteresis included) is asked of every
// district as its subscription's observers (the whole city beyond 16 discs);
// a frame's coverage is the request every district applies, so a client
// whose need is newer waits a step or two, as on a server whose frames
// pose only what clients read.
//
// Threads: one feed thread per district (district_feed.hpp), one network
// thread running the net::Server its clients connect to, and this loop's
// thread, which alone owns the CityMerger. The loop takes the districts'
// Deltas step by step: step k is published once every district's next
// Delta is at k or later, after each district's Delta for k is applied. A
// district that is missing therefore holds the gateway's stream at its last
// step, as it holds its neighbours, and nothing is published that a later
// Delta would contradict.
//
// Commands from the gateway's clients: QueryStats is answered here (the
// city's step and digest, and each district's); Subscribe, UpdateInterest
// and lease reports are the network side's, as in every server. A command
// about one entity (QueryEntity, QueryVehicle, DespawnEntity, KillPedestrian,
// ForceFull, SetVehicleStrategy, SetAdmissionMask) or one lane
// (SetLaneClosed) goes to the district that owns it through that district's
// CommandRelay, which answers the client with the district's answer. Pause,
// Resume, SetHour, SetTimeScale and SetObservers (points, not a follow) go
// to every district (each applies it at its next step; the neighbour
// lockstep keeps the others within a step of it), answered once every
// district has. Every other command is refused (UnknownCommand), naming the
// district servers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bustle/core/lane_graph.hpp"
#include "bustle/core/scenario.hpp"
#include "bustle/gateway/city_merger.hpp"
#include "bustle/gateway/command_relay.hpp"
#include "bustle/gateway/district_feed.hpp"
#include "bustle/net/command_queue.hpp"
#include "bustle/net/server.hpp"

namespace bustle::gateway {

// Events per district the gateway holds before its feed stops reading.
inline constexpr std::size_t kFeedDepth = 64;

// What the operations endpoint reports (--metrics-bind): the loop updates it
// on every turn and status() hands out a copy, so the HTTP threads never
// touch the merger.
struct GatewayStatus {
  struct District {
    std::string id;
    bool streaming = false;  // a baseline arrived since the connection was last lost
    std::uint64_t step = 0;  // of its latest Delta
    std::uint32_t entities = 0;
  };
  bool published = false;  // a step went out to the clients
  std::uint64_t published_step = 0;
  std::uint32_t published_entities = 0;
  std::vector<District> districts;  // map order
  MergerCounters merger;
  std::chrono::steady_clock::time_point heartbeat;  // the loop's last turn
};

class Gateway {
 public:
  Gateway(const core::Scenario& scenario, const core::LaneGraph& lanes, net::Server& server,
          net::CommandQueue& commands, std::vector<FeedSettings> feeds, CityFacts city);
  ~Gateway();

  // Runs until `stop` (returns 0) or a district turns out to be another
  // city (returns 2, logged).
  int run(const std::atomic<bool>& stop);
  // Thread-safe: the loop's latest copy.
  GatewayStatus status() const;

 private:
  // Applies whole steps while every district has one queued; false on Fatal.
  bool merge_ready_steps();
  // Asks every district for what the gateway's clients need now (the
  // sessions' coverage registry), when that changed.
  void follow_interest();
  // What every district streams now: the requested coverage of the oldest
  // interest version a district still applies.
  net::Coverage streamed_coverage();
  void handle(net::InboundCommand cmd);
  // Whether a command goes to every district: Pause, Resume, SetHour,
  // SetTimeScale and SetObservers with points (refused, with the reason and
  // message set, when it follows an entity).
  static bool city_wide(const net::InboundCommand& cmd, core::RejectReason& reason,
                        std::string& why);
  // Sent to every district, answered once all have answered (Accepted when
  // every one accepted, else which did not).
  void broadcast(net::InboundCommand& cmd);
  // The district a command must go to; nullopt with the answer's reason and
  // message when it goes nowhere.
  std::optional<std::size_t> target_district(const net::InboundCommand& cmd,
                                             core::RejectReason& reason, std::string& why) const;
  std::optional<std::size_t> entity_district(core::EntityId id, core::RejectReason& reason,
                                             std::string& why) const;
  net::StatsSnapshot stats() const;
  // Updates what status() returns.
  void note_status();

  CityMerger merger_;
  net::Server& server_;
  net::CommandQueue& commands_;
  FeedInbox inbox_;
  std::vector<std::unique_ptr<DistrictFeed>> feeds_;
  std::vector<std::unique_ptr<CommandRelay>> relays_;  // per district
  // Coverage asked of the districts, by registry version (0: the whole city,
  // what a feed asks before the first request).
  std::map<std::uint64_t, net::Coverage> requested_{{0, net::Coverage{}}};
  std::uint64_t requested_version_ = 0;
  const core::LaneGraph& lanes_;
  std::map<std::string, std::size_t> garage_district_;  // garage id -> its district
  std::uint32_t step_us_ = 0;
  std::uint64_t published_step_ = 0;
  bool published_ = false;
  std::uint32_t published_entities_ = 0;
  mutable std::mutex status_mu_;
  GatewayStatus status_;
};

}  // namespace bustle::gateway
