// CityMerger (server/gateway): district Deltas in, one city frame out. The
// Deltas are built here as a district's stream would carry them; the
// processes themselves are tests/integration/test_gateway.py.
#include "bustle/gateway/city_merger.hpp"

#include <catch2/catch.hpp>

#include "bustle/citygen/cities.hpp"

namespace {

using bustle::client::Delta;
using bustle::client::EnteredEntity;
using bustle::client::EntityId;
using bustle::gateway::CityMerger;

struct City {
  bustle::core::Scenario scenario = bustle::citygen::district_city(4, 2, 0, 0);
  bustle::core::LaneGraph lanes{scenario};
  std::uint32_t border = 0;  // a lane of d0 with a successor in d1
  std::uint32_t next = 0;    // that successor
  City() {
    const bustle::gateway::CityMap map = bustle::gateway::make_city_map(scenario, lanes);
    for (std::uint32_t l = 0; l < lanes.size(); ++l) {
      if (map.lane_owner[l] != 0 || map.lane_borders[l] == 0) continue;
      for (std::uint32_t s : lanes.lane(l).successors) {
        if (map.lane_owner[s] == 1) {
          border = l;
          next = s;
          return;
        }
      }
    }
    FAIL("the district city has no border lane from d0 into d1");
  }
  std::uint32_t length_mm(std::uint32_t lane) const {
    return bustle::proto::to_mm(lanes.lane(lane).length_m);
  }
};

Delta delta(std::uint64_t step, bool baseline = false) {
  Delta d;
  d.step = step;
  d.baseline = baseline;
  d.digest = 1000 + step;
  return d;
}

// A district's Delta in which `id` leaves its stream.
Delta leaving(std::uint64_t step, EntityId id) {
  Delta d = delta(step);
  d.left.push_back(id);
  return d;
}

EnteredEntity walker(EntityId id, std::uint32_t lane, std::uint32_t s_mm) {
  EnteredEntity e;
  e.id = id;
  e.lane = lane;
  e.s_mm = s_mm;
  e.speed_mmps = 1400;
  return e;
}

const bustle::net::PublishedEntity* find(const bustle::net::PublishedFrame& f,
                                         std::uint32_t index) {
  for (const auto& e : f.entities)
    if (e.id.index == index) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("a border crossing stays one entity, held at the border for the step in between") {
  City c;
  CityMerger m(c.scenario, c.lanes);
  const EntityId id{7, 3};
  Delta a = delta(10, true);
  a.entered.push_back(walker(id, c.border, c.length_mm(c.border) - 100));
  REQUIRE(m.apply(0, a).empty());
  REQUIRE(m.apply(1, delta(10, true)).empty());
  auto f10 = m.frame(10);
  REQUIRE(find(*f10, 7) != nullptr);
  CHECK(find(*f10, 7)->lane == c.border);

  REQUIRE(m.apply(0, leaving(11, id)).empty());
  REQUIRE(m.apply(1, delta(11)).empty());
  auto f11 = m.frame(11);
  REQUIRE(find(*f11, 7) != nullptr);  // in transit: in neither district, still in the city
  CHECK(find(*f11, 7)->lane == c.border);
  CHECK(find(*f11, 7)->s_mm == c.length_mm(c.border));  // dead reckoning stops at the border
  CHECK(m.in_transit() == 1);

  Delta arrived = delta(12);
  arrived.entered.push_back(walker(id, c.next, 300));
  REQUIRE(m.apply(0, delta(12)).empty());
  REQUIRE(m.apply(1, arrived).empty());
  auto f12 = m.frame(12);
  REQUIRE(find(*f12, 7) != nullptr);
  CHECK(find(*f12, 7)->lane == c.next);
  CHECK(find(*f12, 7)->s_mm == 300);
  CHECK(find(*f12, 7)->id.generation == 3);
  CHECK(m.in_transit() == 0);
  CHECK(m.counters().crossings == 1);
  CHECK(m.counters().duplicates == 0);
}

TEST_CASE("an entity that leaves at a border and is adopted by nobody is gone two steps later") {
  City c;
  CityMerger m(c.scenario, c.lanes);
  Delta a = delta(1, true);
  a.entered.push_back(walker({4, 1}, c.border, 100));
  REQUIRE(m.apply(0, a).empty());
  REQUIRE(m.apply(1, delta(1, true)).empty());
  REQUIRE(m.apply(0, leaving(2, {4, 1})).empty());
  CHECK(find(*m.frame(2), 4) != nullptr);
  CHECK(find(*m.frame(3), 4) != nullptr);  // a coalesced Delta of the receiver may come late
  CHECK(find(*m.frame(4), 4) == nullptr);
  CHECK(m.counters().transit_dropped == 1);
  CHECK(m.counters().crossings == 0);
}

TEST_CASE("an entity leaving from an inner lane is gone at once") {
  City c;
  CityMerger m(c.scenario, c.lanes);
  const bustle::gateway::CityMap& map = m.map();
  std::uint32_t inner = 0;
  while (map.lane_owner[inner] != 0 || map.lane_borders[inner] != 0) ++inner;
  Delta a = delta(1, true);
  a.entered.push_back(walker({4, 1}, inner, 100));
  REQUIRE(m.apply(0, a).empty());
  REQUIRE(m.apply(0, leaving(2, {4, 1})).empty());
  CHECK(m.frame(2)->entities.empty());
  CHECK(m.in_transit() == 0);
}

TEST_CASE("an id two districts hold at once is in the frame once, from the newer anchor") {
  City c;
  CityMerger m(c.scenario, c.lanes);
  Delta a = delta(5, true);
  a.entered.push_back(walker({9, 2}, c.border, 100));
  REQUIRE(m.apply(0, a).empty());
  Delta b = delta(6, true);  // the receiver is a step ahead (the sender's Deltas coalesced)
  b.entered.push_back(walker({9, 2}, c.next, 50));
  b.entered.push_back(walker({2, 1}, c.next, 10));
  REQUIRE(m.apply(1, b).empty());
  auto f = m.frame(6);
  REQUIRE(f->entities.size() == 2);
  CHECK(f->entities[0].id.index == 2);  // sorted by index
  CHECK(f->entities[1].id.index == 9);
  CHECK(f->entities[1].lane == c.next);
  CHECK(m.counters().duplicates == 1);
}

TEST_CASE("the city digest follows every district's digest; a problem in a Delta is named") {
  City c;
  CityMerger m(c.scenario, c.lanes);
  REQUIRE(m.apply(0, delta(1, true)).empty());
  REQUIRE(m.apply(1, delta(1, true)).empty());
  const std::uint64_t before = m.city_digest();
  CHECK(m.frame(1)->digest == before);
  Delta d = delta(2);
  d.digest = 77;
  REQUIRE(m.apply(1, d).empty());
  CHECK(m.city_digest() != before);
  CHECK(m.district(1).digest == 77);
  CHECK(m.district(1).streaming);
  m.lost(1);
  CHECK_FALSE(m.district(1).streaming);

  Delta bad = delta(3);
  bad.motion.push_back({123, false, 0, 5, 5});  // an index district 0 never sent
  CHECK(m.apply(0, bad).find("123") != std::string::npos);
  CHECK(m.counters().mirror_problems == 1);
}
