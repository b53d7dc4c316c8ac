// Adapts a project's IBustleRenderBackend (engine types) to the SDK's
// RenderBackend, so the SDK's layer drives it like the built-in backends.
// Plain forwarding: SlotId -> int32, pose -> world transform, SDK ids and
// hints -> the plugin's Blueprint types.
#pragma once

#include "CoreMinimal.h"
#include "BustleRenderBackend.h"
#include "BustleSdk.h"
#include "Templates/SharedPointer.h"

#include <string>

class UBustleWorldSubsystem;

class FBustleCustomBackend final : public bustle::client::RenderBackend
{
public:
	FBustleCustomBackend(UBustleWorldSubsystem& InOwner, TSharedRef<IBustleRenderBackend> InBackend);

	const TSharedRef<IBustleRenderBackend>& Get() const { return Backend; }

	virtual std::string_view name() const override { return Name; }
	virtual bool initialize(bustle::client::LogSink* log) override;
	virtual void deinitialize() override;
	virtual bustle::client::ActivationResult activate(bustle::client::SlotId slot, bustle::client::EntityId id,
		std::uint16_t archetype, bustle::client::RepresentationHint hint,
		const bustle::client::EntityState& initial) override;
	virtual void deactivate(bustle::client::SlotId slot, bustle::client::EntityId id) override;
	virtual void apply_interpolation(bustle::client::SlotId slot, std::int64_t render_time_us,
		const bustle::client::RenderPose& pose) override;
	virtual bool is_instance_active(bustle::client::SlotId slot) const override;
	virtual void begin_frame(std::int64_t render_time_us) override;
	virtual void end_frame() override;

private:
	UBustleWorldSubsystem& Owner;
	TSharedRef<IBustleRenderBackend> Backend;
	std::string Name;
	FVector OriginCm = FVector::ZeroVector;
};
