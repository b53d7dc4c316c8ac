// Spawn pressure (commands/spawn_pedestrian.cpp, phases/04_spawn_pipeline.cpp,
// spawn_pipeline.hpp "Importance order" and "Displacement"): phase 4 creates
// identities most important first; at spawn.queue_depth a more important
// request displaces the weakest Queued one (Canceled, Displaced) and a weaker
// one is refused; all of it deterministic and checkpointed.
#include <catch2/catch.hpp>

#include "../make_world.hpp"
#include "bustle/core/world.hpp"

using namespace bustle::core;
using bustle::core::test::make_world;

namespace {

// A sidewalk beside the observer, one 2 km away, and a zone of two lanes
// whose nearer lane is 500 m away.
Scenario city() {
  Scenario s;
  s.id = "test.spawn-pressure";
  s.lanes = {
      {"near", LaneKind::Sidewalk, {{0, 0}, {20, 0}}, 1.4, {"near"}},
      {"far", LaneKind::Sidewalk, {{2000, 0}, {2020, 0}}, 1.4, {"far"}},
      {"mid-a", LaneKind::Sidewalk, {{500, 0}, {520, 0}}, 1.4, {"mid-a"}},
      {"mid-b", LaneKind::Sidewalk, {{3000, 0}, {3020, 0}}, 1.4, {"mid-b"}},
  };
  s.zones = {{"mid", {"mid-a", "mid-b"}, 100}};
  s.observers = {{10, 0}};
  s.entity_capacity = 64;
  s.spawn.per_step_cap = 1;
  s.spawn.queue_depth = 2;
  return s;
}

SpawnPedestrian at(const char* lane, std::uint8_t priority = 1, const char* zone = "") {
  return SpawnPedestrian{zone, lane, priority, 0, {}};
}

// Submits every request, steps once, returns the results in order.
std::vector<CommandResult> in_one_step(World& w, const std::vector<SpawnPedestrian>& requests) {
  std::uint32_t request = 0;
  for (const SpawnPedestrian& r : requests)
    REQUIRE(w.submit({CommandOrigin{7, ++request}, r}) == SubmitStatus::Queued);
  w.step();
  const auto results = w.last_command_results();
  REQUIRE(results.size() == requests.size());
  return {results.begin(), results.end()};
}

SpawnState state_of(const World& w, std::uint64_t handle) {
  const auto h = w.find_spawn(handle);
  REQUIRE(h);
  return h->state;
}

}  // namespace

TEST_CASE("phase 4 creates the identity of the nearer request first under per_step_cap 1") {
  Scenario s = city();
  s.spawn.queue_depth = 8;
  auto w = make_world(s, 3);
  const auto r = in_one_step(*w, {at("far"), at("near")});
  REQUIRE(r[0].status == CommandStatus::Accepted);
  REQUIRE(r[1].status == CommandStatus::Accepted);
  const std::uint64_t far = r[0].handle, near = r[1].handle;
  REQUIRE(far < near);  // FIFO would pick `far`
  w->step();
  CHECK(state_of(*w, near) == SpawnState::IdentityCreated);
  CHECK(state_of(*w, far) == SpawnState::Queued);
  CHECK(w->spawn_pipeline().counters.deferred_by_cap == 1);
  w->step();
  CHECK(state_of(*w, near) == SpawnState::Registered);
  CHECK(state_of(*w, far) == SpawnState::IdentityCreated);
  CHECK(w->check_invariants().ok());
}

TEST_CASE("importance: class weight, zone lanes' nearest midpoint, and placeless requests") {
  Scenario s = city();
  s.spawn.queue_depth = 8;
  double* weight = s.tiers.importance.class_weight;
  weight[0] = 8.0;  // story counts 8x nearer
  weight[1] = weight[2] = weight[3] = 1.0;
  auto w = make_world(s, 3);
  // Story at 2 km (d_eff 2000 / 8 = 250 m) beats quest in zone "mid" (nearest
  // lane at 500 m), which beats any sidewalk (no place: last).
  const auto r =
      in_one_step(*w, {SpawnPedestrian{"", "", 1, 0, {}}, at("", 1, "mid"), at("far", 0)});
  for (const CommandResult& c : r) REQUIRE(c.status == CommandStatus::Accepted);
  w->step();
  CHECK(state_of(*w, r[2].handle) == SpawnState::IdentityCreated);
  w->step();
  CHECK(state_of(*w, r[1].handle) == SpawnState::IdentityCreated);
  CHECK(state_of(*w, r[0].handle) == SpawnState::Queued);
  w->step();
  CHECK(state_of(*w, r[0].handle) == SpawnState::IdentityCreated);
}

TEST_CASE("with no observers the order is priority class, then handle") {
  Scenario s = city();
  s.observers.clear();
  s.spawn.queue_depth = 8;
  auto w = make_world(s, 3);
  const auto r = in_one_step(*w, {at("near", 3), at("far", 2), at("near", 2)});
  w->step();
  CHECK(state_of(*w, r[1].handle) == SpawnState::IdentityCreated);
  w->step();
  CHECK(state_of(*w, r[2].handle) == SpawnState::IdentityCreated);
  CHECK(state_of(*w, r[0].handle) == SpawnState::Queued);
}

TEST_CASE("at queue_depth a more important request displaces the weakest queued one") {
  const Scenario s = city();
  auto w = make_world(s, 3);
  const auto r = in_one_step(*w, {at("far"), at("far"), at("near"), at("far"), at("near")});
  // 1 and 2 fill the queue; 3 (near) displaces 2 (far, the later handle of the
  // two equally weak); 4 (far) ranks after both queued; 5 (near) displaces 1.
  REQUIRE(r[0].status == CommandStatus::Accepted);
  REQUIRE(r[1].status == CommandStatus::Accepted);
  REQUIRE(r[2].status == CommandStatus::Accepted);
  CHECK(r[3].status == CommandStatus::Rejected);
  CHECK(r[3].reason == RejectReason::QueueFull);
  CHECK(r[3].message == "spawn queue is at its depth (2) and no queued request is less important");
  REQUIRE(r[4].status == CommandStatus::Accepted);
  const auto displaced = w->find_spawn(r[1].handle);
  REQUIRE(displaced);
  CHECK(displaced->state == SpawnState::Canceled);
  CHECK(displaced->failure == SpawnFailure::Displaced);
  CHECK(std::string(to_string(displaced->failure)) == "displaced");
  CHECK(state_of(*w, r[0].handle) == SpawnState::Canceled);
  CHECK(w->find_spawn(r[0].handle)->failure == SpawnFailure::Displaced);
  const SpawnCounters& c = w->spawn_pipeline().counters;
  CHECK(c.displaced_total == 2);
  CHECK(c.per_state_total[static_cast<std::size_t>(SpawnState::Canceled)] == 2);
  CHECK(w->spawn_pipeline().live.size() == 2);
  // The displaced handle's Canceled event carries the reason.
  bool seen = false;
  for (const SpawnEvent& e : w->spawn_events()) {
    if (e.handle == r[1].handle && e.state == SpawnState::Canceled) {
      seen = true;
      CHECK(e.failure == SpawnFailure::Displaced);
    }
  }
  CHECK(seen);
  CHECK(w->check_invariants().ok());
}

TEST_CASE("a request finds nothing to displace once the queued ones have identities") {
  const Scenario s = city();
  auto w = make_world(s, 3);
  in_one_step(*w, {at("far"), at("far")});
  w->step();  // the first becomes IdentityCreated, the second waits (per_step_cap 1)
  w->step();  // the first Registered, the second IdentityCreated: none Queued
  REQUIRE(w->spawn_pipeline().live.size() == 2);
  for (const SpawnHandleState& h : w->spawn_pipeline().live) REQUIRE(h.state != SpawnState::Queued);
  const auto r = in_one_step(*w, {at("near", 0)});
  CHECK(r[0].status == CommandStatus::Rejected);
  CHECK(r[0].reason == RejectReason::QueueFull);
  CHECK(w->spawn_pipeline().counters.displaced_total == 0);
}

TEST_CASE("spawn pressure is deterministic and survives a checkpoint") {
  const Scenario s = city();
  auto run = [&](std::unique_ptr<World>& w) {
    in_one_step(*w, {at("far"), at("far"), at("near"), at("far", 0)});
  };
  auto a = make_world(s, 3);
  auto b = make_world(s, 3);
  run(a);
  run(b);
  REQUIRE(a->spawn_pipeline().counters.displaced_total > 0);
  REQUIRE(a->digest() == b->digest());
  const WorldCheckpoint cp = a->capture();
  auto restored = World::restore(s, cp);
  INFO((restored.errors.empty() ? std::string() : restored.errors[0].message));
  REQUIRE(restored.world);
  CHECK(restored.world->spawn_pipeline() == a->spawn_pipeline());
  CHECK(restored.world->digest() == a->digest());
  for (int k = 0; k < 6; ++k) {
    // More pressure after the restore: the same displacement on both sides.
    if (k == 1) {
      in_one_step(*a, {at("near", 0), at("far", 3)});
      in_one_step(*restored.world, {at("near", 0), at("far", 3)});
      in_one_step(*b, {at("near", 0), at("far", 3)});
    } else {
      a->step();
      restored.world->step();
      b->step();
    }
    REQUIRE(restored.world->digest() == a->digest());
    REQUIRE(b->digest() == a->digest());
  }
  CHECK(restored.world->spawn_pipeline() == a->spawn_pipeline());
  CHECK(a->check_invariants().ok());
}

TEST_CASE("the displacement counter is digested and checkpointed") {
  const Scenario s = city();
  auto w = make_world(s, 3);
  in_one_step(*w, {at("far"), at("far"), at("near")});
  REQUIRE(w->spawn_pipeline().counters.displaced_total == 1);
  WorldCheckpoint cp = w->capture();
  cp.spawn.counters.displaced_total = 2;
  // The stored digest no longer matches the state: the counter is digested.
  auto changed = World::restore(s, cp);
  CHECK_FALSE(changed.world);
  REQUIRE(changed.errors.size() == 1);
  CHECK(changed.errors[0].path == "digest");
  CHECK(changed.errors[0].message.find("the restored state hashes to") != std::string::npos);
  auto same = World::restore(s, w->capture());
  REQUIRE(same.world);
  CHECK(same.world->spawn_pipeline().counters.displaced_total == 1);
}
