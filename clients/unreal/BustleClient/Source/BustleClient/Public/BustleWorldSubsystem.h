// UBustleWorldSubsystem: draws the stream in one game world. Per tick it
// takes the decoded frames from UBustleClientSubsystem, applies them to the
// SDK's RepresentationLayer, sends the local player's camera as the observer
// (UpdateInterest, paced by the SDK's InterestPacer), renders (interpolated
// poses into the actor pool, the instanced meshes and the debug markers) and
// reports leases in batches. Every decision is the SDK's; this class and the
// backends behind it only call the engine.
//
// World objects (pooled actors, the instance host actor and its instanced
// mesh components) are UPROPERTYs here, so the GC sees them and they die
// with the world; nothing of this world is kept by the game instance.
#pragma once

#include "CoreMinimal.h"
#include "Subsystems/WorldSubsystem.h"
#include "Templates/SharedPointer.h"
#include "BustleWorldSubsystem.generated.h"

class AActor;
class UInstancedStaticMeshComponent;
class UBustleClientSubsystem;
class FBustleRepresentation;

/** A streamed pedestrian is a corpse (KillPedestrian): EntityIndex/EntityGeneration name its
 *  EntityId; bEnteredDead is true when it arrived already dead (a baseline, a late join, entering
 *  the interest) and false when it died while received. */
DECLARE_DYNAMIC_MULTICAST_DELEGATE_ThreeParams(FBustleCorpseSignature, int32, EntityIndex, int32, EntityGeneration,
	bool, bEnteredDead);

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
	bool IsStreaming() const { return bHaveBaseline; }

	/** Whether the received entity (EntityId index and generation) is a corpse: the SDK's
	 *  EntityView::corpse. False for an entity not received. */
	UFUNCTION(BlueprintPure, Category = "Bustle")
	bool IsEntityCorpse(int32 EntityIndex, int32 EntityGeneration) const;

	/** Fired once per corpse learned from the stream (the SDK's RepresentationLayer::corpses_learned),
	 *  after the Delta that told it was applied. */
	UPROPERTY(BlueprintAssignable, Category = "Bustle")
	FBustleCorpseSignature OnEntityCorpse;

	// --- Plugin-internal: the backends' engine objects -------------------------
	/** Keeps a pooled actor referenced; returns its handle (>= 1). */
	uint64 RegisterPoolActor(AActor* Actor);
	AActor* GetPoolActor(uint64 Handle) const;
	void ForgetPoolActor(uint64 Handle);
	/** The transient actor that owns the instanced mesh components (spawned on first use). */
	AActor* GetOrSpawnInstanceHost();
	void RegisterInstanceComponent(UInstancedStaticMeshComponent* Component);
	/** Keeps a loaded asset (an actor class) alive for as long as this world draws. */
	void KeepLoaded(UObject* Asset);

private:
	void HandleWelcome();
	void Subscribe(int64 NowUs);
	void UpdateInterest(int64 NowUs);
	void ReportLeases(int64 NowUs);
	bool GetCameraView(FVector& Location, FRotator& Rotation) const;
	void DestroyRepresentation();

	UPROPERTY(Transient)
	TArray<TObjectPtr<AActor>> PoolActors;  // handle - 1 -> actor (null after destruction)

	UPROPERTY(Transient)
	TObjectPtr<AActor> InstanceHost;

	UPROPERTY(Transient)
	TArray<TObjectPtr<UInstancedStaticMeshComponent>> InstanceComponents;

	UPROPERTY(Transient)
	TArray<TObjectPtr<UObject>> LoadedAssets;

	TWeakObjectPtr<UBustleClientSubsystem> Client;
	// The SDK layer and the backends (TSharedPtr: no complete type needed here).
	TSharedPtr<FBustleRepresentation> Representation;
	uint32 SubscribeRequestId = 0;
	bool bSubscribed = false;
	bool bHaveBaseline = false;
	bool bBegunPlay = false;
	int64 LastLeaseReportUs = 0;
};
