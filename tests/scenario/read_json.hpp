// A JSON file the scenario tests read (a shipped config, the schema, a
// fixture), failing the test when it cannot be opened.
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace bustle::scenario::test {

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  INFO(path);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

}  // namespace bustle::scenario::test
