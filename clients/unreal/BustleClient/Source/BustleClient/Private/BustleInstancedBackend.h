// The Instanced hint: one UInstancedStaticMeshComponent per archetype mesh
// (plain ISM, not HISM; no collision, no navigation, no decals). The slot ->
// instance index bookkeeping is the SDK's DenseInstanceIndex (swap-remove:
// the last instance moves into a freed index, so only the last instance is
// ever deleted, whatever the engine's own removal order). Poses are written
// into a per-component transform array during the frame and applied once,
// in end_frame(), in one batch per component.
//
// activate(): Refused(ClassNotLoaded) when no mesh is configured for the
// archetype (nor a default): the SDK draws the entity with a marker instead;
// Pending(Loading) while its mesh streams in (the layer retries; the
// previous representation, or a marker as cover, stays visible).
//
// Instances move with bTeleport = false, so the renderer keeps each
// instance's previous transform (motion vectors: no temporal AA ghosting).
// Components live as long as this backend: deinitialize() empties them,
// DestroyComponents() (when the SDK session rebuilds the backends for a new
// archetype table, or the world ends) destroys them, so reconnecting never
// adds components.
#pragma once

#include "CoreMinimal.h"
#include "BustleSdk.h"
#include "Containers/Array.h"
#include "Containers/Map.h"
#include "Engine/StreamableManager.h"
#include "Math/Transform.h"
#include "Templates/SharedPointer.h"
#include "UObject/SoftObjectPtr.h"
#include "UObject/WeakObjectPtrTemplates.h"

#include <string>
#include <vector>

class UBustleWorldSubsystem;
class UInstancedStaticMeshComponent;
class UStaticMesh;

// One component's instances: pure bookkeeping, also used by the specs.
struct FBustleInstanceBatch
{
	bustle::client::DenseInstanceIndex Index;
	TArray<FTransform> Transforms;  // by dense index, what the component should hold
	int32 EngineCount = 0;          // instances the component holds now
	bool bDirty = false;
	// Indices that took another entity's instance this frame (swap-remove):
	// written with teleport, so no motion vector spans two entities.
	TArray<int32> Teleported;

	// The slot's instance index (a retry returns the same one).
	int32 Add(bustle::client::SlotId Slot, const FTransform& Initial);
	// Swap-remove: the last transform moves into the freed index.
	void Remove(bustle::client::SlotId Slot);
	void Set(bustle::client::SlotId Slot, const FTransform& Transform);
};

class FBustleInstancedBackend final : public bustle::client::RenderBackend
{
public:
	FBustleInstancedBackend(UBustleWorldSubsystem& InOwner, std::vector<std::string> InArchetypes);
	virtual ~FBustleInstancedBackend() override;

	// Whether any mesh is configured (otherwise the hint is not routed here).
	static bool HasAnyMesh();

	virtual std::string_view name() const override { return "unreal-ism"; }
	virtual bool initialize(bustle::client::LogSink* log) override;
	virtual void deinitialize() override;
	virtual bustle::client::ActivationResult activate(bustle::client::SlotId slot, bustle::client::EntityId id,
		std::uint16_t archetype, bustle::client::RepresentationHint hint,
		const bustle::client::EntityState& initial) override;
	virtual void deactivate(bustle::client::SlotId slot, bustle::client::EntityId id) override;
	virtual void apply_interpolation(bustle::client::SlotId slot, std::int64_t render_time_us,
		const bustle::client::RenderPose& pose) override;
	virtual bool is_instance_active(bustle::client::SlotId slot) const override;
	virtual void end_frame() override;

	// Destroys every instance component this backend made (the backend ends).
	void DestroyComponents();

private:
	struct FMeshEntry
	{
		TSoftObjectPtr<UStaticMesh> Mesh;
		TWeakObjectPtr<UInstancedStaticMeshComponent> Component;
		FBustleInstanceBatch Batch;
		TSharedPtr<FStreamableHandle> Loading;
	};
	// The mesh entry for an archetype (-1: none configured).
	int32 EntryFor(std::uint16_t Archetype);
	UInstancedStaticMeshComponent* EnsureComponent(FMeshEntry& Entry);

	UBustleWorldSubsystem& Owner;
	std::vector<std::string> Archetypes;
	// One per distinct mesh; a std::vector because entries hold std::vector
	// members, which TArray's bitwise relocation does not promise to keep valid.
	std::vector<FMeshEntry> Entries;
	TMap<uint16, int32> EntryByArchetype;  // resolved once per archetype
	std::vector<int32> EntryBySlot;        // by SlotId::value, -1: none
	FVector OriginCm = FVector::ZeroVector;
	FStreamableManager Streamable;
};
