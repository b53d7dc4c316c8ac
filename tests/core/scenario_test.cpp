#include <catch2/catch.hpp>

#include <limits>

#include "bustle/core/scenario.hpp"

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

TEST_CASE("a minimal scenario is valid") { CHECK(validate_scenario(valid()).empty()); }

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
