// engine_glue.hpp: archetype lookup by dotted prefix, and the pacing of
// UpdateInterest for a moving camera (what the UE5 plugin uses).
#include "bustle/client/engine_glue.hpp"

#include <catch2/catch.hpp>
#include <cmath>

namespace c = bustle::client;

TEST_CASE("The lookup chain goes from the full archetype name to its first component",
          "[engine_glue]") {
  using V = std::vector<std::string_view>;
  CHECK(c::archetype_lookup_chain("pedestrian.harbour.baker") ==
        V{"pedestrian.harbour.baker", "pedestrian.harbour", "pedestrian"});
  CHECK(c::archetype_lookup_chain("vehicle") == V{"vehicle"});
  CHECK(c::archetype_lookup_chain("").empty());
}

TEST_CASE("The most specific configured prefix wins, per Welcome index", "[engine_glue]") {
  const std::vector<std::string> archetypes = {"pedestrian", "pedestrian.harbour.baker",
                                               "pedestrian.hill.smith", "vehicle.sedan", "tram"};
  const std::map<std::string, int, std::less<>> by_name = {
      {"pedestrian", 1}, {"pedestrian.harbour", 2}, {"vehicle", 3}, {"vehicle.sedan", 4}};
  const auto resolved = c::resolve_by_archetype(archetypes, by_name);
  CHECK(resolved == std::map<std::uint16_t, int>{{0, 1}, {1, 2}, {2, 1}, {3, 4}});  // "tram": none
}

TEST_CASE("The first observer is due at once; later ones wait for the minimum interval",
          "[engine_glue]") {
  c::InterestPacer pacer;  // 0.25 s min, 2 s max, 5 m, 0.26 rad
  c::InterestObserver o{10.0, 20.0, 2.0, 0.0, 150.0};
  CHECK(pacer.due(o, 0));
  pacer.sent(o, 0);
  c::InterestObserver far = o;
  far.x_m += 50.0;
  CHECK_FALSE(pacer.due(far, 249'999));  // moved far, but too soon
  CHECK(pacer.due(far, 250'000));
}

TEST_CASE("Small moves wait for the maximum interval; an unchanged observer is never sent again",
          "[engine_glue]") {
  c::InterestPacer pacer;
  c::InterestObserver o{0.0, 0.0, 0.0, 1.0, 150.0};
  pacer.sent(o, 1'000'000);
  CHECK_FALSE(pacer.due(o, 10'000'000));  // identical: never
  c::InterestObserver nudged = o;
  nudged.x_m = 4.9;  // below 5 m
  CHECK_FALSE(pacer.due(nudged, 1'500'000));
  CHECK_FALSE(pacer.due(nudged, 2'999'999));
  CHECK(pacer.due(nudged, 3'000'000));  // 2 s after the last one sent
  nudged.x_m = 5.1;
  CHECK(pacer.due(nudged, 1'250'000));  // over the threshold, after 0.25 s
}

TEST_CASE("Turning past the threshold, gaining a heading or a new radius is due", "[engine_glue]") {
  c::InterestPacer pacer;
  c::InterestObserver o{0.0, 0.0, 0.0, 3.0, 150.0};
  pacer.sent(o, 0);
  c::InterestObserver turned = o;
  turned.heading_rad = -3.0;  // 0.28 rad across the +-pi seam
  CHECK(pacer.due(turned, 300'000));
  turned.heading_rad = 3.2 - 2 * 3.14159265358979;  // ~0.2 rad: not enough
  CHECK_FALSE(pacer.due(turned, 300'000));
  c::InterestObserver no_heading = o;
  no_heading.heading_rad.reset();
  CHECK(pacer.due(no_heading, 300'000));
  c::InterestObserver wider = o;
  wider.radius_m = 200.0;
  CHECK(pacer.due(wider, 300'000));
  pacer.reset();
  CHECK(pacer.due(o, 1));
}
