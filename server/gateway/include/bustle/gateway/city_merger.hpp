// CityMerger: one city out of its districts' streams.
//
// The gateway subscribes to every district server as an ordinary client
// (whole city, exact poses: motion_tolerance_mm 0, budgets at their
// maximum) and feeds each district's decoded Deltas here, in the order that
// district sent them. The merger keeps one client::EntityMirror per
// district and builds, for a step, the PublishedFrame a single server of
// the whole city would have published: every district's entities posed at
// that step (the same dead reckoning the district's own clients do, so to
// the millimetre), sorted by id. net::Server streams that frame to the
// gateway's clients like any server's frame, with their interest, budgets
// and tolerances.
//
// A border crossing is one entity. Ids are unique across the city and never
// change when an entity crosses, so the same id simply continues in the
// frame. Between the two districts there is one step in which nobody owns
// it: it leaves district A in A's step k and district B adopts it at step
// k+1. An entity that leaves A from a lane with a successor in another
// district is therefore kept "in transit" at its last pose (dead reckoning
// stops at the lane's end: the border) until some district enters it, or
// dropped when no district has it by step k+2 (then it was despawned there,
// not crossing).
//
// Invariants:
//   1. A frame holds each id index at most once. Should two districts both
//      hold one (a district's Deltas coalesced while a neighbour's did not),
//      the record with the newest anchor wins and `duplicates` counts it.
//   2. Nothing a district sends changes another district's mirror; a
//      district that drops out (reset) leaves its entities out of the frame
//      until its next baseline.
//   3. The frame's digest is the city digest: core::Digest over the
//      districts' (index, latest digest) pairs in map order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bustle/client/entity_mirror.hpp"
#include "bustle/client/stream.hpp"
#include "bustle/core/importance.hpp"
#include "bustle/core/lane_graph.hpp"
#include "bustle/core/scenario.hpp"
#include "bustle/net/published_frame.hpp"

namespace bustle::gateway {

// Which district owns each lane and signal of a city with a district map.
struct CityMap {
  std::vector<std::string> district_ids;    // scenario order
  std::vector<std::uint16_t> lane_owner;    // per lane index: district index
  std::vector<std::uint8_t> lane_borders;   // per lane: 1 when a successor is another district's
  std::vector<std::uint16_t> signal_owner;  // per scenario signal
};
// The map of a scenario whose district map validated (the loader checks it).
CityMap make_city_map(const core::Scenario& scenario, const core::LaneGraph& lanes);

// One district as the merger sees it (QueryStats, logs).
struct DistrictState {
  bool streaming = false;  // a baseline arrived since the last reset
  std::uint64_t step = 0;  // of its latest Delta
  std::uint64_t digest = 0;
  std::uint32_t entities = 0;
  std::uint64_t interest_version = 0;  // the gateway's interest it streams
  std::uint64_t foreign_entities = 0;  // entered on a lane it does not own (a wrong address?)
};

struct MergerCounters {
  std::uint64_t crossings = 0;        // in transit, then entered by another district
  std::uint64_t transit_dropped = 0;  // in transit, entered by nobody in time
  std::uint64_t duplicates = 0;       // an id held by two districts at once (invariant 1)
  std::uint64_t mirror_problems = 0;  // Deltas a mirror reported a problem in
};

class CityMerger {
 public:
  // `lanes` must outlive the merger.
  CityMerger(const core::Scenario& scenario, const core::LaneGraph& lanes);

  // Applies one Delta of district `d` (the order it arrived in). Returns ""
  // or the mirror's first problem ("motion: index 7 is not received"): the
  // stream is then broken and the caller should resubscribe.
  std::string apply(std::size_t d, const client::Delta& delta);
  // District `d`'s stream ended. Its entities stay where they were (the
  // gateway publishes nothing while a district is missing, since every step
  // needs every district's Delta); its next subscription starts with a
  // baseline that replaces them, so a client sees the same entities go on.
  void lost(std::size_t d);

  // District `d` streams, from its next Delta on, the gateway's interest of
  // `version` (DistrictFeed's Interest event).
  void interest_applied(std::size_t d, std::uint64_t version);
  // The oldest interest version some district still streams.
  std::uint64_t interest_version() const;

  // The city at `step` (>= every applied Delta's step for exact poses), for
  // `coverage`: what every district streams (whole, or near its discs).
  std::shared_ptr<const net::PublishedFrame> frame(std::uint64_t step,
                                                   const net::Coverage& coverage = {});

  // The district whose stream holds `id` (that generation), if any; and
  // whether it is crossing between two districts now.
  std::optional<std::size_t> district_of(client::EntityId id) const;
  bool crossing(client::EntityId id) const;

  std::uint64_t city_digest() const;
  std::size_t district_count() const { return mirrors_.size(); }
  const DistrictState& district(std::size_t d) const { return states_[d]; }
  const CityMap& map() const { return map_; }
  const MergerCounters& counters() const { return counters_; }
  std::size_t in_transit() const { return transit_.size(); }

 private:
  struct Transit {
    client::EntityView view;
    std::size_t from = 0;
    std::uint64_t left_step = 0;
  };
  class Listener;
  bool held_elsewhere(std::size_t d, client::EntityId id) const;
  void add_entity(const client::EntityView& view, std::uint64_t step, net::PublishedFrame& f) const;
  void hold(const client::EntityView& view);
  void drop_stale_transit(std::uint64_t step);

  const core::LaneGraph& lanes_;  // the caller's, for the merger's life
  CityMap map_;
  std::uint32_t step_us_ = 0;
  std::vector<std::uint32_t> lane_length_mm_;  // the Welcome's: where dead reckoning stops
  std::uint32_t dots_every_steps_ = 0;
  std::vector<std::uint32_t> lane_chain_;
  std::size_t chain_count_ = 0;
  core::ImportanceField weights_;
  std::vector<client::EntityMirror> mirrors_;
  std::vector<DistrictState> states_;
  std::map<std::uint32_t, Transit> transit_;  // by id index
  MergerCounters counters_;
  std::vector<std::shared_ptr<net::PublishedFrame>> pool_;  // reused once clients let go
  std::vector<const client::EntityView*> holder_;           // per id index, while a frame is built
};

}  // namespace bustle::gateway
