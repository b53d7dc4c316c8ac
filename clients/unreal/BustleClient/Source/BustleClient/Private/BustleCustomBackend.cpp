#include "BustleCustomBackend.h"

#include "BustleSettings.h"
#include "BustleUnrealTypes.h"
#include "BustleRepresentation.h"
#include "BustleWorldSubsystem.h"
#include "Engine/World.h"
#include "UObject/Class.h"
#include "UObject/Object.h"

FBustleCustomBackend::FBustleCustomBackend(UBustleWorldSubsystem& InOwner, TSharedRef<IBustleRenderBackend> InBackend)
	: Owner(InOwner)
	, Backend(MoveTemp(InBackend))
	, Name(BustleUnreal::ToStd(Backend->GetBackendName().ToString()))
{
	OriginCm = GetDefault<UBustleSettings>()->WorldOriginCm;
}

bool FBustleCustomBackend::initialize(bustle::client::LogSink* log)
{
	UWorld* World = Owner.GetWorld();
	if (World == nullptr)
	{
		bustle::client::log_to(log, bustle::client::LogLevel::Error, name(), "no world to draw in");
		return false;
	}
	return Backend->InitializeBackend(*World);
}

void FBustleCustomBackend::deinitialize()
{
	Backend->DeinitializeBackend();
}

bustle::client::ActivationResult FBustleCustomBackend::activate(bustle::client::SlotId slot,
	bustle::client::EntityId id, std::uint16_t archetype, bustle::client::RepresentationHint hint,
	const bustle::client::EntityState& initial)
{
	const FBustleEntityInfo Info = BustleDescribeEntity(Owner, id, slot, archetype, hint, hint);
	switch (Backend->Activate(Info, BustleUnreal::ToTransform(initial.pose, OriginCm)))
	{
	case EBustleActivation::Active:
		return bustle::client::ActivationResult::active();
	case EBustleActivation::Pending:
		return bustle::client::ActivationResult::pending(bustle::client::UnassignedReason::Loading);
	case EBustleActivation::Refused:
	default:
		return bustle::client::ActivationResult::refused(bustle::client::UnassignedReason::Other);
	}
}

void FBustleCustomBackend::deactivate(bustle::client::SlotId slot, bustle::client::EntityId /*id*/)
{
	Backend->Deactivate(static_cast<int32>(slot.value));
}

void FBustleCustomBackend::apply_interpolation(bustle::client::SlotId slot, std::int64_t /*render_time_us*/,
	const bustle::client::RenderPose& pose)
{
	Backend->SetTransform(static_cast<int32>(slot.value), BustleUnreal::ToTransform(pose, OriginCm));
}

bool FBustleCustomBackend::is_instance_active(bustle::client::SlotId slot) const
{
	return Backend->IsActive(static_cast<int32>(slot.value));
}

void FBustleCustomBackend::begin_frame(std::int64_t /*render_time_us*/)
{
	Backend->BeginFrame();
}

void FBustleCustomBackend::end_frame()
{
	Backend->EndFrame();
}
