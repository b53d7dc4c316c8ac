// Shared by the core tests: a World for a scenario that must be valid, or
// restored from a checkpoint that must restore (the first error is shown
// when not).
#pragma once

#include <catch2/catch.hpp>
#include <memory>

#include "bustle/core/world.hpp"

namespace bustle::core::test {

inline std::unique_ptr<World> make_world(const Scenario& s, std::uint64_t seed = 1) {
  auto c = World::create(s, seed);
  INFO((c.errors.empty() ? std::string() : c.errors[0].path + ": " + c.errors[0].message));
  REQUIRE(c.world);
  return std::move(c.world);
}

// A World restored from `cp`, which must restore (the first error is shown
// when it does not).
inline std::unique_ptr<World> restore_world(const Scenario& s, const WorldCheckpoint& cp) {
  auto r = World::restore(s, cp);
  INFO((r.errors.empty() ? std::string() : r.errors[0].path + ": " + r.errors[0].message));
  REQUIRE(r.world);
  return std::move(r.world);
}

}  // namespace bustle::core::test
