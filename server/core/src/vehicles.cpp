// The VehicleSystem (vehicles.hpp): garages, the content plan, signals,
// policy arbitration and the vehicle store; World::step() runs its phase 5
// (step) and its part of phase 7 (resolve_tiers).
//
// Sections, in file order:
//   helpers: segment intersection, queue order, digest folding, the policy
//     arbitration inlined into the vehicle kernel
//   construction (lane tables, routes, conflicts), queries, garage requests
//     (enqueue, cancel), strategy, the store's rows (push_vehicle, remove)
//   Phase 5: step -> find_stuck, inject_plan, advance_signals, dispatch,
//     regroup_store, build_snapshot, evaluate_and_advance (the kernel), turnarounds
//   Phase 7: resolve_tiers
//   digest and checkpoint: vehicle_word, rebuild_derived, digest_into,
//     check_invariants, capture, restore
#include "bustle/core/vehicles.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <string_view>

#include "bustle/core/digest.hpp"

namespace bustle::core {
namespace {

constexpr double kEps = 1e-9;
constexpr std::size_t kLeaderLookaheadLanes = 8;

// Intersection of segments p1p2 and q1q2; returns the fraction along p.
bool segment_intersection(const Vec2& p1, const Vec2& p2, const Vec2& q1, const Vec2& q2,
                          double& t_out) {
  const double rx = p2.x_m - p1.x_m, ry = p2.y_m - p1.y_m;
  const double sx = q2.x_m - q1.x_m, sy = q2.y_m - q1.y_m;
  const double denom = rx * sy - ry * sx;
  if (std::abs(denom) < 1e-12) return false;
  const double qpx = q1.x_m - p1.x_m, qpy = q1.y_m - p1.y_m;
  const double t = (qpx * sy - qpy * sx) / denom;
  const double u = (qpx * ry - qpy * rx) / denom;
  if (t < 0.0 || t > 1.0 || u < 0.0 || u > 1.0) return false;
  t_out = t;
  return true;
}

// Invariant 2: the order of two neighbours in a garage queue.
bool queue_in_order(const QueuedRequest& ahead, const QueuedRequest& behind) {
  return ahead.priority > behind.priority ||
         (ahead.priority == behind.priority && ahead.enqueue_ordinal < behind.enqueue_ordinal);
}

// Digest folding for the per-step words (vehicles, garages, signals): two
// words per 64x64->128-bit multiply (hi ^ lo), each under its own key, so a
// record of 2k words costs k multiplies and no dependency chain; summing the
// results keeps records independent of each other. Keys are distinct odd
// constants; `salt` binds a record to its position (garage or signal index).
__extension__ using U128 = unsigned __int128;
[[gnu::always_inline]] inline std::uint64_t mum(std::uint64_t a, std::uint64_t b) {
  const U128 r = static_cast<U128>(a) * b;
  return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
}
constexpr std::uint64_t kFoldKey = 0x9E3779B97F4A7C15ull;
[[gnu::always_inline]] inline std::uint64_t fold_pair(std::uint64_t a, std::uint64_t b,
                                                      std::uint64_t k) {
  return mum(a ^ (kFoldKey * (2 * k + 1)), b ^ (0xD6E8FEB86659FD93ull * (2 * k + 1)));
}

// One vehicle's digest word: its fields in pairs through fold_pair (four
// independent multiplies, not a chain), summed, mixed with the hash of the
// fields that never change after dispatch.
[[gnu::always_inline]] inline std::uint64_t vehicle_flags(std::uint8_t strategy,
                                                          std::uint8_t policy, std::uint8_t reason,
                                                          SimTier tier, std::uint8_t despawn) {
  return std::uint64_t{strategy} | std::uint64_t{policy} << 8 | std::uint64_t{reason} << 16 |
         std::uint64_t{tier_index(tier)} << 24 | std::uint64_t{despawn} << 32;
}
[[gnu::always_inline]] inline std::uint64_t fold_vehicle(
    std::uint64_t cold, std::uint32_t route_index, LaneIndex lane, double s_m, double speed_mps,
    std::uint64_t flags, EntityId leader, std::uint64_t steps_advanced, std::uint64_t waiting_since,
    std::uint64_t last_advance_step) {
  const std::uint64_t acc =
      fold_pair((std::uint64_t{route_index} << 32) | lane, std::bit_cast<std::uint64_t>(s_m), 1) +
      fold_pair(std::bit_cast<std::uint64_t>(speed_mps), flags, 2) +
      fold_pair(leader.packed(), steps_advanced, 3) +
      fold_pair(waiting_since, last_advance_step, 4);
  return mix64(acc ^ cold);
}

template <class T>
void erase_at(std::vector<T>& v, std::uint32_t slot) {
  v[slot] = std::move(v.back());
  v.pop_back();
}

// VehicleSystem::restore's error list: (path, message), at most 32.
void add_restore_error(std::vector<std::pair<std::string, std::string>>& errors, std::string path,
                       std::string message) {
  if (errors.size() < 32) errors.emplace_back(std::move(path), std::move(message));
}

}  // namespace

const char* to_string(VehicleStrategy s) {
  switch (s) {
    case VehicleStrategy::RouteFollow:
      return "route_follow";
    case VehicleStrategy::LaneFollow:
      return "lane_follow";
    case VehicleStrategy::Parked:
      return "parked";
    case VehicleStrategy::Manual:
      return "manual";
  }
  return "?";
}

const char* to_string(ControlPolicy p) {
  switch (p) {
    case ControlPolicy::RouteFollow:
      return "route_follow";
    case ControlPolicy::LaneFollow:
      return "lane_follow";
    case ControlPolicy::Yielding:
      return "yielding";
    case ControlPolicy::WaitingAtSignal:
      return "waiting_at_signal";
    case ControlPolicy::Parked:
      return "parked";
    case ControlPolicy::Manual:
      return "manual";
    case ControlPolicy::DespawnPending:
      return "despawn_pending";
  }
  return "?";
}

const char* to_string(PolicyReason r) {
  switch (r) {
    case PolicyReason::Clear:
      return "clear";
    case PolicyReason::DespawnRequested:
      return "despawn_requested";
    case PolicyReason::ManualControl:
      return "manual_control";
    case PolicyReason::ParkedStrategy:
      return "parked_strategy";
    case PolicyReason::SignalClosed:
      return "signal_closed";
    case PolicyReason::SignalYield:
      return "signal_yield";
    case PolicyReason::PedestrianHazard:
      return "pedestrian_hazard";
    case PolicyReason::LeaderBlocked:
      return "leader_blocked";
    case PolicyReason::LeaderCaution:
      return "leader_caution";
    case PolicyReason::AwaitingTurnaround:
      return "awaiting_turnaround";
    case PolicyReason::NotDue:
      return "not_due";
    case PolicyReason::LaneClosed:
      return "lane_closed";
    case PolicyReason::MergeYield:
      return "merge_yield";
  }
  return "?";
}

const char* to_string(SignalPhase p) {
  switch (p) {
    case SignalPhase::Open:
      return "open";
    case SignalPhase::Yield:
      return "yield";
    case SignalPhase::Closed:
      return "closed";
  }
  return "?";
}

const char* to_string(DispatchGate g) {
  switch (g) {
    case DispatchGate::Dispatched:
      return "dispatched";
    case DispatchGate::QueueEmpty:
      return "queue_empty";
    case DispatchGate::Cooldown:
      return "cooldown";
    case DispatchGate::Capacity:
      return "capacity";
    case DispatchGate::EntranceBlocked:
      return "entrance_blocked";
    case DispatchGate::PerStepMax:
      return "per_step_max";
  }
  return "?";
}

namespace {
// The arbitration itself, inlined into the vehicle kernel.
[[gnu::always_inline]] inline PolicyDecision arbitrate(const PolicyInputs& in,
                                                       const VehicleRules& rules) {
  PolicyDecision d;
  if (in.despawn_requested)
    return {ControlPolicy::DespawnPending, PolicyReason::DespawnRequested, false, 0.0, false};
  if (in.strategy == VehicleStrategy::Manual)
    return {ControlPolicy::Manual, PolicyReason::ManualControl, true, 1.0, false};
  if (in.strategy == VehicleStrategy::Parked)
    return {ControlPolicy::Parked, PolicyReason::ParkedStrategy, false, 0.0, false};
  if (in.signal_closed)
    return {ControlPolicy::WaitingAtSignal, PolicyReason::SignalClosed, false, 0.0, false};
  if (in.signal_yield) {
    return {ControlPolicy::Yielding, PolicyReason::SignalYield, true, rules.yield_multiplier,
            false};
  }
  if (in.pedestrian_hazard)
    return {ControlPolicy::Yielding, PolicyReason::PedestrianHazard, false, 0.0, false};
  // A merge winner nearer than the leader is this step's leader (invariant 6).
  if (in.merge_gap_m < in.leader_gap_m) {
    if (in.merge_gap_m <= rules.headway_block_m)
      return {ControlPolicy::Yielding, PolicyReason::MergeYield, false, 0.0, true};
    if (in.merge_gap_m < rules.headway_caution_m) {
      return {ControlPolicy::Yielding, PolicyReason::MergeYield, true, rules.yield_multiplier,
              true};
    }
  }
  // The emergency guard (<= block headway) is part of the same model.
  if (in.leader_gap_m <= rules.headway_block_m) {
    return {ControlPolicy::Yielding, PolicyReason::LeaderBlocked, false, 0.0, true};
  }
  if (in.leader_gap_m < rules.headway_caution_m) {
    return {ControlPolicy::Yielding, PolicyReason::LeaderCaution, true, rules.yield_multiplier,
            true};
  }
  const bool route = in.has_route && in.strategy == VehicleStrategy::RouteFollow;
  d.policy = route ? ControlPolicy::RouteFollow : ControlPolicy::LaneFollow;
  return d;
}
}  // namespace

PolicyDecision arbitrate_policy(const PolicyInputs& in, const VehicleRules& rules) {
  return arbitrate(in, rules);
}

VehicleSystem::VehicleSystem(const Scenario& scenario, const LaneGraph& lanes,
                             std::uint32_t entity_capacity)
    : scenario_(&scenario), lanes_(&lanes) {
  for (const GarageSpec& g : scenario.garages) {
    std::vector<LaneIndex> route;
    for (const std::string& l : g.route) route.push_back(*lanes.find(l));
    routes_.push_back(std::move(route));
  }
  garages_.resize(scenario.garages.size());
  managed_.assign(scenario.garages.size(), 0);
  dispatched_hash_.assign(scenario.garages.size(), 0);
  signal_of_lane_.assign(lanes.size(), -1);
  for (std::size_t i = 0; i < scenario.signals.size(); ++i) {
    const SignalSpec& sg = scenario.signals[i];
    signal_of_lane_[*lanes.find(sg.lane)] = static_cast<std::int32_t>(i);
    signal_lane_.push_back(*lanes.find(sg.lane));  // its LaneHot.phase: Open until step 1
    SignalState st;
    st.phase_elapsed_us = std::uint64_t{sg.offset_ms} * 1000;
    // Apply the offset through the normal phase machine.
    const std::uint64_t durations[3] = {std::uint64_t{sg.open_ms} * 1000,
                                        std::uint64_t{sg.yield_ms} * 1000,
                                        std::uint64_t{sg.closed_ms} * 1000};
    while (st.phase_elapsed_us >= durations[static_cast<int>(st.phase)]) {
      st.phase_elapsed_us -= durations[static_cast<int>(st.phase)];
      st.phase = static_cast<SignalPhase>((static_cast<int>(st.phase) + 1) % 3);
    }
    signals_.push_back(st);
  }
  // Crossing conflicts: where a walkable crossing's polyline cuts a road's.
  conflicts_.resize(lanes.size());
  for (LaneIndex r = 0; r < lanes.size(); ++r) {
    const Lane& road = lanes.lane(r);
    if (road.kind != LaneKind::Road) continue;
    for (LaneIndex c = 0; c < lanes.size(); ++c) {
      const Lane& cross = lanes.lane(c);
      if (cross.kind != LaneKind::Crossing) continue;
      for (std::size_t a = 1; a < road.points.size(); ++a) {
        for (std::size_t b = 1; b < cross.points.size(); ++b) {
          double t = 0.0;
          if (segment_intersection(road.points[a - 1], road.points[a], cross.points[b - 1],
                                   cross.points[b], t)) {
            const double s =
                road.cumulative_m[a - 1] + t * (road.cumulative_m[a] - road.cumulative_m[a - 1]);
            conflicts_[r].push_back({s, c});
          }
        }
      }
    }
    std::sort(conflicts_[r].begin(), conflicts_[r].end(), [](const Conflict& x, const Conflict& y) {
      return x.s_on_road_m != y.s_on_road_m ? x.s_on_road_m < y.s_on_road_m
                                            : x.crossing < y.crossing;
    });
  }
  store_.dense_of.assign(entity_capacity, VehicleStore::kNoSlot);
  lane_start_.assign(lanes.size() + 1, 0);
  // The per-lane facts the kernel reads, in one dense table.
  lane_hot_.resize(lanes.size());  // value-initialized: no signal fields, phase Open
  for (LaneIndex l = 0; l < lanes.size(); ++l) {
    const Lane& L = lanes.lane(l);
    LaneHot& h = lane_hot_[l];
    h.length_m = L.length_m;
    h.speed_mps = L.speed_mps_limit;
    h.signal = signal_of_lane_[l];
    if (h.signal >= 0) {
      const SignalSpec& sg = scenario.signals[static_cast<std::size_t>(h.signal)];
      h.stop_m = sg.stop_alpha * L.length_m;
      h.yield_m = sg.yield_alpha * L.length_m;
    }
    h.conflicts = static_cast<std::uint32_t>(conflicts_[l].size());
  }
  build_route_tables();
  waiting_.resize(scenario.garages.size());
  // A garage's waiting list never outgrows its capacity: no allocation per step.
  for (std::size_t g = 0; g < scenario.garages.size(); ++g)
    waiting_[g].reserve(scenario.garages[g].capacity);
  // Straight (two-point) lanes, for the tier distance without the lane walk:
  // the same arithmetic as LaneGraph::position.
  lane_geo_.resize(lanes.size());
  for (LaneIndex l = 0; l < lanes.size(); ++l) {
    const Lane& L = lanes.lane(l);
    LaneGeo& g = lane_geo_[l];
    g.straight = L.points.size() == 2;
    g.elevation_m = L.elevation_m;
    if (!g.straight) continue;
    g.ax = L.points[0].x_m;
    g.ay = L.points[0].y_m;
    g.dx = L.points[1].x_m - L.points[0].x_m;
    g.dy = L.points[1].y_m - L.points[0].y_m;
    g.s0 = L.cumulative_m[0];
    g.seg = L.cumulative_m[1] - L.cumulative_m[0];
    g.length_m = L.length_m;
  }
}

// The routes as the kernel reads them (concatenated, loop flags), then the
// lanes that lead onto entrances (build_feeders) and onto merges (build_merges).
void VehicleSystem::build_route_tables() {
  for (const GarageSpec& g : scenario_->garages)
    route_loops_.push_back(g.route_end == RouteEnd::Loop ? 1 : 0);
  route_begin_.push_back(0);
  for (const auto& r : routes_) {
    route_lanes_.insert(route_lanes_.end(), r.begin(), r.end());
    route_begin_.push_back(static_cast<std::uint32_t>(route_lanes_.size()));
  }
  build_feeders();
  build_merges();
}

// Invariant 5 at the entrance: per garage, its clearance and the lanes that
// lead onto its entrance lane within it, walked back along every route that
// enters the entrance lane (the loop seam included) and kept once per lane at
// the shortest distance.
void VehicleSystem::build_feeders() {
  const std::size_t garages = scenario_->garages.size();
  entrance_clear_m_.assign(garages, 0.0);
  feeders_.assign(garages, {});
  route_max_speed_.assign(garages, 0.0);
  for (std::size_t g = 0; g < garages; ++g) {
    for (const LaneIndex l : routes_[g])
      route_max_speed_[g] = std::max(route_max_speed_[g], lane_hot_[l].speed_mps);
    const double clear =
        std::max(scenario_->garages[g].entrance_clear_m, scenario_->vehicle_rules.headway_block_m);
    entrance_clear_m_[g] = clear;
    const LaneIndex entrance = routes_[g][0];
    std::vector<Feeder>& out = feeders_[g];
    for (std::size_t h = 0; h < garages; ++h) {
      const auto& route = routes_[h];
      const auto size = static_cast<std::uint32_t>(route.size());
      const bool loops = route_loops_[h] != 0;
      for (std::uint32_t k = 0; k < size; ++k) {
        if (route[k] != entrance || (k == 0 && !loops)) continue;
        const bool own = h == g && k == 0;
        std::uint32_t idx = k == 0 ? size - 1 : k - 1;
        double acc = 0.0;
        for (std::uint32_t hop = 0; hop < 64 && acc < clear; ++hop) {
          const LaneIndex lane = route[idx];
          auto it = std::find_if(out.begin(), out.end(),
                                 [lane](const Feeder& f) { return f.lane == lane; });
          if (it == out.end()) {
            out.push_back({lane, acc, own});
          } else {
            it->to_entrance_m = std::min(it->to_entrance_m, acc);
            it->own = it->own || own;
          }
          acc += lane_hot_[lane].length_m;
          if (idx > 0) {
            --idx;
          } else if (loops) {
            idx = size - 1;
          } else {
            break;
          }
        }
      }
    }
  }
}

// Invariant 6: the merge lanes, each with its distinct feeder lanes (route
// predecessors, the loop seam included), in lane order.
void VehicleSystem::build_merges() {
  const std::uint32_t lanes = lanes_->size();
  std::vector<std::vector<LaneIndex>> feeders(lanes);
  for (std::size_t g = 0; g < routes_.size(); ++g) {
    const auto& route = routes_[g];
    for (std::size_t k = 0; k < route.size(); ++k) {
      if (k + 1 == route.size() && route_loops_[g] == 0) break;
      const LaneIndex from = route[k];
      const LaneIndex onto = route[k + 1 < route.size() ? k + 1 : 0];
      if (from == onto) continue;  // a one-lane loop is not a merge
      feeders[onto].push_back(from);
    }
  }
  merge_lane_.clear();
  merge_feeders_.clear();
  merge_feeder_begin_.assign(1, 0);
  for (LaneIndex l = 0; l < lanes; ++l) {
    auto& f = feeders[l];
    std::sort(f.begin(), f.end());
    f.erase(std::unique(f.begin(), f.end()), f.end());
    lane_hot_[l].merge = -1;
    if (f.size() < 2) continue;
    lane_hot_[l].merge = static_cast<std::int32_t>(merge_lane_.size());
    merge_lane_.push_back(l);
    merge_feeders_.insert(merge_feeders_.end(), f.begin(), f.end());
    merge_feeder_begin_.push_back(static_cast<std::uint32_t>(merge_feeders_.size()));
  }
  merge_winner_.assign(merge_lane_.size(), VehicleStore::kNoSlot);
  merge_winner_d_m_.assign(merge_lane_.size(), 0.0);
}

LaneIndex VehicleSystem::next_on_route(std::uint32_t i) const {
  const std::uint32_t g = store_.garage[i];
  const std::uint32_t ri = store_.route_index[i] + 1;
  if (ri < route_begin_[g + 1] - route_begin_[g]) return route_lanes_[route_begin_[g] + ri];
  return route_loops_[g] != 0 ? route_lanes_[route_begin_[g]] : kNoLaneAhead;
}

// Invariant 6, per step from the pre-step snapshot (build_snapshot): per
// merge, the front-most vehicle of each feeder whose route continues onto
// the merge lane; the one nearest the merge point wins, ties by EntityId.
// O(merges x feeders), independent of the row order.
void VehicleSystem::find_merge_winners() {
  for (std::uint32_t m = 0; m < merge_lane_.size(); ++m) {
    std::uint32_t best = VehicleStore::kNoSlot;
    double best_d = 0.0;
    for (std::uint32_t k = merge_feeder_begin_[m]; k < merge_feeder_begin_[m + 1]; ++k) {
      const LaneIndex f = merge_feeders_[k];
      if (lane_start_[f] == lane_start_[f + 1]) continue;
      const std::uint32_t j = order_[lane_start_[f + 1] - 1];
      if (next_on_route(j) != merge_lane_[m]) continue;
      const double d = lane_hot_[f].length_m - snap_s_[j];
      if (best == VehicleStore::kNoSlot || d < best_d ||
          (d == best_d && store_.id[j] < store_.id[best])) {
        best = j;
        best_d = d;
      }
    }
    merge_winner_[m] = best;
    merge_winner_d_m_[m] = best_d;
  }
}

// Inlined into resolve_tiers (its only caller): no call per slice member.
[[gnu::always_inline]] inline Vec2 VehicleSystem::position_of(std::uint32_t i) const {
  const LaneGeo& g = lane_geo_[store_.lane[i]];
  if (!g.straight) return lanes_->position(store_.lane[i], store_.s_m[i]);
  const double s = std::clamp(store_.s_m[i], 0.0, g.length_m);
  const double t = g.seg > 0.0 ? (s - g.s0) / g.seg : 0.0;
  return {g.ax + g.dx * t, g.ay + g.dy * t};
}

std::optional<std::uint32_t> VehicleSystem::garage_index(const std::string& id) const {
  for (std::uint32_t g = 0; g < scenario_->garages.size(); ++g) {
    if (scenario_->garages[g].id == id) return g;
  }
  return std::nullopt;
}

EnqueueResult VehicleSystem::enqueue(const std::string& garage, const std::string& request_id,
                                     const std::string& prototype, const std::string& lane,
                                     std::int32_t priority) {
  EnqueueResult r;
  const auto g = garage_index(garage);
  if (!g) {
    r.field = "garage";
    r.message = "unknown garage '" + garage + "'";
    return r;
  }
  GarageState& gs = garages_[*g];
  const GarageSpec& spec = scenario_->garages[*g];
  auto invalid = [&](const char* field, std::string msg) {
    ++gs.rejected_invalid;
    r.status = EnqueueStatus::Invalid;
    r.field = field;
    r.message = std::move(msg);
    return r;
  };
  if (request_id.empty() || request_id.size() > 128)
    return invalid("request_id", "must be 1-128 characters");
  const auto proto = std::find(spec.prototypes.begin(), spec.prototypes.end(), prototype);
  if (proto == spec.prototypes.end()) {
    return invalid("prototype", "garage '" + spec.id + "' has no prototype '" + prototype + "'");
  }
  if (lane != spec.lane)
    return invalid("lane",
                   "garage '" + spec.id + "' dispatches onto lane '" + spec.lane + "' only");
  const bool queued = std::any_of(gs.queue.begin(), gs.queue.end(), [&](const QueuedRequest& q) {
    return q.request_id == request_id;
  });
  if (queued || std::binary_search(gs.dispatched.begin(), gs.dispatched.end(), request_id)) {
    ++gs.rejected_duplicate;
    r.status = EnqueueStatus::Duplicate;
    r.field = "request_id";
    r.message = "request '" + request_id + "' is already " + (queued ? "queued" : "dispatched");
    return r;
  }
  if (gs.queue.size() >= spec.queue_depth) {
    ++gs.rejected_queue_full;
    r.status = EnqueueStatus::QueueFull;
    r.message = "garage '" + spec.id + "' queue holds " + std::to_string(spec.queue_depth) +
                " requests (max)";
    return r;
  }
  QueuedRequest q{request_id, static_cast<std::uint32_t>(proto - spec.prototypes.begin()), priority,
                  gs.next_enqueue_ordinal++};
  // Insert at its sorted position: priority desc, then ordinal asc (the new
  // ordinal is the largest, so it goes after every equal priority).
  auto pos = std::find_if(gs.queue.begin(), gs.queue.end(),
                          [&](const QueuedRequest& e) { return e.priority < priority; });
  pos = gs.queue.insert(pos, std::move(q));
  // Invariant 2 where it is written: the new request sits between its neighbours.
  assert(pos == gs.queue.begin() || queue_in_order(*(pos - 1), *pos));
  assert(pos + 1 == gs.queue.end() || queue_in_order(*pos, *(pos + 1)));
  r.status = EnqueueStatus::Accepted;
  r.ordinal = gs.next_enqueue_ordinal - 1;
  return r;
}

CancelStatus VehicleSystem::cancel(const std::string& garage, const std::string& request_id) {
  const auto g = garage_index(garage);
  if (!g) return CancelStatus::UnknownGarage;
  GarageState& gs = garages_[*g];
  auto it = std::find_if(gs.queue.begin(), gs.queue.end(),
                         [&](const QueuedRequest& q) { return q.request_id == request_id; });
  if (it == gs.queue.end()) {
    return std::binary_search(gs.dispatched.begin(), gs.dispatched.end(), request_id)
               ? CancelStatus::AlreadyDispatched
               : CancelStatus::NotQueued;
  }
  gs.queue.erase(it);  // erase keeps the remaining order
  ++gs.canceled;
  return CancelStatus::Canceled;
}

bool VehicleSystem::is_vehicle(EntityId id) const {
  return id.index < store_.dense_of.size() && store_.dense_of[id.index] != VehicleStore::kNoSlot &&
         store_.id[store_.dense_of[id.index]] == id;
}

void VehicleSystem::mark_despawn(EntityId id) {
  if (!is_vehicle(id)) return;
  const std::uint32_t i = store_.dense_of[id.index];
  store_.despawn_requested[i] = 1;
  refold(i);
}

bool VehicleSystem::set_strategy(EntityId id, VehicleStrategy s) {
  if (!is_vehicle(id)) return false;
  const std::uint32_t i = store_.dense_of[id.index];
  store_.strategy[i] = static_cast<std::uint8_t>(s);
  refold(i);
  return true;
}

void VehicleSystem::start_waiting(std::uint32_t i, std::uint64_t step_index) {
  store_.waiting_since[i] = step_index;
  auto& w = waiting_[store_.garage[i]];
  const Waiter me{step_index, store_.id[i]};
  w.insert(std::upper_bound(w.begin(), w.end(), me), me);
}

void VehicleSystem::stop_waiting(std::uint32_t i) {
  auto& w = waiting_[store_.garage[i]];
  const Waiter me{store_.waiting_since[i], store_.id[i]};
  const auto it = std::lower_bound(w.begin(), w.end(), me);
  assert(it != w.end() && it->id == me.id);
  w.erase(it);
  store_.waiting_since[i] = 0;
}

void VehicleSystem::push_vehicle(std::uint64_t step_index, EntityId id, std::uint32_t garage,
                                 std::uint64_t ordinal, std::uint32_t prototype,
                                 const std::string& request_id, SimTier tier) {
  assert(store_.dense_of[id.index] == VehicleStore::kNoSlot);  // read back by is_vehicle()/remove()
  assert(managed(garage) < scenario_->garages[garage].capacity);  // the mouth's front left it
  store_.dense_of[id.index] = store_.size();
  store_.id.push_back(id);
  store_.garage.push_back(garage);
  store_.ordinal.push_back(ordinal);
  store_.prototype.push_back(prototype);
  store_.route_index.push_back(0);
  store_.lane.push_back(routes_[garage][0]);
  store_.s_m.push_back(0.0);
  store_.speed_mps.push_back(0.0);
  store_.strategy.push_back(static_cast<std::uint8_t>(VehicleStrategy::RouteFollow));
  store_.control_policy.push_back(static_cast<std::uint8_t>(ControlPolicy::RouteFollow));
  store_.reason.push_back(static_cast<std::uint8_t>(PolicyReason::Clear));
  store_.sim_tier.push_back(tier);
  store_.leader.push_back(EntityId{});
  store_.steps_advanced.push_back(0);
  store_.last_advance_step.push_back(step_index);
  store_.waiting_since.push_back(0);
  store_.despawn_requested.push_back(0);
  store_.request_id.push_back(request_id);
  Digest c;
  c.u64(id.packed()).u32(garage).u64(ordinal).u32(prototype).str(request_id);
  cold_hash_.push_back(c.value());
  phase_.push_back(id_phase(id));
  capacity_tier_.push_back(tier);  // not resolved yet
  hash_.push_back(0);
  ++control_policy_count_[static_cast<std::size_t>(ControlPolicy::RouteFollow)];
  ++sim_tier_count_[tier_index(tier)];
  refold(store_.size() - 1);
  ++managed_[garage];
}

void VehicleSystem::remove(EntityId id) {
  if (!is_vehicle(id)) return;
  const std::uint32_t slot = store_.dense_of[id.index];
  const std::uint32_t last = store_.size() - 1;
  assert(managed_[store_.garage[slot]] > 0);
  --managed_[store_.garage[slot]];
  if (store_.waiting_since[slot] != 0) stop_waiting(slot);
  hash_sum_ -= hash_[slot];
  --control_policy_count_[store_.control_policy[slot]];
  --sim_tier_count_[tier_index(store_.sim_tier[slot])];
  erase_at(hash_, slot);
  erase_at(phase_, slot);
  erase_at(capacity_tier_, slot);
  erase_at(store_.id, slot);
  erase_at(store_.garage, slot);
  erase_at(store_.ordinal, slot);
  erase_at(store_.prototype, slot);
  erase_at(store_.route_index, slot);
  erase_at(store_.lane, slot);
  erase_at(store_.s_m, slot);
  erase_at(store_.speed_mps, slot);
  erase_at(store_.strategy, slot);
  erase_at(store_.control_policy, slot);
  erase_at(store_.reason, slot);
  erase_at(store_.sim_tier, slot);
  erase_at(store_.leader, slot);
  erase_at(store_.steps_advanced, slot);
  erase_at(store_.last_advance_step, slot);
  erase_at(store_.waiting_since, slot);
  erase_at(store_.despawn_requested, slot);
  erase_at(store_.request_id, slot);
  erase_at(cold_hash_, slot);
  if (slot != last) store_.dense_of[store_.id[slot].index] = slot;
  store_.dense_of[id.index] = VehicleStore::kNoSlot;
}

std::string VehicleSystem::vehicle_id(std::uint32_t dense) const {
  const GarageSpec& g = scenario_->garages[store_.garage[dense]];
  return format_vehicle_id(g.vehicle_id_format, g.id, scenario_->id, store_.ordinal[dense]);
}

std::size_t VehicleSystem::mouth_count() const {
  std::size_t n = 0;
  for (const GarageState& gs : garages_) n += gs.mouth.size();
  return n;
}

std::optional<VehicleSystem::MouthPlace> VehicleSystem::mouth_place(EntityId id) const {
  for (std::uint32_t g = 0; g < garages_.size(); ++g) {
    const auto& mouth = garages_[g].mouth;
    for (std::uint32_t k = 0; k < mouth.size(); ++k) {
      if (mouth[k].id == id) return MouthPlace{g, k};
    }
  }
  return std::nullopt;
}

std::string VehicleSystem::mouth_text(EntityId id) const {
  const auto at = mouth_place(id);
  if (!at) return {};
  const GarageSpec& g = scenario_->garages[at->garage];
  const MouthVehicle& m = garages_[at->garage].mouth[at->position];
  return format_vehicle_id(g.vehicle_id_format, g.id, scenario_->id, m.ordinal) +
         " waits in garage '" + g.id + "' mouth (place " + std::to_string(at->position + 1) +
         " of " + std::to_string(garages_[at->garage].mouth.size()) + "): not on the road yet";
}

// Phase 5 ------------------------------------------------------------------

void VehicleSystem::step(std::uint64_t step_index, std::uint32_t step_us, EntityRegistry& registry,
                         const std::vector<std::uint8_t>& crossing_occupied,
                         const std::vector<Vec2>& observers,
                         std::vector<DespawnRequest>& despawns) {
  last_step_ = {};
  inject_plan(step_index);
  advance_signals(step_us);
  dispatch(step_index, registry, observers);
  regroup_store();
  build_snapshot();
  evaluate_and_advance(step_index, step_us, crossing_occupied, despawns);
  turnarounds(step_index);
  find_stuck(step_index, step_us, despawns);
  count_policies();
}

void VehicleSystem::find_stuck(std::uint64_t step_index, std::uint32_t step_us,
                               std::vector<DespawnRequest>& despawns) {
  // A blocked vehicle leaves only when it is off-screen (Coarse: far from
  // every observer) and has not moved for despawn.stuck_ms; a visible one
  // keeps waiting, so nobody sees a car vanish from a queue.
  const std::uint64_t stuck_us = std::uint64_t{scenario_->despawn.stuck_ms} * 1000;
  if (stuck_us == 0) return;
  for (std::uint32_t i = 0; i < store_.size(); ++i) {
    if (store_.despawn_requested[i] || store_.sim_tier[i] != SimTier::Coarse) continue;
    // Parked and manually driven vehicles stand still on purpose.
    const auto strategy = static_cast<VehicleStrategy>(store_.strategy[i]);
    if (strategy == VehicleStrategy::Parked || strategy == VehicleStrategy::Manual) continue;
    if ((step_index - store_.last_advance_step[i]) * step_us < stuck_us) continue;
    store_.despawn_requested[i] = 1;
    set_policy(i, static_cast<std::uint8_t>(ControlPolicy::DespawnPending));
    refold(i);
    despawns.push_back({store_.id[i], DespawnReason::Stuck});
  }
}

void VehicleSystem::inject_plan(std::uint64_t step_index) {
  const VehiclePlanSpec& plan = scenario_->vehicle_plan;
  if (plan.requests.empty() || (step_index - 1) % plan.batch_interval_steps != 0) return;
  for (std::uint32_t k = 0; k < plan.batch_size && plan_.cursor < plan.requests.size(); ++k) {
    const PlannedRequest& p = plan.requests[plan_.cursor];
    const EnqueueResult r = enqueue(p.garage, p.request_id, p.prototype, p.lane, p.priority);
    if (r.status == EnqueueStatus::QueueFull) break;  // offered again next batch: nothing lost
    ++plan_.cursor;
    if (r.status == EnqueueStatus::Accepted) {
      ++plan_.accepted;
    } else {
      ++plan_.rejected;
    }
  }
}

void VehicleSystem::advance_signals(std::uint32_t step_us) {
  for (std::size_t i = 0; i < signals_.size(); ++i) {
    const SignalSpec& sg = scenario_->signals[i];
    const std::uint64_t durations[3] = {std::uint64_t{sg.open_ms} * 1000,
                                        std::uint64_t{sg.yield_ms} * 1000,
                                        std::uint64_t{sg.closed_ms} * 1000};
    SignalState& st = signals_[i];
    st.phase_elapsed_us += step_us;
    while (st.phase_elapsed_us >= durations[static_cast<int>(st.phase)]) {
      st.phase_elapsed_us -= durations[static_cast<int>(st.phase)];
      st.phase = static_cast<SignalPhase>((static_cast<int>(st.phase) + 1) % 3);
      if (st.phase == SignalPhase::Open) ++st.cycles;
    }
    // The kernel reads the phase beside the lane's other facts (one line per
    // lane, no second lookup); written every step, so restore needs no sync.
    LaneHot& h = lane_hot_[signal_lane_[i]];
    if (h.signal == static_cast<std::int32_t>(i)) h.phase = st.phase;
  }
}

void VehicleSystem::refresh_lane_extents() {
  lane_min_s_.assign(lanes_->size(), std::numeric_limits<double>::infinity());
  lane_max_s_.assign(lanes_->size(), -std::numeric_limits<double>::infinity());
  for (std::uint32_t i = 0; i < store_.size(); ++i) {
    const LaneIndex l = store_.lane[i];
    lane_min_s_[l] = std::min(lane_min_s_[l], store_.s_m[i]);
    lane_max_s_[l] = std::max(lane_max_s_[l], store_.s_m[i]);
  }
  lane_min_valid_ = true;
}

void VehicleSystem::hold(PolicyDecision& dec, bool awaiting, LaneIndex next_in_reach) const {
  if (awaiting && dec.advance) {
    dec.advance = false;
    dec.reason = PolicyReason::AwaitingTurnaround;
  }
  // A closed next lane within this evaluation's reach: drive up to this
  // lane's end and wait there (the advance stops at it).
  if (closures_active_ && dec.advance && next_in_reach != kNoLaneAhead &&
      lane_closed_[next_in_reach] != 0) {
    dec.policy = ControlPolicy::Yielding;
    dec.reason = PolicyReason::LaneClosed;
  }
}

void VehicleSystem::set_closed_lanes(std::span<const LaneIndex> closed) {
  lane_closed_.assign(lanes_->size(), 0);
  for (const LaneIndex l : closed) lane_closed_[l] = 1;
  closures_active_ = !closed.empty();
}

std::uint32_t VehicleSystem::held_at_closures() const {
  std::uint32_t n = 0;
  for (const std::uint8_t r : store_.reason)
    n += r == static_cast<std::uint8_t>(PolicyReason::LaneClosed);
  return n;
}

bool VehicleSystem::entrance_clear(std::uint32_t garage, bool turnaround) {
  if (closures_active_ && lane_closed_[routes_[garage][0]] != 0) return false;  // closed entrance
  if (!lane_min_valid_) refresh_lane_extents();
  const double clear = entrance_clear_m_[garage];
  if (lane_min_s_[routes_[garage][0]] < clear) return false;
  // A turnaround leaves the vehicle at the merge point where it waited, and
  // the other feeders' vehicles yield to it there (invariant 6) and stop
  // headway_block_m short of it: asking them for more would hold both forever.
  const double behind = turnaround ? scenario_->vehicle_rules.headway_block_m : clear;
  for (const Feeder& f : feeders_[garage]) {
    if (turnaround && f.own) continue;
    if (f.to_entrance_m + lane_hot_[f.lane].length_m - lane_max_s_[f.lane] < behind) return false;
  }
  return true;
}

void VehicleSystem::dispatch(std::uint64_t step_index, EntityRegistry& registry,
                             const std::vector<Vec2>& observers) {
  lane_min_valid_ = false;
  for (std::uint32_t g = 0; g < garages_.size(); ++g) {
    GarageState& gs = garages_[g];
    const GarageSpec& spec = scenario_->garages[g];
    ++gs.frame_index;
    // The mouth's front was dispatched before anything queued: it takes the
    // entrance first. Cooldown and the per-step maximum gate the queue only.
    enter_from_mouth(step_index, g, observers);
    DispatchGate gate;
    if (gs.queue.empty()) {
      gate = DispatchGate::QueueEmpty;
    } else if (gs.has_dispatched &&
               gs.frame_index - gs.last_dispatch_frame <= spec.cooldown_frames) {
      gate = DispatchGate::Cooldown;
    } else if (managed(g) >= spec.capacity) {
      gate = DispatchGate::Capacity;
    } else if (gs.mouth.size() >= spec.mouth_capacity && !entrance_clear(g)) {
      gate = DispatchGate::EntranceBlocked;  // no place in the mouth, and the entrance is not clear
    } else {
      const std::size_t n =
          std::min<std::size_t>({static_cast<std::size_t>(spec.capacity - managed(g)),
                                 spec.dispatch_per_step_max, gs.queue.size()});
      const std::size_t done = dispatch_batch(step_index, g, n, registry, observers);
      if (done > 0) {
        gs.has_dispatched = true;
        gs.last_dispatch_frame = gs.frame_index;
        gate = (done == spec.dispatch_per_step_max && !gs.queue.empty()) ? DispatchGate::PerStepMax
                                                                         : DispatchGate::Dispatched;
      } else {
        gate = DispatchGate::Capacity;  // the world's entity capacity held it
      }
    }
    gs.last_gate = gate;
    ++gs.gate_steps[static_cast<std::size_t>(gate)];
  }
}

std::size_t VehicleSystem::dispatch_batch(std::uint64_t step_index, std::uint32_t g, std::size_t n,
                                          EntityRegistry& registry,
                                          const std::vector<Vec2>& observers) {
  GarageState& gs = garages_[g];
  const std::uint32_t mouth_capacity = scenario_->garages[g].mouth_capacity;
  std::size_t done = 0;
  for (; done < n; ++done) {
    // A free place in the mouth, or else a clear entrance (without a mouth
    // the vehicle just placed at s = 0 holds the entrance for the next).
    if (done > 0 && gs.mouth.size() >= mouth_capacity && !entrance_clear(g)) break;
    const AllocateResult a = registry.allocate();
    if (a.status != AllocateStatus::Allocated) break;  // entity capacity: the request stays queued
    // Invariant 2 where it is read: the front goes first.
    assert(gs.queue.size() < 2 || queue_in_order(gs.queue[0], gs.queue[1]));
    QueuedRequest q = std::move(gs.queue.front());
    gs.queue.erase(gs.queue.begin());
    gs.dispatched.insert(std::upper_bound(gs.dispatched.begin(), gs.dispatched.end(), q.request_id),
                         q.request_id);
    dispatched_hash_[g] += Digest{}.str(q.request_id).value();
    gs.mouth.push_back({a.id, gs.next_vehicle_ordinal++, q.prototype, std::move(q.request_id)});
    ++last_step_.dispatched;
    enter_from_mouth(step_index, g, observers);  // the front, when the entrance is clear
  }
  return done;
}

bool VehicleSystem::enter_from_mouth(std::uint64_t step_index, std::uint32_t g,
                                     const std::vector<Vec2>& observers) {
  GarageState& gs = garages_[g];
  if (gs.mouth.empty() || !entrance_clear(g)) return false;
  const MouthVehicle m = std::move(gs.mouth.front());
  gs.mouth.erase(gs.mouth.begin());
  const Pose start = lanes_->sample(routes_[g][0], 0.0);
  const double d = nearest_observer_m(observers, start.x_m, start.y_m);
  const TierSpec& t = scenario_->tiers;
  const SimTier tier = d <= t.full_enter_m        ? SimTier::Full
                       : d <= t.simulated_enter_m ? SimTier::Simulated
                                                  : SimTier::Coarse;
  push_vehicle(step_index, m.id, g, m.ordinal, m.prototype, m.request_id, tier);
  occupy_entrance(g);
  return true;
}

void VehicleSystem::occupy_entrance(std::uint32_t g) {
  const LaneIndex entrance = routes_[g][0];
  lane_min_s_[entrance] = 0.0;  // valid: entrance_clear() ran before
  lane_max_s_[entrance] = std::max(lane_max_s_[entrance], 0.0);
}

namespace {
// Applies `order` (new row k = old row order[k]) to one column in place, by
// cycles; `seen` is all zero on entry and on return.
template <class T>
void permute_column(std::vector<T>& v, const std::vector<std::uint32_t>& order,
                    std::vector<std::uint8_t>& seen) {
  const auto n = static_cast<std::uint32_t>(order.size());
  for (std::uint32_t start = 0; start < n; ++start) {
    if (seen[start] || order[start] == start) continue;
    T carried = std::move(v[start]);
    std::uint32_t k = start;
    while (order[k] != start) {
      v[k] = std::move(v[order[k]]);
      seen[k] = 1;
      k = order[k];
    }
    v[k] = std::move(carried);
    seen[k] = 1;
  }
  std::fill(seen.begin(), seen.end(), 0);
}
}  // namespace

// Keeps the rows grouped by garage, then by place along the route: dispatch
// appends and remove() swaps the last row in, so the groups fray; once the
// garage changes between neighbouring rows more than n/16 times beyond the
// grouped minimum (one run per garage with vehicles), the rows are sorted by
// (garage, route index, s, EntityId) again. The kernel then
// reads a route's lanes, signals and leaders from a few cache lines instead
// of one random line per vehicle. The decision is a function of the store
// alone (a restored world regroups exactly when the original did), and the
// order never changes an outcome (invariant 4).
void VehicleSystem::regroup_store() {
  const std::uint32_t n = store_.size();
  const std::uint32_t* const g = store_.garage.data();
  std::uint32_t runs = n > 0 ? 1 : 0;
  for (std::uint32_t i = 1; i < n; ++i) runs += g[i] != g[i - 1] ? 1 : 0;
  std::uint32_t grouped = 0;  // runs when grouped: garages with vehicles
  for (const std::uint32_t m : managed_) grouped += m > 0 ? 1 : 0;
  if (runs <= grouped + n / 16) return;
  regroup_order_.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) regroup_order_[i] = i;
  const VehicleStore& st = store_;
  std::sort(regroup_order_.begin(), regroup_order_.end(), [&st](std::uint32_t a, std::uint32_t b) {
    if (st.garage[a] != st.garage[b]) return st.garage[a] < st.garage[b];
    if (st.route_index[a] != st.route_index[b]) return st.route_index[a] < st.route_index[b];
    if (st.s_m[a] != st.s_m[b]) return st.s_m[a] < st.s_m[b];
    return st.id[a] < st.id[b];
  });
  regroup_seen_.assign(n, 0);
  // Every column below: a new column must be added here too.
  static_assert(sizeof(VehicleStore) == 19 * sizeof(std::vector<std::uint32_t>));
  const auto apply = [this](auto& column) {
    permute_column(column, regroup_order_, regroup_seen_);
  };
  apply(store_.id);
  apply(store_.garage);
  apply(store_.ordinal);
  apply(store_.prototype);
  apply(store_.route_index);
  apply(store_.lane);
  apply(store_.s_m);
  apply(store_.speed_mps);
  apply(store_.strategy);
  apply(store_.control_policy);
  apply(store_.reason);
  apply(store_.sim_tier);
  apply(store_.leader);
  apply(store_.steps_advanced);
  apply(store_.last_advance_step);
  apply(store_.waiting_since);
  apply(store_.despawn_requested);
  apply(store_.request_id);
  apply(cold_hash_);
  apply(hash_);
  apply(phase_);
  apply(capacity_tier_);
  for (std::uint32_t i = 0; i < n; ++i) store_.dense_of[store_.id[i].index] = i;
}

void VehicleSystem::build_snapshot() {
  const std::uint32_t n = store_.size();
  const std::uint32_t lanes = lanes_->size();
  std::fill(lane_start_.begin(), lane_start_.end(), 0);
  for (std::uint32_t i = 0; i < n; ++i) ++lane_start_[store_.lane[i] + 1];
  for (std::uint32_t l = 0; l < lanes; ++l) lane_start_[l + 1] += lane_start_[l];
  order_.resize(n);
  snap_s_.resize(n);
  pos_in_order_.resize(n);
  std::vector<std::uint32_t>& fill = pos_in_order_;  // reused as a cursor first
  cursor_.assign(lane_start_.begin(),
                 lane_start_.end() - 1);  // reused: no allocation after warm-up
  for (std::uint32_t i = 0; i < n; ++i) order_[cursor_[store_.lane[i]]++] = i;
  // Per lane by (s, EntityId): a handful of vehicles per lane, so an
  // insertion sort (no call per lane), std::sort for long queues.
  const double* const s = store_.s_m.data();
  const EntityId* const id = store_.id.data();
  const auto before = [s, id](std::uint32_t a, std::uint32_t b) {
    return s[a] != s[b] ? s[a] < s[b] : id[a] < id[b];
  };
  std::uint32_t* const o = order_.data();
  for (std::uint32_t l = 0; l < lanes; ++l) {
    const std::uint32_t b = lane_start_[l], e = lane_start_[l + 1];
    if (e - b < 2) continue;
    if (e - b > 24) {
      std::sort(o + b, o + e, before);
      continue;
    }
    for (std::uint32_t k = b + 1; k < e; ++k) {
      const std::uint32_t x = o[k];
      std::uint32_t m = k;
      for (; m > b && before(x, o[m - 1]); --m) o[m] = o[m - 1];
      o[m] = x;
    }
  }
  for (std::uint32_t k = 0; k < n; ++k) fill[order_[k]] = k;
  for (std::uint32_t i = 0; i < n; ++i) snap_s_[i] = store_.s_m[i];
  if (!merge_lane_.empty()) find_merge_winners();
}

// The kernel's look-ahead for a vehicle with nobody ahead on its own lane
// (inlined into it): the rear-most vehicle along the route across lane joins
// and the loop seam, as far as `look_m` (the caution headway or this
// evaluation's reach plus the block headway, invariant 5); a merge lane on
// the way takes its winner as a virtual leader (invariant 6).
[[gnu::always_inline]] inline VehicleSystem::Ahead VehicleSystem::look_ahead(
    std::uint32_t i, const LaneIndex* route, std::uint32_t route_size, std::uint32_t ri, bool loops,
    double to_end, double look_m) const {
  const std::uint32_t* const order = order_.data();
  const std::uint32_t* const lane_start = lane_start_.data();
  Ahead out;
  double acc = to_end;
  std::uint32_t hri = ri;
  for (std::size_t hop = 0; hop < kLeaderLookaheadLanes && acc < look_m; ++hop) {
    hri = hri + 1 < route_size ? hri + 1 : 0;  // 0: across the seam, if the route loops
    if (hri == 0 && !loops) break;
    const LaneIndex lane = route[hri];
    const LaneHot& h = lane_hot_[lane];
    if (h.merge >= 0) {
      const std::uint32_t w = merge_winner_[static_cast<std::uint32_t>(h.merge)];
      const double gap = acc - merge_winner_d_m_[static_cast<std::uint32_t>(h.merge)];
      if (w != VehicleStore::kNoSlot && w != i && gap < out.merge_gap_m) {
        out.merge_gap_m = gap;
        out.merge_peer = store_.id[w];
      }
    }
    if (lane_start[lane] < lane_start[lane + 1]) {
      const std::uint32_t j = order[lane_start[lane]];
      if (j == i) break;  // only this vehicle on a one-lane loop
      out.leader = store_.id[j];
      out.gap_m = acc + snap_s_[j];
      break;
    }
    acc += h.length_m;
  }
  return out;
}

void VehicleSystem::evaluate_and_advance(std::uint64_t step_index, std::uint32_t step_us,
                                         const std::vector<std::uint8_t>& crossing_occupied,
                                         std::vector<DespawnRequest>& despawns) {
  const double dt_s = static_cast<double>(step_us) * 1e-6;
  const VehicleRules& rules = scenario_->vehicle_rules;
  const std::uint32_t n = store_.size();
  // The columns as local pointers: stores through the byte columns may alias
  // anything, so member vectors would be reloaded after each; locals stay in
  // registers. Every vehicle reads the pre-step snapshot (snap_s_, order_).
  const SimTier* const tier_c = store_.sim_tier.data();
  const std::uint8_t* const despawn_c = store_.despawn_requested.data();
  const std::uint8_t* const phase_c = phase_.data();
  const std::uint8_t* const strategy_c = store_.strategy.data();
  const std::uint32_t* const garage_c = store_.garage.data();
  const std::uint64_t* const waiting_c = store_.waiting_since.data();
  LaneIndex* const lane_c = store_.lane.data();
  std::uint32_t* const ri_c = store_.route_index.data();
  double* const s_c = store_.s_m.data();
  double* const speed_c = store_.speed_mps.data();
  std::uint8_t* const policy_c = store_.control_policy.data();
  std::uint8_t* const reason_c = store_.reason.data();
  EntityId* const leader_c = store_.leader.data();
  std::uint64_t* const steps_c = store_.steps_advanced.data();
  std::uint64_t* const last_c = store_.last_advance_step.data();
  const EntityId* const id_c = store_.id.data();
  const double* const snap = snap_s_.data();
  const std::uint32_t* const order = order_.data();
  const std::uint32_t* const lane_start = lane_start_.data();
  const std::uint32_t* const pos = pos_in_order_.data();
  const LaneHot* const lanes = lane_hot_.data();
  const std::uint64_t* const cold = cold_hash_.data();
  std::uint64_t* const hash = hash_.data();
  const double caution = rules.headway_caution_m;
  std::uint64_t sum = hash_sum_;
  std::uint32_t moving = 0;
  std::array<std::uint32_t, kControlPolicyCount> policies = control_policy_count_;
  for (std::uint32_t i = 0; i < n; ++i) {
    const SimTier tier = tier_c[i];
    if (!despawn_c[i] && !tier_due_phase(step_index, phase_c[i], tier)) {
      continue;  // policy and reason keep their last decision; progress catches up when due
    }
    const std::uint32_t stride = tier_stride(tier);
    const LaneIndex lane = lane_c[i];
    const LaneHot& L = lanes[lane];
    const std::uint32_t garage = garage_c[i];
    const LaneIndex* const route = route_lanes_.data() + route_begin_[garage];
    const std::uint32_t route_size = route_begin_[garage + 1] - route_begin_[garage];
    const std::uint32_t ri = ri_c[i];
    const bool has_next = ri + 1 < route_size;
    const LaneIndex next = has_next ? route[ri + 1] : route[0];
    const bool loops = route_loops_[garage] != 0;
    const bool next_on_route = has_next || loops;
    const double travel_m =
        L.speed_mps * dt_s * stride + kEps;  // this evaluation's full-speed reach
    const double s0 = snap[i];
    const double to_end = L.length_m - s0;

    PolicyInputs in;
    in.despawn_requested = despawn_c[i] != 0;
    in.strategy = static_cast<VehicleStrategy>(strategy_c[i]);
    // Signals: the stop line on this lane, or on the next one within reach.
    auto check_signal = [&](const LaneHot& h, double dist_to_lane_start) {
      if (h.signal < 0) return;
      const double to_stop = dist_to_lane_start + h.stop_m;
      const double to_yield = dist_to_lane_start + h.yield_m;
      if (to_stop < -kEps) return;  // already past the stop line
      if (h.phase == SignalPhase::Closed && to_stop <= travel_m) in.signal_closed = true;
      if (h.phase == SignalPhase::Yield && to_yield <= travel_m) in.signal_yield = true;
    };
    check_signal(L, -s0);
    const LaneHot& N = lanes[next];
    if (next_on_route) check_signal(N, to_end);
    // Pedestrians on a crossing ahead (pre-step occupancy).
    auto check_crossings = [&](LaneIndex rl, double dist_to_lane_start) {
      for (const Conflict& c : conflicts_[rl]) {
        const double ahead = dist_to_lane_start + c.s_on_road_m;
        if (ahead <= 0.0) continue;  // on or past it: clear the crossing
        if (ahead > rules.pedestrian_hazard_m) break;
        if (crossing_occupied[c.crossing] != 0) in.pedestrian_hazard = true;
      }
    };
    if (L.conflicts != 0) check_crossings(lane, -s0);
    if (next_on_route && N.conflicts != 0 && to_end < rules.pedestrian_hazard_m)
      check_crossings(next, to_end);

    // Leader: the next vehicle on this lane in the snapshot, else look_ahead()
    // along the route (invariants 5 and 6).
    Ahead ahead;
    if (const std::uint32_t k = pos[i]; k + 1 < lane_start[lane + 1]) {
      const std::uint32_t j = order[k + 1];
      ahead.leader = id_c[j];
      ahead.gap_m = snap[j] - s0;
    } else {
      const double look_m =
          std::max(caution, route_max_speed_[garage] * dt_s * stride + rules.headway_block_m);
      ahead = look_ahead(i, route, route_size, ri, loops, to_end, look_m);
    }
    in.leader_gap_m = ahead.gap_m;
    in.merge_gap_m = ahead.merge_gap_m;

    PolicyDecision dec = arbitrate(in, rules);
    hold(dec, waiting_c[i] != 0, has_next && to_end <= travel_m ? next : kNoLaneAhead);
    --policies[policy_c[i]];
    ++policies[static_cast<std::size_t>(dec.policy)];
    policy_c[i] = static_cast<std::uint8_t>(dec.policy);
    reason_c[i] = static_cast<std::uint8_t>(dec.reason);
    leader_c[i] = !dec.leader_recorded                     ? EntityId{}
                  : dec.reason == PolicyReason::MergeYield ? ahead.merge_peer
                                                           : ahead.leader;
    if (!dec.advance) {
      speed_c[i] = 0.0;
    } else {
      // Advance: spend this evaluation's time along the route at each lane's
      // speed limit, never closer than the block headway to the leader's
      // pre-step position (invariant 5) nor to the merge winner's on the
      // merge axis (invariant 6).
      double time_s = dt_s * stride * dec.speed_multiplier;
      const double bound_m = std::min(in.leader_gap_m, in.merge_gap_m);
      double cap_m = std::isfinite(bound_m) ? std::max(0.0, bound_m - rules.headway_block_m)
                                            : std::numeric_limits<double>::infinity();
      double moved_m = 0.0;
      LaneIndex cur = lane;
      double s = s_c[i];
      std::uint32_t cur_ri = ri;
      for (std::size_t hop = 0; hop < 64 && time_s > 0.0 && cap_m > 0.0; ++hop) {
        const LaneHot& C = lanes[cur];
        const double reach = std::min(C.speed_mps * time_s, cap_m);
        if (s + reach < C.length_m) {
          s += reach;
          moved_m += reach;
          break;
        }
        const double part = C.length_m - s;
        moved_m += part;
        cap_m -= part;
        time_s -= part / C.speed_mps;
        s = C.length_m;
        if (cur_ri + 1 < route_size) {
          if (closures_active_ && lane_closed_[route[cur_ri + 1]] != 0) break;  // nobody enters
          ++cur_ri;
          cur = route[cur_ri];
          s = 0.0;  // leftover time carries onto the next lane at its speed limit
          continue;
        }
        // End of the route.
        if (loops) {
          start_waiting(i, step_index);  // competes for the entrance (turnarounds())
        } else {
          despawns.push_back({id_c[i], DespawnReason::RouteCompleted});
        }
        break;
      }
      // Invariant 5 where it is written: never closer than the block headway.
      assert(!std::isfinite(bound_m) ||
             moved_m <= std::max(0.0, bound_m - rules.headway_block_m) + kEps);
      lane_c[i] = cur;
      s_c[i] = s;
      ri_c[i] = cur_ri;
      speed_c[i] = moved_m / (dt_s * stride);
      if (moved_m > 0.0) {
        ++steps_c[i];
        last_c[i] = step_index;
        ++moving;
      }
    }
    // Fold this vehicle's new digest word (vehicle_word(i), from the values at hand).
    const std::uint64_t h = fold_vehicle(
        cold[i], ri_c[i], lane_c[i], s_c[i], speed_c[i],
        vehicle_flags(strategy_c[i], policy_c[i], reason_c[i], tier_c[i], despawn_c[i]),
        leader_c[i], steps_c[i], waiting_c[i], last_c[i]);
    sum += h - hash[i];
    hash[i] = h;
  }
  hash_sum_ = sum;
  control_policy_count_ = policies;
  last_step_.moving += moving;
}

void VehicleSystem::count_policies() {
  // Over every vehicle, not only those evaluated this step: a Coarse vehicle
  // waiting at a signal is still waiting between its evaluations.
  // Maintained where policies are written (set_policy), not recounted.
  for (std::size_t p = 0; p < kControlPolicyCount; ++p)
    last_step_.per_policy[p] = control_policy_count_[p];
}

void VehicleSystem::turnarounds(std::uint64_t step_index) {
  (void)step_index;
  lane_min_valid_ = false;
  // Per garage, the earliest waiting vehicle (waiting_since, then EntityId):
  // the front of its sorted waiting list, skipping vehicles about to leave.
  for (std::uint32_t g = 0; g < garages_.size(); ++g) {
    if (waiting_[g].empty() || route_loops_[g] == 0) continue;
    std::uint32_t best = VehicleStore::kNoSlot;
    for (const Waiter& w : waiting_[g]) {
      const std::uint32_t i = store_.dense_of[w.id.index];
      if (!store_.despawn_requested[i]) {
        best = i;
        break;
      }
    }
    if (best == VehicleStore::kNoSlot || !entrance_clear(g, /*turnaround=*/true)) continue;
    stop_waiting(best);
    store_.route_index[best] = 0;
    store_.lane[best] = routes_[g][0];
    store_.s_m[best] = 0.0;
    refold(best);
    occupy_entrance(g);
    ++garages_[g].turnarounds;
    ++last_step_.turnarounds;
  }
}

// Phase 7 ------------------------------------------------------------------

void VehicleSystem::resolve_tiers(std::uint64_t step_index, const TierSpec& spec,
                                  const ImportanceField& importance,
                                  std::span<const EntityId> forced_full) {
  // The slice whose id phase matches this step: each vehicle is re-resolved
  // every `every` steps and each step does 1/every of the work (as for
  // pedestrians). The slice competes for what the caps leave after the other
  // vehicles' current tiers (sim_tier_count_, maintained, not recounted).
  const std::uint32_t every = spec.vehicle_resolve_every_steps;
  const auto ph = static_cast<std::uint32_t>(step_index % every);
  const std::uint32_t n = store_.size();
  slice_.clear();
  slice_ids_.clear();
  slice_sim_tier_.clear();
  std::array<std::uint32_t, kSimTierCount> in_slice{};
  std::uint8_t member[64];  // by id phase (< 64): no division per vehicle
  for (std::uint32_t p = 0; p < 64; ++p) member[p] = p % every == ph ? 1 : 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (!member[phase_[i]]) continue;
    slice_.push_back(i);
    slice_ids_.push_back(store_.id[i]);
    slice_sim_tier_.push_back(store_.sim_tier[i]);
    ++in_slice[tier_index(store_.sim_tier[i])];
  }
  const auto m = static_cast<std::uint32_t>(slice_.size());
  distances_.resize(m);
  for (std::uint32_t k = 0; k < m; ++k) {
    // Position only (no heading: atan2 is not needed for a distance).
    // Vehicles carry no priority class: they rank as background, weighted by
    // vehicle_weight and areas of interest.
    const std::uint32_t i = slice_[k];
    const Vec2 p = position_of(i);
    const double w = importance.weight(PriorityClass::Background, true, p.x_m, p.y_m);
    distances_[k] =
        importance.effective_distance_m(p.x_m, p.y_m, lane_geo_[store_.lane[i]].elevation_m, w);
  }
  // ForceFull: flags for the slice; forced vehicles of other slices already
  // Full hold their place outside full_cap but inside the hard cap.
  slice_force_.clear();
  std::uint32_t others_forced = 0;
  if (!forced_full.empty()) {
    slice_force_.assign(m, 0);
    for (std::uint32_t k = 0; k < m; ++k) {
      slice_force_[k] =
          std::binary_search(forced_full.begin(), forced_full.end(), slice_ids_[k]) ? 1 : 0;
    }
    for (const EntityId f : forced_full) {
      if (!is_vehicle(f)) continue;
      const std::uint32_t i = store_.dense_of[f.index];
      if (store_.sim_tier[i] == SimTier::Full && phase_[i] % every != ph) ++others_forced;
    }
  }
  std::uint32_t others[kSimTierCount] = {};
  for (std::size_t t = 0; t < kSimTierCount; ++t) others[t] = sim_tier_count_[t] - in_slice[t];
  const TierSpec s = slice_caps(spec, others, others_forced);
  const TierCounts sc =
      tier_resolver_.resolve(s, slice_ids_, distances_, slice_sim_tier_, slice_force_);
  const std::span<const SimTier> capacity = tier_resolver_.capacity_targets();
  assert(capacity.size() == m);
  for (std::uint32_t k = 0; k < m; ++k) {
    const std::uint32_t i = slice_[k];
    capacity_tier_[i] = capacity[k];
    if (store_.sim_tier[i] == slice_sim_tier_[k]) continue;
    --sim_tier_count_[tier_index(store_.sim_tier[i])];
    ++sim_tier_count_[tier_index(slice_sim_tier_[k])];
    store_.sim_tier[i] = slice_sim_tier_[k];
    refold(i);
  }
  last_tiers_ = sc;
  for (std::size_t t = 0; t < kSimTierCount; ++t) last_tiers_.per_tier[t] = sim_tier_count_[t];
  last_tiers_.forced = sc.forced + others_forced;
}

// Digest and checkpoint ----------------------------------------------------

std::uint64_t VehicleSystem::vehicle_word(std::uint32_t i) const {
  return fold_vehicle(cold_hash_[i], store_.route_index[i], store_.lane[i], store_.s_m[i],
                      store_.speed_mps[i],
                      vehicle_flags(store_.strategy[i], store_.control_policy[i], store_.reason[i],
                                    store_.sim_tier[i], store_.despawn_requested[i]),
                      store_.leader[i], store_.steps_advanced[i], store_.waiting_since[i],
                      store_.last_advance_step[i]);
}

void VehicleSystem::rebuild_derived() {
  const std::uint32_t n = store_.size();
  cold_hash_.clear();
  phase_.clear();
  capacity_tier_ = store_.sim_tier;  // derived, not saved: the applied tier until resolved
  for (std::uint32_t i = 0; i < n; ++i) {
    Digest c;
    c.u64(store_.id[i].packed())
        .u32(store_.garage[i])
        .u64(store_.ordinal[i])
        .u32(store_.prototype[i])
        .str(store_.request_id[i]);
    cold_hash_.push_back(c.value());
    phase_.push_back(id_phase(store_.id[i]));
  }
  hash_.assign(n, 0);
  hash_sum_ = 0;
  for (std::uint32_t i = 0; i < n; ++i) refold(i);
  control_policy_count_.fill(0);
  sim_tier_count_.fill(0);
  for (auto& w : waiting_) w.clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    ++control_policy_count_[store_.control_policy[i]];
    ++sim_tier_count_[tier_index(store_.sim_tier[i])];
    if (store_.waiting_since[i] != 0)
      waiting_[store_.garage[i]].push_back({store_.waiting_since[i], store_.id[i]});
  }
  for (auto& w : waiting_) std::sort(w.begin(), w.end());
}

void VehicleSystem::digest_into(Digest& d) const {
  d.tag(20).u32(store_.size());
  d.u64(hash_sum_);  // order-independent over the dense arrays, folded as vehicles change
  // Garages and signals change every step (queue frames, gate counts, phase
  // clocks): their scalars are folded in pairs (fold_pair), a record per
  // garage or signal salted by its index, and summed; queued requests (rare,
  // variable length) go through the Digest chain.
  d.tag(21).u32(static_cast<std::uint32_t>(garages_.size()));
  std::uint64_t garages = 0;
  for (std::uint32_t gi = 0; gi < garages_.size(); ++gi) {
    const GarageState& g = garages_[gi];
    if (!g.queue.empty()) {
      d.u32(gi).u64(g.queue.size());
      for (const QueuedRequest& q : g.queue)
        d.str(q.request_id)
            .u32(q.prototype)
            .u64(static_cast<std::uint64_t>(q.priority))
            .u64(q.enqueue_ordinal);
    }
    if (!g.mouth.empty()) {  // vehicles dispatched into the mouth (empty without one)
      d.tag(25).u32(gi).u64(g.mouth.size());
      for (const MouthVehicle& m : g.mouth)
        d.u64(m.id.packed()).u64(m.ordinal).u32(m.prototype).str(m.request_id);
    }
    const std::uint64_t salt = std::uint64_t{gi} << 8;
    const std::uint64_t small =
        (std::uint64_t{g.has_dispatched} << 8) | static_cast<std::uint64_t>(g.last_gate);
    std::uint64_t w = fold_pair(g.dispatched.size(), dispatched_hash_[gi], salt | 1) +
                      fold_pair(g.frame_index, g.last_dispatch_frame, salt | 2) +
                      fold_pair(g.next_enqueue_ordinal, g.next_vehicle_ordinal, salt | 3) +
                      fold_pair(g.turnarounds, small, salt | 4) +
                      fold_pair(g.gate_steps[0], g.gate_steps[1], salt | 5) +
                      fold_pair(g.gate_steps[2], g.gate_steps[3], salt | 6) +
                      fold_pair(g.gate_steps[4], g.gate_steps[5], salt | 7) +
                      fold_pair(g.rejected_invalid, g.rejected_duplicate, salt | 8) +
                      fold_pair(g.rejected_queue_full, g.canceled, salt | 9);
    static_assert(kDispatchGateCount == 6);
    garages += mix64(w ^ g.queue.size());
  }
  d.u64(garages);
  d.tag(22).u32(static_cast<std::uint32_t>(signals_.size()));
  std::uint64_t signals = 0;
  for (std::uint32_t si = 0; si < signals_.size(); ++si) {
    const SignalState& s = signals_[si];
    // cycles < 2^62 (one per cycle of at least 3 ms of phases), so the phase fits below it.
    signals +=
        fold_pair(s.phase_elapsed_us, (s.cycles << 2) | static_cast<std::uint64_t>(s.phase), si);
  }
  d.u64(signals);
  d.tag(23).u64(plan_.cursor).u64(plan_.accepted).u64(plan_.rejected);
  d.tag(24);
  for (const std::uint32_t c : last_tiers_.per_tier) d.u32(c);
  d.u32(last_tiers_.promoted).u32(last_tiers_.demoted).u32(last_tiers_.deferred);
  d.u32(last_tiers_.forced).u32(last_tiers_.forced_overflow);
  d.u32(last_step_.moving).u32(last_step_.turnarounds).u32(last_step_.dispatched);
  for (const std::uint32_t c : last_step_.per_policy) d.u32(c);
}

// Invariants 1, 2, 3 and 5 and the store's consistency, section by section;
// the first violation found, or empty.
std::string VehicleSystem::check_invariants(const EntityRegistry& registry) const {
  std::vector<std::uint32_t> managed;
  if (std::string why = check_store_rows(registry, managed); !why.empty()) return why;
  if (std::string why = check_garages(managed); !why.empty()) return why;
  if (std::string why = check_mouths(registry); !why.empty()) return why;
  if (std::string why = check_vehicle_ids_and_headways(); !why.empty()) return why;
  return check_derived();
}

// Columns, ids, routes, lanes and known values per row; counts each
// garage's vehicles into `managed`.
std::string VehicleSystem::check_store_rows(const EntityRegistry& registry,
                                            std::vector<std::uint32_t>& managed) const {
  const std::string area = "vehicles: ";
  auto vehicle = [&](std::uint32_t i) { return "vehicle " + id_text(store_.id[i]); };
  const std::uint32_t n = store_.size();
  const bool columns_ok =
      store_.garage.size() == n && store_.ordinal.size() == n && store_.prototype.size() == n &&
      store_.route_index.size() == n && store_.lane.size() == n && store_.s_m.size() == n &&
      store_.speed_mps.size() == n && store_.strategy.size() == n &&
      store_.control_policy.size() == n && store_.reason.size() == n &&
      store_.sim_tier.size() == n && store_.leader.size() == n &&
      store_.steps_advanced.size() == n && store_.last_advance_step.size() == n &&
      store_.waiting_since.size() == n && store_.despawn_requested.size() == n &&
      store_.request_id.size() == n && cold_hash_.size() == n;
  if (!columns_ok) return area + "column lengths differ";
  managed.assign(garages_.size(), 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    const EntityId id = store_.id[i];
    if (!registry.is_alive(id)) return area + vehicle(i) + " is not alive in the registry";
    if (store_.dense_of[id.index] != i) {
      return area + "dense_of[" + std::to_string(id.index) + "] is " +
             std::to_string(store_.dense_of[id.index]) + ", " + vehicle(i) + " is in slot " +
             std::to_string(i);
    }
    if (store_.garage[i] >= garages_.size())
      return area + vehicle(i) + " has unknown garage " + std::to_string(store_.garage[i]);
    const auto& route = routes_[store_.garage[i]];
    if (store_.route_index[i] >= route.size() || route[store_.route_index[i]] != store_.lane[i]) {
      return area + vehicle(i) + " on lane " + std::to_string(store_.lane[i]) +
             " is not at route index " + std::to_string(store_.route_index[i]) +
             " of its garage route";
    }
    if (!(store_.s_m[i] >= 0.0 && store_.s_m[i] <= lanes_->lane(store_.lane[i]).length_m)) {
      return area + vehicle(i) + " at s " + std::to_string(store_.s_m[i]) + " m is off lane " +
             std::to_string(store_.lane[i]);
    }
    if (tier_index(store_.sim_tier[i]) >= kSimTierCount ||
        store_.control_policy[i] >= kControlPolicyCount)
      return area + vehicle(i) + " has an unknown tier or policy";
    ++managed[store_.garage[i]];
  }
  std::uint32_t mapped = 0;
  for (const std::uint32_t d : store_.dense_of) mapped += d != VehicleStore::kNoSlot;
  if (mapped != n)
    return area + std::to_string(mapped) + " dense_of entries for " + std::to_string(n) +
           " vehicles";
  return {};
}

// Per garage: managed counts and capacity, invariants 1-3 of its queue.
std::string VehicleSystem::check_garages(const std::vector<std::uint32_t>& managed) const {
  const std::string area = "vehicles: ";
  for (std::uint32_t g = 0; g < garages_.size(); ++g) {
    const GarageState& gs = garages_[g];
    const std::string garage = "garage " + scenario_->garages[g].id;
    if (managed[g] != managed_[g]) {
      return area + garage + " counts " + std::to_string(managed_[g]) + " managed vehicles, " +
             std::to_string(managed[g]) + " are in the store";
    }
    if (managed[g] + gs.mouth.size() > scenario_->garages[g].capacity)
      return area + garage +
             " manages more vehicles (on the road and in its mouth) than its capacity";
    // 1. A request id is in at most one of {queue, dispatched}, once.
    for (std::size_t k = 1; k < gs.dispatched.size(); ++k) {
      if (!(gs.dispatched[k - 1] < gs.dispatched[k]))
        return area + "invariant 1: " + garage + " dispatched ids are not a sorted set";
    }
    std::vector<std::string_view> queued;
    for (const QueuedRequest& q : gs.queue) {
      if (std::binary_search(gs.dispatched.begin(), gs.dispatched.end(), q.request_id)) {
        return area + "invariant 1: " + garage + " request '" + q.request_id +
               "' is both queued and dispatched";
      }
      queued.push_back(q.request_id);
    }
    std::sort(queued.begin(), queued.end());
    if (auto twice = std::adjacent_find(queued.begin(), queued.end()); twice != queued.end()) {
      return area + "invariant 1: " + garage + " request '" + std::string(*twice) +
             "' is queued twice";
    }
    // 2. Priority (desc), then EnqueueOrdinal (asc).
    for (std::size_t k = 1; k < gs.queue.size(); ++k) {
      if (!queue_in_order(gs.queue[k - 1], gs.queue[k])) {
        return area + "invariant 2: " + garage + " queue[" + std::to_string(k) + "] ('" +
               gs.queue[k].request_id + "') is out of priority, then ordinal order";
      }
    }
    // 3. Ordinals below next_vehicle_ordinal (a load continues the numbering, so >= dispatches).
    if (gs.next_vehicle_ordinal < gs.dispatched.size()) {
      return area + "invariant 3: " + garage + " next_vehicle_ordinal " +
             std::to_string(gs.next_vehicle_ordinal) + " is below its " +
             std::to_string(gs.dispatched.size()) + " dispatches";
    }
  }
  return {};
}

// The garage mouths: within mouth_capacity; each vehicle alive, not on the
// road, in no other mouth, its request dispatched (invariant 1); front first
// in dispatch order: ordinals increasing from the front, above every ordinal
// of its garage on the road and below next_vehicle_ordinal (invariant 3).
std::string VehicleSystem::check_mouths(const EntityRegistry& registry) const {
  const std::string area = "vehicles: ";
  std::vector<std::uint64_t> road_max(garages_.size(), 0);
  std::vector<std::uint8_t> on_road(garages_.size(), 0);
  for (std::uint32_t i = 0; i < store_.size(); ++i) {
    road_max[store_.garage[i]] = std::max(road_max[store_.garage[i]], store_.ordinal[i]);
    on_road[store_.garage[i]] = 1;
  }
  std::vector<EntityId> ids;
  for (std::uint32_t g = 0; g < garages_.size(); ++g) {
    const GarageState& gs = garages_[g];
    const GarageSpec& spec = scenario_->garages[g];
    const std::string garage = "garage " + spec.id + " mouth";
    if (gs.mouth.size() > spec.mouth_capacity) {
      return area + garage + " holds " + std::to_string(gs.mouth.size()) +
             " vehicles, its mouth_capacity is " + std::to_string(spec.mouth_capacity);
    }
    for (std::size_t k = 0; k < gs.mouth.size(); ++k) {
      const MouthVehicle& m = gs.mouth[k];
      const std::string at = garage + "[" + std::to_string(k) + "] (" + id_text(m.id) + ")";
      if (!registry.is_alive(m.id)) return area + at + " is not alive in the registry";
      if (is_vehicle(m.id)) return area + at + " is also on the road";
      if (m.prototype >= spec.prototypes.size()) return area + at + " has an unknown prototype";
      if (!std::binary_search(gs.dispatched.begin(), gs.dispatched.end(), m.request_id)) {
        return area + "invariant 1: " + at + " request '" + m.request_id +
               "' is not in the dispatched set";
      }
      const bool after_previous =
          k > 0 ? m.ordinal > gs.mouth[k - 1].ordinal : on_road[g] == 0 || m.ordinal > road_max[g];
      if (!after_previous || m.ordinal >= gs.next_vehicle_ordinal) {
        return area + "invariant 3: " + at + " has ordinal " + std::to_string(m.ordinal) +
               ": not after the vehicles ahead of it and below next_vehicle_ordinal";
      }
      ids.push_back(m.id);
    }
  }
  std::sort(ids.begin(), ids.end());
  if (auto twice = std::adjacent_find(ids.begin(), ids.end()); twice != ids.end())
    return area + "vehicle " + id_text(*twice) + " is in a mouth twice";
  return {};
}

// Invariant 3 (VehicleIds never repeat) and 5 (headway per lane), over the
// store sorted two ways.
std::string VehicleSystem::check_vehicle_ids_and_headways() const {
  const std::uint32_t n = store_.size();
  const std::string area = "vehicles: ";
  auto vehicle = [&](std::uint32_t i) { return "vehicle " + id_text(store_.id[i]); };
  // 3. VehicleIds never repeat: (garage, ordinal) unique, ordinal already issued.
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return store_.garage[a] != store_.garage[b] ? store_.garage[a] < store_.garage[b]
                                                : store_.ordinal[a] < store_.ordinal[b];
  });
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t i = order[k];
    if (store_.ordinal[i] >= garages_[store_.garage[i]].next_vehicle_ordinal) {
      return area + "invariant 3: " + vehicle(i) + " has VehicleId " + vehicle_id(i) +
             ", not yet issued";
    }
    if (k > 0 && store_.garage[order[k - 1]] == store_.garage[i] &&
        store_.ordinal[order[k - 1]] == store_.ordinal[i]) {
      return area + "invariant 3: " + vehicle(order[k - 1]) + " and " + vehicle(i) +
             " share VehicleId " + vehicle_id(i);
    }
  }
  if (std::string why = check_headways(order); !why.empty()) return why;
  return check_merges(order);
}

// 5. Each vehicle at least headway_block_m behind the next one along its
// route: the next on its lane by (s, EntityId), else the rear-most vehicle
// on the lanes its route continues onto (lane joins and the loop seam),
// walked while the distance is below the headway. O(n log n).
std::string VehicleSystem::check_headways(std::vector<std::uint32_t>& order) const {
  const std::uint32_t n = store_.size();
  auto vehicle = [&](std::uint32_t i) { return "vehicle " + id_text(store_.id[i]); };
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (store_.lane[a] != store_.lane[b]) return store_.lane[a] < store_.lane[b];
    return store_.s_m[a] != store_.s_m[b] ? store_.s_m[a] < store_.s_m[b]
                                          : store_.id[a] < store_.id[b];
  });
  std::vector<std::uint32_t> rear(lanes_->size(), VehicleStore::kNoSlot);  // per lane: smallest s
  for (std::uint32_t k = n; k-- > 0;) rear[store_.lane[order[k]]] = order[k];
  const double block = scenario_->vehicle_rules.headway_block_m;
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t behind = order[k];
    std::uint32_t ahead = VehicleStore::kNoSlot;
    double gap = 0.0;
    if (k + 1 < n && store_.lane[order[k + 1]] == store_.lane[behind]) {
      ahead = order[k + 1];
      gap = store_.s_m[ahead] - store_.s_m[behind];
    } else {
      const std::uint32_t garage = store_.garage[behind];
      const auto& route = routes_[garage];
      std::uint32_t ri = store_.route_index[behind];
      gap = lanes_->lane(store_.lane[behind]).length_m - store_.s_m[behind];
      for (std::uint32_t hop = 0; hop < 64 && gap < block - kEps; ++hop) {
        if (ri + 1 < route.size()) {
          ++ri;
        } else if (route_loops_[garage] != 0) {
          ri = 0;
        } else {
          break;
        }
        if (const std::uint32_t j = rear[route[ri]]; j != VehicleStore::kNoSlot) {
          if (j != behind) ahead = j;
          gap += store_.s_m[j];
          break;
        }
        gap += lanes_->lane(route[ri]).length_m;
      }
    }
    if (ahead != VehicleStore::kNoSlot && gap < block - kEps) {
      return "vehicles: invariant 5: " + vehicle(behind) + " on lane " +
             std::to_string(store_.lane[behind]) + " is " + std::to_string(gap) + " m behind " +
             vehicle(ahead) + " on lane " + std::to_string(store_.lane[ahead]) +
             " along its route (at s " + std::to_string(store_.s_m[behind]) +
             " m; headway_block_m " + std::to_string(block) + ")";
    }
  }
  return {};
}

// 6. At each merge, the vehicles within headway_block_m of the merge point
// (on the merge lane, or on a feeder with their route continuing onto it)
// are at least headway_block_m apart on the merge axis when on different
// lanes (pairs on one lane are invariant 5's). `order` is sorted by (lane,
// s, EntityId) (check_headways). O(merges x feeders x log n + near pairs).
std::string VehicleSystem::check_merges(const std::vector<std::uint32_t>& order) const {
  const double block = scenario_->vehicle_rules.headway_block_m;
  const auto on_lane = [&](LaneIndex l) {
    const auto b =
        std::lower_bound(order.begin(), order.end(), l,
                         [&](std::uint32_t i, LaneIndex x) { return store_.lane[i] < x; });
    const auto e = std::upper_bound(
        b, order.end(), l, [&](LaneIndex x, std::uint32_t i) { return x < store_.lane[i]; });
    return std::pair{b, e};
  };
  struct Near {
    double x_m;
    LaneIndex lane;
    std::uint32_t i;
  };
  std::vector<Near> near;
  for (std::uint32_t m = 0; m < merge_lane_.size(); ++m) {
    near.clear();
    const auto [mb, me] = on_lane(merge_lane_[m]);
    for (auto it = mb; it != me && store_.s_m[*it] < block - kEps; ++it)
      near.push_back({store_.s_m[*it], merge_lane_[m], *it});
    for (std::uint32_t k = merge_feeder_begin_[m]; k < merge_feeder_begin_[m + 1]; ++k) {
      const LaneIndex f = merge_feeders_[k];
      const double length_m = lanes_->lane(f).length_m;
      const auto [fb, fe] = on_lane(f);
      for (auto it = fe; it != fb;) {
        const std::uint32_t i = *--it;
        if (length_m - store_.s_m[i] >= block - kEps) break;
        if (next_on_route(i) == merge_lane_[m]) near.push_back({store_.s_m[i] - length_m, f, i});
      }
    }
    std::sort(near.begin(), near.end(), [](const Near& a, const Near& b) { return a.x_m < b.x_m; });
    for (std::size_t a = 0; a < near.size(); ++a) {
      for (std::size_t b = a + 1; b < near.size(); ++b) {
        if (near[a].lane == near[b].lane || near[b].x_m - near[a].x_m >= block - kEps) continue;
        return "vehicles: invariant 6: vehicle " + id_text(store_.id[near[a].i]) + " on lane " +
               std::to_string(near[a].lane) + " and vehicle " + id_text(store_.id[near[b].i]) +
               " on lane " + std::to_string(near[b].lane) + " are " +
               std::to_string(near[b].x_m - near[a].x_m) + " m apart at the merge onto lane " +
               std::to_string(merge_lane_[m]) + " (headway_block_m " + std::to_string(block) + ")";
      }
    }
  }
  return {};
}

// The derived state the step maintains instead of recounting.
std::string VehicleSystem::check_derived() const {
  const std::uint32_t n = store_.size();
  const std::string area = "vehicles: ";
  auto vehicle = [&](std::uint32_t i) { return "vehicle " + id_text(store_.id[i]); };
  // The folded digest words, policy and tier counts, the turnaround
  // waiting lists.
  std::uint64_t sum = 0;
  std::array<std::uint32_t, kControlPolicyCount> policies{};
  std::array<std::uint32_t, kSimTierCount> tiers{};
  std::size_t waiting = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (hash_[i] != vehicle_word(i))
      return area + vehicle(i) + " changed without its digest word being refolded";
    sum += hash_[i];
    ++policies[store_.control_policy[i]];
    ++tiers[tier_index(store_.sim_tier[i])];
    if (store_.waiting_since[i] != 0) {
      const auto& w = waiting_[store_.garage[i]];
      if (!std::binary_search(w.begin(), w.end(), Waiter{store_.waiting_since[i], store_.id[i]})) {
        return area + vehicle(i) + " awaits turnaround but is not on its garage's waiting list";
      }
      ++waiting;
    }
  }
  if (sum != hash_sum_) return area + "the folded digest sum differs from its vehicles' words";
  if (policies != control_policy_count_)
    return area + "the maintained per-policy counts differ from the store";
  if (tiers != sim_tier_count_)
    return area + "the maintained per-tier counts differ from the store";
  std::size_t listed = 0;
  for (const auto& w : waiting_) listed += w.size();
  if (listed != waiting)
    return area + "the turnaround waiting lists hold vehicles that are not waiting";
  return {};
}

VehicleCheckpoint VehicleSystem::capture() const {
  VehicleCheckpoint cp;
  capture_into(cp);
  return cp;
}

namespace {
// Every store column but dense_of, which restore rebuilds: it has one entry
// per entity slot (8 MiB at a 2 M capacity), so copying it only to clear it
// was a sixth of a 1 M-pedestrian checkpoint's sim-thread copy.
void copy_rows(VehicleStore& to, const VehicleStore& from) {
  static_assert(sizeof(VehicleStore) == 19 * sizeof(std::vector<std::uint32_t>),
                "a new vehicle column must be copied here");
  to.id = from.id;
  to.garage = from.garage;
  to.ordinal = from.ordinal;
  to.prototype = from.prototype;
  to.route_index = from.route_index;
  to.lane = from.lane;
  to.s_m = from.s_m;
  to.speed_mps = from.speed_mps;
  to.strategy = from.strategy;
  to.control_policy = from.control_policy;
  to.reason = from.reason;
  to.sim_tier = from.sim_tier;
  to.leader = from.leader;
  to.steps_advanced = from.steps_advanced;
  to.last_advance_step = from.last_advance_step;
  to.waiting_since = from.waiting_since;
  to.despawn_requested = from.despawn_requested;
  to.request_id = from.request_id;
  to.dense_of.clear();  // the capacity stays for the next capture
}
}  // namespace

void VehicleSystem::capture_into(VehicleCheckpoint& cp) const {
  // Copy-assignment into cp's vectors keeps their capacity, so a recycled
  // checkpoint costs no allocation or page faults.
  copy_rows(cp.store, store_);
  cp.garage_ids.resize(scenario_->garages.size());
  for (std::size_t g = 0; g < cp.garage_ids.size(); ++g)
    cp.garage_ids[g] = scenario_->garages[g].id;
  cp.signal_ids.resize(scenario_->signals.size());
  for (std::size_t k = 0; k < cp.signal_ids.size(); ++k)
    cp.signal_ids[k] = scenario_->signals[k].id;
  cp.garages = garages_;
  cp.signals = signals_;
  cp.plan = plan_;
  cp.last_tiers = last_tiers_;
  cp.last_step = last_step_;
}

std::vector<std::pair<std::string, std::string>> VehicleSystem::restore(
    const VehicleCheckpoint& cp, const EntityRegistry& registry) {
  RestoreErrors errors;
  if (!restore_check_shape(cp, errors)) return errors;
  std::vector<std::uint32_t> dense_of(store_.dense_of.size(), VehicleStore::kNoSlot);
  std::vector<std::uint32_t> managed(garages_.size(), 0);
  std::vector<std::vector<std::uint64_t>> ordinals(garages_.size());
  restore_check_rows(cp, registry, errors, dense_of, managed, ordinals);
  restore_check_mouths(cp, registry, dense_of, ordinals, errors);
  restore_check_garages(cp, managed, ordinals, errors);
  restore_check_signals_and_leaders(cp, registry, errors);
  if (!errors.empty()) return errors;

  const VehicleStore& s = cp.store;
  store_ = s;
  store_.dense_of = std::move(dense_of);
  // Derived caches of the digest and the step: rebuilt from the restored
  // state, never stored.
  rebuild_derived();
  dispatched_hash_.assign(cp.garages.size(), 0);
  for (std::size_t g = 0; g < cp.garages.size(); ++g) {
    for (const std::string& r : cp.garages[g].dispatched)
      dispatched_hash_[g] += Digest{}.str(r).value();
  }
  lane_min_valid_ = false;
  garages_ = cp.garages;
  managed_ = managed;
  signals_ = cp.signals;
  plan_ = cp.plan;
  last_tiers_ = cp.last_tiers;
  last_step_ = cp.last_step;
  return errors;
}

// Column lengths, and garages and signals matching the scenario's; false
// when nothing further can be checked.
bool VehicleSystem::restore_check_shape(const VehicleCheckpoint& cp, RestoreErrors& errors) const {
  auto fail = [&](std::string path, std::string msg) {
    add_restore_error(errors, std::move(path), std::move(msg));
  };
  const VehicleStore& s = cp.store;
  const std::size_t n = s.id.size();
  const bool columns_ok =
      s.garage.size() == n && s.ordinal.size() == n && s.prototype.size() == n &&
      s.route_index.size() == n && s.lane.size() == n && s.s_m.size() == n &&
      s.speed_mps.size() == n && s.strategy.size() == n && s.control_policy.size() == n &&
      s.reason.size() == n && s.sim_tier.size() == n && s.leader.size() == n &&
      s.steps_advanced.size() == n && s.last_advance_step.size() == n &&
      s.waiting_since.size() == n && s.despawn_requested.size() == n && s.request_id.size() == n;
  if (!columns_ok) {
    fail("vehicles", "column lengths differ");
    return false;
  }
  if (cp.garages.size() != scenario_->garages.size()) {
    fail("garages", std::to_string(cp.garages.size()) + " garages, scenario has " +
                        std::to_string(scenario_->garages.size()));
    return false;
  }
  if (cp.signals.size() != scenario_->signals.size()) {
    fail("signals", std::to_string(cp.signals.size()) + " signals, scenario has " +
                        std::to_string(scenario_->signals.size()));
    return false;
  }
  for (std::size_t g = 0; g < cp.garage_ids.size() && g < scenario_->garages.size(); ++g) {
    if (cp.garage_ids[g] != scenario_->garages[g].id) {
      fail("garages[" + std::to_string(g) + "].garage_id", "'" + cp.garage_ids[g] +
                                                               "' does not match the scenario's '" +
                                                               scenario_->garages[g].id + "'");
    }
  }
  for (std::size_t i = 0; i < cp.signal_ids.size() && i < scenario_->signals.size(); ++i) {
    if (cp.signal_ids[i] != scenario_->signals[i].id) {
      fail("signals[" + std::to_string(i) + "].signal_id", "does not match the scenario");
    }
  }
  return errors.empty();
}

// Each vehicle row: alive, unique, on its garage route, known values; fills
// the dense map, managed counts and ordinals per garage.
void VehicleSystem::restore_check_rows(const VehicleCheckpoint& cp, const EntityRegistry& registry,
                                       RestoreErrors& errors, std::vector<std::uint32_t>& dense_of,
                                       std::vector<std::uint32_t>& managed,
                                       std::vector<std::vector<std::uint64_t>>& ordinals) const {
  auto fail = [&](std::string path, std::string msg) {
    add_restore_error(errors, std::move(path), std::move(msg));
  };
  const VehicleStore& s = cp.store;
  const std::size_t n = s.id.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::string row = "vehicles[" + std::to_string(i) + "]";
    if (!registry.is_alive(s.id[i])) {
      fail(row + ".id", "entity " + std::to_string(s.id[i].index) + ":" +
                            std::to_string(s.id[i].generation) + " is not alive in the registry");
      continue;
    }
    if (dense_of[s.id[i].index] != VehicleStore::kNoSlot) {
      fail(row + ".id",
           "duplicate entity (also row " + std::to_string(dense_of[s.id[i].index]) + ")");
      continue;
    }
    dense_of[s.id[i].index] = static_cast<std::uint32_t>(i);
    if (s.garage[i] >= garages_.size()) {
      fail(row + ".garage", "garage " + std::to_string(s.garage[i]) + " does not exist");
      continue;
    }
    const auto& route = routes_[s.garage[i]];
    if (s.route_index[i] >= route.size()) {
      fail(row + ".route_index", std::to_string(s.route_index[i]) + " is outside the garage route");
      continue;
    }
    if (s.lane[i] != route[s.route_index[i]]) {
      fail(row + ".lane", "lane " + std::to_string(s.lane[i]) + " does not match route index " +
                              std::to_string(s.route_index[i]));
      continue;
    }
    const double len = lanes_->lane(s.lane[i]).length_m;
    if (!std::isfinite(s.s_m[i]) || s.s_m[i] < 0.0 || s.s_m[i] > len) {
      fail(row + ".s_m",
           "distance " + std::to_string(s.s_m[i]) + " outside the lane (alpha must be in [0, 1])");
      continue;
    }
    if (s.prototype[i] >= scenario_->garages[s.garage[i]].prototypes.size())
      fail(row + ".prototype", "unknown");
    if (s.strategy[i] > 3)
      fail(row + ".strategy", "unknown strategy " + std::to_string(s.strategy[i]));
    if (s.control_policy[i] >= kControlPolicyCount) fail(row + ".policy", "unknown policy");
    if (tier_index(s.sim_tier[i]) >= kSimTierCount) fail(row + ".tier", "unknown tier");
    if (s.leader[i] == s.id[i]) fail(row + ".leader", "a vehicle cannot lead itself");
    ++managed[s.garage[i]];
    ordinals[s.garage[i]].push_back(s.ordinal[i]);
  }
}

// Each garage's mouth (check_mouths): within mouth_capacity, each vehicle
// alive, on no lane and in no other mouth, its request dispatched, ordinals
// increasing from the front above its garage's ordinals on the road (added
// to `ordinals`, so restore_check_garages checks them against the rest).
void VehicleSystem::restore_check_mouths(const VehicleCheckpoint& cp,
                                         const EntityRegistry& registry,
                                         const std::vector<std::uint32_t>& dense_of,
                                         std::vector<std::vector<std::uint64_t>>& ordinals,
                                         RestoreErrors& errors) const {
  auto fail = [&](std::string path, std::string msg) {
    add_restore_error(errors, std::move(path), std::move(msg));
  };
  std::vector<EntityId> ids;
  for (std::size_t g = 0; g < cp.garages.size(); ++g) {
    const GarageState& gs = cp.garages[g];
    const GarageSpec& spec = scenario_->garages[g];
    const std::string p = "garages[" + std::to_string(g) + "].mouth";
    if (gs.mouth.size() > spec.mouth_capacity) {
      fail(p, std::to_string(gs.mouth.size()) + " vehicles, mouth_capacity is " +
                  std::to_string(spec.mouth_capacity));
    }
    std::uint64_t after = 0;  // the smallest ordinal the next mouth vehicle may have
    for (const std::uint64_t o : ordinals[g]) after = std::max(after, o + 1);
    for (std::size_t k = 0; k < gs.mouth.size(); ++k) {
      const MouthVehicle& m = gs.mouth[k];
      const std::string row = p + "[" + std::to_string(k) + "]";
      if (!registry.is_alive(m.id)) {
        fail(row + ".id", "entity " + id_text(m.id) + " is not alive in the registry");
      } else if (dense_of[m.id.index] != VehicleStore::kNoSlot) {
        fail(row + ".id", "entity " + id_text(m.id) + " is also on the road (vehicles[" +
                              std::to_string(dense_of[m.id.index]) + "])");
      }
      if (m.prototype >= spec.prototypes.size()) fail(row + ".prototype", "unknown prototype");
      if (!std::binary_search(gs.dispatched.begin(), gs.dispatched.end(), m.request_id))
        fail(row + ".request_id", "request '" + m.request_id + "' is not dispatched");
      if (m.ordinal < after) {
        fail(row + ".ordinal", std::to_string(m.ordinal) +
                                   " is not after the vehicles ahead of it (front first, in "
                                   "dispatch order)");
      }
      after = m.ordinal + 1;
      ordinals[g].push_back(m.ordinal);
      ids.push_back(m.id);
    }
  }
  std::sort(ids.begin(), ids.end());
  if (auto twice = std::adjacent_find(ids.begin(), ids.end()); twice != ids.end())
    fail("garages", "entity " + id_text(*twice) + " is in a mouth twice");
}

// Each garage: queue (depth, order, prototypes, ordinals), dispatched set,
// VehicleId ordinals, capacity.
void VehicleSystem::restore_check_garages(const VehicleCheckpoint& cp,
                                          const std::vector<std::uint32_t>& managed,
                                          std::vector<std::vector<std::uint64_t>>& ordinals,
                                          RestoreErrors& errors) const {
  auto fail = [&](std::string path, std::string msg) {
    add_restore_error(errors, std::move(path), std::move(msg));
  };
  for (std::size_t g = 0; g < cp.garages.size(); ++g) {
    const GarageState& gs = cp.garages[g];
    const GarageSpec& spec = scenario_->garages[g];
    const std::string p = "garages[" + std::to_string(g) + "]";
    if (gs.queue.size() > spec.queue_depth) fail(p + ".queue", "longer than queue_depth");
    for (std::size_t k = 0; k < gs.queue.size(); ++k) {
      const QueuedRequest& q = gs.queue[k];
      const std::string qp = p + ".queue[" + std::to_string(k) + "]";
      if (std::binary_search(gs.dispatched.begin(), gs.dispatched.end(), q.request_id)) {
        fail(qp + ".request_id", "request '" + q.request_id + "' is both queued and dispatched");
      }
      if (q.prototype >= spec.prototypes.size()) fail(qp + ".prototype", "unknown prototype");
      if (q.enqueue_ordinal >= gs.next_enqueue_ordinal)
        fail(qp + ".enqueue_ordinal", "not below next_enqueue_ordinal");
      if (k > 0) {
        if (!queue_in_order(gs.queue[k - 1], q)) {
          fail(qp, "queue is not in priority, then ordinal order");
        }
      }
    }
    if (!std::is_sorted(gs.dispatched.begin(), gs.dispatched.end()) ||
        std::adjacent_find(gs.dispatched.begin(), gs.dispatched.end()) != gs.dispatched.end()) {
      fail(p + ".dispatched", "not a sorted set");
    }
    if (gs.next_vehicle_ordinal < gs.dispatched.size()) {
      fail(p + ".next_vehicle_ordinal", std::to_string(gs.next_vehicle_ordinal) +
                                            " is below the dispatched count " +
                                            std::to_string(gs.dispatched.size()));
    }
    for (const std::uint64_t o : ordinals[g]) {
      if (o >= gs.next_vehicle_ordinal)
        fail(p + ".next_vehicle_ordinal", "a managed vehicle has ordinal " + std::to_string(o));
    }
    auto& os = ordinals[g];
    std::sort(os.begin(), os.end());
    if (std::adjacent_find(os.begin(), os.end()) != os.end())
      fail(p, "two vehicles share a VehicleId ordinal");
    if (managed[g] + gs.mouth.size() > spec.capacity)
      fail(p, "more managed vehicles (on the road and in the mouth) than capacity");
    if (gs.has_dispatched && gs.last_dispatch_frame > gs.frame_index) {
      fail(p + ".last_dispatch_frame", "after the current queue frame");
    }
  }
}

// Signal phases, the plan cursor and the leaders.
void VehicleSystem::restore_check_signals_and_leaders(const VehicleCheckpoint& cp,
                                                      const EntityRegistry& registry,
                                                      RestoreErrors& errors) const {
  auto fail = [&](std::string path, std::string msg) {
    add_restore_error(errors, std::move(path), std::move(msg));
  };
  const std::size_t n = cp.store.id.size();
  for (std::size_t i = 0; i < cp.signals.size(); ++i) {
    const SignalSpec& sg = scenario_->signals[i];
    const SignalState& st = cp.signals[i];
    const std::uint64_t durations[3] = {std::uint64_t{sg.open_ms} * 1000,
                                        std::uint64_t{sg.yield_ms} * 1000,
                                        std::uint64_t{sg.closed_ms} * 1000};
    if (static_cast<int>(st.phase) > 2) {
      fail("signals[" + std::to_string(i) + "].phase", "unknown phase");
    } else if (st.phase_elapsed_us >= durations[static_cast<int>(st.phase)]) {
      fail("signals[" + std::to_string(i) + "].phase_elapsed_us", "not inside the phase duration");
    }
  }
  if (cp.plan.cursor > scenario_->vehicle_plan.requests.size())
    fail("plan.cursor", "beyond the planned requests");
  for (std::size_t i = 0; i < n; ++i) {
    if (!cp.store.leader[i].is_null() && !registry.is_alive(cp.store.leader[i])) {
      fail("vehicles[" + std::to_string(i) + "].leader", "leader is not alive");
    }
  }
}

}  // namespace bustle::core
