// Prevention (prevention.hpp; commands/set_prevention_level.cpp,
// commands/kill_pedestrian.cpp, phases/04b_prevention.cpp): response units
// by level within their own budget, cancelled and despawned when the level
// drops, counted per level; corpses kept near, soft-deleted in the middle
// range, deleted at once far away, and under resource pressure the farthest
// off-screen corpse before any visible one. Digested and checkpointed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "bustle/core/world.hpp"
#include "command_test_support.hpp"

using namespace bustle::core;

namespace {

using test::apply_one;
using test::load;
using test::make;

Scenario units_city() {
  Scenario s = load("default.city.json");
  test::enable_response_units(s);
  return s;
}

std::size_t in_state(const World& w, ResponseUnitState st) {
  return static_cast<std::size_t>(
      std::count_if(w.prevention().units.begin(), w.prevention().units.end(),
                    [&](const ResponseUnit& u) { return u.state == st; }));
}

double distance_to_observer(const World& w, EntityId id) {
  const EntityReport e = w.describe(id);
  const Vec2 o = w.observers().at(0);
  return std::hypot(e.pose.x_m - o.x_m, e.pose.y_m - o.y_m);
}

// Walking background pedestrians by distance to the observer, nearest first.
std::vector<EntityId> by_distance(const World& w) {
  std::vector<EntityId> ids;
  for (std::uint32_t i = 0; i < w.pedestrians().size(); ++i) {
    if (w.pedestrians().origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Background))
      ids.push_back(w.pedestrians().id[i]);
  }
  std::sort(ids.begin(), ids.end(), [&](EntityId a, EntityId b) {
    return distance_to_observer(w, a) < distance_to_observer(w, b);
  });
  return ids;
}

// Kills `ids` in one step that is not a cleanup step.
void kill_all(World& w, const std::vector<EntityId>& ids) {
  while ((w.step_index() + 1) % w.scenario().prevention.cleanup_every_steps == 0) w.step();
  for (const EntityId id : ids)
    REQUIRE(w.submit({CommandOrigin{7, 1}, KillPedestrian{id}}) == SubmitStatus::Queued);
  w.step();
  for (const CommandResult& r : w.last_command_results()) {
    INFO(r.message);
    REQUIRE(r.status == CommandStatus::Accepted);
  }
}

void step_to_cleanup(World& w) {
  do {
    w.step();
    REQUIRE(w.check_invariants().ok());
  } while (w.step_index() % w.scenario().prevention.cleanup_every_steps != 0);
}

bool gone_or_fading(const World& w, EntityId id) {
  return w.describe(id).lifecycle != LifecycleState::Active;
}

}  // namespace

TEST_CASE("raising the level queues units that spawn within their own budget") {
  const Scenario s = units_city();
  auto w = make(s);
  auto without = make(load("default.city.json"));  // the same city, no prevention used
  for (int k = 0; k < 5; ++k) {
    w->step();
    without->step();
  }

  const CommandResult r = apply_one(*w, SetPreventionLevel{2});
  INFO(r.message);
  REQUIRE(r.status == CommandStatus::Accepted);
  const PreventionState& p = w->prevention();
  CHECK(p.level == 2);
  CHECK(in_state(*w, ResponseUnitState::Queued) == 7);  // accepted, not completed
  CHECK(p.per_level[0].queued == 3);
  CHECK(p.per_level[1].queued == 4);

  std::size_t active_before = 0;
  for (int k = 0; k < 4; ++k) {
    w->step();
    REQUIRE(w->check_invariants().ok());
    const std::size_t active = in_state(*w, ResponseUnitState::Active);
    CHECK(active - active_before <= 2);  // prevention.spawn_per_step
    active_before = active;
  }
  CHECK(in_state(*w, ResponseUnitState::Active) == 7);
  CHECK(p.per_level[0].spawned == 3);
  CHECK(p.per_level[1].spawned == 4);
  // Their own demand source: the background population grows as without them.
  for (int k = 0; k < 5; ++k) without->step();  // both at step 10
  CHECK(w->background_pedestrians() == without->background_pedestrians());
  for (const ResponseUnit& u : p.units) {
    const EntityReport e = w->describe(u.entity);
    CHECK(e.lifecycle == LifecycleState::Active);
    CHECK(e.response_level == u.level);
    CHECK(e.zone == -1);
  }

  const CommandResult bad = apply_one(*w, SetPreventionLevel{3});
  CHECK(bad.status == CommandStatus::Rejected);
  CHECK(bad.message.find("level: 3") != std::string::npos);
  CHECK(w->prevention().level == 2);
}

TEST_CASE("lowering the level cancels queued units and despawns active ones of the levels above") {
  const Scenario s = units_city();
  auto w = make(s);
  REQUIRE(apply_one(*w, SetPreventionLevel{2}).status == CommandStatus::Accepted);
  w->step();
  w->step();  // 4 placed: handles 1-4 (three of level 1, one of level 2)
  REQUIRE(in_state(*w, ResponseUnitState::Active) == 4);
  const ResponseUnit level2 = w->prevention().units[3];
  REQUIRE(level2.level == 2);

  REQUIRE(apply_one(*w, SetPreventionLevel{1}).status == CommandStatus::Accepted);
  const PreventionState& p = w->prevention();
  CHECK(p.per_level[1].canceled == 3);  // the queued ones of level 2
  CHECK(p.per_level[0].canceled == 0);
  // Phase 9 of the same step took the active level-2 unit off its lane.
  CHECK(w->describe(level2.entity).lifecycle != LifecycleState::Active);
  w->step();
  CHECK(p.units.size() == 3);
  CHECK(p.per_level[1].despawned == 1);
  CHECK(p.per_level[0].despawned == 0);
  for (int k = 0; k < 20; ++k) w->step();
  CHECK(w->counters()
            .despawned_by_reason[static_cast<std::size_t>(DespawnReason::PreventionLowered)] == 1);
  CHECK_FALSE(w->registry().is_alive(level2.entity));

  // Down to 0: everything goes; raising again queues anew (new handles).
  REQUIRE(apply_one(*w, SetPreventionLevel{0}).status == CommandStatus::Accepted);
  w->step();
  CHECK(p.units.empty());
  CHECK(p.per_level[0].despawned == 3);
  REQUIRE(apply_one(*w, SetPreventionLevel{1}).status == CommandStatus::Accepted);
  CHECK(p.units.size() == 3);
  CHECK(p.units.front().handle == 8);
  CHECK(p.per_level[0].queued == 6);
}

TEST_CASE("a raise beyond prevention.max_units counts the rest as capped") {
  Scenario s = units_city();
  s.prevention.max_units = 5;
  auto w = make(s);
  REQUIRE(apply_one(*w, SetPreventionLevel{2}).status == CommandStatus::Accepted);
  CHECK(w->prevention().units.size() == 5);
  CHECK(w->prevention().per_level[1].queued == 2);
  CHECK(w->prevention().per_level[1].capped == 2);
}

TEST_CASE("corpses: kept near, soft-deleted in the middle range, deleted at once far away") {
  Scenario s = load("default.city.json");
  s.prevention.cleanup_every_steps = 5;
  auto probe = make(s);
  for (int k = 0; k < 20; ++k) probe->step();
  const std::vector<EntityId> ids = by_distance(*probe);
  REQUIRE(ids.size() >= 20);
  const EntityId near = ids[0], middle = ids[ids.size() / 2], far = ids.back();
  const double dn = distance_to_observer(*probe, near), dm = distance_to_observer(*probe, middle),
               df = distance_to_observer(*probe, far);
  REQUIRE(dn < dm);
  REQUIRE(dm < df);
  // The same city with ranges around these three (prevention settings do not
  // change a run that does not use them: the same state after 20 steps).
  s.prevention.corpse_keep_m = (dn + dm) / 2;
  s.prevention.corpse_force_m = (dm + df) / 2;
  auto w = make(s);
  for (int k = 0; k < 20; ++k) w->step();
  REQUIRE(w->digest() == probe->digest());

  kill_all(*w, {near, middle, far});
  CHECK(w->prevention().corpses.size() == 3);
  CHECK(w->describe(near).corpse);
  const EntityReport before = w->describe(near);
  step_to_cleanup(*w);
  const auto& by_reason = w->counters().despawned_by_reason;
  // Far: deleted at once, no fade.
  CHECK_FALSE(w->registry().is_alive(far));
  CHECK(by_reason[static_cast<std::size_t>(DespawnReason::CorpseForced)] == 1);
  // Middle: soft delete through phase 9 (fading unless already off screen).
  CHECK(gone_or_fading(*w, middle));
  CHECK(w->prevention().corpse.soft_deleted == 1);
  // Near: kept where it died.
  CHECK(w->describe(near).corpse);
  CHECK(w->describe(near).s_m == before.s_m);
  CHECK(w->prevention().corpses.size() == 1);
  for (int k = 0; k < 20; ++k) w->step();
  CHECK(by_reason[static_cast<std::size_t>(DespawnReason::CorpseCleanup)] == 1);
  CHECK(w->describe(near).corpse);
  CHECK(w->prevention().corpse.pressure_deleted == 0);

  // Refusals change nothing.
  const CommandResult again = apply_one(*w, KillPedestrian{near});
  CHECK(again.status == CommandStatus::Rejected);
  CHECK(again.message.find("already a corpse") != std::string::npos);
  const CommandResult stale = apply_one(*w, KillPedestrian{far});
  CHECK(stale.status == CommandStatus::Rejected);
  CHECK(apply_one(*w, SetAdmissionMask{near, true}).status == CommandStatus::Rejected);
}

TEST_CASE("resource pressure deletes the farthest off-screen corpse before any visible one") {
  Scenario s = load("default.city.json");
  s.tiers.full_enter_m = 5.0;
  s.tiers.full_exit_m = 6.0;
  s.tiers.simulated_enter_m = 10.0;
  s.tiers.simulated_exit_m = 12.0;
  s.prevention.cleanup_every_steps = 5;
  s.prevention.corpse_keep_m = 100'000.0;  // every corpse in the near range
  s.prevention.corpse_force_m = 150'000.0;
  s.prevention.corpse_pressure_count = 1;  // more than 1 corpse: pressure
  s.prevention.pressure_entities = 1;      // the live-entity limit is reached
  auto w = make(s);
  for (int k = 0; k < 20; ++k) w->step();
  const std::vector<EntityId> ids = by_distance(*w);
  const EntityId nearest = ids[0], hidden = ids[ids.size() / 2], farthest = ids.back();
  // The farthest is made visible (ForceFull); the middle one stays Coarse.
  REQUIRE(apply_one(*w, ForceFull{farthest, true}).status == CommandStatus::Accepted);
  for (int k = 0; k < 8; ++k) w->step();
  REQUIRE(w->describe(farthest).tier == SimTier::Full);
  REQUIRE(w->describe(hidden).tier == SimTier::Coarse);

  kill_all(*w, {hidden, farthest});
  step_to_cleanup(*w);
  CHECK(w->prevention().corpse.pressure_deleted == 1);
  CHECK_FALSE(w->registry().is_alive(hidden));  // off screen first (at once), though nearer
  CHECK(w->describe(farthest).corpse);
  step_to_cleanup(*w);
  CHECK(w->prevention().corpse.pressure_deleted == 1);  // 1 corpse: not above the threshold
  CHECK(w->describe(farthest).corpse);
  // A third corpse puts the count above the threshold again: the one left
  // off screen (the new one) goes before the visible one.
  kill_all(*w, {nearest});
  const bool nearest_hidden = w->describe(nearest).tier == SimTier::Coarse;
  step_to_cleanup(*w);
  CHECK(w->prevention().corpse.pressure_deleted == 2);
  CHECK(w->registry().is_alive(nearest) != nearest_hidden);
  CHECK(w->registry().is_alive(farthest) == nearest_hidden);
  CHECK(
      w->counters().despawned_by_reason[static_cast<std::size_t>(DespawnReason::CorpsePressure)] ==
      2);
}

TEST_CASE(
    "prevention checkpoint round trip keeps the digest chain; bad entries are refused by path") {
  const Scenario s = units_city();
  auto w = make(s);
  for (int k = 0; k < 10; ++k) w->step();
  REQUIRE(apply_one(*w, SetPreventionLevel{2}).status == CommandStatus::Accepted);
  w->step();
  kill_all(*w, {by_distance(*w).at(3)});
  auto back = World::restore(s, w->capture());
  INFO((back.errors.empty() ? std::string() : back.errors[0].path + ": " + back.errors[0].message));
  REQUIRE(back.world);
  CHECK(back.world->prevention() == w->prevention());
  for (int k = 0; k < 30; ++k) {
    w->step();
    back.world->step();
    REQUIRE(back.world->digest() == w->digest());
  }
  {
    WorldCheckpoint cp = w->capture();
    cp.prevention.corpses.push_back({EntityId{999, 7}, 0});
    const auto r = World::restore(s, cp);
    CHECK_FALSE(r.world);
    REQUIRE_FALSE(r.errors.empty());
    CHECK(r.errors[0].path.rfind("prevention.corpses[", 0) == 0);
  }
  {
    WorldCheckpoint cp = w->capture();
    REQUIRE_FALSE(cp.prevention.units.empty());
    cp.prevention.units[0].level = 9;
    const auto r = World::restore(s, cp);
    CHECK_FALSE(r.world);
    REQUIRE_FALSE(r.errors.empty());
    CHECK(r.errors[0].path == "prevention.units[0].level");
  }
}

TEST_CASE("an unused prevention block leaves the digest alone") {
  Scenario s = load("default.city.json");
  auto a = make(s);
  s.prevention.units_per_level = {2};
  s.prevention.cleanup_every_steps = 3;
  auto b = make(s);
  for (int k = 0; k < 30; ++k) {
    a->step();
    b->step();
    REQUIRE(a->digest() == b->digest());
  }
  CHECK(b->prevention().unused());
}
