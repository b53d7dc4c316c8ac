#include "BustleActorFactory.h"

#include "BustleLog.h"
#include "BustleSettings.h"
#include "BustleSettingsSdk.h"
#include "BustleUnrealTypes.h"
#include "BustleWorldSubsystem.h"
#include "Engine/World.h"
#include "GameFramework/Actor.h"

FBustleActorFactory::FBustleActorFactory(UBustleWorldSubsystem& InOwner, std::vector<std::string> InArchetypes)
	: Owner(InOwner)
	, Archetypes(MoveTemp(InArchetypes))
{
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	OriginCm = Settings->WorldOriginCm;
	bCollision = Settings->bActorCollision;
}

bool FBustleActorFactory::HasAnyActorClass()
{
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	return !Settings->DefaultActorClass.IsNull() || Settings->ActorClassByArchetype.Num() > 0;
}

UClass* FBustleActorFactory::ResolveClass(std::uint16_t Archetype)
{
	if (const TWeakObjectPtr<UClass>* Known = ClassByArchetype.Find(Archetype))
	{
		if (Known->IsValid())
		{
			return Known->Get();
		}
	}
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	// The SDK picks the most specific configured name; this only loads it.
	const TSoftClassPtr<AActor> Soft = BustleSettingsSdk::ResolveForArchetype(
		Settings->ActorClassByArchetype, Settings->DefaultActorClass, Archetypes, Archetype);
	// Synchronous load on first use of an archetype: list the classes in the
	// project's always-cook/preload set to keep this off the frame.
	UClass* Class = Soft.IsNull() ? AActor::StaticClass() : Soft.LoadSynchronous();
	if (Class == nullptr)
	{
		UE_LOG(LogBustle, Warning, TEXT("actor class %s for archetype %d does not load; a plain actor is used"),
			*Soft.ToString(), Archetype);
		Class = AActor::StaticClass();
	}
	Owner.KeepLoaded(Class);
	ClassByArchetype.Add(Archetype, Class);
	return Class;
}

bustle::client::ActorHandle FBustleActorFactory::spawn_actor(std::uint16_t archetype)
{
	TRACE_CPUPROFILER_EVENT_SCOPE(Bustle_SpawnActor);
	UWorld* World = Owner.GetWorld();
	UClass* Class = ResolveClass(archetype);
	FActorSpawnParameters Params;
	Params.SpawnCollisionHandlingOverride = ESpawnActorCollisionHandlingMethod::AlwaysSpawn;
	Params.ObjectFlags |= RF_Transient;
	AActor* Actor = World != nullptr ? World->SpawnActor<AActor>(Class, FTransform::Identity, Params) : nullptr;
	if (Actor == nullptr)
	{
		UE_LOG(LogBustle, Error, TEXT("SpawnActor failed for archetype %d (%s)"), archetype, *GetNameSafe(Class));
		return 0;
	}
	const bustle::client::ActorHandle Handle = Owner.RegisterPoolActor(Actor);
	park_actor(Handle);
	return Handle;
}

void FBustleActorFactory::park_actor(bustle::client::ActorHandle actor)
{
	if (AActor* Actor = Owner.GetPoolActor(actor))
	{
		Actor->SetActorHiddenInGame(true);
		Actor->SetActorEnableCollision(false);
		Actor->SetActorTickEnabled(false);
	}
}

void FBustleActorFactory::activate_actor(bustle::client::ActorHandle actor, bustle::client::SlotId /*slot*/,
	bustle::client::EntityId /*id*/, const bustle::client::EntityState& initial)
{
	if (AActor* Actor = Owner.GetPoolActor(actor))
	{
		// Teleported before it is shown, so it never appears where it was parked.
		Actor->SetActorLocationAndRotation(BustleUnreal::ToLocation(initial.pose, OriginCm),
			BustleUnreal::ToRotation(initial.pose), false, nullptr, ETeleportType::ResetPhysics);
		Actor->SetActorEnableCollision(bCollision);
		Actor->SetActorTickEnabled(true);
		Actor->SetActorHiddenInGame(false);
	}
}

void FBustleActorFactory::set_actor_pose(bustle::client::ActorHandle actor, std::int64_t /*render_time_us*/,
	const bustle::client::RenderPose& pose)
{
	if (AActor* Actor = Owner.GetPoolActor(actor))
	{
		Actor->SetActorLocationAndRotation(BustleUnreal::ToLocation(pose, OriginCm), BustleUnreal::ToRotation(pose),
			false, nullptr, ETeleportType::None);
	}
}

void FBustleActorFactory::destroy_actor(bustle::client::ActorHandle actor)
{
	AActor* Actor = Owner.GetPoolActor(actor);
	Owner.ForgetPoolActor(actor);
	UWorld* World = Owner.GetWorld();
	// While the world tears down its actors go with it.
	if (IsValid(Actor) && World != nullptr && !World->bIsTearingDown)
	{
		Actor->Destroy();
	}
}
