// Phase 5's order (step) and its kernel: the pre-step snapshot (vehicles by
// lane, merge winners), then per vehicle the leader, the arbitration and the
// advance along the route, each folding its digest word; stuck vehicles and
// the per-policy counts after it.
#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "arbitration.hpp"
#include "bustle/core/vehicles.hpp"
#include "internal.hpp"

namespace bustle::core {

namespace {

constexpr std::size_t kLeaderLookaheadLanes = 8;

}  // namespace

void VehicleSystem::step(std::uint64_t step_index, std::uint32_t step_us, EntityRegistry& registry,
                         const std::vector<std::uint8_t>& crossing_occupied,
                         const std::vector<Vec2>& observers, std::vector<DespawnRequest>& despawns,
                         PhaseExecutor& executor) {
  last_step_ = {};
  inject_plan(step_index);
  advance_signals(step_us);
  dispatch(step_index, registry, observers);
  regroup_store();
  build_snapshot();
  evaluate_and_advance(step_index, step_us, crossing_occupied, despawns, executor);
  turnarounds(step_index);
  ghosts_.clear();  // read by this step only (share_ghosts() sets the next step's own)
  foreign_crossings_.clear();
  find_stuck(step_index, step_us, despawns);
  count_policies();
  // Counts conserved: every vehicle on the road has exactly one policy.
  [[maybe_unused]] std::uint32_t with_policy = 0;
  for (const std::uint32_t c : last_step_.per_policy) with_policy += c;
  assert(with_policy == store_.size());
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

void VehicleSystem::build_snapshot() {
  const std::uint32_t n = store_.size();
  // A district world's ghosts (borders.cpp) follow the store's rows: read
  // as leaders and merge feeders like any vehicle, never evaluated.
  const auto ghosts = static_cast<std::uint32_t>(ghosts_.size());
  const std::uint32_t lanes = lanes_->size();
  assert(lane_start_.size() == std::size_t{lanes} + 1);
  assert(store_.lane.size() == n);
  std::fill(lane_start_.begin(), lane_start_.end(), 0);
  for (std::uint32_t i = 0; i < n; ++i) ++lane_start_[store_.lane[i] + 1];
  for (const VehicleGhost& g : ghosts_) ++lane_start_[g.lane + 1];
  for (std::uint32_t l = 0; l < lanes; ++l) lane_start_[l + 1] += lane_start_[l];
  assert(lane_start_[lanes] == n + ghosts);  // every vehicle on exactly one lane
  snap_.resize(n + ghosts);
  pos_in_order_.resize(n);
  cursor_.assign(lane_start_.begin(),
                 lane_start_.end() - 1);  // reused: no allocation after warm-up
  {
    const double* const s = store_.s_m.data();
    const EntityId* const id = store_.id.data();
    const LaneIndex* const lane = store_.lane.data();
    SnapRow* const o = snap_.data();
    std::uint32_t* const cursor = cursor_.data();
    // Field by field: GCC built the braced entry on the stack and copied it
    // with one 16-byte load over two 8-byte stores, a store-forwarding
    // stall per vehicle (2/3 of this function's time).
    for (std::uint32_t i = 0; i < n; ++i) {
      SnapRow& r = o[cursor[lane[i]]++];
      r.s_m = s[i];
      r.id = id[i];
      r.row = i;
    }
    for (std::uint32_t g = 0; g < ghosts; ++g) {
      SnapRow& r = o[cursor[ghosts_[g].lane]++];
      r.s_m = ghosts_[g].s_m;
      r.id = ghosts_[g].id;
      r.row = n + g;
    }
  }
  // Per lane by (s, EntityId): a handful of vehicles per lane, so an
  // insertion sort (no call per lane), std::sort for long queues. The keys
  // travel in the entries: no load through a row while sorting.
  const auto before = [](const SnapRow& a, const SnapRow& b) {
    return a.s_m != b.s_m ? a.s_m < b.s_m : a.id < b.id;
  };
  SnapRow* const o = snap_.data();
  for (std::uint32_t l = 0; l < lanes; ++l) {
    const std::uint32_t b = lane_start_[l], e = lane_start_[l + 1];
    if (e - b < 2) continue;
    if (e - b > 24) {
      std::sort(o + b, o + e, before);
      // Monotone positions after the sort, strictly by (s, EntityId): read
      // back by find_leader as "the next one". Checked on these long queues
      // only (O(their vehicles) once per step): a check of every lane cost
      // 6 % of bustle-bench vehicles' step.
      for (std::uint32_t k = b + 1; k < e; ++k) assert(before(o[k - 1], o[k]));
      continue;
    }
    for (std::uint32_t k = b + 1; k < e; ++k) {
      const SnapRow x = o[k];
      std::uint32_t m = k;
      for (; m > b && before(x, o[m - 1]); --m) o[m] = o[m - 1];
      o[m] = x;
    }
  }
  if (ghosts == 0) {
    for (std::uint32_t k = 0; k < n; ++k) pos_in_order_[o[k].row] = k;
  } else {
    for (std::uint32_t k = 0; k < n + ghosts; ++k) {
      if (o[k].row < n) pos_in_order_[o[k].row] = k;
    }
  }
  if (!merge_lane_.empty()) find_merge_winners();
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
      const SnapRow& front = snap_[lane_start_[f + 1] - 1];
      const std::uint32_t j = front.row;
      if (next_on_route(j) != merge_lane_[m]) continue;
      const double d = lane_hot_[f].length_m - front.s_m;
      if (best == VehicleStore::kNoSlot || d < best_d ||
          (d == best_d && snap_id(j) < snap_id(best))) {
        best = j;
        best_d = d;
      }
    }
    assert(best == VehicleStore::kNoSlot || best < snap_.size());
    merge_winner_[m] = best;
    merge_winner_d_m_[m] = best_d;
  }
}

// The kernel's look-ahead for a vehicle with nobody ahead on its own lane
// (inlined into it): the rear-most vehicle along the route across lane joins
// and the loop seam, as far as `look_m` (the caution headway or this
// evaluation's reach plus the block headway, invariant 5); a merge lane on
// the way takes its winner as a virtual leader (invariant 6).
[[gnu::always_inline]] inline VehicleSystem::Ahead VehicleSystem::look_ahead(
    std::uint32_t i, const LaneIndex* route, std::uint32_t route_size, std::uint32_t ri, bool loops,
    double to_end, double look_m) const {
  const SnapRow* const snap = snap_.data();
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
        out.merge_peer = snap_id(w);
      }
    }
    if (lane_start[lane] < lane_start[lane + 1]) {
      const SnapRow& rear = snap[lane_start[lane]];
      if (rear.row == i) break;  // only this vehicle on a one-lane loop
      out.leader = rear.id;
      out.gap_m = acc + rear.s_m;
      break;
    }
    acc += h.length_m;
  }
  return out;
}

// What the kernel reads and writes for the vehicles of one step. The columns
// are plain pointers: stores through the byte columns may alias anything, so
// member vectors would be reloaded after each, while these stay local (the
// parts below are inlined into evaluate_and_advance's loop and never take
// its address). Every vehicle reads the pre-step snapshot (snap). One
// Kernel per part (evaluate_part): the running totals and the queued
// mutations of shared state are the part's.
struct VehicleSystem::Kernel {
  std::uint64_t step_index;
  double dt_s;
  const VehicleRules& rules;
  const std::vector<std::uint8_t>& crossing_occupied;
  std::vector<DespawnRequest>& despawns;  // the part's, joined in part order
  std::vector<std::uint32_t>& waiting;    // rows that reached their loop's end
  const SimTier* tier_c;
  const std::uint8_t* despawn_c;
  const std::uint8_t* phase_c;
  const std::uint8_t* strategy_c;
  const std::uint32_t* garage_c;
  const std::uint64_t* waiting_c;
  LaneIndex* lane_c;
  std::uint32_t* ri_c;
  double* s_c;
  double* speed_c;
  std::uint8_t* policy_c;
  std::uint8_t* reason_c;
  EntityId* leader_c;
  std::uint64_t* steps_c;
  std::uint64_t* last_c;
  const EntityId* id_c;
  const SnapRow* snap;
  const std::uint32_t* lane_start;
  const std::uint32_t* pos;
  const LaneHot* lanes;
  const std::uint64_t* cold;
  std::uint64_t* hash;
  // The part's running totals (wrapping deltas), stored once after its loop.
  std::uint64_t sum;
  std::uint32_t moving = 0;
  std::array<std::uint32_t, kControlPolicyCount> policies;
};

// One due vehicle's place before it decides: its lane, its route and where
// it is on both, and how far this evaluation could take it at full speed.
struct VehicleSystem::Evaluation {
  std::uint32_t i;
  std::uint32_t stride;  // steps this evaluation stands for (tier_stride)
  LaneIndex lane;
  const LaneHot* here;
  std::uint32_t garage;
  const LaneIndex* route;
  std::uint32_t route_size;
  std::uint32_t ri;
  bool has_next;
  LaneIndex next;  // route[ri + 1], or route[0] at the route's end
  bool loops;
  bool next_on_route;  // has_next, or across the seam of a loop
  double travel_m;     // this evaluation's full-speed reach
  double s0;           // pre-step position on its lane
  double to_end;       // from s0 to its lane's end
};

[[gnu::always_inline]] inline VehicleSystem::Evaluation VehicleSystem::evaluation(
    const Kernel& k, std::uint32_t i) const {
  Evaluation e;
  e.i = i;
  e.stride = tier_stride(k.tier_c[i]);
  e.lane = k.lane_c[i];
  e.here = &k.lanes[e.lane];
  e.garage = k.garage_c[i];
  e.route = route_lanes_.data() + route_begin_[e.garage];
  e.route_size = route_begin_[e.garage + 1] - route_begin_[e.garage];
  e.ri = k.ri_c[i];
  e.has_next = e.ri + 1 < e.route_size;
  e.next = e.has_next ? e.route[e.ri + 1] : e.route[0];
  e.loops = route_loops_[e.garage] != 0;
  e.next_on_route = e.has_next || e.loops;
  e.travel_m = e.here->speed_mps * k.dt_s * e.stride + kEps;
  e.s0 = k.s_c[i];  // the pre-step position: only this vehicle writes its row
  e.to_end = e.here->length_m - e.s0;
  return e;
}

// Leader: the next vehicle on this lane in the snapshot, else look_ahead()
// along the route (invariants 5 and 6).
[[gnu::always_inline]] inline VehicleSystem::Ahead VehicleSystem::find_leader(
    const Kernel& k, const Evaluation& e) const {
  Ahead ahead;
  if (const std::uint32_t p = k.pos[e.i]; p + 1 < k.lane_start[e.lane + 1]) {
    const SnapRow& next = k.snap[p + 1];
    ahead.leader = next.id;
    ahead.gap_m = next.s_m - e.s0;
  } else {
    const double look_m =
        std::max(k.rules.headway_caution_m,
                 route_max_speed_[e.garage] * k.dt_s * e.stride + k.rules.headway_block_m);
    ahead = look_ahead(e.i, e.route, e.route_size, e.ri, e.loops, e.to_end, look_m);
  }
  return ahead;
}

// The arbitration's inputs from the pre-step state (signals and crossings
// ahead within reach, the leader's and the merge winner's gaps), the
// arbitration itself and the holds after it.
[[gnu::always_inline]] inline PolicyDecision VehicleSystem::arbitrate_vehicle(
    const Kernel& k, const Evaluation& e, const Ahead& ahead) const {
  PolicyInputs in;
  in.despawn_requested = k.despawn_c[e.i] != 0;
  in.strategy = static_cast<VehicleStrategy>(k.strategy_c[e.i]);
  // Signals: the stop line on this lane, or on the next one within reach.
  auto check_signal = [&](const LaneHot& h, double dist_to_lane_start) {
    if (h.signal < 0) return;
    const double to_stop = dist_to_lane_start + h.stop_m;
    const double to_yield = dist_to_lane_start + h.yield_m;
    if (to_stop < -kEps) return;  // already past the stop line
    if (h.phase == SignalPhase::Closed && to_stop <= e.travel_m) in.signal_closed = true;
    if (h.phase == SignalPhase::Yield && to_yield <= e.travel_m) in.signal_yield = true;
  };
  check_signal(*e.here, -e.s0);
  // The next lane's stop line and yield approach lie at or after its start
  // (alphas in [0, 1]; 0 without a signal), so beyond reach when its start
  // is: most vehicles then never load the next lane's facts.
  const LaneHot& next = k.lanes[e.next];
  if (e.next_on_route && e.to_end <= e.travel_m) check_signal(next, e.to_end);
  // Pedestrians on a crossing ahead (pre-step occupancy).
  const double hazard_m = k.rules.pedestrian_hazard_m;
  auto check_crossings = [&](LaneIndex rl, double dist_to_lane_start) {
    for (const Conflict& c : conflicts_[rl]) {
      const double to_crossing = dist_to_lane_start + c.s_on_road_m;
      if (to_crossing <= 0.0) continue;  // on or past it: clear the crossing
      if (to_crossing > hazard_m) break;
      if (k.crossing_occupied[c.crossing] != 0) in.pedestrian_hazard = true;
    }
  };
  if (e.here->conflicts != 0) check_crossings(e.lane, -e.s0);
  if (e.next_on_route && e.to_end < hazard_m && next.conflicts != 0)
    check_crossings(e.next, e.to_end);
  in.leader_gap_m = ahead.gap_m;
  in.merge_gap_m = ahead.merge_gap_m;
  PolicyDecision dec = arbitrate(in, k.rules);
  hold(dec, k.waiting_c[e.i] != 0, e.has_next && e.to_end <= e.travel_m ? e.next : kNoLaneAhead);
  return dec;
}

// Advance: spend this evaluation's time along the route at each lane's speed
// limit, never closer than the block headway to the leader's pre-step
// position (invariant 5) nor to the merge winner's on the merge axis
// (invariant 6). At the route's end a looping vehicle waits for its
// turnaround; any other asks to leave.
[[gnu::always_inline]] inline void VehicleSystem::advance_vehicle(Kernel& k, const Evaluation& e,
                                                                  double speed_multiplier,
                                                                  const Ahead& ahead) {
  const std::uint32_t i = e.i;
  const double dt_s = k.dt_s;
  double time_s = dt_s * e.stride * speed_multiplier;
  const double bound_m = std::min(ahead.gap_m, ahead.merge_gap_m);
  double cap_m = std::isfinite(bound_m) ? std::max(0.0, bound_m - k.rules.headway_block_m)
                                        : std::numeric_limits<double>::infinity();
  double moved_m = 0.0;
  LaneIndex cur = e.lane;
  double s = k.s_c[i];
  std::uint32_t cur_ri = e.ri;
  for (std::size_t hop = 0; hop < 64 && time_s > 0.0 && cap_m > 0.0; ++hop) {
    const LaneHot& C = k.lanes[cur];
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
    if (cur_ri + 1 < e.route_size) {
      if (closures_active_ && lane_closed_[e.route[cur_ri + 1]] != 0) break;  // nobody enters
      ++cur_ri;
      cur = e.route[cur_ri];
      s = 0.0;  // leftover time carries onto the next lane at its speed limit
      continue;
    }
    // End of the route.
    if (e.loops) {
      // Competes for the entrance (turnarounds()); its waiting list is
      // shared, so the row joins it after the parts (start_waiting).
      store_.waiting_since[i] = k.step_index;
      k.waiting.push_back(i);
    } else {
      k.despawns.push_back({k.id_c[i], DespawnReason::RouteCompleted});
    }
    break;
  }
  // Invariant 5 where it is written: never closer than the block headway.
  // (Per-vehicle checks of the row's lane, route index and position here and
  // in evaluation() cost 2-4 % of bustle-bench vehicles' step; the store's
  // invariants are checked between steps by check_invariants instead.)
  assert(!std::isfinite(bound_m) ||
         moved_m <= std::max(0.0, bound_m - k.rules.headway_block_m) + kEps);
  k.lane_c[i] = cur;
  k.s_c[i] = s;
  k.ri_c[i] = cur_ri;
  k.speed_c[i] = moved_m / (dt_s * e.stride);
  if (moved_m > 0.0) {
    ++k.steps_c[i];
    k.last_c[i] = k.step_index;
    ++k.moving;
  }
}

void VehicleSystem::evaluate_and_advance(std::uint64_t step_index, std::uint32_t step_us,
                                         const std::vector<std::uint8_t>& crossing_occupied,
                                         std::vector<DespawnRequest>& despawns,
                                         PhaseExecutor& executor) {
  const std::uint32_t n = store_.size();
  // The snapshot (build_snapshot) and the derived columns cover every row.
  assert(snap_.size() == n + ghosts_.size());
  assert(pos_in_order_.size() == n);
  assert(phase_.size() == n);
  assert(hash_.size() == n);
  assert(cold_hash_.size() == n);
  const std::uint32_t parts = (n + kVehicleRowsPerPart - 1) / kVehicleRowsPerPart;
  if (kernel_parts_.size() < parts) {
    // A part's queues hold at most its rows: sized once, no allocation later.
    const std::size_t had = kernel_parts_.size();
    kernel_parts_.resize(parts);
    for (std::size_t p = had; p < parts; ++p) {
      kernel_parts_[p].despawns.reserve(kVehicleRowsPerPart);
      kernel_parts_[p].waiting.reserve(kVehicleRowsPerPart);
    }
  }
  const double dt_s = static_cast<double>(step_us) * 1e-6;
  run_parts(executor, parts, [&](std::uint32_t part) {
    const std::uint32_t begin = part * kVehicleRowsPerPart;
    evaluate_part(begin, std::min(n, begin + kVehicleRowsPerPart), step_index, dt_s,
                  crossing_occupied, kernel_parts_[part]);
  });
  // Join in part order: the sequential order of rows (invariants 2 and 3 of
  // phase_executor.hpp), so the same requests in the same order.
  std::uint32_t moving = 0;
  for (std::uint32_t p = 0; p < parts; ++p) {
    const KernelPart& part = kernel_parts_[p];
    hash_sum_ += part.sum;
    for (std::size_t c = 0; c < kControlPolicyCount; ++c)
      control_policy_count_[c] += part.policies[c];
    moving += part.moving;
    despawns.insert(despawns.end(), part.despawns.begin(), part.despawns.end());
    for (const std::uint32_t i : part.waiting) start_waiting(i, step_index);
  }
  assert(moving <= n);
  last_step_.moving += moving;
}

// The kernel over rows [begin, end): reads the pre-step snapshot and shared
// tables, writes only these rows and `part` (phase_executor.hpp invariant 1).
void VehicleSystem::evaluate_part(std::uint32_t begin, std::uint32_t end, std::uint64_t step_index,
                                  double dt_s, const std::vector<std::uint8_t>& crossing_occupied,
                                  KernelPart& part) {
  assert(begin <= end);
  assert(end <= store_.size());
  part.despawns.clear();
  part.waiting.clear();
  Kernel k{.step_index = step_index,
           .dt_s = dt_s,
           .rules = scenario_->vehicle_rules,
           .crossing_occupied = crossing_occupied,
           .despawns = part.despawns,
           .waiting = part.waiting,
           .tier_c = store_.sim_tier.data(),
           .despawn_c = store_.despawn_requested.data(),
           .phase_c = phase_.data(),
           .strategy_c = store_.strategy.data(),
           .garage_c = store_.garage.data(),
           .waiting_c = store_.waiting_since.data(),
           .lane_c = store_.lane.data(),
           .ri_c = store_.route_index.data(),
           .s_c = store_.s_m.data(),
           .speed_c = store_.speed_mps.data(),
           .policy_c = store_.control_policy.data(),
           .reason_c = store_.reason.data(),
           .leader_c = store_.leader.data(),
           .steps_c = store_.steps_advanced.data(),
           .last_c = store_.last_advance_step.data(),
           .id_c = store_.id.data(),
           .snap = snap_.data(),
           .lane_start = lane_start_.data(),
           .pos = pos_in_order_.data(),
           .lanes = lane_hot_.data(),
           .cold = cold_hash_.data(),
           .hash = hash_.data(),
           .sum = 0,
           .moving = 0,
           .policies = {}};
  for (std::uint32_t i = begin; i < end; ++i) {
    if (!k.despawn_c[i] && !tier_due_phase(step_index, k.phase_c[i], k.tier_c[i])) {
      continue;  // policy and reason keep their last decision; progress catches up when due
    }
    const Evaluation e = evaluation(k, i);
    const Ahead ahead = find_leader(k, e);
    const PolicyDecision dec = arbitrate_vehicle(k, e, ahead);
    // Counted on a change only: most decisions repeat the last one, and an
    // unconditional --/++ on the same count chains every vehicle's store
    // to the next one's load.
    if (const auto was = k.policy_c[i]; was != static_cast<std::uint8_t>(dec.policy)) {
      --k.policies[was];
      ++k.policies[static_cast<std::size_t>(dec.policy)];
    }
    k.policy_c[i] = static_cast<std::uint8_t>(dec.policy);
    k.reason_c[i] = static_cast<std::uint8_t>(dec.reason);
    k.leader_c[i] = !dec.leader_recorded                     ? EntityId{}
                    : dec.reason == PolicyReason::MergeYield ? ahead.merge_peer
                                                             : ahead.leader;
    if (dec.advance) {
      advance_vehicle(k, e, dec.speed_multiplier, ahead);
    } else {
      k.speed_c[i] = 0.0;
    }
    // Fold this vehicle's new digest word (vehicle_word(i), from the values at hand).
    const std::uint64_t h = fold_vehicle(
        k.cold[i], k.ri_c[i], k.lane_c[i], k.s_c[i], k.speed_c[i],
        vehicle_flags(k.strategy_c[i], k.policy_c[i], k.reason_c[i], k.tier_c[i], k.despawn_c[i]),
        k.leader_c[i], k.steps_c[i], k.waiting_c[i], k.last_c[i]);
    k.sum += h - k.hash[i];
    k.hash[i] = h;
  }
  assert(k.moving <= end - begin);
  part.sum = k.sum;
  part.moving = k.moving;
  part.policies = k.policies;
}

void VehicleSystem::count_policies() {
  // Over every vehicle, not only those evaluated this step: a Coarse vehicle
  // waiting at a signal is still waiting between its evaluations.
  // Maintained where policies are written (set_policy), not recounted.
  for (std::size_t p = 0; p < kControlPolicyCount; ++p)
    last_step_.per_policy[p] = control_policy_count_[p];
}

}  // namespace bustle::core
