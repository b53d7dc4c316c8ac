// Settings -> SDK configuration (BustleSettingsSdk.h): units, clamping,
// names resolved to archetype indices; and the defaults being the SDK's.
#include "BustleSettings.h"
#include "BustleSettingsSdk.h"
#include "BustleSpecFlags.h"
#include "Misc/AutomationTest.h"
#include "Misc/ConfigCacheIni.h"
#include "UObject/Package.h"
#include "UObject/UObjectGlobals.h"

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
		const bustle::client::RepresentationConfig Config = BustleSettingsSdk::MakeRepresentationConfig(*Settings);
		TestEqual(TEXT("delay"), static_cast<int64>(Config.interpolation.interpolation_delay_us),
			static_cast<int64>(Interpolation.interpolation_delay_us));
		TestEqual(TEXT("extrapolation"), static_cast<int64>(Config.interpolation.extrapolation_max_us),
			static_cast<int64>(Interpolation.extrapolation_max_us));
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
		TestEqual(TEXT("delay"), static_cast<int64>(Config.interpolation.interpolation_delay_us), static_cast<int64>(150500));
		TestEqual(TEXT("extrapolation"), static_cast<int64>(Config.interpolation.extrapolation_max_us), static_cast<int64>(0));
		TestEqual(TEXT("ring at least 2"), static_cast<int64>(Config.interpolation.ring_capacity), static_cast<int64>(2));
		Settings->ActorBudget = -5;
		TestEqual(TEXT("budget"), static_cast<int64>(BustleSettingsSdk::MakeBudgets(*Settings).actors), static_cast<int64>(0));
	});

	It("resolves pool sizes by archetype name and prefix to Welcome indices", [this]()
		{
		Settings->PoolSizeByArchetype.Add(TEXT("pedestrian"), 4);
		Settings->PoolSizeByArchetype.Add(TEXT("pedestrian.harbour"), 16);
		Settings->MaxPoolSizeByArchetype.Add(TEXT("vehicle"), 32);
		Settings->MaxActorSpawnsPerFrame = 5;
		const std::vector<std::string> Archetypes = {"pedestrian.hill.smith", "pedestrian.harbour.baker", "vehicle.sedan", "tram"};
		const bustle::client::ActorPoolConfig Pool = BustleSettingsSdk::MakeActorPoolConfig(*Settings, Archetypes);
		TestEqual(TEXT("hill resident"), static_cast<int64>(Pool.pool_size_by_archetype.at(0)), static_cast<int64>(4));
		TestEqual(TEXT("harbour resident"), static_cast<int64>(Pool.pool_size_by_archetype.at(1)), static_cast<int64>(16));
		TestEqual(TEXT("sedan cap"), static_cast<int64>(Pool.max_pool_size_by_archetype.at(2)), static_cast<int64>(32));
		TestFalse(TEXT("tram has no override"), Pool.pool_size_by_archetype.count(3) != 0);
		TestEqual(TEXT("spawn budget"), static_cast<int64>(Pool.max_spawns_per_frame), static_cast<int64>(5));
	});
}

#endif  // WITH_DEV_AUTOMATION_TESTS
