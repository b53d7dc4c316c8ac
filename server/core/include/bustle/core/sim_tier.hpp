// Simulation-tier axis: how often an entity's logic runs. Independent of
// identity (never changes an EntityId) and of representation (how a client
// draws it).
//
//   Full       every step       (stride 1)
//   Simulated  every 2nd step   (stride 2)
//   Coarse     every 8th step   (stride 8)
//
// The stride phase is spread by EntityId so each step does about the same
// work. An entity due on a step advances by speed x dt x stride, so progress
// over time is the same in every tier. A pedestrian whose tier changed, or
// that was placed, between two due steps keeps a catch-up (steps added to or
// taken from its next stride, PedestrianStore::catch_up_steps): its progress
// is then always the steps since it last moved, whatever its tier history.
//
// Resolution (resolve_tiers) in four stages:
//   1. distance request: nearest observer distance with enter/exit hysteresis;
//   2. capacity targets: at most full_cap Full and simulated_cap Simulated,
//      preferring entities already in the tier, then nearer, then lower id;
//   3. transition budget: at most transitions_per_step changes, demotions
//      first (farthest first, so capacity frees before it is taken), then
//      promotions (nearest first); ties by EntityId;
//   4. apply; what the budget held back is counted as deferred (not failed).
//
// The stage-2 result of the last resolution (capacity_targets(), recorded per
// pedestrian and per vehicle for QueryEntity: PedestrianStore::capacity_tier,
// VehicleSystem::capacity_tier) is a derived observation, not state: every
// resolution recomputes it from the current tiers, distances and caps and
// nothing reads it back, so it enters neither the digest nor a checkpoint.
// An entity that has not been resolved since it appeared or since a restore
// reports its applied tier there (as if its last resolution had kept it)
// until its slice is next resolved (at most *_resolve_every_steps steps).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "bustle/core/entity_id.hpp"
#include "bustle/core/phase_executor.hpp"
#include "bustle/core/prng.hpp"
#include "bustle/core/scenario.hpp"

namespace bustle::core {

enum class SimTier : std::uint8_t { Full = 0, Simulated = 1, Coarse = 2 };
inline constexpr std::size_t kSimTierCount = 3;
const char* to_string(SimTier t);
// Position of a tier in per-tier arrays (counts, caps, due tables).
constexpr std::size_t tier_index(SimTier t) {
  return static_cast<std::size_t>(t);
}

constexpr std::uint32_t tier_stride(SimTier t) {
  return t == SimTier::Full ? 1u : t == SimTier::Simulated ? 2u : 8u;
}

// An entity's phase: the low 6 bits of mix64(id), a pure function of the
// identity. Strides (1, 2, 8) divide 64, so phase % stride equals
// mix64(id) % stride; hot loops keep it in a column instead of re-mixing.
constexpr std::uint8_t id_phase(EntityId id) {
  return static_cast<std::uint8_t>(mix64(id.packed()) & 63u);
}

// True when an entity of this tier runs its logic on `step`: when
// (step + phase % stride) % stride == 0. Strides are powers of two, so that
// is a mask (no division in the loops that ask it for every entity).
constexpr bool tier_due_phase(std::uint64_t step, std::uint8_t phase, SimTier t) {
  static_assert((tier_stride(SimTier::Simulated) & (tier_stride(SimTier::Simulated) - 1)) == 0 &&
                (tier_stride(SimTier::Coarse) & (tier_stride(SimTier::Coarse) - 1)) == 0);
  return ((step + phase) & (tier_stride(t) - 1)) == 0;
}
constexpr bool tier_due(std::uint64_t step, EntityId id, SimTier t) {
  return tier_due_phase(step, id_phase(id), t);
}

// Steps since an entity of this tier was last due, counted after `step`'s
// movement: 0 on a due step, at most stride - 1. (The admission-mask bit of a
// phase byte, 64, is a multiple of every stride and changes nothing.)
constexpr std::uint32_t steps_since_due(std::uint64_t step, std::uint8_t phase, SimTier t) {
  return static_cast<std::uint32_t>((step + phase) & (tier_stride(t) - 1));
}

// The largest catch-up (either sign) a pedestrian row can hold: every row is
// due on the steps due in Coarse, so it never stands more than 7 steps
// behind its last due step, nor ahead of it.
inline constexpr int kMaxCatchUpSteps = 7;

// Equal progress across tier changes and placements. A pedestrian row stands
// where it is as of (its last due step - catch_up): its next due step moves it
// by stride + catch_up steps' time, which is the steps since then.
//
// A tier change after `step`'s movement keeps the steps since the row last
// moved (steps_since_due + catch_up) as they are.
constexpr int catch_up_after_tier_change(std::uint64_t step, std::uint8_t phase, SimTier from,
                                         SimTier to, int catch_up) {
  return static_cast<int>(steps_since_due(step, phase, from)) + catch_up -
         static_cast<int>(steps_since_due(step, phase, to));
}
// A row placed (a spawn, a resident taking the lane, a mask lifted) stands
// as of `as_of_step`: the step before, when a step's movement is still to
// come, else the last step. Its first due step after that moves it by the
// steps since then (one for Full, as before).
constexpr int catch_up_for_placement(std::uint64_t as_of_step, std::uint8_t phase, SimTier t) {
  return -static_cast<int>(steps_since_due(as_of_step, phase, t));
}

// The tier distance alone asks for (stage 1 of TierResolver::resolve, before
// the caps and the transition budget): the enter radii to move up, the exit
// radii to stay, so a tier does not flicker at a boundary.
// Within the full radius Full, else within the simulated radius Simulated,
// else Coarse; written as arithmetic (the outcome depends on distances,
// which branch prediction cannot guess, and stage 1 asks it of every entity).
inline SimTier distance_tier(const TierSpec& spec, SimTier current, double distance_m) {
  const double full_r = current == SimTier::Full ? spec.full_exit_m : spec.full_enter_m;
  const double sim_r = current != SimTier::Coarse ? spec.simulated_exit_m : spec.simulated_enter_m;
  const std::uint32_t beyond_full = !(distance_m <= full_r);
  const std::uint32_t beyond_sim = !(distance_m <= sim_r);
  static_assert(static_cast<int>(SimTier::Full) == 0 && static_cast<int>(SimTier::Simulated) == 1 &&
                static_cast<int>(SimTier::Coarse) == 2);
  return static_cast<SimTier>(beyond_full * (1u + beyond_sim));
}

struct TierCounts {
  std::uint32_t per_tier[kSimTierCount] = {};
  std::uint32_t promoted = 0;
  std::uint32_t demoted = 0;
  std::uint32_t deferred = 0;         // transitions held back by the budget this step
  std::uint32_t forced = 0;           // ForceFull entities held in Full
  std::uint32_t forced_overflow = 0;  // ForceFull entities beyond the hard cap (resolved normally)
};

// The caps left for one resolve slice when the rest of the kind keeps its
// tiers: `others[t]` entities outside the slice hold tier t, `others_forced`
// of the Full ones are ForceFull (they count against the hard cap only).
TierSpec slice_caps(const TierSpec& spec, const std::uint32_t (&others)[kSimTierCount],
                    std::uint32_t others_forced);

// Resolves tiers in place. `distance_m[i]` is entity i's distance to the
// nearest observer (infinity when there is none). Scratch vectors are reused
// between calls so a step allocates nothing after warm-up.
class TierResolver {
 public:
  // `force_full` (empty, or one flag per entity): ForceFull entities go to Full
  // at once, outside full_cap and the transition budget, up to hard_full_cap
  // (lowest ids first); the rest are resolved normally and counted as overflow.
  TierCounts resolve(const TierSpec& spec, std::span<const EntityId> ids,
                     std::span<const double> distance_m, std::span<SimTier> tier,
                     std::span<const std::uint8_t> force_full = {});

  // resolve() split so that a caller can run stage 1 in parts on several
  // threads (phase_executor.hpp): start(), force() when there are ForceFull
  // flags, classify() once per part, then finish(). The parts' ranges are
  // consecutive and cover [0, n) in part order; each part writes only its
  // range of the targets and its own candidate lists, which finish() joins
  // in part order. The same arguments give the same tiers and counts as
  // resolve() for every part count and thread count.
  //
  // Sizes the call for n entities in `parts` parts (0 < parts, or n == 0).
  void start(const TierSpec& spec, std::size_t n, std::uint32_t parts);
  // Stage 0 (ForceFull) over all n entities, before any classify().
  void force(std::span<const EntityId> ids, std::span<SimTier> tier,
             std::span<const std::uint8_t> force_full);
  // Stage 1 for entities [begin, end): tier[i] and distance_m[i] are read
  // for those i only. Parts may run concurrently; each part once.
  void classify(std::uint32_t part, std::size_t begin, std::size_t end,
                std::span<const double> distance_m, std::span<const SimTier> tier);
  // Stages 2 to 4 over all n entities; tier is updated in place.
  // Its passes over the entities run in the classified parts on `executor`.
  TierCounts finish(std::span<const EntityId> ids, std::span<const double> distance_m,
                    std::span<SimTier> tier, PhaseExecutor& executor);
  // Sizes the scratch for up to `entities` per call, so no call allocates
  // (otherwise it grows to the largest call seen, now and then allocating).
  void reserve(std::size_t entities);
  // Stage 2's capacity target of each entity of the last resolve() call (one
  // per id, in its order): the tier the caps allow before the transition
  // budget. Valid until the next call.
  std::span<const SimTier> capacity_targets() const { return target_; }

 private:
  // Stage 2: the candidates of one capacity (preference key, index), kept
  // apart by incumbency: incumbents come first in the preference order, so
  // when they fit under the cap all of them stay and only the others
  // compete for what is left (select_first then ranks the smaller list).
  struct CandidateList {
    // Plain arrays rather than vectors: stage 1 writes a candidate's slot
    // before it knows whether the candidate counts (no branch per entity),
    // which needs writable capacity beyond the size without initialising it.
    std::unique_ptr<std::uint64_t[]> key;
    std::unique_ptr<std::uint32_t[]> index;
    std::size_t count = 0;
    std::size_t capacity = 0;
    void clear() { count = 0; }
    void reserve(std::size_t n);  // keeps the candidates
    void push(std::uint64_t k, std::uint32_t i) {
      if (count == capacity) reserve(std::max<std::size_t>(64, 2 * capacity));
      key[count] = k;
      index[count] = i;
      ++count;
    }
    std::size_t size() const { return count; }
    std::span<const std::uint64_t> keys() const { return {key.get(), count}; }
    std::span<const std::uint32_t> indices() const { return {index.get(), count}; }
    // Joining parts' lists: `total` slots to be filled by copy_to (not kept).
    void resize_for_overwrite(std::size_t total) {
      clear();
      reserve(total);
      count = total;
    }
    void copy_to(CandidateList& joined, std::size_t at) const {
      std::copy(key.get(), key.get() + count, joined.key.get() + at);
      std::copy(index.get(), index.get() + count, joined.index.get() + at);
    }
  };
  // Cuts (incumbents, newcomers) of one tier to `cap`; calls down(index)
  // for each one cut.
  template <class Down>
  void cap_candidates(std::size_t cap, const CandidateList& incumbents,
                      const CandidateList& newcomers, std::span<const EntityId> ids, Down&& down);
  // The keep-th smallest (key, id) of `list` into threshold_key_ / threshold_id_.
  void select_first(const CandidateList& list, std::size_t keep, std::span<const EntityId> ids);
  // After select_first: whether (key, ids[i]) comes after the last one kept.
  bool beyond_kept(std::uint64_t key, std::span<const EntityId> ids, std::uint32_t i) const {
    return key > threshold_key_ || (key == threshold_key_ && threshold_id_ < ids[i]);
  }
  // Stage 0 (ForceFull) and stage 3 (transition budget) of resolve.
  void apply_force_full(const TierSpec& spec, std::span<const EntityId> ids,
                        std::span<SimTier> tier, std::span<const std::uint8_t> force_full,
                        TierCounts& counts);
  // Stage 3: every change (capacity target != tier) listed per part with a
  // key in the budget's order, then the first transitions_per_step applied.
  void list_changes(std::span<const double> distance_m, std::span<const SimTier> tier,
                    PhaseExecutor& executor);
  void apply_budget(const TierSpec& spec, std::span<const EntityId> ids, std::span<SimTier> tier,
                    TierCounts& counts, PhaseExecutor& executor);
  void join_changes(PhaseExecutor& executor);  // the parts' changes into changes_
  // Stage 1's output of one part: its candidates in the four lists of
  // stage 2 (in the order of the members below) and the tiers it counted.
  enum ListIndex : std::size_t { kFullIncumbents, kFullNewcomers, kSimIncumbents, kSimNewcomers };
  struct PartOutput {
    std::size_t begin = 0, end = 0;  // the entities it classified
    CandidateList lists[4];
    std::size_t at[4] = {};  // where its lists start in the joined ones
    std::uint32_t now_full = 0, now_sim = 0;
    CandidateList changes;       // stage 3's, in its range (budget_key, index)
    std::size_t changes_at = 0;  // where they start in changes_
    // What applying its share of the budget did.
    std::uint32_t applied_from[kSimTierCount] = {}, applied_to[kSimTierCount] = {};
    std::uint32_t promoted = 0, demoted = 0;
  };
  void join_parts(PhaseExecutor& executor);
  const TierSpec* spec_ = nullptr;  // of the call in progress (start to finish)
  std::size_t n_ = 0;
  std::uint32_t parts_used_ = 0;
  bool any_force_ = false;
  TierCounts counts_;
  std::uint32_t now_full_ = 0, now_sim_ = 0;
  std::vector<PartOutput> part_out_;
  CandidateList full_incumbents_, full_newcomers_;
  // Simulated's candidates (with those Full's cap moves down).
  CandidateList sim_incumbents_, sim_newcomers_;
  std::vector<std::uint32_t> live_;
  std::uint32_t histogram_[4096] = {};
  std::uint64_t threshold_key_ = 0;
  EntityId threshold_id_;
  CandidateList changes_;  // every part's changes, joined in part order when the budget chooses
  std::size_t changes_total_ = 0;
  std::vector<SimTier> target_;
  std::vector<std::uint32_t> forced_idx_;
  std::vector<std::uint8_t> forced_now_;
};

double nearest_observer_m(const std::vector<Vec2>& observers, double x_m, double y_m);

}  // namespace bustle::core
