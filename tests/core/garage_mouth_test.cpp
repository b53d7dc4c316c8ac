// The garage mouth (issue 30, item 8; seed 003's gates): a garage with
// mouth_capacity > 0 dispatches a batch per step, bounded by capacity,
// dispatch_per_step_max, the queue and the free places of its mouth; the
// dispatched vehicles wait in the mouth (identities and VehicleIds, counted
// against capacity, on no lane) and enter the road one at a time, front
// first, each when the entrance is clear.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "../support/completeness_guard.hpp"
#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "invariant_probe.hpp"
#include "make_world.hpp"

using namespace bustle::core;
using bustle::core::test::make_world;

namespace {

// Seed 003's pressure case on the corridor: no plan, no cooldown, 16 per
// step, the block headway as the only entrance clearance (8 m at 12 m/s:
// a vehicle clears it in 7 steps of 0.1 s), routes ending at the garage.
Scenario pressure(std::uint32_t mouth_capacity, std::uint32_t capacity = 200) {
  auto r = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) +
                                                "/configs/corridor.city.json");
  REQUIRE(r.ok());
  Scenario s = *r.scenario;
  s.vehicle_plan.requests.clear();
  GarageSpec& g = s.garages[0];
  g.capacity = capacity;
  g.queue_depth = 128;
  g.dispatch_per_step_max = 16;
  g.cooldown_frames = 0;
  g.entrance_clear_m = 0.0;
  g.mouth_capacity = mouth_capacity;
  g.route_end = RouteEnd::Garage;
  s.signals.clear();
  s.vehicle_rules.headway_caution_m = s.vehicle_rules.headway_block_m;  // full speed up to it
  s.pedestrians.count = 0;
  return s;
}

GarageRequest request(std::uint32_t r) {
  return GarageRequest{"g0", "p" + std::to_string(r), "sedan", "lane0", 10};
}

void submit_requests(World& w, std::uint32_t count) {
  for (std::uint32_t r = 0; r < count; ++r)
    REQUIRE(w.submit({{1, r}, request(r)}) == SubmitStatus::Queued);
}

const GarageState& garage(const World& w) {
  return w.vehicles().garages()[0];
}

std::vector<bustle::test::ScriptedCommand> request_script(std::uint32_t count) {
  std::vector<bustle::test::ScriptedCommand> script;
  for (std::uint32_t r = 0; r < count; ++r) script.push_back({0, request(r)});
  return script;
}

}  // namespace

TEST_CASE(
    "pressure: 128 requests dispatch in 8 steps of 16 into the mouth, then enter one by one") {
  const Scenario s = pressure(128);
  auto w = make_world(s, 3);
  submit_requests(*w, 128);
  const VehicleSystem& vs = w->vehicles();
  const LaneIndex entrance = *w->lanes().find("lane0");
  std::uint64_t entered = 0;  // vehicles that reached the road so far: ordinals 0..entered-1
  std::set<std::uint64_t> seen_on_road;
  bool waiting_before = true;  // step 1: the batch's first finds the entrance clear
  double nearest_before = 1e9;
  std::set<std::string> ids;
  int steps = 0;
  while ((steps < 8 || !garage(*w).mouth.empty()) && steps < 2000) {
    w->step();
    ++steps;
    const GarageState& g = garage(*w);
    if (steps <= 8) {
      // The batch: 16 per step in queue order, PerStepMax until the queue is empty.
      CHECK(vs.last_step().dispatched == 16);
      CHECK(g.dispatched.size() == 16u * static_cast<std::uint64_t>(steps));
      CHECK(g.next_vehicle_ordinal == 16u * static_cast<std::uint64_t>(steps));
      CHECK(g.last_gate == (steps < 8 ? DispatchGate::PerStepMax : DispatchGate::Dispatched));
    } else {
      CHECK(vs.last_step().dispatched == 0);
      CHECK(g.last_gate == DispatchGate::QueueEmpty);
    }
    // Every vehicle out of the queue counts against capacity: road plus mouth.
    REQUIRE(vs.managed(0) == vs.store().size() + g.mouth.size());
    // The mouth holds the dispatched ordinals not yet on the road, in order.
    for (std::size_t k = 0; k < g.mouth.size(); ++k)
      REQUIRE(g.mouth[k].ordinal == g.next_vehicle_ordinal - g.mouth.size() + k);
    // The road takes them one at a time, front first: ordinal `entered` next.
    std::vector<std::uint64_t> new_on_road;
    for (std::uint32_t i = 0; i < vs.store().size(); ++i) {
      if (seen_on_road.insert(vs.store().ordinal[i]).second)
        new_on_road.push_back(vs.store().ordinal[i]);
      ids.insert(vs.vehicle_id(i));
    }
    REQUIRE(new_on_road.size() <= 1);
    if (!new_on_road.empty()) REQUIRE(new_on_road[0] == entered++);
    REQUIRE(entered == g.next_vehicle_ordinal - g.mouth.size());
    // One per clearance: a vehicle entered this step exactly when the mouth
    // held one and the entrance was clear when the step began (nothing
    // within the 8 m block headway of lane0's start; no feeders here).
    INFO("step " << steps << ", lane0 nearest at the start " << nearest_before);
    REQUIRE(!new_on_road.empty() == (waiting_before && nearest_before >= 8.0));
    waiting_before = !g.mouth.empty();
    nearest_before = 1e9;
    for (std::uint32_t i = 0; i < vs.store().size(); ++i) {
      if (vs.store().lane[i] == entrance)
        nearest_before = std::min(nearest_before, vs.store().s_m[i]);
    }
    const std::string broken = w->check_invariants().message();
    INFO("step " << steps << ": " << broken);
    REQUIRE(broken.empty());
  }
  CHECK(entered == 128);
  // 128 session-unique VehicleIds, ordinals 0..127, each seen on the road.
  CHECK(ids.size() == 128);
  CHECK(*ids.begin() == "vehicle.g0.000000");
  CHECK(*ids.rbegin() == "vehicle.g0.000127");
  CHECK(seen_on_road.size() == 128);
  CHECK(garage(*w).dispatched.size() == 128);
  CHECK(garage(*w).next_vehicle_ordinal == 128);
  // One per clearance: the last of 128 entered no sooner than 127 x 7 steps in.
  CHECK(steps >= 127 * 7 + 1);
}

TEST_CASE("the mouth's places, capacity and cooldown each hold a batch") {
  SECTION("mouth capacity: 16 fill it, then one per free place") {
    auto w = make_world(pressure(16), 3);
    submit_requests(*w, 128);
    w->step();  // 16 dispatched: the first takes the clear entrance, 15 wait
    CHECK(garage(*w).dispatched.size() == 16);
    CHECK(garage(*w).mouth.size() == 15);
    CHECK(w->vehicles().store().size() == 1);
    CHECK(garage(*w).last_gate == DispatchGate::PerStepMax);
    w->step();  // the entrance is held: one free place, one dispatch
    CHECK(garage(*w).dispatched.size() == 17);
    CHECK(garage(*w).mouth.size() == 16);
    CHECK(garage(*w).last_gate == DispatchGate::Dispatched);
    w->step();  // full, the entrance not clear: held
    CHECK(garage(*w).dispatched.size() == 17);
    CHECK(garage(*w).last_gate == DispatchGate::EntranceBlocked);
    // Whenever the front enters, its place is taken again in the same step.
    for (int k = 0; k < 40; ++k) {
      const std::size_t road = w->vehicles().store().size();
      const std::size_t out = garage(*w).dispatched.size();
      w->step();
      const std::size_t entered = w->vehicles().store().size() - road;
      REQUIRE(entered <= 1);
      CHECK(garage(*w).dispatched.size() - out == entered);
      CHECK(garage(*w).mouth.size() == 16);
      REQUIRE(w->check_invariants().ok());
    }
  }
  SECTION("capacity: the batch stops at capacity, mouth included") {
    auto w = make_world(pressure(10, 10), 3);
    submit_requests(*w, 128);
    w->step();
    CHECK(garage(*w).dispatched.size() == 10);
    CHECK(w->vehicles().managed(0) == 10);
    CHECK(garage(*w).last_gate == DispatchGate::Dispatched);  // cut short of 16 by capacity
    w->step();
    CHECK(garage(*w).dispatched.size() == 10);
    CHECK(garage(*w).last_gate == DispatchGate::Capacity);
    CHECK(garage(*w).mouth.size() == 9);
  }
  SECTION("cooldown: three frames after a batch hold the queue, the mouth still drains") {
    Scenario s = pressure(64);
    s.garages[0].cooldown_frames = 3;
    s.garages[0].entrance_clear_m = 0.0;
    auto w = make_world(s, 3);
    submit_requests(*w, 128);
    const std::vector<std::size_t> expected = {16, 16, 16, 16, 32, 32, 32, 32, 48};
    for (const std::size_t d : expected) {
      w->step();
      CHECK(garage(*w).dispatched.size() == d);
    }
    CHECK(garage(*w).gate_steps[static_cast<std::size_t>(DispatchGate::Cooldown)] == 6);
  }
  SECTION("without a mouth (mouth_capacity 0) a garage dispatches one per clear entrance") {
    auto w = make_world(pressure(0), 3);
    submit_requests(*w, 128);
    w->step();
    CHECK(garage(*w).dispatched.size() == 1);
    CHECK(garage(*w).mouth.empty());
    w->step();
    CHECK(garage(*w).dispatched.size() == 1);
    CHECK(garage(*w).last_gate == DispatchGate::EntranceBlocked);
  }
}

TEST_CASE("a vehicle in the mouth has an identity but is not on the road") {
  auto w = make_world(pressure(16), 3);
  submit_requests(*w, 4);
  w->step();
  REQUIRE(garage(*w).mouth.size() == 3);
  const MouthVehicle m = garage(*w).mouth[1];
  CHECK(m.ordinal == 2);
  CHECK(w->registry().is_alive(m.id));
  CHECK_FALSE(w->vehicles().is_vehicle(m.id));
  CHECK(w->vehicles().mouth_text(m.id) ==
        "vehicle.g0.000002 waits in garage 'g0' mouth (place 2 of 3): not on the road yet");
  const EntityReport e = w->describe(m.id);
  CHECK(e.alive);
  CHECK(e.kind == EntityKind::Vehicle);
  CHECK(e.lifecycle == LifecycleState::Requested);
  CHECK(e.lane == -1);
  // Commands that need a vehicle on the road say where it is; nothing changes.
  REQUIRE(w->submit({{1, 100}, DespawnEntity{m.id}}) == SubmitStatus::Queued);
  REQUIRE(w->submit({{1, 101}, SetVehicleStrategy{m.id, 2}}) == SubmitStatus::Queued);
  w->step();
  const auto& res = w->last_command_results();
  REQUIRE(res.size() == 2);
  for (const CommandResult& r : res) {
    CHECK(r.status == CommandStatus::Rejected);
    CHECK(r.message.find("waits in garage 'g0' mouth") != std::string::npos);
  }
  CHECK(w->registry().is_alive(m.id));
  CHECK(w->check_invariants().ok());
  // Once it enters, it is an ordinary vehicle.
  for (int k = 0; k < 30 && !w->vehicles().is_vehicle(m.id); ++k) w->step();
  REQUIRE(w->vehicles().is_vehicle(m.id));
  CHECK(w->describe(m.id).lifecycle == LifecycleState::Active);
  CHECK(w->vehicles().mouth_text(m.id).empty());
}

TEST_CASE(
    "completeness guard: a checkpoint mid-batch, vehicles in the mouth, continues the chain") {
  // Steps 1-4 dispatch a batch of 16 each, then the mouth of 64 is full; it
  // holds vehicles past step 69.
  auto w = make_world(pressure(64), 3);
  submit_requests(*w, 128);
  for (int k = 0; k < 69; ++k) w->step();
  REQUIRE(garage(*w).mouth.size() > 16);
  bustle::test::check_checkpoint_completeness(pressure(64), 3, request_script(128), 70,
                                              {0, 1, 2, 5, 8, 9, 30, 69});
}

TEST_CASE("a broken mouth is named by check_invariants and refused by restore") {
  auto w = make_world(pressure(16), 3);
  submit_requests(*w, 8);
  w->step();
  w->step();
  REQUIRE(garage(*w).mouth.size() >= 3);
  SECTION("restore: ordinals out of dispatch order") {
    WorldCheckpoint cp = w->capture();
    std::swap(cp.vehicles.garages[0].mouth[0].ordinal, cp.vehicles.garages[0].mouth[1].ordinal);
    const auto r = World::restore(w->scenario(), cp);
    REQUIRE_FALSE(r.world);
    CHECK(r.errors[0].path == "garages[0].mouth[1].ordinal");
  }
  SECTION("restore: more vehicles than mouth_capacity") {
    Scenario smaller = w->scenario();
    smaller.garages[0].mouth_capacity = 2;
    const auto r = World::restore(smaller, w->capture());
    REQUIRE_FALSE(r.world);
    CHECK(r.errors[0].path == "garages[0].mouth");
    CHECK(r.errors[0].message.find("mouth_capacity is 2") != std::string::npos);
  }
  SECTION("restore: a vehicle dropped from the mouth leaves an identity without holder") {
    WorldCheckpoint cp = w->capture();
    cp.vehicles.garages[0].mouth.pop_back();
    const auto r = World::restore(w->scenario(), cp);
    REQUIRE_FALSE(r.world);
    CHECK(r.errors[0].path == "registry.alive");
    CHECK(r.errors[0].message.find("in garage mouths") != std::string::npos);
  }
  SECTION("restore: a mouth vehicle's request not dispatched") {
    WorldCheckpoint cp = w->capture();
    cp.vehicles.garages[0].mouth[0].request_id = "never";
    const auto r = World::restore(w->scenario(), cp);
    REQUIRE_FALSE(r.world);
    CHECK(r.errors[0].path == "garages[0].mouth[0].request_id");
  }
  SECTION("check_invariants: ordinals out of dispatch order") {
    auto& mouth = InvariantProbe::garages(*w)[0].mouth;
    std::swap(mouth[0].ordinal, mouth[1].ordinal);
    CHECK(w->check_invariants().message().rfind("vehicles: invariant 3: garage g0 mouth[1]", 0) ==
          0);
  }
  SECTION("check_invariants: a request that is not dispatched") {
    InvariantProbe::garages(*w)[0].mouth[0].request_id = "never";
    CHECK(w->check_invariants().message().rfind("vehicles: invariant 1: garage g0 mouth[0]", 0) ==
          0);
  }
}
