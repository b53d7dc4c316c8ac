// The SDK side of one world: the StreamSession (connection states, when to
// subscribe, apply, render and report, when to build backends) and the
// engine glue it calls (camera, sending, making and destroying backends,
// events). Backends are built per archetype table, not per Welcome: a
// reconnect to the same world keeps every pooled actor and instance
// component. Member order matters: the session is declared last so it is
// destroyed first, releasing every instance while the backends exist.
#pragma once

#include "CoreMinimal.h"
#include "BustleActorFactory.h"
#include "BustleCustomBackend.h"
#include "BustleInstancedBackend.h"
#include "BustleLogSink.h"
#include "BustleMarkerBackend.h"
#include "BustleSdk.h"
#include "BustleTypes.h"
#include "Containers/Array.h"

#include <array>
#include <memory>
#include <optional>

class UBustleWorldSubsystem;

// What a proxy or listener is told about an entity (archetype name, label from the mirror).
FBustleEntityInfo BustleDescribeEntity(const UBustleWorldSubsystem& Owner, bustle::client::EntityId Id,
	bustle::client::SlotId Slot, std::uint16_t Archetype, bustle::client::RepresentationHint Hint,
	bustle::client::RepresentationHint DrawnAs);

class FBustleRepresentation final : public bustle::client::SessionGlue
{
public:
	explicit FBustleRepresentation(UBustleWorldSubsystem& InOwner);

	bustle::client::StreamSession& GetSession() { return Session; }
	const bustle::client::StreamSession& GetSession() const { return Session; }
	const std::vector<std::string>& GetArchetypes() const { return Archetypes; }
	// The pooled actor drawing a slot (0: none).
	bustle::client::ActorHandle ActorOf(bustle::client::SlotId Slot) const;
	const FBustleActorFactory* GetFactory() const { return Built ? &Built->Factory : nullptr; }
	// Reinstalls every representation's backend (after SetBackendEnabled / SetCustomBackend).
	void InstallBackends();
	// Events the session reported, broadcast by the owner after the session call returned.
	TArray<bustle::client::SessionEvent> QueuedEvents;

	// SessionGlue
	virtual std::optional<bustle::client::InterestObserver> observer() override;
	virtual void send(bustle::client::SessionMessage kind, bustle::client::Frame frame) override;
	virtual void make_backends(bustle::client::RepresentationLayer& layer,
		const bustle::client::WelcomeInfo& welcome) override;
	virtual void destroy_backends() override;
	virtual void on_event(const bustle::client::SessionEvent& event) override;

private:
	// The backends made for one archetype table.
	struct FBuilt
	{
		FBuilt(UBustleWorldSubsystem& Owner, const std::vector<std::string>& Archetypes);
		FBustleActorFactory Factory;
		std::unique_ptr<bustle::client::ActorPoolBackend> Pool;  // null: no actor class configured
		FBustleInstancedBackend Instances;
		FBustleMarkerBackend Markers;
		// Adapters of custom backends, by representation (kept until replaced).
		std::array<std::unique_ptr<FBustleCustomBackend>, 3> Custom;
	};
	bustle::client::RenderBackend* BackendFor(EBustleRepresentation Representation);

	UBustleWorldSubsystem& Owner;
	FBustleLogSink Log;
	std::vector<std::string> Archetypes;
	std::unique_ptr<FBuilt> Built;
	bustle::client::StreamSession Session;  // last: destroyed first
};
