// The engine half of the SDK's actor pool (bustle::client::ActorFactory).
// The pool (ActorPoolBackend) decides when to spawn, hand out, park and
// destroy; this class only does it:
//   spawn_actor    SpawnActor of the archetype's class, parked at once (0 when
//                  SpawnActor fails: the pool retries next frame)
//   park_actor     hidden, collision off, tick off
//   activate_actor teleported (ResetPhysics) to the initial pose, then shown
//   set_actor_pose moved to the interpolated pose
//   destroy_actor  Destroy (only when the pool ends)
// Actor handles are indices into UBustleWorldSubsystem::PoolActors (a
// UPROPERTY), so the GC sees every pooled actor.
#pragma once

#include "CoreMinimal.h"
#include "BustleSdk.h"
#include "UObject/SoftObjectPtr.h"

#include <string>
#include <vector>

class AActor;
class UBustleWorldSubsystem;

class FBustleActorFactory final : public bustle::client::ActorFactory
{
public:
	// `Archetypes`: the Welcome's archetype names (classes are looked up by name).
	FBustleActorFactory(UBustleWorldSubsystem& InOwner, std::vector<std::string> InArchetypes);

	// Whether any actor class is configured at all (otherwise the Actor hint
	// is not routed to the pool).
	static bool HasAnyActorClass();

	virtual bustle::client::ActorHandle spawn_actor(std::uint16_t archetype) override;
	virtual void activate_actor(bustle::client::ActorHandle actor, bustle::client::SlotId slot,
		bustle::client::EntityId id, const bustle::client::EntityState& initial) override;
	virtual void park_actor(bustle::client::ActorHandle actor) override;
	virtual void set_actor_pose(bustle::client::ActorHandle actor, std::int64_t render_time_us,
		const bustle::client::RenderPose& pose) override;
	virtual void destroy_actor(bustle::client::ActorHandle actor) override;

private:
	UClass* ResolveClass(std::uint16_t Archetype);

	UBustleWorldSubsystem& Owner;
	std::vector<std::string> Archetypes;
	TMap<uint16, TWeakObjectPtr<UClass>> ClassByArchetype;  // resolved once per archetype; kept alive by Owner.KeepLoaded
	FVector OriginCm = FVector::ZeroVector;
	bool bCollision = false;
};
