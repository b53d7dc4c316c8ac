// District worlds (world_districts.cpp): a generated city split in strips,
// one World per district, stepped in neighbour lockstep in this process the
// way district servers step over sockets: what district e sent at step k is
// submitted to its receiver as BorderArrivals before step k + 1.
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "bustle/citygen/cities.hpp"
#include "bustle/core/prng.hpp"
#include "bustle/core/world.hpp"

using namespace bustle::core;

namespace {

// The district city with brisk walkers (10 m/s: a 100 m sidewalk in 100
// steps), so pedestrians cross borders many times in a short test.
Scenario brisk_city(std::uint32_t n, std::uint32_t districts, std::uint32_t pedestrians) {
  Scenario s = bustle::citygen::district_city(n, districts, pedestrians, 0);
  for (LaneSpec& l : s.lanes) {
    if (is_pedestrian_lane(l.kind)) l.speed_mps_limit = 10.0;
  }
  return s;
}

std::uint64_t district_seed(std::uint64_t seed, std::size_t d) {
  return seed + 0x9E3779B97F4A7C15ull * (d + 1);
}

struct StepRecord {
  std::vector<CommandEnvelope> commands;  // what the district was given before the step
  std::uint64_t digest = 0;               // its digest after the step
};

// The whole city in lockstep, each district's inputs and digests recorded.
class LockstepCity {
 public:
  LockstepCity(const Scenario& city, std::uint64_t seed) {
    for (std::size_t d = 0; d < city.districts.size(); ++d) {
      Scenario s = city;
      s.own_district = static_cast<std::int32_t>(d);
      auto created = World::create(s, district_seed(seed, d));
      REQUIRE(created.errors.empty());
      worlds_.push_back(std::move(created.world));
    }
    recordings_.resize(worlds_.size());
  }

  // One step of every district; returns the pedestrians in transit after it.
  std::size_t step() {
    const std::size_t n = worlds_.size();
    std::vector<std::vector<CommandEnvelope>> inbound(n);
    for (std::size_t from = 0; from < n; ++from) {
      std::vector<BorderArrivals> out(n);
      for (const BorderDeparture& dep : worlds_[from]->border_departures())
        out[dep.to_district].pedestrians.push_back(dep.pedestrian);
      for (const BorderReturn& back : worlds_[from]->border_returns())
        out[back.to_district].returned.push_back(back.id);
      returned_ += worlds_[from]->border_returns().size();
      for (std::size_t to = 0; to < n; ++to) {
        if (out[to].pedestrians.empty() && out[to].returned.empty()) continue;
        out[to].from_district = static_cast<std::uint32_t>(from);
        out[to].sent_step = worlds_[from]->step_index();
        inbound[to].push_back({{}, std::move(out[to])});
      }
    }
    for (std::size_t d = 0; d < n; ++d) {
      StepRecord rec;
      for (CommandEnvelope& env : inbound[d]) {
        rec.commands.push_back(env);
        REQUIRE(worlds_[d]->submit(std::move(env)) == SubmitStatus::Queued);
      }
      worlds_[d]->step();
      for (const CommandResult& r : worlds_[d]->last_command_results()) {
        INFO(r.message);
        REQUIRE(r.status == CommandStatus::Accepted);
      }
      rec.digest = worlds_[d]->digest();
      recordings_[d].push_back(std::move(rec));
    }
    std::size_t transit = 0;
    for (const auto& w : worlds_) transit += w->border_departures().size();
    crossings_ += transit;
    return transit;
  }

  // Every slot of the city's registries is alive or free in exactly one
  // district, or in transit (a pedestrian crossing or an id going home: away
  // everywhere, counted once); and every district's free ids are its own.
  void check_conservation() const {
    const std::uint32_t cap = worlds_[0]->registry().capacity();
    std::vector<std::uint8_t> holders(cap, 0);
    for (std::size_t d = 0; d < worlds_.size(); ++d) {
      const World& w = *worlds_[d];
      for (std::uint32_t i = 0; i < cap; ++i) holders[i] += !w.registry().slot_away(i);
      for (const BorderDeparture& dep : w.border_departures()) ++holders[dep.pedestrian.id.index];
      for (const BorderReturn& back : w.border_returns()) ++holders[back.id.index];
      w.registry().for_each_free([&](std::uint32_t i) {
        INFO("district " << d << " holds free slot " << i);
        REQUIRE(w.home_district(i) == static_cast<std::int32_t>(d));
      });
    }
    for (std::uint32_t i = 0; i < cap; ++i) {
      INFO("slot " << i);
      REQUIRE(holders[i] == 1);
    }
    for (const auto& w : worlds_) REQUIRE(w->check_invariants().ok());
  }

  std::uint64_t city_digest() const {
    std::uint64_t h = 0xC17Dull;
    for (std::size_t d = 0; d < worlds_.size(); ++d)
      h = mix64(h ^ mix64(d + 1) ^ worlds_[d]->digest());
    return h;
  }

  std::uint32_t pedestrians() const {
    std::uint32_t sum = 0;
    for (const auto& w : worlds_) sum += w->pedestrians().size();
    return sum;
  }
  const World& world(std::size_t d) const { return *worlds_[d]; }
  const std::vector<StepRecord>& recording(std::size_t d) const { return recordings_[d]; }
  std::uint64_t crossings() const { return crossings_; }
  std::uint64_t returned() const { return returned_; }

 private:
  std::vector<std::unique_ptr<World>> worlds_;
  std::vector<std::vector<StepRecord>> recordings_;
  std::uint64_t crossings_ = 0;
  std::uint64_t returned_ = 0;
};

}  // namespace

TEST_CASE("district worlds: every id in exactly one district, across 2 and 4 districts") {
  const std::uint32_t districts = GENERATE(2u, 4u);
  const Scenario city = brisk_city(8, districts, 600);
  LockstepCity run(city, 7);
  std::uint32_t targets = 0;
  for (std::size_t d = 0; d < districts; ++d) targets += run.world(d).pedestrian_target();
  CHECK(targets >= 599);
  CHECK(targets <= 601);  // the shares by sidewalk length add up to the city's target
  for (int k = 0; k < 1500; ++k) {
    const std::size_t transit = run.step();
    if (k % 50 == 49) run.check_conservation();
    // The population: who walks in a district plus who is between two.
    if (k > 200) CHECK(run.pedestrians() + transit >= targets - 40);
  }
  run.check_conservation();
  CHECK(run.crossings() > 500);
  CHECK(run.returned() > 0);  // pedestrians that crossed left the city and their ids went home
}

TEST_CASE("district worlds: each district replays alone from its own recording") {
  const Scenario city = brisk_city(8, 4, 400);
  LockstepCity run(city, 11);
  for (int k = 0; k < 800; ++k) run.step();
  REQUIRE(run.crossings() > 100);
  for (std::size_t d = 0; d < 4; ++d) {
    Scenario s = city;
    s.own_district = static_cast<std::int32_t>(d);
    auto created = World::create(s, district_seed(11, d));
    REQUIRE(created.errors.empty());
    World& alone = *created.world;
    const std::vector<StepRecord>& rec = run.recording(d);
    for (std::size_t k = 0; k < rec.size(); ++k) {
      for (const CommandEnvelope& env : rec[k].commands) alone.submit(env);
      alone.step();
      INFO("district " << d << " step " << alone.step_index());
      REQUIRE(alone.digest() == rec[k].digest);
    }
  }
}

TEST_CASE("district worlds: two runs with the same districts and seeds agree at every step") {
  const Scenario city = brisk_city(6, 2, 300);
  LockstepCity a(city, 5), b(city, 5);
  for (int k = 0; k < 600; ++k) {
    a.step();
    b.step();
    REQUIRE(a.city_digest() == b.city_digest());
  }
  LockstepCity other_seed(city, 6);
  for (int k = 0; k < 50; ++k) other_seed.step();
  for (int k = 0; k < 50; ++k) a.step();
  CHECK(other_seed.city_digest() != a.city_digest());
}

TEST_CASE("district worlds: border arrivals are checked before anything changes") {
  const Scenario city = brisk_city(6, 2, 200);
  LockstepCity run(city, 3);
  for (int k = 0; k < 300; ++k) run.step();
  Scenario s = city;
  s.own_district = 1;
  auto created = World::create(s, 99);
  REQUIRE(created.errors.empty());
  World& w = *created.world;
  for (int k = 0; k < 5; ++k) w.step();
  // A lane of district 1 and an id district 0 owns (away here).
  const auto sidewalk_of = [&](std::int32_t d) {
    LaneIndex l = 0;
    while (w.lane_district(l) != d || !is_pedestrian_lane(w.lanes().lane(l).kind)) ++l;
    return l;
  };
  const LaneIndex own_lane = sidewalk_of(1), foreign_lane = sidewalk_of(0);
  const EntityId away{0, 1};
  REQUIRE(w.registry().slot_away(0));
  const EntityId here = w.pedestrians().id.front();
  struct Case {
    const char* what;
    BorderArrivals c;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"from itself", {1, 5, {{away, own_lane, 0.0, 0}}, {}}, "from_district"},
      {"from no district", {7, 5, {{away, own_lane, 0.0, 0}}, {}}, "from_district"},
      {"onto a foreign lane", {0, 5, {{away, foreign_lane, 0.0, 0}}, {}}, ".lane"},
      {"an id living here", {0, 5, {{here, own_lane, 0.0, 0}}, {}}, "not away"},
      {"time out of range", {0, 5, {{away, own_lane, -1.0, 0}}, {}}, "time_left_s"},
      {"an id twice", {0, 5, {{away, own_lane, 0.0, 0}, {away, own_lane, 0.1, 0}}, {}}, "twice"},
      {"an id both arriving and going home", {0, 5, {{away, own_lane, 0.0, 0}}, {away}}, "twice"},
      {"a living id going home", {0, 5, {}, {here}}, "returned[0]"},
  };
  for (const Case& bad : cases) {
    INFO(bad.what);
    REQUIRE(w.submit({{}, bad.c}) == SubmitStatus::Queued);
    w.step();
    REQUIRE(w.last_command_results().size() == 1);
    const CommandResult& r = w.last_command_results()[0];
    CHECK(r.status == CommandStatus::Rejected);
    CHECK(r.reason == RejectReason::InvalidArgument);
    CHECK_THAT(r.message, Catch::Contains(bad.message));
    CHECK(w.registry().slot_away(0));  // nothing of the batch was placed
  }
  // The same arrival, well formed, is placed with its id.
  REQUIRE(w.submit({{}, BorderArrivals{0, 5, {{away, own_lane, 0.05, 3}}, {}}}) ==
          SubmitStatus::Queued);
  w.step();
  REQUIRE(w.last_command_results()[0].status == CommandStatus::Accepted);
  CHECK(w.registry().is_alive(away));
  CHECK(w.describe(away).lifecycle == LifecycleState::Active);
  CHECK(w.check_invariants().ok());
}

TEST_CASE("district worlds: a whole-city world refuses border arrivals") {
  Scenario s = brisk_city(6, 2, 50);
  auto created = World::create(s, 1);
  REQUIRE(created.errors.empty());
  created.world->submit({{}, BorderArrivals{0, 1, {}, {}}});
  created.world->step();
  CHECK(created.world->last_command_results()[0].status == CommandStatus::Rejected);
}

TEST_CASE("district worlds: the scenario says which cities a district server can run") {
  Scenario s = brisk_city(6, 2, 50);
  s.own_district = 2;
  auto created = World::create(s, 1);
  REQUIRE(created.errors.size() == 1);
  CHECK(created.errors[0].path == "own_district");
  Scenario with_cars = bustle::citygen::district_city(6, 2, 50, 20);
  with_cars.own_district = 0;
  created = World::create(with_cars, 1);
  REQUIRE(created.errors.size() == 1);
  CHECK(created.errors[0].path == "garages");
  CHECK_THAT(created.errors[0].message, Catch::Contains("does not run garages"));
  Scenario no_map = brisk_city(6, 1, 50);
  no_map.districts.clear();
  no_map.own_district = 0;
  created = World::create(no_map, 1);
  REQUIRE(created.errors.size() == 1);
  CHECK(created.errors[0].path == "own_district");
}

TEST_CASE("district worlds: a checkpoint restores a district, away ids included") {
  const Scenario city = brisk_city(8, 2, 400);
  LockstepCity run(city, 13);
  for (int k = 0; k < 400; ++k) run.step();
  const WorldCheckpoint cp = run.world(0).capture();
  REQUIRE(run.world(0).registry().away_count() > 0);
  Scenario s = city;
  s.own_district = 0;
  auto restored = World::restore(s, cp);
  for (const RestoreError& e : restored.errors) INFO(e.path << ": " << e.message);
  REQUIRE(restored.errors.empty());
  World& w = *restored.world;
  CHECK(w.digest() == run.world(0).digest());
  // The restored district goes on exactly as the running one, given its inputs.
  for (int k = 0; k < 200; ++k) run.step();
  const std::vector<StepRecord>& rec = run.recording(0);
  for (std::size_t k = 400; k < rec.size(); ++k) {
    for (const CommandEnvelope& env : rec[k].commands) w.submit(env);
    w.step();
    INFO("step " << w.step_index());
    REQUIRE(w.digest() == rec[k].digest);
  }
}
