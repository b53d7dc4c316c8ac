#include <catch2/catch.hpp>

#include "../support/completeness_guard.hpp"
#include "bustle/core/world.hpp"

using namespace bustle::core;
using bustle::test::ScriptedCommand;

namespace {

// The walking-skeleton city in code (same shape as configs/default.city.json).
Scenario default_like() {
  Scenario s;
  s.id = "test.default-like";
  s.lanes = {
      {"west.south",
       LaneKind::Sidewalk,
       {{0, 0}, {80, 0}, {80, 30}},
       1.4,
       {"west.north", "cross.east"}},
      {"west.north",
       LaneKind::Sidewalk,
       {{80, 30}, {80, 60}, {0, 60}, {0, 0}},
       1.4,
       {"west.south"}},
      {"east.loop",
       LaneKind::Sidewalk,
       {{100, 30}, {100, 0}, {180, 0}, {180, 60}, {100, 60}, {100, 30}},
       1.3,
       {"east.loop", "cross.west", "dead"}},
      {"cross.east", LaneKind::Crossing, {{80, 31}, {100, 31}}, 1.2, {"east.loop"}},
      {"cross.west", LaneKind::Crossing, {{100, 29}, {80, 29}}, 1.2, {"west.north"}},
      {"dead", LaneKind::Sidewalk, {{100, 30}, {100, 40}}, 1.4, {}},  // churn: LaneDeadEnd despawns
  };
  s.pedestrians.count = 120;
  s.pedestrians.spawn_per_step_max = 8;
  s.entity_capacity = 512;
  return s;
}

std::vector<ScriptedCommand> script() {
  return {
      {25, SetPedestrianTarget{60}},
      {25, DespawnEntity{EntityId{3, 1}}},
      {80, SetPedestrianTarget{150}},
      {80, SetPedestrianTarget{999999}},  // rejected: still part of the state/counters
      {140, DespawnEntity{EntityId{5, 1}}},
      {150, ForceFull{EntityId{9, 1}, true}},
      {200, ForceFull{EntityId{9, 1}, false}},
  };
}

}  // namespace

TEST_CASE("completeness guard: restore at several steps continues the same digest chain") {
  bustle::test::check_checkpoint_completeness(default_like(), 11, script(), 400,
                                              {0, 1, 7, 25, 80, 81, 140, 160, 399});
}

TEST_CASE("a checkpoint's digest is the digest of the state it holds") {
  auto w = std::move(World::create(default_like(), 3).world);
  for (int k = 0; k < 50; ++k) w->step();
  const WorldCheckpoint cp = w->capture();
  CHECK(cp.digest == w->digest());
  CHECK(cp.step_index == 50);
  CHECK(cp.pedestrians.id.size() == w->pedestrians().size());
}

TEST_CASE("restore validates and names the failing field and builds nothing on failure") {
  auto w = std::move(World::create(default_like(), 3).world);
  for (int k = 0; k < 30; ++k) w->step();
  const WorldCheckpoint good = w->capture();
  const std::uint64_t live_digest = w->digest();
  REQUIRE(World::restore(default_like(), good).world);

  auto expect = [&](WorldCheckpoint cp, const std::string& path, const std::string& fragment) {
    auto r = World::restore(default_like(), cp);
    CHECK_FALSE(r.world);
    REQUIRE_FALSE(r.errors.empty());
    INFO("got " << r.errors[0].path << ": " << r.errors[0].message);
    CHECK(r.errors[0].path == path);
    CHECK(r.errors[0].message.find(fragment) != std::string::npos);
  };

  SECTION("other scenario") {
    WorldCheckpoint cp = good;
    cp.scenario_id = "other";
    expect(cp, "scenario_id", "'other'");
  }
  SECTION("duplicate pedestrian id") {
    WorldCheckpoint cp = good;
    cp.pedestrians.id[1] = cp.pedestrians.id[0];
    expect(cp, "pedestrians[1].id", "duplicate");
  }
  SECTION("dangling lane reference") {
    WorldCheckpoint cp = good;
    cp.pedestrians.lane[2] = 99;
    expect(cp, "pedestrians[2].lane", "does not exist");
  }
  SECTION("distance out of range") {
    WorldCheckpoint cp = good;
    cp.pedestrians.s_m[0] = -1.0;
    expect(cp, "pedestrians[0].s_m", "outside lane");
  }
  SECTION("identity not alive in the registry") {
    WorldCheckpoint cp = good;
    cp.pedestrians.id[0].generation += 1;
    expect(cp, "pedestrians[0].id", "not alive");
  }
  SECTION("registry free list corrupt") {
    WorldCheckpoint cp = good;
    cp.registry.free_fifo[1] = cp.registry.free_fifo[0];
    expect(cp, "registry.free_fifo[1]", "appears twice");
  }
  SECTION("column lengths differ") {
    WorldCheckpoint cp = good;
    cp.pedestrians.hops.pop_back();
    expect(cp, "pedestrians", "column lengths differ");
  }
  SECTION("a catch-up out of range, or one that puts a row ahead of the step") {
    WorldCheckpoint cp = good;
    cp.pedestrians.catch_up_steps[0] = kMaxCatchUpSteps + 1;
    expect(cp, "pedestrians[0].catch_up_steps", "8 is outside [-7, 7]");
    // A row steps_since_due after its last due step cannot stand further back.
    cp = good;
    std::size_t i = 0;
    auto since = [&](std::size_t row) {
      return static_cast<int>(steps_since_due(cp.step_index, id_phase(cp.pedestrians.id[row]),
                                              cp.pedestrians.sim_tier[row]));
    };
    while (since(i) >= kMaxCatchUpSteps) ++i;
    cp.pedestrians.catch_up_steps[i] = static_cast<std::int8_t>(-since(i) - 1);
    expect(cp, "pedestrians[" + std::to_string(i) + "].catch_up_steps", "ahead of the step");
  }
  SECTION("a row that fails after its first columns were appended") {
    // Found by the SQLite-aware fuzzer: the resident count after the rows
    // read the partial row's missing columns.
    WorldCheckpoint cp = good;
    cp.pedestrians.sim_tier[5] = static_cast<SimTier>(7);
    expect(cp, "pedestrians[5].tier", "unknown simulation tier 7");
  }
  SECTION("a value altered within range is caught by the digest") {
    WorldCheckpoint cp = good;
    cp.pedestrians.s_m[0] = cp.pedestrians.s_m[0] * 0.5;
    expect(cp, "digest", "altered");
  }
  // The live world is never touched by any of this.
  CHECK(w->digest() == live_digest);
  CHECK(w->compute_digest() == live_digest);
}
