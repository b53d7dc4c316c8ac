// Policy colour hysteresis (presentation.hpp): waiting shows at once, leaving
// it needs 0.3 s of stable evidence, other changes 0.5 s.
#include "bustle/client/presentation.hpp"

#include <catch2/catch.hpp>

namespace c = bustle::client;
using P = c::ControlPolicy;

TEST_CASE("WaitingAtSignal is shown at once; leaving it needs 0.3 s of the same policy",
          "[presentation]") {
  c::PolicyDisplay d;
  CHECK(d.update(P::RouteFollow, 0) == P::RouteFollow);
  CHECK(d.update(P::WaitingAtSignal, 100'000) == P::WaitingAtSignal);  // at once
  CHECK(d.update(P::RouteFollow, 200'000) == P::WaitingAtSignal);
  CHECK(d.update(P::RouteFollow, 499'999) == P::WaitingAtSignal);  // 0.3 s - 1 µs
  CHECK(d.update(P::RouteFollow, 500'000) == P::RouteFollow);      // 0.3 s of evidence
}

TEST_CASE("Other changes need 0.5 s of stable evidence, so alternating policies do not flicker",
          "[presentation]") {
  c::PolicyDisplay d;
  d.update(P::RouteFollow, 0);
  // Yielding and RouteFollow alternating every fixed step (0.1 s): no change shown.
  for (int k = 1; k <= 20; ++k) {
    CHECK(d.update(k % 2 == 0 ? P::RouteFollow : P::Yielding, k * 100'000) == P::RouteFollow);
  }
  // Yielding held from 2.1 s: shown at 2.6 s, not before.
  CHECK(d.update(P::Yielding, 2'100'000) == P::RouteFollow);
  CHECK(d.update(P::Yielding, 2'599'999) == P::RouteFollow);
  CHECK(d.update(P::Yielding, 2'600'000) == P::Yielding);
  // A different candidate restarts the evidence.
  CHECK(d.update(P::Parked, 2'700'000) == P::Yielding);
  CHECK(d.update(P::LaneFollow, 3'000'000) == P::Yielding);
  CHECK(d.update(P::LaneFollow, 3'499'999) == P::Yielding);
  CHECK(d.update(P::LaneFollow, 3'500'000) == P::LaneFollow);
}

TEST_CASE("The palette: route following green, yielding orange, waiting red", "[presentation]") {
  CHECK(c::policy_colour(P::RouteFollow) == c::Rgb{40, 180, 60});
  CHECK(c::policy_colour(P::Yielding) == c::Rgb{255, 150, 0});
  CHECK(c::policy_colour(P::WaitingAtSignal) == c::Rgb{220, 30, 30});
  CHECK_FALSE(c::policy_colour(P::Parked) == c::policy_colour(P::RouteFollow));
}
