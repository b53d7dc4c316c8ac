// Catch2 checks of protocol v2 stream semantics over an EntityMirror, for
// the integration tests against the real server.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <utility>

#include "bustle/client/client.hpp"
#include "bustle/client/entity_mirror.hpp"
#include "bustle/client/messages.hpp"

namespace bustle::test {

// What a mirror holds respects the hints' rules: never None; Coarse only as
// Marker and Actor only for Full (except fading entities, which keep their
// hint whatever their tier); no more per representation than the budgets;
// every entity has a pose on a Welcome lane at `step`.
inline void check_hints(const bustle::client::EntityMirror& mirror, std::uint64_t step,
                        const bustle::client::RepresentationBudgets& budgets = {}) {
  using bustle::client::RepresentationHint;
  using bustle::client::SimTier;
  std::uint32_t actors = 0, instances = 0, markers = 0, unplaced = 0, wrong = 0;
  mirror.for_each([&](const bustle::client::EntityView& v) {
    actors += v.representation == RepresentationHint::Actor ? 1 : 0;
    instances += v.representation == RepresentationHint::Instanced ? 1 : 0;
    markers += v.representation == RepresentationHint::Marker ? 1 : 0;
    const bool tier_ok =
        v.retiring ||
        ((v.sim_tier != SimTier::Coarse || v.representation == RepresentationHint::Marker) &&
         (v.representation != RepresentationHint::Actor || v.sim_tier == SimTier::Full));
    const bool ok = v.representation != RepresentationHint::None && tier_ok;
    wrong += ok ? 0 : 1;
    unplaced += mirror.pose(v, step).has_value() ? 0 : 1;
  });
  INFO("step " << step << ": actors " << actors << ", instances " << instances << ", markers "
               << markers);
  CHECK(wrong == 0);
  CHECK(unplaced == 0);
  CHECK(actors <= budgets.actors);
  CHECK(instances <= budgets.instances);
  CHECK(markers <= budgets.markers);
}

// Reads the next Delta (failing the test when none comes), applies it to the
// mirror (strict mode: any problem fails the test) and returns it.
inline bustle::client::Delta next_applied(
    bustle::client::Client& client, bustle::client::EntityMirror& mirror,
    std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  auto d = client.next_delta(timeout);
  INFO(d.message);
  REQUIRE(d.ok());
  const auto summary = mirror.apply(d.value);
  INFO(summary.error);
  REQUIRE(summary.ok());
  return std::move(d.value);
}

}  // namespace bustle::test
