// Everything SDK-side that one world draws with, built per Welcome (the
// archetype table can change between connections). Member order matters:
// the layer is declared last so it is destroyed first, deactivating every
// instance while the backends (and the factory) still exist.
#pragma once

#include "CoreMinimal.h"
#include "BustleActorFactory.h"
#include "BustleInstancedBackend.h"
#include "BustleLogSink.h"
#include "BustleMarkerBackend.h"
#include "BustleSdk.h"

#include <memory>

class UBustleWorldSubsystem;

class FBustleRepresentation
{
public:
	FBustleRepresentation(UBustleWorldSubsystem& Owner, const bustle::client::WelcomeInfo& Welcome);

	FBustleLogSink Log;
	FBustleActorFactory Factory;
	std::unique_ptr<bustle::client::ActorPoolBackend> Pool;  // null: no actor class configured
	FBustleInstancedBackend Instances;
	FBustleMarkerBackend Markers;
	bustle::client::InterestPacer Pacer;
	bustle::client::RepresentationLayer Layer;
};
