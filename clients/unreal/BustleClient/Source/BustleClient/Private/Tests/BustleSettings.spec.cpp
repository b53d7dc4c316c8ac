// Settings -> SDK configuration (BustleSettingsSdk.h): units, clamping,
// names resolved to archetype indices; and the defaults being the SDK's.
#include "BustleSettings.h"
#include "BustleSettingsSdk.h"
#include "BustleSpecFlags.h"
#include "Misc/ConfigCacheIni.h"

#if WITH_DEV_AUTOMATION_TESTS

BEGIN_DEFINE_SPEC(FBustleSettingsSpec, "Bustle.Unit.Settings", BUSTLE_SPEC_FLAGS)
	UBustleSettings* Settings = nullptr;
END_DEFINE_SPEC(FBustleSettingsSpec)

void FBustleSettingsSpec::Define()
{
	BeforeEach([this]()
	{
		Settings = NewObject<UBustleSettings>(GetTransientPackage(), NAME_None, RF_Transient);
	});
	AfterEach([this]()
	{
		Settings = nullptr;
	});

	It("defaults to the SDK's defaults (unless the project's config overrides them)", [this]()
	{
		if (GConfig->DoesSectionExist(TEXT("/Script/BustleClient.BustleSettings"), GGameIni))
		{
			AddInfo(TEXT("the project configures Bustle settings; defaults not compared"));
			return;
		}
		const bustle::client::RepresentationBudgets Budgets;
		const bustle::client::InterpolationConfig Interpolation;
		const bustle::client::ActorPoolConfig Pool;
		TestEqual(TEXT("actor budget"), Settings->ActorBudget, static_cast<int32>(Budgets.actors));
		TestEqual(TEXT("instance budget"), Settings->InstanceBudget, static_cast<int32>(Budgets.instances));
		TestEqual(TEXT("marker budget"), Settings->MarkerBudget, static_cast<int32>(Budgets.markers));
		TestEqual(TEXT("delay"), BustleSettingsSdk::MakeRepresentationConfig(*Settings).interpolation.interpolation_delay_us,
			Interpolation.interpolation_delay_us);
		TestEqual(TEXT("extrapolation"), BustleSettingsSdk::MakeRepresentationConfig(*Settings).interpolation.extrapolation_max_us,
			Interpolation.extrapolation_max_us);
		TestEqual(TEXT("ring"), Settings->SamplesPerSlot, static_cast<int32>(Interpolation.ring_capacity));
		TestEqual(TEXT("pool size"), Settings->DefaultPoolSize, static_cast<int32>(Pool.default_pool_size));
		TestEqual(TEXT("pool cap"), Settings->MaxPoolSize, static_cast<int32>(Pool.max_pool_size));
	});

	It("converts milliseconds to microseconds and clamps what the SDK cannot take", [this]()
	{
		Settings->InterpolationDelayMs = 150.5f;
		Settings->ExtrapolationMaxMs = -3.0f;
		Settings->SamplesPerSlot = 1;
		const bustle::client::RepresentationConfig Config = BustleSettingsSdk::MakeRepresentationConfig(*Settings);
		TestEqual(TEXT("delay"), Config.interpolation.interpolation_delay_us, static_cast<int64>(150500));
		TestEqual(TEXT("extrapolation"), Config.interpolation.extrapolation_max_us, static_cast<int64>(0));
		TestEqual(TEXT("ring at least 2"), Config.interpolation.ring_capacity, 2u);
		Settings->ActorBudget = -5;
		TestEqual(TEXT("budget"), BustleSettingsSdk::MakeBudgets(*Settings).actors, 0u);
	});

	It("resolves pool sizes by archetype name and prefix to Welcome indices", [this]()
	{
		Settings->PoolSizeByArchetype.Add(TEXT("pedestrian"), 4);
		Settings->PoolSizeByArchetype.Add(TEXT("pedestrian.harbour"), 16);
		Settings->MaxPoolSizeByArchetype.Add(TEXT("vehicle"), 32);
		Settings->MaxActorSpawnsPerFrame = 5;
		const std::vector<std::string> Archetypes = {"pedestrian.hill.smith", "pedestrian.harbour.baker", "vehicle.sedan", "tram"};
		const bustle::client::ActorPoolConfig Pool = BustleSettingsSdk::MakeActorPoolConfig(*Settings, Archetypes);
		TestEqual(TEXT("hill resident"), Pool.pool_size_by_archetype.at(0), 4u);
		TestEqual(TEXT("harbour resident"), Pool.pool_size_by_archetype.at(1), 16u);
		TestEqual(TEXT("sedan cap"), Pool.max_pool_size_by_archetype.at(2), 32u);
		TestFalse(TEXT("tram has no override"), Pool.pool_size_by_archetype.count(3) != 0);
		TestEqual(TEXT("spawn budget"), Pool.max_spawns_per_frame, 5u);
	});
}

#endif  // WITH_DEV_AUTOMATION_TESTS
