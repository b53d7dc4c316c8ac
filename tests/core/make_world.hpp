// Shared by the core tests: a World for a scenario that must be valid (the
// first creation error is shown when it is not).
#pragma once

#include <catch2/catch.hpp>
#include <memory>

#include "bustle/core/world.hpp"

namespace bustle::core::test {

inline std::unique_ptr<World> make_world(const Scenario& s, std::uint64_t seed) {
  auto c = World::create(s, seed);
  INFO((c.errors.empty() ? std::string() : c.errors[0].path + ": " + c.errors[0].message));
  REQUIRE(c.world);
  return std::move(c.world);
}

}  // namespace bustle::core::test
