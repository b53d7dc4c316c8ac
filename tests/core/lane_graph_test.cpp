#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>

#include "bustle/core/lane_graph.hpp"

using namespace bustle::core;

namespace {
Scenario l_shaped() {
  Scenario s;
  s.id = "t";
  s.lanes = {
      {"a", LaneKind::Sidewalk, {{0, 0}, {10, 0}, {10, 5}}, 1.0, {"b", "r"}},
      {"b", LaneKind::Crossing, {{10, 5}, {0, 5}}, 1.0, {"a"}},
      {"r", LaneKind::Road, {{10, 5}, {10, 50}}, 10.0, {}},
  };
  return s;
}
}  // namespace

TEST_CASE("lane lengths and successors are resolved") {
  const Scenario s = l_shaped();
  REQUIRE(validate_scenario(s).empty());
  const LaneGraph g(s);
  REQUIRE(g.size() == 3);
  CHECK(g.lane(0).length_m == Approx(15.0));
  CHECK(g.lane(0).successors == std::vector<LaneIndex>{1, 2});
  // Roads are not walkable: only the crossing remains for pedestrians.
  CHECK(g.lane(0).pedestrian_successors == std::vector<LaneIndex>{1});
  CHECK(g.sidewalks() == std::vector<LaneIndex>{0});
}

TEST_CASE("sampling follows the polyline, including past a corner") {
  const LaneGraph g(l_shaped());
  const Pose p1 = g.sample(0, 4.0);
  CHECK(p1.x_m == Approx(4.0));
  CHECK(p1.y_m == Approx(0.0));
  CHECK(p1.heading_rad == Approx(0.0));
  const Pose p2 = g.sample(0, 12.0);
  CHECK(p2.x_m == Approx(10.0));
  CHECK(p2.y_m == Approx(2.0));
  CHECK(p2.heading_rad == Approx(std::numbers::pi / 2));
  const Pose end = g.sample(0, 99.0);  // clamped
  CHECK(end.y_m == Approx(5.0));
  const Pose start = g.sample(0, -3.0);
  CHECK(start.x_m == Approx(0.0));
}
