// Engine-type wrappers around the engine-free conversion in
// BustleCoordinates.h: SDK poses to FVector / FRotator / FTransform, camera
// views to SDK observers.
#pragma once

#include "CoreMinimal.h"
#include "BustleCoordinates.h"
#include "BustleSdk.h"

namespace BustleUnreal
{
	inline FVector ToLocation(const bustle::client::RenderPose& Pose, const FVector& OriginCm)
	{
		const bustle::unreal::UnrealVector V = bustle::unreal::to_unreal_location(
			{Pose.x_m, Pose.y_m, Pose.z_m}, {OriginCm.X, OriginCm.Y, OriginCm.Z});
		return FVector(V.x, V.y, V.z);
	}

	inline FRotator ToRotation(const bustle::client::RenderPose& Pose)
	{
		return FRotator(0.0, bustle::unreal::to_unreal_yaw_degrees(Pose.heading_rad), 0.0);
	}

	inline FTransform ToTransform(const bustle::client::RenderPose& Pose, const FVector& OriginCm)
	{
		return FTransform(ToRotation(Pose), ToLocation(Pose, OriginCm));
	}

	// A camera view (Unreal location and yaw) as an SDK observer.
	inline bustle::client::InterestObserver ToObserver(const FVector& Location, const FRotator& Rotation,
		const FVector& OriginCm, double RadiusMetres)
	{
		const bustle::unreal::BustlePoint P = bustle::unreal::to_bustle_point(
			{Location.X, Location.Y, Location.Z}, {OriginCm.X, OriginCm.Y, OriginCm.Z});
		bustle::client::InterestObserver Observer;
		Observer.x_m = P.x_m;
		Observer.y_m = P.y_m;
		Observer.z_m = P.z_m;
		Observer.heading_rad = bustle::unreal::to_bustle_heading_rad(Rotation.Yaw);
		Observer.radius_m = RadiusMetres;
		return Observer;
	}

	inline std::string ToStd(const FString& S)
	{
		return std::string(TCHAR_TO_UTF8(*S));
	}

	inline FString ToFString(std::string_view S)
	{
		const FUTF8ToTCHAR Converted(S.data(), static_cast<int32>(S.size()));
		return FString(Converted.Length(), Converted.Get());
	}
}
