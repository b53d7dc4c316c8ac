// The district map of a city split across servers: the corridor cut in two
// (tests/scenario/fixtures/corridor.districts.json) loads, and each rule of
// core::validate_districts refuses a broken map with the path and the
// district it names. The map is configuration only: the same city with and
// without it steps to the same digests.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "loader_test_support.hpp"

using bustle::scenario::load_scenario_text;
using bustle::scenario::LoadResult;
using nlohmann::json;

namespace {

using bustle::scenario::test::read_json;
using bustle::scenario::test::require_single_error;

json corridor_in_two() {
  return read_json(std::string(BUSTLE_SOURCE_DIR) +
                   "/tests/scenario/fixtures/corridor.districts.json");
}

LoadResult load(const json& doc) {
  return load_scenario_text(doc.dump(), "test.json");
}

// Exactly one error, at `path`, containing `fragment`.
void require_error(const json& doc, const std::string& path, const std::string& fragment) {
  require_single_error(load(doc), path, fragment);
}

}  // namespace

TEST_CASE("the corridor cut in two districts loads with its map") {
  const LoadResult r = load(corridor_in_two());
  INFO((r.errors.empty() ? "" : r.errors[0].to_string()));
  REQUIRE(r.ok());
  const auto& d = r.scenario->districts;
  REQUIRE(d.size() == 2);
  CHECK(d[0].id == "west");
  CHECK(d[0].lanes == std::vector<std::string>{"lane0", "lane1", "sw.out", "x.in"});
  CHECK(d[0].garages == std::vector<std::string>{"g0"});
  CHECK(d[0].signals == std::vector<std::string>{"s1"});
  CHECK(d[0].border_lanes == std::vector<std::string>{"lane1", "x.in"});
  CHECK(d[1].border_lanes == std::vector<std::string>{"lane3", "x.out"});
}

TEST_CASE("a city without a district map has none") {
  json doc = corridor_in_two();
  doc.erase("districts");
  const LoadResult r = load(doc);
  REQUIRE(r.ok());
  CHECK(r.scenario->districts.empty());
}

TEST_CASE("a district map with a hole or an overlap is refused, naming both") {
  SECTION("a lane no district owns") {
    json doc = corridor_in_two();
    // x.out left out: no district owns it, and east's border list still
    // names it.
    doc["districts"][1]["lanes"] = {"lane2", "lane3", "sw.in"};
    const LoadResult r = load(doc);
    REQUIRE(r.errors.size() == 2);
    CHECK(r.errors[0].path == "lanes[7]");
    CHECK(r.errors[0].message == "lane 'x.out' belongs to no district");
    CHECK(r.errors[1].path == "districts[1].border_lanes[1]");
    CHECK(r.errors[1].message == "lane 'x.out' is not one of this district's lanes");
  }
  SECTION("a lane two districts own") {
    json doc = corridor_in_two();
    doc["districts"][1]["lanes"].push_back("sw.out");
    const LoadResult r = load(doc);
    REQUIRE_FALSE(r.errors.empty());
    CHECK(r.errors[0].path == "districts[1].lanes[4]");
    CHECK(r.errors[0].message == "lane 'sw.out' is already in district 'west' (districts[0])");
  }
  SECTION("a garage and a signal no district owns") {
    json doc = corridor_in_two();
    doc["districts"][0].erase("garages");
    doc["districts"][0].erase("signals");
    const LoadResult r = load(doc);
    REQUIRE(r.errors.size() == 2);
    CHECK(r.errors[0].path == "garages[0]");
    CHECK(r.errors[0].message == "garage 'g0' belongs to no district");
    CHECK(r.errors[1].path == "signals[0]");
    CHECK(r.errors[1].message == "signal 's1' belongs to no district");
  }
}

TEST_CASE("each district rule names the field at fault") {
  json doc = corridor_in_two();
  SECTION("unknown ids") {
    doc["districts"][0]["zones"] = {"plaza"};
    require_error(doc, "districts[0].zones[0]", "unknown zone id 'plaza'");
  }
  SECTION("a duplicate district id") {
    doc["districts"][1]["id"] = "west";
    require_error(doc, "districts[1].id",
                  "duplicate district id 'west' (first used by districts[0])");
  }
  SECTION("a garage whose entrance lane is in another district") {
    doc["districts"][0]["garages"] = json::array();
    doc["districts"][1]["garages"] = {"g0"};
    require_error(doc, "garages[0].lane",
                  "lane 'lane0' is in district 'west' (districts[0]), not in the garage's district "
                  "'east' (districts[1])");
  }
  SECTION("a signal whose lane is in another district") {
    doc["districts"][0]["signals"] = json::array();
    doc["districts"][1]["signals"] = {"s1"};
    require_error(doc, "signals[0].lane", "not in the signal's district 'east'");
  }
  SECTION("a border lane left out") {
    doc["districts"][0]["border_lanes"] = {"x.in"};
    require_error(
        doc, "districts[0].border_lanes",
        "must list lane 'lane1': it leads to lane 'lane2' of district 'east' (districts[1])");
  }
  SECTION("a border lane that leads into no other district") {
    doc["districts"][0]["border_lanes"].push_back("lane0");
    require_error(doc, "districts[0].border_lanes[2]", "lane 'lane0' leads into no other district");
  }
  SECTION("a border lane listed twice") {
    doc["districts"][0]["border_lanes"].push_back("lane1");
    require_error(doc, "districts[0].border_lanes[2]", "lane 'lane1' is listed twice");
  }
  SECTION("structure: an unknown field and a district without an id") {
    doc["districts"][0]["owner"] = "me";
    doc["districts"][1].erase("id");
    const LoadResult r = load(doc);
    REQUIRE(r.errors.size() == 2);
    CHECK(r.errors[0].path == "districts[0].owner");
    CHECK(r.errors[0].message.find("unknown field") != std::string::npos);
    CHECK(r.errors[1].path == "districts[1].id");
    CHECK(r.errors[1].message == "is required");
  }
}

TEST_CASE("the district map changes no digest") {
  json without = corridor_in_two();
  without.erase("districts");
  const LoadResult a = load(corridor_in_two());
  const LoadResult b = load(without);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  auto wa = std::move(bustle::core::World::create(*a.scenario, 7).world);
  auto wb = std::move(bustle::core::World::create(*b.scenario, 7).world);
  REQUIRE(wa);
  REQUIRE(wb);
  for (int k = 0; k < 300; ++k) {
    wa->step();
    wb->step();
    REQUIRE(wa->digest() == wb->digest());
  }
  CHECK(wa->vehicles().store().size() > 0);  // the corridor's garage dispatched: state moved
}
