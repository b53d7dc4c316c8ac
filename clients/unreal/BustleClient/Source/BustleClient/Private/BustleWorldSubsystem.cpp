#include "BustleWorldSubsystem.h"

#include "BustleClientSubsystem.h"
#include "BustleInbound.h"
#include "BustleLog.h"
#include "BustleRepresentation.h"
#include "BustleSettings.h"
#include "BustleSettingsSdk.h"
#include "BustleUnrealTypes.h"
#include "Camera/PlayerCameraManager.h"
#include "Components/InstancedStaticMeshComponent.h"
#include "Components/SceneComponent.h"
#include "Engine/GameInstance.h"
#include "Engine/World.h"
#include "GameFramework/Actor.h"
#include "GameFramework/PlayerController.h"
#include "ProfilingDebugging/CsvProfiler.h"

CSV_DEFINE_CATEGORY(Bustle, true);

DECLARE_STATS_GROUP(TEXT("Bustle"), STATGROUP_Bustle, STATCAT_Advanced);
DECLARE_CYCLE_STAT(TEXT("Bustle apply"), STAT_BustleApply, STATGROUP_Bustle);
DECLARE_CYCLE_STAT(TEXT("Bustle render"), STAT_BustleRender, STATGROUP_Bustle);

FBustleRepresentation::FBustleRepresentation(UBustleWorldSubsystem& Owner, const bustle::client::WelcomeInfo& Welcome)
	: Factory(Owner, Welcome.archetypes)
	, Instances(Owner, Welcome.archetypes)
	, Markers(Owner)
	, Pacer(BustleSettingsSdk::MakeInterestPacerConfig(*GetDefault<UBustleSettings>()))
	, Layer(BustleSettingsSdk::MakeRepresentationConfig(*GetDefault<UBustleSettings>()), &Log)
{
	namespace bc = bustle::client;
	Layer.set_world(Welcome);
	if (FBustleActorFactory::HasAnyActorClass())
	{
		Pool = std::make_unique<bc::ActorPoolBackend>(
			Factory, BustleSettingsSdk::MakeActorPoolConfig(*GetDefault<UBustleSettings>(), Welcome.archetypes));
	}
	// Routing by hint; a hint whose backend is missing or refuses falls back
	// to the next coarser one that is installed (Actor -> Instanced -> Marker).
	const bool bMarkers = Layer.set_backend(bc::RepresentationHint::Marker, &Markers) == bc::InstallStatus::Installed;
	const bool bInstances = FBustleInstancedBackend::HasAnyMesh() &&
							Layer.set_backend(bc::RepresentationHint::Instanced, &Instances) == bc::InstallStatus::Installed;
	if (!bInstances && bMarkers)
	{
		Layer.set_backend(bc::RepresentationHint::Instanced, &Markers);
	}
	bc::RenderBackend* ActorFallback = bInstances ? static_cast<bc::RenderBackend*>(&Instances)
									   : bMarkers ? static_cast<bc::RenderBackend*>(&Markers)
												  : nullptr;
	if (Pool == nullptr || Layer.set_backend(bc::RepresentationHint::Actor, Pool.get()) != bc::InstallStatus::Installed)
	{
		if (ActorFallback != nullptr)
		{
			Layer.set_backend(bc::RepresentationHint::Actor, ActorFallback);
		}
	}
}

bool UBustleWorldSubsystem::ShouldCreateSubsystem(UObject* Outer) const
{
	if (!Super::ShouldCreateSubsystem(Outer))
	{
		return false;
	}
	// Game and PIE worlds only: no editor preview, inactive or thumbnail worlds.
	const UWorld* World = Cast<UWorld>(Outer);
	return World != nullptr && (World->WorldType == EWorldType::Game || World->WorldType == EWorldType::PIE);
}

void UBustleWorldSubsystem::Initialize(FSubsystemCollectionBase& Collection)
{
	Super::Initialize(Collection);
}

void UBustleWorldSubsystem::OnWorldBeginPlay(UWorld& InWorld)
{
	Super::OnWorldBeginPlay(InWorld);
	bBegunPlay = true;
	if (UGameInstance* GameInstance = InWorld.GetGameInstance())
	{
		Client = GameInstance->GetSubsystem<UBustleClientSubsystem>();
	}
	if (UBustleClientSubsystem* C = Client.Get())
	{
		C->SetConsumer(this);
		if (C->GetWelcome() != nullptr)
		{
			HandleWelcome();  // connected before this world: subscribe again for a baseline
		}
	}
}

void UBustleWorldSubsystem::Deinitialize()
{
	if (UBustleClientSubsystem* C = Client.Get())
	{
		C->ReleaseConsumer(this);
	}
	Client.Reset();
	DestroyRepresentation();
	const UWorld* World = GetWorld();
	if (IsValid(InstanceHost) && World != nullptr && !World->bIsTearingDown)
	{
		InstanceHost->Destroy();
	}
	InstanceHost = nullptr;
	InstanceComponents.Reset();
	PoolActors.Reset();
	LoadedAssets.Reset();
	Super::Deinitialize();
}

void UBustleWorldSubsystem::DestroyRepresentation()
{
	// The layer deactivates every instance and the pool destroys its actors.
	Representation.Reset();
	bSubscribed = false;
	bHaveBaseline = false;
}

TStatId UBustleWorldSubsystem::GetStatId() const
{
	RETURN_QUICK_DECLARE_CYCLE_STAT(UBustleWorldSubsystem, STATGROUP_Tickables);
}

int32 UBustleWorldSubsystem::GetLiveEntityCount() const
{
	return Representation.IsValid() ? static_cast<int32>(Representation->Layer.mirror().size()) : 0;
}

bool UBustleWorldSubsystem::IsEntityCorpse(int32 EntityIndex, int32 EntityGeneration) const
{
	if (!Representation.IsValid() || EntityIndex < 0 || EntityGeneration < 0)
	{
		return false;
	}
	const bustle::client::EntityView* View = Representation->Layer.mirror().find(
		bustle::client::EntityId{static_cast<uint32>(EntityIndex), static_cast<uint32>(EntityGeneration)});
	return View != nullptr && View->corpse;
}

uint64 UBustleWorldSubsystem::RegisterPoolActor(AActor* Actor)
{
	return static_cast<uint64>(PoolActors.Add(Actor)) + 1;
}

AActor* UBustleWorldSubsystem::GetPoolActor(uint64 Handle) const
{
	return Handle >= 1 && Handle <= static_cast<uint64>(PoolActors.Num()) ? PoolActors[Handle - 1].Get() : nullptr;
}

void UBustleWorldSubsystem::ForgetPoolActor(uint64 Handle)
{
	if (Handle >= 1 && Handle <= static_cast<uint64>(PoolActors.Num()))
	{
		PoolActors[Handle - 1] = nullptr;  // handles stay stable; the slot is not reused
	}
}

AActor* UBustleWorldSubsystem::GetOrSpawnInstanceHost()
{
	if (IsValid(InstanceHost))
	{
		return InstanceHost;
	}
	UWorld* World = GetWorld();
	if (World == nullptr || !bBegunPlay)
	{
		return nullptr;
	}
	FActorSpawnParameters Params;
	Params.Name = MakeUniqueObjectName(World->GetCurrentLevel(), AActor::StaticClass(), TEXT("BustleInstances"));
	Params.ObjectFlags |= RF_Transient;
	Params.SpawnCollisionHandlingOverride = ESpawnActorCollisionHandlingMethod::AlwaysSpawn;
	InstanceHost = World->SpawnActor<AActor>(AActor::StaticClass(), FTransform::Identity, Params);
	if (InstanceHost != nullptr && InstanceHost->GetRootComponent() == nullptr)
	{
		USceneComponent* Root = NewObject<USceneComponent>(InstanceHost, TEXT("Root"), RF_Transient);
		InstanceHost->SetRootComponent(Root);
		Root->RegisterComponent();
	}
	return InstanceHost;
}

void UBustleWorldSubsystem::RegisterInstanceComponent(UInstancedStaticMeshComponent* Component)
{
	InstanceComponents.Add(Component);
}

void UBustleWorldSubsystem::KeepLoaded(UObject* Asset)
{
	LoadedAssets.AddUnique(Asset);
}

void UBustleWorldSubsystem::HandleWelcome()
{
	const FBustleInboundEvent* Welcome = Client.IsValid() ? Client->GetWelcome() : nullptr;
	if (Welcome == nullptr)
	{
		return;
	}
	DestroyRepresentation();
	Representation = MakeShared<FBustleRepresentation>(*this, Welcome->Welcome);
}

bool UBustleWorldSubsystem::GetCameraView(FVector& Location, FRotator& Rotation) const
{
	const UWorld* World = GetWorld();
	const APlayerController* PC = World != nullptr ? World->GetFirstPlayerController() : nullptr;
	if (PC == nullptr || PC->PlayerCameraManager == nullptr)
	{
		return false;
	}
	Location = PC->PlayerCameraManager->GetCameraLocation();
	Rotation = PC->PlayerCameraManager->GetCameraRotation();
	return true;
}

void UBustleWorldSubsystem::Subscribe(int64 NowUs)
{
	FVector Location;
	FRotator Rotation;
	if (!Representation.IsValid() || !GetCameraView(Location, Rotation))
	{
		return;  // no camera yet: subscribing without observers would ask for the whole city
	}
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	bustle::client::SubscribeParams Params;
	Params.observers.push_back(BustleUnreal::ToObserver(Location, Rotation, Settings->WorldOriginCm,
		Settings->ObserverRadiusMetres));
	Params.budgets = BustleSettingsSdk::MakeBudgets(*Settings);
	Params.motion_tolerance_mm = static_cast<uint16>(FMath::Clamp(Settings->MotionToleranceMm, 0, 1000));
	SubscribeRequestId = Client->NextRequestId();
	const bustle::client::Frame Frame = bustle::client::build_subscribe(SubscribeRequestId, Params);
	Client->SendFrame(TArray<uint8>(Frame.data(), static_cast<int32>(Frame.size())));
	Representation->Pacer.sent(Params.observers.front(), NowUs);
	bSubscribed = true;
	bHaveBaseline = false;
}

void UBustleWorldSubsystem::UpdateInterest(int64 NowUs)
{
	FVector Location;
	FRotator Rotation;
	if (!GetCameraView(Location, Rotation))
	{
		return;
	}
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	const bustle::client::InterestObserver Observer =
		BustleUnreal::ToObserver(Location, Rotation, Settings->WorldOriginCm, Settings->ObserverRadiusMetres);
	if (!Representation->Pacer.due(Observer, NowUs))
	{
		return;
	}
	bustle::client::UpdateInterestParams Params;
	Params.observers.push_back(Observer);
	Params.budgets = BustleSettingsSdk::MakeBudgets(*Settings);
	// The answer carries nothing the client needs; request id 0 is not
	// possible for UpdateInterest, so a fresh id is sent and its reply ignored.
	const bustle::client::Frame Frame = bustle::client::build_update_interest(Client->NextRequestId(), Params);
	Client->SendFrame(TArray<uint8>(Frame.data(), static_cast<int32>(Frame.size())));
	Representation->Pacer.sent(Observer, NowUs);
}

void UBustleWorldSubsystem::ReportLeases(int64 NowUs)
{
	const double Interval = GetDefault<UBustleSettings>()->LeaseReportIntervalSeconds;
	if (Representation->Layer.queued_leases() == 0 || NowUs - LastLeaseReportUs < static_cast<int64>(Interval * 1e6))
	{
		return;
	}
	LastLeaseReportUs = NowUs;
	// Batches of at most kLeaseEntriesMax; request id 0: no answer wanted.
	while (Representation->Layer.queued_leases() > 0)
	{
		const std::vector<bustle::client::Lease> Leases = Representation->Layer.take_leases();
		const bustle::client::Frame Frame = bustle::client::build_lease_report(0, Leases);
		Client->SendFrame(TArray<uint8>(Frame.data(), static_cast<int32>(Frame.size())));
	}
}

void UBustleWorldSubsystem::Tick(float DeltaTime)
{
	Super::Tick(DeltaTime);
	TRACE_CPUPROFILER_EVENT_SCOPE(Bustle_WorldTick);
	UBustleClientSubsystem* C = Client.Get();
	if (C == nullptr || !bBegunPlay)
	{
		return;
	}

	TArray<TSharedPtr<FBustleInboundEvent>> Events;
	C->TakeEvents(Events);
	{
		SCOPE_CYCLE_COUNTER(STAT_BustleApply);
		CSV_SCOPED_TIMING_STAT(Bustle, Apply);
		TRACE_CPUPROFILER_EVENT_SCOPE(Bustle_Apply);
		for (const TSharedPtr<FBustleInboundEvent>& Event : Events)
		{
			switch (Event->Kind)
			{
			case FBustleInboundEvent::EKind::Welcome:
				HandleWelcome();
				break;
			case FBustleInboundEvent::EKind::Delta:
				if (!Representation.IsValid() || !bSubscribed)
				{
					break;
				}
				// After (re)subscribing, everything before the baseline is stale.
				if (!bHaveBaseline && !Event->Delta.baseline)
				{
					break;
				}
				bHaveBaseline = true;
				{
					const bustle::client::ApplySummary Summary = Representation->Layer.apply(Event->Delta, Event->ReceiveUs);
					if (!Summary.ok())
					{
						UE_LOG(LogBustle, Warning, TEXT("delta %llu: %s"), static_cast<uint64>(Event->Delta.step),
							*BustleUnreal::ToFString(Summary.error));
					}
					for (const bustle::client::EntityId& Dead : Representation->Layer.corpses_learned())
					{
						const bustle::client::EntityView* View = Representation->Layer.mirror().find(Dead);
						OnEntityCorpse.Broadcast(static_cast<int32>(Dead.index), static_cast<int32>(Dead.generation),
							View != nullptr && View->entered_step == Event->Delta.step);
					}
				}
				break;
			case FBustleInboundEvent::EKind::Reply:
				if (Event->Reply.request_id == SubscribeRequestId && !Event->Reply.accepted())
				{
					UE_LOG(LogBustle, Error, TEXT("Subscribe rejected: %s"), *BustleUnreal::ToFString(Event->Reply.message));
				}
				else if (!Event->Reply.accepted())
				{
					UE_LOG(LogBustle, Warning, TEXT("request %u rejected: %s"), Event->Reply.request_id,
						*BustleUnreal::ToFString(Event->Reply.message));
				}
				break;
			case FBustleInboundEvent::EKind::ServerError:
			case FBustleInboundEvent::EKind::Disconnected:
				// Keep what is drawn until the next Welcome rebuilds it.
				bSubscribed = false;
				bHaveBaseline = false;
				break;
			}
		}
	}

	if (!Representation.IsValid())
	{
		return;
	}
	const int64 NowUs = BustleTime::NowUs();
	if (!bSubscribed)
	{
		Subscribe(NowUs);
	}
	else
	{
		UpdateInterest(NowUs);
	}
	{
		SCOPE_CYCLE_COUNTER(STAT_BustleRender);
		CSV_SCOPED_TIMING_STAT(Bustle, Render);
		TRACE_CPUPROFILER_EVENT_SCOPE(Bustle_Render);
		Representation->Layer.render(NowUs);
	}
	if (bHaveBaseline)
	{
		ReportLeases(NowUs);
	}
	CSV_CUSTOM_STAT(Bustle, LiveEntities, GetLiveEntityCount(), ECsvCustomStatOp::Set);
}
