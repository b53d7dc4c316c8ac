#include "BustleActorFactory.h"

#include "BustleLog.h"
#include "BustleProxy.h"
#include "BustleSettings.h"
#include "BustleSettingsSdk.h"
#include "BustleUnrealTypes.h"
#include "BustleRepresentation.h"
#include "BustleWorldSubsystem.h"
#include "Components/ActorComponent.h"
#include "Engine/EngineBaseTypes.h"
#include "Engine/EngineTypes.h"
#include "Engine/World.h"
#include "GameFramework/Actor.h"
#include "GameFramework/CharacterMovementComponent.h"
#include "GameFramework/Controller.h"
#include "GameFramework/MovementComponent.h"
#include "GameFramework/Pawn.h"
#include "ProfilingDebugging/CpuProfilerTrace.h"
#include "Templates/Casts.h"
#include "UObject/Class.h"
#include "UObject/Object.h"
#include "UObject/ObjectMacros.h"
#include "UObject/UObjectBaseUtility.h"
#include "UObject/SoftObjectPtr.h"

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

UClass* FBustleActorFactory::ResolveClass(std::uint16_t Archetype) const
{
	if (const TWeakObjectPtr<UClass>* Known = ClassByArchetype.Find(Archetype))
	{
		return Known->Get();
	}
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	// The SDK picks the most specific configured name; this only loads it.
	const TSoftClassPtr<AActor> Soft = BustleSettingsSdk::ResolveForArchetype(
		Settings->ActorClassByArchetype, Settings->DefaultActorClass, Archetypes, Archetype);
	// Synchronous load on first use of an archetype: list the classes in the
	// project's always-cook/preload set to keep this off the frame.
	UClass* Class = Soft.IsNull() ? nullptr : Soft.LoadSynchronous();
	if (!Soft.IsNull() && Class == nullptr)
	{
		UE_LOG(LogBustle, Warning, TEXT("actor class %s for archetype %d does not load; drawn as instance or marker"),
			*Soft.ToString(), Archetype);
	}
	if (Class != nullptr)
	{
		Owner.KeepLoaded(Class);
	}
	ClassByArchetype.Add(Archetype, Class);
	return Class;
}

bool FBustleActorFactory::has_actor_class(std::uint16_t archetype) const
{
	return ResolveClass(archetype) != nullptr;
}

bool FBustleActorFactory::is_actor_ready(bustle::client::ActorHandle actor) const
{
	const AActor* Actor = Owner.GetPoolActor(actor);
	if (!IsValid(Actor) || !Actor->HasActorBegunPlay())
	{
		return false;
	}
	return !Actor->Implements<UBustleProxy>() || IBustleProxy::Execute_IsBustleProxyReady(Actor);
}

void FBustleActorFactory::StripMovement(AActor& Actor)
{
	// Bustle moves the actor; anything else moving it fights SetActorLocation.
	if (APawn* Pawn = Cast<APawn>(&Actor))
	{
		if (AController* Controller = Pawn->GetController())
		{
			Pawn->DetachFromControllerPendingDestroy();
			Controller->Destroy();
		}
	}
	Actor.ForEachComponent<UMovementComponent>(false, [](UMovementComponent* Movement)
		{
		Movement->StopMovementImmediately();
		if (UCharacterMovementComponent* Character = Cast<UCharacterMovementComponent>(Movement))
		{
			Character->DisableMovement();
		}
		Movement->SetComponentTickEnabled(false);
		Movement->Deactivate();
	});
}

void FBustleActorFactory::SetTicking(bustle::client::ActorHandle Handle, AActor& Actor, bool bTicking)
{
	Actor.SetActorTickEnabled(bTicking);
	if (const TArray<TWeakObjectPtr<UActorComponent>>* Components = TickingComponents.Find(Handle))
	{
		for (const TWeakObjectPtr<UActorComponent>& Component : *Components)
		{
			if (UActorComponent* C = Component.Get())
			{
				C->SetComponentTickEnabled(bTicking);
			}
		}
	}
}

bustle::client::ActorHandle FBustleActorFactory::spawn_actor(std::uint16_t archetype)
{
	TRACE_CPUPROFILER_EVENT_SCOPE(Bustle_SpawnActor);
	UWorld* World = Owner.GetWorld();
	UClass* Class = ResolveClass(archetype);
	if (World == nullptr || Class == nullptr)
	{
		return 0;
	}
	// Deferred: configured dormant before its components register and BeginPlay runs.
	AActor* Actor = World->SpawnActorDeferred<AActor>(Class, FTransform::Identity, nullptr, nullptr,
		ESpawnActorCollisionHandlingMethod::AlwaysSpawn);
	if (Actor == nullptr)
	{
		UE_LOG(LogBustle, Error, TEXT("SpawnActorDeferred failed for archetype %d (%s)"), archetype, *GetNameSafe(Class));
		return 0;
	}
	Actor->SetFlags(RF_Transient);
	Actor->SetActorHiddenInGame(true);
	Actor->SetActorEnableCollision(false);
	Actor->PrimaryActorTick.bStartWithTickEnabled = false;
	if (APawn* Pawn = Cast<APawn>(Actor))
	{
		Pawn->AutoPossessAI = EAutoPossessAI::Disabled;
		Pawn->AutoPossessPlayer = EAutoReceiveInput::Disabled;
	}
	TArray<TWeakObjectPtr<UActorComponent>> Ticking;
	Actor->ForEachComponent<UActorComponent>(false, [&Ticking](UActorComponent* Component)
		{
		if (Component->PrimaryComponentTick.bCanEverTick && Component->PrimaryComponentTick.bStartWithTickEnabled &&
			!Component->IsA<UMovementComponent>())
		{
			Ticking.Add(Component);
		}
		Component->PrimaryComponentTick.bStartWithTickEnabled = false;
	});
	Actor->FinishSpawning(FTransform::Identity);
	StripMovement(*Actor);
	const bustle::client::ActorHandle Handle = Owner.RegisterPoolActor(Actor);
	TickingComponents.Add(Handle, MoveTemp(Ticking));
	SetTicking(Handle, *Actor, false);
	if (Actor->Implements<UBustleProxy>())
	{
		IBustleProxy::Execute_OnBustlePooled(Actor);
	}
	return Handle;
}

void FBustleActorFactory::park_actor(bustle::client::ActorHandle actor)
{
	AActor* Actor = Owner.GetPoolActor(actor);
	if (Actor == nullptr)
	{
		return;
	}
	Actor->SetActorHiddenInGame(true);
	Actor->SetActorEnableCollision(false);
	SetTicking(actor, *Actor, false);
	if (Active.Remove(actor) > 0 && Actor->Implements<UBustleProxy>())
	{
		IBustleProxy::Execute_OnBustleDeactivated(Actor);
	}
}

void FBustleActorFactory::activate_actor(bustle::client::ActorHandle actor, bustle::client::SlotId slot,
	bustle::client::EntityId id, const bustle::client::EntityState& initial)
{
	AActor* Actor = Owner.GetPoolActor(actor);
	if (Actor == nullptr)
	{
		return;
	}
	// Teleported while hidden, so it never appears where it was parked; shown
	// on its first pose, i.e. once the SDK draws it (it is ready then).
	Actor->SetActorLocationAndRotation(BustleUnreal::ToLocation(initial.pose, OriginCm),
		BustleUnreal::ToRotation(initial.pose), false, nullptr, ETeleportType::ResetPhysics);
	Actor->SetActorEnableCollision(bCollision);
	SetTicking(actor, *Actor, true);
	const FBustleEntityInfo& Info = Active.Add(actor, BustleDescribeEntity(Owner, id, slot, initial.archetype,
														  initial.representation, bustle::client::RepresentationHint::Actor));
	if (Actor->Implements<UBustleProxy>())
	{
		IBustleProxy::Execute_OnBustleActivated(Actor, Info);
	}
}

void FBustleActorFactory::set_actor_pose(bustle::client::ActorHandle actor, std::int64_t /*render_time_us*/,
	const bustle::client::RenderPose& pose)
{
	if (AActor* Actor = Owner.GetPoolActor(actor))
	{
		Actor->SetActorLocationAndRotation(BustleUnreal::ToLocation(pose, OriginCm), BustleUnreal::ToRotation(pose),
			false, nullptr, ETeleportType::None);
		if (Actor->IsHidden())
		{
			Actor->SetActorHiddenInGame(false);
		}
	}
}

void FBustleActorFactory::set_actor_velocity(bustle::client::ActorHandle actor,
	const bustle::client::RenderVelocity& velocity)
{
	AActor* Actor = Owner.GetPoolActor(actor);
	if (Actor != nullptr && Actor->Implements<UBustleProxy>())
	{
		IBustleProxy::Execute_OnBustleVelocity(Actor, BustleUnreal::ToVelocity(velocity));
	}
}

void FBustleActorFactory::set_actor_hint(bustle::client::ActorHandle actor, bustle::client::RepresentationHint hint)
{
	if (FBustleEntityInfo* Info = Active.Find(actor))
	{
		Info->Hint = BustleUnreal::ToRepresentation(hint);
	}
	AActor* Actor = Owner.GetPoolActor(actor);
	if (Actor != nullptr && Actor->Implements<UBustleProxy>())
	{
		IBustleProxy::Execute_OnBustleHintChanged(Actor, BustleUnreal::ToRepresentation(hint));
	}
}

void FBustleActorFactory::destroy_actor(bustle::client::ActorHandle actor)
{
	AActor* Actor = Owner.GetPoolActor(actor);
	Owner.ForgetPoolActor(actor);
	TickingComponents.Remove(actor);
	Active.Remove(actor);
	UWorld* World = Owner.GetWorld();
	// While the world tears down its actors go with it.
	if (IsValid(Actor) && World != nullptr && !World->bIsTearingDown)
	{
		Actor->Destroy();
	}
}
