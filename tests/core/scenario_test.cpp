#include "bustle/core/scenario.hpp"

#include <catch2/catch.hpp>
#include <limits>

using namespace bustle::core;

namespace {
Scenario valid() {
  Scenario s;
  s.id = "t";
  s.lanes = {{"a", LaneKind::Sidewalk, {{0, 0}, {10, 0}}, 1.4, {"a"}}};
  s.pedestrians.count = 5;
  return s;
}

bool has_error(const std::vector<ScenarioError>& errs, const std::string& path,
               const std::string& fragment) {
  for (const auto& e : errs) {
    if (e.path == path && e.message.find(fragment) != std::string::npos) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("a minimal scenario is valid") {
  CHECK(validate_scenario(valid()).empty());
}

TEST_CASE("each semantic error names its field") {
  SECTION("empty id") {
    Scenario s = valid();
    s.id.clear();
    CHECK(has_error(validate_scenario(s), "id", "non-empty"));
  }
  SECTION("step out of range") {
    Scenario s = valid();
    s.step_us = 10;
    CHECK(has_error(validate_scenario(s), "step_us", "must be in"));
  }
  SECTION("lane geometry out of bounds (found by fuzzing: fragment count overflow)") {
    Scenario s = valid();
    s.lanes[0].points = {{0, 0}, {100'001, 0}};
    CHECK(has_error(validate_scenario(s), "lanes[0].points[1].x",
                    "outside the world extent [-100000, 100000] m"));
    s.lanes[0].points = {{-60'000, 0}, {60'000, 0}};
    CHECK(has_error(validate_scenario(s), "lanes[0].points", "at most 100000 m"));
  }
  SECTION("duplicate lane id") {
    Scenario s = valid();
    s.lanes.push_back(s.lanes[0]);
    CHECK(has_error(validate_scenario(s), "lanes[1].id", "duplicate lane id 'a'"));
  }
  SECTION("unknown successor") {
    Scenario s = valid();
    s.lanes[0].successors = {"a", "nowhere"};
    CHECK(has_error(validate_scenario(s), "lanes[0].successors[1]", "unknown lane id 'nowhere'"));
  }
  SECTION("too few points") {
    Scenario s = valid();
    s.lanes[0].points = {{0, 0}};
    CHECK(has_error(validate_scenario(s), "lanes[0].points", "at least 2 points"));
  }
  SECTION("zero-length polyline") {
    Scenario s = valid();
    s.lanes[0].points = {{1, 1}, {1, 1}};
    CHECK(has_error(validate_scenario(s), "lanes[0].points", "length"));
  }
  SECTION("non-finite coordinate") {
    Scenario s = valid();
    s.lanes[0].points[1].x_m = std::numeric_limits<double>::infinity();
    CHECK(has_error(validate_scenario(s), "lanes[0].points[1]", "finite"));
  }
  SECTION("speed out of range") {
    Scenario s = valid();
    s.lanes[0].speed_mps_limit = 0.0;
    CHECK(has_error(validate_scenario(s), "lanes[0].speed_mps_limit", "(0, 100]"));
  }
  SECTION("pedestrians without sidewalks") {
    Scenario s = valid();
    s.lanes[0].kind = LaneKind::Road;
    CHECK(has_error(validate_scenario(s), "pedestrians.count", "no sidewalk"));
  }
  SECTION("population above capacity") {
    Scenario s = valid();
    s.entity_capacity = 2;
    CHECK(has_error(validate_scenario(s), "pedestrians.count", "entity_capacity"));
  }
  SECTION("no lanes") {
    Scenario s = valid();
    s.lanes.clear();
    s.pedestrians.count = 0;
    CHECK(has_error(validate_scenario(s), "lanes", "at least one lane"));
  }
}

TEST_CASE("importance, spawn, despawn and ledger settings are range-checked") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  SECTION("accepted values at the limits") {
    Scenario s = valid();
    s.lanes[0].elevation_m = -10'000.0;
    s.pedestrians.fragment_length_m = 1.0;
    s.pedestrians.dots_every_steps = 600;
    s.spawn = {4096, 1u << 20, 100};  // timeout of exactly one 100 ms step
    s.despawn = {60'000, 0.0};
    ImportanceSpec& imp = s.tiers.importance;
    for (double& w : imp.class_weight) w = 0.01;  // equal weights keep the order
    imp.pedestrian_weight = 100.0;
    imp.vehicle_weight = 0.01;
    imp.height_weight = 0.0;
    imp.behind_factor = 1.0;
    imp.areas = {{"a", {1, 2}, 0.5, 1.0}, {"b", {-3, 4}, 1e6, 100.0}};
    const auto errs = validate_scenario(s);
    INFO((errs.empty() ? "" : errs[0].path + ": " + errs[0].message));
    CHECK(errs.empty());
  }
  SECTION("tier resolution cadences, per kind") {
    Scenario s = valid();
    s.tiers.pedestrian_resolve_every_steps = 64;
    s.tiers.vehicle_resolve_every_steps = 1;
    CHECK(validate_scenario(s).empty());
    s.tiers.vehicle_resolve_every_steps = 0;
    CHECK(has_error(validate_scenario(s), "tiers.vehicle_resolve_every_steps", "[1, 64]"));
    s.tiers.vehicle_resolve_every_steps = 65;
    CHECK(has_error(validate_scenario(s), "tiers.vehicle_resolve_every_steps", "[1, 64]"));
  }
  SECTION("lane elevation") {
    Scenario s = valid();
    s.lanes[0].elevation_m = 10'000.5;
    CHECK(has_error(validate_scenario(s), "lanes[0].elevation_m", "10000"));
    s.lanes[0].elevation_m = nan;
    CHECK(has_error(validate_scenario(s), "lanes[0].elevation_m", "finite"));
  }
  SECTION("fragment length and dots interval") {
    Scenario s = valid();
    s.pedestrians.fragment_length_m = 0.99;
    s.pedestrians.dots_every_steps = 0;
    auto errs = validate_scenario(s);
    CHECK(has_error(errs, "pedestrians.fragment_length_m", "[1, 10000]"));
    CHECK(has_error(errs, "pedestrians.dots_every_steps", "[1, 600]"));
    s.pedestrians.fragment_length_m = inf;
    s.pedestrians.dots_every_steps = 601;
    errs = validate_scenario(s);
    CHECK(has_error(errs, "pedestrians.fragment_length_m", "[1, 10000]"));
    CHECK(has_error(errs, "pedestrians.dots_every_steps", "[1, 600]"));
  }
  SECTION("spawn pipeline") {
    Scenario s = valid();
    s.spawn = {0, 0, 3'600'001};
    auto errs = validate_scenario(s);
    CHECK(has_error(errs, "spawn.per_step_cap", "[1, 4096]"));
    CHECK(has_error(errs, "spawn.queue_depth", "[1, 1048576]"));
    CHECK(has_error(errs, "spawn.timeout_ms", "3600000"));
    s.spawn = {4097, (1u << 20) + 1, 99};
    errs = validate_scenario(s);
    CHECK(has_error(errs, "spawn.per_step_cap", "[1, 4096]"));
    CHECK(has_error(errs, "spawn.queue_depth", "[1, 1048576]"));
    CHECK(has_error(errs, "spawn.timeout_ms", "at least one step"));
  }
  SECTION("spawn timeout follows the step length") {
    Scenario s = valid();
    s.step_us = 1'500;  // 1.5 ms: 1 ms would be shorter than a step
    s.spawn.timeout_ms = 1;
    CHECK(has_error(validate_scenario(s), "spawn.timeout_ms", "[2, 3600000]"));
    s.spawn.timeout_ms = 2;
    CHECK(validate_scenario(s).empty());
  }
  SECTION("despawn phase") {
    Scenario s = valid();
    s.despawn = {60'001, -0.5};
    auto errs = validate_scenario(s);
    CHECK(has_error(errs, "despawn.fade_ms", "at most 60000"));
    CHECK(has_error(errs, "despawn.out_of_range_m", "non-negative"));
    s.despawn.out_of_range_m = inf;
    CHECK(has_error(validate_scenario(s), "despawn.out_of_range_m", "finite"));
  }
  SECTION("class weights: range and order") {
    Scenario s = valid();
    double* w = s.tiers.importance.class_weight;
    w[0] = 100.5;
    CHECK(has_error(validate_scenario(s), "tiers.importance.class_weight.story", "[0.01, 100]"));
    w[0] = 4.0;
    w[3] = 0.005;
    CHECK(
        has_error(validate_scenario(s), "tiers.importance.class_weight.background", "[0.01, 100]"));
    w[3] = nan;
    CHECK(
        has_error(validate_scenario(s), "tiers.importance.class_weight.background", "[0.01, 100]"));
    w[3] = 1.0;
    w[2] = 2.5;  // community above quest (2.0)
    auto errs = validate_scenario(s);
    CHECK(errs.size() == 1);
    CHECK(has_error(errs, "tiers.importance.class_weight.community",
                    "the order is story > quest > community > background"));
    w[2] = 1.0;
    w[3] = 1.01;  // background above community
    CHECK(has_error(validate_scenario(s), "tiers.importance.class_weight.background",
                    "must not exceed community"));
  }
  SECTION("type, height and behind weights") {
    Scenario s = valid();
    ImportanceSpec& imp = s.tiers.importance;
    imp.pedestrian_weight = 0.0;
    imp.vehicle_weight = inf;
    imp.height_weight = 1000.5;
    imp.behind_factor = 0.99;
    auto errs = validate_scenario(s);
    CHECK(has_error(errs, "tiers.importance.pedestrian_weight", "[0.01, 100]"));
    CHECK(has_error(errs, "tiers.importance.vehicle_weight", "[0.01, 100]"));
    CHECK(has_error(errs, "tiers.importance.height_weight", "[0, 1000]"));
    CHECK(has_error(errs, "tiers.importance.behind_factor", "[1, 100]"));
    imp = {};
    imp.height_weight = -0.1;
    imp.behind_factor = 100.1;
    errs = validate_scenario(s);
    CHECK(has_error(errs, "tiers.importance.height_weight", "[0, 1000]"));
    CHECK(has_error(errs, "tiers.importance.behind_factor", "[1, 100]"));
  }
  SECTION("areas of interest") {
    Scenario s = valid();
    s.tiers.importance.areas = {{"p", {0, 0}, 10, 2},
                                {"", {0, 0}, 10, 2},
                                {"p", {nan, 0}, 0, 0.5},
                                {"q", {0, -inf}, inf, 101}};
    const auto errs = validate_scenario(s);
    CHECK(has_error(errs, "tiers.importance.areas[1].id", "non-empty"));
    CHECK(has_error(errs, "tiers.importance.areas[2].id", "duplicate area id 'p'"));
    CHECK(has_error(errs, "tiers.importance.areas[2].center", "finite"));
    CHECK(has_error(errs, "tiers.importance.areas[2].radius_m", "positive"));
    CHECK(has_error(errs, "tiers.importance.areas[2].weight", "[1, 100]"));
    CHECK(has_error(errs, "tiers.importance.areas[3].center", "finite"));
    CHECK(has_error(errs, "tiers.importance.areas[3].radius_m", "finite"));
    CHECK(has_error(errs, "tiers.importance.areas[3].weight", "[1, 100]"));
    CHECK(errs.size() == 8);
  }
}

TEST_CASE("coordinates stay within the world extent, and distances are finite") {
  const double inf = std::numeric_limits<double>::infinity();
  SECTION("a finite but huge lane point names its axis") {
    Scenario s = valid();
    s.lanes[0].points[1].x_m = 1.7e308;
    CHECK(has_error(validate_scenario(s), "lanes[0].points[1].x", "outside the world extent"));
    s = valid();
    s.lanes[0].points[0].y_m = -(kWorldExtentM + 1.0);
    CHECK(has_error(validate_scenario(s), "lanes[0].points[0].y", "outside the world extent"));
  }
  SECTION("the extent itself is allowed") {
    Scenario s = valid();
    s.lanes[0].points = {{-kWorldExtentM, -kWorldExtentM}, {-kWorldExtentM, -kWorldExtentM + 50.0}};
    s.observers = {{kWorldExtentM, 0.0}};
    CHECK(validate_scenario(s).empty());
  }
  SECTION("observers and area centres") {
    Scenario s = valid();
    s.observers = {{0.0, 0.0}, {0.0, 2e5}};
    s.tiers.importance.areas = {{"p", {-2e5, 0.0}, 10.0, 2.0}};
    const auto errs = validate_scenario(s);
    CHECK(has_error(errs, "observers[1].y", "world extent"));
    CHECK(has_error(errs, "tiers.importance.areas[0].center.x", "world extent"));
  }
  SECTION("infinite vehicle and tier distances") {
    Scenario s = valid();
    s.vehicle_rules.headway_block_m = inf;
    s.vehicle_rules.headway_caution_m = inf;
    s.vehicle_rules.pedestrian_hazard_m = inf;
    s.tiers.simulated_enter_m = s.tiers.simulated_exit_m = inf;
    const auto errs = validate_scenario(s);
    CHECK(has_error(errs, "vehicle_rules.headway_block_m", "finite"));
    CHECK(has_error(errs, "vehicle_rules.headway_caution_m", "finite"));
    CHECK(has_error(errs, "vehicle_rules.pedestrian_hazard_m", "finite"));
    CHECK(has_error(errs, "tiers.simulated_enter_m", "finite"));
    CHECK(has_error(errs, "tiers.simulated_exit_m", "finite"));
  }
}
