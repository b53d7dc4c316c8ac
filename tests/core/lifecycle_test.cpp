// Lifecycle axis (issue 3): the spawn pipeline's graded handles, the despawn
// phase (orphan set, retiring FIFO with fades, notices after the phase),
// atomic lifecycle batches, describe() across all axes, active-member
// handoffs between zones, and checkpoint completeness for all of it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "../support/completeness_guard.hpp"
#include "bustle/core/world.hpp"
#include "make_world.hpp"

using namespace bustle::core;
using bustle::core::test::make_world;
using bustle::test::ScriptedCommand;

namespace {

// Two zones of one loop each, one community of 12 that moves from "home" to
// "work" at noon; an observer sits on the home loop.
Scenario two_zones() {
  Scenario s;
  s.id = "test.two-zones";
  s.lanes = {
      {"home", LaneKind::Sidewalk, {{0, 0}, {30, 0}, {30, 30}, {0, 30}, {0, 0}}, 1.4, {"home"}},
      {"work",
       LaneKind::Sidewalk,
       {{200, 0}, {230, 0}, {230, 30}, {200, 30}, {200, 0}},
       1.4,
       {"work"}},
      {"far", LaneKind::Sidewalk, {{2000, 0}, {2100, 0}}, 1.4, {}},
  };
  s.zones = {{"home", {"home"}, 100}, {"work", {"work"}, 100}};
  CommunitySpec c;
  c.id = "clerks";
  c.base_population = 12;
  c.professions = {"clerk"};
  c.home_zone = "home";
  c.saveable = true;
  c.schedule = {{0.0, 12.0, SchedulePhase::Home, "", "home", "", 1.0},
                {12.0, 24.0, SchedulePhase::Work, "", "work", "", 1.0}};
  s.communities = {c};
  s.observers = {{10, 10}};
  s.population.start_hour = 6.0;
  s.entity_capacity = 128;
  s.spawn.per_step_cap = 2;
  s.despawn.fade_ms = 500;  // 5 steps at 10 Hz
  return s;
}

CommandEnvelope lifecycle_env(std::uint32_t request, WorldCommand c) {
  return {CommandOrigin{7, request}, std::move(c)};
}

CommandResult apply_alone(World& w, WorldCommand c) {
  static std::uint32_t request = 0;
  REQUIRE(w.submit(lifecycle_env(++request, std::move(c))) == SubmitStatus::Queued);
  w.step();
  REQUIRE(w.last_command_results().size() == 1);
  return w.last_command_results()[0];
}

// The two-zone city (or a variant of it) just before noon, when the clerks'
// schedule sends them to work: 40 steps in, every clerk active at home.
std::unique_ptr<World> clerks_home_before_noon(Scenario s) {
  s.population.start_hour = 11.9;
  auto w = make_world(s);
  for (int k = 0; k < 40; ++k) w->step();
  return w;
}

// Steps n times, checking the invariants after each, and sums the work
// zone's handoffs returned to their source.
std::uint32_t step_counting_returned_handoffs(World& w, int n) {
  std::uint32_t returned = 0;
  for (int k = 0; k < n; ++k) {
    w.step();
    returned += w.population().zones()[1].handoffs_returned;
    REQUIRE(w.check_invariants().ok());
  }
  return returned;
}

std::vector<SpawnState> states_of(const World& w, std::uint64_t handle) {
  std::vector<SpawnState> out;
  for (const SpawnEvent& e : w.spawn_events()) {
    if (e.handle == handle) out.push_back(e.state);
  }
  return out;
}

}  // namespace

TEST_CASE(
    "a spawn handle moves through the core's stages, one per step, and ends at "
    "representation_requested") {
  auto w = make_world(two_zones());
  const CommandResult r = apply_alone(*w, SpawnPedestrian{"home", "", 0, 0, {}});
  REQUIRE(r.status == CommandStatus::Accepted);
  const std::uint64_t h = r.handle;
  REQUIRE(h == 1);
  CHECK(states_of(*w, h) == std::vector<SpawnState>{SpawnState::Queued});
  w->step();
  CHECK(states_of(*w, h) == std::vector<SpawnState>{SpawnState::IdentityCreated});
  const EntityId id = w->find_spawn(h)->entity;
  CHECK(w->describe(id).lifecycle == LifecycleState::Requested);
  w->step();
  CHECK(states_of(*w, h) == std::vector<SpawnState>{SpawnState::Registered});
  const EntityReport rep = w->describe(id);
  CHECK(rep.lifecycle == LifecycleState::Active);
  CHECK(rep.origin == PedestrianOrigin::Spawned);
  CHECK(rep.priority == PriorityClass::Story);
  REQUIRE(rep.lane >= 0);
  CHECK(w->lanes().lane(static_cast<LaneIndex>(rep.lane)).id == "home");
  w->step();
  CHECK(states_of(*w, h) == std::vector<SpawnState>{SpawnState::RepresentationRequested});
  // The core's part ends here: Attached and ReadyForGameplay are the
  // representation axis, tracked outside the simulation (server/app).
  CHECK(w->spawn_pipeline().live.empty());
  for (int k = 0; k < 5; ++k) w->step();
  CHECK(w->find_spawn(h)->state == SpawnState::RepresentationRequested);
  CHECK(w->spawn_pipeline().counters.per_state_total[static_cast<int>(SpawnState::Attached)] == 0);
  CHECK(w->check_invariants().ok());
}

TEST_CASE("the per-step creation cap defers spawns without failing them") {
  auto w = make_world(two_zones());
  std::vector<std::uint64_t> handles;
  for (std::uint32_t k = 0; k < 7; ++k) {
    REQUIRE(w->submit(lifecycle_env(100 + k, SpawnPedestrian{"", "", 1, 0, {}})) ==
            SubmitStatus::Queued);
  }
  w->step();
  for (const CommandResult& r : w->last_command_results()) handles.push_back(r.handle);
  REQUIRE(handles.size() == 7);
  std::size_t created_total = 0;
  w->step();  // accepted last step: the first creations happen now
  for (int step = 0; step < 4; ++step) {
    std::size_t created = 0;
    for (const SpawnEvent& e : w->spawn_events()) created += e.state == SpawnState::IdentityCreated;
    CHECK(created <= 2);
    created_total += created;
    if (step == 0) CHECK(w->spawn_pipeline().counters.deferred_by_cap == 5);
    w->step();
  }
  CHECK(created_total == 7);
  for (const std::uint64_t h : handles) CHECK(w->find_spawn(h)->state != SpawnState::Failed);
  CHECK(w->spawn_pipeline().counters.per_state_total[static_cast<int>(SpawnState::Failed)] == 0);
}

TEST_CASE("removing a still-queued spawn cancels it and gives the id back") {
  Scenario s = two_zones();
  s.spawn.per_step_cap = 1;
  auto w = make_world(s);
  REQUIRE(w->submit(lifecycle_env(1, SpawnPedestrian{})) == SubmitStatus::Queued);
  REQUIRE(w->submit(lifecycle_env(2, SpawnPedestrian{})) == SubmitStatus::Queued);
  w->step();
  const std::uint64_t first = w->last_command_results()[0].handle;
  const std::uint64_t second = w->last_command_results()[1].handle;
  REQUIRE(w->find_spawn(second)->state == SpawnState::Queued);
  const std::uint32_t alive = w->registry().alive_count();
  // Queued: no identity yet; canceled outright.
  const CommandResult c = apply_alone(*w, CancelSpawn{second});
  CHECK(c.status == CommandStatus::Accepted);
  CHECK(w->find_spawn(second)->state == SpawnState::Canceled);
  CHECK(c.entity == EntityId{});
  // The first has an identity but is not registered... it registered on this
  // step, so a new one shows the IdentityCreated path.
  (void)first;
  REQUIRE(w->submit(lifecycle_env(3, SpawnPedestrian{})) == SubmitStatus::Queued);
  w->step();
  const std::uint64_t third = w->last_command_results()[0].handle;
  w->step();
  REQUIRE(w->find_spawn(third)->state == SpawnState::IdentityCreated);
  const EntityId id = w->find_spawn(third)->entity;
  const std::uint32_t before = w->registry().alive_count();
  const CommandResult d = apply_alone(*w, DespawnEntity{id});
  CHECK(d.status == CommandStatus::Accepted);
  CHECK(d.entity == id);  // the id given back instead of created and deleted
  CHECK(w->find_spawn(third)->state == SpawnState::Canceled);
  CHECK_FALSE(w->registry().is_alive(id));
  CHECK(w->registry().alive_count() + 1 == before);
  CHECK(w->counters().despawned_total == 0);
  (void)alive;
  // A registered spawn cannot be canceled: its entity exists.
  const CommandResult late = apply_alone(*w, CancelSpawn{first});
  CHECK(late.status == CommandStatus::Rejected);
}

TEST_CASE("a spawn that cannot get an identity times out, deferred until then") {
  Scenario s = two_zones();
  s.entity_capacity = 12;  // exactly the residents: no room
  auto w = make_world(s);
  const CommandResult r = apply_alone(*w, SpawnPedestrian{"", "", 1, 300, {}});
  REQUIRE(r.status == CommandStatus::Accepted);
  w->step();
  CHECK(w->find_spawn(r.handle)->state == SpawnState::Queued);
  CHECK(w->spawn_pipeline().counters.deferred_by_capacity == 1);
  for (int k = 0; k < 4; ++k) w->step();
  CHECK(w->find_spawn(r.handle)->state == SpawnState::TimedOut);
}

TEST_CASE("spawn requests are validated before anything changes") {
  auto w = make_world(two_zones());
  const std::uint64_t before = w->spawn_pipeline().next_handle;
  CHECK(apply_alone(*w, SpawnPedestrian{"nowhere", "", 1, 0, {}}).message.find("zone") !=
        std::string::npos);
  CHECK(apply_alone(*w, SpawnPedestrian{"home", "work", 1, 0, {}})
            .message.find("not a lane of zone") != std::string::npos);
  CHECK(apply_alone(*w, SpawnPedestrian{"", "", 9, 0, {}}).message.find("priority") !=
        std::string::npos);
  CHECK(w->spawn_pipeline().next_handle == before);
  CHECK(w->spawn_pipeline().live.empty());
}

TEST_CASE(
    "despawn: near pedestrians fade in the retiring FIFO, far ones leave at once, notices after "
    "the phase") {
  Scenario s = two_zones();
  s.communities.clear();
  s.zones.clear();
  s.pedestrians.count = 0;
  auto w = make_world(s);
  // One spawn near the observer (home loop), one far away.
  REQUIRE(w->submit(lifecycle_env(1, SpawnPedestrian{"", "home", 3, 0, {}})) ==
          SubmitStatus::Queued);
  REQUIRE(w->submit(lifecycle_env(2, SpawnPedestrian{"", "far", 3, 0, {}})) ==
          SubmitStatus::Queued);
  for (int k = 0; k < 8; ++k) w->step();  // registered and tiered (resolution every 4th step)
  const EntityId near = w->find_spawn(1)->entity;
  const EntityId far = w->find_spawn(2)->entity;
  REQUIRE(w->describe(near).tier == SimTier::Full);
  REQUIRE(w->describe(far).tier == SimTier::Coarse);
  REQUIRE(w->submit(lifecycle_env(3, DespawnEntity{far})) == SubmitStatus::Queued);
  REQUIRE(w->submit(lifecycle_env(4, DespawnEntity{near})) == SubmitStatus::Queued);
  w->step();
  const std::uint64_t at = w->step_index();
  // Far: gone this step (id released); near: retiring, still alive, in the orphan set.
  CHECK_FALSE(w->registry().is_alive(far));
  CHECK(w->registry().is_alive(near));
  CHECK(w->orphans().size() == 1);
  CHECK(w->retiring_fifo() == std::vector<EntityId>{near});
  const EntityReport rep = w->describe(near);
  CHECK(rep.lifecycle == LifecycleState::Retiring);
  CHECK(rep.release_step == at + 5);
  CHECK(rep.retiring_reason == DespawnReason::Requested);
  {
    // Value 2 (once SpawnError) is retired: no placement fails after
    // validation, so a checkpoint naming it is refused, field named.
    WorldCheckpoint cp = w->capture();
    REQUIRE(cp.orphans.size() == 1);
    REQUIRE(World::restore(s, cp).world);
    cp.orphans[0].reason = 2;
    const auto r = World::restore(s, cp);
    CHECK_FALSE(r.world);
    REQUIRE_FALSE(r.errors.empty());
    CHECK(r.errors[0].path == "orphans[0].reason");
    CHECK(r.errors[0].message == "unknown despawn reason");
  }
  std::vector<std::pair<EntityId, DespawnStage>> notices;
  for (const DespawnNotice& n : w->despawn_notices()) notices.emplace_back(n.id, n.stage);
  // In EntityId order, whatever the order of the requests.
  std::vector<std::pair<EntityId, DespawnStage>> expected{{far, DespawnStage::Gone},
                                                          {near, DespawnStage::Retiring}};
  if (near < far) std::swap(expected[0], expected[1]);
  CHECK(notices == expected);
  // A retiring entity cannot be despawned again, nor promoted.
  CHECK(apply_alone(*w, DespawnEntity{near}).message.find("retiring") != std::string::npos);
  CHECK(apply_alone(*w, ForceFull{near, true}).status == CommandStatus::Rejected);
  while (w->step_index() < at + 5) {
    CHECK(w->registry().is_alive(near));
    w->step();
  }
  CHECK_FALSE(w->registry().is_alive(near));
  CHECK(w->orphans().empty());
  CHECK(w->counters().faded_total == 1);
  CHECK(w->counters().fade_skipped_total == 1);
  CHECK(w->counters().despawned_by_reason[static_cast<int>(DespawnReason::Requested)] == 2);
  // The core's part of the handles ended at RepresentationRequested, before
  // the despawn: Failed(EntityGone) for a representation that never came is
  // the representation axis (server/app, tested over the socket), not core
  // state.
  CHECK(w->find_spawn(1)->state == SpawnState::RepresentationRequested);
  CHECK(w->find_spawn(1)->failure == SpawnFailure::None);
  CHECK(w->check_invariants().ok());
}

TEST_CASE("a lifecycle batch is atomic: one bad op changes nothing, a good batch commits all") {
  Scenario s = two_zones();
  s.pedestrians.count = 6;
  auto a = make_world(s, 3);
  auto b = make_world(s, 3);
  for (int k = 0; k < 10; ++k) {
    a->step();
    b->step();
  }
  REQUIRE(a->digest() == b->digest());
  const EntityId victim = a->pedestrians().id[0];
  LifecycleBatch bad;
  bad.ops.push_back({LifecycleOp::Kind::Spawn, SpawnPedestrian{"home", "", 1, 0, {}}, {}});
  bad.ops.push_back({LifecycleOp::Kind::Despawn, {}, victim});
  bad.ops.push_back({LifecycleOp::Kind::Despawn, {}, EntityId{999, 4}});  // not alive
  REQUIRE(a->submit(lifecycle_env(1, bad)) == SubmitStatus::Queued);
  REQUIRE(b->submit(lifecycle_env(1, SetHour{99.0})) ==
          SubmitStatus::Queued);  // also rejected: same counters
  a->step();
  b->step();
  const CommandResult r = a->last_command_results()[0];
  CHECK(r.status == CommandStatus::Rejected);
  CHECK(r.batch == BatchStatus::RejectedNoChange);
  CHECK(r.message.rfind("ops[2].id", 0) == 0);
  // Nothing changed: the world continues exactly like the one that got no batch.
  for (int k = 0; k < 20; ++k) {
    a->step();
    b->step();
    REQUIRE(a->digest() == b->digest());
  }
  LifecycleBatch good;
  good.ops.push_back({LifecycleOp::Kind::Spawn, SpawnPedestrian{"home", "", 1, 0, {}}, {}});
  good.ops.push_back({LifecycleOp::Kind::Despawn, {}, a->pedestrians().id[0]});
  good.ops.push_back({LifecycleOp::Kind::Spawn, SpawnPedestrian{"", "", 2, 0, {}}, {}});
  const CommandResult ok = apply_alone(*a, good);
  CHECK(ok.status == CommandStatus::Accepted);
  CHECK(ok.batch == BatchStatus::Committed);
  CHECK(ok.handles.size() == 2);
  CHECK(a->check_invariants().ok());
}

TEST_CASE("lifecycle batches never end partially committed") {
  // Random batches mixing valid and invalid ops: each is either fully
  // committed or leaves the digest chain exactly as a rejected no-op would.
  Scenario s = two_zones();
  s.pedestrians.count = 20;
  s.spawn.queue_depth = 64;
  auto w = make_world(s, 11);
  for (int k = 0; k < 5; ++k) w->step();
  Prng rng(99);
  std::size_t committed = 0, rejected = 0;
  for (int round = 0; round < 60; ++round) {
    auto twin = World::restore(s, w->capture());
    REQUIRE(twin.world);
    LifecycleBatch b;
    const std::uint32_t n = 1 + rng.next_below(6);
    for (std::uint32_t k = 0; k < n; ++k) {
      if (rng.next_below(2) == 0) {
        b.ops.push_back({LifecycleOp::Kind::Spawn,
                         SpawnPedestrian{rng.next_below(8) == 0 ? "bad" : "", "", 1, 0, {}},
                         {}});
      } else {
        const auto& ids = w->pedestrians().id;
        const EntityId id = rng.next_below(8) == 0 || ids.empty()
                                ? EntityId{1000, 9}
                                : ids[rng.next_below(static_cast<std::uint32_t>(ids.size()))];
        b.ops.push_back({LifecycleOp::Kind::Despawn, {}, id});
      }
    }
    const CommandResult r = apply_alone(*w, b);
    REQUIRE(r.batch != BatchStatus::PartiallyCommitted);
    REQUIRE(r.batch != BatchStatus::InvariantFailure);
    if (r.batch == BatchStatus::Committed) {
      ++committed;
    } else {
      ++rejected;
      REQUIRE(twin.world->submit(lifecycle_env(1, SetHour{99.0})) == SubmitStatus::Queued);
      twin.world->step();
      REQUIRE(twin.world->digest() == w->digest());
    }
    REQUIRE(w->check_invariants().ok());
  }
  CHECK(committed > 5);
  CHECK(rejected > 5);
}

TEST_CASE("active members hand off to their new zone with a budget, identity unchanged") {
  Scenario s = two_zones();
  s.population.migration_budget = 3;
  auto w = clerks_home_before_noon(s);
  REQUIRE(w->population().zones()[0].active == 12);
  std::set<EntityId> ids(w->population().residents().id.begin(),
                         w->population().residents().id.end());
  REQUIRE(apply_alone(*w, SetHour{12.5}).status == CommandStatus::Accepted);
  std::uint32_t started = 0, accepted = 0, max_started = 0;
  for (int k = 0; k < 200; ++k) {
    w->step();
    const ZoneStatus& work = w->population().zones()[1];
    started += work.handoffs_started;
    accepted += work.handoffs_accepted;
    max_started = std::max(max_started, work.handoffs_started);
    REQUIRE(w->check_invariants().ok());
    REQUIRE(w->population().handoffs().size() <= 3);
  }
  CHECK(max_started <= 3);  // the budget, never unlimited
  CHECK(accepted > 0);
  CHECK(w->population().zones()[1].active == 12);
  CHECK(w->population().zones()[0].active == 0);
  std::set<EntityId> after(w->population().residents().id.begin(),
                           w->population().residents().id.end());
  CHECK(after == ids);
  // Walking in the new zone: every resident pedestrian is on the work loop.
  for (std::uint32_t i = 0; i < w->pedestrians().size(); ++i) {
    if (w->pedestrians().origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Resident)) {
      CHECK(w->lanes().lane(w->pedestrians().lane[i]).id == "work");
    }
  }
}

TEST_CASE("a handoff the target cannot take returns to its source") {
  Scenario s = two_zones();
  s.zones[1].capacity = 1;  // work zone has room for one
  auto w = clerks_home_before_noon(s);
  REQUIRE(apply_alone(*w, SetHour{12.5}).status == CommandStatus::Accepted);
  CHECK(step_counting_returned_handoffs(*w, 30) > 0);
  std::uint32_t at_work = 0;
  for (std::uint32_t i = 0; i < w->population().residents().size(); ++i) {
    at_work +=
        w->population().residents().zone[i] == 1 && w->population().residents().active[i] != 0;
  }
  CHECK(at_work <= 1);  // the others returned to their source zone
}

TEST_CASE("a handoff into a zone whose every lane is closed returns until a lane opens") {
  // move_resident used to fall back to a random lane of the target zone, so
  // the member appeared on a closed lane.
  auto w = clerks_home_before_noon(two_zones());
  REQUIRE(apply_alone(*w, SetLaneClosed{"work", UINT32_MAX, true}).status ==
          CommandStatus::Accepted);
  const LaneIndex work = *w->lanes().find("work");
  REQUIRE(apply_alone(*w, SetHour{12.5}).status == CommandStatus::Accepted);
  std::uint32_t returned = 0;
  for (int k = 0; k < 60; ++k) {
    returned += step_counting_returned_handoffs(*w, 1);
    CHECK(w->population().zones()[1].handoffs_accepted == 0);
    for (std::uint32_t i = 0; i < w->pedestrians().size(); ++i)
      REQUIRE(w->pedestrians().lane[i] != work);
  }
  CHECK(returned > 0);
  CHECK(w->population().zones()[1].active == 0);
  // Opened: the handoffs offered from then on are taken.
  REQUIRE(apply_alone(*w, SetLaneClosed{"work", UINT32_MAX, false}).status ==
          CommandStatus::Accepted);
  std::uint32_t accepted = 0;
  for (int k = 0; k < 200; ++k) {
    w->step();
    accepted += w->population().zones()[1].handoffs_accepted;
    REQUIRE(w->check_invariants().ok());
  }
  CHECK(accepted > 0);
  CHECK(w->population().zones()[1].active == 12);
}

TEST_CASE("describe reports every axis of a resident, dormant or active") {
  Scenario s = two_zones();
  s.communities[0].schedule[0].density = 0.5;
  auto w = make_world(s);
  for (int k = 0; k < 30; ++k) w->step();
  std::size_t active = 0, dormant = 0;
  for (const EntityId id : w->population().residents().id) {
    const EntityReport e = w->describe(id);
    CHECK(e.alive);
    CHECK(e.community == 0);
    CHECK(e.zone == 0);
    CHECK(e.saveable);
    CHECK(e.origin == PedestrianOrigin::Resident);
    if (e.lifecycle == LifecycleState::Active) {
      ++active;
      CHECK(e.lane >= 0);
      CHECK(e.representation != RepresentationHint::None);
    } else {
      REQUIRE(e.lifecycle == LifecycleState::Dormant);
      ++dormant;
      CHECK(e.representation == RepresentationHint::None);
    }
  }
  CHECK(active == 6);
  CHECK(dormant == 6);
  CHECK(w->describe(EntityId{120, 3}).lifecycle == LifecycleState::Gone);
}

TEST_CASE("lifecycle settings change at runtime and are validated") {
  auto w = make_world(two_zones());
  CHECK(apply_alone(*w, SetLifecycle{8, 8, 100, 16}).status == CommandStatus::Accepted);
  CHECK(w->population().settings() == LifecycleSettings{8, 8, 100, 16});
  const CommandResult bad = apply_alone(*w, SetLifecycle{2, 2, 0, 4});
  CHECK(bad.status == CommandStatus::Rejected);
  CHECK(bad.message.find("interval_ms") != std::string::npos);
  CHECK(w->population().settings() == LifecycleSettings{8, 8, 100, 16});
}

TEST_CASE("completeness guard covers spawn handles, orphans, handoffs and observer views") {
  Scenario s = two_zones();
  s.pedestrians.count = 10;
  s.population.start_hour = 11.95;
  ObserverPoint p{15, 15, 2.0, true, 1.0};
  LifecycleBatch batch;
  batch.ops.push_back({LifecycleOp::Kind::Spawn, SpawnPedestrian{"work", "", 0, 0, {}}, {}});
  const std::vector<ScriptedCommand> script = {
      {2, SpawnPedestrian{"home", "", 1, 0, {}}},
      {3, SpawnPedestrian{"", "", 2, 0, {}}},
      {3, SpawnPedestrian{"", "", 2, 0, {}}},
      {4, CancelSpawn{3}},
      {6, SetObservers{{p}}},
      {9, DespawnEntity{EntityId{12, 1}}},
      {10, batch},
      {12, SetLifecycle{3, 3, 300, 2}},
      {14, DespawnEntity{EntityId{0, 1}}},
  };
  bustle::test::check_checkpoint_completeness(s, 5, script, 60, {1, 3, 5, 8, 10, 11, 13, 15, 30});
}

TEST_CASE("saves keep saveable residents' zone ownership and lifecycle settings") {
  Scenario s = two_zones();
  s.population.start_hour = 11.9;
  auto w = make_world(s);
  for (int k = 0; k < 40; ++k) w->step();
  REQUIRE(apply_alone(*w, SetHour{12.5}).status == CommandStatus::Accepted);
  REQUIRE(apply_alone(*w, SetLifecycle{4, 4, 250, 4}).status == CommandStatus::Accepted);
  for (int k = 0; k < 200; ++k) w->step();
  const SaveState save = w->capture_save();
  REQUIRE(save.saveable_ids.size() == 12);
  auto loaded = World::load_save(s, save);
  REQUIRE(loaded.errors.empty());
  const ResidentStore& rs = loaded.world->population().residents();
  for (std::uint32_t i = 0; i < rs.size(); ++i) {
    CHECK(rs.id[i] == w->population().residents().id[i]);
    CHECK(rs.zone[i] == w->population().residents().zone[i]);
  }
  CHECK(loaded.world->population().settings() == LifecycleSettings{4, 4, 250, 4});
  SaveState bad = save;
  bad.saveable_zones[3] = "atlantis";
  auto refused = World::load_save(s, bad);
  REQUIRE_FALSE(refused.errors.empty());
  CHECK(refused.errors[0].path == "saveable[3].zone");
}

// Seed 001's load phases: what reconciliation needs is in the save, so the
// active set right after a load is the saved one (one reconciling step, not
// a regrowth at the lifecycle quotas), each resident on its saved lane
// position, and the tiers measure from the saved observers.
TEST_CASE(
    "a load places the saved active set at once, on the saved lane positions, with the saved "
    "observers") {
  Scenario s = two_zones();
  s.population.start_hour = 11.9;
  auto w = make_world(s);
  for (int k = 0; k < 40; ++k) w->step();
  REQUIRE(apply_alone(*w, SetHour{12.5}).status == CommandStatus::Accepted);
  ObserverPoint far;
  far.x_m = 500.0;
  far.y_m = -20.0;
  far.z_m = 3.0;
  REQUIRE(apply_alone(*w, SetObservers{{far}}).status == CommandStatus::Accepted);
  for (int k = 0; k < 200; ++k) w->step();
  const SaveState save = w->capture_save();
  const ResidentStore& before = w->population().residents();
  std::uint32_t active_before = 0;
  for (std::uint32_t i = 0; i < before.size(); ++i)
    active_before += before.active[i] == ResidentStore::kActive;
  REQUIRE(active_before > 0);
  REQUIRE(save.active_residents.size() == active_before);

  auto loaded = World::load_save(s, save);
  REQUIRE(loaded.errors.empty());
  const World& l = *loaded.world;
  const ResidentStore& after = l.population().residents();
  for (std::uint32_t i = 0; i < after.size(); ++i) {
    INFO("resident " << i);
    CHECK(after.active[i] == before.active[i]);
    CHECK(after.zone[i] == before.zone[i]);
    if (before.active[i] != ResidentStore::kActive) continue;
    const std::uint32_t a = w->pedestrians().dense_of[before.id[i].index];
    const std::uint32_t b = l.pedestrians().dense_of[after.id[i].index];
    REQUIRE(b != PedestrianStore::kNoSlot);
    CHECK(l.pedestrians().lane[b] == w->pedestrians().lane[a]);
    CHECK(l.pedestrians().s_m[b] == w->pedestrians().s_m[a]);
  }
  for (std::size_t z = 0; z < l.population().zones().size(); ++z) {
    CHECK(l.population().zones()[z].active == w->population().zones()[z].active);
  }
  REQUIRE(l.observers().size() == 1);
  CHECK(l.observers()[0].x_m == 500.0);
  CHECK(l.observer_views()[0].z_m == 3.0);

  SECTION("a saved resident on a lane that is not walkable is refused, naming the row") {
    SaveState bad = save;
    bad.active_residents[0].lane = "nowhere";
    auto refused = World::load_save(s, bad);
    REQUIRE_FALSE(refused.errors.empty());
    CHECK(refused.errors[0].path == "active_residents[0].lane");
    bad = save;
    bad.active_residents.push_back(bad.active_residents[0]);
    refused = World::load_save(s, bad);
    REQUIRE_FALSE(refused.errors.empty());
    CHECK(refused.errors[0].message.find("listed twice") != std::string::npos);
  }
  SECTION("a save from before schema 4 (no active set) regrows within the quotas") {
    SaveState old = save;
    old.active_residents.clear();
    old.has_observers = false;
    old.observers.clear();
    auto regrown = World::load_save(s, old);
    REQUIRE(regrown.errors.empty());
    std::uint32_t active = 0;
    for (const auto a : regrown.world->population().residents().active)
      active += a == ResidentStore::kActive;
    CHECK(active == 0);
    CHECK(regrown.world->observers() == std::vector<Vec2>(s.observers.begin(), s.observers.end()));
  }
}

namespace {
// a -> {b, c}, b -> a, c -> a: a walker without a route picks b or c by hash.
Scenario forked_lanes() {
  Scenario s;
  s.id = "test.fork";
  s.lanes = {
      {"a", LaneKind::Sidewalk, {{0, 0}, {10, 0}}, 2.0, {"b", "c"}},
      {"b", LaneKind::Sidewalk, {{10, 0}, {10, 10}, {0, 0}}, 2.0, {"a"}},
      {"c", LaneKind::Sidewalk, {{10, 0}, {10, -10}, {0, 0}}, 2.0, {"a"}},
  };
  s.entity_capacity = 64;
  return s;
}
}  // namespace

TEST_CASE("a spawned walker follows its route from the shared buffer, then wanders") {
  auto w = make_world(forked_lanes());
  SpawnPedestrian req;
  req.route = {"a", "c", "a", "c", "a", "c"};
  const CommandResult r = apply_alone(*w, req);
  REQUIRE(r.status == CommandStatus::Accepted);
  CHECK(w->routes().live() == 1);
  std::vector<std::string> seen;
  EntityId id;
  for (int k = 0; k < 1500 && seen.size() < 7; ++k) {
    w->step();
    if (const auto h = w->find_spawn(r.handle); h && h->entity.packed() != 0) id = h->entity;
    if (id.packed() == 0 || w->pedestrians().dense_of[id.index] == PedestrianStore::kNoSlot)
      continue;
    const std::string& lane =
        w->lanes().lane(w->pedestrians().lane[w->pedestrians().dense_of[id.index]]).id;
    if (seen.empty() || seen.back() != lane) seen.push_back(lane);
  }
  REQUIRE(seen.size() == 7);
  CHECK(std::vector<std::string>(seen.begin(), seen.begin() + 6) == req.route);
  CHECK(w->routes().live() == 0);  // used up: released, the walker wanders on
  CHECK(w->check_invariants().ok());
}

TEST_CASE("route slots are reused from a free list and the shared buffer compacts") {
  RouteTable t;
  const std::vector<LaneIndex> r1{0, 1, 2, 3}, r2{4, 5}, r3{6, 7, 8};
  const std::uint32_t a = t.add(r1);
  const std::uint32_t b = t.add(r2);
  CHECK(t.first(b) == 4);
  CHECK(t.next(b) == std::optional<LaneIndex>{5});
  CHECK_FALSE(t.next(b).has_value());
  t.release(a);  // 4 of 6 lanes are garbage: compaction
  CHECK(t.state().lanes == std::vector<LaneIndex>{4, 5});
  CHECK(t.state().offset[b] == 0);
  const std::uint32_t c = t.add(r3);
  CHECK(c == a);  // the freed slot
  CHECK(t.first(c) == 6);
  CHECK(RouteTable::validate(t.state(), 9).ok());
  RouteTableState bad = t.state();
  bad.target[c] = 9;
  const Status broken = RouteTable::validate(bad, 9);
  CHECK(broken.code() == StatusCode::DataLoss);
  CHECK(broken.message().find("routes[0].target") == 0);
}

TEST_CASE("a route that does not follow the lane graph is refused before anything changes") {
  auto w = make_world(forked_lanes());
  SpawnPedestrian req;
  req.route = {"a", "c", "b"};
  const CommandResult r = apply_alone(*w, req);
  CHECK(r.status == CommandStatus::Rejected);
  CHECK(r.message == "route[2]: 'b' does not follow 'c'");
  CHECK(w->routes().live() == 0);
  req.route = {"a"};
  req.lane = "b";
  CHECK(apply_alone(*w, req).message.rfind("lane: must be route[0]", 0) == 0);
}

TEST_CASE("checkpoints carry routes held by handles and walkers") {
  Scenario s = forked_lanes();
  s.pedestrians.count = 5;
  SpawnPedestrian routed;
  routed.route = {"a", "b", "a", "b", "a"};
  SpawnPedestrian other;
  other.route = {"c", "a"};
  const std::vector<ScriptedCommand> script = {
      {2, routed}, {2, other}, {3, routed}, {4, CancelSpawn{3}}, {9, routed}};
  bustle::test::check_checkpoint_completeness(s, 2, script, 80, {1, 2, 3, 4, 6, 12, 30});
}

TEST_CASE("the digest does not depend on which connection sent a command") {
  // The same command stream from session 7 (request ids from 1) and from
  // session 42 (request ids from 1000): the origin routes results and spawn
  // updates, it is not simulation state. Spawns outnumber the per-step cap,
  // so live handles carry their origin across steps, and one capture is taken
  // with a command still in the inbox.
  struct Run {
    std::vector<std::uint64_t> digests;
    std::vector<CommandOrigin> event_origins;
    std::vector<CommandOrigin> handle_origins;  // as checkpointed
  };
  auto run = [](std::uint32_t client, std::uint32_t request) {
    auto w = make_world(two_zones());
    Run out;
    auto send = [&](WorldCommand c) {
      REQUIRE(w->submit({CommandOrigin{client, ++request}, std::move(c)}) == SubmitStatus::Queued);
    };
    for (int step = 0; step < 40; ++step) {
      if (step == 0) {
        for (int k = 0; k < 5; ++k) send(SpawnPedestrian{"home", "", 1, 0, {}});
      }
      if (step == 2) {
        LifecycleBatch batch;
        batch.ops.push_back({LifecycleOp::Kind::Spawn, SpawnPedestrian{"work", "", 2, 0, {}}, {}});
        batch.ops.push_back({LifecycleOp::Kind::Spawn, SpawnPedestrian{"", "", 3, 0, {}}, {}});
        send(std::move(batch));
      }
      if (step == 3) send(CancelSpawn{5});
      if (step == 6) send(SetPedestrianTarget{4});
      if (step == 9) {
        send(SpawnPedestrian{"", "home", 0, 0, {}});
        const WorldCheckpoint pending = w->capture();
        REQUIRE(pending.inbox.size() == 1);
        out.digests.push_back(pending.digest);
        for (const SpawnHandleState& h : pending.spawn.live) out.handle_origins.push_back(h.origin);
        for (const SpawnHandleState& h : pending.spawn.recent)
          out.handle_origins.push_back(h.origin);
      }
      w->step();
      out.digests.push_back(w->digest());
      for (const SpawnEvent& e : w->spawn_events()) out.event_origins.push_back(e.origin);
    }
    return out;
  };
  const Run a = run(7, 0);
  const Run b = run(42, 1000);
  CHECK(a.digests == b.digests);
  // Routing is kept: every event and checkpointed handle still names its sender.
  REQUIRE(a.event_origins.size() == b.event_origins.size());
  REQUIRE_FALSE(b.handle_origins.empty());
  for (const CommandOrigin& o : b.event_origins) CHECK(o.client_id == 42);
  for (const CommandOrigin& o : b.handle_origins) CHECK(o.client_id == 42);
  for (std::size_t k = 0; k < a.event_origins.size(); ++k) {
    CHECK(b.event_origins[k].request_id == a.event_origins[k].request_id + 1000);
  }
}

TEST_CASE("a killed resident lies as a corpse, then stays deceased: never walks again") {
  // Seed 000's corpse and persistence rules for a community member: the
  // corpse follows corpse cleanup; the member's record keeps its identity,
  // is deceased in checkpoints and saves, and is never activated or handed
  // over again.
  Scenario s = two_zones();
  auto w = make_world(s);
  for (int k = 0; k < 40; ++k) w->step();
  const PedestrianStore& p = w->pedestrians();
  EntityId victim{};
  for (std::uint32_t i = 0; i < p.size() && victim.is_null(); ++i)
    if (p.origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Resident)) victim = p.id[i];
  REQUIRE_FALSE(victim.is_null());
  const auto r = static_cast<std::uint32_t>(w->population().resident_of(victim));
  const std::uint32_t active_before = w->population().active_count();
  REQUIRE(apply_alone(*w, KillPedestrian{victim}).status == CommandStatus::Accepted);
  const auto deceased = [&](const World& world) {
    return world.population().residents().active[r] == ResidentStore::kDeceased;
  };
  CHECK(deceased(*w));
  CHECK(w->is_corpse(victim));
  CHECK(w->describe(victim).lifecycle == LifecycleState::Deceased);
  CHECK(w->population().residents().work_point[r] == ResidentStore::kNone);
  INFO(w->check_invariants().message());
  REQUIRE(w->check_invariants().ok());
  // A checkpoint with the corpse lying continues the same digests.
  auto restored = bustle::core::test::restore_world(s, w->capture());
  for (int k = 0; k < 5; ++k) {
    w->step();
    restored->step();
    REQUIRE(restored->digest() == w->digest());
  }
  // Observers far away: corpse cleanup removes the row; the record stays.
  REQUIRE(apply_alone(*w, SetObservers{{{2000.0, 0.0}}}).status == CommandStatus::Accepted);
  for (int k = 0; k < 30; ++k) w->step();
  CHECK(w->pedestrians().dense_of[victim.index] == PedestrianStore::kNoSlot);
  CHECK(deceased(*w));
  CHECK(w->registry().is_alive(victim));
  CHECK(w->describe(victim).lifecycle == LifecycleState::Deceased);
  // A day passes (home, work, home): the others walk, the deceased never does.
  REQUIRE(apply_alone(*w, SetObservers{{{10.0, 10.0}}}).status == CommandStatus::Accepted);
  REQUIRE(apply_alone(*w, SetHour{11.95}).status == CommandStatus::Accepted);
  bool others_walked = false;
  for (int k = 0; k < 600; ++k) {
    w->step();
    CHECK(w->pedestrians().dense_of[victim.index] == PedestrianStore::kNoSlot);
    others_walked |= w->population().active_count() >= active_before - 1;
    REQUIRE(w->check_invariants().ok());
  }
  CHECK(others_walked);
  CHECK(deceased(*w));
  // A save names it; a load recreates it deceased, and it stays so.
  const SaveState save = w->capture_save();
  REQUIRE(save.saveable_deceased.size() == save.saveable_ids.size());
  CHECK(std::count(save.saveable_deceased.begin(), save.saveable_deceased.end(), 1) == 1);
  auto loaded = World::load_save(s, save);
  REQUIRE(loaded.errors.empty());
  CHECK(deceased(*loaded.world));
  for (int k = 0; k < 200; ++k) loaded.world->step();
  CHECK(loaded.world->pedestrians().dense_of[victim.index] == PedestrianStore::kNoSlot);
  CHECK(deceased(*loaded.world));
  REQUIRE(loaded.world->check_invariants().ok());
}
