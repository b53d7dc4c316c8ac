// SetLaneClosed (commands/set_lane_closed.cpp): lane closure events. Nobody
// enters a closed lane; pedestrians take an open successor or wait at their
// lane end; vehicles stop at the end of their lane and drive on when it
// opens; spawns avoid closed lanes; background waiters are cleaned up by the
// despawn phase; the closed set is digested, checkpointed and validated.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "bustle/core/world.hpp"
#include "command_test_support.hpp"

using namespace bustle::core;

namespace {

using test::apply_one;
using test::load;
using test::make;

LaneIndex lane_of(const World& w, const char* id) {
  const std::optional<LaneIndex> l = w.lanes().find(id);
  REQUIRE(l);
  return *l;
}

// Ids of the pedestrians on `lane`.
std::set<EntityId> pedestrians_on(const World& w, LaneIndex lane) {
  std::set<EntityId> out;
  const PedestrianStore& p = w.pedestrians();
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    if (p.lane[i] == lane) out.insert(p.id[i]);
  }
  return out;
}

std::set<EntityId> vehicles_on(const World& w, LaneIndex lane) {
  std::set<EntityId> out;
  const VehicleStore& v = w.vehicles().store();
  for (std::uint32_t i = 0; i < v.size(); ++i) {
    if (v.lane[i] == lane) out.insert(v.id[i]);
  }
  return out;
}

// Steps n times; after each, nobody new is on `closed` (those there at the
// closure may only leave) and every invariant holds.
void step_checking(World& w, int n, LaneIndex closed, std::set<EntityId>& allowed) {
  for (int k = 0; k < n; ++k) {
    w.step();
    REQUIRE(w.check_invariants().ok());
    std::set<EntityId> now = pedestrians_on(w, closed);
    for (const EntityId v : vehicles_on(w, closed)) now.insert(v);
    for (const EntityId id : now) {
      INFO("step " << w.step_index() << ": entity " << id.index << ":" << id.generation
                   << " entered a closed lane");
      REQUIRE(allowed.count(id) == 1);
    }
    allowed = now;  // who left may not come back while it is closed
  }
}

}  // namespace

TEST_CASE("a closed crossing is never entered: pedestrians take the open successor") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  for (int k = 0; k < 40; ++k) w->step();
  const LaneIndex crossing = lane_of(*w, "x.market.office");
  auto twin = World::restore(s, w->capture());
  REQUIRE(twin.world);

  const CommandResult ok = apply_one(*w, SetLaneClosed{"x.market.office", UINT32_MAX, true});
  INFO(ok.message);
  REQUIRE(ok.status == CommandStatus::Accepted);
  twin.world->step();
  CHECK(w->digest() != twin.world->digest());  // the closed set is state
  CHECK(w->closed_lanes() == std::vector<LaneIndex>{crossing});
  CHECK(w->lane_closure_counters().closures_total == 1);

  std::set<EntityId> allowed = pedestrians_on(*w, crossing);
  step_checking(*w, 400, crossing, allowed);
  CHECK(w->lane_closure_counters().reroutes_total > 0);  // market.loop walkers went round again
  CHECK(w->lane_waiters().empty());                      // market.loop itself is open: nobody waits
  CHECK(pedestrians_on(*w, crossing).empty());           // those on it at the closure walked off

  // Opened: the crossing is used again.
  REQUIRE(apply_one(*w, SetLaneClosed{"", crossing, false}).status == CommandStatus::Accepted);
  CHECK(w->closed_lanes().empty());
  CHECK(w->lane_closure_counters().openings_total == 1);
  bool used = false;
  for (int k = 0; k < 600 && !used; ++k) {
    w->step();
    used = !pedestrians_on(*w, crossing).empty();
  }
  CHECK(used);
  REQUIRE(w->check_invariants().ok());
}

TEST_CASE("with every way on closed, pedestrians wait at the lane end; checkpoint continues") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  for (int k = 0; k < 40; ++k) w->step();
  const LaneIndex loop = lane_of(*w, "market.loop");
  const LaneIndex crossing = lane_of(*w, "x.market.office");
  // market.loop's successors are itself and the crossing: both closed.
  REQUIRE(apply_one(*w, SetLaneClosed{"market.loop", UINT32_MAX, true}).status ==
          CommandStatus::Accepted);
  REQUIRE(apply_one(*w, SetLaneClosed{"x.market.office", crossing, true}).status ==
          CommandStatus::Accepted);
  std::set<EntityId> allowed = pedestrians_on(*w, crossing);
  for (int k = 0; k < 300 && w->lane_waiters().size() < 2; ++k) {
    w->step();
    REQUIRE(w->check_invariants().ok());
  }
  REQUIRE(w->lane_waiters().size() >= 2);
  for (const LaneWaiter& lw : w->lane_waiters()) {
    const EntityReport e = w->describe(lw.id);
    CHECK(e.lane == static_cast<std::int32_t>(loop));
    CHECK(e.s_m == w->lanes().lane(loop).length_m);  // at the lane end, not beyond
  }
  step_checking(*w, 50, crossing, allowed);

  // Checkpoint round trip: the same digest chain, waiters and all.
  auto back = World::restore(s, w->capture());
  INFO((back.errors.empty() ? std::string() : back.errors[0].path + ": " + back.errors[0].message));
  REQUIRE(back.world);
  CHECK(back.world->closed_lanes() == w->closed_lanes());
  CHECK(back.world->lane_waiters() == w->lane_waiters());
  for (int k = 0; k < 20; ++k) {
    w->step();
    back.world->step();
    REQUIRE(back.world->digest() == w->digest());
  }

  // Bad checkpoints are refused by the path of the bad field.
  auto refused_at = [&](auto&& spoil) {
    WorldCheckpoint cp = w->capture();
    spoil(cp);
    const auto r = World::restore(s, cp);
    CHECK_FALSE(r.world);
    return r.errors.empty() ? std::string("(accepted)") : r.errors[0].path;
  };
  CHECK(refused_at([](WorldCheckpoint& cp) {
          cp.closed_lanes.push_back(999);
          cp.lane_closure.closures_total += 1;
        }) == "closed_lanes[2]");
  CHECK(refused_at([](WorldCheckpoint& cp) {
          cp.lane_waiters.push_back({EntityId{9999, 3}, 1});
        }).rfind("lane_waiters[", 0) == 0);
  CHECK(refused_at([](WorldCheckpoint& cp) { cp.lane_closure.openings_total = 5; }) ==
        "lane_closure.openings_total");

  // Opened: the waiters walk on and the list empties.
  REQUIRE(apply_one(*w, SetLaneClosed{"market.loop", UINT32_MAX, false}).status ==
          CommandStatus::Accepted);
  for (int k = 0; k < 20 && !w->lane_waiters().empty(); ++k) w->step();
  CHECK(w->lane_waiters().empty());
  REQUIRE(w->check_invariants().ok());
}

TEST_CASE("background waiters are despawned as LaneDeadEnd; spawns avoid closed lanes") {
  const Scenario s = load("default.city.json");
  auto w = make(s);
  for (int k = 0; k < 60; ++k) w->step();
  // west.south leads to west.north and cross.east: close both.
  const LaneIndex north = lane_of(*w, "west.north");
  const LaneIndex cross = lane_of(*w, "cross.east");
  REQUIRE(apply_one(*w, SetLaneClosed{"west.north", UINT32_MAX, true}).status ==
          CommandStatus::Accepted);
  REQUIRE(apply_one(*w, SetLaneClosed{"cross.east", UINT32_MAX, true}).status ==
          CommandStatus::Accepted);
  std::set<EntityId> before(w->pedestrians().id.begin(), w->pedestrians().id.end());
  const std::uint64_t dead_before =
      w->counters().despawned_by_reason[static_cast<std::size_t>(DespawnReason::LaneDeadEnd)];
  const std::uint64_t wait_steps = World::kLaneDeadEndWait_us / s.step_us;
  std::set<EntityId> allowed_north = pedestrians_on(*w, north);
  for (std::uint64_t k = 0; k < wait_steps + 200; ++k) {
    w->step();
    REQUIRE(w->check_invariants().ok());
    // Newcomers (spawned after the closure) never appear on a closed lane.
    const PedestrianStore& p = w->pedestrians();
    for (std::uint32_t i = 0; i < p.size(); ++i) {
      if (p.lane[i] != north && p.lane[i] != cross) continue;
      INFO("entity " << p.id[i].index << " on a closed lane at step " << w->step_index());
      REQUIRE(before.count(p.id[i]) == 1);
    }
    for (const EntityId id : pedestrians_on(*w, north)) REQUIRE(allowed_north.count(id) == 1);
    allowed_north = pedestrians_on(*w, north);
  }
  CHECK(w->lane_closure_counters().dead_ends_total > 0);
  CHECK(w->counters().despawned_by_reason[static_cast<std::size_t>(DespawnReason::LaneDeadEnd)] >
        dead_before);
  // Nobody waits longer than the dead-end wait plus the fade.
  for (const LaneWaiter& lw : w->lane_waiters())
    CHECK(w->step_index() - lw.since_step <= wait_steps + 1);
}

TEST_CASE("vehicles stop at the end of their lane before a closed one and drive on when opened") {
  const Scenario s = load("corridor.city.json");
  auto w = make(s);
  for (int k = 0; k < 150; ++k) w->step();
  REQUIRE(w->vehicles().store().size() >= 2);
  const LaneIndex closed = lane_of(*w, "lane2");
  const LaneIndex before = lane_of(*w, "lane1");
  REQUIRE(apply_one(*w, SetLaneClosed{"lane2", UINT32_MAX, true}).status ==
          CommandStatus::Accepted);
  std::set<EntityId> allowed = vehicles_on(*w, closed);
  step_checking(*w, 200, closed, allowed);
  // Someone is held at the end of lane1, reason LaneClosed.
  const VehicleStore& v = w->vehicles().store();
  std::vector<EntityId> held;
  for (std::uint32_t i = 0; i < v.size(); ++i) {
    if (v.reason[i] != static_cast<std::uint8_t>(PolicyReason::LaneClosed)) continue;
    held.push_back(v.id[i]);
    CHECK(v.lane[i] == before);
    CHECK(v.s_m[i] == w->lanes().lane(before).length_m);
    CHECK(v.speed_mps[i] == 0.0);
  }
  REQUIRE_FALSE(held.empty());
  CHECK(w->vehicles().held_at_closures() == held.size());

  // Checkpoint with a closed lane and held vehicles continues the same chain.
  auto back = World::restore(s, w->capture());
  REQUIRE(back.world);
  for (int k = 0; k < 10; ++k) {
    w->step();
    back.world->step();
    REQUIRE(back.world->digest() == w->digest());
  }

  REQUIRE(apply_one(*w, SetLaneClosed{"lane2", UINT32_MAX, false}).status ==
          CommandStatus::Accepted);
  for (int k = 0; k < 20; ++k) w->step();
  CHECK(w->vehicles().held_at_closures() == 0);
  std::size_t moved_on = 0;
  for (const EntityId id : held) {
    const std::uint32_t i = w->vehicles().store().dense_of[id.index];
    if (i != VehicleStore::kNoSlot && w->vehicles().store().lane[i] != before) ++moved_on;
  }
  CHECK(moved_on > 0);
  REQUIRE(w->check_invariants().ok());
}

TEST_CASE("a closed garage entrance holds dispatch: EntranceBlocked") {
  const Scenario s = load("corridor.city.json");
  auto w = make(s);
  REQUIRE(apply_one(*w, SetLaneClosed{"lane0", UINT32_MAX, true}).status ==
          CommandStatus::Accepted);
  for (int k = 0; k < 100; ++k) w->step();
  CHECK(w->vehicles().store().size() == 0);
  CHECK(w->vehicles().garages()[0].last_gate == DispatchGate::EntranceBlocked);
  REQUIRE(apply_one(*w, SetLaneClosed{"lane0", UINT32_MAX, false}).status ==
          CommandStatus::Accepted);
  for (int k = 0; k < 100; ++k) w->step();
  CHECK(w->vehicles().store().size() > 0);
}

TEST_CASE("a spawn on a closed lane waits until it opens") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  for (int k = 0; k < 10; ++k) w->step();
  REQUIRE(apply_one(*w, SetLaneClosed{"office.loop", UINT32_MAX, true}).status ==
          CommandStatus::Accepted);
  SpawnPedestrian sp;
  sp.lane = "office.loop";
  const CommandResult r = apply_one(*w, sp);
  REQUIRE(r.status == CommandStatus::Accepted);
  for (int k = 0; k < 20; ++k) w->step();
  const auto h = w->find_spawn(r.handle);
  REQUIRE(h);
  CHECK(h->state == SpawnState::IdentityCreated);  // held before joining the city
  CHECK(w->lane_closure_counters().spawns_deferred_total > 0);
  REQUIRE(apply_one(*w, SetLaneClosed{"office.loop", UINT32_MAX, false}).status ==
          CommandStatus::Accepted);
  for (int k = 0; k < 5; ++k) w->step();
  CHECK(w->find_spawn(r.handle)->state != SpawnState::IdentityCreated);
  REQUIRE(w->check_invariants().ok());
}

TEST_CASE("lane closure refusals name the field and change nothing") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  CommandResult r = apply_one(*w, SetLaneClosed{"no.such.lane", UINT32_MAX, true});
  CHECK(r.status == CommandStatus::Rejected);
  CHECK(r.message == "lane: unknown lane 'no.such.lane'");
  r = apply_one(*w, SetLaneClosed{"", 999, true});
  CHECK(r.status == CommandStatus::Rejected);
  CHECK(r.message.rfind("lane_index: 999 is out of range", 0) == 0);
  r = apply_one(*w, SetLaneClosed{"", UINT32_MAX, true});
  CHECK(r.status == CommandStatus::Rejected);
  CHECK(r.message == "lane: give a lane id or a lane_index");
  r = apply_one(*w, SetLaneClosed{"market.loop", 3, true});
  CHECK(r.status == CommandStatus::Rejected);
  CHECK(r.message.rfind("lane_index: 3 is not lane 'market.loop'", 0) == 0);
  CHECK(w->closed_lanes().empty());
  CHECK(w->lane_closure_counters().closures_total == 0);
  // Idempotent: closing twice is one closure; opening an open lane is no opening.
  REQUIRE(apply_one(*w, SetLaneClosed{"market.loop", UINT32_MAX, true}).status ==
          CommandStatus::Accepted);
  REQUIRE(apply_one(*w, SetLaneClosed{"market.loop", 0, true}).status == CommandStatus::Accepted);
  REQUIRE(apply_one(*w, SetLaneClosed{"office.loop", UINT32_MAX, false}).status ==
          CommandStatus::Accepted);
  CHECK(w->lane_closure_counters().closures_total == 1);
  CHECK(w->lane_closure_counters().openings_total == 0);
}
