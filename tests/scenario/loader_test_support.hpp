// What the scenario tests share: reading a JSON file (a shipped config, the
// schema, a fixture), failing the test when it cannot be opened, and the
// check that a load failed with exactly one error at a given path.
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "bustle/scenario/scenario_loader.hpp"

namespace bustle::scenario::test {

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  INFO(path);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// Exactly one error, from "test.json", at `path`, containing `fragment`.
inline void require_single_error(const LoadResult& r, const std::string& path,
                                 const std::string& fragment) {
  INFO("errors: " << r.errors.size()
                  << (r.errors.empty() ? "" : " first: " + r.errors[0].to_string()));
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].source == "test.json");
  CHECK(r.errors[0].path == path);
  CHECK(r.errors[0].message.find(fragment) != std::string::npos);
  CHECK_FALSE(r.scenario.has_value());
}

}  // namespace bustle::scenario::test
