#include "bustle/core/world.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>

using namespace bustle::core;

namespace {

Scenario two_loops(std::uint32_t peds) {
  Scenario s;
  s.id = "test.two-loops";
  s.lanes = {
      {"w", LaneKind::Sidewalk, {{0, 0}, {20, 0}, {20, 10}}, 1.4, {"x", "w2"}},
      {"w2", LaneKind::Sidewalk, {{20, 10}, {0, 10}, {0, 0}}, 1.4, {"w"}},
      {"x", LaneKind::Crossing, {{20, 10}, {30, 10}}, 1.2, {"e"}},
      {"e", LaneKind::Sidewalk, {{30, 10}, {50, 10}, {50, 0}, {30, 0}, {30, 10}}, 1.3, {"e", "y"}},
      {"y", LaneKind::Crossing, {{30, 9}, {20, 9}}, 1.2, {"w2"}},
      {"road", LaneKind::Road, {{25, -10}, {25, 20}}, 13.9, {"road"}},
  };
  s.pedestrians.count = peds;
  s.pedestrians.spawn_per_step_max = 16;
  s.entity_capacity = 1024;
  return s;
}

std::unique_ptr<World> make_valid(const Scenario& s, std::uint64_t seed) {
  auto created = World::create(s, seed);
  REQUIRE(created.errors.empty());
  REQUIRE(created.world);
  return std::move(created.world);
}

CommandEnvelope env(std::uint32_t request, WorldCommand c) {
  return CommandEnvelope{CommandOrigin{1, request}, c};
}

// A loop of two lanes with corners and different speeds (a: 5 m at 1.5 m/s,
// b: 5 m at 1.0 m/s, each the other's only successor).
Scenario two_lane_loop(const char* id, std::uint32_t peds) {
  Scenario s;
  s.id = id;
  s.lanes = {
      {"a", LaneKind::Sidewalk, {{0, 0}, {3, 0}, {3, 2}}, 1.5, {"b"}},
      {"b", LaneKind::Sidewalk, {{3, 2}, {0, 2}, {0, 0}}, 1.0, {"a"}},
  };
  s.pedestrians.count = peds;
  return s;
}

// Travel time along two_lane_loop of pedestrian row `i` from lane a's start,
// from its lane, distance and hops.
double time_on_loop(const World& w, std::uint32_t i) {
  const double len_a = 5.0, len_b = 5.0, v_a = 1.5, v_b = 1.0;
  const LaneIndex lane = w.pedestrians().lane[i];
  const std::uint32_t hops = w.pedestrians().hops[i];
  // Each full loop is len_a / v_a + len_b / v_b seconds; hops count lane entries.
  double t = (hops / 2) * (len_a / v_a + len_b / v_b);
  if (hops % 2 == 1) t += lane == 1 ? len_a / v_a : len_b / v_b;
  return t + w.pedestrians().s_m[i] / (lane == 0 ? v_a : v_b);
}

}  // namespace

TEST_CASE("same scenario and seed give the same digest at every step and another seed differs") {
  const Scenario s = two_loops(200);
  auto a = make_valid(s, 7);
  auto b = make_valid(s, 7);
  auto c = make_valid(s, 8);
  REQUIRE(a->digest() == b->digest());
  int differing = 0;
  for (int k = 0; k < 1000; ++k) {
    a->step();
    b->step();
    c->step();
    REQUIRE(a->digest() == b->digest());
    REQUIRE(a->digest() == a->compute_digest());
    if (a->digest() != c->digest()) ++differing;
  }
  CHECK(a->step_index() == 1000);
  CHECK(a->sim_time_us() == 1000ull * 100'000ull);
  CHECK(a->pedestrians().size() == 200);
  CHECK(differing == 1000);
}

TEST_CASE("the same commands at the same steps reproduce the digest chain") {
  const Scenario s = two_loops(50);
  auto a = make_valid(s, 3);
  auto b = make_valid(s, 3);
  for (int k = 0; k < 300; ++k) {
    if (k == 40 || k == 120) {
      for (World* w : {a.get(), b.get()}) {
        REQUIRE(w->submit(env(1, SetPedestrianTarget{static_cast<std::uint32_t>(k)})) ==
                SubmitStatus::Queued);
        REQUIRE(w->submit(env(2, DespawnEntity{w->pedestrians().id[0]})) == SubmitStatus::Queued);
      }
    }
    a->step();
    b->step();
    REQUIRE(a->digest() == b->digest());
  }
  // And a world that did not get the commands diverges.
  auto c = make_valid(s, 3);
  for (int k = 0; k < 300; ++k) c->step();
  CHECK(c->digest() != a->digest());
}

TEST_CASE("pedestrians move at lane speed and carry remaining time across lane ends") {
  // A single-successor chain, so the expected path is known: a (1 m at 1 m/s)
  // -> c (0.05 m at 1 m/s, shorter than one step of travel) -> b (10 m at
  // 2 m/s) -> a. A step of 0.1 s must always spend exactly 0.1 s of travel.
  Scenario s;
  s.id = "test.chain";
  s.lanes = {
      {"a", LaneKind::Sidewalk, {{0, 0}, {1, 0}}, 1.0, {"c"}},
      {"c", LaneKind::Crossing, {{1, 0}, {1.05, 0}}, 1.0, {"b"}},
      {"b", LaneKind::Crossing, {{1.05, 0}, {11.05, 0}}, 2.0, {"a"}},
  };
  s.pedestrians.count = 1;
  s.entity_capacity = 4;
  // An observer on top keeps the pedestrian in the Full tier (every step).
  s.observers = {{0.0, 0.0}};
  s.tiers.full_enter_m = s.tiers.full_exit_m = 1000.0;
  s.tiers.simulated_enter_m = s.tiers.simulated_exit_m = 2000.0;
  auto w = make_valid(s, 1);
  w->step();  // spawns and moves the one pedestrian
  REQUIRE(w->pedestrians().size() == 1);

  const double len[3] = {1.0, 0.05, 10.0};
  const double speed[3] = {1.0, 1.0, 2.0};
  const LaneIndex next[3] = {1, 2, 0};
  int transitions = 0;
  int multi_hop_steps = 0;
  for (int k = 0; k < 400; ++k) {
    LaneIndex lane = w->pedestrians().lane[0];
    double pos = w->pedestrians().s_m[0];
    // Reference: spend 0.1 s along the chain.
    double t = 0.1;
    int hops = 0;
    while (pos + speed[lane] * t >= len[lane]) {
      t -= (len[lane] - pos) / speed[lane];
      lane = next[lane];
      pos = 0.0;
      ++hops;
    }
    pos += speed[lane] * t;
    w->step();
    REQUIRE(w->pedestrians().lane[0] == lane);
    REQUIRE(w->pedestrians().s_m[0] == Approx(pos).margin(1e-9));
    transitions += hops;
    if (hops >= 2) ++multi_hop_steps;
  }
  CHECK(transitions > 10);
  CHECK(multi_hop_steps > 0);
  CHECK(w->counters().despawned_total == 0);
}

TEST_CASE("a dead end despawns with LaneDeadEnd and the population is replenished with fresh ids") {
  Scenario s;
  s.id = "test.dead-end";
  s.lanes = {{"a", LaneKind::Sidewalk, {{0, 0}, {1, 0}}, 1.0, {}}};
  s.pedestrians.count = 1;
  s.entity_capacity = 8;
  auto w = make_valid(s, 1);
  w->step();
  const EntityId first = w->pedestrians().id.at(0);
  CHECK(first == EntityId{0, 1});
  for (int k = 0; k < 15; ++k) w->step();  // 1 m at 1 m/s: gone within 10 steps
  CHECK(w->counters().despawned_by_reason[static_cast<int>(DespawnReason::LaneDeadEnd)] >= 1);
  CHECK_FALSE(w->registry().is_alive(first));
  // The replacement takes a never-used slot: released ids are reused late.
  REQUIRE(w->pedestrians().size() == 1);
  CHECK(w->pedestrians().id[0].index != first.index);
}

TEST_CASE("commands are applied in arrival order, each with its own graded result") {
  auto w = make_valid(two_loops(10), 1);
  for (int k = 0; k < 3; ++k) w->step();
  const EntityId victim = w->pedestrians().id[0];
  REQUIRE(w->submit(env(1, SetPedestrianTarget{20})) == SubmitStatus::Queued);
  REQUIRE(w->submit(env(2, SetPedestrianTarget{5000})) == SubmitStatus::Queued);
  REQUIRE(w->submit(env(3, DespawnEntity{victim})) == SubmitStatus::Queued);
  REQUIRE(w->submit(env(4, DespawnEntity{EntityId{victim.index, victim.generation + 1}})) ==
          SubmitStatus::Queued);
  w->step();
  const auto results = w->last_command_results();
  REQUIRE(results.size() == 4);
  CHECK(results[0].origin.request_id == 1);
  CHECK(results[0].status == CommandStatus::Accepted);
  CHECK(results[1].status == CommandStatus::Rejected);
  CHECK(results[1].reason == RejectReason::InvalidArgument);
  CHECK(results[1].message.find("entity_capacity") != std::string::npos);
  CHECK(results[2].status == CommandStatus::Accepted);
  CHECK(results[3].status == CommandStatus::Rejected);
  CHECK(results[3].reason == RejectReason::UnknownEntity);
  for (const auto& r : results) CHECK(r.step == 4);
  CHECK(w->pedestrian_target() == 20);
  CHECK_FALSE(w->registry().is_alive(victim));
  CHECK(w->counters().despawned_by_reason[static_cast<int>(DespawnReason::Requested)] == 1);
  CHECK(w->counters().commands_accepted == 2);
  CHECK(w->counters().commands_rejected == 2);
  // Results are per step: the next step has none.
  w->step();
  CHECK(w->last_command_results().empty());
}

TEST_CASE("the command inbox is bounded and a full inbox rejects at submit") {
  Scenario s = two_loops(0);
  s.command_inbox_capacity = 3;
  auto w = make_valid(s, 1);
  for (std::uint32_t i = 0; i < 3; ++i) {
    REQUIRE(w->submit(env(i, SetPedestrianTarget{i})) == SubmitStatus::Queued);
  }
  CHECK(w->submit(env(9, SetPedestrianTarget{9})) == SubmitStatus::InboxFull);
  CHECK(w->inbox_size() == 3);
  w->step();
  CHECK(w->last_command_results().size() == 3);
  CHECK(w->pedestrian_target() == 2);
  CHECK(w->submit(env(10, SetPedestrianTarget{1})) == SubmitStatus::Queued);
}

TEST_CASE("population grows and shrinks towards the target within the per-step cap") {
  Scenario s = two_loops(40);
  s.pedestrians.spawn_per_step_max = 8;
  auto w = make_valid(s, 2);
  w->step();
  CHECK(w->pedestrians().size() == 8);
  for (int k = 0; k < 4; ++k) w->step();
  CHECK(w->pedestrians().size() == 40);
  REQUIRE(w->submit(env(1, SetPedestrianTarget{30})) == SubmitStatus::Queued);
  w->step();
  CHECK(w->pedestrians().size() == 32);
  w->step();
  CHECK(w->pedestrians().size() == 30);
  CHECK(w->counters().despawned_by_reason[static_cast<int>(DespawnReason::Overpopulated)] == 10);
  // Trimming follows the lane density ledger: it takes from the fragments
  // most above their share, so none is left more than one above it.
  std::vector<double> gap;
  w->density_ledger(gap);
  for (const double g : gap) CHECK(g > -1.5);
}

TEST_CASE("background growth fills the lane density ledger evenly") {
  Scenario s = two_loops(40);
  s.pedestrians.spawn_per_step_max = 64;
  s.pedestrians.fragment_length_m = 10.0;
  auto w = make_valid(s, 5);
  w->step();
  REQUIRE(w->pedestrians().size() == 40);
  std::vector<double> gap;
  w->density_ledger(gap);
  REQUIRE(gap.size() > 4);
  // Every fragment got its share by length (one step of walking may carry a
  // pedestrian over a fragment border, hence the margin of one).
  for (const double g : gap) {
    CHECK(g < 1.5);
    CHECK(g > -1.5);
  }
  const LedgerSummary sum = w->ledger_summary();
  CHECK(sum.fragments == gap.size());
  CHECK(sum.max_deficit < 1.5);
}

namespace {

// One step with `hook` listening.
void step_hooked(World& w, StepPhaseHook& hook) {
  w.set_phase_hook(&hook);
  w.step();
  w.set_phase_hook(nullptr);
}

// Each sidewalk fragment's share of `count` background pedestrians, by
// length (as the density ledger computes it).
std::vector<double> ledger_shares(const World& w, double count) {
  double total = 0.0;
  for (const LaneFragment& f : w.lanes().fragments()) total += f.length_m;
  std::vector<double> share;
  for (const LaneFragment& f : w.lanes().fragments()) share.push_back(count * f.length_m / total);
  return share;
}

}  // namespace

TEST_CASE("growth takes the largest gap first, the lowest fragment among equal gaps") {
  // 137 pedestrians spawned in one step over equal 5 m fragments: many
  // gaps tie, so the fragments they land on (seen right after upkeep,
  // before anyone walks) show the order they were taken in. The reference
  // is the rule's plain scan over the targets by length.
  Scenario s = two_loops(137);
  s.pedestrians.spawn_per_step_max = 1000;
  s.pedestrians.fragment_length_m = 5.0;
  auto w = make_valid(s, 3);
  struct AfterUpkeep final : StepPhaseHook {
    const World* world = nullptr;
    std::vector<std::uint32_t> counts;
    void phase_end(StepPhase phase) override {
      if (phase != StepPhase::BackgroundUpkeep || !counts.empty()) return;
      const LaneGraph& lanes = world->lanes();
      counts.assign(lanes.fragments().size(), 0);
      const PedestrianStore& p = world->pedestrians();
      for (std::uint32_t i = 0; i < p.size(); ++i) ++counts[lanes.fragment_of(p.lane[i], p.s_m[i])];
    }
  } hook;
  hook.world = w.get();
  step_hooked(*w, hook);
  const std::vector<LaneFragment>& frags = w->lanes().fragments();
  const std::vector<double> share = ledger_shares(*w, 137.0);
  std::vector<std::uint32_t> expected(frags.size(), 0);
  for (std::uint32_t k = 0; k < 137; ++k) {
    std::size_t best = 0;
    double best_gap = -std::numeric_limits<double>::infinity();
    for (std::size_t f = 0; f < frags.size(); ++f) {
      const double gap = share[f] - expected[f];
      if (gap > best_gap) {
        best = f;
        best_gap = gap;
      }
    }
    ++expected[best];
  }
  REQUIRE(frags.size() > 10);
  CHECK(hook.counts == expected);
}

namespace {

// 240 walkers on 5 m fragments, then `target`: one step trims 240 - target,
// at most `cap` (the scenario's per-step cap).
// The reference is the rule's plain scan over the state seen right before
// upkeep: the fragment with the largest surplus (the lowest among equals),
// in it Coarse before others, then the highest EntityId; once no fragment
// holds anyone, the same order over everyone left (those on crossings).
// Returns how many of the trimmed stood on no fragment.
std::size_t check_trim(std::uint32_t target, std::uint32_t cap) {
  Scenario s = two_loops(240);
  s.pedestrians.spawn_per_step_max = cap;
  s.pedestrians.fragment_length_m = 5.0;
  s.tiers.full_cap = 30;
  s.tiers.simulated_cap = 60;
  s.observers = {{10.0, 5.0}};
  auto w = make_valid(s, 9);
  for (int k = 0; k < 12; ++k) w->step();
  REQUIRE(w->pedestrians().size() == 240);
  struct Row {
    EntityId id;
    bool coarse;
    std::uint32_t fragment;
  };
  struct BeforeUpkeep final : StepPhaseHook {
    const World* world = nullptr;
    std::vector<Row> rows;
    void phase_end(StepPhase phase) override {
      if (phase != StepPhase::TimeAndZones) return;
      const PedestrianStore& p = world->pedestrians();
      for (std::uint32_t i = 0; i < p.size(); ++i)
        rows.push_back({p.id[i], p.sim_tier[i] == SimTier::Coarse,
                        world->lanes().fragment_of(p.lane[i], p.s_m[i])});
    }
  } hook;
  hook.world = w.get();
  REQUIRE(w->submit(env(1, SetPedestrianTarget{target})) == SubmitStatus::Queued);
  step_hooked(*w, hook);
  const std::vector<LaneFragment>& frags = w->lanes().fragments();
  const std::vector<double> share = ledger_shares(*w, target);
  std::vector<std::uint32_t> actual(frags.size(), 0);
  for (const Row& r : hook.rows)
    if (r.fragment != LaneGraph::kNoFragment) ++actual[r.fragment];
  std::vector<EntityId> expected;
  std::vector<bool> taken(hook.rows.size(), false);
  std::size_t off_fragments = 0;
  for (std::uint32_t k = 0; k < std::min(240 - target, cap); ++k) {
    std::size_t worst = frags.size();
    double worst_surplus = 0.0;
    for (std::size_t f = 0; f < frags.size(); ++f) {
      const double surplus = actual[f] - share[f];
      if (actual[f] > 0 && (worst == frags.size() || surplus > worst_surplus)) {
        worst = f;
        worst_surplus = surplus;
      }
    }
    std::size_t pick = hook.rows.size();
    for (std::size_t i = 0; i < hook.rows.size(); ++i) {
      const Row& r = hook.rows[i];
      if (taken[i] || (worst < frags.size() && r.fragment != worst)) continue;
      if (pick == hook.rows.size()) {
        pick = i;
        continue;
      }
      const Row& p = hook.rows[pick];
      if (r.coarse != p.coarse ? r.coarse : p.id < r.id) pick = i;
    }
    REQUIRE(pick < hook.rows.size());
    taken[pick] = true;
    if (worst < frags.size()) --actual[worst];
    off_fragments += hook.rows[pick].fragment == LaneGraph::kNoFragment;
    expected.push_back(hook.rows[pick].id);
  }
  std::vector<EntityId> trimmed;
  for (const DespawnNotice& n : w->despawn_notices())
    if (n.reason == DespawnReason::Overpopulated) trimmed.push_back(n.id);
  std::sort(expected.begin(), expected.end());
  std::sort(trimmed.begin(), trimmed.end());
  CHECK(std::count_if(hook.rows.begin(), hook.rows.end(), [](const Row& r) { return r.coarse; }) >
        0);
  CHECK(trimmed == expected);
  return off_fragments;
}

}  // namespace

TEST_CASE("trimming takes the largest surplus first and Coarse, then the highest id, in it") {
  CHECK(check_trim(60, 1000) == 0);
}

TEST_CASE("trimming to none takes those on crossings last, in the same order") {
  // 238 of 240: the last trims choose among those on crossings (3 here),
  // and which stay shows their order.
  CHECK(check_trim(0, 238) >= 1);
}

TEST_CASE("pedestrians stay on walkable lanes") {
  auto w = make_valid(two_loops(100), 9);
  for (int k = 0; k < 500; ++k) {
    w->step();
    for (std::uint32_t i = 0; i < w->pedestrians().size(); ++i) {
      const Lane& lane = w->lanes().lane(w->pedestrians().lane[i]);
      REQUIRE(is_pedestrian_lane(lane.kind));
      REQUIRE(w->pedestrians().s_m[i] >= 0.0);
      REQUIRE(w->pedestrians().s_m[i] <= lane.length_m);
    }
  }
}

TEST_CASE("an invalid scenario creates no world and reports every error") {
  Scenario s = two_loops(10);
  s.lanes[0].successors.push_back("missing");
  s.step_us = 0;
  auto created = World::create(s, 1);
  CHECK_FALSE(created.world);
  CHECK(created.errors.size() == 2);
}

TEST_CASE("progress over time is the same in every tier, across lane ends and corners") {
  // Full moves every step; Coarse (no observer) moves every 8th step by 8
  // steps' worth of time, carrying what is left over across lane ends and
  // corners.
  Scenario s = two_lane_loop("test.tiers", 1);
  s.entity_capacity = 4;
  Scenario full = s;
  full.observers = {{1.0, 1.0}};
  auto wf = make_valid(full, 4);
  auto wc = make_valid(s, 4);  // same seed: same spawn lane and distance
  wf->step();
  wc->step();
  REQUIRE(wf->pedestrians().sim_tier[0] == SimTier::Full);
  REQUIRE(wc->pedestrians().sim_tier[0] == SimTier::Coarse);
  const double t0_full = time_on_loop(*wf, 0);
  const double t0_coarse = time_on_loop(*wc, 0);
  int due_steps = 0;
  for (int k = 0; k < 800; ++k) {
    const std::uint64_t before = wc->pedestrians().hops[0] * 1000000ull +
                                 static_cast<std::uint64_t>(wc->pedestrians().s_m[0] * 1000);
    wf->step();
    wc->step();
    const std::uint64_t after = wc->pedestrians().hops[0] * 1000000ull +
                                static_cast<std::uint64_t>(wc->pedestrians().s_m[0] * 1000);
    if (after != before) ++due_steps;
    CHECK(wf->pedestrians_due_last_step() == 1);
    CHECK(wc->pedestrians_due_last_step() == (after != before ? 1u : 0u));
    // Full: exactly 0.1 s of travel per step.
    REQUIRE(time_on_loop(*wf, 0) - t0_full == Approx(0.1 * (k + 1)).margin(1e-6));
    // Coarse: exactly 0.8 s per due step, and never more than 0.8 s from Full.
    REQUIRE(time_on_loop(*wc, 0) - t0_coarse == Approx(0.8 * due_steps).margin(1e-6));
    REQUIRE(std::abs((time_on_loop(*wc, 0) - t0_coarse) - (time_on_loop(*wf, 0) - t0_full)) <=
            0.8 + 1e-6);
  }
  CHECK(due_steps == 100);
  CHECK(wc->pedestrians().hops[0] > 15);  // many lane ends and corners crossed
}

TEST_CASE("equal progress: through tier changes a row has walked the steps since it was placed") {
  // Seed 001's invariant, checked every step for every row: travel time since
  // a row was placed = dt x (steps its pose stands at now - when placed), and
  // a client that extrapolates a row by its steps since it moved puts it
  // where an all-Full world has the same row. An observer walks between Full,
  // Simulated and Coarse range, so rows change tier between due steps.
  Scenario s = two_lane_loop("test.equal-progress", 48);
  s.pedestrians.spawn_per_step_max = 48;
  s.entity_capacity = 64;
  s.despawn.out_of_range_m = 0.0;  // far rows stay
  s.tiers.pedestrian_resolve_every_steps = 1;
  Scenario full = s;
  full.observers = {{1.0, 1.0}};
  auto wt = make_valid(s, 9);
  auto wf = make_valid(full, 9);  // same seed: the same rows placed at the same points
  const double dt_s = s.step_us * 1e-6;
  // Where each row stands (in steps) and its time on the loop when first seen.
  std::map<EntityId, std::pair<std::int64_t, double>> placed;
  const double observer_y_m[] = {0.0, 200.0, 2000.0, 200.0, 0.0, 2000.0};
  std::uint32_t request = 0, tier_changes = 0, lagging_changes = 0;
  std::map<EntityId, SimTier> last_tier;
  for (int k = 1; k <= 600; ++k) {
    if (k % 7 == 1) {  // a new observer place every 7 steps (not a stride's multiple)
      const double y = observer_y_m[(k / 7) % 6];
      REQUIRE(wt->submit(env(++request, SetObservers{{{1.0, y}}})) == SubmitStatus::Queued);
    }
    if (k == 301) {  // the catch-ups are in a checkpoint: a restored world walks on the same
      auto restored = World::restore(s, wt->capture());
      REQUIRE(restored.world);
      wt = std::move(restored.world);
    }
    wt->step();
    wf->step();
    REQUIRE(wt->check_invariants().ok());
    const PedestrianStore& p = wt->pedestrians();
    REQUIRE(p.size() == 48);
    REQUIRE(wf->pedestrians().size() == 48);
    for (std::uint32_t i = 0; i < p.size(); ++i) {
      const EntityId id = p.id[i];
      const std::uint32_t since = wt->pedestrian_steps_since_moved(i);
      const std::int64_t stands_at = k - static_cast<std::int64_t>(since);
      const double t = time_on_loop(*wt, i);
      auto [it, first] = placed.try_emplace(id, stands_at, t);
      CHECK(t - it->second.second ==
            Approx(dt_s * static_cast<double>(stands_at - it->second.first)).margin(1e-9));
      // The row extrapolated by its steps since it moved is the all-Full row.
      const std::uint32_t f = wf->pedestrians().dense_of[id.index];
      REQUIRE(f != PedestrianStore::kNoSlot);
      CHECK(t + dt_s * since == Approx(time_on_loop(*wf, f)).margin(1e-9));
      auto [lt, seen] = last_tier.try_emplace(id, p.sim_tier[i]);
      if (!seen && lt->second != p.sim_tier[i]) {
        ++tier_changes;
        lagging_changes += since > 0;
        lt->second = p.sim_tier[i];
      }
    }
  }
  CHECK(tier_changes > 500);     // every row changed tier many times
  CHECK(lagging_changes > 100);  // and often between two of its due steps
}

TEST_CASE(
    "ForceFull over the socket-level command: accepted up to the hard cap, refused and counted "
    "beyond") {
  Scenario s = two_loops(6);
  s.tiers.full_cap = 0;
  s.tiers.hard_full_cap = 2;
  s.tiers.pedestrian_resolve_every_steps = 1;
  auto w = make_valid(s, 3);
  w->step();
  REQUIRE(w->pedestrians().size() == 6);
  const EntityId a = w->pedestrians().id[0], b = w->pedestrians().id[1], c = w->pedestrians().id[2];
  REQUIRE(w->submit(env(1, ForceFull{a, true})) == SubmitStatus::Queued);
  REQUIRE(w->submit(env(2, ForceFull{b, true})) == SubmitStatus::Queued);
  REQUIRE(w->submit(env(3, ForceFull{c, true})) == SubmitStatus::Queued);
  w->step();
  const auto res = w->last_command_results();
  REQUIRE(res.size() == 3);
  CHECK(res[0].status == CommandStatus::Accepted);
  CHECK(res[1].status == CommandStatus::Accepted);
  CHECK(res[2].status == CommandStatus::Rejected);
  CHECK(res[2].message.find("hard safety cap") != std::string::npos);
  CHECK(w->force_full_refused() == 1);
  auto tier_of = [&](EntityId id) {
    return w->pedestrians().sim_tier[w->pedestrians().dense_of[id.index]];
  };
  CHECK(tier_of(a) == SimTier::Full);
  CHECK(tier_of(b) == SimTier::Full);
  CHECK(tier_of(c) != SimTier::Full);
  CHECK(w->pedestrian_tiers().forced == 2);
  REQUIRE(w->submit(env(4, ForceFull{a, false})) == SubmitStatus::Queued);
  w->step();
  w->step();
  CHECK(tier_of(a) != SimTier::Full);  // full_cap 0: demoted once released
  // A checkpoint carries the forced set and the refusal count.
  auto r = World::restore(s, w->capture());
  REQUIRE(r.world);
  CHECK(r.world->forced_full() == w->forced_full());
  CHECK(r.world->force_full_refused() == 1);
}

TEST_CASE("swap-remove moves the last pedestrian into the hole and the free list is reused") {
  Scenario s = two_loops(6);
  s.entity_capacity = 7;
  s.lanes[0].successors = {"w2"};  // no dead ends: only requested despawns
  s.lanes[3].successors = {"e"};
  auto w = make_valid(s, 4);
  w->step();
  REQUIRE(w->pedestrians().size() == 6);
  const PedestrianStore& p = w->pedestrians();
  const EntityId victim = p.id[1];
  const EntityId last = p.id[5];
  // No observer: everyone is Coarse (off-screen), so the despawn skips the fade.
  REQUIRE(w->submit(env(1, DespawnEntity{victim})) == SubmitStatus::Queued);
  w->step();
  REQUIRE_FALSE(w->registry().is_alive(victim));
  CHECK(p.id[1] == last);
  CHECK(p.dense_of[last.index] == 1);
  CHECK(p.dense_of[victim.index] == PedestrianStore::kNoSlot);
  // The refill takes the never-used slot first, then (after another release)
  // the victim's slot with a new generation: reuse as late as possible.
  REQUIRE(w->pedestrians().size() == 5);
  w->step();
  REQUIRE(w->pedestrians().size() == 6);
  CHECK(w->registry().free_count() == 1);
  REQUIRE(w->submit(env(2, DespawnEntity{p.id[0]})) == SubmitStatus::Queued);
  w->step();
  w->step();
  bool reused = false;
  for (const EntityId id : p.id)
    reused = reused || (id.index == victim.index && id.generation == victim.generation + 1);
  CHECK(reused);
  CHECK(w->check_invariants().ok());
}

TEST_CASE(
    "client observers rank tiers beside the scenario's, apart from SetObservers, in digest and "
    "checkpoint") {
  Scenario s = two_loops(30);
  s.observers = {{1000.0, 1000.0}};  // far from everyone: Coarse
  s.tiers.pedestrian_resolve_every_steps = 1;
  auto w = make_valid(s, 5);
  auto plain = make_valid(s, 5);
  auto full_count = [](const World& world) {
    return world.pedestrian_tiers().per_tier[static_cast<int>(SimTier::Full)];
  };
  for (int k = 0; k < 3; ++k) {
    w->step();
    plain->step();
  }
  REQUIRE(w->pedestrians().size() == 30);
  CHECK(full_count(*w) == 0);
  CHECK(w->digest() == plain->digest());  // an empty client set adds nothing

  REQUIRE(w->submit(env(1, SetClientObservers{{{10.0, 5.0, 0.0, false, 0.0},
                                               {40.0, 5.0, 0.0, false, 0.0}}})) ==
          SubmitStatus::Queued);
  w->step();
  plain->step();
  CHECK(w->last_command_results()[0].status == CommandStatus::Accepted);
  w->step();
  plain->step();
  CHECK(full_count(*w) == 30);  // every lane point is within 12 m of (10, 5) or (40, 5)
  CHECK(full_count(*plain) == 0);
  CHECK(w->digest() != plain->digest());
  CHECK(w->client_observers().size() == 2);
  CHECK(w->check_invariants().ok());

  // SetObservers replaces the scenario / operator set only.
  REQUIRE(w->submit(env(2, SetObservers{{{900.0, 900.0}}})) == SubmitStatus::Queued);
  w->step();
  CHECK(w->observers().size() == 1);
  CHECK(w->client_observers().size() == 2);
  CHECK(full_count(*w) == 30);

  // A checkpoint carries the set: restore + continue gives the same chain.
  auto r = World::restore(s, w->capture());
  if (!r.errors.empty()) FAIL(r.errors[0].path << ": " << r.errors[0].message);
  for (int k = 0; k < 4; ++k) {
    w->step();
    r.world->step();
    CHECK(r.world->digest() == w->digest());
  }

  // Bounded; an empty set gives the tiers back to the scenario's observers.
  SetClientObservers too_many;
  too_many.points.assign(kClientObserversMax + 1, ObserverPoint{});
  REQUIRE(w->submit(env(3, too_many)) == SubmitStatus::Queued);
  REQUIRE(w->submit(env(4, SetClientObservers{})) == SubmitStatus::Queued);
  w->step();
  CHECK(w->last_command_results()[0].status == CommandStatus::Rejected);
  CHECK(w->last_command_results()[0].message.find("client observers") != std::string::npos);
  CHECK(w->last_command_results()[1].status == CommandStatus::Accepted);
  w->step();
  CHECK(w->client_observers().empty());
  CHECK(full_count(*w) == 0);
}

TEST_CASE("a step phase hook hears each phase once per step, in order, and changes no digest") {
  struct Recorder final : StepPhaseHook {
    std::vector<StepPhase> heard;
    void phase_end(StepPhase phase) override { heard.push_back(phase); }
  };
  const Scenario s = two_loops(40);
  auto plain = make_valid(s, 7);
  auto hooked = make_valid(s, 7);
  Recorder rec;
  hooked->set_phase_hook(&rec);
  for (int k = 0; k < 30; ++k) {
    rec.heard.clear();
    plain->step();
    hooked->step();
    REQUIRE(hooked->digest() == plain->digest());
    REQUIRE(rec.heard.size() == kStepPhaseCount);
    for (std::size_t p = 0; p < kStepPhaseCount; ++p) {
      CHECK(rec.heard[p] == static_cast<StepPhase>(p));
      CHECK(std::string(to_string(rec.heard[p])) != "?");
    }
  }
  hooked->set_phase_hook(nullptr);
  rec.heard.clear();
  hooked->step();
  CHECK(rec.heard.empty());
}
