// Project settings of the Bustle client (Project Settings > Plugins > Bustle
// Client, saved to Config/DefaultGame.ini under
// [/Script/BustleClient.BustleSettings]). Defaults are the SDK's defaults
// (taken from the SDK structs in the constructor, not repeated as literals).
#pragma once

#include "CoreMinimal.h"
#include "Engine/DeveloperSettings.h"
#include "UObject/SoftObjectPtr.h"
#include "BustleSettings.generated.h"

class AActor;
class UStaticMesh;

UCLASS(Config = Game, DefaultConfig, meta = (DisplayName = "Bustle Client"))
class BUSTLECLIENT_API UBustleSettings : public UDeveloperSettings
{
	GENERATED_BODY()

public:
	UBustleSettings();

	virtual FName GetCategoryName() const override { return TEXT("Plugins"); }

	// --- Connection -------------------------------------------------------
	/** Connect when a game instance starts (otherwise call UBustleClientSubsystem::Connect). */
	UPROPERTY(Config, EditAnywhere, Category = "Connection")
	bool bAutoConnect = true;

	UPROPERTY(Config, EditAnywhere, Category = "Connection")
	FString Host = TEXT("127.0.0.1");

	UPROPERTY(Config, EditAnywhere, Category = "Connection", meta = (ClampMin = "1", ClampMax = "65535"))
	int32 Port = 7777;

	/** Sent in Hello; empty: none. Viewers need none on a loopback server. */
	UPROPERTY(Config, EditAnywhere, Category = "Connection")
	FString Token;

	UPROPERTY(Config, EditAnywhere, Category = "Connection")
	FString ClientName = TEXT("bustle-unreal");

	/** Seconds before a lost connection is tried again. */
	UPROPERTY(Config, EditAnywhere, Category = "Connection", meta = (ClampMin = "0.5"))
	float ReconnectDelaySeconds = 3.0f;

	/** Decoded frames the worker thread may queue for the game thread before it stops reading (the server then coalesces). */
	UPROPERTY(Config, EditAnywhere, Category = "Connection", meta = (ClampMin = "16"))
	int32 MaxQueuedFrames = 1024;

	// --- Interest and budgets (Subscribe / UpdateInterest) -----------------
	UPROPERTY(Config, EditAnywhere, Category = "Interest", meta = (ClampMin = "1", ClampMax = "100000"))
	float ObserverRadiusMetres;  // SDK default (constructor)

	UPROPERTY(Config, EditAnywhere, Category = "Interest", meta = (ClampMin = "0", ClampMax = "1000"))
	int32 MotionToleranceMm;  // SDK default (constructor)

	UPROPERTY(Config, EditAnywhere, Category = "Interest", meta = (ClampMin = "0", ClampMax = "4096"))
	int32 ActorBudget;  // SDK default (constructor)

	UPROPERTY(Config, EditAnywhere, Category = "Interest", meta = (ClampMin = "0", ClampMax = "65536"))
	int32 InstanceBudget;  // SDK default (constructor)

	UPROPERTY(Config, EditAnywhere, Category = "Interest", meta = (ClampMin = "0", ClampMax = "1048576"))
	int32 MarkerBudget;  // SDK default (constructor)

	/** UpdateInterest never more often than this. */
	UPROPERTY(Config, EditAnywhere, Category = "Interest", meta = (ClampMin = "0.05"))
	float InterestMinIntervalSeconds;  // SDK default (constructor)

	/** Any camera change is sent after this. */
	UPROPERTY(Config, EditAnywhere, Category = "Interest", meta = (ClampMin = "0.1"))
	float InterestMaxIntervalSeconds;  // SDK default (constructor)

	UPROPERTY(Config, EditAnywhere, Category = "Interest", meta = (ClampMin = "0"))
	float InterestMoveThresholdMetres;  // SDK default (constructor)

	UPROPERTY(Config, EditAnywhere, Category = "Interest", meta = (ClampMin = "0"))
	float InterestTurnThresholdDegrees;  // SDK default (constructor)

	/** Leases are reported at most this often (in batches). */
	UPROPERTY(Config, EditAnywhere, Category = "Interest", meta = (ClampMin = "0.05"))
	float LeaseReportIntervalSeconds = 0.25f;

	// --- Interpolation -----------------------------------------------------
	UPROPERTY(Config, EditAnywhere, Category = "Interpolation", meta = (ClampMin = "0"))
	float InterpolationDelayMs;  // SDK default (constructor); the SDK uses at least 1.5 server steps

	UPROPERTY(Config, EditAnywhere, Category = "Interpolation", meta = (ClampMin = "0"))
	float ExtrapolationMaxMs;  // SDK default (constructor)

	UPROPERTY(Config, EditAnywhere, Category = "Interpolation", meta = (ClampMin = "2", ClampMax = "1024"))
	int32 SamplesPerSlot;  // SDK default (constructor)

	// --- Actor pools (Actor hint) -------------------------------------------
	/** Actor class per archetype name or prefix ("pedestrian", "vehicle.sedan"); the most specific prefix wins. */
	UPROPERTY(Config, EditAnywhere, Category = "Actors")
	TMap<FName, TSoftClassPtr<AActor>> ActorClassByArchetype;

	/** Used when no entry of ActorClassByArchetype matches. None: Actor hints fall back to instances, then markers. */
	UPROPERTY(Config, EditAnywhere, Category = "Actors")
	TSoftClassPtr<AActor> DefaultActorClass;

	UPROPERTY(Config, EditAnywhere, Category = "Actors", meta = (ClampMin = "0"))
	int32 DefaultPoolSize;  // SDK default (constructor)

	UPROPERTY(Config, EditAnywhere, Category = "Actors", meta = (ClampMin = "1"))
	int32 MaxPoolSize;  // SDK default (constructor)

	/** Up-front pool size per archetype name or prefix; listed archetypes are pre-warmed. */
	UPROPERTY(Config, EditAnywhere, Category = "Actors")
	TMap<FName, int32> PoolSizeByArchetype;

	UPROPERTY(Config, EditAnywhere, Category = "Actors")
	TMap<FName, int32> MaxPoolSizeByArchetype;

	/**
	 * Actors spawned per frame at most (pre-warm and growth); beyond it an entity
	 * waits a frame (the previous representation stays). 0: unbounded. A
	 * SpawnActor costs ~0.3 ms; 4 keeps spawning near Mass's 1.5 ms per frame.
	 */
	UPROPERTY(Config, EditAnywhere, Category = "Actors", meta = (ClampMin = "0"))
	int32 MaxActorSpawnsPerFrame = 4;

	/** Turn collision on for actors while they draw an entity (always off while parked). */
	UPROPERTY(Config, EditAnywhere, Category = "Actors")
	bool bActorCollision = false;

	/** One log line per pool spawn, growth, wait, reuse and release (LogBustle, VeryVerbose). */
	UPROPERTY(Config, EditAnywhere, Category = "Actors")
	bool bPoolTrace = false;

	// --- Instanced meshes (Instanced hint) ---------------------------------
	UPROPERTY(Config, EditAnywhere, Category = "Instances")
	TMap<FName, TSoftObjectPtr<UStaticMesh>> InstancedMeshByArchetype;

	/** None: Instanced hints fall back to markers. */
	UPROPERTY(Config, EditAnywhere, Category = "Instances")
	TSoftObjectPtr<UStaticMesh> DefaultInstancedMesh;

	// --- Markers (Marker hint, debug) ---------------------------------------
	/** Draw Marker hints as debug points coloured by control policy (development builds). */
	UPROPERTY(Config, EditAnywhere, Category = "Markers")
	bool bDrawMarkers = true;

	UPROPERTY(Config, EditAnywhere, Category = "Markers", meta = (ClampMin = "1"))
	float MarkerSize = 8.0f;

	// --- World -------------------------------------------------------------
	/** Unreal location (cm) of Bustle's origin. Bustle is metres, +x east, +y north; Unreal Y = -y. */
	UPROPERTY(Config, EditAnywhere, Category = "World")
	FVector WorldOriginCm = FVector::ZeroVector;
};
