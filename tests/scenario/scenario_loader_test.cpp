#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "bustle/scenario/scenario_loader.hpp"

using bustle::scenario::load_scenario_file;
using bustle::scenario::load_scenario_text;
using bustle::scenario::LoadResult;

namespace {

const char* kMinimal = R"({
  "id": "t",
  "lanes": [ { "id": "a", "kind": "sidewalk", "points": [[0,0],[5,0]], "speed_mps_limit": 1.4, "successors": ["a"] } ]
})";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Exactly one error, and it names this path and contains this fragment.
void require_single_error(const LoadResult& r, const std::string& path, const std::string& fragment) {
  INFO("errors: " << r.errors.size() << (r.errors.empty() ? "" : " first: " + r.errors[0].to_string()));
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].source == "test.json");
  CHECK(r.errors[0].path == path);
  CHECK(r.errors[0].message.find(fragment) != std::string::npos);
  CHECK_FALSE(r.scenario.has_value());
}

std::string with_lane(const std::string& lane_fields) {
  return R"({"id":"t","lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5,0]],"speed_mps_limit":1.4)" +
         lane_fields + "}]}";
}

}  // namespace

TEST_CASE("a minimal scenario loads with defaults") {
  const LoadResult r = load_scenario_text(kMinimal, "test.json");
  REQUIRE(r.ok());
  CHECK(r.scenario->id == "t");
  CHECK(r.scenario->step_us == 100'000);
  CHECK(r.scenario->lanes.size() == 1);
  CHECK(r.scenario->lanes[0].successors == std::vector<std::string>{"a"});
}

TEST_CASE("the embedded default city equals configs/default.city.json and is valid") {
  const std::string on_disk = read_file(std::string(BUSTLE_SOURCE_DIR) + "/configs/default.city.json");
  REQUIRE_FALSE(on_disk.empty());
  CHECK(std::string(bustle::scenario::embedded_default_scenario_text()) == on_disk);
  const LoadResult r = bustle::scenario::load_embedded_default();
  REQUIRE(r.ok());
  CHECK(r.scenario->pedestrians.count > 0);
}

TEST_CASE("every shipped config loads") {
  for (const char* name : {"default.city.json"}) {
    const LoadResult r = load_scenario_file(std::string(BUSTLE_SOURCE_DIR) + "/configs/" + name);
    INFO(name << ": " << (r.errors.empty() ? "" : r.errors[0].to_string()));
    CHECK(r.ok());
  }
}

TEST_CASE("each kind of bad file gives its own clear error") {
  SECTION("missing file names the file") {
    const LoadResult r = load_scenario_file("/nonexistent/dir/city.json");
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].source == "/nonexistent/dir/city.json");
    CHECK(r.errors[0].message.find("cannot open") != std::string::npos);
  }
  SECTION("syntax error names line and column") {
    const LoadResult r = load_scenario_text("{\n  \"id\": \"t\",\n  \"lanes\": [,]\n}", "test.json");
    require_single_error(r, "", "invalid JSON at line 3");
  }
  SECTION("root is not an object") {
    require_single_error(load_scenario_text("[1,2]", "test.json"), "(root)", "must be an object");
  }
  SECTION("unknown top-level field") {
    require_single_error(load_scenario_text(R"({"id":"t","lanes":[],"stepus":5})", "test.json"),
                         "stepus", "unknown field");
  }
  SECTION("missing required field") {
    require_single_error(load_scenario_text(R"({"id":"t"})", "test.json"), "lanes", "is required");
  }
  SECTION("negative integer") {
    const std::string j = R"({"id":"t","step_us":-5,"lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5,0]],"speed_mps_limit":1.4}]})";
    require_single_error(load_scenario_text(j, "test.json"), "step_us", "non-negative integer, got -5");
  }
  SECTION("wrong type") {
    const std::string j = R"({"id":7,"lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5,0]],"speed_mps_limit":1.4}]})";
    require_single_error(load_scenario_text(j, "test.json"), "id", "must be a string, got an integer");
  }
  SECTION("unknown lane kind") {
    const std::string j = R"({"id":"t","lanes":[{"id":"a","kind":"bikeway","points":[[0,0],[5,0]],"speed_mps_limit":1.4}]})";
    require_single_error(load_scenario_text(j, "test.json"), "lanes[0].kind", "unknown lane kind 'bikeway'");
  }
  SECTION("malformed point") {
    const std::string j = R"({"id":"t","lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5]],"speed_mps_limit":1.4}]})";
    require_single_error(load_scenario_text(j, "test.json"), "lanes[0].points[1]", "[x, y] pair");
  }
  SECTION("unknown successor (semantic)") {
    require_single_error(load_scenario_text(with_lane(R"(,"successors":["a","zz"])"), "test.json"),
                         "lanes[0].successors[1]", "unknown lane id 'zz'");
  }
  SECTION("unknown lane field") {
    require_single_error(load_scenario_text(with_lane(R"(,"speed":3)"), "test.json"), "lanes[0].speed",
                         "unknown field");
  }
  SECTION("speed out of range (semantic)") {
    const std::string j = R"({"id":"t","lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5,0]],"speed_mps_limit":0}]})";
    require_single_error(load_scenario_text(j, "test.json"), "lanes[0].speed_mps_limit", "(0, 100]");
  }
  SECTION("value too large for its type") {
    const std::string j = R"({"id":"t","entity_capacity":99999999999,"lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5,0]],"speed_mps_limit":1}]})";
    require_single_error(load_scenario_text(j, "test.json"), "entity_capacity", "too large");
  }
}

TEST_CASE("several errors in one file are all reported") {
  const std::string j = R"({"id":"","bogus":1,"lanes":[{"id":"a","kind":"x","points":[],"speed_mps_limit":"fast"}]})";
  const LoadResult r = load_scenario_text(j, "test.json");
  CHECK(r.errors.size() >= 3);
  for (const auto& e : r.errors) CHECK(e.to_string().rfind("test.json: ", 0) == 0);
}
