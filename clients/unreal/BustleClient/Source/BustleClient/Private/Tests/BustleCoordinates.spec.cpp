// The engine-type side of the coordinate conversion (BustleUnrealTypes.h).
// The math itself is BustleCoordinates.h, tested outside the engine by
// tests/clients/unreal/coordinates_test.cpp; this checks only the FVector /
// FRotator glue.
#include "BustleUnrealTypes.h"
#include "BustleSpecFlags.h"
#include "CoreMinimal.h"
#include "Misc/AutomationTest.h"

#if WITH_DEV_AUTOMATION_TESTS

BEGIN_DEFINE_SPEC(FBustleCoordinatesSpec, "Bustle.Unit.Coordinates", BUSTLE_SPEC_FLAGS)
END_DEFINE_SPEC(FBustleCoordinatesSpec)

void FBustleCoordinatesSpec::Define()
{
	Describe("ToLocation", [this]()
		{
		It("converts metres to centimetres, mirrors y and adds the origin", [this]()
			{
			bustle::client::RenderPose Pose;
			Pose.x_m = 2.0;
			Pose.y_m = 3.0;
			Pose.z_m = 0.5;
			const FVector V = BustleUnreal::ToLocation(Pose, FVector(1000.0, 0.0, 10.0));
			TestEqual(TEXT("X"), V.X, 1200.0);
			TestEqual(TEXT("Y"), V.Y, -300.0);
			TestEqual(TEXT("Z"), V.Z, 60.0);
		});
	});

	Describe("ToRotation", [this]()
		{
		It("turns a counter-clockwise heading into a clockwise yaw", [this]()
			{
			bustle::client::RenderPose Pose;
			Pose.heading_rad = UE_DOUBLE_PI / 2.0;
			const FRotator R = BustleUnreal::ToRotation(Pose);
			TestEqual(TEXT("Yaw"), R.Yaw, -90.0, 1e-9);
			TestEqual(TEXT("Pitch"), R.Pitch, 0.0);
			TestEqual(TEXT("Roll"), R.Roll, 0.0);
		});
	});

	Describe("ToObserver", [this]()
		{
		It("is the inverse of ToLocation / ToRotation for a camera view", [this]()
			{
			const FVector Origin(500.0, -250.0, 0.0);
			const FVector Camera(1500.0, -1250.0, 300.0);
			const FRotator View(-20.0, 135.0, 0.0);
			const bustle::client::InterestObserver O = BustleUnreal::ToObserver(Camera, View, Origin, 150.0);
			TestEqual(TEXT("x"), O.x_m, 10.0, 1e-9);
			TestEqual(TEXT("y"), O.y_m, 10.0, 1e-9);
			TestEqual(TEXT("z"), O.z_m, 3.0, 1e-9);
			TestTrue(TEXT("has a heading"), O.heading_rad.has_value());
			TestEqual(TEXT("radius"), O.radius_m, 150.0);
			bustle::client::RenderPose Pose;
			Pose.x_m = O.x_m;
			Pose.y_m = O.y_m;
			Pose.z_m = O.z_m;
			Pose.heading_rad = O.heading_rad.value_or(0.0);
			TestTrue(TEXT("location round trip"), BustleUnreal::ToLocation(Pose, Origin).Equals(Camera, 1e-6));
			TestEqual(TEXT("yaw round trip"), BustleUnreal::ToRotation(Pose).Yaw, 135.0, 1e-9);
		});
	});
}

#endif  // WITH_DEV_AUTOMATION_TESTS
