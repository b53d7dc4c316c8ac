// scenario_diff: a different --rate named as the step length, the first
// differing field named with both values, formatting alone no difference.
#include "bustle/persist/scenario_diff.hpp"

#include <catch2/catch.hpp>

#include "bustle/scenario/scenario_loader.hpp"

using bustle::persist::describe_scenario_difference;

namespace {
const std::string kCity =
    R"({"id":"c","lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5,0]],"speed_mps_limit":1.4},)"
    R"({"id":"b","kind":"sidewalk","points":[[5,0],[9,0]],"speed_mps_limit":1.4}],"pedestrians":{"count":3}})";
}  // namespace

TEST_CASE("a different --rate is named as the step length, not as two equal ids") {
  // What the server keeps: the file at 10 Hz, the rewritten text at 20 Hz.
  const std::string at_10hz = bustle::scenario::effective_scenario_text(kCity, 100'000);
  const std::string at_20hz = bustle::scenario::effective_scenario_text(kCity, 50'000);
  REQUIRE(at_10hz != at_20hz);
  CHECK(describe_scenario_difference(at_10hz, at_20hz) ==
        "step length 100000 us in the snapshot vs 50000 us running (a different --rate, or step_us "
        "in the file)");
  CHECK(describe_scenario_difference(at_20hz, at_10hz)
            .rfind("step length 50000 us in the snapshot vs 100000 us", 0) == 0);
}

TEST_CASE("the first differing field is named with both values") {
  std::string edited = kCity;
  edited.replace(edited.rfind("1.4"), 3, "1.2");
  CHECK(describe_scenario_difference(kCity, edited) ==
        "lanes[1].speed_mps_limit is 1.4 in the snapshot vs 1.2 running");
  CHECK(describe_scenario_difference(kCity, R"({"id":"other","lanes":[]})") ==
        R"(scenario id "c" in the snapshot vs "other" running)");
  std::string fewer =
      R"({"id":"c","lanes":[{"id":"a","kind":"sidewalk","points":[[0,0],[5,0]],"speed_mps_limit":1.4}],"pedestrians":{"count":3}})";
  CHECK(describe_scenario_difference(kCity, fewer) ==
        "lanes has 2 elements in the snapshot vs 1 running");
  std::string more = kCity;
  more.replace(more.rfind("}}"), 2, R"(,"spawn_per_step_max":4}})");
  CHECK(describe_scenario_difference(kCity, more) ==
        "pedestrians.spawn_per_step_max is absent in the snapshot vs 4 running");
}

TEST_CASE("texts that are the same JSON differ only in formatting") {
  const std::string spaced = bustle::scenario::effective_scenario_text(kCity, 50'000);
  const std::string compact =
      R"({"id":"c","step_us":50000,)" + kCity.substr(std::string(R"({"id":"c",)").size());
  CHECK(describe_scenario_difference(spaced, compact) ==
        "the scenario texts differ only in formatting");
  // An explicit default step length equals an omitted one.
  const std::string explicit_default =
      R"({"id":"c","step_us":100000,)" + kCity.substr(std::string(R"({"id":"c",)").size());
  CHECK(describe_scenario_difference(explicit_default, kCity) ==
        "the scenario texts differ only in formatting");
  CHECK(describe_scenario_difference("{", kCity) == "the snapshot's scenario JSON does not parse");
}
