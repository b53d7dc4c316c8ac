// Shared set-up of the command tests: a shipped config loaded, a world made
// from it, one command applied in one step.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"

namespace bustle::core::test {

inline Scenario load(const char* name) {
  auto r =
      bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) + "/configs/" + name);
  INFO((r.errors.empty() ? std::string() : r.errors[0].to_string()));
  REQUIRE(r.ok());
  return *r.scenario;
}

// Response units on (3 at level 1, 4 more at level 2, at most 10, 2 placed
// per step anywhere around the first observer): the prevention tests' city
// and the capture test's churn both use these.
inline void enable_response_units(Scenario& s) {
  s.prevention.units_per_level = {3, 4};
  s.prevention.spawn_per_step = 2;
  s.prevention.max_units = 10;
  s.prevention.ring_min_m = 0.0;
  s.prevention.ring_max_m = 100'000.0;
}

inline std::unique_ptr<World> make(const Scenario& s) {
  auto c = World::create(s, 1);
  REQUIRE(c.world);
  return std::move(c.world);
}

inline CommandResult apply_one(World& w, WorldCommand c) {
  static std::uint32_t request = 0;
  REQUIRE(w.submit({CommandOrigin{7, ++request}, std::move(c)}) == SubmitStatus::Queued);
  w.step();
  REQUIRE(w.last_command_results().size() == 1);
  return w.last_command_results()[0];
}

}  // namespace bustle::core::test
