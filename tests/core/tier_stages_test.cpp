// The three tier stages of one entity (World::describe, QueryEntity):
// requested_tier (stage 1, distance), capacity_tier (stage 2, the caps, as
// of its last resolution) and tier (applied, after the transition budget).
// capacity_tier is a derived observation (sim_tier.hpp): not digested, not
// checkpointed, the applied tier right after a restore.
#include <catch2/catch.hpp>

#include "bustle/core/world.hpp"
#include "commands/command_test_support.hpp"

using namespace bustle::core;

namespace {

using test::apply_one;
using test::load;
using test::make;

struct Stages {
  std::uint32_t capacity_full = 0, capacity_sim = 0;
  std::uint32_t near_not_full = 0;   // distance asks Full, capacity says otherwise
  std::uint32_t held_by_budget = 0;  // capacity target differs from the applied tier
  std::uint32_t rows = 0;
};

Stages pedestrian_stages(const World& w) {
  Stages s;
  for (const EntityId id : w.pedestrians().id) {
    const EntityReport e = w.describe(id);
    ++s.rows;
    s.capacity_full += e.capacity_tier == SimTier::Full;
    s.capacity_sim += e.capacity_tier == SimTier::Simulated;
    s.near_not_full += e.requested_tier == SimTier::Full && e.capacity_tier != SimTier::Full;
    s.held_by_budget += e.capacity_tier != e.tier;
  }
  return s;
}

}  // namespace

TEST_CASE("capacity_tier: the caps' choice per pedestrian, apart from distance and budget") {
  Scenario s = load("largeblock.city.json");
  s.tiers.full_cap = 4;
  s.tiers.simulated_cap = 8;
  s.tiers.transitions_per_step = 1;
  s.tiers.pedestrian_resolve_every_steps = 1;  // one slice: every row each step
  auto w = make(s);
  for (int k = 0; k < 200; ++k) w->step();
  Stages st = pedestrian_stages(*w);
  REQUIRE(st.rows > 12);
  // One slice, resolved this step: its targets keep to the caps exactly.
  CHECK(st.capacity_full == 4);
  CHECK(st.capacity_sim == 8);
  CHECK(st.near_not_full > 0);  // the cap, not the distance, keeps them out of Full

  // Far observer: every target drops to Coarse at once, while the budget
  // applies one change per step.
  REQUIRE(apply_one(*w, SetObservers{{ObserverPoint{80, 100000}}, {}}).status ==
          CommandStatus::Accepted);
  st = pedestrian_stages(*w);
  CHECK(st.capacity_full == 0);
  CHECK(st.capacity_sim == 0);
  CHECK(st.held_by_budget >= 11);  // 12 were above Coarse, one moved
  REQUIRE(w->check_invariants().ok());
}

TEST_CASE("capacity_tier is derived: not digested, the applied tier after a restore") {
  Scenario s = load("largeblock.city.json");
  s.tiers.full_cap = 4;
  s.tiers.transitions_per_step = 1;
  auto w = make(s);
  for (int k = 0; k < 200; ++k) w->step();
  REQUIRE(apply_one(*w, SetObservers{{ObserverPoint{80, 100000}}, {}}).status ==
          CommandStatus::Accepted);
  REQUIRE(pedestrian_stages(*w).held_by_budget > 0);
  auto back = World::restore(s, w->capture());
  REQUIRE(back.world);
  CHECK(back.world->digest() == w->digest());
  // Right after the restore nothing was resolved yet: it shows the applied tier.
  CHECK(pedestrian_stages(*back.world).held_by_budget == 0);
  // Each slice is resolved again within pedestrian_resolve_every_steps steps;
  // from then on both worlds show the same targets, and the digests never differed.
  for (std::uint32_t k = 0; k < s.tiers.pedestrian_resolve_every_steps; ++k) {
    w->step();
    back.world->step();
    REQUIRE(back.world->digest() == w->digest());
  }
  for (const EntityId id : w->pedestrians().id)
    CHECK(back.world->describe(id).capacity_tier == w->describe(id).capacity_tier);
}

TEST_CASE("capacity_tier of vehicles: recorded at their resolution, restored as applied") {
  Scenario s = load("corridor.city.json");
  s.observer_follow = ObserverFollow::None;  // the test places the observer
  s.tiers.vehicle_resolve_every_steps = 1;
  s.tiers.transitions_per_step = 1;
  auto w = make(s);
  for (int k = 0; k < 150; ++k) w->step();
  REQUIRE(w->vehicles().store().size() >= 3);
  REQUIRE(apply_one(*w, SetObservers{{ObserverPoint{0, 100000}}, {}}).status ==
          CommandStatus::Accepted);
  std::uint32_t held = 0;
  for (const EntityId id : w->vehicles().store().id) {
    const EntityReport e = w->describe(id);
    CHECK(e.capacity_tier == SimTier::Coarse);  // distance asks Coarse: the caps agree
    held += e.tier != SimTier::Coarse;
  }
  CHECK(held > 0);  // the budget (one change a step) holds the rest
  auto back = World::restore(s, w->capture());
  REQUIRE(back.world);
  CHECK(back.world->digest() == w->digest());
  for (const EntityId id : back.world->vehicles().store().id)
    CHECK(back.world->describe(id).capacity_tier == back.world->describe(id).tier);
}
