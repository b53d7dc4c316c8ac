// Blueprint-visible types of the plugin's API: an entity's id, how it is
// drawn, and what a proxy actor or a listener learns about it. Engine types
// only: no SDK type crosses a UObject boundary.
#pragma once

#include "CoreMinimal.h"
#include "BustleTypes.generated.h"

/** A Bustle entity (the server's EntityId: index and generation). */
USTRUCT(BlueprintType)
struct BUSTLECLIENT_API FBustleEntityId
{
	GENERATED_BODY()

	UPROPERTY(BlueprintReadOnly, Category = "Bustle")
	int32 Index = -1;

	UPROPERTY(BlueprintReadOnly, Category = "Bustle")
	int32 Generation = 0;

	bool IsValid() const { return Index >= 0; }
	bool operator==(const FBustleEntityId& Other) const
	{
		return Index == Other.Index && Generation == Other.Generation;
	}
};

inline uint32 GetTypeHash(const FBustleEntityId& Id)
{
	return HashCombine(::GetTypeHash(Id.Index), ::GetTypeHash(Id.Generation));
}

/** How an entity is drawn (the server's representation hint, or the backend that draws it). */
UENUM(BlueprintType)
enum class EBustleRepresentation : uint8
{
	Actor = 0,
	Instanced = 1,
	Marker = 2,
	None = 3,
};

/** What a proxy actor or a listener learns about an entity when it is drawn. */
USTRUCT(BlueprintType)
struct BUSTLECLIENT_API FBustleEntityInfo
{
	GENERATED_BODY()

	UPROPERTY(BlueprintReadOnly, Category = "Bustle")
	FBustleEntityId Id;

	/** Stable while the entity lives (the SDK's SlotId). */
	UPROPERTY(BlueprintReadOnly, Category = "Bustle")
	int32 Slot = -1;

	/** The Welcome's archetype name ("pedestrian.harbour"). */
	UPROPERTY(BlueprintReadOnly, Category = "Bustle")
	FName Archetype;

	/** The server's label for the entity; empty when it has none. */
	UPROPERTY(BlueprintReadOnly, Category = "Bustle")
	FString Label;

	/** The server's hint for it. */
	UPROPERTY(BlueprintReadOnly, Category = "Bustle")
	EBustleRepresentation Hint = EBustleRepresentation::Actor;

	/** The backend that draws it now (None: nothing). */
	UPROPERTY(BlueprintReadOnly, Category = "Bustle")
	EBustleRepresentation DrawnAs = EBustleRepresentation::None;
};
