#include "BustleInstancedBackend.h"

#include "BustleLog.h"
#include "BustleSettings.h"
#include "BustleSettingsSdk.h"
#include "BustleUnrealTypes.h"
#include "BustleWorldSubsystem.h"
#include "Components/ActorComponent.h"
#include "Components/InstancedStaticMeshComponent.h"
#include "Components/PrimitiveComponent.h"
#include "Components/SceneComponent.h"
#include "Components/StaticMeshComponent.h"
#include "Engine/EngineTypes.h"
#include "Engine/StaticMesh.h"
#include "Engine/World.h"
#include "GameFramework/Actor.h"
#include "ProfilingDebugging/CpuProfilerTrace.h"
#include "UObject/Class.h"
#include "UObject/Object.h"
#include "UObject/ObjectMacros.h"
#include "UObject/UObjectGlobals.h"

#include <algorithm>

int32 FBustleInstanceBatch::Add(bustle::client::SlotId Slot, const FTransform& Initial)
{
	const bool bNew = !Index.contains(Slot);
	const int32 I = static_cast<int32>(Index.add(Slot));
	if (bNew)
	{
		check(I == Transforms.Num());
		Transforms.Add(Initial);
		bDirty = true;
	}
	return I;
}

void FBustleInstanceBatch::Remove(bustle::client::SlotId Slot)
{
	if (const auto Removal = Index.remove(Slot))
	{
		if (Removal->moved.valid())
		{
			Transforms[Removal->removed_index] = Transforms[Removal->last_index];
			Teleported.AddUnique(static_cast<int32>(Removal->removed_index));
		}
		Transforms.Pop();
		bDirty = true;
	}
}

void FBustleInstanceBatch::Set(bustle::client::SlotId Slot, const FTransform& Transform)
{
	const uint32 I = Index.index_of(Slot);
	if (I != bustle::client::DenseInstanceIndex::kNoIndex)
	{
		Transforms[static_cast<int32>(I)] = Transform;
		bDirty = true;
	}
}

FBustleInstancedBackend::FBustleInstancedBackend(UBustleWorldSubsystem& InOwner, std::vector<std::string> InArchetypes)
	: Owner(InOwner)
	, Archetypes(MoveTemp(InArchetypes))
{
	OriginCm = GetDefault<UBustleSettings>()->WorldOriginCm;
}

FBustleInstancedBackend::~FBustleInstancedBackend() = default;

bool FBustleInstancedBackend::HasAnyMesh()
{
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	return !Settings->DefaultInstancedMesh.IsNull() || Settings->InstancedMeshByArchetype.Num() > 0;
}

bool FBustleInstancedBackend::initialize(bustle::client::LogSink* log)
{
	if (!HasAnyMesh())
	{
		bustle::client::log_to(log, bustle::client::LogLevel::Error, name(),
			"no instanced mesh configured; set DefaultInstancedMesh or InstancedMeshByArchetype in "
			"Project Settings > Plugins > Bustle Client");
		return false;
	}
	return true;
}

void FBustleInstancedBackend::deinitialize()
{
	for (FMeshEntry& Entry : Entries)
	{
		if (UInstancedStaticMeshComponent* Component = Entry.Component.Get())
		{
			Component->ClearInstances();
		}
		if (Entry.Loading.IsValid())
		{
			Entry.Loading->CancelHandle();
		}
	}
	// Components stay (emptied) for the next installation; DestroyComponents() ends them.
	for (FMeshEntry& Entry : Entries)
	{
		Entry.Batch = FBustleInstanceBatch();
		Entry.Loading.Reset();
	}
	EntryBySlot.clear();
}

void FBustleInstancedBackend::DestroyComponents()
{
	// While the world tears down its components go with it.
	const UWorld* World = Owner.GetWorld();
	const bool bTearingDown = World == nullptr || World->bIsTearingDown;
	for (FMeshEntry& Entry : Entries)
	{
		if (UInstancedStaticMeshComponent* Component = Entry.Component.Get())
		{
			Owner.ForgetInstanceComponent(Component);
			if (!bTearingDown)
			{
				Component->DestroyComponent();
			}
		}
	}
	Entries.clear();
	EntryByArchetype.Reset();
	EntryBySlot.clear();
}

int32 FBustleInstancedBackend::EntryFor(std::uint16_t Archetype)
{
	if (const int32* Known = EntryByArchetype.Find(Archetype))
	{
		return *Known;
	}
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	const TSoftObjectPtr<UStaticMesh> Mesh = BustleSettingsSdk::ResolveForArchetype(
		Settings->InstancedMeshByArchetype, Settings->DefaultInstancedMesh, Archetypes, Archetype);
	int32 Found = -1;
	if (!Mesh.IsNull())
	{
		const auto Same = std::find_if(Entries.begin(), Entries.end(), [&Mesh](const FMeshEntry& E)
			{
			return E.Mesh == Mesh;
		});
		if (Same != Entries.end())
		{
			Found = static_cast<int32>(Same - Entries.begin());
		}
		else
		{
			Entries.emplace_back();
			Entries.back().Mesh = Mesh;
			Found = static_cast<int32>(Entries.size()) - 1;
		}
	}
	EntryByArchetype.Add(Archetype, Found);
	return Found;
}

UInstancedStaticMeshComponent* FBustleInstancedBackend::EnsureComponent(FMeshEntry& Entry)
{
	if (UInstancedStaticMeshComponent* Existing = Entry.Component.Get())
	{
		return Existing;
	}
	UStaticMesh* Mesh = Entry.Mesh.Get();
	if (Mesh == nullptr)
	{
		if (!Entry.Loading.IsValid())
		{
			Entry.Loading = Streamable.RequestAsyncLoad(Entry.Mesh.ToSoftObjectPath());
		}
		return nullptr;  // Pending(Loading) until it is in memory
	}
	AActor* Host = Owner.GetOrSpawnInstanceHost();
	if (Host == nullptr)
	{
		return nullptr;
	}
	UInstancedStaticMeshComponent* Component =
		NewObject<UInstancedStaticMeshComponent>(Host, NAME_None, RF_Transient);
	Component->SetStaticMesh(Mesh);
	Component->SetMobility(EComponentMobility::Movable);
	Component->SetCollisionEnabled(ECollisionEnabled::NoCollision);
	Component->SetCanEverAffectNavigation(false);
	Component->bReceivesDecals = false;
	Component->SetupAttachment(Host->GetRootComponent());
	Component->RegisterComponent();
	Host->AddInstanceComponent(Component);
	Owner.RegisterInstanceComponent(Component);
	Entry.Component = Component;
	return Component;
}

bustle::client::ActivationResult FBustleInstancedBackend::activate(bustle::client::SlotId slot,
	bustle::client::EntityId /*id*/, std::uint16_t archetype, bustle::client::RepresentationHint /*hint*/,
	const bustle::client::EntityState& initial)
{
	const int32 EntryIndex = EntryFor(archetype);
	if (EntryIndex < 0)
	{
		return bustle::client::ActivationResult::refused(bustle::client::UnassignedReason::ClassNotLoaded);
	}
	if (EnsureComponent(Entries[EntryIndex]) == nullptr)
	{
		return bustle::client::ActivationResult::pending(bustle::client::UnassignedReason::Loading);
	}
	if (slot.value >= EntryBySlot.size())
	{
		EntryBySlot.resize(static_cast<std::size_t>(slot.value) + 1, -1);
	}
	EntryBySlot[slot.value] = EntryIndex;
	Entries[EntryIndex].Batch.Add(slot, BustleUnreal::ToTransform(initial.pose, OriginCm));
	return bustle::client::ActivationResult::active();
}

void FBustleInstancedBackend::deactivate(bustle::client::SlotId slot, bustle::client::EntityId /*id*/)
{
	if (slot.value < EntryBySlot.size() && EntryBySlot[slot.value] >= 0)
	{
		Entries[EntryBySlot[slot.value]].Batch.Remove(slot);
		EntryBySlot[slot.value] = -1;
	}
}

bool FBustleInstancedBackend::is_instance_active(bustle::client::SlotId slot) const
{
	return slot.value < EntryBySlot.size() && EntryBySlot[slot.value] >= 0;
}

void FBustleInstancedBackend::apply_interpolation(bustle::client::SlotId slot, std::int64_t /*render_time_us*/,
	const bustle::client::RenderPose& pose)
{
	if (slot.value < EntryBySlot.size() && EntryBySlot[slot.value] >= 0)
	{
		Entries[EntryBySlot[slot.value]].Batch.Set(slot, BustleUnreal::ToTransform(pose, OriginCm));
	}
}

void FBustleInstancedBackend::end_frame()
{
	TRACE_CPUPROFILER_EVENT_SCOPE(Bustle_InstancesEndFrame);
	for (FMeshEntry& Entry : Entries)
	{
		UInstancedStaticMeshComponent* Component = Entry.Component.Get();
		FBustleInstanceBatch& Batch = Entry.Batch;
		if (Component == nullptr || !Batch.bDirty)
		{
			continue;
		}
		const int32 Wanted = Batch.Transforms.Num();
		if (Batch.EngineCount > Wanted)
		{
			// Only trailing instances go (swap-remove), highest index first, so
			// no index below Wanted moves under either removal order.
			TArray<int32> Trailing;
			for (int32 I = Batch.EngineCount - 1; I >= Wanted; --I)
			{
				Trailing.Add(I);
			}
			Component->RemoveInstances(Trailing);
		}
		else if (Batch.EngineCount < Wanted)
		{
			TArray<FTransform> Added(Batch.Transforms.GetData() + Batch.EngineCount, Wanted - Batch.EngineCount);
			Component->AddInstances(Added, /*bShouldReturnIndices=*/false, /*bWorldSpace=*/true);
		}
		Batch.EngineCount = Wanted;
		if (Wanted > 0)
		{
			// No teleport: the previous transforms stay, so motion vectors do.
			Component->BatchUpdateInstancesTransforms(0, Batch.Transforms, /*bWorldSpace=*/true,
				/*bMarkRenderStateDirty=*/true, /*bTeleport=*/false);
			for (const int32 I : Batch.Teleported)
			{
				if (I < Wanted)
				{
					Component->UpdateInstanceTransform(I, Batch.Transforms[I], /*bWorldSpace=*/true,
						/*bMarkRenderStateDirty=*/true, /*bTeleport=*/true);
				}
			}
		}
		Batch.Teleported.Reset();
		Batch.bDirty = false;
	}
}
