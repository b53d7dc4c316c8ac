// The Marker hint, for debugging: one debug point per entity, coloured by
// its control policy through the SDK's PolicyDisplay (the seed's 0.3 s /
// 0.5 s hysteresis, so colours do not flicker) and policy_colour().
// Drawn with DrawDebugPoint, so it exists only where ENABLE_DRAW_DEBUG does
// (not in Shipping): there initialize() refuses and logs why, and the layer
// leaves Marker hints undrawn (reported as Unassigned(Other)).
#pragma once

#include "CoreMinimal.h"
#include "BustleSdk.h"

#include <vector>

class UBustleWorldSubsystem;

class FBustleMarkerBackend final : public bustle::client::RenderBackend
{
public:
	explicit FBustleMarkerBackend(UBustleWorldSubsystem& InOwner);

	virtual std::string_view name() const override { return "unreal-markers"; }
	virtual bool initialize(bustle::client::LogSink* log) override;
	virtual bustle::client::ActivationResult activate(bustle::client::SlotId slot, bustle::client::EntityId id,
		std::uint16_t archetype, bustle::client::RepresentationHint hint,
		const bustle::client::EntityState& initial) override;
	virtual void deactivate(bustle::client::SlotId slot, bustle::client::EntityId id) override;
	virtual bool extract_update(const bustle::client::EntityState& state, std::int64_t server_time_us,
		bustle::client::SlotId slot) override;
	virtual void apply_interpolation(bustle::client::SlotId slot, std::int64_t render_time_us,
		const bustle::client::RenderPose& pose) override;
	virtual void end_frame() override;

private:
	struct FMarker
	{
		bool bActive = false;
		FVector Location = FVector::ZeroVector;
		bustle::client::PolicyDisplay Policy;
	};
	FMarker& At(bustle::client::SlotId Slot);

	UBustleWorldSubsystem& Owner;
	std::vector<FMarker> Markers;  // by SlotId::value
	FVector OriginCm = FVector::ZeroVector;
	float Size = 8.0f;
};
