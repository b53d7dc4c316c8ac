#include "BustleSettings.h"

#include "BustleSettingsSdk.h"
#include "Math/UnrealMathUtility.h"

UBustleSettings::UBustleSettings()
{
	// The contract numbers come from the SDK's defaults, never from literals here.
	const bustle::client::InterestObserver Observer;
	const bustle::client::SubscribeParams Subscribe;
	const bustle::client::RepresentationBudgets Budgets;
	const bustle::client::InterpolationConfig Interpolation;
	const bustle::client::ActorPoolConfig Pool;
	const bustle::client::InterestPacerConfig Pacer;

	ObserverRadiusMetres = static_cast<float>(Observer.radius_m);
	MotionToleranceMm = Subscribe.motion_tolerance_mm;
	ActorBudget = static_cast<int32>(Budgets.actors);
	InstanceBudget = static_cast<int32>(Budgets.instances);
	MarkerBudget = static_cast<int32>(Budgets.markers);
	InterestMinIntervalSeconds = static_cast<float>(Pacer.min_interval_us / 1e6);
	InterestMaxIntervalSeconds = static_cast<float>(Pacer.max_interval_us / 1e6);
	InterestMoveThresholdMetres = static_cast<float>(Pacer.move_threshold_m);
	InterestTurnThresholdDegrees = static_cast<float>(FMath::RadiansToDegrees(Pacer.turn_threshold_rad));
	InterpolationDelayMs = static_cast<float>(Interpolation.interpolation_delay_us / 1000.0);
	ExtrapolationMaxMs = static_cast<float>(Interpolation.extrapolation_max_us / 1000.0);
	SamplesPerSlot = static_cast<int32>(Interpolation.ring_capacity);
	DefaultPoolSize = static_cast<int32>(Pool.default_pool_size);
	MaxPoolSize = static_cast<int32>(Pool.max_pool_size);
}

namespace BustleSettingsSdk
{
	bustle::client::RepresentationConfig MakeRepresentationConfig(const UBustleSettings& Settings)
	{
		bustle::client::RepresentationConfig Config;
		Config.interpolation.interpolation_delay_us = FMath::Max<int64>(0, FMath::RoundToInt64(Settings.InterpolationDelayMs * 1000.0));
		Config.interpolation.extrapolation_max_us = FMath::Max<int64>(0, FMath::RoundToInt64(Settings.ExtrapolationMaxMs * 1000.0));
		Config.interpolation.ring_capacity = static_cast<uint32>(FMath::Max(2, Settings.SamplesPerSlot));
		return Config;
	}

	bustle::client::RepresentationBudgets MakeBudgets(const UBustleSettings& Settings)
	{
		bustle::client::RepresentationBudgets Budgets;
		Budgets.actors = static_cast<uint32>(FMath::Max(0, Settings.ActorBudget));
		Budgets.instances = static_cast<uint32>(FMath::Max(0, Settings.InstanceBudget));
		Budgets.markers = static_cast<uint32>(FMath::Max(0, Settings.MarkerBudget));
		return Budgets;
	}

	bustle::client::InterestPacerConfig MakeInterestPacerConfig(const UBustleSettings& Settings)
	{
		bustle::client::InterestPacerConfig Config;
		Config.min_interval_us = FMath::RoundToInt64(Settings.InterestMinIntervalSeconds * 1e6);
		Config.max_interval_us = FMath::RoundToInt64(Settings.InterestMaxIntervalSeconds * 1e6);
		Config.move_threshold_m = Settings.InterestMoveThresholdMetres;
		Config.turn_threshold_rad = FMath::DegreesToRadians(static_cast<double>(Settings.InterestTurnThresholdDegrees));
		return Config;
	}

	bustle::client::SessionConfig MakeSessionConfig(const UBustleSettings& Settings)
	{
		bustle::client::SessionConfig Config;
		Config.representation = MakeRepresentationConfig(Settings);
		Config.pacer = MakeInterestPacerConfig(Settings);
		Config.budgets = MakeBudgets(Settings);
		Config.motion_tolerance_mm = static_cast<uint16>(FMath::Clamp(Settings.MotionToleranceMm, 0, 1000));
		Config.lease_interval_us = FMath::Max<int64>(0, FMath::RoundToInt64(Settings.LeaseReportIntervalSeconds * 1e6));
		return Config;
	}

	bustle::client::ActorPoolConfig MakeActorPoolConfig(const UBustleSettings& Settings,
		const std::vector<std::string>& Archetypes)
	{
		bustle::client::ActorPoolConfig Config;
		Config.default_pool_size = static_cast<uint32>(FMath::Max(0, Settings.DefaultPoolSize));
		Config.max_pool_size = static_cast<uint32>(FMath::Max(1, Settings.MaxPoolSize));
		Config.trace = Settings.bPoolTrace;
		Config.max_spawns_per_frame = static_cast<uint32>(FMath::Max(0, Settings.MaxActorSpawnsPerFrame));
		for (const auto& [Archetype, Size] : bustle::client::resolve_by_archetype(Archetypes, ToNameMap(Settings.PoolSizeByArchetype)))
		{
			Config.pool_size_by_archetype[Archetype] = static_cast<uint32>(FMath::Max(0, Size));
		}
		for (const auto& [Archetype, Size] : bustle::client::resolve_by_archetype(Archetypes, ToNameMap(Settings.MaxPoolSizeByArchetype)))
		{
			Config.max_pool_size_by_archetype[Archetype] = static_cast<uint32>(FMath::Max(1, Size));
		}
		return Config;
	}
}
