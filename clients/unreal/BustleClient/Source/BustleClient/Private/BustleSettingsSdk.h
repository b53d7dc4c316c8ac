// UBustleSettings -> SDK configuration structs. Units change here only
// (milliseconds -> microseconds, degrees -> radians); names are resolved to
// Welcome archetype indices by the SDK (engine_glue.hpp).
#pragma once

#include "CoreMinimal.h"
#include "BustleSdk.h"

#include <map>
#include <string>
#include <vector>

class UBustleSettings;

namespace BustleSettingsSdk
{
	bustle::client::RepresentationConfig MakeRepresentationConfig(const UBustleSettings& Settings);
	bustle::client::RepresentationBudgets MakeBudgets(const UBustleSettings& Settings);
	bustle::client::InterestPacerConfig MakeInterestPacerConfig(const UBustleSettings& Settings);
	// Everything the SDK's StreamSession takes: representation, pacing, budgets, leases.
	bustle::client::SessionConfig MakeSessionConfig(const UBustleSettings& Settings);
	// Pool sizes by name resolved against the Welcome's archetype names.
	bustle::client::ActorPoolConfig MakeActorPoolConfig(const UBustleSettings& Settings,
		const std::vector<std::string>& Archetypes);

	// A TMap keyed by archetype name or prefix, for resolve_by_archetype().
	template <class T>
	std::map<std::string, T, std::less<>> ToNameMap(const TMap<FName, T>& ByName)
	{
		std::map<std::string, T, std::less<>> Out;
		for (const TPair<FName, T>& Pair : ByName)
		{
			Out.emplace(std::string(TCHAR_TO_UTF8(*Pair.Key.ToString())), Pair.Value);
		}
		return Out;
	}

	// The value configured for one archetype: the most specific name or
	// prefix of `ByName` (the SDK's lookup), else `Default`.
	template <class T>
	T ResolveForArchetype(const TMap<FName, T>& ByName, const T& Default,
		const std::vector<std::string>& Archetypes, std::uint16_t Archetype)
	{
		const auto Resolved = bustle::client::resolve_by_archetype(Archetypes, ToNameMap(ByName));
		const auto Match = Resolved.find(Archetype);
		return Match != Resolved.end() ? Match->second : Default;
	}
}
