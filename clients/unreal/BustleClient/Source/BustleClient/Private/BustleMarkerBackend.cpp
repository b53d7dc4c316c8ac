#include "BustleMarkerBackend.h"

#include "BustleSettings.h"
#include "BustleUnrealTypes.h"
#include "BustleWorldSubsystem.h"
#include "DrawDebugHelpers.h"
#include "Engine/World.h"
#include "ProfilingDebugging/CpuProfilerTrace.h"
#include "UObject/Class.h"
#include "UObject/Object.h"

FBustleMarkerBackend::FBustleMarkerBackend(UBustleWorldSubsystem& InOwner)
	: Owner(InOwner)
{
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	OriginCm = Settings->WorldOriginCm;
	Size = Settings->MarkerSize;
}

bool FBustleMarkerBackend::initialize(bustle::client::LogSink* log)
{
#if ENABLE_DRAW_DEBUG
	if (!GetDefault<UBustleSettings>()->bDrawMarkers)
	{
		bustle::client::log_to(log, bustle::client::LogLevel::Info, name(),
			"markers are off (bDrawMarkers); Marker hints are not drawn");
		return false;
	}
	return true;
#else
	bustle::client::log_to(log, bustle::client::LogLevel::Warning, name(),
		"this build has no debug drawing (ENABLE_DRAW_DEBUG is 0); Marker hints are not drawn");
	return false;
#endif
}

FBustleMarkerBackend::FMarker& FBustleMarkerBackend::At(bustle::client::SlotId Slot)
{
	if (Slot.value >= Markers.size())
	{
		Markers.resize(static_cast<std::size_t>(Slot.value) + 1);
	}
	return Markers[Slot.value];
}

bustle::client::ActivationResult FBustleMarkerBackend::activate(bustle::client::SlotId slot,
	bustle::client::EntityId /*id*/, std::uint16_t /*archetype*/, bustle::client::RepresentationHint /*hint*/,
	const bustle::client::EntityState& initial)
{
	FMarker& Marker = At(slot);
	Marker.bActive = true;
	Marker.Location = BustleUnreal::ToLocation(initial.pose, OriginCm);
	Marker.Policy.reset();
	Marker.Policy.update(initial.policy, initial.server_time_us);
	return bustle::client::ActivationResult::active();
}

void FBustleMarkerBackend::deactivate(bustle::client::SlotId slot, bustle::client::EntityId /*id*/)
{
	if (slot.value < Markers.size())
	{
		Markers[slot.value].bActive = false;
	}
}

bool FBustleMarkerBackend::extract_update(const bustle::client::EntityState& state, std::int64_t server_time_us,
	bustle::client::SlotId slot)
{
	At(slot).Policy.update(state.policy, server_time_us);
	return true;
}

void FBustleMarkerBackend::apply_interpolation(bustle::client::SlotId slot, std::int64_t /*render_time_us*/,
	const bustle::client::RenderPose& pose)
{
	At(slot).Location = BustleUnreal::ToLocation(pose, OriginCm);
}

void FBustleMarkerBackend::end_frame()
{
#if ENABLE_DRAW_DEBUG
	TRACE_CPUPROFILER_EVENT_SCOPE(Bustle_MarkersEndFrame);
	UWorld* World = Owner.GetWorld();
	if (World == nullptr)
	{
		return;
	}
	for (const FMarker& Marker : Markers)
	{
		if (Marker.bActive)
		{
			const bustle::client::Rgb C = bustle::client::policy_colour(Marker.Policy.displayed());
			DrawDebugPoint(World, Marker.Location, Size, FColor(C.r, C.g, C.b), false, -1.0f);
		}
	}
#endif
}
