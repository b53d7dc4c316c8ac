#include "bustle/core/sim_tier.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>

namespace bustle::core {

const char* to_string(SimTier t) {
  switch (t) {
    case SimTier::Full:
      return "full";
    case SimTier::Simulated:
      return "simulated";
    case SimTier::Coarse:
      return "coarse";
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

namespace {

// A distance's bits without the sign bit: -0.0 as +0.0 (no other distance
// has it). A non-negative double's bit pattern is below 2^63 and orders
// like its value.
std::uint64_t distance_bits(double distance_m) {
  assert(distance_m >= 0.0);  // effective distances are never negative or NaN
  return std::bit_cast<std::uint64_t>(distance_m) & ~(1ull << 63);
}

// Preference key of a capacity candidate: incumbents (already in the tier
// they want) first, then nearer, so (key, EntityId) orders exactly like the
// comparator "incumbent, then distance, then id" of stage 2 below.
std::uint64_t preference_key(bool incumbent, double distance_m) {
  return (incumbent ? 0 : 1ull << 63) | distance_bits(distance_m);
}

// Key of a change in stage 3's order: demotions (towards Coarse) before
// promotions, demotions farthest first, promotions nearest first, so
// (key, EntityId) orders exactly like "demotion, then distance that way,
// then id".
std::uint64_t budget_key(SimTier current, SimTier target, double distance_m) {
  constexpr std::uint64_t kPromotion = 1ull << 63;
  const std::uint64_t bits = distance_bits(distance_m);
  return target > current ? (kPromotion - 1) - bits : kPromotion | bits;
}

}  // namespace

TierSpec slice_caps(const TierSpec& spec, const std::uint32_t (&others)[kSimTierCount],
                    std::uint32_t others_forced) {
  constexpr std::size_t kFull = tier_index(SimTier::Full);
  constexpr std::size_t kSim = tier_index(SimTier::Simulated);
  auto left = [](std::uint32_t cap, std::uint32_t used) { return cap > used ? cap - used : 0u; };
  TierSpec s = spec;
  s.full_cap = left(s.full_cap, others[kFull] - std::min(others[kFull], others_forced));
  s.hard_full_cap = left(s.hard_full_cap, others[kFull]);
  s.simulated_cap = left(s.simulated_cap, others[kSim]);
  return s;
}

void TierResolver::CandidateList::reserve(std::size_t n) {
  if (n <= capacity) return;
  auto k = std::make_unique_for_overwrite<std::uint64_t[]>(n);
  auto i = std::make_unique_for_overwrite<std::uint32_t[]>(n);
  std::copy(key.get(), key.get() + count, k.get());
  std::copy(index.get(), index.get() + count, i.get());
  key = std::move(k);
  index = std::move(i);
  capacity = n;
}

void TierResolver::reserve(std::size_t entities) {
  full_incumbents_.reserve(entities);
  full_newcomers_.reserve(entities);
  sim_incumbents_.reserve(entities);
  sim_newcomers_.reserve(entities);
  live_.reserve(entities);
  changes_.reserve(entities);
  target_.reserve(entities);
  forced_idx_.reserve(entities);
  forced_now_.reserve(entities);
}

void TierResolver::select_first(const CandidateList& list, std::size_t keep,
                                std::span<const EntityId> ids) {
  // Radix selection of the keep-th smallest (key, id) in `list`: digits of
  // 12 bits from the highest bit where the keys differ, each pass keeping
  // only the bucket that holds the wanted rank. O(candidates), the same set
  // nth_element would give (the order is strict, so the first `keep` form
  // one set), without moving the candidates. The first pass reads the
  // candidates themselves, later ones the survivors listed in live_ (never
  // shrunk, so it is not refilled per call).
  const std::span<const std::uint64_t> cand_key = list.keys();
  const std::size_t n = cand_key.size();
  assert(keep > 0 && keep < n);
  std::size_t rank = keep - 1;  // 0-based rank of the last one kept
  std::uint64_t all_and = ~0ull, all_or = 0;
  for (const std::uint64_t k : cand_key) {
    all_and &= k;
    all_or |= k;
  }
  if (live_.size() < n) live_.resize(n);
  bool every = true;  // the live set is every candidate (live_ not written yet)
  std::size_t live = n;
  std::uint64_t differ = all_and ^ all_or;  // bits not shared by every live key
  while (live > 1 && differ != 0) {
    const int top = 63 - std::countl_zero(differ);
    const int shift = std::max(0, top - 11);
    const auto digit = [&](std::uint32_t c) {
      return static_cast<std::uint32_t>((cand_key[c] >> shift) & 0xFFFu);
    };
    std::fill(std::begin(histogram_), std::end(histogram_), 0u);
    if (every) {
      for (const std::uint64_t k : cand_key) ++histogram_[(k >> shift) & 0xFFFu];
    } else {
      for (std::size_t j = 0; j < live; ++j) ++histogram_[digit(live_[j])];
    }
    std::uint32_t bucket = 0;
    while (rank >= histogram_[bucket]) rank -= histogram_[bucket++];
    std::size_t out = 0;
    all_and = ~0ull;
    all_or = 0;
    for (std::size_t j = 0; j < live; ++j) {
      const auto c = every ? static_cast<std::uint32_t>(j) : live_[j];
      if (digit(c) != bucket) continue;
      live_[out++] = c;
      all_and &= cand_key[c];
      all_or |= cand_key[c];
    }
    every = false;
    live = out;
    differ = all_and ^ all_or;
  }
  if (every) {
    for (std::size_t c = 0; c < n; ++c) live_[c] = static_cast<std::uint32_t>(c);
  }
  // Every live candidate now has the same key: the rank picks among their ids.
  const std::span<const std::uint32_t> cand_index = list.indices();
  const auto live_end = live_.begin() + static_cast<std::ptrdiff_t>(live);
  std::nth_element(
      live_.begin(), live_.begin() + static_cast<std::ptrdiff_t>(rank), live_end,
      [&](std::uint32_t a, std::uint32_t b) { return ids[cand_index[a]] < ids[cand_index[b]]; });
  threshold_key_ = cand_key[live_[rank]];
  threshold_id_ = ids[cand_index[live_[rank]]];
}

template <class Down>
void TierResolver::cap_candidates(std::size_t cap, const CandidateList& incumbents,
                                  const CandidateList& newcomers, std::span<const EntityId> ids,
                                  Down&& down) {
  // Keep incumbents first, then nearest, then lowest id. Only the set of the
  // first `cap` matters, and with a strict total order (ties end on
  // EntityId) that set is unique. Every incumbent precedes every newcomer,
  // so the cut falls among the newcomers when the incumbents fit and among
  // the incumbents otherwise: select_first finds the last one kept there,
  // and everything after it moves down one tier.
  if (incumbents.size() + newcomers.size() <= cap) return;
  const auto cut = [&](const CandidateList& list, std::size_t keep) {
    if (keep == 0) {
      for (const std::uint32_t i : list.indices()) down(i);
      return;
    }
    if (list.size() <= keep) return;
    select_first(list, keep, ids);
    for (std::size_t c = 0; c < list.size(); ++c) {
      if (beyond_kept(list.key[c], ids, list.index[c])) down(list.index[c]);
    }
  };
  if (incumbents.size() <= cap) {
    cut(newcomers, cap - incumbents.size());
    return;
  }
  cut(newcomers, 0);
  cut(incumbents, cap);
}

TierCounts TierResolver::resolve(const TierSpec& spec, std::span<const EntityId> ids,
                                 std::span<const double> distance_m, std::span<SimTier> tier,
                                 std::span<const std::uint8_t> force_full) {
  const std::size_t n = ids.size();
  start(spec, n, 1);
  if (!force_full.empty()) force(ids, tier, force_full);
  classify(0, 0, n, distance_m, tier);
  InlineExecutor inline_executor;
  return finish(ids, distance_m, tier, inline_executor);
}

void TierResolver::start(const TierSpec& spec, std::size_t n, std::uint32_t parts) {
  assert(parts > 0 || n == 0);
  spec_ = &spec;
  n_ = n;
  parts_used_ = std::max<std::uint32_t>(parts, 1);
  any_force_ = false;
  counts_ = TierCounts{};
  target_.resize(n);
  if (part_out_.size() < parts_used_) part_out_.resize(parts_used_);
  for (std::uint32_t p = 0; p < parts_used_; ++p) {
    PartOutput& out = part_out_[p];
    for (CandidateList& l : out.lists) l.clear();
    out.now_full = out.now_sim = 0;
    out.begin = out.end = 0;
  }
}

void TierResolver::force(std::span<const EntityId> ids, std::span<SimTier> tier,
                         std::span<const std::uint8_t> force_full) {
  // 0. ForceFull: lowest ids first, up to the hard cap; applied at once.
  assert(spec_ != nullptr && ids.size() == n_ && force_full.size() == n_);
  any_force_ = true;
  apply_force_full(*spec_, ids, tier, force_full, counts_);
}

void TierResolver::classify(std::uint32_t part, std::size_t begin, std::size_t end,
                            std::span<const double> distance_m, std::span<const SimTier> tier) {
  // 1. Distance request with hysteresis: staying needs only the exit radius.
  // The same pass lists the candidates of both capacities, incumbents apart
  // (the Simulated ones that Full's cap moves down join them in stage 2: a
  // candidate list's order does not matter, its (key, id) order is total)
  // and counts the tiers as they are, which stage 3 then adjusts per change.
  assert(part < parts_used_ && begin <= end && end <= n_);
  const TierSpec& spec = *spec_;
  constexpr auto kFull = SimTier::Full;
  constexpr auto kSim = SimTier::Simulated;
  constexpr auto kCoarse = SimTier::Coarse;
  PartOutput& out = part_out_[part];
  out.begin = begin;
  out.end = end;
  // At most every member of the range is a candidate of one list: reserved
  // here, so the writes below stay inside (after warm-up, none allocates).
  std::uint64_t* key[4];
  std::uint32_t* index[4];
  std::size_t size[4];
  for (std::size_t l = 0; l < 4; ++l) {
    out.lists[l].reserve(out.lists[l].size() + (end - begin));
    key[l] = out.lists[l].key.get();
    index[l] = out.lists[l].index.get();
    size[l] = out.lists[l].size();
  }
  std::uint32_t now_full = 0, now_sim = 0;
  for (std::size_t i = begin; i < end; ++i) {
    // The candidate's list as arithmetic too (distance_tier has no branch):
    // both depend on distances, which branch prediction cannot guess. Every
    // entity writes a slot of some list; only a candidate counts it.
    const SimTier cur = tier[i];
    now_full += cur == kFull;
    now_sim += cur == kSim;
    const double d = distance_m[i];
    const auto want = static_cast<std::uint32_t>(distance_tier(spec, cur, d));
    const bool forced = any_force_ && forced_now_[i] != 0;
    target_[i] = forced ? kFull : static_cast<SimTier>(want);
    const bool incumbent = static_cast<std::uint32_t>(cur) == want;
    const bool candidate = !forced && want != static_cast<std::uint32_t>(kCoarse);
    const std::size_t list = candidate ? 2 * want + !incumbent : std::size_t{kFullIncumbents};
    key[list][size[list]] = preference_key(incumbent, d);
    index[list][size[list]] = static_cast<std::uint32_t>(i);
    size[list] += candidate;
  }
  for (std::size_t l = 0; l < 4; ++l) out.lists[l].count = size[l];
  out.now_full += now_full;
  out.now_sim += now_sim;
}

void TierResolver::join_parts(PhaseExecutor& executor) {
  // The parts' lists one after the other, in part order (stage 2 does not
  // depend on a list's order, but a fixed one keeps every run alike); each
  // part copies its own lists to their offsets.
  CandidateList* joined[4] = {&full_incumbents_, &full_newcomers_, &sim_incumbents_,
                              &sim_newcomers_};
  now_full_ = now_sim_ = 0;
  for (std::size_t l = 0; l < 4; ++l) {
    std::size_t total = 0;
    for (std::uint32_t p = 0; p < parts_used_; ++p) {
      part_out_[p].at[l] = total;
      total += part_out_[p].lists[l].size();
    }
    joined[l]->resize_for_overwrite(total);
  }
  for (std::uint32_t p = 0; p < parts_used_; ++p) {
    now_full_ += part_out_[p].now_full;
    now_sim_ += part_out_[p].now_sim;
  }
  run_parts(executor, parts_used_, [&](std::uint32_t p) {
    const PartOutput& out = part_out_[p];
    for (std::size_t l = 0; l < 4; ++l) out.lists[l].copy_to(*joined[l], out.at[l]);
  });
}

TierCounts TierResolver::finish(std::span<const EntityId> ids, std::span<const double> distance_m,
                                std::span<SimTier> tier, PhaseExecutor& executor) {
  assert(spec_ != nullptr && ids.size() == n_);
  const TierSpec& spec = *spec_;
  const std::size_t n = n_;
  TierCounts counts = counts_;
  join_parts(executor);
  const std::uint32_t full_cap = std::min(
      spec.full_cap, spec.hard_full_cap > counts.forced ? spec.hard_full_cap - counts.forced : 0u);
  constexpr auto kSim = SimTier::Simulated;
  constexpr auto kCoarse = SimTier::Coarse;
  // 2. Capacity: at most full_cap Full, then at most simulated_cap
  // Simulated; those Full's cap moves down compete for Simulated.
  cap_candidates(full_cap, full_incumbents_, full_newcomers_, ids, [&](std::uint32_t i) {
    target_[i] = kSim;
    const bool incumbent = tier[i] == kSim;
    (incumbent ? sim_incumbents_ : sim_newcomers_)
        .push(preference_key(incumbent, distance_m[i]), i);
  });
  cap_candidates(spec.simulated_cap, sim_incumbents_, sim_newcomers_, ids,
                 [&](std::uint32_t i) { target_[i] = kCoarse; });
  counts.per_tier[tier_index(SimTier::Full)] = now_full_;
  counts.per_tier[tier_index(kSim)] = now_sim_;
  counts.per_tier[tier_index(kCoarse)] = static_cast<std::uint32_t>(n) - now_full_ - now_sim_;
  list_changes(distance_m, tier, executor);
  apply_budget(spec, ids, tier, counts, executor);
  spec_ = nullptr;
  return counts;
}

void TierResolver::apply_force_full(const TierSpec& spec, std::span<const EntityId> ids,
                                    std::span<SimTier> tier,
                                    std::span<const std::uint8_t> force_full, TierCounts& counts) {
  const std::size_t n = ids.size();
  forced_now_.assign(n, 0);
  forced_idx_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (force_full[i]) forced_idx_.push_back(static_cast<std::uint32_t>(i));
  }
  std::sort(forced_idx_.begin(), forced_idx_.end(),
            [&](std::uint32_t a, std::uint32_t b) { return ids[a] < ids[b]; });
  const std::size_t keep = std::min<std::size_t>(forced_idx_.size(), spec.hard_full_cap);
  for (std::size_t k = 0; k < keep; ++k) {
    forced_now_[forced_idx_[k]] = 1;
    if (tier[forced_idx_[k]] != SimTier::Full) ++counts.promoted;
    tier[forced_idx_[k]] = SimTier::Full;
  }
  counts.forced = static_cast<std::uint32_t>(keep);
  counts.forced_overflow = static_cast<std::uint32_t>(forced_idx_.size() - keep);
}

void TierResolver::list_changes(std::span<const double> distance_m, std::span<const SimTier> tier,
                                PhaseExecutor& executor) {
  // Every entity whose capacity target differs from its tier, listed part
  // by part (each over the range it classified), with where each part's
  // list starts in the joined one (join_changes, part order).
  run_parts(executor, parts_used_, [&](std::uint32_t p) {
    PartOutput& out = part_out_[p];
    CandidateList& changes = out.changes;
    changes.clear();
    changes.reserve(out.end - out.begin);  // at most one each: never grows after warm-up
    for (std::size_t i = out.begin; i < out.end; ++i) {
      if (target_[i] != tier[i])
        changes.push(budget_key(tier[i], target_[i], distance_m[i]), static_cast<std::uint32_t>(i));
    }
  });
  changes_total_ = 0;
  for (std::uint32_t p = 0; p < parts_used_; ++p) {
    part_out_[p].changes_at = changes_total_;
    changes_total_ += part_out_[p].changes.size();
  }
}

void TierResolver::join_changes(PhaseExecutor& executor) {
  changes_.resize_for_overwrite(changes_total_);
  run_parts(executor, parts_used_, [&](std::uint32_t p) {
    part_out_[p].changes.copy_to(changes_, part_out_[p].changes_at);
  });
}

void TierResolver::apply_budget(const TierSpec& spec, std::span<const EntityId> ids,
                                std::span<SimTier> tier, TierCounts& counts,
                                PhaseExecutor& executor) {
  // 3. Budget: demotions (farthest first), then promotions (nearest first).
  // Only which changes are applied matters (applying one touches its own row
  // alone), and under this strict order (budget_key, then EntityId) the first
  // `budget` are one set: select_first finds the last of them, and when every
  // change fits there is nothing to choose (nor any need to join the
  // parts' lists). Each part applies its own changes and counts them; the
  // counts are added in part order.
  const std::size_t n = changes_total_;
  const std::size_t budget = std::min<std::size_t>(spec.transitions_per_step, n);
  counts.deferred = static_cast<std::uint32_t>(n - budget);
  if (budget == 0) return;
  const bool all = budget == n;
  if (!all) {
    join_changes(executor);
    select_first(changes_, budget, ids);
  }
  run_parts(executor, parts_used_, [&](std::uint32_t p) {
    PartOutput& out = part_out_[p];
    std::uint32_t from[kSimTierCount] = {}, to[kSimTierCount] = {};
    std::uint32_t promoted = 0, demoted = 0;
    const CandidateList& changes = out.changes;
    for (std::size_t c = 0; c < changes.size(); ++c) {
      const std::uint32_t i = changes.index[c];
      if (!all && beyond_kept(changes.key[c], ids, i)) continue;  // beyond the budget: deferred
      const SimTier current = tier[i], target = target_[i];
      tier[i] = target;
      ++from[tier_index(current)];
      ++to[tier_index(target)];
      if (target > current) {
        ++demoted;
      } else {
        ++promoted;
      }
    }
    std::copy(std::begin(from), std::end(from), std::begin(out.applied_from));
    std::copy(std::begin(to), std::end(to), std::begin(out.applied_to));
    out.promoted = promoted;
    out.demoted = demoted;
  });
  for (std::uint32_t p = 0; p < parts_used_; ++p) {
    const PartOutput& out = part_out_[p];
    for (std::size_t t = 0; t < kSimTierCount; ++t) {
      counts.per_tier[t] -= out.applied_from[t];
      counts.per_tier[t] += out.applied_to[t];
    }
    counts.promoted += out.promoted;
    counts.demoted += out.demoted;
  }
}

}  // namespace bustle::core
