// Importance inputs of the simulation-tier axis (importance.hpp): priority
// class, type weight, height difference, view direction and areas of
// interest, and their effect on tier resolution.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "invariant_probe.hpp"

using namespace bustle::core;

namespace {

ImportanceField field(const ImportanceSpec& spec, std::vector<Vec2> obs,
                      std::vector<ObserverView> views) {
  ImportanceField f;
  static std::vector<Vec2> keep_obs;
  static std::vector<ObserverView> keep_views;
  keep_obs = std::move(obs);
  keep_views = std::move(views);
  f.prepare(spec, keep_obs, keep_views);
  return f;
}

}  // namespace

TEST_CASE("default importance: a background pedestrian on flat ground is at its plain distance") {
  const ImportanceSpec spec;
  const ImportanceField f = field(spec, {{0, 0}, {100, 0}}, {});
  const double w = f.weight(PriorityClass::Background, false, 30, 40);
  CHECK(w == 1.0);
  CHECK(f.effective_distance_m(30, 40, 0.0, w) == Approx(50.0));
}

TEST_CASE("priority classes rank story > quest > community > background at equal distance") {
  const ImportanceSpec spec;
  const ImportanceField f = field(spec, {{0, 0}}, {});
  double last = 0.0;
  for (const PriorityClass c : {PriorityClass::Story, PriorityClass::Quest,
                                PriorityClass::Community, PriorityClass::Background}) {
    const double d = f.effective_distance_m(100, 0, 0.0, f.weight(c, false, 100, 0));
    CHECK(d > last);
    last = d;
  }
}

TEST_CASE(
    "height difference, view direction, type weight and areas of interest each change d_eff") {
  ImportanceSpec spec;
  spec.vehicle_weight = 2.0;
  spec.areas = {{"plaza", {200, 0}, 20.0, 4.0}};
  const ImportanceField f =
      field(spec, {{0, 0}}, {ObserverView{0.0, true, 0.0}});  // looks towards +x
  const double flat = f.effective_distance_m(50, 0, 0.0, 1.0);
  CHECK(flat == Approx(50.0));
  CHECK(f.effective_distance_m(50, 0, 10.0, 1.0) == Approx(50.0 + 2.0 * 10.0));  // a deck 10 m up
  CHECK(f.effective_distance_m(-50, 0, 0.0, 1.0) == Approx(50.0 * 1.5));  // behind the observer
  CHECK(f.weight(PriorityClass::Background, true, 50, 0) == 2.0);         // vehicles weigh double
  CHECK(f.weight(PriorityClass::Background, false, 205, 5) == 4.0);       // inside the plaza
  CHECK(f.weight(PriorityClass::Background, false, 250, 0) == 1.0);
}

TEST_CASE("with one Full slot, a story pedestrian wins it over a nearer background one") {
  Scenario s;
  s.id = "test.importance";
  s.lanes = {{"a", LaneKind::Sidewalk, {{0, 0}, {400, 0}}, 0.01, {}}};
  s.tiers.full_enter_m = 25.0;
  s.tiers.full_exit_m = 30.0;
  s.tiers.full_cap = 1;
  s.observers = {{0, 0}};
  s.entity_capacity = 16;
  s.spawn.per_step_cap = 8;
  auto created = World::create(s, 1);
  REQUIRE(created.world);
  World& w = *created.world;
  REQUIRE(w.submit({{1, 1}, SpawnPedestrian{"", "a", 3, 0, {}}}) ==
          SubmitStatus::Queued);  // background class
  REQUIRE(w.submit({{1, 2}, SpawnPedestrian{"", "a", 0, 0, {}}}) ==
          SubmitStatus::Queued);  // story class
  for (int k = 0; k < 12; ++k) w.step();
  const EntityId bg = w.find_spawn(1)->entity;
  const EntityId story = w.find_spawn(2)->entity;
  const EntityReport rb = w.describe(bg);
  const EntityReport rs = w.describe(story);
  INFO("background at " << rb.s_m << " m, story at " << rs.s_m << " m");
  // Whatever their positions on the 400 m lane, the story one ranks by a
  // quarter of its distance.
  CHECK(rs.effective_distance_m == Approx(std::hypot(rs.pose.x_m, rs.pose.y_m) / 4.0));
  if (rs.effective_distance_m < rb.effective_distance_m && rs.effective_distance_m <= 25.0) {
    CHECK(rs.tier == SimTier::Full);
  }
  CHECK((rs.tier == SimTier::Full) + (rb.tier == SimTier::Full) <= 1);
}

TEST_CASE("vehicle_weight pulls vehicles nearer in their tier resolution") {
  // Two identical corridor runs; the second weighs vehicles 100x, so every
  // vehicle's effective distance shrinks and more of them are Full.
  auto full_count = [](double weight) {
    Scenario s;
    s.id = "test.vehicle-weight";
    s.lanes = {{"r", LaneKind::Road, {{0, 0}, {1000, 0}}, 10.0, {"r"}}};
    GarageSpec g;
    g.id = "g";
    g.lane = "r";
    g.route = {"r"};
    g.prototypes = {"car"};
    g.cooldown_frames = 0;
    g.entrance_clear_m = 0.0;
    s.garages = {g};
    for (int k = 0; k < 10; ++k)
      s.vehicle_plan.requests.push_back({"q" + std::to_string(k), "g", "car", "r", 10});
    s.vehicle_plan.batch_size = 10;
    s.vehicle_plan.batch_interval_steps = 1;
    s.observers = {{2000, 0}};
    s.tiers.importance.vehicle_weight = weight;
    s.entity_capacity = 64;
    auto created = World::create(s, 1);
    REQUIRE(created.errors.empty());
    World& w = *created.world;
    for (int k = 0; k < 300; ++k) w.step();
    REQUIRE(w.vehicles().store().size() > 0);
    std::uint32_t full = 0;
    for (const SimTier t : w.vehicles().store().sim_tier) full += t == SimTier::Full;
    return full;
  };
  CHECK(full_count(1.0) == 0);  // 1 km+ away: nothing is Full
  CHECK(full_count(100.0) > 0);
}

TEST_CASE("effective_distances_m gives effective_distance_m's bits for every point") {
  // The batch form runs its loops several points at a time: the same
  // operations must give the same bits, flat or with heights and views,
  // for weights of 1 (whose division is skipped one at a time) and others.
  ImportanceSpec spec;
  spec.height_weight = 1.5;
  spec.behind_factor = 1.75;
  const std::vector<std::vector<ObserverView>> view_sets = {
      {},  // flat, all at z 0
      {ObserverView{3.0, false, 0.0}, ObserverView{3.0, false, 0.0},
       ObserverView{3.0, false, 0.0}},  // flat, all at z 3
      {ObserverView{0.0, true, 0.7}, ObserverView{4.0, false, 0.0}, ObserverView{}}};  // directed
  Prng rng(5);
  for (const auto& views : view_sets) {
    const ImportanceField f = field(spec, {{0, 0}, {120.5, -3.25}, {-40, 77}}, views);
    constexpr std::size_t kPoints = 257;  // not a multiple of any vector width
    std::vector<double> x(kPoints), y(kPoints), z(kPoints), w(kPoints), out(kPoints);
    for (std::size_t j = 0; j < kPoints; ++j) {
      x[j] = (rng.next_unit() - 0.5) * 2000.0;
      y[j] = (rng.next_unit() - 0.5) * 2000.0;
      z[j] = j % 3 == 0 ? 0.0 : rng.next_unit() * 12.0;
      w[j] = j % 4 == 0 ? 1.0 : j % 4 == 1 ? 0.25 : 1.0 + rng.next_unit() * 7.0;
    }
    x[0] = 0.0;  // on an observer: distance 0
    y[0] = 0.0;
    f.effective_distances_m(x.data(), y.data(), z.data(), w.data(), kPoints, out.data());
    for (std::size_t j = 0; j < kPoints; ++j) {
      INFO("views " << views.size() << ", point " << j);
      REQUIRE(std::bit_cast<std::uint64_t>(out[j]) ==
              std::bit_cast<std::uint64_t>(f.effective_distance_m(x[j], y[j], z[j], w[j])));
    }
  }
}

TEST_CASE("phase 7's batch of pedestrian distances equals effective_distance_at row by row") {
  // The default city with everything the distance depends on switched on:
  // lanes at several heights, an area of interest, observers at their own
  // heights (one with a view direction), pedestrians of every class on
  // every lane, each at many points along it (polyline corners included).
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) +
                                                     "/configs/default.city.json");
  REQUIRE(loaded.ok());
  Scenario s = *loaded.scenario;
  for (std::size_t l = 0; l < s.lanes.size(); ++l)
    s.lanes[l].elevation_m = 1.5 * static_cast<double>(l);
  s.tiers.importance.areas = {{"plaza", {60.0, 20.0}, 35.0, 3.0}};
  s.entity_capacity = 4096;
  s.spawn.per_step_cap = 256;
  auto created = World::create(s, 3);
  REQUIRE(created.world);
  World& w = *created.world;
  std::uint32_t request = 0;
  for (const LaneIndex lane : w.lanes().sidewalks()) {
    for (std::uint8_t cls = 0; cls < 4; ++cls) {
      for (int k = 0; k < 16; ++k) {
        (void)w.submit({{1, ++request}, SpawnPedestrian{"", w.lanes().lane(lane).id, cls, 0, {}}});
      }
    }
  }
  for (const bool directed : {false, true}) {
    SetObservers obs;
    obs.points = {{40.0, 30.0, 2.0, false, 0.0},
                  {140.0, 30.0, directed ? 6.0 : 2.0, directed, 2.5}};
    REQUIRE(w.submit({{2, ++request}, obs}) == SubmitStatus::Queued);
    for (int k = 0; k < 40; ++k) w.step();
    const PedestrianStore& p = w.pedestrians();
    REQUIRE(p.size() > 100);
    std::vector<std::uint32_t> rows(p.size());
    for (std::uint32_t i = 0; i < p.size(); ++i) rows[i] = i;
    std::vector<double> batch(p.size());
    InvariantProbe::pedestrian_effective_distances(w, rows.data(), p.size(), batch.data());
    std::uint32_t weighted = 0;
    for (std::uint32_t i = 0; i < p.size(); ++i) {
      const Vec2 at = w.lanes().position(p.lane[i], p.s_m[i]);
      const double one = InvariantProbe::effective_distance_at(
          w, at, p.lane[i], static_cast<PriorityClass>(p.priority[i]));
      weighted += p.priority[i] != static_cast<std::uint8_t>(PriorityClass::Background);
      INFO("directed " << directed << ", row " << i << ", lane " << p.lane[i] << ", s "
                       << p.s_m[i]);
      REQUIRE(std::bit_cast<std::uint64_t>(batch[i]) == std::bit_cast<std::uint64_t>(one));
    }
    CHECK(weighted > 0);
  }
}
