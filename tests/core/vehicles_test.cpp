// Vehicle acceptance on the seed-003 corridor (configs/corridor.city.json) and
// the contracts of DESIGN §4, each as its own test.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <set>

#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "make_world.hpp"
#include "vehicle_test_support.hpp"

using namespace bustle::core;
using bustle::core::test::make_world;

namespace {

Scenario corridor() {
  auto r = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) +
                                                "/configs/corridor.city.json");
  INFO((r.errors.empty() ? std::string() : r.errors[0].to_string()));
  REQUIRE(r.ok());
  return *r.scenario;
}

std::set<std::string> vehicle_ids(const World& w) {
  std::set<std::string> ids;
  for (std::uint32_t i = 0; i < w.vehicles().store().size(); ++i)
    ids.insert(w.vehicles().vehicle_id(i));
  return ids;
}

CommandEnvelope vehicle_env(std::uint32_t req, WorldCommand c) {
  return {{1, req}, std::move(c)};
}

}  // namespace

TEST_CASE("corridor: 600 steps of 0.1 s meet the seed-003 acceptance") {
  const Scenario s = corridor();
  auto w = make_world(s);
  const VehicleSystem& vs = w->vehicles();
  std::map<std::string, std::uint64_t> dispatched_at;  // request id -> step
  std::set<DispatchGate> blocked_gates;
  bool saw_waiting = false, saw_yielding = false;
  std::uint64_t r01_step = 0;
  double min_same_lane_m = 1e9;
  for (int k = 0; k < 600; ++k) {
    const std::uint64_t last_dispatch_frame = vs.garages()[0].last_dispatch_frame;
    const bool had_dispatched = vs.garages()[0].has_dispatched;
    w->step();
    const GarageState& g = vs.garages()[0];
    // Every step names its gate; a dispatch happens only when every gate allows.
    if (g.last_gate == DispatchGate::Dispatched || g.last_gate == DispatchGate::PerStepMax) {
      if (had_dispatched) REQUIRE(g.frame_index - last_dispatch_frame > 8);
    } else {
      blocked_gates.insert(g.last_gate);
    }
    for (std::uint32_t i = 0; i < vs.store().size(); ++i) {
      const std::string& rid = vs.store().request_id[i];
      if (!dispatched_at.count(rid)) {
        dispatched_at[rid] = w->step_index();
        if (rid == "r01") r01_step = w->step_index();
      }
      const auto pol = static_cast<ControlPolicy>(vs.store().control_policy[i]);
      saw_waiting |= pol == ControlPolicy::WaitingAtSignal;
      saw_yielding |= pol == ControlPolicy::Yielding;
      for (std::uint32_t j = i + 1; j < vs.store().size(); ++j) {
        if (vs.store().lane[i] != vs.store().lane[j]) continue;
        const Pose a = vs.pose(i), b = vs.pose(j);
        min_same_lane_m = std::min(min_same_lane_m, std::hypot(a.x_m - b.x_m, a.y_m - b.y_m));
      }
    }
  }
  // Request 0 (priority 100) first, as ordinal 0.
  REQUIRE(vs.store().size() == 18);
  for (std::uint32_t i = 0; i < vs.store().size(); ++i) {
    if (vs.store().request_id[i] == "r00") CHECK(vs.vehicle_id(i) == "vehicle.g0.000000");
    if (vs.store().request_id[i] == "r01") CHECK(vs.vehicle_id(i) == "vehicle.g0.000001");
  }
  CHECK(dispatched_at["r00"] < dispatched_at["r01"]);
  CHECK(r01_step >= dispatched_at["r00"] + 9);  // cooldown of 8 queue frames at least
  // Blocked steps named their gates; cooldown and entrance both held at times.
  CHECK(blocked_gates.count(DispatchGate::Cooldown) == 1);
  CHECK(blocked_gates.count(DispatchGate::EntranceBlocked) == 1);
  // All 18 injected and dispatched, queue drained, 18 managed.
  CHECK(vs.plan().cursor == 18);
  CHECK(vs.plan().accepted == 18);
  CHECK(vs.garages()[0].dispatched.size() == 18);
  CHECK(vs.garages()[0].queue.empty());
  CHECK(vs.managed(0) == 18);
  CHECK(vs.garages()[0].next_vehicle_ordinal == 18);
  CHECK(saw_waiting);
  CHECK(saw_yielding);
  CHECK(vs.garages()[0].turnarounds > 0);
  CHECK(min_same_lane_m >= 7.0);
}

namespace {
// Along the corridor loop, the shortest distance between any two vehicles
// (measured here, not by the core: route offset of the lane + s, modulo the
// loop length, both ways), and how many vehicle pairs were closer than 1 m.
struct LoopSpacing {
  double min_m = 1e9;
  int pairs_under_1m = 0;
};
LoopSpacing loop_spacing(const World& w) {
  const VehicleSystem& vs = w.vehicles();
  const Scenario& s = vs.scenario();
  std::vector<double> lane_offset;  // by route index
  double loop_m = 0.0;
  for (const std::string& id : s.garages[0].route) {
    lane_offset.push_back(loop_m);
    loop_m += w.lanes().lane(*w.lanes().find(id)).length_m;
  }
  std::vector<double> at;
  for (std::uint32_t i = 0; i < vs.store().size(); ++i)
    at.push_back(lane_offset[vs.store().route_index[i]] + vs.store().s_m[i]);
  LoopSpacing r;
  for (std::size_t i = 0; i < at.size(); ++i) {
    for (std::size_t j = i + 1; j < at.size(); ++j) {
      const double d = std::fmod(std::fmod(at[j] - at[i], loop_m) + loop_m, loop_m);
      const double apart = std::min(d, loop_m - d);
      r.min_m = std::min(r.min_m, apart);
      r.pairs_under_1m += apart < 1.0;
    }
  }
  return r;
}
}  // namespace

TEST_CASE("corridor: the headway holds between every two vehicles at every step (seam included)") {
  const Scenario s = corridor();
  auto w = make_world(s);
  const double block = s.vehicle_rules.headway_block_m;
  REQUIRE(block == 8.0);
  double min_m = 1e9;
  int pairs_under_1m = 0, steps_under_block = 0;
  std::string broken;              // the first invariant check that failed
  int dispatches_beside_seam = 0;  // a vehicle left the garage while one was on the last lane
  for (int k = 0; k < 600; ++k) {
    const std::size_t before = w->vehicles().store().size();
    bool last_lane_occupied = false;
    for (std::uint32_t i = 0; i < before; ++i)
      last_lane_occupied |= w->vehicles().store().route_index[i] == 3;
    w->step();
    dispatches_beside_seam += last_lane_occupied && w->vehicles().store().size() > before;
    const LoopSpacing sp = loop_spacing(*w);
    min_m = std::min(min_m, sp.min_m);
    pairs_under_1m += sp.pairs_under_1m;
    steps_under_block += sp.min_m < block - 1e-9;
    if (std::string why = w->check_invariants().message(); !why.empty() && broken.empty())
      broken = "step " + std::to_string(w->step_index()) + ": " + why;
  }
  CHECK(broken == "");
  CHECK(pairs_under_1m == 0);
  CHECK(steps_under_block == 0);
  CHECK(min_m >= block - 1e-9);
  // The seam was exercised: vehicles came out of the garage while others were
  // on the lane leading onto the entrance; all 18 still got out, some turned.
  CHECK(dispatches_beside_seam > 0);
  CHECK(w->vehicles().store().size() == 18);
  CHECK(w->vehicles().garages()[0].turnarounds > 0);
}

TEST_CASE(
    "corridor: a far observer makes every vehicle Coarse, identities unchanged, and they keep "
    "moving") {
  const Scenario s = corridor();
  auto w = make_world(s);
  for (int k = 0; k < 600; ++k) w->step();
  const auto before = vehicle_ids(*w);
  REQUIRE(before.size() == 18);
  REQUIRE(w->submit(vehicle_env(1, SetObservers{{{5000.0, 5000.0}}})) == SubmitStatus::Queued);
  std::vector<double> progress_before;
  for (int k = 0; k < 5; ++k) w->step();
  const VehicleSystem& vs = w->vehicles();
  for (std::uint32_t i = 0; i < vs.store().size(); ++i)
    REQUIRE(vs.store().sim_tier[i] == SimTier::Coarse);
  CHECK(vehicle_ids(*w) == before);
  std::map<std::string, std::uint64_t> advanced;
  for (std::uint32_t i = 0; i < vs.store().size(); ++i)
    advanced[vs.vehicle_id(i)] = vs.store().steps_advanced[i];
  for (int k = 0; k < 80; ++k) w->step();
  int moved = 0;
  for (std::uint32_t i = 0; i < vs.store().size(); ++i)
    moved += vs.store().steps_advanced[i] > advanced[vs.vehicle_id(i)];
  CHECK(moved >= 9);  // Coarse vehicles still advance (every 8th step)
  REQUIRE(w->submit(vehicle_env(2, SetObservers{{{25.0, 25.0}}})) == SubmitStatus::Queued);
  for (int k = 0; k < 5; ++k) w->step();
  int non_coarse = 0;
  for (std::uint32_t i = 0; i < vs.store().size(); ++i)
    non_coarse += vs.store().sim_tier[i] != SimTier::Coarse;
  CHECK(non_coarse == 18);
  CHECK(vehicle_ids(*w) == before);
}

TEST_CASE("corridor: leftover distance and the next lane's speed limit apply at lane ends") {
  const Scenario s = corridor();
  auto w = make_world(s);
  const VehicleSystem& vs = w->vehicles();
  int checked = 0;
  struct Before {
    LaneIndex lane;
    double s_m;
    std::uint64_t advanced;
    SimTier tier;
  };
  for (int k = 0; k < 600; ++k) {
    std::map<std::uint64_t, Before> before;
    for (std::uint32_t i = 0; i < vs.store().size(); ++i) {
      before[vs.store().id[i].packed()] = {vs.store().lane[i], vs.store().s_m[i],
                                           vs.store().steps_advanced[i], vs.store().sim_tier[i]};
    }
    w->step();
    for (std::uint32_t i = 0; i < vs.store().size(); ++i) {
      auto it = before.find(vs.store().id[i].packed());
      if (it == before.end() || it->second.lane != 0 || vs.store().lane[i] != 1)
        continue;  // lane0 (12) -> lane1 (8)
      if (vs.store().reason[i] != static_cast<std::uint8_t>(PolicyReason::Clear)) continue;
      REQUIRE(vs.store().steps_advanced[i] == it->second.advanced + 1);
      const double stride = tier_stride(it->second.tier);
      const double t_left = 0.1 * stride - (50.0 - it->second.s_m) / 12.0;
      CHECK(vs.store().s_m[i] == Approx(t_left * 8.0).margin(1e-9));
      ++checked;
    }
  }
  CHECK(checked >= 5);
}

TEST_CASE("pressure: 128 requests drain in bounded steps, each vehicle entering with the headway") {
  // A 16-per-step cap and no cooldown or entrance_clear_m: the queue is
  // worked in bounded steps, and a vehicle still enters only when the block
  // headway is free at the entrance (invariant 5), so one per clearance; the
  // route ends at the garage, so vehicles leave and 128 pass in all.
  Scenario s = corridor();
  s.vehicle_plan.requests.clear();
  s.garages[0].capacity = 200;
  s.garages[0].queue_depth = 128;
  s.garages[0].dispatch_per_step_max = 16;
  s.garages[0].cooldown_frames = 0;
  s.garages[0].entrance_clear_m = 0.0;
  s.garages[0].route_end = RouteEnd::Garage;
  s.signals.clear();
  s.vehicle_rules.headway_caution_m = s.vehicle_rules.headway_block_m;  // full speed up to it
  s.pedestrians.count = 0;
  auto w = make_world(s);
  for (std::uint32_t r = 0; r < 128; ++r) {
    REQUIRE(w->submit(vehicle_env(r, GarageRequest{"g0", "p" + std::to_string(r), "sedan", "lane0",
                                                   10})) == SubmitStatus::Queued);
  }
  std::set<std::string> ids;
  std::uint64_t dispatched = 0;
  int steps = 0;
  while ((steps == 0 || !w->vehicles().garages()[0].queue.empty()) && steps < 2000) {
    w->step();
    ++steps;
    if (steps == 1) {
      for (const auto& res : w->last_command_results())
        REQUIRE(res.status == CommandStatus::Accepted);
    }
    const std::uint64_t now = w->vehicles().garages()[0].dispatched.size();
    REQUIRE(now - dispatched <= 1);  // the vehicle just placed holds the entrance
    dispatched = now;
    for (std::uint32_t i = 0; i < w->vehicles().store().size(); ++i)
      ids.insert(w->vehicles().vehicle_id(i));
    const std::string broken = w->check_invariants().message();
    INFO("step " << steps << ": " << broken);
    REQUIRE(broken.empty());
  }
  // The queue drained, no faster than 8 m at 12 m/s (7 steps of 0.1 s) per vehicle.
  CHECK(w->vehicles().garages()[0].queue.empty());
  CHECK(steps >= 127 * 7 + 1);
  CHECK(ids.size() == 128);
  CHECK(w->vehicles().garages()[0].next_vehicle_ordinal == 128);
  CHECK(w->vehicles().garages()[0].dispatched.size() == 128);
}

TEST_CASE(
    "invalid, duplicate and queue-full requests get their own result and leave the queue "
    "unchanged") {
  Scenario s = corridor();
  s.vehicle_plan.requests.clear();
  s.garages[0].queue_depth = 3;
  s.garages[0].capacity = 1;
  s.pedestrians.count = 0;
  auto w = make_world(s);
  for (std::uint32_t r = 0; r < 4; ++r) {
    REQUIRE(w->submit(vehicle_env(r, GarageRequest{"g0", "q" + std::to_string(r), "sedan", "lane0",
                                                   static_cast<std::int32_t>(r)})) ==
            SubmitStatus::Queued);
  }
  w->step();  // q0..q2 queued, q3 refused (depth 3); q2 (highest priority) dispatched
  auto res = w->last_command_results();
  REQUIRE(res.size() == 4);
  CHECK(res[2].status == CommandStatus::Accepted);
  CHECK(res[3].reason == RejectReason::QueueFull);
  REQUIRE(w->vehicles().store().size() == 1);
  CHECK(w->vehicles().store().request_id[0] == "q2");
  REQUIRE(w->submit(vehicle_env(10, GarageRequest{"nope", "x", "sedan", "lane0", 1})) ==
          SubmitStatus::Queued);
  REQUIRE(w->submit(vehicle_env(11, GarageRequest{"g0", "x", "truck", "lane0", 1})) ==
          SubmitStatus::Queued);
  REQUIRE(w->submit(vehicle_env(12, GarageRequest{"g0", "x", "sedan", "lane2", 1})) ==
          SubmitStatus::Queued);
  REQUIRE(w->submit(vehicle_env(13, GarageRequest{"g0", "q1", "sedan", "lane0", 1})) ==
          SubmitStatus::Queued);  // queued
  REQUIRE(w->submit(vehicle_env(14, GarageRequest{"g0", "q2", "sedan", "lane0", 1})) ==
          SubmitStatus::Queued);  // dispatched
  REQUIRE(w->submit(vehicle_env(15, GarageRequest{"g0", "fill", "sedan", "lane0", 99})) ==
          SubmitStatus::Queued);
  REQUIRE(w->submit(vehicle_env(16, GarageRequest{"g0", "over", "sedan", "lane0", 200})) ==
          SubmitStatus::Queued);
  w->step();  // the cooldown (checked before capacity) holds dispatch
  res = w->last_command_results();
  REQUIRE(res.size() == 7);
  CHECK(res[0].reason == RejectReason::InvalidArgument);
  CHECK(res[0].message.rfind("garage:", 0) == 0);
  CHECK(res[1].message.rfind("prototype:", 0) == 0);
  CHECK(res[2].message.rfind("lane:", 0) == 0);
  CHECK(res[3].reason == RejectReason::Duplicate);
  CHECK(res[3].message.find("queued") != std::string::npos);
  CHECK(res[4].reason == RejectReason::Duplicate);
  CHECK(res[4].message.find("dispatched") != std::string::npos);
  CHECK(res[5].status == CommandStatus::Accepted);
  CHECK(res[6].reason == RejectReason::QueueFull);
  CHECK(w->vehicles().garages()[0].last_gate == DispatchGate::Cooldown);
  // Only the accepted request changed the queue: priority desc, then ordinal.
  const auto& q = w->vehicles().garages()[0].queue;
  REQUIRE(q.size() == 3);
  CHECK(q[0].request_id == "fill");
  CHECK(q[1].request_id == "q1");
  CHECK(q[2].request_id == "q0");
  CHECK(q[1].enqueue_ordinal == 1);
  CHECK(q[2].enqueue_ordinal == 0);
  CHECK(w->vehicles().garages()[0].rejected_invalid == 2);  // the unknown garage counts nowhere
  CHECK(w->vehicles().garages()[0].rejected_duplicate == 2);
  CHECK(w->vehicles().garages()[0].rejected_queue_full == 2);
}

TEST_CASE("policy arbitration follows the fixed order for every combination of inputs") {
  const VehicleRules rules;
  const double gaps[] = {std::numeric_limits<double>::infinity(), 20.0, 14.0, 10.0, 8.0, 3.0};
  int combos = 0;
  for (int despawn = 0; despawn < 2; ++despawn) {
    for (int strat = 0; strat < 4; ++strat) {
      for (int closed = 0; closed < 2; ++closed) {
        for (int yield = 0; yield < 2; ++yield) {
          for (int ped = 0; ped < 2; ++ped) {
            for (const double gap : gaps) {
              for (int route = 0; route < 2; ++route) {
                PolicyInputs in;
                in.despawn_requested = despawn;
                in.strategy = static_cast<VehicleStrategy>(strat);
                in.signal_closed = closed;
                in.signal_yield = yield;
                in.pedestrian_hazard = ped;
                in.leader_gap_m = gap;
                in.has_route = route;
                const PolicyDecision d = arbitrate_policy(in, rules);
                // The oracle: the first rule of this table that matches.
                struct Rule {
                  bool when;
                  ControlPolicy policy;
                  PolicyReason reason;
                  bool advance;
                  double mult;
                };
                const auto S = static_cast<VehicleStrategy>(strat);
                const Rule table[] = {
                    {despawn == 1, ControlPolicy::DespawnPending, PolicyReason::DespawnRequested,
                     false, 0.0},
                    {S == VehicleStrategy::Manual, ControlPolicy::Manual,
                     PolicyReason::ManualControl, true, 1.0},
                    {S == VehicleStrategy::Parked, ControlPolicy::Parked,
                     PolicyReason::ParkedStrategy, false, 0.0},
                    {closed == 1, ControlPolicy::WaitingAtSignal, PolicyReason::SignalClosed, false,
                     0.0},
                    {yield == 1, ControlPolicy::Yielding, PolicyReason::SignalYield, true, 0.35},
                    {ped == 1, ControlPolicy::Yielding, PolicyReason::PedestrianHazard, false, 0.0},
                    {gap <= 8.0, ControlPolicy::Yielding, PolicyReason::LeaderBlocked, false, 0.0},
                    {gap < 14.0, ControlPolicy::Yielding, PolicyReason::LeaderCaution, true, 0.35},
                    {route == 1 && S == VehicleStrategy::RouteFollow, ControlPolicy::RouteFollow,
                     PolicyReason::Clear, true, 1.0},
                    {true, ControlPolicy::LaneFollow, PolicyReason::Clear, true, 1.0},
                };
                const Rule* expect = nullptr;
                for (const Rule& r : table) {
                  if (r.when) {
                    expect = &r;
                    break;
                  }
                }
                INFO("combo despawn=" << despawn << " strategy=" << strat << " closed=" << closed
                                      << " yield=" << yield << " ped=" << ped << " gap=" << gap
                                      << " route=" << route);
                REQUIRE(d.policy == expect->policy);
                REQUIRE(d.reason == expect->reason);
                REQUIRE(d.advance == expect->advance);
                REQUIRE(d.speed_multiplier == Approx(expect->mult));
                ++combos;
              }
            }
          }
        }
      }
    }
  }
  CHECK(combos == 2 * 4 * 2 * 2 * 2 * 6 * 2);
}

TEST_CASE("shuffling the vehicle arrays changes no outcome (one pre-step snapshot)") {
  const Scenario s = corridor();
  auto w = make_world(s);
  for (int k = 0; k < 300; ++k) w->step();
  WorldCheckpoint cp = w->capture();
  auto reference = std::move(World::restore(s, cp).world);
  REQUIRE(reference);
  // Reverse the dense vehicle order (every column the same way).
  bustle::core::test::reverse_vehicle_rows(cp.vehicles.store);
  auto shuffled = bustle::core::test::restore_world(s, cp);
  for (int k = 0; k < 300; ++k) {
    reference->step();
    shuffled->step();
    REQUIRE(reference->digest() == shuffled->digest());
  }
}

TEST_CASE("vehicle checkpoints restore exactly (completeness) and reject corrupt vehicle state") {
  const Scenario s = corridor();
  auto w = make_world(s);
  for (int k = 0; k < 35; ++k) w->step();  // mid-dispatch: requests still planned and queued
  REQUIRE(w->vehicles().plan().cursor < 18);
  const WorldCheckpoint good = w->capture();
  auto r = World::restore(s, good);
  REQUIRE(r.world);
  for (int k = 0; k < 200; ++k) {
    w->step();
    r.world->step();
    REQUIRE(w->digest() == r.world->digest());
  }
  auto expect = [&](WorldCheckpoint cp, const std::string& path, const std::string& fragment) {
    auto bad = World::restore(s, cp);
    CHECK_FALSE(bad.world);
    REQUIRE_FALSE(bad.errors.empty());
    INFO(bad.errors[0].path << ": " << bad.errors[0].message);
    CHECK(bad.errors[0].path == path);
    CHECK(bad.errors[0].message.find(fragment) != std::string::npos);
  };
  SECTION("request both queued and dispatched") {
    WorldCheckpoint cp = good;
    REQUIRE_FALSE(cp.vehicles.garages[0].queue.empty());
    cp.vehicles.garages[0].dispatched.push_back(cp.vehicles.garages[0].queue[0].request_id);
    std::sort(cp.vehicles.garages[0].dispatched.begin(), cp.vehicles.garages[0].dispatched.end());
    expect(cp, "garages[0].queue[0].request_id", "both queued and dispatched");
  }
  SECTION("ordinal below the dispatched count") {
    WorldCheckpoint cp = good;
    cp.vehicles.garages[0].next_vehicle_ordinal = 0;
    expect(cp, "garages[0].next_vehicle_ordinal", "below the dispatched count");
  }
  SECTION("alpha out of range") {
    WorldCheckpoint cp = good;
    cp.vehicles.store.s_m[0] = 75.0;  // lane length 50
    expect(cp, "vehicles[0].s_m", "alpha must be in [0, 1]");
  }
  SECTION("leader is self") {
    WorldCheckpoint cp = good;
    cp.vehicles.store.leader[0] = cp.vehicles.store.id[0];
    expect(cp, "vehicles[0].leader", "itself");
  }
  SECTION("duplicate vehicle id") {
    WorldCheckpoint cp = good;
    REQUIRE(cp.vehicles.store.id.size() >= 2);
    cp.vehicles.store.id[1] = cp.vehicles.store.id[0];
    expect(cp, "vehicles[1].id", "duplicate");
  }
  SECTION("lane does not match the route index") {
    WorldCheckpoint cp = good;
    cp.vehicles.store.lane[0] = (cp.vehicles.store.lane[0] + 1) % 4;
    expect(cp, "vehicles[0].lane", "route index");
  }
}

TEST_CASE(
    "a vehicle blocked off-screen for despawn.stuck_ms leaves as Stuck, a visible one keeps "
    "waiting") {
  auto run = [](Vec2 observer) {
    Scenario s;
    s.id = "test.stuck";
    s.lanes = {{"r", LaneKind::Road, {{0, 0}, {300, 0}}, 10.0, {"r"}}};
    GarageSpec g;
    g.id = "g";
    g.lane = "r";
    g.route = {"r"};
    g.prototypes = {"car"};
    s.garages = {g};
    s.vehicle_plan.requests = {{"q0", "g", "car", "r", 10}, {"q1", "g", "car", "r", 10}};
    s.vehicle_plan.batch_size = 2;
    s.observers = {observer};
    s.despawn.stuck_ms = 5000;
    s.entity_capacity = 16;
    auto created = World::create(s, 1);
    REQUIRE(created.errors.empty());
    World& w = *created.world;
    while (w.vehicles().store().size() < 2 && w.step_index() < 400) w.step();
    REQUIRE(w.vehicles().store().size() == 2);
    for (int k = 0; k < 50; ++k) w.step();
    // Park the leader (the lower id was dispatched first); the follower
    // catches up and is blocked behind it.
    const EntityId leader = std::min(w.vehicles().store().id[0], w.vehicles().store().id[1]);
    REQUIRE(w.submit({{1, 1}, SetVehicleStrategy{leader, 2}}) == SubmitStatus::Queued);
    for (int k = 0; k < 1500; ++k) w.step();
    return std::make_pair(w.counters().despawned_by_reason[static_cast<int>(DespawnReason::Stuck)],
                          w.vehicles().is_vehicle(leader));
  };
  const auto far = run({5000, 5000});
  CHECK(far.first == 1);  // the blocked follower left
  CHECK(far.second);      // the parked leader stands still on purpose: not stuck
  const auto near = run({150, 0});
  CHECK(near.first == 0);  // visible: never removed from a queue in view
  CHECK(near.second);
}

// Seed 003's VehicleIds read "vehicle.garage.<scenario>.request.000000"; a
// garage may choose its format, today's "vehicle.<garage>.<ordinal>" stays
// the default, and formats that could repeat an id are refused at load.
TEST_CASE("a garage's vehicle_id_format names its vehicles; bad or colliding formats are refused") {
  Scenario s = corridor();
  s.garages[0].vehicle_id_format = "vehicle.garage.{scenario}.request.{ordinal}";
  auto w = make_world(s);
  for (int k = 0; k < 120; ++k) w->step();
  const VehicleSystem& vs = w->vehicles();
  REQUIRE(vs.store().size() > 1);
  std::set<std::string> ids;
  for (std::uint32_t i = 0; i < vs.store().size(); ++i) {
    ids.insert(vs.vehicle_id(i));
    if (vs.store().request_id[i] == "r00")
      CHECK(vs.vehicle_id(i) == "vehicle.garage." + s.id + ".request.000000");
  }
  CHECK(ids.size() == vs.store().size());

  CHECK(format_vehicle_id("vehicle.{garage}.{ordinal}", "g0", "x", 1234567) ==
        "vehicle.g0.1234567");
  const auto error_of = [](Scenario bad) {
    const auto errs = validate_scenario(bad);
    for (const auto& e : errs) {
      if (e.path.find("vehicle_id_format") != std::string::npos) return e.path + ": " + e.message;
    }
    return std::string();
  };
  Scenario bad = corridor();
  bad.garages[0].vehicle_id_format = "car.{garage}";
  CHECK(error_of(bad) ==
        "garages[0].vehicle_id_format: must contain {ordinal} exactly once (VehicleIds must never "
        "repeat)");
  bad.garages[0].vehicle_id_format = "car.{ordinal}.{ordinal}";
  CHECK(error_of(bad).find("exactly once") != std::string::npos);
  bad.garages[0].vehicle_id_format = "car.{colour}.{ordinal}";
  CHECK(error_of(bad) ==
        "garages[0].vehicle_id_format: unknown field {colour}; use {garage}, {scenario} or "
        "{ordinal}");
  bad.garages[0].vehicle_id_format = "car.{ordinal";
  CHECK(error_of(bad).find("unclosed '{'") != std::string::npos);
  // Two garages whose ids could meet: "car.000012" from one and "car.1" + "000012"... from the
  // other.
  Scenario two = corridor();
  GarageSpec g2 = two.garages[0];
  g2.id = "g1";
  two.garages.push_back(g2);
  two.garages[0].vehicle_id_format = "car.{ordinal}";
  two.garages[1].vehicle_id_format = "car.1{ordinal}";
  CHECK(error_of(two).find(
            "garages[1].vehicle_id_format: can give the same VehicleIds as garages[0]") == 0);
  two.garages[1].vehicle_id_format = "car.{garage}.{ordinal}";
  CHECK(error_of(two).empty());
}

// The persistence worker captures into recycled buffers prepared with
// reserve_for_capture (issue 13: no allocation or page faults on the sim
// thread). A buffer that held an older, different state must come out holding
// exactly the current one, and a reserved buffer's per-entity columns must
// not be reallocated by the capture.
TEST_CASE(
    "capture_into a reserved, reused checkpoint holds exactly the current state without "
    "reallocating") {
  const Scenario s = corridor();
  auto w = make_world(s, 5);
  WorldCheckpoint buffer;
  reserve_for_capture(buffer, s.entity_capacity);
  const auto* ids = buffer.pedestrians.id.data();
  const auto* lanes = buffer.pedestrians.lane.data();
  const auto* generations = buffer.registry.generation.data();
  REQUIRE(buffer.pedestrians.id.capacity() >= s.entity_capacity);
  // Left sized (zeros), so the first capture shrinks it instead of zero-filling it.
  REQUIRE(buffer.pedestrians.id.size() == s.entity_capacity);
  std::uint32_t vehicles_seen = 0;
  for (int round = 0; round < 4; ++round) {
    for (int k = 0; k < 150; ++k) w->step();
    w->capture_into(buffer);  // over what the previous round left in it
    CHECK(buffer.pedestrians.id.data() == ids);
    CHECK(buffer.pedestrians.lane.data() == lanes);
    CHECK(buffer.registry.generation.data() == generations);
    CHECK(buffer.vehicles.store.dense_of.empty());
    CHECK(buffer.vehicles.store.id.size() == w->vehicles().store().size());
    CHECK(buffer.vehicles.garage_ids.size() == s.garages.size());
    vehicles_seen = std::max(vehicles_seen, w->vehicles().store().size());
    auto restored = World::restore(s, buffer);
    INFO((restored.errors.empty() ? std::string()
                                  : restored.errors[0].path + ": " + restored.errors[0].message));
    REQUIRE(restored.world);
    REQUIRE(restored.world->compute_digest() == w->compute_digest());
    // And it continues exactly like a world restored from a fresh capture.
    for (int k = 0; k < 20; ++k) restored.world->step();
    auto copy = w->capture();
    auto original = std::move(World::restore(s, copy).world);
    for (int k = 0; k < 20; ++k) original->step();
    CHECK(restored.world->digest() == original->digest());
  }
  CHECK(vehicles_seen > 0);  // the corridor's vehicles were part of what was copied
}
