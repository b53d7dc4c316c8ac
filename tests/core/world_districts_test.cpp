// District worlds (world_districts.cpp): a generated city split in strips,
// one World per district, stepped in neighbour lockstep in this process the
// way district servers step over sockets: what district e sent at step k is
// submitted to its receiver as BorderArrivals before step k + 1.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "bustle/citygen/cities.hpp"
#include "bustle/core/prng.hpp"
#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"

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
    extra_.resize(worlds_.size());
  }

  // A command district d takes at its next step, after its border arrivals.
  void submit(std::size_t d, WorldCommand c) { extra_[d].push_back({{}, std::move(c)}); }

  // One step of every district; returns the pedestrians in transit after it.
  std::size_t step() {
    const std::size_t n = worlds_.size();
    std::vector<std::vector<CommandEnvelope>> inbound(n);
    for (std::size_t from = 0; from < n; ++from) {
      returned_ += worlds_[from]->border_returns().size();
      for (std::size_t to = 0; to < n; ++to) {
        if (to == from) continue;
        BorderArrivals out = worlds_[from]->border_message(static_cast<std::uint32_t>(to));
        if (out.pedestrians.empty() && out.returned.empty() && out.vehicles.empty() &&
            out.ghosts.empty() && out.returned_vehicles.empty() && out.crossings.empty())
          continue;
        inbound[to].push_back({{}, std::move(out)});
      }
    }
    for (std::size_t d = 0; d < n; ++d) {
      StepRecord rec;
      for (CommandEnvelope& env : extra_[d]) inbound[d].push_back(std::move(env));
      extra_[d].clear();
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
    for (const auto& w : worlds_) {
      transit += w->border_departures().size() + w->border_vehicles().size();
      vehicle_crossings_ += w->border_vehicles().size();
    }
    crossings_ += transit;
    return transit;
  }

  // Invariant 5 across the city (vehicles.hpp): every vehicle on the road in
  // any district, or crossing (on its receiver's lane already), is at least
  // headway_block_m behind the next one along its route, wherever that one
  // is. A district checks its own rows; only the city sees across borders.
  void check_city_headways() const {
    struct Car {
      EntityId id;
      std::uint32_t garage, route_index;
      LaneIndex lane;
      double s_m;
    };
    std::vector<Car> cars;
    for (const auto& w : worlds_) {
      const VehicleStore& st = w->vehicles().store();
      for (std::uint32_t i = 0; i < st.size(); ++i)
        cars.push_back({st.id[i], st.garage[i], st.route_index[i], st.lane[i], st.s_m[i]});
      for (const BorderVehicleDeparture& v : w->border_vehicles()) {
        cars.push_back(
            {v.vehicle.id, v.vehicle.garage, v.vehicle.route_index, v.vehicle.lane, v.vehicle.s_m});
      }
    }
    const World& w0 = *worlds_[0];
    const Scenario& sc = w0.scenario();
    std::vector<std::vector<std::size_t>> on_lane(w0.lanes().size());
    for (std::size_t k = 0; k < cars.size(); ++k) on_lane[cars[k].lane].push_back(k);
    const double block = sc.vehicle_rules.headway_block_m;
    for (const Car& c : cars) {
      const GarageSpec& g = sc.garages[c.garage];
      double gap = std::numeric_limits<double>::infinity();
      for (const std::size_t k : on_lane[c.lane]) {  // ahead on its own lane
        if (cars[k].id != c.id && cars[k].s_m >= c.s_m) gap = std::min(gap, cars[k].s_m - c.s_m);
      }
      double along = w0.lanes().lane(c.lane).length_m - c.s_m;
      for (std::size_t hop = 1; hop < g.route.size() && along < block && !std::isfinite(gap);
           ++hop) {
        const LaneIndex next = *w0.lanes().find(g.route[(c.route_index + hop) % g.route.size()]);
        for (const std::size_t k : on_lane[next]) {
          if (cars[k].id != c.id) gap = std::min(gap, along + cars[k].s_m);
        }
        along += w0.lanes().lane(next).length_m;
      }
      INFO("vehicle " << c.id.index << " on lane " << c.lane << " at s " << c.s_m);
      REQUIRE(gap >= block - 1e-6);
    }
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
      for (const BorderVehicleDeparture& v : w.border_vehicles()) ++holders[v.vehicle.id.index];
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
    for (const auto& w : worlds_) {
      const Status st = w->check_invariants();
      INFO(st.message());
      REQUIRE(st.ok());
    }
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
  // Vehicles on the road or in a mouth in some district, or crossing, and
  // those their garages count away.
  std::uint32_t vehicles() const {
    std::uint32_t sum = 0;
    for (const auto& w : worlds_)
      sum += w->vehicles().store().size() +
             static_cast<std::uint32_t>(w->vehicles().mouth_count()) +
             static_cast<std::uint32_t>(w->border_vehicles().size());
    return sum;
  }
  std::uint64_t counted_away() const {
    std::uint64_t sum = 0;
    for (const auto& w : worlds_) {
      for (const GarageState& g : w->vehicles().garages()) sum += g.away;
    }
    return sum;
  }
  std::uint64_t vehicle_crossings() const { return vehicle_crossings_; }
  World& world_mut(std::size_t d) { return *worlds_[d]; }
  const World& world(std::size_t d) const { return *worlds_[d]; }
  const std::vector<StepRecord>& recording(std::size_t d) const { return recordings_[d]; }
  std::uint64_t crossings() const { return crossings_; }
  std::uint64_t returned() const { return returned_; }

 private:
  std::vector<std::unique_ptr<World>> worlds_;
  std::vector<std::vector<StepRecord>> recordings_;
  std::vector<std::vector<CommandEnvelope>> extra_;
  std::uint64_t crossings_ = 0;
  std::uint64_t vehicle_crossings_ = 0;
  std::uint64_t returned_ = 0;
};

BorderArrivals arrivals(std::uint32_t from, std::uint64_t step, std::vector<BorderPedestrian> p,
                        std::vector<EntityId> returned) {
  BorderArrivals a;
  a.from_district = from;
  a.sent_step = step;
  a.pedestrians = std::move(p);
  a.returned = std::move(returned);
  return a;
}

// The district city with vehicles: brisk walkers, and cars on every block's
// loop, some of which straddle a border.
Scenario city_with_cars(std::uint32_t n, std::uint32_t districts, std::uint32_t pedestrians,
                        std::uint32_t vehicles) {
  Scenario s = bustle::citygen::district_city(n, districts, pedestrians, vehicles);
  for (LaneSpec& l : s.lanes) {
    if (is_pedestrian_lane(l.kind)) l.speed_mps_limit = 10.0;
  }
  return s;
}

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
      {"from itself", arrivals(1, 5, {{away, own_lane, 0.0, 0}}, {}), "from_district"},
      {"from no district", arrivals(7, 5, {{away, own_lane, 0.0, 0}}, {}), "from_district"},
      {"onto a foreign lane", arrivals(0, 5, {{away, foreign_lane, 0.0, 0}}, {}), ".lane"},
      {"an id living here", arrivals(0, 5, {{here, own_lane, 0.0, 0}}, {}), "not away"},
      {"time out of range", arrivals(0, 5, {{away, own_lane, -1.0, 0}}, {}), "time_left_s"},
      {"an id twice", arrivals(0, 5, {{away, own_lane, 0.0, 0}, {away, own_lane, 0.1, 0}}, {}),
       "twice"},
      {"an id both arriving and going home", arrivals(0, 5, {{away, own_lane, 0.0, 0}}, {away}),
       "twice"},
      {"a living id going home", arrivals(0, 5, {}, {here}), "returned[0]"},
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
  REQUIRE(w.submit({{}, arrivals(0, 5, {{away, own_lane, 0.05, 3}}, {})}) == SubmitStatus::Queued);
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
  created.world->submit({{}, arrivals(0, 1, {}, {})});
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
  CHECK(created.errors.empty());
  // A loop must end in its garage's district (the turnaround is decided
  // there): block 2 of the 6-node grid straddles columns 2 (d0) and 3 (d1);
  // started on its lane in column 3, its loop ends in column 2.
  Scenario split_loop = with_cars;
  GarageSpec& g = *std::find_if(split_loop.garages.begin(), split_loop.garages.end(),
                                [](const GarageSpec& x) { return x.id == "g.2.0"; });
  std::rotate(g.route.begin(), g.route.begin() + 1, g.route.end());
  g.lane = g.route.front();
  for (PlannedRequest& r : split_loop.vehicle_plan.requests) {
    if (r.garage == g.id) r.lane = g.lane;
  }
  for (DistrictSpec& d : split_loop.districts) std::erase(d.garages, g.id);
  split_loop.districts[1].garages.push_back(g.id);
  created = World::create(split_loop, 1);
  REQUIRE(created.errors.size() == 1);
  CHECK(created.errors[0].path.find(".route") != std::string::npos);
  CHECK_THAT(created.errors[0].message, Catch::Contains("end in its garage's district"));

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

TEST_CASE("district worlds: vehicles cross borders, each real in exactly one district") {
  const std::uint32_t districts = GENERATE(2u, 4u);
  const Scenario city = city_with_cars(4, districts, 100, 300);
  LockstepCity run(city, 21);
  std::uint32_t most = 0;
  for (int k = 0; k < 1500; ++k) {
    run.step();
    run.check_city_headways();
    if (k % 50 == 49) run.check_conservation();
    // Nothing lost or doubled: every dispatched vehicle is on the road or in
    // a mouth in one district, or crossing; its garage counts it away from
    // home exactly while it is in another district.
    std::uint32_t dispatched = 0, home = 0;
    for (std::size_t d = 0; d < districts; ++d) {
      const World& w = run.world(d);
      for (std::uint32_t g = 0; g < w.vehicles().garages().size(); ++g) {
        if (w.vehicles().garage_here(g))
          dispatched += static_cast<std::uint32_t>(w.vehicles().garages()[g].next_vehicle_ordinal);
      }
      const VehicleStore& st = w.vehicles().store();
      for (std::uint32_t i = 0; i < st.size(); ++i) home += w.vehicles().garage_here(st.garage[i]);
      home += static_cast<std::uint32_t>(w.vehicles().mouth_count());
    }
    REQUIRE(run.vehicles() == dispatched);
    REQUIRE(run.counted_away() == dispatched - home);
    most = std::max(most, dispatched);
  }
  run.check_conservation();
  CHECK(most == 300);  // every planned vehicle was dispatched, none twice
  CHECK(run.vehicle_crossings() > 100);
}

TEST_CASE("district worlds: a district with vehicles replays alone and restores") {
  const Scenario city = city_with_cars(4, 2, 100, 200);
  LockstepCity run(city, 17);
  for (int k = 0; k < 500; ++k) run.step();
  REQUIRE(run.vehicle_crossings() > 20);
  const std::size_t d = 1;
  Scenario s = city;
  s.own_district = static_cast<std::int32_t>(d);
  auto created = World::create(s, district_seed(17, d));
  REQUIRE(created.errors.empty());
  World& alone = *created.world;
  const std::vector<StepRecord>& rec = run.recording(d);
  for (std::size_t k = 0; k < 300; ++k) {
    for (const CommandEnvelope& env : rec[k].commands) alone.submit(env);
    alone.step();
    INFO("step " << alone.step_index());
    REQUIRE(alone.digest() == rec[k].digest);
  }
  // A checkpoint mid-run (ghosts of the vehicles just sent, garages' away
  // counts) restores a district that goes on identically.
  const WorldCheckpoint cp = alone.capture();
  auto restored = World::restore(s, cp);
  for (const RestoreError& e : restored.errors) INFO(e.path << ": " << e.message);
  REQUIRE(restored.errors.empty());
  for (World* w : {&alone, restored.world.get()}) {
    for (std::size_t k = 300; k < rec.size(); ++k) {
      for (const CommandEnvelope& env : rec[k].commands) w->submit(env);
      w->step();
      INFO("step " << w->step_index());
      REQUIRE(w->digest() == rec[k].digest);
    }
  }
}

TEST_CASE("district worlds: vehicle arrivals and ghosts are checked before anything changes") {
  const Scenario city = city_with_cars(6, 2, 0, 40);
  LockstepCity run(city, 5);
  BorderArrivals sample;
  for (int k = 0; k < 2000 && sample.vehicles.empty(); ++k) {
    run.step();
    for (const BorderVehicleDeparture& v : run.world(0).border_vehicles()) {
      if (v.to_district == 1 && sample.vehicles.empty()) sample = run.world(0).border_message(1);
    }
  }
  REQUIRE(!sample.vehicles.empty());
  // District 1 as it was before the sample arrived: a copy of its state.
  Scenario s = city;
  s.own_district = 1;
  const WorldCheckpoint before = run.world(1).capture();
  const BorderVehicle good = sample.vehicles.front();
  const auto refused = [&](const char* what, BorderArrivals bad, const char* message) {
    INFO(what);
    auto w = World::restore(s, before);
    REQUIRE(w.errors.empty());
    REQUIRE(w.world->submit({{}, std::move(bad)}) == SubmitStatus::Queued);
    w.world->step();
    REQUIRE(w.world->last_command_results().size() == 1);
    const CommandResult& r = w.world->last_command_results()[0];
    CHECK(r.status == CommandStatus::Rejected);
    CHECK_THAT(r.message, Catch::Contains(message));
    CHECK(w.world->registry().slot_away(good.id.index));  // not adopted
  };
  {
    BorderArrivals bad = sample;
    bad.vehicles.front().lane = bad.vehicles.front().lane == 0 ? 1 : 0;
    refused("a lane off its route", bad, "vehicles[0].route_index");
  }
  {
    BorderArrivals bad = sample;
    bad.vehicles.front().s_m = -1.0;
    refused("a place off the lane", bad, "vehicles[0].s_m");
  }
  {
    BorderArrivals bad = sample;
    bad.vehicles.push_back(bad.vehicles.front());
    refused("a vehicle twice", bad, "twice");
  }
  {
    BorderArrivals bad = sample;
    VehicleGhost ghost{good.id, good.garage, good.route_index, good.lane, good.s_m};
    bad.ghosts.push_back(ghost);  // on a lane of district 1 itself
    refused("a ghost on a lane of this district", bad, "ghosts[");
  }
  // The sample itself is accepted and the vehicle is adopted as it left.
  auto w = World::restore(s, before);
  REQUIRE(w.errors.empty());
  REQUIRE(w.world->submit({{}, sample}) == SubmitStatus::Queued);
  w.world->step();
  CHECK(w.world->last_command_results()[0].status == CommandStatus::Accepted);
  CHECK(w.world->registry().is_alive(good.id));
  CHECK(w.world->vehicles().is_vehicle(good.id));
  CHECK(w.world->check_invariants().ok());
  // A garage of another district takes no request here.
  auto w2 = World::restore(s, before);
  GarageRequest req{"g.0.0", "extra", "car", "r.0.0.e", 10};
  REQUIRE(w2.world->submit({{}, req}) == SubmitStatus::Queued);
  w2.world->step();
  CHECK(w2.world->last_command_results()[0].status == CommandStatus::Rejected);
  CHECK_THAT(w2.world->last_command_results()[0].message,
             Catch::Contains("belongs to district 'd0'"));
}

TEST_CASE("district worlds: a car despawned away from its garage's district goes home as an id") {
  const Scenario city = city_with_cars(4, 2, 0, 100);
  LockstepCity run(city, 9);
  // A car of one of district 0's garages on the road in district 1.
  EntityId car;
  std::uint32_t garage = 0;
  for (int k = 0; k < 2000 && car.is_null(); ++k) {
    run.step();
    const VehicleStore& st = run.world(1).vehicles().store();
    for (std::uint32_t i = 0; i < st.size() && car.is_null(); ++i) {
      if (run.world(0).vehicles().garage_here(st.garage[i])) {
        car = st.id[i];
        garage = st.garage[i];
      }
    }
  }
  REQUIRE(!car.is_null());
  // The garage's cars away: on the road in district 1, or crossing either way.
  const auto away_now = [&] {
    std::uint64_t n = 0;
    const VehicleStore& st = run.world(1).vehicles().store();
    for (std::uint32_t i = 0; i < st.size(); ++i) n += st.garage[i] == garage;
    for (std::size_t d = 0; d < 2; ++d) {
      for (const BorderVehicleDeparture& v : run.world(d).border_vehicles())
        n += v.vehicle.garage == garage;
    }
    return n;
  };
  REQUIRE(run.world(0).vehicles().garages()[garage].away == away_now());
  run.submit(1, DespawnEntity{car});
  run.step();  // district 1 despawns it and sends its id home
  CHECK(!run.world(1).registry().is_alive(car));
  REQUIRE(!run.world(1).border_returns().empty());
  CHECK(run.world(1).border_returns().back().id.index == car.index);
  CHECK(run.world(1).border_returns().back().garage == static_cast<std::int32_t>(garage));
  // Counted away until its id is home, then one fewer.
  CHECK(run.world(0).vehicles().garages()[garage].away == away_now() + 1);
  run.step();
  CHECK(run.world(0).vehicles().garages()[garage].away == away_now());
  CHECK(!run.world(0).registry().slot_away(car.index));  // home, free to issue again
  run.check_conservation();
  for (int k = 0; k < 200; ++k) run.step();
  run.check_conservation();
}

TEST_CASE("district worlds: cars yield to pedestrians on another district's crossing") {
  // The corridor cut in two (configs/corridor.districts.city.json): lane 3
  // (a car's way) is d0's, and of the two crossings over it x.in is d0's and
  // x.out d1's; pedestrians cross both ways between the districts all the time.
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) +
                                                     "/configs/corridor.districts.city.json");
  REQUIRE(loaded.ok());
  const Scenario city = *loaded.scenario;
  LockstepCity run(city, 4);
  const LaneGraph& lanes = run.world(0).lanes();
  const LaneIndex lane3 = *lanes.find("lane3");
  // Where each crossing meets lane 3 (it runs from y = 50 down to y = 0).
  const std::vector<std::pair<LaneIndex, double>> crossings = {{*lanes.find("x.out"), 24.0},
                                                               {*lanes.find("x.in"), 25.0}};
  std::size_t yielded = 0, foreign_shared = 0;
  for (int k = 0; k < 3000; ++k) {
    // The city before the step: crossings with someone on them (in a
    // district, or walking onto it across a border), and the cars on lane 3.
    std::vector<LaneIndex> occupied;
    std::vector<std::pair<EntityId, double>> before;
    for (std::size_t d = 0; d < 2; ++d) {
      const World& w = run.world(d);
      for (std::uint32_t i = 0; i < w.pedestrians().size(); ++i)
        occupied.push_back(w.pedestrians().lane[i]);
      for (const BorderDeparture& dep : w.border_departures())
        occupied.push_back(dep.pedestrian.lane);
      const VehicleStore& st = w.vehicles().store();
      for (std::uint32_t i = 0; i < st.size(); ++i) {
        if (st.lane[i] == lane3) before.push_back({st.id[i], st.s_m[i]});
      }
    }
    run.step();
    foreign_shared += run.world(1).border_message(0).crossings.size();
    // No car drove over a crossing that had someone on it.
    for (const auto& [id, s0] : before) {
      for (std::size_t d = 0; d < 2; ++d) {
        const VehicleStore& st = run.world(d).vehicles().store();
        if (id.index >= st.dense_of.size() || st.dense_of[id.index] == VehicleStore::kNoSlot)
          continue;
        const std::uint32_t i = st.dense_of[id.index];
        if (st.lane[i] != lane3) continue;
        for (const auto& [crossing, at_m] : crossings) {
          const bool busy = std::find(occupied.begin(), occupied.end(), crossing) != occupied.end();
          INFO("step " << k << ": car " << id.index << " from s " << s0 << " to " << st.s_m[i]
                       << " over crossing " << crossing);
          CHECK(!(busy && s0 < at_m && st.s_m[i] >= at_m));
          yielded += busy && s0 < at_m && at_m - s0 <= 12.0 && st.s_m[i] == s0;
        }
      }
    }
    if (k % 100 == 99) run.check_conservation();
  }
  CHECK(yielded > 10);          // cars did wait at the crossings
  CHECK(foreign_shared > 100);  // d1 told d0 of pedestrians on x.out
  CHECK(run.crossings() > 100);
}
