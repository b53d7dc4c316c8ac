// SetObservers.follow (commands/set_observers.cpp): the operator observer
// follows an entity, is digested and checkpointed, refuses bad targets with
// a clear error, and stays at the last position when the entity leaves.
#include <catch2/catch.hpp>
#include <cmath>

#include "bustle/core/world.hpp"
#include "command_test_support.hpp"

using namespace bustle::core;

namespace {

using test::apply_one;
using test::load;
using test::make;

// The first walking resident (lowest EntityId).
EntityId first_walker(const World& w) {
  const ResidentStore& rs = w.population().residents();
  for (std::uint32_t i = 0; i < rs.size(); ++i)
    if (rs.active[i] == ResidentStore::kActive) return rs.id[i];
  FAIL("no walking resident");
  return {};
}

}  // namespace

TEST_CASE(
    "the observer follows a walking resident; digested, checkpointed, falls back when it "
    "leaves") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  for (int k = 0; k < 40; ++k) w->step();
  const EntityId who = first_walker(*w);
  auto twin = World::restore(s, w->capture());
  REQUIRE(twin.world);

  const CommandResult ok = apply_one(*w, SetObservers{{}, who});
  INFO(ok.message);
  REQUIRE(ok.status == CommandStatus::Accepted);
  CHECK(w->followed() == who);
  twin.world->step();  // the same step without the follow
  CHECK(w->digest() != twin.world->digest());

  std::vector<Vec2> seen;
  for (int k = 0; k < 30; ++k) {
    w->step();
    REQUIRE(w->observers().size() == 1);
    const EntityReport e = w->describe(who);
    // The observer sits where the entity was at the end of the previous step.
    seen.push_back(w->observers()[0]);
    (void)e;
  }
  // It moved with the walker (the block's loops are 200 m long, 1.3 m/s).
  CHECK((seen.front().x_m != seen.back().x_m || seen.front().y_m != seen.back().y_m));

  // Checkpoint round trip: the follow continues with the same digest chain.
  auto back = World::restore(s, w->capture());
  REQUIRE(back.world);
  CHECK(back.world->followed() == who);
  for (int k = 0; k < 10; ++k) {
    w->step();
    back.world->step();
    REQUIRE(back.world->digest() == w->digest());
  }
  // A checkpoint that follows an entity with several observers is refused.
  {
    WorldCheckpoint cp = w->capture();
    cp.observers.push_back({1, 1});
    cp.observer_views.push_back({});
    const auto r = World::restore(s, cp);
    CHECK_FALSE(r.world);
    REQUIRE_FALSE(r.errors.empty());
    CHECK(r.errors[0].path == "follow");
  }

  // The entity leaves (a despawn: it fades, off the lanes): the observer
  // stays at its last position and the follow ends.
  const Vec2 last = w->observers()[0];
  REQUIRE(apply_one(*w, DespawnEntity{who}).status == CommandStatus::Accepted);
  for (int k = 0; k < 3; ++k) w->step();
  CHECK(w->followed().is_null());
  REQUIRE(w->observers().size() == 1);
  const double moved =
      std::hypot(w->observers()[0].x_m - last.x_m, w->observers()[0].y_m - last.y_m);
  CHECK(moved < 2.0);  // at most the step it took to leave
  const Vec2 fixed = w->observers()[0];
  for (int k = 0; k < 10; ++k) w->step();
  CHECK(w->observers()[0].x_m == fixed.x_m);
  CHECK(w->observers()[0].y_m == fixed.y_m);

  // Plain points end a follow too.
  REQUIRE(apply_one(*w, SetObservers{{}, first_walker(*w)}).status == CommandStatus::Accepted);
  REQUIRE(apply_one(*w, SetObservers{{ObserverPoint{5, 5}}, {}}).status == CommandStatus::Accepted);
  CHECK(w->followed().is_null());
}

TEST_CASE("follow refuses unknown, dormant and mixed requests and changes nothing") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  for (int k = 0; k < 40; ++k) w->step();
  const auto before = w->observers();

  CommandResult r = apply_one(*w, SetObservers{{}, EntityId{999, 7}});
  CHECK(r.status == CommandStatus::Rejected);
  CHECK(r.reason == RejectReason::UnknownEntity);
  CHECK(r.message == "follow: entity 999:7 is not alive");

  const ResidentStore& rs = w->population().residents();
  EntityId dormant;
  for (std::uint32_t i = 0; i < rs.size(); ++i)
    if (rs.active[i] == ResidentStore::kDormant) dormant = rs.id[i];
  REQUIRE_FALSE(dormant.is_null());
  r = apply_one(*w, SetObservers{{}, dormant});
  CHECK(r.status == CommandStatus::Rejected);
  CHECK(r.reason == RejectReason::InvalidArgument);
  CHECK(r.message.find("is not on a lane") != std::string::npos);

  r = apply_one(*w, SetObservers{{ObserverPoint{1, 2}}, first_walker(*w)});
  CHECK(r.status == CommandStatus::Rejected);
  CHECK(r.message == "follow: give either points or an entity to follow, not both");
  CHECK(w->observers() == before);
  CHECK(w->followed().is_null());
}

TEST_CASE("on the corridor the observer follows the first vehicle and its tier changes") {
  const Scenario s = load("corridor.city.json");
  auto w = make(s);
  EntityId first;
  for (int k = 0; k < 200 && first.is_null(); ++k) {
    w->step();
    for (const EntityId id : w->vehicles().store().id) {
      if (first.is_null() || id < first) first = id;
    }
  }
  REQUIRE_FALSE(first.is_null());
  REQUIRE(apply_one(*w, SetObservers{{}, first}).status == CommandStatus::Accepted);
  for (int k = 0; k < 8; ++k) w->step();
  // Followed: the vehicle itself is at distance ~0 and Full.
  CHECK(w->describe(first).tier == SimTier::Full);
  const Pose p = w->describe(first).pose;
  CHECK(std::hypot(w->observers()[0].x_m - p.x_m, w->observers()[0].y_m - p.y_m) < 15.0);
}

TEST_CASE(
    "scenario observer_follow = first_vehicle: the observer waits, then follows the first vehicle "
    "on the road; digested, checkpointed, cancelled by an operator SetObservers") {
  Scenario s = load("corridor.city.json");
  s.observer_follow = ObserverFollow::FirstVehicle;
  Scenario fixed = s;
  fixed.observer_follow = ObserverFollow::None;
  auto w = make(s);
  auto plain = make(fixed);
  CHECK(w->follow_first_vehicle_pending());
  CHECK_FALSE(plain->follow_first_vehicle_pending());
  // Waiting is state: the digests differ before any vehicle moves.
  CHECK(w->digest() != plain->digest());

  // A checkpoint taken while waiting continues with the same digest chain,
  // and the restored world latches onto the same vehicle.
  auto waiting = World::restore(s, w->capture());
  REQUIRE(waiting.world);
  CHECK(waiting.world->follow_first_vehicle_pending());

  int steps = 0;
  while (w->vehicles().store().size() == 0 && steps < 200) {
    w->step();
    waiting.world->step();
    ++steps;
  }
  REQUIRE(w->vehicles().store().size() > 0);
  const EntityId first = w->vehicles().store().id[0];
  CHECK(w->follow_first_vehicle_pending());  // it is seen at the start of the next step
  w->step();
  waiting.world->step();
  CHECK_FALSE(w->follow_first_vehicle_pending());
  CHECK(w->followed() == first);
  CHECK(waiting.world->followed() == first);
  CHECK(waiting.world->digest() == w->digest());

  // The observer rides with it: the followed vehicle is Full, and over the
  // loop the other vehicles cross the Full / Simulated boundary.
  bool some_full = false, some_simulated = false;
  for (int k = 0; k < 300; ++k) {
    w->step();
    REQUIRE(w->followed() == first);
    const Pose p = w->describe(first).pose;
    REQUIRE(std::hypot(w->observers()[0].x_m - p.x_m, w->observers()[0].y_m - p.y_m) < 15.0);
    const VehicleStore& vs = w->vehicles().store();
    for (std::uint32_t i = 0; i < vs.size(); ++i) {
      if (vs.id[i] == first) continue;
      some_full |= vs.sim_tier[i] == SimTier::Full;
      some_simulated |= vs.sim_tier[i] == SimTier::Simulated;
    }
  }
  CHECK(w->describe(first).tier == SimTier::Full);
  CHECK(some_full);
  CHECK(some_simulated);

  // A checkpoint that waits while it already follows, or waits on a scenario
  // without the field, is refused by its path.
  {
    WorldCheckpoint cp = w->capture();
    cp.follow_first_vehicle = true;
    const auto r = World::restore(s, cp);
    CHECK_FALSE(r.world);
    REQUIRE_FALSE(r.errors.empty());
    CHECK(r.errors[0].path == "follow_first_vehicle");
  }
  {
    WorldCheckpoint cp = make(s)->capture();
    const auto r = World::restore(fixed, cp);
    CHECK_FALSE(r.world);
    REQUIRE_FALSE(r.errors.empty());
    CHECK(r.errors[0].path == "follow_first_vehicle");
  }

  // An operator SetObservers before the first vehicle cancels the wait.
  auto early = make(s);
  REQUIRE(apply_one(*early, SetObservers{{ObserverPoint{500, 500}}, {}}).status ==
          CommandStatus::Accepted);
  CHECK_FALSE(early->follow_first_vehicle_pending());
  for (int k = 0; k < steps + 5; ++k) early->step();
  CHECK(early->followed().is_null());
  REQUIRE(early->observers().size() == 1);
  CHECK(early->observers()[0].x_m == 500.0);
}

TEST_CASE("observer_follow = first_vehicle without a garage is refused by its field") {
  Scenario s = load("largeblock.city.json");
  REQUIRE(s.garages.empty());
  s.observer_follow = ObserverFollow::FirstVehicle;
  const auto errors = validate_scenario(s);
  REQUIRE_FALSE(errors.empty());
  CHECK(errors[0].path == "observer_follow");
}
