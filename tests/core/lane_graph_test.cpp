#include "bustle/core/lane_graph.hpp"

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "bustle/scenario/scenario_loader.hpp"

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

TEST_CASE(
    "position() gives the bits of sample()'s x and y on every shipped lane, repeated points "
    "included") {
  // position() reads the flat segment cache, sample() the lane's own point
  // and length vectors: the same values and arithmetic, so equal bits.
  std::vector<Scenario> scenarios;
  for (const char* name : {"default.city.json", "largeblock.city.json", "corridor.city.json"}) {
    auto r =
        bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) + "/configs/" + name);
    REQUIRE(r.ok());
    scenarios.push_back(*r.scenario);
  }
  Scenario repeated = l_shaped();
  repeated.lanes[0].points = {{0, 0},  {10, 0}, {10, 0},
                              {10, 0}, {10, 5}, {10, 5}};  // zero-length segments
  scenarios.push_back(repeated);
  // segment_at() counts segments over a fixed window for lanes of up to
  // nine segments and walks longer ones: lanes of 9 and 10 segments sit on
  // either side of that, and a 24-segment curve with repeated points.
  Scenario polylines = l_shaped();
  for (const std::size_t segments : {9u, 10u, 24u}) {
    std::vector<Vec2> points;
    for (std::size_t k = 0; k <= segments; ++k) {
      const double a = 0.3 * static_cast<double>(k);
      points.push_back({20.0 * std::cos(a) + static_cast<double>(k), 20.0 * std::sin(a)});
      if (segments == 24 && k % 5 == 2) points.push_back(points.back());  // zero-length
    }
    polylines.lanes.push_back(
        {"p" + std::to_string(segments), LaneKind::Sidewalk, points, 1.0, {}});
  }
  scenarios.push_back(polylines);
  for (const Scenario& s : scenarios) {
    const LaneGraph g(s);
    for (LaneIndex l = 0; l < g.size(); ++l) {
      const Lane& lane = g.lane(l);
      std::vector<double> at = {-1.0, 0.0, lane.length_m, lane.length_m + 1.0};
      for (const double c : lane.cumulative_m)
        at.insert(at.end(), {c, std::nextafter(c, -1.0), std::nextafter(c, 1e9)});
      for (int k = 0; k <= 1000; ++k) at.push_back(lane.length_m * k / 1000.0);
      for (const double s_m : at) {
        const Pose p = g.sample(l, s_m);
        const Vec2 q = g.position(l, s_m);
        INFO(s.id << " lane " << lane.id << " s " << s_m);
        REQUIRE(std::bit_cast<std::uint64_t>(q.x_m) == std::bit_cast<std::uint64_t>(p.x_m));
        REQUIRE(std::bit_cast<std::uint64_t>(q.y_m) == std::bit_cast<std::uint64_t>(p.y_m));
      }
    }
  }
}
