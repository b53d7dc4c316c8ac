// The instanced backend's per-component bookkeeping (FBustleInstanceBatch):
// after any sequence of removals every slot's transform sits at the index
// the SDK's DenseInstanceIndex gives it, and only trailing instances need
// deleting. (The index itself is tested in the SDK's ctest suite.)
#include "BustleInstancedBackend.h"
#include "BustleSpecFlags.h"
#include "CoreMinimal.h"
#include "Misc/AutomationTest.h"

#if WITH_DEV_AUTOMATION_TESTS

BEGIN_DEFINE_SPEC(FBustleInstanceBatchSpec, "Bustle.Unit.Instances", BUSTLE_SPEC_FLAGS)
	FBustleInstanceBatch Batch;
	static FTransform At(double X)
	{
		return FTransform(FVector(X, 0.0, 0.0));
	}
	static bustle::client::SlotId Slot(uint32 V)
	{
		return bustle::client::SlotId{V};
	}
END_DEFINE_SPEC(FBustleInstanceBatchSpec)

void FBustleInstanceBatchSpec::Define()
{
	BeforeEach([this]()
		{
		Batch = FBustleInstanceBatch();
		for (uint32 S : {10u, 11u, 12u, 13u})
		{
			Batch.Add(Slot(S), At(S));
		}
	});

	It("gives dense indices in arrival order, and the same index on a retry", [this]()
		{
		TestEqual(TEXT("index of 12"), Batch.Add(Slot(12), At(99.0)), 2);
		TestEqual(TEXT("instances"), Batch.Transforms.Num(), 4);
		TestEqual(TEXT("retry keeps the transform"), Batch.Transforms[2].GetLocation().X, 12.0);
	});

	It("moves the last instance into a removed middle index", [this]()
		{
		Batch.Remove(Slot(11));
		TestEqual(TEXT("instances"), Batch.Transforms.Num(), 3);
		TestEqual(TEXT("13 took index 1"), static_cast<int32>(Batch.Index.index_of(Slot(13))), 1);
		TestEqual(TEXT("its transform moved with it"), Batch.Transforms[1].GetLocation().X, 13.0);
		TestEqual(TEXT("10 untouched"), Batch.Transforms[0].GetLocation().X, 10.0);
		TestEqual(TEXT("12 untouched"), Batch.Transforms[2].GetLocation().X, 12.0);
		// Index 1 now draws another entity: written with teleport, so no motion vector joins them.
		TestEqual(TEXT("teleported indices"), Batch.Teleported.Num(), 1);
		TestEqual(TEXT("index 1 teleports"), Batch.Teleported[0], 1);
	});

	It("teleports nothing when the last instance itself is removed", [this]()
		{
		Batch.Remove(Slot(13));
		TestEqual(TEXT("teleported indices"), Batch.Teleported.Num(), 0);
	});

	It("writes poses to the slot's current index after removals", [this]()
		{
		Batch.Remove(Slot(10));
		Batch.Remove(Slot(12));
		Batch.Set(Slot(13), At(130.0));
		Batch.Set(Slot(11), At(110.0));
		Batch.Set(Slot(12), At(-1.0));  // removed: ignored
		TestEqual(TEXT("instances"), Batch.Transforms.Num(), 2);
		for (int32 I = 0; I < Batch.Transforms.Num(); ++I)
		{
			const uint32 S = Batch.Index.slot_at(static_cast<uint32>(I)).value;
			TestEqual(*FString::Printf(TEXT("instance %d draws slot %u"), I, S),
				Batch.Transforms[I].GetLocation().X, S * 10.0);
		}
	});
}

#endif  // WITH_DEV_AUTOMATION_TESTS
