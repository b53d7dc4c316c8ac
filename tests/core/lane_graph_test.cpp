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

TEST_CASE("lane chains follow in/out degree 1 links and detect rings") {
  Scenario s;
  s.id = "test.chains";
  // a -> b -> c -> {d, e}: a,b,c form one chain; d and e start their own.
  // r1 -> r2 -> r3 -> r1 is a ring of roads (cyclic chain from its lowest lane).
  s.lanes = {
      {"a", LaneKind::Sidewalk, {{0, 0}, {10, 0}}, 1.4, {"b"}},
      {"b", LaneKind::Sidewalk, {{10, 0}, {20, 0}}, 1.4, {"c"}},
      {"c", LaneKind::Sidewalk, {{20, 0}, {30, 0}}, 1.4, {"d", "e"}},
      {"d", LaneKind::Sidewalk, {{30, 0}, {40, 0}}, 1.4, {}},
      {"e", LaneKind::Crossing, {{30, 0}, {30, 10}}, 1.2, {}},
      {"r2", LaneKind::Road, {{0, 50}, {50, 50}}, 10.0, {"r3"}},
      {"r1", LaneKind::Road, {{0, 100}, {0, 50}}, 10.0, {"r2"}},
      {"r3", LaneKind::Road, {{50, 50}, {0, 100}}, 10.0, {"r1"}},
  };
  const LaneGraph g(s);
  REQUIRE(g.chains().size() == 4);
  CHECK(g.chains()[0].lanes == std::vector<LaneIndex>{0, 1, 2});
  CHECK_FALSE(g.chains()[0].cyclic);
  CHECK(g.chains()[0].length_m == Approx(30.0));
  CHECK(g.chains()[1].lanes == std::vector<LaneIndex>{3});
  CHECK(g.chains()[2].lanes == std::vector<LaneIndex>{4});
  CHECK(g.chains()[3].cyclic);
  CHECK(g.chains()[3].lanes == std::vector<LaneIndex>{5, 7, 6});
  CHECK_FALSE(g.chains()[3].pedestrian);
  for (LaneIndex l = 0; l < g.size(); ++l) {
    const auto& lanes = g.chains()[g.chain_of(l)].lanes;
    CHECK(std::count(lanes.begin(), lanes.end(), l) == 1);
  }
}

TEST_CASE("sidewalks are cut into ledger fragments of about fragment_length_m") {
  Scenario s;
  s.id = "test.fragments";
  s.lanes = {{"a", LaneKind::Sidewalk, {{0, 0}, {100, 0}}, 1.4, {}},
             {"x", LaneKind::Crossing, {{100, 0}, {100, 10}}, 1.2, {}}};
  s.pedestrians.fragment_length_m = 30.0;
  const LaneGraph g(s);
  REQUIRE(g.fragments().size() == 4);  // ceil(100 / 30)
  CHECK(g.fragments()[1].start_m == Approx(25.0));
  CHECK(g.fragment_of(0, 0.0) == 0);
  CHECK(g.fragment_of(0, 99.9) == 3);
  CHECK(g.fragment_of(0, 100.0) == 3);
  CHECK(g.fragment_of(1, 5.0) == LaneGraph::kNoFragment);
}
