// Phase 7 of World::step(): simulation tiers (sim_tier.hpp) for vehicles and
// pedestrians, a slice (by id phase) per step, within the tier caps.
//
// Sections: the phase; importance-weighted distance (also used for a new
// pedestrian's first tier, initial_sim_tier).
#include <algorithm>
#include <cassert>

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

std::uint64_t World::phase_sim_tiers(const TierSlice& slice) {
  if (vehicles_.store().size() > 0)
    vehicles_.resolve_tiers(step_index_, scenario_.tiers, importance_, forced_full_);
  // Pedestrians are resolved a slice at a time: each step takes those whose
  // id phase (like the stride phase) matches the step, so each pedestrian is
  // re-resolved every pedestrian_resolve_every_steps steps and every step
  // does the same share of the work. The slice competes for what the caps
  // leave after the other slices' current tiers.
  const std::uint32_t every = scenario_.tiers.pedestrian_resolve_every_steps;
  const auto phase = static_cast<std::uint32_t>(step_index_ % every);
  std::uint32_t others[kSimTierCount] = {};
  // Phase 6 listed the slice over the same rows: nothing in between adds or
  // removes one.
  const auto parts = static_cast<std::uint32_t>(slice.parts.size());
  assert(parts == parts_for_rows(pedestrians_.size()));
  const std::uint32_t m = lay_out_tier_slice(slice, others);
  // Phase 6 put every row in the slice or its tier's others, once (read
  // back here from its per-part counts).
  assert(m + others[0] + others[1] + others[2] == pedestrians_.size());
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
  // Stage 1 of the resolution runs in the slice's parts as each is built,
  // unless ForceFull flags exist: stage 0 needs the whole slice first.
  TierResolver& resolver = pedestrian_tier_resolver_;
  const bool classify_in_build = forced_full_.empty();
  resolver.start(spec, m, parts);
  build_tier_slice(slice, classify_in_build);
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
  if (!classify_in_build) {
    fill_force(slice_ids_);
    resolver.force(slice_ids_, slice_sim_tier_, force_scratch_);
    run_parts(executor(), parts, [&](std::uint32_t p) {
      const TierPart& t = slice.parts[p];
      resolver.classify(p, t.first, t.first + t.members, slice_distance_, slice_sim_tier_);
    });
  }
  const TierCounts sc = resolver.finish(slice_ids_, slice_distance_, slice_sim_tier_, executor());
  const std::uint64_t digest_terms = write_slice_tiers(slice);
  pedestrian_tier_counts_ = sc;
  for (std::size_t t = 0; t < kSimTierCount; ++t)
    pedestrian_tier_counts_.per_tier[t] = sc.per_tier[t] + others[t];
  pedestrian_tier_counts_.forced = sc.forced + others_forced;
  // Counts conserved: every pedestrian is counted in exactly one tier.
  [[maybe_unused]] std::uint32_t tiered = 0;
  for (std::size_t t = 0; t < kSimTierCount; ++t) tiered += pedestrian_tier_counts_.per_tier[t];
  assert(tiered == pedestrians_.size());
  return digest_terms;
}

void World::tier_slice_phases(std::uint8_t (&in_slice)[64]) const {
  const std::uint32_t every = scenario_.tiers.pedestrian_resolve_every_steps;
  const auto phase = static_cast<std::uint32_t>(step_index_ % every);
  for (std::uint32_t ph = 0; ph < 64; ++ph) in_slice[ph] = ph % every == phase;
}

// Where each part's slice members start (phase 6 counted each part's
// members and other tiers into `slice`, the same rows, tiers and phases as
// now), the other tiers added into `others`, and the slice's scratch sized.
// Returns the slice size.
std::uint32_t World::lay_out_tier_slice(const TierSlice& slice,
                                        std::uint32_t (&others)[kSimTierCount]) {
  std::uint32_t m = 0;
  for (TierPart& t : slice.parts) {
    t.first = m;
    m += t.members;
    for (std::size_t tier = 0; tier < kSimTierCount; ++tier) others[tier] += t.others[tier];
  }
  slice_.resize(m);
  slice_ids_.resize(m);
  slice_sim_tier_.resize(m);
  slice_distance_.resize(m);
  return m;
}

// The slice in row order (the rows phase 6 listed per part), with every
// member's effective distance (a pure function of it), filled part by part
// at the parts' offsets, in parallel when the executor has threads; with
// `classify`, each part then runs stage 1 of the tier resolution over its
// members (TierResolver::classify).
void World::build_tier_slice(const TierSlice& slice, bool classify) {
  run_parts(executor(), static_cast<std::uint32_t>(slice.parts.size()), [&](std::uint32_t p) {
    const TierPart& part = slice.parts[p];
    const std::uint32_t* rows = slice.rows + p * kRowsPerPart;  // phase 6 listed them
    const std::uint32_t k = part.first;
    for (std::uint32_t c = 0; c < part.members; ++c) {
      const std::uint32_t i = rows[c];
      slice_[k + c] = i;
      slice_ids_[k + c] = pedestrians_.id[i];
      slice_sim_tier_[k + c] = pedestrians_.sim_tier[i];
    }
    pedestrian_effective_distances(rows, part.members, slice_distance_.data() + k);
    if (classify) {
      pedestrian_tier_resolver_.classify(p, part.first, part.first + part.members, slice_distance_,
                                         slice_sim_tier_);
    }
  });
}

// The resolved tiers into the rows (each slice member is one row), part by
// part over the same parts as phase 6 and build_tier_slice (a part's members
// are rows of its own, so a thread that keeps its parts keeps their rows in
// its cache); returns the digest sum's change, added up in part order. A row whose
// tier changes keeps the steps since it last moved in its catch-up
// (sim_tier.hpp), so the change neither adds progress nor takes it. The capacity
// targets go into their cold column as they are (derived, never digested:
// sim_tier.hpp).
std::uint64_t World::write_slice_tiers(const TierSlice& slice) {
  const std::span<const SimTier> capacity = pedestrian_tier_resolver_.capacity_targets();
  assert(capacity.size() == slice_.size());
  run_parts(executor(), static_cast<std::uint32_t>(slice.parts.size()), [&](std::uint32_t p) {
    TierPart& part = slice.parts[p];
    const std::uint32_t end = part.first + part.members;
    std::uint64_t delta = 0;
    for (std::uint32_t k = part.first; k < end; ++k) {
      const std::uint32_t i = slice_[k];
      pedestrians_.capacity_tier[i] = capacity[k];
      const SimTier from = pedestrians_.sim_tier[i], to = slice_sim_tier_[k];
      if (from == to) continue;
      delta -= pedestrian_row_hash(i);
      // A held row (masked, a corpse) stands and keeps none (set_admission_mask_bit).
      const std::uint8_t phase = pedestrians_.phase[i];
      const int catch_up = phase & PedestrianStore::kAdmissionMaskedBit
                               ? 0
                               : catch_up_after_tier_change(step_index_, phase, from, to,
                                                            pedestrians_.catch_up_steps[i]);
      assert(catch_up >= -kMaxCatchUpSteps && catch_up <= kMaxCatchUpSteps);
      pedestrians_.catch_up_steps[i] = static_cast<std::int8_t>(catch_up);
      pedestrians_.sim_tier[i] = to;
      pedestrian_tiers_written_.mark(i);  // the part owns its rows' chunks (phase 6)
      delta += pedestrian_row_hash(i);
    }
    part.sum_delta = delta;
  });
  std::uint64_t digest_terms = 0;
  for (const TierPart& part : slice.parts) digest_terms += part.sum_delta;
  return digest_terms;
}

void World::pedestrian_effective_distances(const std::uint32_t* rows, std::uint32_t count,
                                           double* out_m) const {
  // effective_distance_at of each row's position, in passes over the rows:
  // the lane lookups first (branches per lane), then the arithmetic, which
  // has none and runs several rows at a time. The same operations, the same
  // bits (the tier tests compare them with effective_distance_at).
  constexpr std::uint32_t kBatch = 128;
  LaneGraph::SegmentAt seg[kBatch];
  double x[kBatch], y[kBatch], z[kBatch], w[kBatch];
  for (std::uint32_t first = 0; first < count; first += kBatch) {
    const std::uint32_t n = std::min(kBatch, count - first);
    const std::uint32_t* r = rows + first;
    for (std::uint32_t j = 0; j < n; ++j) {
      const LaneIndex lane = pedestrians_.lane[r[j]];
      seg[j] = lanes_.segment_at(lane, pedestrians_.s_m[r[j]]);
      z[j] = lanes_.lane(lane).elevation_m;
    }
    for (std::uint32_t j = 0; j < n; ++j) {
      const Vec2 p = LaneGraph::interpolate(seg[j]);  // no branch
      x[j] = p.x_m;
      y[j] = p.y_m;
    }
    for (std::uint32_t j = 0; j < n; ++j) {
      w[j] = importance_.weight(static_cast<PriorityClass>(pedestrians_.priority[r[j]]), false,
                                x[j], y[j]);
    }
    importance_.effective_distances_m(x, y, z, w, n, out_m + first);
  }
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
