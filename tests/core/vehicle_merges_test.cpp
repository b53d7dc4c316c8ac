// Merges (vehicles.hpp invariant 6): two lanes leading onto one. Vehicles on
// different feeders are not each other's leaders, so before the merge rule
// they entered the shared lane side by side; now the one nearer the merge
// point (ties by EntityId) goes first and the other yields (MergeYield).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "bustle/core/world.hpp"
#include "invariant_probe.hpp"
#include "make_world.hpp"
#include "vehicle_test_support.hpp"

using namespace bustle::core;
using bustle::core::test::make_world;

namespace {

LaneSpec road(std::string id, Vec2 from, Vec2 to, std::vector<std::string> successors) {
  LaneSpec l;
  l.id = std::move(id);
  l.kind = LaneKind::Road;
  l.speed_mps_limit = 10.0;
  l.points = {from, to};
  l.successors = std::move(successors);
  return l;
}

GarageSpec garage(std::string id, std::vector<std::string> route, RouteEnd end,
                  std::uint32_t vehicles) {
  GarageSpec g;
  g.id = std::move(id);
  g.route = std::move(route);
  g.lane = g.route[0];
  g.route_end = end;
  g.prototypes = {"car"};
  g.capacity = vehicles;
  g.queue_depth = vehicles;
  g.dispatch_per_step_max = 1;
  g.cooldown_frames = 0;
  return g;
}

// Two 60 m feeders, "a" from the west and "b" from the south, meet at the
// origin and lead onto "m" (200 m east). Garage A drives a -> m, garage B
// b -> m; both routes end at the garage. Both garages dispatch at step 1, so
// their first vehicles reach the merge point at the same moment. With
// `all_full` every vehicle is Full (evaluated every step); otherwise the
// default tiers make those beyond 25 m of the merge point Simulated (every
// 2nd step, each on its own phase).
Scenario merge_city(std::uint32_t per_garage, bool all_full = true) {
  Scenario s;
  s.id = "bustle.test.merge";
  s.name = "two feeders onto one lane";
  s.entity_capacity = 1024;
  s.pedestrians.count = 0;
  s.pedestrians.spawn_per_step_max = 1;
  s.lanes = {road("a", {-60.0, 0.0}, {0.0, 0.0}, {"m"}), road("b", {0.0, -60.0}, {0.0, 0.0}, {"m"}),
             road("m", {0.0, 0.0}, {200.0, 0.0}, {})};
  s.garages = {garage("A", {"a", "m"}, RouteEnd::Garage, per_garage),
               garage("B", {"b", "m"}, RouteEnd::Garage, per_garage)};
  for (std::uint32_t k = 0; k < per_garage; ++k) {
    for (const char* g : {"A", "B"}) {
      s.vehicle_plan.requests.push_back(
          {std::string(g) + std::to_string(k), g, "car", g == std::string("A") ? "a" : "b", 10});
    }
  }
  s.vehicle_plan.batch_size = 2 * per_garage;
  s.vehicle_plan.batch_interval_steps = 1;
  s.observers = {{0.0, 0.0}};
  if (all_full) {
    for (double* r : {&s.tiers.full_enter_m, &s.tiers.full_exit_m, &s.tiers.simulated_enter_m,
                      &s.tiers.simulated_exit_m})
      *r = 1000.0;
  }
  return s;
}

// The closest two vehicles come on the merge axis (s on "m", minus the
// distance to the merge point on a feeder), measured here and not by the
// core, over pairs on different lanes within `near_m` of the merge point.
double closest_at_merge(const World& w, double near_m) {
  const VehicleStore& st = w.vehicles().store();
  const LaneIndex m = *w.lanes().find("m");
  struct At {
    double x;
    LaneIndex lane;
  };
  std::vector<At> at;
  for (std::uint32_t i = 0; i < st.size(); ++i) {
    const double len = w.lanes().lane(st.lane[i]).length_m;
    const double x = st.lane[i] == m ? st.s_m[i] : st.s_m[i] - len;
    if (std::abs(x) < near_m) at.push_back({x, st.lane[i]});
  }
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < at.size(); ++i) {
    for (std::size_t j = i + 1; j < at.size(); ++j) {
      if (at[i].lane != at[j].lane) best = std::min(best, std::abs(at[i].x - at[j].x));
    }
  }
  return best;
}

}  // namespace

TEST_CASE("merge: two vehicles arriving together enter the shared lane one headway apart") {
  const Scenario s = merge_city(1);
  auto w = make_world(s);
  const double block = s.vehicle_rules.headway_block_m;
  const VehicleStore& st = w->vehicles().store();
  const LaneIndex m = *w->lanes().find("m");
  double closest = std::numeric_limits<double>::infinity();
  std::set<std::string> yielded;
  std::string broken;
  for (int k = 0; k < 80; ++k) {
    w->step();
    closest = std::min(closest, closest_at_merge(*w, block));
    for (std::uint32_t i = 0; i < st.size(); ++i) {
      if (st.reason[i] != static_cast<std::uint8_t>(PolicyReason::MergeYield)) continue;
      yielded.insert(w->vehicles().vehicle_id(i));
      // The vehicle it yields to is recorded like a leader, and is the other one.
      REQUIRE(!st.leader[i].is_null());
      REQUIRE(st.leader[i] != st.id[i]);
      REQUIRE(st.control_policy[i] == static_cast<std::uint8_t>(ControlPolicy::Yielding));
    }
    if (std::string why = w->check_invariants().message(); !why.empty() && broken.empty())
      broken = "step " + std::to_string(w->step_index()) + ": " + why;
  }
  CHECK(broken == "");
  CHECK(closest >= block - 1e-9);
  // Exactly one of the two yielded: the tie (same distance) goes to the
  // smaller EntityId, the first vehicle dispatched (garage A's).
  CHECK(yielded == std::set<std::string>{"vehicle.B.000000"});
  // Both drove through the merge: no deadlock.
  std::uint32_t on_m = 0;
  for (std::uint32_t i = 0; i < st.size(); ++i) on_m += st.lane[i] == m;
  CHECK(on_m == 2);
}

TEST_CASE("merge: a stream from each feeder keeps the headway at the merge, both yield, all pass") {
  const bool all_full = GENERATE(true, false);
  INFO("all Full: " << all_full);
  const Scenario s = merge_city(12, all_full);
  auto w = make_world(s);
  const double block = s.vehicle_rules.headway_block_m;
  const VehicleStore& st = w->vehicles().store();
  double closest = std::numeric_limits<double>::infinity();
  std::set<std::uint32_t> garages_yielding;
  std::string broken;
  int steps = 0;
  for (; steps < 2000 && (steps < 10 || st.size() > 0); ++steps) {
    w->step();
    closest = std::min(closest, closest_at_merge(*w, block));
    for (std::uint32_t i = 0; i < st.size(); ++i) {
      if (st.reason[i] == static_cast<std::uint8_t>(PolicyReason::MergeYield))
        garages_yielding.insert(st.garage[i]);
    }
    if (std::string why = w->check_invariants().message(); !why.empty() && broken.empty())
      broken = "step " + std::to_string(w->step_index()) + ": " + why;
  }
  CHECK(broken == "");
  CHECK(closest >= block - 1e-9);
  CHECK(garages_yielding == std::set<std::uint32_t>{0, 1});
  // Every vehicle of both garages reached the end of the shared lane.
  CHECK(st.size() == 0);
  CHECK(w->vehicles().garages()[0].next_vehicle_ordinal == 12);
  CHECK(w->vehicles().garages()[1].next_vehicle_ordinal == 12);
  CHECK(steps < 2000);
}

TEST_CASE("merge: check_invariants names two vehicles side by side at a merge") {
  // Invariant 6 must be able to fail: the state the merge rule prevents
  // (both vehicles 2 m before the merge point), written through the probe
  // (a doctored checkpoint is refused by its digest).
  const Scenario s = merge_city(1);
  auto w = make_world(s);
  w->step();
  VehicleStore& v = InvariantProbe::vehicles(*w);
  REQUIRE(v.size() == 2);
  REQUIRE(w->check_invariants().ok());
  for (std::uint32_t i = 0; i < 2; ++i) v.s_m[i] = 58.0;
  const std::string why = w->check_invariants().message();
  CHECK(why.find("invariant 6") != std::string::npos);
  CHECK(why.find("are 0.000000 m apart at the merge onto lane 2") != std::string::npos);
  // The merge rule separates them again: the winner drives on, the other
  // waits until the winner is a headway into the shared lane.
  for (int k = 0; k < 15; ++k) w->step();
  CHECK(closest_at_merge(*w, s.vehicle_rules.headway_block_m) >=
        s.vehicle_rules.headway_block_m - 1e-9);
  CHECK(w->check_invariants().ok());
}

TEST_CASE("merge: array order never changes who yields (one pre-step snapshot)") {
  const Scenario s = merge_city(12);
  auto w = make_world(s);
  for (int k = 0; k < 40; ++k) w->step();
  WorldCheckpoint cp = w->capture();
  auto reference = std::move(World::restore(s, cp).world);
  REQUIRE(reference);
  bustle::core::test::reverse_vehicle_rows(cp.vehicles.store);
  auto shuffled = World::restore(s, cp);
  REQUIRE(shuffled.world);
  for (int k = 0; k < 200; ++k) {
    reference->step();
    shuffled.world->step();
    REQUIRE(reference->digest() == shuffled.world->digest());
  }
}

TEST_CASE("merge: a loop's waiting vehicle and a feeder's vehicle never hold each other") {
  // Loop L drives m -> c1 -> c2 -> b and turns around at the end of b onto m
  // again, so m's feeders are a (garage A's route a -> m) and b (L's seam).
  // L's entrance_clear_m (12) is wider than the block headway (8): a vehicle
  // of A that yields to a vehicle of L awaiting its turnaround stops 8 m
  // short of the merge, and the turnaround must not wait for 12 m.
  Scenario s = merge_city(0, false);
  s.lanes = {road("a", {-60.0, 0.0}, {0.0, 0.0}, {"m"}), road("b", {0.0, -40.0}, {0.0, 0.0}, {"m"}),
             road("m", {0.0, 0.0}, {40.0, 0.0}, {"c1"}),
             road("c1", {40.0, 0.0}, {40.0, -40.0}, {"c2"}),
             road("c2", {40.0, -40.0}, {0.0, -40.0}, {"b"})};
  s.garages = {garage("A", {"a", "m", "c1"}, RouteEnd::Garage, 10),
               garage("L", {"m", "c1", "c2", "b"}, RouteEnd::Loop, 4)};
  s.garages[1].entrance_clear_m = 12.0;
  s.vehicle_plan.requests.clear();
  for (std::uint32_t k = 0; k < 10; ++k)
    s.vehicle_plan.requests.push_back({"a" + std::to_string(k), "A", "car", "a", 10});
  for (std::uint32_t k = 0; k < 4; ++k)
    s.vehicle_plan.requests.push_back({"l" + std::to_string(k), "L", "car", "m", 10});
  s.vehicle_plan.batch_size = 14;
  auto w = make_world(s);
  const VehicleStore& st = w->vehicles().store();
  std::string broken;
  std::map<std::uint64_t, std::uint64_t> last_moved;  // entity -> step
  std::uint64_t longest_still = 0;
  for (int k = 0; k < 1500; ++k) {
    w->step();
    for (std::uint32_t i = 0; i < st.size(); ++i) {
      if (st.last_advance_step[i] + 200 < w->step_index())
        longest_still = std::max(longest_still, w->step_index() - st.last_advance_step[i]);
    }
    if (std::string why = w->check_invariants().message(); !why.empty() && broken.empty())
      broken = "step " + std::to_string(w->step_index()) + ": " + why;
  }
  CHECK(broken == "");
  CHECK(longest_still == 0);  // nobody stood still for 200 steps (20 s)
  CHECK(w->vehicles().garages()[0].next_vehicle_ordinal == 10);  // all of A got out
  CHECK(w->vehicles().garages()[1].turnarounds > 0);
}

TEST_CASE("merge arbitration: the nearer of the leader and the merge winner decides") {
  const VehicleRules rules;  // block 8, caution 14
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    double leader, merge;
    PolicyReason reason;
    bool advance;
  };
  const Case cases[] = {
      {inf, inf, PolicyReason::Clear, true},
      {inf, 20.0, PolicyReason::Clear, true},
      {inf, 10.0, PolicyReason::MergeYield, true},
      {inf, 8.0, PolicyReason::MergeYield, false},
      {inf, -3.0, PolicyReason::MergeYield, false},  // nearer the merge than the winner
      {5.0, 3.0, PolicyReason::MergeYield, false},
      {3.0, 5.0, PolicyReason::LeaderBlocked, false},
      {10.0, 10.0, PolicyReason::LeaderCaution, true},  // a tie goes to the leader
      {12.0, 10.0, PolicyReason::MergeYield, true},
      {10.0, 12.0, PolicyReason::LeaderCaution, true},
  };
  for (const Case& c : cases) {
    PolicyInputs in;
    in.leader_gap_m = c.leader;
    in.merge_gap_m = c.merge;
    const PolicyDecision d = arbitrate_policy(in, rules);
    INFO("leader " << c.leader << " merge " << c.merge);
    CHECK(d.reason == c.reason);
    CHECK(d.advance == c.advance);
    CHECK(d.leader_recorded == (c.reason != PolicyReason::Clear));
    CHECK(d.policy ==
          (c.reason == PolicyReason::Clear ? ControlPolicy::RouteFollow : ControlPolicy::Yielding));
  }
  // The signal and pedestrian rules still come first.
  PolicyInputs in;
  in.merge_gap_m = 1.0;
  in.signal_closed = true;
  CHECK(arbitrate_policy(in, rules).reason == PolicyReason::SignalClosed);
  in.signal_closed = false;
  in.pedestrian_hazard = true;
  CHECK(arbitrate_policy(in, rules).reason == PolicyReason::PedestrianHazard);
}
