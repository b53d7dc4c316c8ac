// RepresentationLayer (representation.hpp) with headless backends: samples
// per Delta, rendering, retries, moves between backends, pools at their cap,
// backend swaps, history reset and lease batches. Deltas are built like a
// server's (support/sdk_frames.hpp). Each case declares its backends (and
// log sink) before the layer: they must outlive their installation.
#include "bustle/client/representation.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

#include "bustle/client/actor_pool.hpp"
#include "bustle/client/headless_backend.hpp"
#include "support/sdk_frames.hpp"

namespace c = bustle::client;
namespace t = bustle::test;
namespace wire = bustle::wire;
using H = c::RepresentationHint;

namespace {

constexpr std::uint32_t kLayerStepUs = 100'000;

// One lane, 1 km along +x.
c::WelcomeInfo world() {
  return t::one_lane_world(kLayerStepUs);
}

t::DeltaSpec step(std::uint64_t n) {
  t::DeltaSpec d;
  d.step = n;
  d.sim_time_us = n * kLayerStepUs;
  return d;
}

// The first Delta: a baseline at step 1 with `entered`.
t::DeltaSpec baseline(std::vector<wire::EntityEnter> entered) {
  t::DeltaSpec d = step(1);
  d.baseline = true;
  d.entered = std::move(entered);
  return d;
}

wire::EntityEnter layer_walker(std::uint32_t index, std::uint32_t s_mm, std::uint32_t speed_mmps,
                               H hint = H::Actor, std::uint16_t archetype = 0) {
  return t::enter(index, 1, 0, s_mm, speed_mmps, wire::EntityKind::Pedestrian, archetype,
                  wire::SimTier::Full, static_cast<wire::RepresentationHint>(hint));
}

wire::EntityChange hint_change(std::uint32_t index, H hint) {
  return wire::EntityChange(index, wire::EntityField::Representation,
                            static_cast<std::uint8_t>(hint));
}

void apply_to_layer(c::RepresentationLayer& layer, const t::DeltaSpec& spec) {
  const c::ApplySummary s =
      layer.apply(t::decoded(spec), static_cast<std::int64_t>(spec.sim_time_us));
  REQUIRE(s.ok());
}

c::SlotId slot_of(const c::RepresentationLayer& layer, std::uint32_t index) {
  const c::EntityView* v = layer.mirror().find(c::EntityId{index, 1});
  REQUIRE(v != nullptr);
  return v->slot;
}

std::size_t event_index(const c::HeadlessBackend& b, c::HeadlessEventKind kind,
                        std::uint32_t slot) {
  const auto& ev = b.events();
  const auto it = std::find_if(ev.begin(), ev.end(), [&](const c::HeadlessEvent& e) {
    return e.kind == kind && e.slot.value == slot;
  });
  return it == ev.end() ? ev.size() : static_cast<std::size_t>(it - ev.begin());
}

}  // namespace

TEST_CASE(
    "Every Delta gives each entity a sample from lane-relative motion; frames render between them",
    "[representation]") {
  c::HeadlessBackend actors;
  c::RepresentationLayer layer;
  layer.set_world(world());
  REQUIRE(layer.set_backend(H::Actor, &actors) == c::InstallStatus::Installed);
  t::DeltaSpec first = step(10);
  first.baseline = true;
  first.entered = {layer_walker(1, 0, 10'000)};  // 10 m/s (1 m per step), no later correction
  apply_to_layer(layer, first);
  for (std::uint64_t n = 11; n <= 13; ++n)
    apply_to_layer(layer, step(n));  // empty Deltas: prediction only
  CHECK(layer.counters().samples == 4);
  const c::SlotId slot = slot_of(layer, 1);
  REQUIRE(actors.is_instance_active(slot));

  layer.render_at(1'150'000);  // between steps 11 and 12
  REQUIRE(actors.frame_pose(slot) != nullptr);
  CHECK(actors.frame_pose(slot)->x_m == Approx(1.5).margin(1e-9));
  CHECK(actors.frame_render_time_us() == 1'150'000);

  SECTION("render() runs the delay behind the estimated server time") {
    // Deltas were "received" at local = sim time. The configured 100 ms is
    // one step: the delay is 1.5 steps, so 1.35 s now renders 1.2 s.
    CHECK(layer.render_delay_us() == 150'000);
    layer.render(1'350'000);
    CHECK(*layer.last_render_time_us() == 1'200'000);
    CHECK(actors.frame_pose(slot)->x_m == Approx(2.0).margin(1e-9));
    // Render time never goes back.
    layer.render(1'300'000);
    CHECK(*layer.last_render_time_us() == 1'200'000);
  }
}

TEST_CASE("The render delay is the configured one, but at least 1.5 server steps",
          "[representation]") {
  const auto delay = [](std::int64_t configured_us, std::uint32_t step_us) {
    c::RepresentationConfig config;
    config.interpolation.interpolation_delay_us = configured_us;
    c::RepresentationLayer layer(config);
    c::WelcomeInfo w = world();
    w.step_us = step_us;
    layer.set_world(w);
    return layer.render_delay_us();
  };
  CHECK(delay(100'000, 100'000) == 150'000);  // one step configured: 1.5 steps
  CHECK(delay(250'000, 100'000) == 250'000);  // more than 1.5 steps: kept
  CHECK(delay(100'000, 20'000) == 100'000);   // 50 Hz: the configured delay is 5 steps
  CHECK(delay(0, 33'333) == 49'999);          // none configured: 1.5 steps, rounded down
  c::RepresentationLayer before_welcome;
  CHECK(before_welcome.render_delay_us() ==
        c::RepresentationConfig{}.interpolation.interpolation_delay_us);
}

TEST_CASE("An instance a backend could not complete is retried until it is active",
          "[representation]") {
  c::HeadlessBackendOptions options;
  options.activation_attempts = 3;  // the resource "loads" for two more calls
  c::HeadlessBackend actors(options);
  c::RepresentationLayer layer;
  layer.set_world(world());
  layer.set_backend(H::Actor, &actors);
  t::DeltaSpec d = baseline({layer_walker(1, 0, 0)});
  apply_to_layer(layer, d);
  const c::SlotId slot = slot_of(layer, 1);
  CHECK_FALSE(actors.is_instance_active(slot));
  auto leases = layer.take_leases();
  REQUIRE(leases.size() == 1);
  CHECK(leases[0].state == c::LeaseState::Unassigned);
  CHECK(leases[0].reason == c::UnassignedReason::Loading);
  CHECK(layer.slot(slot)->pending);

  layer.render_at(0);
  CHECK_FALSE(actors.is_instance_active(slot));
  CHECK(layer.take_leases().empty());  // unchanged: nothing new to report
  layer.render_at(0);
  CHECK(actors.is_instance_active(slot));
  CHECK(layer.counters().activation_retries == 2);
  leases = layer.take_leases();
  REQUIRE(leases.size() == 1);
  CHECK(leases[0] ==
        (c::Lease{{1, 1}, c::LeaseState::Assigned, H::Actor, c::UnassignedReason::None}));
  CHECK_FALSE(layer.slot(slot)->pending);
}

TEST_CASE("A hint change moves an entity between backends without a gap", "[representation]") {
  c::HeadlessBackend actors({.name = "actors"});
  c::HeadlessBackend instances({.name = "instances"});
  c::RepresentationLayer layer;
  layer.set_world(world());
  layer.set_backend(H::Actor, &actors);
  layer.set_backend(H::Instanced, &instances);
  t::DeltaSpec d = baseline({layer_walker(1, 0, 1000), layer_walker(2, 0, 1000)});
  apply_to_layer(layer, d);
  const c::SlotId one = slot_of(layer, 1);
  const c::SlotId two = slot_of(layer, 2);
  layer.take_leases();

  SECTION("the new backend activates at once: activated there before deactivated here") {
    t::DeltaSpec change = step(2);
    change.changes = {hint_change(1, H::Instanced)};
    apply_to_layer(layer, change);
    CHECK(instances.is_instance_active(one));
    CHECK_FALSE(actors.is_instance_active(one));
    CHECK(layer.counters().moves == 1);
    // Both backends record into their own logs; the layer's order is checked
    // with a backend that refuses first (next section). Here: one frame later
    // the entity is drawn once, by the instanced backend.
    layer.render_at(150'000);
    CHECK(instances.frame_pose(one) != nullptr);
    CHECK(actors.frame_pose(one) == nullptr);
    const auto leases = layer.take_leases();
    REQUIRE(leases.size() == 1);
    CHECK(leases[0] ==
          (c::Lease{{1, 1}, c::LeaseState::Assigned, H::Instanced, c::UnassignedReason::None}));
  }

  SECTION(
      "the new backend is full: the old one keeps drawing (Preserved) until the new one is "
      "active") {
    instances.set_capacity(0);
    t::DeltaSpec change = step(2);
    change.changes = {hint_change(2, H::Instanced)};
    apply_to_layer(layer, change);
    CHECK(actors.is_instance_active(two));  // still drawn
    CHECK_FALSE(instances.is_instance_active(two));
    auto leases = layer.take_leases();
    REQUIRE(leases.size() == 1);
    CHECK(leases[0] ==
          (c::Lease{{2, 1}, c::LeaseState::Preserved, H::Actor, c::UnassignedReason::None}));
    for (int frame = 0; frame < 3; ++frame) {
      layer.render_at(150'000 + frame * 10'000);
      CHECK(actors.frame_pose(two) != nullptr);  // drawn every frame meanwhile
    }
    instances.set_capacity(10);
    const std::uint64_t frame_before = actors.frames();
    layer.render_at(200'000);
    CHECK(instances.is_instance_active(two));
    CHECK_FALSE(actors.is_instance_active(two));
    // Activated in the new backend and deactivated in the old in the same
    // frame, the activation first (frames counted at begin_frame: the move
    // happens before this frame's begin).
    const std::size_t on = event_index(instances, c::HeadlessEventKind::Activated, two.value);
    const std::size_t off = event_index(actors, c::HeadlessEventKind::Deactivated, two.value);
    REQUIRE(on < instances.events().size());
    REQUIRE(off < actors.events().size());
    CHECK(instances.events()[on].frame == frame_before);
    CHECK(actors.events()[off].frame == frame_before);
    CHECK(instances.frame_pose(two) != nullptr);
    leases = layer.take_leases();
    REQUIRE(leases.size() == 1);
    CHECK(leases[0] ==
          (c::Lease{{2, 1}, c::LeaseState::Assigned, H::Instanced, c::UnassignedReason::None}));
  }

  SECTION("hint None releases the representation") {
    t::DeltaSpec change = step(2);
    change.changes = {hint_change(1, H::None)};
    apply_to_layer(layer, change);
    CHECK_FALSE(actors.is_instance_active(one));
    const auto leases = layer.take_leases();
    REQUIRE(leases.size() == 1);
    CHECK(leases[0].state == c::LeaseState::Released);
  }
}

TEST_CASE(
    "Through the layer: at the pool's cap an entity waits (PoolAtCap) and is drawn when another "
    "leaves",
    "[representation][pool]") {
  c::MemoryLogSink log;
  c::HeadlessActorFactory factory;
  c::ActorPoolConfig config;
  config.default_pool_size = 1;
  config.max_pool_size = 2;
  c::ActorPoolBackend pool(factory, config);
  c::RepresentationLayer layer({}, &log);
  layer.set_world(world());
  layer.set_backend(H::Actor, &pool);
  t::DeltaSpec d =
      baseline({layer_walker(1, 0, 1000), layer_walker(2, 0, 1000), layer_walker(3, 5000, 1000)});
  apply_to_layer(layer, d);
  const c::SlotId third = slot_of(layer, 3);
  CHECK_FALSE(pool.is_instance_active(third));
  auto leases = layer.take_leases();
  REQUIRE(leases.size() == 3);
  CHECK(leases[2] ==
        (c::Lease{{3, 1}, c::LeaseState::Unassigned, H::None, c::UnassignedReason::PoolAtCap}));
  CHECK(log.count("pool", "cap of 2") == 1);

  t::DeltaSpec gone = step(2);
  gone.left = {wire::EntityId(1, 1)};
  apply_to_layer(layer, gone);
  CHECK(pool.is_instance_active(third));  // the pool handed over the freed actor
  layer.render_at(150'000);
  CHECK(factory.actor(pool.actor_of(third)).pose.x_m == Approx(5.05).margin(1e-9));
  leases = layer.take_leases();
  REQUIRE(leases.size() == 1);
  CHECK(leases[0] ==
        (c::Lease{{3, 1}, c::LeaseState::Assigned, H::Actor, c::UnassignedReason::None}));
  CHECK(factory.actors().size() == 2);  // never beyond the cap, nothing dropped
}

TEST_CASE("A reused slot starts with an empty history", "[representation]") {
  c::HeadlessBackend actors;
  c::RepresentationLayer layer;
  layer.set_world(world());
  layer.set_backend(H::Actor, &actors);
  t::DeltaSpec d = baseline({layer_walker(1, 100'000, 0)});
  apply_to_layer(layer, d);
  apply_to_layer(layer, step(2));
  const c::SlotId slot = slot_of(layer, 1);
  t::DeltaSpec swap = step(3);
  swap.left = {wire::EntityId(1, 1)};
  swap.entered = {layer_walker(2, 900'000, 0)};
  apply_to_layer(layer, swap);
  REQUIRE(slot_of(layer, 2) == slot);  // the freed slot was reused
  // Only the new entity's sample: no blend with the departed one at 100 m.
  const auto s = layer.sample(slot, 150'000);
  REQUIRE(s.has_value());
  CHECK(s->mode == c::SampleMode::Single);
  CHECK(s->value.x_m == Approx(900.0).margin(1e-9));
}

TEST_CASE("A backend that refuses to initialize is not installed; a swap moves every entity",
          "[representation]") {
  c::MemoryLogSink log;
  c::HeadlessBackend first({.name = "first"});
  c::HeadlessBackend refusing({.name = "refusing", .refuse_initialize = true});
  c::HeadlessBackend second({.name = "second"});
  c::RepresentationLayer layer({}, &log);
  layer.set_world(world());
  REQUIRE(layer.set_backend(H::Actor, &first) == c::InstallStatus::Installed);
  t::DeltaSpec d = baseline({layer_walker(1, 0, 1000), layer_walker(2, 0, 1000)});
  apply_to_layer(layer, d);
  CHECK(first.active_count() == 2);

  CHECK(layer.set_backend(H::Actor, &refusing) == c::InstallStatus::Refused);
  CHECK(layer.set_backend(H::None, &second) == c::InstallStatus::Refused);
  CHECK(layer.backend(H::Actor) == &first);
  CHECK(first.active_count() == 2);
  CHECK(log.count("representation", "refusing could not initialize") == 1);

  CHECK(layer.set_backend(H::Actor, &second) == c::InstallStatus::Installed);
  CHECK(second.active_count() == 2);
  CHECK(first.active_count() == 0);
  CHECK_FALSE(first.initialized());  // released and deinitialized
  layer.render_at(100'000);
  CHECK(second.frame_pose_count() == 2);
}

TEST_CASE("Leases are handed out in batches, one per slot and change", "[representation]") {
  c::HeadlessBackend actors;
  c::RepresentationLayer layer;
  layer.set_world(world());
  layer.set_backend(H::Actor, &actors);
  t::DeltaSpec d = step(1);
  d.baseline = true;
  for (std::uint32_t i = 1; i <= 5; ++i) d.entered.push_back(layer_walker(i, 0, 0));
  apply_to_layer(layer, d);
  CHECK(layer.queued_leases() == 5);
  CHECK(layer.take_leases(2).size() == 2);
  CHECK(layer.take_leases(2).size() == 2);
  CHECK(layer.take_leases(2).size() == 1);
  CHECK(layer.take_leases().empty());
  // No backend for Marker: Unassigned (Other).
  t::DeltaSpec change = step(2);
  change.changes = {hint_change(3, H::Marker)};
  apply_to_layer(layer, change);
  const auto leases = layer.take_leases();
  REQUIRE(leases.size() == 1);
  CHECK(leases[0] ==
        (c::Lease{{3, 1}, c::LeaseState::Unassigned, H::None, c::UnassignedReason::Other}));
}

namespace {
// Keeps the last EntityState each slot was given (extract_update).
struct StateRecorder final : c::RenderBackend {
  std::vector<c::EntityState> last;
  std::string_view name() const override { return "state-recorder"; }
  c::ActivationResult activate(c::SlotId, c::EntityId, std::uint16_t, c::RepresentationHint,
                               const c::EntityState&) override {
    return c::ActivationResult::active();
  }
  void deactivate(c::SlotId, c::EntityId) override {}
  bool extract_update(const c::EntityState& state, std::int64_t, c::SlotId slot) override {
    if (last.size() <= slot.value) last.resize(slot.value + 1);
    last[slot.value] = state;
    return true;
  }
  void apply_interpolation(c::SlotId, std::int64_t, const c::RenderPose&) override {}
};
}  // namespace

TEST_CASE("Corpses reach the backend's state and corpses_learned, entered dead or dying",
          "[representation]") {
  StateRecorder actors;
  c::RepresentationLayer layer;
  layer.set_world(world());
  REQUIRE(layer.set_backend(H::Actor, &actors) == c::InstallStatus::Installed);
  const wire::EntityEnter dead =
      t::enter(1, 1, 0, 0, 0, wire::EntityKind::Pedestrian, 0, wire::SimTier::Full,
               wire::RepresentationHint::Actor, wire::ControlPolicy::RouteFollow, true);
  apply_to_layer(layer, baseline({dead, layer_walker(2, 5'000, 0)}));
  CHECK(layer.corpses_learned() == std::vector<c::EntityId>{{1, 1}});
  CHECK(actors.last.at(slot_of(layer, 1).value).corpse);
  CHECK_FALSE(actors.last.at(slot_of(layer, 2).value).corpse);

  t::DeltaSpec kill = step(2);
  kill.changes = {wire::EntityChange(2, wire::EntityField::Corpse, 1)};
  apply_to_layer(layer, kill);
  CHECK(layer.corpses_learned() == std::vector<c::EntityId>{{2, 1}});
  CHECK(actors.last.at(slot_of(layer, 2).value).corpse);

  apply_to_layer(layer, step(3));  // nothing new
  CHECK(layer.corpses_learned().empty());
  CHECK(actors.last.at(slot_of(layer, 1).value).corpse);  // still one
}

TEST_CASE("An entity a backend refuses falls back per entity: Actor -> Instanced -> Marker",
          "[representation][fallback]") {
  c::HeadlessActorFactory factory;
  factory.set_no_class(1);  // archetypes 1 and 2 have no actor class
  factory.set_no_class(2);
  c::ActorPoolBackend pool(factory, {.default_pool_size = 1});
  c::HeadlessBackend instances({.name = "instances", .refuse_archetypes = {2}});  // no mesh for 2
  c::HeadlessBackend markers({.name = "markers"});
  c::RepresentationConfig config;
  SECTION("with the fallback (the default)") {}
  SECTION("without it") {
    config.fallback_to_coarser = false;
  }
  c::RepresentationLayer layer(config);
  layer.set_world(world());
  layer.set_backend(H::Actor, &pool);
  layer.set_backend(H::Instanced, &instances);
  layer.set_backend(H::Marker, &markers);
  apply_to_layer(
      layer,
      baseline({layer_walker(1, 0, 1000, H::Actor, 0), layer_walker(2, 0, 1000, H::Actor, 1),
                layer_walker(3, 0, 1000, H::Actor, 2), layer_walker(4, 0, 1000, H::Instanced, 2)}));
  const c::SlotId one = slot_of(layer, 1), two = slot_of(layer, 2);
  const c::SlotId three = slot_of(layer, 3), four = slot_of(layer, 4);
  // Never a stand-in actor for an archetype without a class.
  CHECK(factory.spawned(1) == 0);
  CHECK(factory.spawned(2) == 0);
  CHECK_FALSE(pool.has_pool(1));
  CHECK(pool.is_instance_active(one));
  auto leases = layer.take_leases();
  REQUIRE(leases.size() == 4);
  const auto lease = [](std::uint32_t index, c::LeaseState state, H hint, c::UnassignedReason why) {
    return c::Lease{{index, 1}, state, hint, why};
  };
  CHECK(leases[0] == lease(1, c::LeaseState::Assigned, H::Actor, c::UnassignedReason::None));
  layer.render_at(150'000);
  if (config.fallback_to_coarser) {
    CHECK(leases[1] == lease(2, c::LeaseState::Assigned, H::Instanced, c::UnassignedReason::None));
    CHECK(leases[2] == lease(3, c::LeaseState::Assigned, H::Marker, c::UnassignedReason::None));
    CHECK(leases[3] == lease(4, c::LeaseState::Assigned, H::Marker, c::UnassignedReason::None));
    CHECK(layer.slot(two)->drawn_as == H::Instanced);
    CHECK(instances.frame_pose(two) != nullptr);
    CHECK(markers.frame_pose(three) != nullptr);
    CHECK(markers.frame_pose(four) != nullptr);
    CHECK(instances.frame_pose(three) == nullptr);

    // A hint change retries the finer backends: Marker, then back to Actor
    // (the pool refuses again: Instanced draws it).
    t::DeltaSpec change = step(2);
    change.changes = {hint_change(2, H::Marker)};
    apply_to_layer(layer, change);
    CHECK(layer.slot(two)->drawn_as == H::Marker);
    CHECK_FALSE(instances.is_instance_active(two));
    change = step(3);
    change.changes = {hint_change(2, H::Actor)};
    apply_to_layer(layer, change);
    CHECK(layer.slot(two)->drawn_as == H::Instanced);
    CHECK_FALSE(markers.is_instance_active(two));
    leases = layer.take_leases();
    REQUIRE(leases.size() == 1);
    CHECK(leases[0] == lease(2, c::LeaseState::Assigned, H::Instanced, c::UnassignedReason::None));

    // Without the instanced backend, its entities move on to markers.
    layer.set_backend(H::Instanced, nullptr);
    CHECK(layer.slot(two)->drawn_as == H::Marker);
    CHECK(instances.active_count() == 0);
  } else {
    CHECK(leases[1] ==
          lease(2, c::LeaseState::Unassigned, H::None, c::UnassignedReason::ClassNotLoaded));
    CHECK(leases[2] ==
          lease(3, c::LeaseState::Unassigned, H::None, c::UnassignedReason::ClassNotLoaded));
    CHECK(layer.slot(two)->drawn_as == H::None);
    CHECK(instances.frame_pose(two) == nullptr);
    CHECK(markers.frame_pose(three) == nullptr);
  }
}

TEST_CASE("A hint with no backend installed is drawn by the next coarser one",
          "[representation][fallback]") {
  c::HeadlessBackend markers({.name = "markers"});
  c::HeadlessBackend actors({.name = "actors"});
  c::RepresentationLayer layer;
  layer.set_world(world());
  layer.set_backend(H::Marker, &markers);
  apply_to_layer(layer, baseline({layer_walker(1, 0, 1000, H::Actor),
                                  layer_walker(2, 0, 1000, H::Instanced)}));
  CHECK(markers.active_count() == 2);
  // An actor backend installed later takes its entities; markers keep the other.
  layer.set_backend(H::Actor, &actors);
  CHECK(actors.active_count() == 1);
  CHECK(markers.active_count() == 1);
  CHECK(layer.slot(slot_of(layer, 1))->drawn_as == H::Actor);
}

TEST_CASE("Pop-in cover: an instance stands in until the actor is ready, never a gap",
          "[representation][cover]") {
  c::HeadlessActorFactory factory;
  factory.set_spawn_ready(false);  // actors stream their meshes in
  c::ActorPoolBackend pool(factory, {.default_pool_size = 1, .max_spawns_per_frame = 1});
  c::HeadlessBackend instances({.name = "instances"});
  c::RepresentationLayer layer;
  layer.set_world(world());
  layer.set_backend(H::Actor, &pool);
  layer.set_backend(H::Instanced, &instances);
  apply_to_layer(layer, baseline({layer_walker(1, 0, 1000), layer_walker(2, 0, 1000),
                                  layer_walker(3, 0, 1000)}));
  const std::vector<c::SlotId> slots = {slot_of(layer, 1), slot_of(layer, 2), slot_of(layer, 3)};
  for (const c::SlotId s : slots) {
    CHECK(layer.slot(s)->drawn_as == H::Instanced);
    CHECK(layer.slot(s)->pending);
  }
  for (const c::Lease& l : layer.take_leases()) {
    CHECK(l.state == c::LeaseState::Preserved);
    CHECK(l.representation == H::Instanced);
  }
  CHECK(layer.counters().covers == 3);

  // Frames: one spawn each; an actor is made ready two frames after its
  // spawn. Every frame, every entity is drawn by exactly one backend.
  std::int64_t t_us = 150'000;
  std::vector<int> age(1, 0);
  for (int frame = 0; frame < 12; ++frame, t_us += 16'000) {
    layer.render_at(t_us);
    for (c::ActorHandle h = 1; h <= factory.actors().size(); ++h) {
      if (age.size() < h + 1) age.resize(h + 1, 0);
      if (++age[h] >= 2) factory.set_ready(h, true);
    }
    for (const c::SlotId s : slots) {
      const bool by_instance = instances.frame_pose(s) != nullptr;
      const c::ActorHandle a = pool.actor_of(s);
      const bool by_actor =
          a != 0 && factory.actor(a).ready && factory.actor(a).render_time_us == t_us;
      INFO("frame " << frame << " slot " << s.value);
      CHECK(by_instance != by_actor);
      CHECK(layer.slot(s)->drawn_as != H::None);
    }
  }
  for (const c::SlotId s : slots) {
    CHECK(layer.slot(s)->drawn_as == H::Actor);
    CHECK_FALSE(instances.is_instance_active(s));
  }
  CHECK(factory.actors().size() == 3);
  const auto leases = layer.take_leases();
  REQUIRE(leases.size() == 3);
  for (const c::Lease& l : leases) CHECK(l.state == c::LeaseState::Assigned);

  SECTION("without cover the entity is undrawn while its actor is pending") {
    c::HeadlessActorFactory f2;
    f2.set_spawn_ready(false);
    c::ActorPoolBackend p2(f2, {.default_pool_size = 1});
    c::HeadlessBackend i2({.name = "instances"});
    c::RepresentationConfig config;
    config.cover_while_pending = false;
    c::RepresentationLayer l2(config);
    l2.set_world(world());
    l2.set_backend(H::Actor, &p2);
    l2.set_backend(H::Instanced, &i2);
    apply_to_layer(l2, baseline({layer_walker(1, 0, 1000)}));
    CHECK(l2.slot(slot_of(l2, 1))->drawn_as == H::None);
    CHECK(i2.active_count() == 0);
  }
}

namespace {
// Deterministic jitter in [0, max_us): a small LCG, so a failure replays.
struct Jitter {
  std::uint64_t state = 0x2545F4914F6CDD1DULL;
  std::int64_t next(std::int64_t max_us) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::int64_t>((state >> 33) % static_cast<std::uint64_t>(max_us));
  }
};
}  // namespace

TEST_CASE(
    "A baseline on an earlier timeline (restore, load) rewinds render time; poses stay "
    "continuous under jitter",
    "[representation][rewind]") {
  constexpr std::int64_t kFrameUs = 16'667;  // 60 Hz
  constexpr std::int64_t kJitterUs = 40'000;
  constexpr double kSpeedMps = 1.4;
  c::HeadlessBackend actors;
  c::RepresentationLayer layer;
  layer.set_world(world());
  layer.set_backend(H::Actor, &actors);
  Jitter jitter;

  // Timeline A: steps 1..300 from s = 0; then a restore to step 50 with the
  // walker at 7 m; then steps 51..200. Sent every 100 ms of local time,
  // each received 0-40 ms late (in order, as over TCP).
  struct Sent {
    t::DeltaSpec spec;
    std::int64_t receive_us;
  };
  std::vector<Sent> stream;
  std::int64_t local_us = 5'000'000;
  std::int64_t last_receive_us = 0;
  const auto send = [&](t::DeltaSpec spec) {
    local_us += kLayerStepUs;
    last_receive_us = std::max(last_receive_us, local_us + jitter.next(kJitterUs));
    stream.push_back({std::move(spec), last_receive_us});
  };
  t::DeltaSpec first = step(1);
  first.baseline = true;
  first.entered = {layer_walker(1, 0, 1400)};
  send(first);
  for (std::uint64_t n = 2; n <= 300; ++n) send(step(n));
  const std::int64_t restore_receive_us = last_receive_us + kLayerStepUs;
  t::DeltaSpec restored = step(50);
  restored.baseline = true;
  restored.entered = {layer_walker(1, 7'000, 1400)};
  send(restored);
  for (std::uint64_t n = 51; n <= 200; ++n) send(step(n));

  std::size_t next = 0;
  double previous_x = 0.0;
  bool have_previous = false;  // (not an optional: GCC warns maybe-uninitialized)
  std::int64_t render_before_restore_us = 0;
  int checked_a = 0, checked_b = 0;
  const double per_frame_m = kSpeedMps * static_cast<double>(kFrameUs) / 1e6;
  for (std::int64_t now = stream.front().receive_us; now <= last_receive_us; now += kFrameUs) {
    bool restored_now = false;
    while (next < stream.size() && stream[next].receive_us <= now) {
      restored_now = restored_now || stream[next].spec.step == 50;
      const c::ApplySummary s = layer.apply(t::decoded(stream[next].spec), stream[next].receive_us);
      REQUIRE(s.ok());
      ++next;
    }
    if (restored_now) {
      render_before_restore_us = *layer.last_render_time_us();
      have_previous = false;  // a new timeline: the jump to its first pose is the restore's
    }
    layer.render(now);
    const c::SlotId slot = slot_of(layer, 1);
    const c::RenderPose* pose = actors.frame_pose(slot);
    if (pose == nullptr) continue;
    // Checked once the delay and a step passed after each baseline (before:
    // the first sample is held, which is no discontinuity).
    const bool in_a = now < restore_receive_us && now >= stream.front().receive_us + 300'000;
    const bool in_b = now >= restore_receive_us + 300'000;
    if (have_previous && (in_a || in_b)) {
      const double dx = pose->x_m - previous_x;
      INFO("local " << now << " x " << pose->x_m << " dx " << dx);
      CHECK(dx >= 0.5 * per_frame_m);
      CHECK(dx <= 2.0 * per_frame_m);
      (in_a ? checked_a : checked_b)++;
    }
    previous_x = pose->x_m;
    have_previous = true;
  }
  CHECK(layer.counters().rewinds == 1);
  CHECK(checked_a > 1500);
  CHECK(checked_b > 800);
  // Render time went back to the new timeline (steps 50..200: 5 s .. 20 s).
  CHECK(render_before_restore_us > 29'000'000);
  CHECK(*layer.last_render_time_us() < 20'000'000);
  CHECK(*layer.last_render_time_us() > 19'500'000);
  // And the pose is the new timeline's: 7 m + 1.4 m/s since step 50.
  const double expected_x =
      7.0 + kSpeedMps * static_cast<double>(*layer.last_render_time_us() - 5'000'000) / 1e6;
  CHECK(actors.frame_pose(slot_of(layer, 1))->x_m == Approx(expected_x).margin(0.01));
}
