// The UE5 plugin's engine-free coordinate header (clients/unreal/.../
// Private/BustleCoordinates.h), compiled here exactly as the plugin includes
// it. It is included first, so this file also proves that the header
// compiles on its own (it includes what it uses).
#include <catch2/catch.hpp>
#include <cmath>

#include "BustleCoordinates.h"
#include "bustle/client/interpolation.hpp"

namespace u = bustle::unreal;

TEST_CASE("Metres become centimetres and the y axis is mirrored", "[unreal][coordinates]") {
  const u::UnrealVector v = u::to_unreal_location({12.5, 3.0, 1.25});
  CHECK(v.x == Approx(1250.0));
  CHECK(v.y == Approx(-300.0));
  CHECK(v.z == Approx(125.0));
  const u::BustlePoint back = u::to_bustle_point(v);
  CHECK(back.x_m == Approx(12.5));
  CHECK(back.y_m == Approx(3.0));
  CHECK(back.z_m == Approx(1.25));
}

TEST_CASE("The origin offset is the Unreal location of Bustle's origin, in centimetres",
          "[unreal][coordinates]") {
  const u::UnrealVector origin{1000.0, -2000.0, 50.0};
  const u::UnrealVector at_origin = u::to_unreal_location({0.0, 0.0, 0.0}, origin);
  CHECK(at_origin.x == Approx(1000.0));
  CHECK(at_origin.y == Approx(-2000.0));
  CHECK(at_origin.z == Approx(50.0));
  const u::UnrealVector v = u::to_unreal_location({-4.0, 7.0, 0.0}, origin);
  CHECK(v.x == Approx(600.0));
  CHECK(v.y == Approx(-2700.0));
  const u::BustlePoint back = u::to_bustle_point(v, origin);
  CHECK(back.x_m == Approx(-4.0));
  CHECK(back.y_m == Approx(7.0));
  CHECK(back.z_m == Approx(0.0).margin(1e-12));
}

TEST_CASE("Counter-clockwise heading in radians becomes clockwise yaw in degrees",
          "[unreal][coordinates]") {
  CHECK(u::to_unreal_yaw_degrees(0.0) == Approx(0.0).margin(1e-12));  // +x is +X
  CHECK(u::to_unreal_yaw_degrees(u::kPi / 2) == Approx(-90.0));       // north (+y) is -Y
  CHECK(u::to_unreal_yaw_degrees(-u::kPi / 2) == Approx(90.0));
  CHECK(u::to_unreal_yaw_degrees(u::kPi) == Approx(180.0));  // (-180, 180]
  CHECK(u::to_unreal_yaw_degrees(-u::kPi) == Approx(180.0));
  CHECK(u::to_unreal_yaw_degrees(5 * u::kPi / 2) == Approx(-90.0));  // wrapped
  CHECK(u::to_bustle_heading_rad(-90.0) == Approx(u::kPi / 2));
  CHECK(u::to_bustle_heading_rad(270.0) == Approx(u::kPi / 2));
  CHECK(u::to_bustle_heading_rad(180.0) == Approx(u::kPi));
}

TEST_CASE("A heading points where the converted positions go", "[unreal][coordinates]") {
  // An entity moving from a to b in Bustle has heading atan2(dy, dx); the
  // converted yaw must point from to_unreal(a) to to_unreal(b).
  const double headings[] = {0.3, 1.2, 2.9, -0.7, -2.4};
  for (double h : headings) {
    const u::BustlePoint a{5.0, -3.0, 0.0};
    const u::BustlePoint b{a.x_m + std::cos(h), a.y_m + std::sin(h), 0.0};
    const u::UnrealVector ua = u::to_unreal_location(a, {100.0, 200.0, 0.0});
    const u::UnrealVector ub = u::to_unreal_location(b, {100.0, 200.0, 0.0});
    const double yaw_of_motion = std::atan2(ub.y - ua.y, ub.x - ua.x) * 180.0 / u::kPi;
    CHECK(u::to_unreal_yaw_degrees(h) == Approx(yaw_of_motion));
    CHECK(u::to_bustle_heading_rad(yaw_of_motion) == Approx(h));
  }
}

TEST_CASE("An SDK render pose converts as the plugin converts it", "[unreal][coordinates]") {
  // Halfway between two poses of the SDK's interpolation, then to Unreal.
  const bustle::client::RenderPose a{0.0, 0.0, 0.0, 0.0};
  const bustle::client::RenderPose b{2.0, 2.0, 0.5, u::kPi / 2};
  const bustle::client::RenderPose mid = bustle::client::lerp_pose(a, b, 0.5, 1.2);
  const u::UnrealVector v = u::to_unreal_location({mid.x_m, mid.y_m, mid.z_m});
  CHECK(v.x == Approx(100.0));
  CHECK(v.y == Approx(-100.0));
  CHECK(v.z == Approx(25.0));
  CHECK(u::to_unreal_yaw_degrees(mid.heading_rad) == Approx(-45.0));
}

TEST_CASE("Wrapping stays in the half-open ranges", "[unreal][coordinates]") {
  CHECK(u::wrap_degrees(-180.0) == Approx(180.0));
  CHECK(u::wrap_degrees(540.0) == Approx(180.0));
  CHECK(u::wrap_degrees(-190.0) == Approx(170.0));
  CHECK(u::wrap_radians(-u::kPi) == Approx(u::kPi));
  CHECK(u::wrap_radians(3 * u::kPi) == Approx(u::kPi));
}

TEST_CASE("A velocity maps like a location without the origin", "[unreal][coordinates]") {
  // Walking north-east at 1 m/s each way: Unreal +X, -Y (y is mirrored), cm/s.
  const u::UnrealVector v = u::to_unreal_velocity({1.0, 1.0, -0.5});
  CHECK(v.x == Approx(100.0));
  CHECK(v.y == Approx(-100.0));
  CHECK(v.z == Approx(-50.0));
}
