// Engine-type wrappers around the engine-free conversion in
// BustleCoordinates.h: SDK poses to FVector / FRotator / FTransform, camera
// views to SDK observers; SDK ids and hints to the plugin's Blueprint types.
#pragma once

#include "CoreMinimal.h"
#include "BustleCoordinates.h"
#include "BustleSdk.h"
#include "BustleTypes.h"
#include "Containers/StringConv.h"
#include "Containers/UnrealString.h"
#include "Math/Rotator.h"
#include "Math/Transform.h"
#include "Math/Vector.h"

#include <string>
#include <string_view>

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

	// Metres per second (Bustle) -> centimetres per second (Unreal).
	inline FVector ToVelocity(const bustle::client::RenderVelocity& V)
	{
		const bustle::unreal::UnrealVector U = bustle::unreal::to_unreal_velocity({V.x_mps, V.y_mps, V.z_mps});
		return FVector(U.x, U.y, U.z);
	}

	// Same values on both sides (EBustleRepresentation mirrors the schema's RepresentationHint).
	inline EBustleRepresentation ToRepresentation(bustle::client::RepresentationHint Hint)
	{
		return static_cast<EBustleRepresentation>(static_cast<uint8>(Hint));
	}

	inline bustle::client::RepresentationHint ToHint(EBustleRepresentation Representation)
	{
		return static_cast<bustle::client::RepresentationHint>(static_cast<uint8>(Representation));
	}

	inline FBustleEntityId ToEntityId(const bustle::client::EntityId& Id)
	{
		FBustleEntityId Out;
		Out.Index = static_cast<int32>(Id.index);
		Out.Generation = static_cast<int32>(Id.generation);
		return Out;
	}

	inline bustle::client::EntityId ToSdkEntityId(const FBustleEntityId& Id)
	{
		return bustle::client::EntityId{static_cast<uint32>(Id.Index), static_cast<uint32>(Id.Generation)};
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
