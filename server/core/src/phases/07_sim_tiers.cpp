// Phase 7 of World::step(): simulation tiers (sim_tier.hpp) for vehicles and
// pedestrians, a slice (by id phase) per step, within the tier caps.
//
// Sections: the phase; importance-weighted distance (also used for a new
// pedestrian's first tier, initial_sim_tier).
#include <algorithm>

#include "bustle/core/world.hpp"

namespace bustle::core {

void World::fill_force(std::span<const EntityId> ids) {
  force_scratch_.clear();
  if (forced_full_.empty()) return;  // no flags: the resolver skips stage 0
  force_scratch_.assign(ids.size(), 0);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    force_scratch_[i] =
        std::binary_search(forced_full_.begin(), forced_full_.end(), ids[i]) ? 1 : 0;
  }
}

void World::phase_sim_tiers() {
  if (vehicles_.store().size() > 0)
    vehicles_.resolve_tiers(step_index_, scenario_.tiers, importance_, forced_full_);
  // Pedestrians are resolved a slice at a time: each step takes those whose
  // id phase (like the stride phase) matches the step, so each pedestrian is
  // re-resolved every pedestrian_resolve_every_steps steps and every step
  // does the same share of the work. The slice competes for what the caps
  // leave after the other slices' current tiers.
  const std::uint32_t every = scenario_.tiers.pedestrian_resolve_every_steps;
  const auto phase = static_cast<std::uint32_t>(step_index_ % every);
  std::uint8_t in_slice[64];  // by id phase (< 64): no division per pedestrian
  for (std::uint32_t ph = 0; ph < 64; ++ph) in_slice[ph] = ph % every == phase;
  std::uint32_t others[kSimTierCount] = {};
  const std::uint32_t m = build_tier_slice(in_slice, others);
  const double out_of_range = scenario_.despawn.out_of_range_m;
  if (out_of_range > 0.0 && !tier_observers_.empty()) {
    for (std::uint32_t k = 0; k < m; ++k) {
      const std::uint32_t i = slice_[k];
      if (pedestrians_.origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Background) &&
          slice_distance_[k] > out_of_range) {
        request_despawn(pedestrians_.id[i], DespawnReason::OutOfRange);
      }
    }
  }
  fill_force(slice_ids_);
  // ForceFull entities of other slices hold Full outside full_cap but inside
  // the hard cap.
  std::uint32_t others_forced = 0;
  for (const EntityId f : forced_full_) {
    const std::uint32_t slot = f.index < pedestrians_.dense_of.size()
                                   ? pedestrians_.dense_of[f.index]
                                   : PedestrianStore::kNoSlot;
    if (slot != PedestrianStore::kNoSlot && pedestrians_.id[slot] == f &&
        pedestrians_.sim_tier[slot] == SimTier::Full && id_phase(f) % every != phase) {
      ++others_forced;
    }
  }
  const TierSpec spec = slice_caps(scenario_.tiers, others, others_forced);
  const TierCounts sc = pedestrian_tier_resolver_.resolve(spec, slice_ids_, slice_distance_,
                                                          slice_sim_tier_, force_scratch_);
  write_slice_tiers(m);
  pedestrian_tier_counts_ = sc;
  for (std::size_t t = 0; t < kSimTierCount; ++t)
    pedestrian_tier_counts_.per_tier[t] = sc.per_tier[t] + others[t];
  pedestrian_tier_counts_.forced = sc.forced + others_forced;
}

// The slice in row order, with every member's effective distance (a pure
// function of it) and the tiers of the rest added into `others`. With
// several threads it is built in parts (phase_executor.hpp): count each
// part's members, then fill each part at its prefix offset. Returns the
// slice size.
std::uint32_t World::build_tier_slice(const std::uint8_t (&in_slice)[64],
                                      std::uint32_t (&others)[kSimTierCount]) {
  const std::uint32_t n = pedestrians_.size();
  const std::uint32_t parts = parts_for_rows(n);
  // Membership follows the ids' phases, which branch prediction cannot
  // guess: each chunk of rows lists its members first, without a branch.
  constexpr std::uint32_t kChunkRows = 512;
  const auto members_of = [&](std::uint32_t first, std::uint32_t last, std::uint32_t* rows,
                              std::uint32_t(&other)[kSimTierCount]) {
    std::uint32_t count = 0;
    for (std::uint32_t i = first; i < last; ++i) {
      rows[count] = i;
      // The id phase without the admission-mask bit: a masked pedestrian's
      // tier is resolved as before.
      const std::uint32_t member = in_slice[pedestrians_.phase[i] & PedestrianStore::kIdPhaseMask];
      const std::size_t t = tier_index(pedestrians_.sim_tier[i]);
      count += member;
      other[0] += (member ^ 1u) & (t == 0);
      other[1] += (member ^ 1u) & (t == 1);
      other[2] += (member ^ 1u) & (t == 2);
    }
    return count;
  };
  static_assert(kSimTierCount == 3);
  std::uint32_t rows[kChunkRows];
  if (executor().threads() == 1 || parts <= 1) {
    // One thread: one pass, appending in row order (the counting pass below
    // only pays when the parts can be filled at once; alone it cost ~8 % of
    // a 1 M step). The same slice, so the same digest.
    slice_.clear();
    slice_ids_.clear();
    slice_sim_tier_.clear();
    slice_distance_.clear();
    for (std::uint32_t first = 0; first < n; first += kChunkRows) {
      const std::uint32_t count = members_of(first, std::min(n, first + kChunkRows), rows, others);
      for (std::uint32_t k = 0; k < count; ++k) {
        const std::uint32_t i = rows[k];
        slice_.push_back(i);
        slice_ids_.push_back(pedestrians_.id[i]);
        slice_sim_tier_.push_back(pedestrians_.sim_tier[i]);
        slice_distance_.push_back(pedestrian_effective_distance(i));
      }
    }
    return static_cast<std::uint32_t>(slice_.size());
  }
  if (tier_parts_.size() < parts) tier_parts_.resize(parts);
  run_parts(executor(), parts, [&](std::uint32_t p) {
    TierPart& t = tier_parts_[p];
    t = TierPart{};
    std::uint32_t part_rows[kChunkRows];
    const std::uint32_t end = std::min(n, (p + 1) * kRowsPerPart);
    for (std::uint32_t first = p * kRowsPerPart; first < end; first += kChunkRows)
      t.members += members_of(first, std::min(end, first + kChunkRows), part_rows, t.others);
  });
  std::uint32_t m = 0;
  for (std::uint32_t p = 0; p < parts; ++p) {
    TierPart& t = tier_parts_[p];
    t.first = m;
    m += t.members;
    for (std::size_t tier = 0; tier < kSimTierCount; ++tier) others[tier] += t.others[tier];
  }
  slice_.resize(m);
  slice_ids_.resize(m);
  slice_sim_tier_.resize(m);
  slice_distance_.resize(m);
  run_parts(executor(), parts, [&](std::uint32_t p) {
    std::uint32_t k = tier_parts_[p].first;
    std::uint32_t part_rows[kChunkRows];
    std::uint32_t ignored[kSimTierCount] = {};
    const std::uint32_t end = std::min(n, (p + 1) * kRowsPerPart);
    for (std::uint32_t first = p * kRowsPerPart; first < end; first += kChunkRows) {
      const std::uint32_t count =
          members_of(first, std::min(end, first + kChunkRows), part_rows, ignored);
      for (std::uint32_t c = 0; c < count; ++c, ++k) {
        const std::uint32_t i = part_rows[c];
        slice_[k] = i;
        slice_ids_[k] = pedestrians_.id[i];
        slice_sim_tier_[k] = pedestrians_.sim_tier[i];
        slice_distance_[k] = pedestrian_effective_distance(i);
      }
    }
  });
  return m;
}

// The resolved tiers into the rows (each slice member is one row), in parts;
// the digest sum's change added up in part order.
void World::write_slice_tiers(std::uint32_t m) {
  const std::uint32_t parts = parts_for_rows(m);
  if (tier_parts_.size() < parts)
    tier_parts_.resize(parts);  // the one-thread slice did not size it
  run_parts(executor(), parts, [&](std::uint32_t p) {
    std::uint64_t delta = 0;
    const std::uint32_t end = std::min(m, (p + 1) * kRowsPerPart);
    for (std::uint32_t k = p * kRowsPerPart; k < end; ++k) {
      const std::uint32_t i = slice_[k];
      if (pedestrians_.sim_tier[i] == slice_sim_tier_[k]) continue;
      delta -= pedestrian_row_hash(i);
      pedestrians_.sim_tier[i] = slice_sim_tier_[k];
      delta += pedestrian_row_hash(i);
    }
    tier_parts_[p].sum_delta = delta;
  });
  for (std::uint32_t p = 0; p < parts; ++p) pedestrian_digest_sum_ += tier_parts_[p].sum_delta;
}

double World::pedestrian_effective_distance(std::uint32_t i) const {
  // effective_distance_at's arithmetic, spelt out so that the slice loops
  // inline all of it (as a call it passed the position through memory, a
  // store-forwarding stall per member): the same operations, the same bits.
  const LaneIndex lane = pedestrians_.lane[i];
  const Vec2 p = lanes_.position(lane, pedestrians_.s_m[i]);
  const double w =
      importance_.weight(static_cast<PriorityClass>(pedestrians_.priority[i]), false, p.x_m, p.y_m);
  return importance_.effective_distance_m(p.x_m, p.y_m, lanes_.lane(lane).elevation_m, w);
}

double World::effective_distance_at(Vec2 p, LaneIndex lane, PriorityClass cls, bool vehicle) const {
  const double w = importance_.weight(cls, vehicle, p.x_m, p.y_m);
  return importance_.effective_distance_m(p.x_m, p.y_m, lanes_.lane(lane).elevation_m, w);
}

void World::prepare_importance() {
  importance_.prepare(scenario_.tiers.importance, tier_observers_, tier_views_);
}

SimTier World::initial_sim_tier(LaneIndex lane, double s_m, PriorityClass cls) const {
  // Effective distance alone (no budget): the next tier resolution applies caps.
  const Vec2 p = lanes_.position(lane, s_m);
  const double d = effective_distance_at(p, lane, cls, false);
  const TierSpec& t = scenario_.tiers;
  return d <= t.full_enter_m        ? SimTier::Full
         : d <= t.simulated_enter_m ? SimTier::Simulated
                                    : SimTier::Coarse;
}

}  // namespace bustle::core
