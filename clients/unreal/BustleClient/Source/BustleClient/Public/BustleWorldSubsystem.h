// UBustleWorldSubsystem: draws the stream in one game world. Per tick it
// takes the decoded frames from UBustleClientSubsystem and hands them to the
// SDK's StreamSession, which decides what to apply, when to subscribe or
// send the camera (UpdateInterest) and leases, and when the backends are
// built; this class and the backends behind it only call the engine.
//
// World objects (pooled actors, the instance host actor and its instanced
// mesh components) are UPROPERTYs here, so the GC sees them and they die
// with the world; nothing of this world is kept by the game instance.
// Not created for dedicated servers (nothing to draw) nor editor worlds.
#pragma once

#include "CoreMinimal.h"
#include "BustleTypes.h"
#include "Containers/Array.h"
#include "Delegates/DelegateCombinations.h"
#include "Stats/Stats.h"
#include "Subsystems/SubsystemCollection.h"
#include "Subsystems/WorldSubsystem.h"
#include "Templates/SharedPointer.h"
#include "UObject/ObjectPtr.h"
#include "UObject/WeakObjectPtrTemplates.h"
#include "BustleWorldSubsystem.generated.h"

class AActor;
class UObject;
class UWorld;
class IBustleRenderBackend;
class UBustleClientSubsystem;
class UInstancedStaticMeshComponent;
class FBustleRepresentation;

/** A streamed pedestrian is a corpse (KillPedestrian): EntityIndex/EntityGeneration name its
 *  EntityId; bEnteredDead is true when it arrived already dead (a baseline, a late join, entering
 *  the interest) and false when it died while received. */
DECLARE_DYNAMIC_MULTICAST_DELEGATE_ThreeParams(FBustleCorpseSignature, int32, EntityIndex, int32, EntityGeneration,
	bool, bEnteredDead);
/** A backend draws the entity now, or another one than before (Entity.DrawnAs); Actor is its pooled
 *  actor when it is drawn as an actor, else null. */
DECLARE_DYNAMIC_MULTICAST_DELEGATE_TwoParams(FBustleEntityRepresentedSignature, const FBustleEntityInfo&, Entity,
	AActor*, Actor);
/** Nothing draws the entity any more (it left, its hint is None, or every backend refused it). */
DECLARE_DYNAMIC_MULTICAST_DELEGATE_OneParam(FBustleEntityReleasedSignature, const FBustleEntityId&, Entity);

UCLASS(Transient)
class BUSTLECLIENT_API UBustleWorldSubsystem : public UTickableWorldSubsystem
{
	GENERATED_BODY()

public:
	virtual bool ShouldCreateSubsystem(UObject* Outer) const override;
	virtual void Initialize(FSubsystemCollectionBase& Collection) override;
	virtual void Deinitialize() override;
	virtual void OnWorldBeginPlay(UWorld& InWorld) override;
	virtual void Tick(float DeltaTime) override;
	virtual TStatId GetStatId() const override;

	/** Entities received and live in the SDK's mirror. */
	UFUNCTION(BlueprintPure, Category = "Bustle")
	int32 GetLiveEntityCount() const;

	/** Whether a baseline was applied since the last (re)subscription. */
	UFUNCTION(BlueprintPure, Category = "Bustle")
	bool IsStreaming() const;

	/** Whether the received entity (EntityId index and generation) is a corpse: the SDK's
	 *  EntityView::corpse. False for an entity not received. */
	UFUNCTION(BlueprintPure, Category = "Bustle")
	bool IsEntityCorpse(int32 EntityIndex, int32 EntityGeneration) const;

	/** The pooled actor that draws Entity now; null when it is not drawn as an actor. */
	UFUNCTION(BlueprintPure, Category = "Bustle")
	AActor* GetActorForEntity(const FBustleEntityId& Entity) const;

	/** The entity a pooled actor draws now; false when it draws none. */
	UFUNCTION(BlueprintPure, Category = "Bustle")
	bool GetEntityForActor(const AActor* Actor, FBustleEntityId& OutEntity) const;

	/** What is known of a received entity (archetype, label, hint, how it is drawn); false when not received. */
	UFUNCTION(BlueprintPure, Category = "Bustle")
	bool GetEntityInfo(const FBustleEntityId& Entity, FBustleEntityInfo& OutInfo) const;

	/** Switches a representation's backend off (its entities fall back to the next coarser one) or back
	 *  on (the built-in one, or the custom one set for it). Takes effect at once; entities move
	 *  without a gap. */
	UFUNCTION(BlueprintCallable, Category = "Bustle")
	void SetBackendEnabled(EBustleRepresentation Representation, bool bEnabled);

	/** Draws a representation with a project's own backend from now on (null: the built-in one again).
	 *  Kept across reconnects; every entity of it moves to the new backend at once. */
	void SetCustomBackend(EBustleRepresentation Representation, TSharedPtr<IBustleRenderBackend> Backend);

	/** Fired once per corpse learned from the stream (the SDK's RepresentationLayer::corpses_learned),
	 *  after the Delta that told it was applied. */
	UPROPERTY(BlueprintAssignable, Category = "Bustle")
	FBustleCorpseSignature OnEntityCorpse;

	UPROPERTY(BlueprintAssignable, Category = "Bustle")
	FBustleEntityRepresentedSignature OnEntityRepresented;

	UPROPERTY(BlueprintAssignable, Category = "Bustle")
	FBustleEntityReleasedSignature OnEntityReleased;

	// --- Plugin-internal: the backends' engine objects -------------------------
	/** Keeps a pooled actor referenced; returns its handle (>= 1). */
	uint64 RegisterPoolActor(AActor* Actor);
	AActor* GetPoolActor(uint64 Handle) const;
	void ForgetPoolActor(uint64 Handle);
	/** The transient actor that owns the instanced mesh components (spawned on first use). */
	AActor* GetOrSpawnInstanceHost();
	void RegisterInstanceComponent(UInstancedStaticMeshComponent* Component);
	void ForgetInstanceComponent(UInstancedStaticMeshComponent* Component);
	/** Keeps a loaded asset (an actor class) alive for as long as this world draws. */
	void KeepLoaded(UObject* Asset);
	/** The SDK side of this world (null before the first Welcome). */
	const FBustleRepresentation* GetRepresentation() const { return Sdk.Get(); }
	/** The stream's camera: the first local player's view. */
	bool GetCameraView(FVector& Location, FRotator& Rotation) const;
	UBustleClientSubsystem* GetClient() const { return Client.Get(); }
	/** Custom backends set for each representation (by EBustleRepresentation value). */
	TSharedPtr<IBustleRenderBackend> GetCustomBackend(EBustleRepresentation Representation) const;
	bool IsBackendEnabled(EBustleRepresentation Representation) const;

private:
	void BroadcastQueuedEvents();

	UPROPERTY(Transient)
	TArray<TObjectPtr<AActor>> PoolActors;  // handle - 1 -> actor (null after destruction)

	UPROPERTY(Transient)
	TObjectPtr<AActor> InstanceHost;

	UPROPERTY(Transient)
	TArray<TObjectPtr<UInstancedStaticMeshComponent>> InstanceComponents;

	UPROPERTY(Transient)
	TArray<TObjectPtr<UObject>> LoadedAssets;

	TWeakObjectPtr<UBustleClientSubsystem> Client;
	// The SDK session, its layer and the backends (TSharedPtr: no complete type needed here).
	TSharedPtr<FBustleRepresentation> Sdk;
	TArray<TSharedPtr<IBustleRenderBackend>> CustomBackends;  // by EBustleRepresentation value (0..2)
	TArray<bool> EnabledBackends;                             // by EBustleRepresentation value (0..2)
	bool bBegunPlay = false;
};
