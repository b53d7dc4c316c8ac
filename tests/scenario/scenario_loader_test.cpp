// The scenario loader: defaults, the shipped configs and the embedded default
// city, one clear error per kind of bad file (all of them reported), field
// groups, the world extent and the file size limit.
#include "bustle/scenario/scenario_loader.hpp"

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "loader_test_support.hpp"

using bustle::scenario::load_scenario_file;
using bustle::scenario::load_scenario_text;
using bustle::scenario::LoadResult;
using bustle::scenario::test::require_single_error;

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

// The minimal city with extra top-level fields and lane fields spliced in.
std::string city(const std::string& top_fields, const std::string& lane_fields = "") {
  return R"({"id":"t","lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5,0]],"speed_mps_limit":1.4)" +
         lane_fields + "}]" + top_fields + "}";
}

std::string with_lane(const std::string& lane_fields) {
  return city("", lane_fields);
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
  const std::string on_disk =
      read_file(std::string(BUSTLE_SOURCE_DIR) + "/configs/default.city.json");
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
    const LoadResult r =
        load_scenario_text("{\n  \"id\": \"t\",\n  \"lanes\": [,]\n}", "test.json");
    require_single_error(r, "", "invalid JSON at line 3");
  }
  SECTION("a number too large for a double is a syntax error naming its place") {
    // Found by fuzzing (tests/fuzz/fuzz_scenario): nlohmann throws out_of_range
    // (406) for it, which escaped the loader instead of becoming an error.
    const LoadResult r =
        load_scenario_text("{\n  \"id\": \"t\",\n  \"step_us\": 1e999\n}", "test.json");
    require_single_error(r, "step_us",
                         "invalid JSON at line 3, column 14: number overflow parsing '1e999'");
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
    const std::string j =
        R"({"id":"t","step_us":-5,"lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5,0]],"speed_mps_limit":1.4}]})";
    require_single_error(load_scenario_text(j, "test.json"), "step_us",
                         "non-negative integer, got -5");
  }
  SECTION("wrong type") {
    const std::string j =
        R"({"id":7,"lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5,0]],"speed_mps_limit":1.4}]})";
    require_single_error(load_scenario_text(j, "test.json"), "id",
                         "must be a string, got an integer");
  }
  SECTION("unknown lane kind") {
    const std::string j =
        R"({"id":"t","lanes":[{"id":"a","kind":"bikeway","points":[[0,0],[5,0]],"speed_mps_limit":1.4}]})";
    require_single_error(load_scenario_text(j, "test.json"), "lanes[0].kind",
                         "unknown lane kind 'bikeway'");
  }
  SECTION("malformed point") {
    const std::string j =
        R"({"id":"t","lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5]],"speed_mps_limit":1.4}]})";
    require_single_error(load_scenario_text(j, "test.json"), "lanes[0].points[1]", "[x, y] pair");
  }
  SECTION("unknown successor (semantic)") {
    require_single_error(load_scenario_text(with_lane(R"(,"successors":["a","zz"])"), "test.json"),
                         "lanes[0].successors[1]", "unknown lane id 'zz'");
  }
  SECTION("unknown lane field") {
    require_single_error(load_scenario_text(with_lane(R"(,"speed":3)"), "test.json"),
                         "lanes[0].speed", "unknown field");
  }
  SECTION("speed out of range (semantic)") {
    const std::string j =
        R"({"id":"t","lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5,0]],"speed_mps_limit":0}]})";
    require_single_error(load_scenario_text(j, "test.json"), "lanes[0].speed_mps_limit",
                         "(0, 100]");
  }
  SECTION("value too large for its type") {
    const std::string j =
        R"({"id":"t","entity_capacity":99999999999,"lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5,0]],"speed_mps_limit":1}]})";
    require_single_error(load_scenario_text(j, "test.json"), "entity_capacity", "too large");
  }
  SECTION("observer_follow: an unknown mode, and first_vehicle without a garage") {
    require_single_error(load_scenario_text(city(R"(,"observer_follow":"car")"), "test.json"),
                         "observer_follow", "must be \"none\" or \"first_vehicle\", got 'car'");
    require_single_error(
        load_scenario_text(city(R"(,"observer_follow":"first_vehicle")"), "test.json"),
        "observer_follow", "needs at least one garage");
  }
}

TEST_CASE("several errors in one file are all reported") {
  const std::string j =
      R"({"id":"","bogus":1,"lanes":[{"id":"a","kind":"x","points":[],"speed_mps_limit":"fast"}]})";
  const LoadResult r = load_scenario_text(j, "test.json");
  CHECK(r.errors.size() >= 3);
  for (const auto& e : r.errors) CHECK(e.to_string().rfind("test.json: ", 0) == 0);
}

TEST_CASE("importance, spawn, despawn and ledger fields load") {
  SECTION("omitted: the struct defaults") {
    const LoadResult r = load_scenario_text(kMinimal, "test.json");
    REQUIRE(r.ok());
    const bustle::core::Scenario d;
    const bustle::core::Scenario& s = *r.scenario;
    CHECK(s.lanes[0].elevation_m == 0.0);
    CHECK(s.pedestrians.fragment_length_m == d.pedestrians.fragment_length_m);
    CHECK(s.pedestrians.dots_every_steps == d.pedestrians.dots_every_steps);
    CHECK(s.spawn.per_step_cap == d.spawn.per_step_cap);
    CHECK(s.spawn.queue_depth == d.spawn.queue_depth);
    CHECK(s.spawn.timeout_ms == d.spawn.timeout_ms);
    CHECK(s.despawn.fade_ms == d.despawn.fade_ms);
    CHECK(s.despawn.out_of_range_m == d.despawn.out_of_range_m);
    for (std::size_t k = 0; k < bustle::core::kPriorityClassCount; ++k) {
      CHECK(s.tiers.importance.class_weight[k] == d.tiers.importance.class_weight[k]);
    }
    CHECK(s.tiers.importance.behind_factor == d.tiers.importance.behind_factor);
    CHECK(s.tiers.importance.areas.empty());
  }
  SECTION("given: every value arrives") {
    const std::string j = city(
        R"(,"pedestrians":{"count":3,"fragment_length_m":12.5,"dots_every_steps":20},
           "spawn":{"per_step_cap":16,"queue_depth":2048,"timeout_ms":5000},
           "despawn":{"fade_ms":750,"out_of_range_m":400},
           "tiers":{"importance":{"class_weight":{"story":8,"quest":3,"community":1.5,"background":0.5},
                                  "pedestrian_weight":1.2,"vehicle_weight":0.8,"height_weight":3,
                                  "behind_factor":2.5,
                                  "areas":[{"id":"plaza","center":[10,-4.5],"radius_m":30,"weight":3},
                                           {"id":"dock","center":[0,0]}]}})",
        R"(,"elevation_m":-6.5)");
    const LoadResult r = load_scenario_text(j, "test.json");
    INFO((r.errors.empty() ? "" : r.errors[0].to_string()));
    REQUIRE(r.ok());
    const bustle::core::Scenario& s = *r.scenario;
    CHECK(s.lanes[0].elevation_m == -6.5);
    CHECK(s.pedestrians.fragment_length_m == 12.5);
    CHECK(s.pedestrians.dots_every_steps == 20);
    CHECK(s.spawn.per_step_cap == 16);
    CHECK(s.spawn.queue_depth == 2048);
    CHECK(s.spawn.timeout_ms == 5000);
    CHECK(s.despawn.fade_ms == 750);
    CHECK(s.despawn.out_of_range_m == 400.0);
    const bustle::core::ImportanceSpec& imp = s.tiers.importance;
    CHECK(imp.class_weight[0] == 8.0);
    CHECK(imp.class_weight[1] == 3.0);
    CHECK(imp.class_weight[2] == 1.5);
    CHECK(imp.class_weight[3] == 0.5);
    CHECK(imp.pedestrian_weight == 1.2);
    CHECK(imp.vehicle_weight == 0.8);
    CHECK(imp.height_weight == 3.0);
    CHECK(imp.behind_factor == 2.5);
    REQUIRE(imp.areas.size() == 2);
    CHECK(imp.areas[0].id == "plaza");
    CHECK(imp.areas[0].center == bustle::core::Vec2{10.0, -4.5});
    CHECK(imp.areas[0].radius_m == 30.0);
    CHECK(imp.areas[0].weight == 3.0);
    CHECK(imp.areas[1].id == "dock");
    CHECK(imp.areas[1].radius_m == bustle::core::AreaOfInterest{}.radius_m);
    CHECK(imp.areas[1].weight == bustle::core::AreaOfInterest{}.weight);
  }
  SECTION("class weights are each optional") {
    const LoadResult r = load_scenario_text(
        city(R"(,"tiers":{"importance":{"class_weight":{"quest":1.5}}})"), "test.json");
    REQUIRE(r.ok());
    CHECK(r.scenario->tiers.importance.class_weight[0] == 4.0);
    CHECK(r.scenario->tiers.importance.class_weight[1] == 1.5);
    CHECK(r.scenario->tiers.importance.class_weight[2] == 1.25);
  }
}

TEST_CASE("bad importance, spawn, despawn and ledger fields name their path") {
  auto one = [](const std::string& top, const std::string& path, const std::string& fragment,
                const std::string& lane = "") {
    INFO(top << lane);
    require_single_error(load_scenario_text(city(top, lane), "test.json"), path, fragment);
  };
  SECTION("lane elevation") {
    one("", "lanes[0].elevation_m", "must be a number", R"(,"elevation_m":"high")");
    one("", "lanes[0].elevation_m", "10000", R"(,"elevation_m":20000)");
  }
  SECTION("pedestrian ledger and dots") {
    one(R"(,"pedestrians":{"fragment_length_m":0.5})", "pedestrians.fragment_length_m",
        "[1, 10000]");
    one(R"(,"pedestrians":{"dots_every_steps":0})", "pedestrians.dots_every_steps", "[1, 600]");
    one(R"(,"pedestrians":{"dots_every_steps":2.5})", "pedestrians.dots_every_steps",
        "non-negative integer");
    one(R"(,"pedestrians":{"fragment":5})", "pedestrians.fragment", "unknown field");
  }
  SECTION("spawn") {
    one(R"(,"spawn":{"per_step_cap":5000})", "spawn.per_step_cap", "[1, 4096]");
    one(R"(,"spawn":{"queue_depth":0})", "spawn.queue_depth", "must be in [1, ");
    one(R"(,"spawn":{"timeout_ms":50})", "spawn.timeout_ms", "at least one step");
    one(R"(,"spawn":{"timeout_ms":-1})", "spawn.timeout_ms", "non-negative integer, got -1");
    one(R"(,"spawn":{"cap":1})", "spawn.cap", "unknown field");
    one(R"(,"spawn":8)", "spawn", "must be an object");
  }
  SECTION("prevention") {
    one(R"(,"prevention":{"ring_min_m":50,"ring_max_m":40})", "prevention.ring_max_m",
        "above ring_min_m");
    one(R"(,"prevention":{"units_per_level":[1,-2]})", "prevention.units_per_level[1]",
        "non-negative 32-bit integer");
    one(R"(,"prevention":{"units_per_level":[40]})", "prevention.units_per_level[0]",
        "at most prevention.max_units");
    one(R"(,"prevention":{"corpse_keep_m":50,"corpse_force_m":10})", "prevention.corpse_force_m",
        "not below corpse_keep_m");
    one(R"(,"prevention":{"cleanup_every_steps":0})", "prevention.cleanup_every_steps", "[1, 600]");
    one(R"(,"prevention":{"levels":2})", "prevention.levels", "unknown field");
  }
  SECTION("despawn") {
    one(R"(,"despawn":{"fade_ms":60001})", "despawn.fade_ms", "at most 60000");
    one(R"(,"despawn":{"out_of_range_m":-1})", "despawn.out_of_range_m", "non-negative");
    one(R"(,"despawn":{"out_of_range_m":null})", "despawn.out_of_range_m",
        "must be a number, got null");
    one(R"(,"despawn":{"fade":1})", "despawn.fade", "unknown field");
  }
  SECTION("importance weights") {
    one(R"(,"tiers":{"importance":{"class_weight":{"story":0}}})",
        "tiers.importance.class_weight.story", "[0.01, 100]");
    one(R"(,"tiers":{"importance":{"class_weight":{"quest":5}}})",
        "tiers.importance.class_weight.quest", "story > quest > community > background");
    one(R"(,"tiers":{"importance":{"class_weight":{"villain":5}}})",
        "tiers.importance.class_weight.villain", "unknown field");
    one(R"(,"tiers":{"importance":{"class_weight":[4,2,1,1]}})", "tiers.importance.class_weight",
        "must be an object");
    one(R"(,"tiers":{"importance":{"pedestrian_weight":0}})", "tiers.importance.pedestrian_weight",
        "[0.01, 100]");
    one(R"(,"tiers":{"importance":{"vehicle_weight":101}})", "tiers.importance.vehicle_weight",
        "[0.01, 100]");
    one(R"(,"tiers":{"importance":{"height_weight":-1}})", "tiers.importance.height_weight",
        "[0, 1000]");
    one(R"(,"tiers":{"importance":{"behind_factor":0.5}})", "tiers.importance.behind_factor",
        "[1, 100]");
    one(R"(,"tiers":{"importance":{"sight":1}})", "tiers.importance.sight", "unknown field");
  }
  SECTION("areas of interest") {
    const std::string ok = R"({"id":"p","center":[0,0]})";
    one(R"(,"tiers":{"importance":{"areas":[{"center":[0,0]}]}})", "tiers.importance.areas[0].id",
        "is required");
    one(R"(,"tiers":{"importance":{"areas":[{"id":"p"}]}})", "tiers.importance.areas[0].center",
        "is required");
    one(R"(,"tiers":{"importance":{"areas":[{"id":"p","center":[1]}]}})",
        "tiers.importance.areas[0].center", "[x, y] pair");
    one(R"(,"tiers":{"importance":{"areas":[)" + ok + "," + ok + "]}}",
        "tiers.importance.areas[1].id", "duplicate area id 'p'");
    one(R"(,"tiers":{"importance":{"areas":[)" + ok +
            R"(,{"id":"q","center":[0,0],"radius_m":0}]}})",
        "tiers.importance.areas[1].radius_m", "positive");
    one(R"(,"tiers":{"importance":{"areas":[{"id":"p","center":[0,0],"weight":0.5}]}})",
        "tiers.importance.areas[0].weight", "[1, 100]");
    one(R"(,"tiers":{"importance":{"areas":[{"id":"p","center":[0,0],"size":3}]}})",
        "tiers.importance.areas[0].size", "unknown field");
  }
}

TEST_CASE(
    "a number too large for a double names the file, position and field instead of throwing") {
  // The number sits on line 2; nlohmann reports it as out_of_range.406, which
  // used to escape the loader and end the server naming neither file nor field.
  const std::string j =
      "{\"id\":\"t\",\n "
      "\"lanes\":[{\"id\":\"a\",\"kind\":\"sidewalk\",\"points\":[[0,0],[1e999,0]],"
      "\"speed_mps_limit\":1.4}]}";
  LoadResult r;
  REQUIRE_NOTHROW(r = load_scenario_text(j, "test.json"));
  require_single_error(r, "lanes[0].points[1][0]", "invalid JSON at line 2, column 56");
  CHECK(r.errors[0].message.find("1e999") != std::string::npos);
  SECTION("also at the root and in objects") {
    require_single_error(load_scenario_text("-1e999", "test.json"), "", "number overflow");
    require_single_error(
        load_scenario_text(city(R"(,"despawn":{"out_of_range_m":2e400})"), "test.json"),
        "despawn.out_of_range_m", "number overflow");
  }
}

TEST_CASE("lane points must lie within the world extent the wire can carry") {
  // 1.7e308 is a finite double, so it passed the finite check, gave an
  // infinite lane length and positions the wire cannot carry.
  const std::string far_x =
      R"({"id":"t","lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[1.7e308,0]],"speed_mps_limit":1.4}]})";
  const LoadResult far = load_scenario_text(far_x, "test.json");
  REQUIRE(far.errors.size() == 2);  // the point, and the lane's length
  CHECK(far.errors[0].path == "lanes[0].points[1].x");
  CHECK(far.errors[0].message.find("outside the world extent [-100000, 100000] m") !=
        std::string::npos);
  CHECK(far.errors[1].message.find("at most 100000 m") != std::string::npos);
  const std::string far_y =
      R"({"id":"t","lanes":[{"id":"a","kind":"sidewalk","points":[[0,-1.7e308],[5,0]],"speed_mps_limit":1.4}]})";
  const LoadResult far_south = load_scenario_text(far_y, "test.json");
  REQUIRE_FALSE(far_south.errors.empty());
  CHECK(far_south.errors[0].path == "lanes[0].points[0].y");
  CHECK(far_south.errors[0].message.find("is -1.7e+308 m") != std::string::npos);
  const std::string at_limit =
      R"({"id":"t","lanes":[{"id":"a","kind":"sidewalk","points":[[-1e5,-1e5],[-1e5,-99950]],"speed_mps_limit":1.4}]})";
  CHECK(load_scenario_text(at_limit, "test.json").ok());
  require_single_error(load_scenario_text(city(R"(,"observers":[[0,0],[2e5,0]])"), "test.json"),
                       "observers[1].x", "world extent");
  require_single_error(
      load_scenario_text(
          city(R"(,"tiers":{"importance":{"areas":[{"id":"p","center":[0,-3e5]}]}})"), "test.json"),
      "tiers.importance.areas[0].center.y", "world extent");
}

TEST_CASE("scenario files are read up to a size limit") {
  const std::string dir = std::string(BUSTLE_BINARY_DIR);
  SECTION("/dev/zero stops at the limit and names the file and the limit") {
    const LoadResult r = load_scenario_file("/dev/zero");
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].source == "/dev/zero");
    CHECK(r.errors[0].message.find("larger than the limit of 16777216 bytes") != std::string::npos);
  }
  SECTION("one byte over the limit is refused, the limit itself loads") {
    // A valid city padded with spaces to exactly the limit, then one more.
    const std::string path = dir + "/scenario_size_limit_test.json";
    std::string text = kMinimal;
    text.resize(bustle::scenario::kScenarioFileBytesMax, ' ');
    { std::ofstream(path, std::ios::binary) << text; }
    CHECK(load_scenario_file(path).ok());
    { std::ofstream(path, std::ios::binary) << text << ' '; }
    const LoadResult r = load_scenario_file(path);
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].source == path);
    CHECK(r.errors[0].message.find("16777216") != std::string::npos);
    std::remove(path.c_str());
  }
}

TEST_CASE(
    "a garage's vehicle_id_format loads, defaults to today's ids, and a bad one names its path") {
  const auto garage_city = [](const std::string& garage_fields) {
    return R"({"id":"t","lanes":[{"id":"r","kind":"road","points":[[0,0],[50,0]],"speed_mps_limit":10,"successors":["r"]}],)"
           R"("garages":[{"id":"g","lane":"r","route":["r"],"prototypes":["sedan"])" +
           garage_fields + "}]}";
  };
  const LoadResult plain = load_scenario_text(garage_city(""), "test.json");
  INFO((plain.errors.empty() ? std::string() : plain.errors[0].to_string()));
  REQUIRE(plain.ok());
  CHECK(plain.scenario->garages[0].vehicle_id_format == "vehicle.{garage}.{ordinal}");
  const LoadResult seed = load_scenario_text(
      garage_city(R"(,"vehicle_id_format":"vehicle.garage.{scenario}.request.{ordinal}")"),
      "test.json");
  REQUIRE(seed.ok());
  CHECK(bustle::core::format_vehicle_id(seed.scenario->garages[0].vehicle_id_format, "g", "t", 3) ==
        "vehicle.garage.t.request.000003");
  require_single_error(
      load_scenario_text(garage_city(R"(,"vehicle_id_format":"car.{garage}")"), "test.json"),
      "garages[0].vehicle_id_format", "must contain {ordinal}");
}

TEST_CASE(
    "a garage's mouth_capacity loads, defaults to 0 (no mouth), and a bad one names its path") {
  const auto garage_city = [](const std::string& garage_fields) {
    return R"({"id":"t","lanes":[{"id":"r","kind":"road","points":[[0,0],[50,0]],"speed_mps_limit":10,"successors":["r"]}],)"
           R"("garages":[{"id":"g","lane":"r","route":["r"],"prototypes":["sedan"],"capacity":4)" +
           garage_fields + "}]}";
  };
  const LoadResult plain = load_scenario_text(garage_city(""), "test.json");
  INFO((plain.errors.empty() ? std::string() : plain.errors[0].to_string()));
  REQUIRE(plain.ok());
  CHECK(plain.scenario->garages[0].mouth_capacity == 0);
  const LoadResult four = load_scenario_text(garage_city(R"(,"mouth_capacity":4)"), "test.json");
  REQUIRE(four.ok());
  CHECK(four.scenario->garages[0].mouth_capacity == 4);
  require_single_error(load_scenario_text(garage_city(R"(,"mouth_capacity":5)"), "test.json"),
                       "garages[0].mouth_capacity", "must be at most capacity (4)");
  require_single_error(load_scenario_text(garage_city(R"(,"mouth_capacity":-1)"), "test.json"),
                       "garages[0].mouth_capacity", "must be a non-negative integer");
}
