// The interest coverage: when a frame's coverage holds a client's need, the
// union the registry files, and which lanes a coverage poses.
#include "bustle/net/coverage.hpp"

#include <catch2/catch.hpp>
#include <cmath>

#include "bustle/core/scenario.hpp"

using namespace bustle;

TEST_CASE("a coverage holds a need when each of its discs lies inside one of the coverage's") {
  const net::Coverage whole;
  CHECK(whole.covers({true, {}}));
  CHECK(whole.covers({false, {{5, 5, 10}}}));

  const net::Coverage part{false, {{0, 0, 100}, {500, 0, 50}}};
  CHECK_FALSE(part.covers({true, {}}));                       // the whole city: never
  CHECK(part.covers({false, {}}));                            // nothing to read
  CHECK(part.covers({false, {{0, 0, 100}}}));                 // the same disc, to the bit
  CHECK(part.covers({false, {{60, 0, 40}, {500, 10, 40}}}));  // each inside one
  CHECK_FALSE(part.covers({false, {{60.5, 0, 40}}}));         // pokes out by half a metre
  CHECK_FALSE(part.covers({false, {{0, 0, 100.001}}}));       // wider
  CHECK_FALSE(part.covers({false, {{250, 0, 10}}}));          // between the two
}

TEST_CASE("the registry files each session's need and unites them, whole when any is") {
  net::CoverageRegistry r;
  std::uint64_t v0 = 0;
  CHECK(r.current(&v0).whole);  // nobody filed: whole
  r.set(7, {false, {{0, 0, 10}}});
  r.set(3, {false, {{100, 0, 20}, {200, 0, 5}}});
  std::uint64_t v1 = 0;
  const net::Coverage c = r.current(&v1);
  CHECK(v1 > v0);
  REQUIRE_FALSE(c.whole);
  // By session id, each session's discs in its order.
  REQUIRE(c.discs.size() == 3);
  CHECK(c.discs[0] == net::CoverageDisc{100, 0, 20});
  CHECK(c.discs[2] == net::CoverageDisc{0, 0, 10});

  // unchanged: the version stays, and is the one from which it is held
  CHECK(r.set(7, {false, {{0, 0, 10}}}) == v1);
  CHECK(r.version() == v1);
  CHECK(c.version == v1);
  r.set(9, {true, {}});
  CHECK(r.current().whole);
  CHECK(r.version() > v1);
  r.erase(9);
  CHECK_FALSE(r.current().whole);
  r.erase(3);
  r.erase(7);
  CHECK(r.current().whole);
  const std::uint64_t v2 = r.version();
  r.erase(7);  // not filed: nothing changes
  CHECK(r.version() == v2);
}

namespace {

core::LaneGraph lanes_of(std::vector<core::LaneSpec> specs) {
  core::Scenario s;
  s.id = "test.coverage";
  s.lanes = std::move(specs);
  return core::LaneGraph(s);
}

}  // namespace

// Which lanes have a posed stretch: 1 per lane that has one.
static std::vector<int> lanes_posed(const std::vector<net::PosedSpan>& spans) {
  std::vector<int> out;
  for (const net::PosedSpan& s : spans) out.push_back(s.any() ? 1 : 0);
  return out;
}

TEST_CASE("a coverage poses the stretch of every lane that reaches into one of its discs") {
  using core::LaneKind;
  const core::LaneGraph lanes = lanes_of({
      {"near", LaneKind::Sidewalk, {{0, 0}, {40, 0}}, 1.4, {}},
      {"through", LaneKind::Sidewalk, {{-1000, 30}, {1000, 30}}, 1.4, {}},  // passes the disc
      {"far", LaneKind::Sidewalk, {{900, 900}, {950, 900}}, 1.4, {}},
      {"edge", LaneKind::Road, {{0, 120}, {0, 500}}, 13.9, {}},  // starts 20 m past the disc
      // Into the disc and out again, then back in: one span over both visits.
      {"zigzag", LaneKind::Sidewalk, {{-300, -50}, {0, -50}, {0, -400}, {-60, -60}}, 1.4, {}},
  });
  net::LaneCoverage cover;
  const net::Coverage disc{false, {{0, 0, 100}}};
  const std::vector<net::PosedSpan> spans = cover.mark(lanes, disc, 0);
  REQUIRE(spans.size() == 5);
  CHECK(lanes_posed(spans) == std::vector<int>{1, 1, 0, 0, 1});
  // All of "near" (inside the disc), grown by the margin past both ends.
  CHECK(spans[0].lo_mm == 0);
  CHECK(spans[0].hi_mm == UINT32_MAX);
  // "through" meets the circle of radius + margin (101 m) at
  // x = -/+sqrt(101^2 - 30^2), 1000 m from its start; the margin once more
  // either side, outwards to the millimetre.
  const double half_m = std::sqrt(101.0 * 101.0 - 30.0 * 30.0);
  CHECK(spans[1].lo_mm == static_cast<std::uint32_t>(std::floor((1000 - half_m - 1) * 1000)));
  CHECK(spans[1].hi_mm == static_cast<std::uint32_t>(std::ceil((1000 + half_m + 1) * 1000)));
  CHECK_FALSE(spans[1].holds(800000));  // 200 m west of the centre
  CHECK(spans[1].holds(1000000));
  // "zigzag" enters at x = -sqrt(101^2 - 50^2) (212.2 m along) and ends
  // inside, on its last segment: both visits, joined.
  const double enter_m = 300 - std::sqrt(101.0 * 101.0 - 50.0 * 50.0);
  CHECK(spans[4].lo_mm == static_cast<std::uint32_t>(std::floor((enter_m - 1) * 1000)));
  CHECK(spans[4].hi_mm == UINT32_MAX);
  CHECK(spans[4].holds(600000));  // between the visits: a superset is allowed
  CHECK_FALSE(cover.every_lane_whole());
  // Whole: every lane from end to end; no discs: nothing.
  for (const net::PosedSpan& s : cover.mark(lanes, net::Coverage{}, 0)) {
    CHECK(s.lo_mm == 0);
    CHECK(s.hi_mm == UINT32_MAX);
  }
  CHECK(cover.every_lane_whole());
  // Discs that reach every lane end to end pose what a whole coverage does.
  cover.mark(lanes, net::Coverage{false, {{0, 0, 1500}}}, 0);
  CHECK(cover.every_lane_whole());
  CHECK(lanes_posed(cover.mark(lanes, net::Coverage{false, {}}, 0)) == std::vector<int>(5, 0));
  // Far from every lane: nothing.
  CHECK(lanes_posed(cover.mark(lanes, net::Coverage{false, {{5000, -5000, 10}}}, 0)) ==
        std::vector<int>(5, 0));
  // A disc around the far lane only (a new epoch re-indexes: the same answer).
  CHECK(lanes_posed(cover.mark(lanes, net::Coverage{false, {{925, 905, 6}}}, 1)) ==
        std::vector<int>{0, 0, 1, 0, 0});
}

TEST_CASE("every point of a lane within a disc lies in the lane's posed stretch") {
  // A lane of many bends and several discs: each millimetre sampled along it
  // that is within some disc (as the frame places it) is in the span.
  using core::LaneKind;
  std::vector<core::Vec2> bends;
  for (int k = 0; k <= 40; ++k) bends.push_back({k * 25.0, (k % 2 == 0) ? 0.0 : 30.0 + k});
  const core::LaneGraph lanes = lanes_of({{"bends", LaneKind::Sidewalk, bends, 1.4, {}}});
  const net::Coverage discs{false, {{300, 20, 45}, {310, 40, 12}, {777, 51, 30.5}}};
  net::LaneCoverage cover;
  const net::PosedSpan span = cover.mark(lanes, discs, 0)[0];
  REQUIRE(span.any());
  const double length_m = lanes.lane(0).length_m;
  std::size_t inside = 0;
  for (std::uint32_t s_mm = 0; s_mm <= static_cast<std::uint32_t>(length_m * 1000); s_mm += 97) {
    const core::Vec2 p = lanes.position(0, s_mm / 1000.0);
    for (const net::CoverageDisc& d : discs.discs) {
      const double dx = p.x_m - d.x_m, dy = p.y_m - d.y_m;
      if (dx * dx + dy * dy > d.radius_m * d.radius_m) continue;
      ++inside;
      INFO("s_mm " << s_mm);
      CHECK(span.holds(s_mm));
    }
  }
  CHECK(inside > 100);
  // Only the stretch from the first disc to the last, not the lane.
  CHECK(span.lo_mm > 200000);
  CHECK(span.hi_mm < static_cast<std::uint32_t>(length_m * 1000) - 100000);
}
