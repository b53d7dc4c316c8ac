// Phase 7 for vehicles: the slice of vehicles due this step is re-resolved
// against the tier caps the other vehicles leave (TierResolver).
#include <algorithm>
#include <array>
#include <cassert>
#include <span>

#include "bustle/core/vehicles.hpp"

namespace bustle::core {

// Inlined into resolve_tiers (its only caller): no call per slice member.
[[gnu::always_inline]] inline Vec2 VehicleSystem::position_of(std::uint32_t i) const {
  const LaneGeo& g = lane_geo_[store_.lane[i]];
  if (!g.straight) return lanes_->position(store_.lane[i], store_.s_m[i]);
  const double s = std::clamp(store_.s_m[i], 0.0, g.length_m);
  const double t = g.seg > 0.0 ? (s - g.s0) / g.seg : 0.0;
  return {g.ax + g.dx * t, g.ay + g.dy * t};
}

// The effective distance of the first m slice rows into distances_, in
// batches: positions first (a branch per lane shape), then the weights, then
// ImportanceField::effective_distances_m, which runs several rows at a time
// with the same operations as effective_distance_m (the same bits).
void VehicleSystem::slice_distances(std::uint32_t m, const ImportanceField& importance) {
  constexpr std::uint32_t kBatch = 128;
  double x[kBatch], y[kBatch], z[kBatch], w[kBatch];
  for (std::uint32_t first = 0; first < m; first += kBatch) {
    const std::uint32_t b = std::min(kBatch, m - first);
    const std::uint32_t* const rows = slice_.data() + first;
    for (std::uint32_t j = 0; j < b; ++j) {
      // Position only (no heading: atan2 is not needed for a distance).
      const Vec2 p = position_of(rows[j]);
      x[j] = p.x_m;
      y[j] = p.y_m;
      z[j] = lane_geo_[store_.lane[rows[j]]].elevation_m;
    }
    // Vehicles carry no priority class: they rank as background, weighted
    // by vehicle_weight and areas of interest.
    for (std::uint32_t j = 0; j < b; ++j)
      w[j] = importance.weight(PriorityClass::Background, true, x[j], y[j]);
    importance.effective_distances_m(x, y, z, w, b, distances_.data() + first);
  }
}

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
  // The slice, compacted without a branch per row (membership by id phase is
  // random, so a branch mispredicted for about one row in `every`): each row
  // is written at the cursor, which moves on for members only. The buffers
  // keep at least n rows, so no step after warm-up allocates or clears them.
  if (slice_.size() < n) {
    slice_.resize(n);
    slice_ids_.resize(n);
    slice_sim_tier_.resize(n);
    distances_.resize(n);
  }
  std::uint8_t member[64];  // by id phase (< 64): no division per vehicle
  for (std::uint32_t p = 0; p < 64; ++p) member[p] = p % every == ph ? 1 : 0;
  std::uint32_t m = 0;
  {
    std::uint32_t* const slice = slice_.data();
    EntityId* const ids = slice_ids_.data();
    SimTier* const tiers = slice_sim_tier_.data();
    const std::uint8_t* const phase = phase_.data();
    const EntityId* const id = store_.id.data();
    const SimTier* const tier = store_.sim_tier.data();
    for (std::uint32_t i = 0; i < n; ++i) {
      slice[m] = i;
      ids[m] = id[i];
      tiers[m] = tier[i];
      m += member[phase[i]];
    }
  }
  std::array<std::uint32_t, kSimTierCount> in_slice{};
  for (std::uint32_t k = 0; k < m; ++k) ++in_slice[tier_index(slice_sim_tier_[k])];
  slice_distances(m, importance);
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
      tier_resolver_.resolve(s, std::span(slice_ids_).first(m), std::span(distances_).first(m),
                             std::span(slice_sim_tier_).first(m), slice_force_);
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

}  // namespace bustle::core
