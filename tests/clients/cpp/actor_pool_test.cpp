// Actor pool policy (actor_pool.hpp) driven directly, with the headless
// actor factory standing in for an engine.
#include "bustle/client/actor_pool.hpp"

#include <catch2/catch.hpp>

#include "bustle/client/headless_backend.hpp"

namespace c = bustle::client;

namespace {

c::EntityState state(std::uint32_t slot, std::uint16_t archetype) {
  c::EntityState s;
  s.id = c::EntityId{slot + 100, 1};
  s.slot = c::SlotId{slot};
  s.archetype = archetype;
  s.pose = c::RenderPose{static_cast<double>(slot), 0.0, 0.0, 0.0};
  return s;
}

c::ActivationResult activate(c::ActorPoolBackend& pool, std::uint32_t slot,
                             std::uint16_t archetype) {
  const c::EntityState s = state(slot, archetype);
  return pool.activate(s.slot, s.id, archetype, c::RepresentationHint::Actor, s);
}

void deactivate(c::ActorPoolBackend& pool, std::uint32_t slot) {
  pool.deactivate(c::SlotId{slot}, c::EntityId{slot + 100, 1});
}

}  // namespace

TEST_CASE("A pool makes its up-front actors on the first entity of an archetype", "[pool]") {
  c::HeadlessActorFactory factory;
  c::ActorPoolBackend pool(factory);
  REQUIRE(pool.initialize(nullptr));
  CHECK(pool.config().default_pool_size == 8);
  CHECK(pool.config().max_pool_size == 256);
  CHECK_FALSE(pool.has_pool(3));
  CHECK(factory.actors().empty());
  CHECK(activate(pool, 0, 3).status == c::ActivationStatus::Active);
  CHECK(factory.spawned(3) == 8);
  CHECK(pool.stats(3).size == 8);
  CHECK(pool.stats(3).in_use == 1);
  CHECK(pool.is_instance_active(c::SlotId{0}));
  CHECK(factory.actor(pool.actor_of(c::SlotId{0})).shown);
  CHECK(factory.actor(pool.actor_of(c::SlotId{0})).id == (c::EntityId{100, 1}));
  // Another archetype has its own pool.
  CHECK(activate(pool, 1, 4).status == c::ActivationStatus::Active);
  CHECK(factory.spawned(4) == 8);
  CHECK(pool.stats(3).in_use == 1);
}

TEST_CASE(
    "A full pool grows one actor at a time up to its cap, then entities wait and none is dropped",
    "[pool]") {
  c::HeadlessActorFactory factory;
  c::MemoryLogSink log;
  c::ActorPoolConfig config;
  config.default_pool_size = 2;
  config.max_pool_size = 4;
  config.trace = true;
  c::ActorPoolBackend pool(factory, config);
  REQUIRE(pool.initialize(&log));
  for (std::uint32_t s = 0; s < 2; ++s)
    CHECK(activate(pool, s, 0).status == c::ActivationStatus::Active);
  CHECK(pool.stats(0).size == 2);
  CHECK(activate(pool, 2, 0).status == c::ActivationStatus::Active);
  CHECK(pool.stats(0).size == 3);  // grew by exactly one
  CHECK(pool.stats(0).grown == 1);
  CHECK(activate(pool, 3, 0).status == c::ActivationStatus::Active);
  CHECK(pool.stats(0).size == 4);
  // At the cap: the next two wait, in arrival order.
  const c::ActivationResult fifth = activate(pool, 4, 0);
  CHECK(fifth.status == c::ActivationStatus::Pending);
  CHECK(fifth.reason == c::UnassignedReason::PoolAtCap);
  CHECK(activate(pool, 5, 0).status == c::ActivationStatus::Pending);
  CHECK(pool.stats(0).size == 4);
  CHECK(pool.stats(0).waiting == 2);
  CHECK(factory.actors().size() == 4);
  CHECK(pool.waiting(c::SlotId{4}));
  // A retry changes nothing (no second actor, no second place in the queue).
  CHECK(activate(pool, 4, 0).status == c::ActivationStatus::Pending);
  CHECK(pool.stats(0).waiting == 2);
  CHECK(log.count("pool", "at its cap of 4") == 1);  // warned once

  // Slot 1 leaves: its actor goes to slot 4, the first that waited.
  const c::ActorHandle freed = pool.actor_of(c::SlotId{1});
  deactivate(pool, 1);
  CHECK(pool.actor_of(c::SlotId{4}) == freed);
  CHECK(pool.is_instance_active(c::SlotId{4}));
  CHECK(factory.actor(freed).id == (c::EntityId{104, 1}));
  CHECK(pool.stats(0).reused == 1);
  CHECK(pool.stats(0).waiting == 1);
  // A waiting entity that leaves just leaves the queue.
  deactivate(pool, 5);
  CHECK(pool.stats(0).waiting == 0);
  deactivate(pool, 0);
  CHECK(pool.stats(0).in_use == 3);
  CHECK(factory.shown() == 3);
  CHECK(log.count("pool", "grew by one") == 2);
  CHECK(log.count("pool", "waiting at the cap") == 2);
  CHECK(log.count("pool", "reused for a waiting entity") == 1);

  pool.deinitialize();
  for (const auto& a : factory.actors()) CHECK(a.destroyed);
}

TEST_CASE("Per-archetype overrides: up-front size (pre-warmed) and cap", "[pool]") {
  c::HeadlessActorFactory factory;
  c::ActorPoolConfig config;
  config.pool_size_by_archetype = {{5, 2}};
  config.max_pool_size_by_archetype = {{5, 3}, {6, 1}};
  c::ActorPoolBackend pool(factory, config);
  REQUIRE(pool.initialize(nullptr));
  CHECK(pool.has_pool(5));  // pre-warmed at initialize()
  CHECK(factory.spawned(5) == 2);
  CHECK(pool.cap(5) == 3);
  CHECK(pool.cap(6) == 8);  // a cap below the up-front size is raised to it
  CHECK(pool.cap(7) == 256);
  for (std::uint32_t s = 0; s < 3; ++s)
    CHECK(activate(pool, s, 5).status == c::ActivationStatus::Active);
  CHECK(activate(pool, 3, 5).status == c::ActivationStatus::Pending);
  CHECK(factory.spawned(5) == 3);
}

TEST_CASE(
    "A spawn budget per frame spreads pre-warm over frames and defers activations, dropping none",
    "[pool]") {
  c::HeadlessActorFactory factory;
  c::ActorPoolConfig config;
  config.max_spawns_per_frame = 3;
  config.pool_size_by_archetype = {{1, 8}};  // pre-warmed at initialize
  c::ActorPoolBackend pool(factory, config);
  REQUIRE(pool.initialize(nullptr));
  // initialize() spends the first frame's budget: 3 of the 8 up-front actors.
  CHECK(pool.stats(1).size == 3);
  CHECK(pool.spawns_this_frame() == 3);
  pool.begin_frame(0);
  CHECK(pool.stats(1).size == 6);
  pool.begin_frame(1);
  CHECK(pool.stats(1).size == 8);  // done: only the 2 missing ones
  CHECK(pool.spawns_this_frame() == 2);
  pool.begin_frame(2);
  CHECK(pool.spawns_this_frame() == 0);
  CHECK(pool.stats(1).grown == 0);  // pre-warm is not growth

  // Archetype 2 (default 8 up front): the first entity creates the pool
  // with 3 actors this frame; entities 4 and 5 are deferred, not waiting.
  pool.begin_frame(3);
  for (std::uint32_t slot = 0; slot < 3; ++slot)
    CHECK(activate(pool, slot, 2).status == c::ActivationStatus::Active);
  CHECK(pool.stats(2).size == 3);
  const c::ActivationResult deferred = activate(pool, 3, 2);
  CHECK(deferred.status == c::ActivationStatus::Pending);
  CHECK(deferred.reason == c::UnassignedReason::Loading);
  CHECK_FALSE(pool.waiting(c::SlotId{3}));
  CHECK_FALSE(pool.is_instance_active(c::SlotId{3}));
  // The next frame pre-warms three more; the layer's retry then takes one.
  pool.begin_frame(4);
  CHECK(pool.stats(2).size == 6);
  CHECK(activate(pool, 3, 2).status == c::ActivationStatus::Active);
  CHECK(pool.actor_of(c::SlotId{3}) != 0);
  // A deferred entity that leaves before its retry holds nothing.
  pool.begin_frame(5);  // 2 more up-front: 8
  CHECK(pool.stats(2).size == 8);
  for (std::uint32_t slot = 4; slot < 8; ++slot)
    CHECK(activate(pool, slot, 2).status == c::ActivationStatus::Active);
  CHECK(activate(pool, 8, 2).status ==
        c::ActivationStatus::Active);  // grows by one (budget: 1 left)
  CHECK(pool.stats(2).grown == 1);
  CHECK(activate(pool, 9, 2).status == c::ActivationStatus::Pending);  // budget spent
  deactivate(pool, 9);
  CHECK_FALSE(pool.is_instance_active(c::SlotId{9}));
  CHECK(pool.stats(2).in_use == 9);
  CHECK(pool.stats(2).waiting == 0);
}

TEST_CASE("Without a spawn budget (the default) every needed actor is spawned at once", "[pool]") {
  c::HeadlessActorFactory factory;
  c::ActorPoolBackend pool(factory);
  REQUIRE(pool.initialize(nullptr));
  CHECK(pool.config().max_spawns_per_frame == 0);
  for (std::uint32_t slot = 0; slot < 20; ++slot)
    CHECK(activate(pool, slot, 0).status == c::ActivationStatus::Active);
  CHECK(pool.stats(0).size == 20);
  CHECK(pool.stats(0).grown == 12);
}

namespace {
// A factory whose engine cannot make actors while `failing` is set.
class FlakyFactory final : public c::ActorFactory {
 public:
  bool failing = true;
  std::uint32_t made = 0;
  c::ActorHandle spawn_actor(std::uint16_t /*archetype*/) override { return failing ? 0 : ++made; }
  void activate_actor(c::ActorHandle, c::SlotId, c::EntityId, const c::EntityState&) override {}
  void park_actor(c::ActorHandle) override {}
  void set_actor_pose(c::ActorHandle, std::int64_t, const c::RenderPose&) override {}
  void destroy_actor(c::ActorHandle) override {}
};
}  // namespace

TEST_CASE(
    "A spawn the engine cannot make leaves the entity pending, and it is activated once spawns "
    "work",
    "[pool]") {
  FlakyFactory factory;
  c::ActorPoolBackend pool(factory);
  REQUIRE(pool.initialize(nullptr));
  const c::ActivationResult first = activate(pool, 0, 5);
  CHECK(first.status == c::ActivationStatus::Pending);
  CHECK(first.reason == c::UnassignedReason::ClassNotLoaded);
  CHECK(pool.stats(5).size == 0);  // nothing counted as made
  CHECK_FALSE(pool.waiting(c::SlotId{0}));
  factory.failing = false;
  pool.begin_frame(0);  // pre-warm resumes: the 8 up-front actors
  CHECK(pool.stats(5).size == 8);
  CHECK(activate(pool, 0, 5).status == c::ActivationStatus::Active);  // the layer's retry
  CHECK(pool.actor_of(c::SlotId{0}) != 0);
  CHECK(pool.stats(5).grown == 0);
}

TEST_CASE("An actor is told its velocity on screen and its entity's hint changes", "[pool]") {
  c::HeadlessActorFactory factory;
  c::ActorPoolBackend pool(factory, {.default_pool_size = 1});
  REQUIRE(pool.initialize(nullptr));
  REQUIRE(activate(pool, 0, 0).status == c::ActivationStatus::Active);
  const c::ActorHandle a = pool.actor_of(c::SlotId{0});
  pool.apply_interpolation(c::SlotId{0}, 1'000'000, {0.0, 0.0, 0.0, 0.0});
  CHECK(factory.actor(a).velocity == c::RenderVelocity{});  // first pose: no motion known
  pool.apply_interpolation(c::SlotId{0}, 1'500'000, {1.0, -0.5, 0.0, 0.0});
  CHECK(factory.actor(a).velocity.x_mps == Approx(2.0));
  CHECK(factory.actor(a).velocity.y_mps == Approx(-1.0));
  pool.apply_interpolation(c::SlotId{0}, 1'500'000, {1.0, -0.5, 0.0, 0.0});  // same frame time
  CHECK(factory.actor(a).velocity.x_mps == Approx(2.0));
  pool.apply_interpolation(c::SlotId{0}, 2'000'000, {1.0, -0.5, 0.0, 0.0});  // holds
  CHECK(factory.actor(a).velocity == c::RenderVelocity{});

  c::EntityState s = state(0, 0);
  CHECK(factory.actor(a).hint == c::RepresentationHint::Actor);
  s.representation = c::RepresentationHint::Instanced;
  pool.extract_update(s, 0, c::SlotId{0});
  CHECK(factory.actor(a).hint == c::RepresentationHint::Instanced);
}

TEST_CASE("An archetype without an actor class is refused, and no actor is made for it", "[pool]") {
  c::HeadlessActorFactory factory;
  factory.set_no_class(5);
  c::ActorPoolBackend pool(factory, {.pool_size_by_archetype = {{5, 3}}});
  REQUIRE(pool.initialize(nullptr));  // no pre-warm for it either
  const c::ActivationResult r = activate(pool, 0, 5);
  CHECK(r.status == c::ActivationStatus::Refused);
  CHECK(r.reason == c::UnassignedReason::ClassNotLoaded);
  CHECK(factory.actors().empty());
  CHECK_FALSE(pool.has_pool(5));
}

TEST_CASE("A slot whose actor is not ready yet is not active", "[pool]") {
  c::HeadlessActorFactory factory;
  factory.set_spawn_ready(false);
  c::ActorPoolBackend pool(factory, {.default_pool_size = 1});
  REQUIRE(pool.initialize(nullptr));
  CHECK(activate(pool, 0, 0).status == c::ActivationStatus::Active);
  CHECK_FALSE(pool.is_instance_active(c::SlotId{0}));
  factory.set_ready(pool.actor_of(c::SlotId{0}), true);
  CHECK(pool.is_instance_active(c::SlotId{0}));
}
