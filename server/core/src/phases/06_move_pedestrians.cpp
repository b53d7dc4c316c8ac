// Phase 6 of World::step(): pedestrian movement. Each pedestrian due this
// step (by its sim tier and id phase) advances along its lanes at lane
// speed, carrying the remaining time across lane ends; a route gives the next
// lane, otherwise a seeded choice among the successors; dead ends request a
// despawn. Closed lanes are never entered: the choice skips them, or the
// pedestrian waits at its lane end (commands/set_lane_closed.cpp). A resident
// holding an anchored work-point slot steers to its slot and stands there
// (work_point_anchors.cpp).
#include <algorithm>
#include <cassert>
#include <optional>

#include "bustle/core/world.hpp"

namespace bustle::core {
namespace {

// Bounds the lane hops one agent can make in one step, so a pathological graph
// (many tiny lanes) can never turn a step into an unbounded loop.
constexpr std::uint32_t kMaxHopsPerStep = 64;

// A walk within one lane: `time_s` at the lane's speed limit from `s_m`.
// Phase 6's inline fast path and move_pedestrian_row both walk with it, so
// the two give the same bits.
struct LaneWalk {
  double travel_m;  // the distance the time is worth on this lane
  double s_m;       // where it ends, if the lane were long enough
  bool within;      // it ends before the lane's end
};
[[gnu::always_inline]] inline LaneWalk walk_within_lane(const Lane& lane, double s_m,
                                                        double time_s) {
  const double travel_m = lane.speed_mps_limit * time_s;
  const double end_m = s_m + travel_m;
  return {travel_m, end_m, end_m < lane.length_m};
}

}  // namespace

World::Moved World::phase_move_pedestrians() {
  const double dt_s = static_cast<double>(scenario_.step_us) * 1e-6;
  const std::uint32_t n = pedestrians_.size();
  // The columns the parts read and write are one row each per pedestrian.
  assert(pedestrians_.lane.size() == n);
  assert(pedestrians_.s_m.size() == n);
  assert(pedestrians_.phase.size() == n);
  assert(pedestrians_.sim_tier.size() == n);
  assert(pedestrians_.catch_up_steps.size() == n);
  assert(pedestrians_.hops.size() == n);
  assert(pedestrians_.route.size() == n);
  assert(pedestrians_.origin.size() == n);
  // Due this step, by tier and phase byte (a table per step, so the loop over
  // every pedestrian does one load instead of the stride arithmetic). Only
  // the 64 id phases are filled: a phase byte with the admission-mask bit set
  // indexes the zeroed upper half, so masked rows stay put at no cost to the
  // others.
  static_assert(PedestrianStore::kAdmissionMaskedBit == 64 &&
                PedestrianStore::kPhaseBytes == 2 * PedestrianStore::kAdmissionMaskedBit);
  std::uint8_t due[kSimTierCount][PedestrianStore::kPhaseBytes] = {};
  for (std::size_t t = 0; t < kSimTierCount; ++t) {
    for (std::uint8_t ph = 0; ph < PedestrianStore::kAdmissionMaskedBit; ++ph)
      due[t][ph] = tier_due_phase(step_index_, ph, static_cast<SimTier>(t));
  }
  // Parts of kRowsPerPart rows, run by the executor in any order and on any
  // threads (phase_executor.hpp); their queued effects are applied below in
  // part (= row) order, exactly as a sequential loop applies them.
  const std::uint32_t parts = parts_for_rows(n);
  static_assert(kRowsPerPart % RowWriteStamps::kRowsPerChunk == 0,
                "a movement part must own the write-stamp chunks of its rows");
  if (move_parts_.size() < parts) move_parts_.resize(parts);
  if (tier_parts_.size() < parts) tier_parts_.resize(parts);
  if (slice_rows_.size() < parts * kRowsPerPart) slice_rows_.resize(parts * kRowsPerPart);
  std::uint8_t in_slice[64];
  tier_slice_phases(in_slice);
  run_parts(executor(), parts, [&](std::uint32_t p) {
    MovePart& out = move_parts_[p];
    out.sum_delta = 0;
    out.despawns.clear();
    out.released_routes.clear();
    out.waits.clear();
    out.departures.clear();
    out.reroutes = 0;
    out.due_rows = 0;
    out.crossings.clear();
    tier_parts_[p] = TierPart{};
    move_pedestrian_rows(p * kRowsPerPart, std::min(n, (p + 1) * kRowsPerPart), due, in_slice, dt_s,
                         out, tier_parts_[p], slice_rows_.data() + p * kRowsPerPart);
  });
  assert(std::uint64_t{parts} * kRowsPerPart >= n);
  Moved moved;
  moved.tier_slice = {std::span<TierPart>(tier_parts_.data(), parts), slice_rows_.data()};
  for (std::uint32_t p = 0; p < parts; ++p) {
    const MovePart& part = move_parts_[p];
    moved.digest_terms += part.sum_delta;
    moved.due_rows += part.due_rows;
    for (const DespawnRequest& d : part.despawns) request_despawn(d.id, d.reason);
    for (const std::uint32_t route : part.released_routes) routes_.release(route);
    border_crossings_.insert(border_crossings_.end(), part.crossings.begin(), part.crossings.end());
  }
  if (!closed_lanes_.empty() || !lane_waiters_.empty()) merge_lane_waits();
  assert(moved.due_rows <= n);
  assert(pedestrians_.size() == n);  // leaving waits for phase 9
  return moved;
}

// Rows [begin, end) of phase 6. Writes only those rows and `out`; reads the
// lane graph and the routes (a route's cursor belongs to its one pedestrian;
// releasing a route may compact the table, so it is queued).
void World::move_pedestrian_rows(
    std::uint32_t begin, std::uint32_t end,
    const std::uint8_t (&due)[kSimTierCount][PedestrianStore::kPhaseBytes],
    const std::uint8_t (&in_slice)[64], double dt_s, MovePart& out, TierPart& slice,
    std::uint32_t* slice_rows) {
  // Rows not due this step are skipped (the next due step moves by the whole
  // stride's time, so progress over time is the same in every tier). Which
  // rows are due follows the ids' phases, which branch prediction cannot
  // guess: the due rows of a chunk are listed first without a branch, then
  // moved in row order, as the one loop did.
  static_assert(kSimTierCount == 3);
  assert(begin <= end);
  assert(end <= pedestrians_.size());
  constexpr std::uint32_t kChunkRows = 512;
  std::uint32_t rows[kChunkRows];
  std::uint32_t members = 0, others[kSimTierCount] = {};
  // A row's time this step by tier: dt_s x stride, as move_pedestrian_row computes it.
  const double step_s[kSimTierCount] = {dt_s * tier_stride(SimTier::Full),
                                        dt_s * tier_stride(SimTier::Simulated),
                                        dt_s * tier_stride(SimTier::Coarse)};
  const bool plain = lane_waiters_.empty();
  constexpr auto resident = static_cast<std::uint8_t>(PedestrianOrigin::Resident);
  for (std::uint32_t first = begin; first < end; first += kChunkRows) {
    const std::uint32_t last = std::min(end, first + kChunkRows);
    std::uint32_t count = 0;
    for (std::uint32_t i = first; i < last; ++i) {
      rows[count] = i;
      const std::uint8_t phase = pedestrians_.phase[i];
      const std::size_t t = tier_index(pedestrians_.sim_tier[i]);
      count += due[t][phase];
      // Phase 7's slice, by the id phase without the admission-mask bit (a
      // masked pedestrian's tier is resolved as before).
      const std::uint32_t member = in_slice[phase & PedestrianStore::kIdPhaseMask];
      slice_rows[members] = i;
      members += member;
      others[0] += (member ^ 1u) & (t == 0);
      others[1] += (member ^ 1u) & (t == 1);
      others[2] += (member ^ 1u) & (t == 2);
    }
    out.due_rows += count;
    std::uint64_t delta = 0;  // the inline walks' digest terms (out.sum_delta once per chunk)
    for (std::uint32_t k = 0; k < count; ++k) {
      // Most due rows stay on their lane: that walk is done here, by the
      // same walk_within_lane as move_pedestrian_row's first hop (so the
      // same bits), without its call, anchor and lane-end bookkeeping. Anchored
      // residents, rows that may be leaving a closure's wait and rows with a
      // catch-up (placed or re-tiered since they last moved) take the full
      // walk.
      const std::uint32_t i = rows[k];
      if (plain && pedestrians_.catch_up_steps[i] == 0 &&
          !(has_anchors_ && pedestrians_.origin[i] == resident)) {
        const double s_before = pedestrians_.s_m[i];
        const LaneWalk walk = walk_within_lane(lanes_.lane(pedestrians_.lane[i]), s_before,
                                               step_s[tier_index(pedestrians_.sim_tier[i])]);
        if (walk.within) {
          const double s = walk.s_m;
          pedestrians_.s_m[i] = s;
          if (s != s_before) {
            const EntityId id = pedestrians_.id[i];
            delta += pedestrian_motion_hash(id, s) - pedestrian_motion_hash(id, s_before);
          }
          continue;
        }
      }
      move_pedestrian_row(i, dt_s, out);
    }
    out.sum_delta += delta;
  }
  slice.members = members;
  for (std::size_t t = 0; t < kSimTierCount; ++t) slice.others[t] = others[t];
  // Every row is in phase 7's slice or counted in its tier's others, once
  // (read back by phase_sim_tiers over all parts).
  assert(members + others[0] + others[1] + others[2] == end - begin);
}

// One due row of phase 6: its lane walk, and its digest terms into `out`.
void World::move_pedestrian_row(std::uint32_t i, double dt_s, MovePart& out) {
  assert(i < pedestrians_.size());
  const SimTier sim_tier = pedestrians_.sim_tier[i];
  LaneIndex lane = pedestrians_.lane[i];
  assert(lane < lanes_.size());
  const double s_before = pedestrians_.s_m[i];
  double s = s_before;
  // The steps since the row last moved: its stride, and its catch-up if it
  // was placed or re-tiered since (sim_tier.hpp); the catch-up is spent now.
  const int catch_up = pedestrians_.catch_up_steps[i];
  double time_left_s =
      dt_s * static_cast<double>(static_cast<int>(tier_stride(sim_tier)) + catch_up);
  // The row hash is taken out (once) while the columns still hold the old
  // values, before the first write to one of them.
  bool rehashed = false;
  if (catch_up != 0) {
    out.sum_delta -= pedestrian_row_hash(i);
    rehashed = true;
    pedestrians_.catch_up_steps[i] = 0;
    pedestrian_tiers_written_.mark(i);  // the part owns the row's chunk (phase 7 writes it too)
  }
  bool hopped = false;
  bool waited = false;
  // A resident holding an anchored work-point slot heads for it and stands
  // there (work_point_anchors.cpp); nobody else pays more than this test.
  RowAnchor anchor;
  if (has_anchors_ &&
      pedestrians_.origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Resident))
    row_anchor(i, anchor);
  for (std::uint32_t hop = 0; hop < kMaxHopsPerStep; ++hop) {
    const Lane& L = lanes_.lane(lane);
    const LaneWalk walk = walk_within_lane(L, s, time_left_s);
    if (lane == anchor.lane && s <= anchor.s_m && walk.s_m >= anchor.s_m) {
      s = anchor.s_m;  // arrived (or still there)
      break;
    }
    if (walk.within) {
      s = walk.s_m;
      break;
    }
    // Reached the lane end: keep the unused time and spend it on the next
    // lane at that lane's speed, so no progress is lost at corners.
    time_left_s -= (L.length_m - s) / L.speed_mps_limit;
    if (time_left_s < 0.0) time_left_s = 0.0;
    const auto& next = L.pedestrian_successors;
    if (next.empty()) {
      s = L.length_m;
      out.despawns.push_back({pedestrians_.id[i], DespawnReason::LaneDeadEnd});
      break;
    }
    // Route choice is a pure function of (world seed stream, id, hop count):
    // it does not depend on the order agents are processed in.
    const std::uint64_t h = mix64(
        route_salt_ ^ pedestrians_.id[i].packed() * 0x9E3779B97F4A7C15ull ^ pedestrians_.hops[i]);
    // Lane closures (commands/set_lane_closed.cpp): nobody enters a closed
    // lane; with no open way on the pedestrian waits at this lane end.
    LaneIndex open_pick = kAnyLane;
    // On the way to an anchor: the next lane of a shortest way there, unless closed.
    LaneIndex steer = anchor.next_hop != nullptr ? anchor.next_hop[lane] : kAnyLane;
    if (steer != kAnyLane && lane_closed_[steer] != 0) steer = kAnyLane;
    if (!closed_lanes_.empty()) {
      bool rerouted = false;
      open_pick = open_successor(i, next, h, rerouted);
      if (open_pick == kAnyLane) {
        s = L.length_m;
        out.waits.push_back(pedestrians_.id[i]);
        waited = true;
        break;
      }
      out.reroutes += rerouted && steer == kAnyLane;
    }
    // The row (lane, hops, route) is about to change: take its old hash
    // out of the digest sum while the columns still hold the old values.
    if (!rehashed) out.sum_delta -= pedestrian_row_hash(i);
    rehashed = true;
    hopped = true;
    if (hop_to_next_lane(i, next, h, steer, open_pick, time_left_s, lane, s, out)) break;
  }
  // A row that waited at a closure (standing at its lane end) and moved on.
  if (!waited && !lane_waiters_.empty() && s_before == lanes_.lane(pedestrians_.lane[i]).length_m)
    out.departures.push_back(pedestrians_.id[i]);
  // Pedestrian invariant 4 where it is written: on a lane, within its length.
  assert(lane < lanes_.size());
  assert(s >= 0.0);
  assert(s <= lanes_.lane(lane).length_m);
  pedestrians_.lane[i] = lane;
  pedestrians_.s_m[i] = s;
  if (rehashed) out.sum_delta += pedestrian_row_hash(i);
  // Lane, hops and maybe route changed. This part owns the row's chunk
  // (parts are whole chunks), so a plain store.
  if (hopped) pedestrian_lanes_written_.mark(i);
  if (s != s_before)
    out.sum_delta += pedestrian_motion_hash(pedestrians_.id[i], s) -
                     pedestrian_motion_hash(pedestrians_.id[i], s_before);
}

// Row `i`, at the end of `lane`, takes the next one (next_pedestrian_lane)
// at s = 0 with one hop more. In a district world (world_districts.cpp) that
// lane may be another district's: a background pedestrian leaves with its
// unused time (phase 9 removes the row); for anyone else it is a dead end
// (the hop taken back, it stops at its lane's end and despawns). True when
// the walk ends there.
bool World::hop_to_next_lane(std::uint32_t i, const std::vector<LaneIndex>& next, std::uint64_t h,
                             LaneIndex steer, LaneIndex open_pick, double time_left_s,
                             LaneIndex& lane, double& s, MovePart& out) {
  const LaneIndex from = lane;
  lane = next_pedestrian_lane(i, next, h, steer, open_pick, out);
  s = 0.0;
  ++pedestrians_.hops[i];
  if (!leaves_district(lane)) return false;
  if (pedestrians_.origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Background)) {
    out.crossings.push_back({pedestrians_.id[i], lane, time_left_s, pedestrians_.hops[i]});
    return true;
  }
  --pedestrians_.hops[i];
  lane = from;
  s = lanes_.lane(from).length_m;
  out.despawns.push_back({pedestrians_.id[i], DespawnReason::LaneDeadEnd});
  return true;
}

// The lane row `i` takes at its lane end. A pedestrian with a route takes its
// next lane (validated as a successor when the route was accepted; a route
// used up is released, queued in `out`); afterwards it wanders: the way to
// its anchor (`steer`), else the open successor (`open_pick`, closures),
// else the seeded choice `h` among `next`.
LaneIndex World::next_pedestrian_lane(std::uint32_t i, const std::vector<LaneIndex>& next,
                                      std::uint64_t h, LaneIndex steer, LaneIndex open_pick,
                                      MovePart& out) {
  if (pedestrians_.route[i] != kNoRoute) {
    if (const std::optional<LaneIndex> routed = routes_.next(pedestrians_.route[i])) return *routed;
    out.released_routes.push_back(pedestrians_.route[i]);
    pedestrians_.route[i] = kNoRoute;
  }
  assert(!next.empty());
  return steer != kAnyLane       ? steer
         : open_pick != kAnyLane ? open_pick
                                 : next[static_cast<std::size_t>(h % next.size())];
}

}  // namespace bustle::core
