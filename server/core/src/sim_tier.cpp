#include "bustle/core/sim_tier.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace bustle::core {

const char* to_string(SimTier t) {
  switch (t) {
    case SimTier::Full: return "full";
    case SimTier::Simulated: return "simulated";
    case SimTier::Coarse: return "coarse";
  }
  return "?";
}

double nearest_observer_m(const std::vector<Vec2>& observers, double x_m, double y_m) {
  // Squared distances, one sqrt: std::hypot guards against overflow that
  // city-scale metres never reach, at several times the cost.
  double best2 = std::numeric_limits<double>::infinity();
  for (const Vec2& o : observers) {
    const double dx = o.x_m - x_m;
    const double dy = o.y_m - y_m;
    best2 = std::min(best2, dx * dx + dy * dy);
  }
  return std::sqrt(best2);
}

TierCounts TierResolver::resolve(const TierSpec& spec, std::span<const EntityId> ids,
                                 std::span<const double> distance_m, std::span<std::uint8_t> tier,
                                 std::span<const std::uint8_t> force_full) {
  const std::size_t n = ids.size();
  TierCounts counts;
  // 0. ForceFull: lowest ids first, up to the hard cap; applied at once.
  forced_now_.assign(n, 0);
  forced_idx_.clear();
  if (!force_full.empty()) {
    for (std::size_t i = 0; i < n; ++i) {
      if (force_full[i]) forced_idx_.push_back(static_cast<std::uint32_t>(i));
    }
    std::sort(forced_idx_.begin(), forced_idx_.end(), [&](std::uint32_t a, std::uint32_t b) { return ids[a] < ids[b]; });
    const std::size_t keep = std::min<std::size_t>(forced_idx_.size(), spec.hard_full_cap);
    for (std::size_t k = 0; k < keep; ++k) {
      forced_now_[forced_idx_[k]] = 1;
      if (tier[forced_idx_[k]] != static_cast<std::uint8_t>(SimTier::Full)) ++counts.promoted;
      tier[forced_idx_[k]] = static_cast<std::uint8_t>(SimTier::Full);
    }
    counts.forced = static_cast<std::uint32_t>(keep);
    counts.forced_overflow = static_cast<std::uint32_t>(forced_idx_.size() - keep);
  }
  const std::uint32_t full_cap =
      std::min(spec.full_cap, spec.hard_full_cap > counts.forced ? spec.hard_full_cap - counts.forced : 0u);
  target_.resize(n);
  want_full_.clear();
  want_sim_.clear();
  changes_.clear();
  constexpr auto kFull = static_cast<std::uint8_t>(SimTier::Full);
  constexpr auto kSim = static_cast<std::uint8_t>(SimTier::Simulated);
  constexpr auto kCoarse = static_cast<std::uint8_t>(SimTier::Coarse);

  // 1. Distance request with hysteresis: staying needs only the exit radius.
  for (std::size_t i = 0; i < n; ++i) {
    if (forced_now_[i]) {
      target_[i] = kFull;
      continue;
    }
    const double d = distance_m[i];
    const std::uint8_t cur = tier[i];
    const double full_r = cur == kFull ? spec.full_exit_m : spec.full_enter_m;
    const double sim_r = cur <= kSim ? spec.simulated_exit_m : spec.simulated_enter_m;
    const std::uint8_t want = d <= full_r ? kFull : d <= sim_r ? kSim : kCoarse;
    target_[i] = want;
    if (want == kFull) want_full_.push_back({d, ids[i], static_cast<std::uint32_t>(i), cur, want});
  }
  // 2. Capacity: keep incumbents first, then nearest, then lowest id.
  auto by_preference = [](const Candidate& a, const Candidate& b) {
    const bool ai = a.current == a.target;
    const bool bi = b.current == b.target;
    if (ai != bi) return ai;
    if (a.distance_m != b.distance_m) return a.distance_m < b.distance_m;
    return a.id < b.id;
  };
  // nth_element, not sort: only the set of the first `cap` matters, and with
  // a strict total order (ties end on EntityId) that set is unique. O(n).
  if (want_full_.size() > full_cap) {
    std::nth_element(want_full_.begin(), want_full_.begin() + full_cap, want_full_.end(), by_preference);
    for (std::size_t k = full_cap; k < want_full_.size(); ++k) target_[want_full_[k].index] = kSim;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (target_[i] == kSim) want_sim_.push_back({distance_m[i], ids[i], static_cast<std::uint32_t>(i), tier[i], kSim});
  }
  if (want_sim_.size() > spec.simulated_cap) {
    std::nth_element(want_sim_.begin(), want_sim_.begin() + spec.simulated_cap, want_sim_.end(), by_preference);
    for (std::size_t k = spec.simulated_cap; k < want_sim_.size(); ++k) target_[want_sim_[k].index] = kCoarse;
  }
  // 3. Budget: demotions (farthest first), then promotions (nearest first).
  for (std::size_t i = 0; i < n; ++i) {
    if (target_[i] != tier[i]) changes_.push_back({distance_m[i], ids[i], static_cast<std::uint32_t>(i), tier[i], target_[i]});
  }
  if (!changes_.empty()) {
    const std::size_t budget = std::min<std::size_t>(spec.transitions_per_step, changes_.size());
    // Only the first `budget` changes are applied: partial_sort, O(n log budget).
    std::partial_sort(changes_.begin(), changes_.begin() + static_cast<std::ptrdiff_t>(budget), changes_.end(),
                      [](const Candidate& a, const Candidate& b) {
      const bool ad = a.target > a.current;  // demotion: towards Coarse
      const bool bd = b.target > b.current;
      if (ad != bd) return ad;
      if (a.distance_m != b.distance_m) return ad ? a.distance_m > b.distance_m : a.distance_m < b.distance_m;
      return a.id < b.id;
    });
    for (std::size_t k = 0; k < budget; ++k) {
      const Candidate& c = changes_[k];
      tier[c.index] = c.target;
      if (c.target > c.current) {
        ++counts.demoted;
      } else {
        ++counts.promoted;
      }
    }
    counts.deferred = static_cast<std::uint32_t>(changes_.size() - budget);
  }
  for (std::size_t i = 0; i < n; ++i) ++counts.per_tier[tier[i]];
  return counts;
}

}  // namespace bustle::core
