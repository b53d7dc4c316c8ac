// The interest coverage: when a frame's coverage holds a client's need, the
// union the registry files, and which lanes a coverage poses.
#include "bustle/net/coverage.hpp"

#include <catch2/catch.hpp>

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

TEST_CASE("a coverage poses every lane that reaches into one of its discs") {
  using core::LaneKind;
  const core::LaneGraph lanes = lanes_of({
      {"near", LaneKind::Sidewalk, {{0, 0}, {40, 0}}, 1.4, {}},
      {"through", LaneKind::Sidewalk, {{-1000, 30}, {1000, 30}}, 1.4, {}},  // passes the disc
      {"far", LaneKind::Sidewalk, {{900, 900}, {950, 900}}, 1.4, {}},
      {"edge", LaneKind::Road, {{0, 120}, {0, 500}}, 13.9, {}},  // starts 20 m past the disc
  });
  net::LaneCoverage cover;
  const net::Coverage disc{false, {{0, 0, 100}}};
  const std::vector<std::uint8_t> marked = cover.mark(lanes, disc, 0);
  REQUIRE(marked.size() == 4);
  CHECK(marked[0] == 1);
  CHECK(marked[1] == 1);
  CHECK(marked[2] == 0);
  // A superset is allowed (the grid's cells are 64 m), never fewer.
  CHECK(cover.mark(lanes, net::Coverage{}, 0) == std::vector<std::uint8_t>(4, 1));
  CHECK(cover.mark(lanes, net::Coverage{false, {}}, 0) == std::vector<std::uint8_t>(4, 0));
  // Far from every lane: nothing.
  CHECK(cover.mark(lanes, net::Coverage{false, {{5000, -5000, 10}}}, 0) ==
        std::vector<std::uint8_t>(4, 0));
  // A disc around the far lane only.
  CHECK(cover.mark(lanes, net::Coverage{false, {{925, 905, 6}}}, 1) ==
        std::vector<std::uint8_t>{0, 0, 1, 0});
}
