#include "BustleWorldSubsystem.h"

#include "BustleClientSubsystem.h"
#include "BustleInbound.h"
#include "BustleLog.h"
#include "BustleRenderBackend.h"
#include "BustleRepresentation.h"
#include "BustleSettings.h"
#include "BustleSettingsSdk.h"
#include "BustleUnrealTypes.h"
#include "Camera/PlayerCameraManager.h"
#include "Components/ActorComponent.h"
#include "Components/InstancedStaticMeshComponent.h"
#include "Components/SceneComponent.h"
#include "Engine/EngineBaseTypes.h"
#include "Engine/EngineTypes.h"
#include "Engine/GameInstance.h"
#include "Engine/World.h"
#include "GameFramework/Actor.h"
#include "GameFramework/PlayerController.h"
#include "Misc/CoreMisc.h"
#include "Misc/CoreMiscDefines.h"
#include "ProfilingDebugging/CpuProfilerTrace.h"
#include "ProfilingDebugging/CsvProfiler.h"
#include "Stats/Stats.h"
#include "Subsystems/Subsystem.h"
#include "Templates/Casts.h"
#include "UObject/Class.h"
#include "UObject/Object.h"
#include "UObject/Package.h"
#include "UObject/UObjectGlobals.h"

CSV_DEFINE_CATEGORY(Bustle, true);

DECLARE_STATS_GROUP(TEXT("Bustle"), STATGROUP_Bustle, STATCAT_Advanced);
DECLARE_CYCLE_STAT(TEXT("Bustle apply"), STAT_BustleApply, STATGROUP_Bustle);
DECLARE_CYCLE_STAT(TEXT("Bustle render"), STAT_BustleRender, STATGROUP_Bustle);

namespace bc = bustle::client;

// EBustleRepresentation mirrors the SDK's RepresentationHint value for value.
static_assert(static_cast<uint8>(EBustleRepresentation::Actor) == static_cast<uint8>(bc::RepresentationHint::Actor));
static_assert(static_cast<uint8>(EBustleRepresentation::Instanced) ==
			  static_cast<uint8>(bc::RepresentationHint::Instanced));
static_assert(static_cast<uint8>(EBustleRepresentation::Marker) == static_cast<uint8>(bc::RepresentationHint::Marker));
static_assert(static_cast<uint8>(EBustleRepresentation::None) == static_cast<uint8>(bc::RepresentationHint::None));

namespace
{
	constexpr EBustleRepresentation kDrawn[] = {
		EBustleRepresentation::Actor, EBustleRepresentation::Instanced, EBustleRepresentation::Marker};

	bc::NetMode ToNetMode(const UWorld& World)
	{
		if (IsRunningDedicatedServer())
		{
			return bc::NetMode::DedicatedServer;
		}
		switch (World.GetNetMode())
		{
		case NM_DedicatedServer:
			return bc::NetMode::DedicatedServer;
		case NM_ListenServer:
			return bc::NetMode::ListenServer;
		case NM_Client:
			return bc::NetMode::Client;
		default:
			return bc::NetMode::Standalone;
		}
	}
}

// --- FBustleRepresentation: the SDK session and its engine glue --------------

FBustleEntityInfo BustleDescribeEntity(const UBustleWorldSubsystem& Owner, bc::EntityId Id, bc::SlotId Slot,
	std::uint16_t Archetype, bc::RepresentationHint Hint, bc::RepresentationHint DrawnAs)
{
	FBustleEntityInfo Info;
	Info.Id = BustleUnreal::ToEntityId(Id);
	Info.Slot = Slot.valid() ? static_cast<int32>(Slot.value) : -1;
	Info.Hint = BustleUnreal::ToRepresentation(Hint);
	Info.DrawnAs = BustleUnreal::ToRepresentation(DrawnAs);
	if (const FBustleRepresentation* Rep = Owner.GetRepresentation())
	{
		if (Archetype < Rep->GetArchetypes().size())
		{
			Info.Archetype = FName(*BustleUnreal::ToFString(Rep->GetArchetypes()[Archetype]));
		}
		if (const bc::RepresentationLayer* Layer = Rep->GetSession().layer())
		{
			if (const bc::EntityView* View = Layer->mirror().find(Id))
			{
				Info.Label = BustleUnreal::ToFString(View->label);
			}
		}
	}
	return Info;
}

FBustleRepresentation::FBuilt::FBuilt(UBustleWorldSubsystem& Owner, const std::vector<std::string>& Archetypes)
	: Factory(Owner, Archetypes)
	, Instances(Owner, Archetypes)
	, Markers(Owner)
{
	if (FBustleActorFactory::HasAnyActorClass())
	{
		Pool = std::make_unique<bc::ActorPoolBackend>(
			Factory, BustleSettingsSdk::MakeActorPoolConfig(*GetDefault<UBustleSettings>(), Archetypes));
	}
}

FBustleRepresentation::FBustleRepresentation(UBustleWorldSubsystem& InOwner)
	: Owner(InOwner)
	, Session(BustleSettingsSdk::MakeSessionConfig(*GetDefault<UBustleSettings>()), *this, &Log)
{
}

bc::ActorHandle FBustleRepresentation::ActorOf(bc::SlotId Slot) const
{
	return Built != nullptr && Built->Pool != nullptr ? Built->Pool->actor_of(Slot) : 0;
}

std::optional<bc::InterestObserver> FBustleRepresentation::observer()
{
	FVector Location;
	FRotator Rotation;
	if (!Owner.GetCameraView(Location, Rotation))
	{
		return std::nullopt;
	}
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	return BustleUnreal::ToObserver(Location, Rotation, Settings->WorldOriginCm, Settings->ObserverRadiusMetres);
}

void FBustleRepresentation::send(bc::SessionMessage /*kind*/, bc::Frame frame)
{
	if (UBustleClientSubsystem* Client = Owner.GetClient())
	{
		Client->SendFrame(TArray<uint8>(frame.data(), static_cast<int32>(frame.size())));
	}
}

void FBustleRepresentation::make_backends(bc::RepresentationLayer& /*layer*/, const bc::WelcomeInfo& welcome)
{
	Archetypes = welcome.archetypes;
	Built = std::make_unique<FBuilt>(Owner, Archetypes);
	InstallBackends();
}

void FBustleRepresentation::destroy_backends()
{
	// No layer holds them any more (the session destroyed it first).
	if (Built != nullptr)
	{
		Built->Instances.DestroyComponents();
		Built.reset();
	}
}

void FBustleRepresentation::on_event(const bc::SessionEvent& event)
{
	QueuedEvents.Add(event);
}

bc::RenderBackend* FBustleRepresentation::BackendFor(EBustleRepresentation Representation)
{
	switch (Representation)
	{
	case EBustleRepresentation::Actor:
		return Built->Pool.get();
	case EBustleRepresentation::Instanced:
		return FBustleInstancedBackend::HasAnyMesh() ? &Built->Instances : nullptr;
	case EBustleRepresentation::Marker:
		return &Built->Markers;
	default:
		return nullptr;
	}
}

void FBustleRepresentation::InstallBackends()
{
	bc::RepresentationLayer* Layer = Session.layer();
	if (Layer == nullptr || Built == nullptr)
	{
		return;
	}
	// A representation without a backend (or whose backend refuses) is drawn
	// by the next coarser one: the SDK's fallback, per entity.
	for (const EBustleRepresentation Representation : kDrawn)
	{
		const int32 I = static_cast<int32>(Representation);
		std::unique_ptr<FBustleCustomBackend> Replaced;  // destroyed after the layer released it
		bc::RenderBackend* Backend = nullptr;
		if (Owner.IsBackendEnabled(Representation))
		{
			const TSharedPtr<IBustleRenderBackend> Custom = Owner.GetCustomBackend(Representation);
			if (Custom.IsValid())
			{
				if (Built->Custom[I] == nullptr || &Built->Custom[I]->Get().Get() != Custom.Get())
				{
					Replaced = std::move(Built->Custom[I]);
					Built->Custom[I] = std::make_unique<FBustleCustomBackend>(Owner, Custom.ToSharedRef());
				}
				Backend = Built->Custom[I].get();
			}
			else
			{
				Replaced = std::move(Built->Custom[I]);
				Backend = BackendFor(Representation);
			}
		}
		const bc::RepresentationHint Hint = BustleUnreal::ToHint(Representation);
		if (Layer->set_backend(Hint, Backend) == bc::InstallStatus::Refused && Backend != nullptr)
		{
			Layer->set_backend(Hint, nullptr);  // refused (logged): the coarser ones draw its entities
		}
	}
}

// --- UBustleWorldSubsystem ----------------------------------------------------

bool UBustleWorldSubsystem::ShouldCreateSubsystem(UObject* Outer) const
{
	if (!Super::ShouldCreateSubsystem(Outer))
	{
		return false;
	}
	// Game and PIE worlds only (no editor preview, inactive or thumbnail
	// worlds), and never a dedicated server: it has nothing to draw.
	const UWorld* World = Cast<UWorld>(Outer);
	return World != nullptr && (World->WorldType == EWorldType::Game || World->WorldType == EWorldType::PIE) &&
		   bc::should_connect(ToNetMode(*World));
}

void UBustleWorldSubsystem::Initialize(FSubsystemCollectionBase& Collection)
{
	Super::Initialize(Collection);
	CustomBackends.SetNum(UE_ARRAY_COUNT(kDrawn));
	EnabledBackends.Init(true, UE_ARRAY_COUNT(kDrawn));
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
		Sdk = MakeShared<FBustleRepresentation>(*this);
		if (const FBustleInboundEvent* Welcome = C->GetWelcome())
		{
			// Connected before this world: subscribe again for a baseline.
			Sdk->GetSession().on_welcome(Welcome->Welcome);
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
	// The session releases every instance, then its backends destroy their
	// actors and components.
	Sdk.Reset();
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

TStatId UBustleWorldSubsystem::GetStatId() const
{
	RETURN_QUICK_DECLARE_CYCLE_STAT(UBustleWorldSubsystem, STATGROUP_Tickables);
}

int32 UBustleWorldSubsystem::GetLiveEntityCount() const
{
	const bc::RepresentationLayer* Layer = Sdk.IsValid() ? Sdk->GetSession().layer() : nullptr;
	return Layer != nullptr ? static_cast<int32>(Layer->mirror().size()) : 0;
}

bool UBustleWorldSubsystem::IsStreaming() const
{
	return Sdk.IsValid() && Sdk->GetSession().state() == bc::SessionState::Streaming;
}

bool UBustleWorldSubsystem::IsEntityCorpse(int32 EntityIndex, int32 EntityGeneration) const
{
	const bc::RepresentationLayer* Layer = Sdk.IsValid() ? Sdk->GetSession().layer() : nullptr;
	if (Layer == nullptr || EntityIndex < 0 || EntityGeneration < 0)
	{
		return false;
	}
	const bc::EntityView* View =
		Layer->mirror().find(bc::EntityId{static_cast<uint32>(EntityIndex), static_cast<uint32>(EntityGeneration)});
	return View != nullptr && View->corpse;
}

AActor* UBustleWorldSubsystem::GetActorForEntity(const FBustleEntityId& Entity) const
{
	const bc::RepresentationLayer* Layer = Sdk.IsValid() ? Sdk->GetSession().layer() : nullptr;
	const bc::EntityView* View = Layer != nullptr && Entity.IsValid()
									 ? Layer->mirror().find(BustleUnreal::ToSdkEntityId(Entity))
									 : nullptr;
	if (View == nullptr)
	{
		return nullptr;
	}
	const std::optional<bc::SlotRepresentation> Slot = Layer->slot(View->slot);
	if (!Slot || Slot->drawn_as != bc::RepresentationHint::Actor)
	{
		return nullptr;
	}
	return GetPoolActor(Sdk->ActorOf(View->slot));
}

bool UBustleWorldSubsystem::GetEntityForActor(const AActor* Actor, FBustleEntityId& OutEntity) const
{
	const FBustleActorFactory* Factory = Sdk.IsValid() ? Sdk->GetFactory() : nullptr;
	if (Actor == nullptr || Factory == nullptr)
	{
		return false;
	}
	const int32 Index = PoolActors.IndexOfByKey(Actor);
	const FBustleEntityInfo* Info = Index != INDEX_NONE ? Factory->EntityOf(static_cast<uint64>(Index) + 1) : nullptr;
	if (Info == nullptr)
	{
		return false;
	}
	OutEntity = Info->Id;
	return true;
}

bool UBustleWorldSubsystem::GetEntityInfo(const FBustleEntityId& Entity, FBustleEntityInfo& OutInfo) const
{
	const bc::RepresentationLayer* Layer = Sdk.IsValid() ? Sdk->GetSession().layer() : nullptr;
	const bc::EntityView* View = Layer != nullptr && Entity.IsValid()
									 ? Layer->mirror().find(BustleUnreal::ToSdkEntityId(Entity))
									 : nullptr;
	if (View == nullptr)
	{
		return false;
	}
	const std::optional<bc::SlotRepresentation> Slot = Layer->slot(View->slot);
	OutInfo = BustleDescribeEntity(*this, View->id, View->slot, View->archetype, View->representation,
		Slot ? Slot->drawn_as : bc::RepresentationHint::None);
	return true;
}

void UBustleWorldSubsystem::SetBackendEnabled(EBustleRepresentation Representation, bool bEnabled)
{
	const int32 I = static_cast<int32>(Representation);
	if (!EnabledBackends.IsValidIndex(I))
	{
		return;
	}
	EnabledBackends[I] = bEnabled;
	if (Sdk.IsValid())
	{
		Sdk->InstallBackends();
		BroadcastQueuedEvents();
	}
}

void UBustleWorldSubsystem::SetCustomBackend(EBustleRepresentation Representation,
	TSharedPtr<IBustleRenderBackend> Backend)
{
	const int32 I = static_cast<int32>(Representation);
	if (!CustomBackends.IsValidIndex(I))
	{
		return;
	}
	CustomBackends[I] = MoveTemp(Backend);
	if (Sdk.IsValid())
	{
		Sdk->InstallBackends();
		BroadcastQueuedEvents();
	}
}

TSharedPtr<IBustleRenderBackend> UBustleWorldSubsystem::GetCustomBackend(EBustleRepresentation Representation) const
{
	const int32 I = static_cast<int32>(Representation);
	return CustomBackends.IsValidIndex(I) ? CustomBackends[I] : nullptr;
}

bool UBustleWorldSubsystem::IsBackendEnabled(EBustleRepresentation Representation) const
{
	const int32 I = static_cast<int32>(Representation);
	return EnabledBackends.IsValidIndex(I) && EnabledBackends[I];
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

void UBustleWorldSubsystem::ForgetInstanceComponent(UInstancedStaticMeshComponent* Component)
{
	InstanceComponents.RemoveSingleSwap(Component);
}

void UBustleWorldSubsystem::KeepLoaded(UObject* Asset)
{
	LoadedAssets.AddUnique(Asset);
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

void UBustleWorldSubsystem::BroadcastQueuedEvents()
{
	// Broadcast after the SDK call returned: a handler may call back into
	// this subsystem (SetBackendEnabled, Disconnect) without re-entering the layer.
	TArray<bc::SessionEvent> Events = MoveTemp(Sdk->QueuedEvents);
	Sdk->QueuedEvents.Reset();
	for (const bc::SessionEvent& Event : Events)
	{
		if (Event.kind == bc::SessionEventKind::EntityRepresented)
		{
			FBustleEntityInfo Info;
			if (!GetEntityInfo(BustleUnreal::ToEntityId(Event.id), Info))
			{
				continue;  // gone again within the same call
			}
			AActor* Actor = Event.drawn_as == bc::RepresentationHint::Actor
								? GetPoolActor(Sdk->ActorOf(Event.slot))
								: nullptr;
			OnEntityRepresented.Broadcast(Info, Actor);
		}
		else if (Event.kind == bc::SessionEventKind::EntityReleased)
		{
			OnEntityReleased.Broadcast(BustleUnreal::ToEntityId(Event.id));
		}
		if (!Sdk.IsValid())
		{
			return;  // a handler ended this world's drawing
		}
	}
}

void UBustleWorldSubsystem::Tick(float DeltaTime)
{
	Super::Tick(DeltaTime);
	TRACE_CPUPROFILER_EVENT_SCOPE(Bustle_WorldTick);
	UBustleClientSubsystem* C = Client.Get();
	if (C == nullptr || !bBegunPlay || !Sdk.IsValid())
	{
		return;
	}
	bc::StreamSession& Session = Sdk->GetSession();
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
			case FBustleInboundEvent::EKind::Connecting:
				Session.on_connecting();
				break;
			case FBustleInboundEvent::EKind::Welcome:
				Session.on_welcome(Event->Welcome);
				break;
			case FBustleInboundEvent::EKind::Delta:
				if (const std::optional<bc::ApplySummary> Summary = Session.on_delta(Event->Delta, Event->ReceiveUs))
				{
					if (!Summary->ok())
					{
						UE_LOG(LogBustle, Warning, TEXT("delta %llu: %s"), static_cast<uint64>(Event->Delta.step),
							*BustleUnreal::ToFString(Summary->error));
					}
					const bc::RepresentationLayer& Layer = *Session.layer();
					for (const bc::EntityId& Dead : Layer.corpses_learned())
					{
						const bc::EntityView* View = Layer.mirror().find(Dead);
						OnEntityCorpse.Broadcast(static_cast<int32>(Dead.index), static_cast<int32>(Dead.generation),
							View != nullptr && View->entered_step == Event->Delta.step);
					}
				}
				break;
			case FBustleInboundEvent::EKind::Reply:
				Session.on_reply(Event->Reply);
				break;
			case FBustleInboundEvent::EKind::ServerError:
				break;  // a Disconnected event follows
			case FBustleInboundEvent::EKind::Disconnected:
				// What is drawn stays until the next baseline replaces it.
				Session.on_disconnected(BustleUnreal::ToStd(Event->Message));
				break;
			}
			if (!Sdk.IsValid())
			{
				return;  // a corpse handler ended this world's drawing
			}
		}
	}
	{
		SCOPE_CYCLE_COUNTER(STAT_BustleRender);
		CSV_SCOPED_TIMING_STAT(Bustle, Render);
		TRACE_CPUPROFILER_EVENT_SCOPE(Bustle_Render);
		Session.tick(BustleTime::NowUs());
	}
	BroadcastQueuedEvents();
	CSV_CUSTOM_STAT(Bustle, LiveEntities, GetLiveEntityCount(), ECsvCustomStatOp::Set);
}
