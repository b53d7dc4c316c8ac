// Bustle <-> Unreal coordinate conversion, header-only and engine-free so the
// same file is compiled and tested outside the engine (tests/clients/unreal).
//
// Bustle: metres, right-handed, x east, y north, z up; heading in radians,
// 0 = +x, counter-clockwise (towards +y).
// Unreal: centimetres, left-handed, X forward, Y right, Z up; yaw in degrees,
// positive from +X towards +Y (clockwise seen from above).
//
// Mapping: X = x * 100, Y = -y * 100, Z = z * 100 (mirroring y turns the
// right-handed frame into the left-handed one), then plus the origin (the
// Unreal location of Bustle's (0, 0, 0), in centimetres). A direction at
// heading h is (cos h, sin h) in Bustle and (cos h, -sin h) in Unreal, so
// yaw = -h in degrees, wrapped into (-180, 180].
//
// Deliberately no engine types: the plugin converts to FVector / FRotator at
// the call site (BustleUnrealTypes.h).
#pragma once

#include <cmath>

namespace bustle::unreal
{

	inline constexpr double kCentimetresPerMetre = 100.0;
	inline constexpr double kPi = 3.14159265358979323846;

	struct UnrealVector
	{  // centimetres
		double x = 0.0;
		double y = 0.0;
		double z = 0.0;
	};

	struct BustlePoint
	{  // metres
		double x_m = 0.0;
		double y_m = 0.0;
		double z_m = 0.0;
	};

	// a wrapped into (-180, 180].
	inline double wrap_degrees(double a)
	{
		double r = std::fmod(a, 360.0);
		if (r <= -180.0)
			r += 360.0;
		if (r > 180.0)
			r -= 360.0;
		return r;
	}

	// a wrapped into (-pi, pi].
	inline double wrap_radians(double a)
	{
		double r = std::fmod(a, 2.0 * kPi);
		if (r <= -kPi)
			r += 2.0 * kPi;
		if (r > kPi)
			r -= 2.0 * kPi;
		return r;
	}

	inline UnrealVector to_unreal_location(const BustlePoint& p, const UnrealVector& origin_cm = {})
	{
		return UnrealVector{origin_cm.x + p.x_m * kCentimetresPerMetre, origin_cm.y - p.y_m * kCentimetresPerMetre,
			origin_cm.z + p.z_m * kCentimetresPerMetre};
	}

	inline BustlePoint to_bustle_point(const UnrealVector& v, const UnrealVector& origin_cm = {})
	{
		return BustlePoint{(v.x - origin_cm.x) / kCentimetresPerMetre, -(v.y - origin_cm.y) / kCentimetresPerMetre,
			(v.z - origin_cm.z) / kCentimetresPerMetre};
	}

	// Bustle heading (radians, counter-clockwise from +x) -> Unreal yaw (degrees).
	inline double to_unreal_yaw_degrees(double heading_rad)
	{
		return wrap_degrees(-heading_rad * 180.0 / kPi);
	}

	// Unreal yaw (degrees) -> Bustle heading (radians, counter-clockwise from +x).
	inline double to_bustle_heading_rad(double yaw_degrees)
	{
		return wrap_radians(-yaw_degrees * kPi / 180.0);
	}

	// A velocity (metres per second, Bustle's frame) in centimetres per
	// second, Unreal's frame: the location mapping without the origin.
	inline UnrealVector to_unreal_velocity(const BustlePoint& v_mps)
	{
		return to_unreal_location(v_mps);
	}

}  // namespace bustle::unreal
