// write_scenario_json (scenario_writer.hpp) is the loader's inverse. For
// every scenario fixture under configs/ and tests/, the embedded default and
// the generated district city (tools/citygen, cities.hpp): the loader accepts
// the written text with no error, what it yields writes the same text again,
// and a World from either steps to the same digests. The every-field fixture
// sets every field the schema documents away from its default, and its
// written text must name each one, in the schema's order.
#include "bustle/scenario/scenario_writer.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bustle/citygen/cities.hpp"
#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"

using bustle::core::Scenario;
using bustle::scenario::load_scenario_file;
using bustle::scenario::load_scenario_text;
using bustle::scenario::LoadResult;
using bustle::scenario::write_scenario_json;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

constexpr std::uint64_t kSeed = 7;
constexpr int kSteps = 50;

const std::string kSourceDir = BUSTLE_SOURCE_DIR;

std::string first_error(const LoadResult& r) {
  return r.errors.empty() ? "" : r.errors[0].to_string();
}

std::vector<std::uint64_t> digests(const Scenario& s) {
  auto created = bustle::core::World::create(s, kSeed);
  REQUIRE(created.world);
  std::vector<std::uint64_t> out;
  for (int k = 0; k < kSteps; ++k) {
    created.world->step();
    out.push_back(created.world->digest());
  }
  return out;
}

// Writes `s`, loads the text back and checks the round trip.
void require_round_trip(const Scenario& s, const std::string& what) {
  INFO(what);
  const std::string text = write_scenario_json(s);
  const LoadResult back = load_scenario_text(text, what + " (written)");
  INFO(first_error(back));
  REQUIRE(back.ok());
  CHECK(write_scenario_json(*back.scenario) == text);
  CHECK(digests(*back.scenario) == digests(s));
}

// Every *.json under configs/ and tests/ whose root object has "lanes",
// sorted by path.
std::vector<std::string> scenario_fixtures() {
  std::vector<std::string> out;
  for (const char* dir : {"configs", "tests"}) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(kSourceDir + "/" + dir)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
      std::ifstream in(entry.path());
      const json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (doc.is_object() && doc.contains("lanes")) out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool is_fuzz_regression(const std::string& path) {
  return path.find("/tests/fuzz/regressions/") != std::string::npos;
}

// Each field the schema node documents is in `doc` (arrays: in element 0),
// object by object, and `doc` has its keys in the schema's order; what is
// missing or out of order goes to `problems`. Both are read with their keys
// in file order (ordered_json).
void collect_problems(const ordered_json& schema, const ordered_json& node_or_ref,
                      const ordered_json& doc, const std::string& path,
                      std::vector<std::string>& problems) {
  const ordered_json& node =
      node_or_ref.contains("$ref")
          ? schema.at(ordered_json::json_pointer(node_or_ref["$ref"].get<std::string>().substr(1)))
          : node_or_ref;
  if (node.contains("properties") && doc.is_object()) {
    std::vector<std::string> schema_order, written_order;
    for (const auto& [key, child] : node["properties"].items()) {
      if (key == "$schema") continue;  // where the schema file is, not the city
      const std::string at = path.empty() ? key : path + "." + key;
      if (!doc.contains(key)) {
        problems.push_back(at + ": missing");
        continue;
      }
      schema_order.push_back(key);
      collect_problems(schema, child, doc[key], at, problems);
    }
    for (const auto& [key, value] : doc.items()) written_order.push_back(key);
    if (written_order != schema_order)
      problems.push_back(path + ": keys not in the schema's order");
  }
  if (node.contains("items") && node["items"].is_object() && doc.is_array() && !doc.empty())
    collect_problems(schema, node["items"], doc[0], path + "[0]", problems);
}

}  // namespace

TEST_CASE("every scenario fixture round-trips through the writer") {
  const std::vector<std::string> fixtures = scenario_fixtures();
  int loaded = 0;
  for (const std::string& path : fixtures) {
    const LoadResult r = load_scenario_file(path);
    if (!r.ok() && is_fuzz_regression(path)) continue;  // kept because the loader refuses it
    INFO(path << ": " << first_error(r));
    REQUIRE(r.ok());
    require_round_trip(*r.scenario, path);
    ++loaded;
  }
  // configs/ (3), their fuzz corpus copies (3), the corridor in two districts
  // and the every-field city at least.
  CHECK(loaded >= 8);
}

TEST_CASE("the embedded default city round-trips through the writer") {
  const LoadResult r = bustle::scenario::load_embedded_default();
  REQUIRE(r.ok());
  require_round_trip(*r.scenario, "<embedded default>");
}

TEST_CASE("the generated district city round-trips through the writer") {
  const Scenario small = bustle::citygen::district_city(4, 2, 200, 30);
  REQUIRE(bustle::core::validate_scenario(small).empty());
  require_round_trip(small, "district city 4 x 4 in 2");
  require_round_trip(bustle::citygen::district_city(8, 4, 800, 120), "district city 8 x 8 in 4");
  // One district of it, as a district server runs it (its recording's scenario).
  Scenario one = bustle::citygen::district_city(4, 2, 200, 0);
  one.own_district = 1;
  require_round_trip(one, "district 1 of the district city 4 x 4 in 2");
  CHECK(write_scenario_json(one).find("\"own_district\": \"d1\"") != std::string::npos);
}

TEST_CASE("the writer names every field the schema documents, in the schema's order") {
  const LoadResult r =
      load_scenario_file(kSourceDir + "/tests/scenario/fixtures/every_field.city.json");
  INFO(first_error(r));
  REQUIRE(r.ok());
  std::ifstream schema_file(kSourceDir + "/schema/scenario.schema.json");
  const ordered_json schema = ordered_json::parse(schema_file);
  // own_district is not set in the file (a district world cannot run its
  // zones yet); set here so the text names it too.
  Scenario every = *r.scenario;
  every.own_district = 0;
  std::vector<std::string> problems;
  collect_problems(schema, schema, ordered_json::parse(write_scenario_json(every)), "", problems);
  CHECK(problems == std::vector<std::string>{});
}

TEST_CASE("the writer's text: fixed layout, shortest doubles, defaults left out") {
  Scenario s;
  s.id = "tiny";
  bustle::core::LaneSpec lane;
  lane.id = "a";
  lane.points = {{0.0, -0.0}, {0.1 + 0.2, 1e21}};
  lane.successors = {"a"};
  s.lanes.push_back(lane);
  s.pedestrians.count = 3;
  const std::string expected = R"({
  "id": "tiny",
  "step_us": 100000,
  "entity_capacity": 65536,
  "command_inbox_capacity": 1024,
  "pedestrians": {"count": 3},
  "lanes": [
    {
      "id": "a",
      "kind": "sidewalk",
      "points": [[0.0, -0.0], [0.30000000000000004, 1e+21]],
      "speed_mps_limit": 1.4,
      "successors": ["a"]
    }
  ]
}
)";
  CHECK(write_scenario_json(s) == expected);
}
