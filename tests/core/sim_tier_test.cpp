#include "bustle/core/sim_tier.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>

using namespace bustle::core;

namespace {
constexpr auto F = SimTier::Full;
constexpr auto S = SimTier::Simulated;
constexpr auto C = SimTier::Coarse;
}  // namespace

TEST_CASE(
    "distance with hysteresis: entering needs the enter radius, staying only the exit radius") {
  TierSpec spec;  // full 25/30, simulated 500/550
  TierResolver r;
  std::vector<EntityId> ids = {{0, 1}, {1, 1}, {2, 1}, {3, 1}};
  std::vector<double> d = {27.0, 27.0, 520.0, 520.0};
  std::vector<SimTier> tier = {F, S, S, C};
  r.resolve(spec, ids, d, tier);
  CHECK(tier == std::vector<SimTier>{F, S, S, C});
  d = {31.0, 20.0, 560.0, 400.0};
  r.resolve(spec, ids, d, tier);
  CHECK(tier == std::vector<SimTier>{S, F, C, S});
}

TEST_CASE(
    "capacity keeps incumbents, then the nearest, ties by id, and the budget defers the rest") {
  TierSpec spec;
  spec.full_cap = 2;
  spec.transitions_per_step = 2;
  TierResolver r;
  std::vector<EntityId> ids = {{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}};
  std::vector<double> d = {10.0, 5.0, 5.0, 1.0, 10.0};
  std::vector<SimTier> tier = {F, C, C, C, C};
  const TierCounts c = r.resolve(spec, ids, d, tier);
  // Incumbent 0 keeps Full; one more Full slot goes to the nearest (3).
  // Wanted: 0 F (no change), 3 C->F, 1,2,4 C->S: four changes, budget 2.
  CHECK(tier[0] == F);
  CHECK(c.promoted == 2);
  CHECK(c.deferred == 2);
  CHECK(tier[3] == F);                      // nearest promotion first
  CHECK((tier[1] == S) != (tier[2] == S));  // one of the equal-distance pair...
  CHECK(tier[1] == S);                      // ...the lower id wins the tie
  CHECK(c.per_tier[0] + c.per_tier[1] + c.per_tier[2] == 5);
}

TEST_CASE("capacity_targets: stage 2 per entity, before the transition budget") {
  TierSpec spec;
  spec.full_cap = 1;
  spec.simulated_cap = 2;
  spec.transitions_per_step = 1;
  TierResolver r;
  std::vector<EntityId> ids = {{0, 1}, {1, 1}, {2, 1}, {3, 1}};
  // All four ask for Full (stage 1); the caps allow 1 Full (the nearest, 3)
  // and 2 Simulated (1 and 2, nearer than 0), 0 goes to Coarse.
  std::vector<double> d = {20.0, 10.0, 15.0, 5.0};
  std::vector<SimTier> tier = {C, C, C, C};
  const TierCounts c = r.resolve(spec, ids, d, tier);
  CHECK(std::vector<SimTier>(r.capacity_targets().begin(), r.capacity_targets().end()) ==
        std::vector<SimTier>{C, S, S, F});
  // The budget applied one change (the nearest promotion); the other two
  // targets are still recorded although their tiers stayed.
  CHECK(tier == std::vector<SimTier>{C, C, C, F});
  CHECK(c.deferred == 2);
  // One target per entity of the last call, whatever its size.
  r.resolve(spec, std::span(ids).first(2), std::span(d).first(2), std::span(tier).first(2));
  CHECK(r.capacity_targets().size() == 2);
}

TEST_CASE("equal distances resolve identically whatever the array order") {
  TierSpec spec;
  spec.full_cap = 3;
  spec.transitions_per_step = 4;
  std::vector<EntityId> ids;
  for (std::uint32_t i = 0; i < 10; ++i) ids.push_back({i, 1});
  std::vector<double> d(10, 12.0);
  std::vector<SimTier> tier(10, C);
  TierResolver r1;
  r1.resolve(spec, ids, d, tier);
  std::vector<EntityId> rev_ids(ids.rbegin(), ids.rend());
  std::vector<SimTier> rev_tier(10, C);
  TierResolver r2;
  r2.resolve(spec, rev_ids, d, rev_tier);
  for (std::uint32_t i = 0; i < 10; ++i) CHECK(tier[i] == rev_tier[9 - i]);
  // Full cap 3 goes to ids 0, 1, 2; the budget of 4 then promotes id 3 to
  // Simulated; ids 4..9 wait (deferred).
  CHECK(tier[0] == F);
  CHECK(tier[2] == F);
  CHECK(tier[3] == S);
  CHECK(tier[4] == C);
}

TEST_CASE("strides are 1, 2, 8 and the phase spreads work evenly") {
  CHECK(tier_stride(SimTier::Full) == 1);
  CHECK(tier_stride(SimTier::Simulated) == 2);
  CHECK(tier_stride(SimTier::Coarse) == 8);
  int due[8] = {};
  for (std::uint32_t i = 0; i < 8000; ++i) {
    for (std::uint64_t step = 0; step < 8; ++step)
      due[step] += tier_due(step, EntityId{i, 1}, SimTier::Coarse);
  }
  for (int c : due) {
    CHECK(c > 850);
    CHECK(c < 1150);
  }
  int per_entity = 0;
  for (std::uint64_t step = 0; step < 64; ++step)
    per_entity += tier_due(step, EntityId{7, 3}, SimTier::Coarse);
  CHECK(per_entity == 8);
}

TEST_CASE("ForceFull bypasses full_cap and the budget but never the hard safety cap") {
  TierSpec spec;
  spec.full_cap = 0;  // nobody is Full by distance
  spec.hard_full_cap = 2;
  spec.transitions_per_step = 1;
  TierResolver r;
  std::vector<EntityId> ids = {{0, 1}, {1, 1}, {2, 1}, {3, 1}};
  std::vector<double> d = {1.0, 1.0, 1.0, 1.0};
  std::vector<SimTier> tier = {C, C, C, C};
  const std::vector<std::uint8_t> force = {0, 1, 1, 1};  // three forced, hard cap two
  const TierCounts c = r.resolve(spec, ids, d, tier, force);
  CHECK(tier[1] == F);
  CHECK(tier[2] == F);  // both at once: the budget of 1 does not apply
  CHECK(tier[3] != F);  // beyond the hard cap: resolved normally
  CHECK(c.forced == 2);
  CHECK(c.forced_overflow == 1);
  CHECK(c.per_tier[0] == 2);
}

namespace {

// Stage 2 as its definition says: sort each tier's candidates by
// (incumbent first, nearer, lower id) and keep the first `cap`. With an
// unlimited budget the resolver's result must equal this.
std::vector<SimTier> capacity_by_sorting(const TierSpec& spec, const std::vector<EntityId>& ids,
                                         const std::vector<double>& d, std::vector<SimTier> tier) {
  const std::size_t n = ids.size();
  std::vector<SimTier> want(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double full_r = tier[i] == F ? spec.full_exit_m : spec.full_enter_m;
    const double sim_r = tier[i] <= S ? spec.simulated_exit_m : spec.simulated_enter_m;
    want[i] = d[i] <= full_r ? F : d[i] <= sim_r ? S : C;
  }
  const auto keep = [&](SimTier level, std::uint32_t cap, SimTier down) {
    std::vector<std::size_t> c;
    for (std::size_t i = 0; i < n; ++i) {
      if (want[i] == level) c.push_back(i);
    }
    std::sort(c.begin(), c.end(), [&](std::size_t a, std::size_t b) {
      const bool ai = tier[a] == level, bi = tier[b] == level;
      if (ai != bi) return ai;
      if (d[a] != d[b]) return d[a] < d[b];
      return ids[a] < ids[b];
    });
    for (std::size_t k = cap; k < c.size(); ++k) want[c[k]] = down;
  };
  keep(F, spec.full_cap, S);
  keep(S, spec.simulated_cap, C);
  return want;
}

// n entities for the selection tests: ids spread over the indices with
// random generations, random tiers, and distances either from a few values
// `tie_step_m` apart (many exact ties, zeros, infinity for "no observer";
// with `negative_zero`, -0.0 among them too) or spread over 0-700 m.
struct RandomSlice {
  std::vector<EntityId> ids;
  std::vector<double> d;
  std::vector<SimTier> tier;
};
RandomSlice random_slice(Prng& rng, std::uint32_t n, int round, bool ties, double tie_step_m,
                         bool negative_zero) {
  RandomSlice r{std::vector<EntityId>(n), std::vector<double>(n), std::vector<SimTier>(n)};
  for (std::uint32_t i = 0; i < n; ++i) {
    r.ids[i] =
        EntityId{(i * 7919u + static_cast<std::uint32_t>(round)) % 100'003u, 1 + rng.next_below(3)};
    if (ties) {
      const std::uint32_t v = rng.next_below(negative_zero ? 7 : 6);
      r.d[i] = v == 5   ? std::numeric_limits<double>::infinity()
               : v == 6 ? -0.0
                        : static_cast<double>(v) * tie_step_m;
    } else {
      r.d[i] = rng.next_unit() * 700.0;
    }
    r.tier[i] = static_cast<SimTier>(rng.next_below(3));
  }
  return r;
}

}  // namespace

TEST_CASE("capacity selection equals sorting by preference, ties and all, at every size") {
  // Distances drawn from a few values (many exact ties, zeros, infinity for
  // "no observer") or spread continuously; caps below, at and above demand.
  Prng rng(17);
  TierResolver r;
  for (int round = 0; round < 300; ++round) {
    const std::uint32_t n = round < 100 ? 1 + rng.next_below(40) : 1 + rng.next_below(5000);
    const bool ties = round % 2 == 0;
    TierSpec spec;
    spec.transitions_per_step = n;  // no budget: the result is the capacity targets
    spec.full_cap = rng.next_below(n + 2);
    spec.simulated_cap = rng.next_below(n + 2);
    spec.hard_full_cap = n + 1;
    RandomSlice slice = random_slice(rng, n, round, ties, 9.0, false);
    const std::vector<EntityId>& ids = slice.ids;
    const std::vector<double>& d = slice.d;
    std::vector<SimTier>& tier = slice.tier;
    const std::vector<SimTier> expected = capacity_by_sorting(spec, ids, d, tier);
    r.resolve(spec, ids, d, tier);
    INFO("round " << round << ", n " << n << ", caps " << spec.full_cap << " / "
                  << spec.simulated_cap);
    REQUIRE(tier == expected);
  }
}

TEST_CASE(
    "capacity selection equals sorting when the caps sit at, just above or below the incumbents") {
  // The resolver ranks incumbents and newcomers apart (incumbents first):
  // caps near the number of incumbents that still want their tier cover
  // the cut falling among the newcomers, exactly at the boundary, and among
  // the incumbents.
  Prng rng(29);
  TierResolver r;
  for (int round = 0; round < 200; ++round) {
    const std::uint32_t n = 50 + rng.next_below(3000);
    TierSpec spec;
    spec.transitions_per_step = n;
    spec.hard_full_cap = n + 1;
    std::vector<EntityId> ids(n);
    std::vector<double> d(n);
    std::vector<SimTier> tier(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      ids[i] = EntityId{(i * 104'729u + static_cast<std::uint32_t>(round)) % 200'003u, 1};
      d[i] = round % 2 == 0 ? static_cast<double>(rng.next_below(40)) : rng.next_unit() * 60.0;
      tier[i] = static_cast<SimTier>(rng.next_below(3));
    }
    std::uint32_t full_incumbents = 0, sim_incumbents = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      const SimTier want = distance_tier(spec, tier[i], d[i]);
      full_incumbents += want == F && tier[i] == F;
      sim_incumbents += want == S && tier[i] == S;
    }
    const auto near = [&](std::uint32_t incumbents) {
      const std::int64_t cap = static_cast<std::int64_t>(incumbents) + rng.next_below(5) - 2;
      return static_cast<std::uint32_t>(std::max<std::int64_t>(0, cap));
    };
    spec.full_cap = near(full_incumbents);
    spec.simulated_cap = near(sim_incumbents);
    const std::vector<SimTier> expected = capacity_by_sorting(spec, ids, d, tier);
    r.resolve(spec, ids, d, tier);
    INFO("round " << round << ", n " << n << ", caps " << spec.full_cap << " / "
                  << spec.simulated_cap << ", incumbents " << full_incumbents << " / "
                  << sim_incumbents);
    REQUIRE(tier == expected);
  }
}

TEST_CASE(
    "the transition budget equals sorting the changes: demotions farthest first, then "
    "promotions nearest first, ties by id") {
  // Stage 3 by its definition: every entity whose capacity target differs
  // from its tier, sorted (demotion first; farther first among demotions,
  // nearer first among promotions; then lower id), the first
  // transitions_per_step applied. Distances with many exact ties, zeros of
  // both signs and infinity, or spread; budgets from 0 to above the changes.
  Prng rng(61);
  TierResolver r;
  for (int round = 0; round < 300; ++round) {
    const std::uint32_t n = round < 100 ? 1 + rng.next_below(40) : 1 + rng.next_below(5000);
    TierSpec spec;
    spec.full_cap = rng.next_below(n / 3 + 2);
    spec.simulated_cap = rng.next_below(n / 2 + 2);
    spec.hard_full_cap = n + 1;
    RandomSlice slice = random_slice(rng, n, round, round % 2 == 0, 150.0, true);
    const std::vector<EntityId>& ids = slice.ids;
    const std::vector<double>& d = slice.d;
    std::vector<SimTier>& tier = slice.tier;
    const std::vector<SimTier> targets = capacity_by_sorting(spec, ids, d, tier);
    std::vector<std::size_t> changes;
    for (std::size_t i = 0; i < n; ++i) {
      if (targets[i] != tier[i]) changes.push_back(i);
    }
    const auto budget_choices = {std::size_t{0},     std::size_t{1},
                                 changes.size() / 2, changes.size() > 0 ? changes.size() - 1 : 0,
                                 changes.size(),     changes.size() + 3};
    const std::size_t budget = *(budget_choices.begin() +
                                 rng.next_below(static_cast<std::uint32_t>(budget_choices.size())));
    spec.transitions_per_step = static_cast<std::uint32_t>(budget);
    std::sort(changes.begin(), changes.end(), [&](std::size_t a, std::size_t b) {
      const bool ad = targets[a] > tier[a], bd = targets[b] > tier[b];
      if (ad != bd) return ad;
      if (d[a] != d[b]) return ad ? d[a] > d[b] : d[a] < d[b];
      return ids[a] < ids[b];
    });
    std::vector<SimTier> expected = tier;
    std::uint32_t promoted = 0, demoted = 0;
    for (std::size_t k = 0; k < std::min(budget, changes.size()); ++k) {
      const std::size_t i = changes[k];
      expected[i] = targets[i];
      (targets[i] > tier[i] ? demoted : promoted) += 1;
    }
    const TierCounts c = r.resolve(spec, ids, d, tier);
    INFO("round " << round << ", n " << n << ", changes " << changes.size() << ", budget "
                  << budget);
    REQUIRE(tier == expected);
    CHECK(c.promoted == promoted);
    CHECK(c.demoted == demoted);
    CHECK(c.deferred == changes.size() - std::min(budget, changes.size()));
    for (const SimTier t : {F, S, C}) {
      CHECK(c.per_tier[tier_index(t)] ==
            static_cast<std::uint32_t>(std::count(tier.begin(), tier.end(), t)));
    }
  }
}

TEST_CASE("the mask form of tier_due_phase equals (step + phase % stride) % stride == 0") {
  for (std::uint64_t step = 0; step < 256; ++step) {
    for (std::uint32_t phase = 0; phase < 64; ++phase) {
      for (const SimTier t : {SimTier::Full, SimTier::Simulated, SimTier::Coarse}) {
        const std::uint32_t stride = tier_stride(t);
        REQUIRE(tier_due_phase(step, static_cast<std::uint8_t>(phase), t) ==
                ((step + phase % stride) % stride == 0));
      }
    }
  }
}

TEST_CASE("the split form (start, force, classify in parts, finish) equals resolve at any cut") {
  // Random cities, with a tight budget (stage 3 chooses), ForceFull flags on
  // some rounds, and the entities cut into 1 to 9 parts at random points,
  // empty parts included: tiers, capacity targets and counts are the ones
  // resolve() gives in one part.
  Prng rng(43);
  TierResolver whole, split;
  InlineExecutor inline_executor;
  for (int round = 0; round < 200; ++round) {
    const std::uint32_t n = 1 + rng.next_below(round < 50 ? 30 : 4000);
    TierSpec spec;
    spec.full_cap = rng.next_below(n / 4 + 2);
    spec.simulated_cap = rng.next_below(n / 2 + 2);
    spec.hard_full_cap = spec.full_cap + rng.next_below(4);
    spec.transitions_per_step = 1 + rng.next_below(n);
    std::vector<EntityId> ids(n);
    std::vector<double> d(n);
    std::vector<SimTier> tier(n);
    std::vector<std::uint8_t> force;
    for (std::uint32_t i = 0; i < n; ++i) {
      ids[i] = EntityId{(i * 7919u + static_cast<std::uint32_t>(round)) % 100'003u, 1};
      d[i] =
          round % 3 == 0 ? static_cast<double>(rng.next_below(60)) * 10.0 : rng.next_unit() * 700.0;
      tier[i] = static_cast<SimTier>(rng.next_below(3));
    }
    if (round % 4 == 1) {
      force.resize(n);
      for (std::uint32_t i = 0; i < n; ++i) force[i] = rng.next_below(10) == 0;
    }
    std::vector<SimTier> expected = tier;
    const TierCounts want = whole.resolve(spec, ids, d, expected, force);
    const std::vector<SimTier> want_targets(whole.capacity_targets().begin(),
                                            whole.capacity_targets().end());

    const std::uint32_t parts = 1 + rng.next_below(9);
    std::vector<std::size_t> cuts = {0, n};
    for (std::uint32_t p = 1; p < parts; ++p) cuts.push_back(rng.next_below(n + 1));
    std::sort(cuts.begin(), cuts.end());
    split.start(spec, n, parts);
    if (!force.empty()) split.force(ids, tier, force);
    // Parts in reverse order: a part's outcome must not depend on which ran first.
    for (std::uint32_t p = parts; p-- > 0;) split.classify(p, cuts[p], cuts[p + 1], d, tier);
    const TierCounts got = split.finish(ids, d, tier, inline_executor);
    INFO("round " << round << ", n " << n << ", parts " << parts);
    REQUIRE(tier == expected);
    REQUIRE(std::equal(want_targets.begin(), want_targets.end(), split.capacity_targets().begin(),
                       split.capacity_targets().end()));
    CHECK(got.per_tier[0] == want.per_tier[0]);
    CHECK(got.per_tier[1] == want.per_tier[1]);
    CHECK(got.per_tier[2] == want.per_tier[2]);
    CHECK(got.promoted == want.promoted);
    CHECK(got.demoted == want.demoted);
    CHECK(got.deferred == want.deferred);
    CHECK(got.forced == want.forced);
    CHECK(got.forced_overflow == want.forced_overflow);
  }
}
