// The engine half of the SDK's actor pool (bustle::client::ActorFactory).
// The pool (ActorPoolBackend) decides when to spawn, hand out, park and
// destroy; this class only does it:
//   has_actor_class  whether an actor class is configured for the archetype
//                    (and loads): without one the pool refuses the entity and
//                    the SDK draws it with an instance or marker; a bare
//                    AActor (which draws nothing) is never spawned
//   spawn_actor      SpawnActorDeferred of the archetype's class; before
//                    BeginPlay: transient, hidden, no collision, every tick
//                    off, no AI or player auto-possession; after it: movement
//                    components off, a controller detached and destroyed,
//                    IBustleProxy::OnBustlePooled (0 when the spawn fails:
//                    the pool retries next frame)
//   is_actor_ready   begun play and IBustleProxy::IsBustleProxyReady (an
//                    instance or marker stands in until then)
//   activate_actor   teleported (ResetPhysics) to the initial pose, collision
//                    and the ticks it had back on (movement stays off),
//                    IBustleProxy::OnBustleActivated; shown on its first pose
//   park_actor       hidden, collision off, every tick off (skeletal meshes
//                    included), IBustleProxy::OnBustleDeactivated
//   set_actor_pose   moved to the interpolated pose (no teleport)
//   set_actor_velocity / set_actor_hint  IBustleProxy::OnBustleVelocity /
//                    OnBustleHintChanged
//   destroy_actor    Destroy (only when the pool ends)
// Actor handles are indices into UBustleWorldSubsystem::PoolActors (a
// UPROPERTY), so the GC sees every pooled actor.
#pragma once

#include "CoreMinimal.h"
#include "BustleSdk.h"
#include "BustleTypes.h"
#include "Containers/Map.h"
#include "UObject/WeakObjectPtrTemplates.h"

#include <string>
#include <vector>

class AActor;
class UActorComponent;
class UBustleWorldSubsystem;
class UClass;

class FBustleActorFactory final : public bustle::client::ActorFactory
{
public:
	// `Archetypes`: the Welcome's archetype names (classes are looked up by name).
	FBustleActorFactory(UBustleWorldSubsystem& InOwner, std::vector<std::string> InArchetypes);

	// Whether any actor class is configured at all (otherwise no pool is made).
	static bool HasAnyActorClass();

	virtual bool has_actor_class(std::uint16_t archetype) const override;
	virtual bool is_actor_ready(bustle::client::ActorHandle actor) const override;
	virtual bustle::client::ActorHandle spawn_actor(std::uint16_t archetype) override;
	virtual void activate_actor(bustle::client::ActorHandle actor, bustle::client::SlotId slot,
		bustle::client::EntityId id, const bustle::client::EntityState& initial) override;
	virtual void park_actor(bustle::client::ActorHandle actor) override;
	virtual void set_actor_pose(bustle::client::ActorHandle actor, std::int64_t render_time_us,
		const bustle::client::RenderPose& pose) override;
	virtual void set_actor_velocity(bustle::client::ActorHandle actor,
		const bustle::client::RenderVelocity& velocity) override;
	virtual void set_actor_hint(bustle::client::ActorHandle actor, bustle::client::RepresentationHint hint) override;
	virtual void destroy_actor(bustle::client::ActorHandle actor) override;

	// The entity an active pooled actor draws (nullptr: none).
	const FBustleEntityInfo* EntityOf(bustle::client::ActorHandle Actor) const { return Active.Find(Actor); }

private:
	// The configured class of an archetype, loaded; nullptr when none is configured or it does not load.
	UClass* ResolveClass(std::uint16_t Archetype) const;
	static void StripMovement(AActor& Actor);
	void SetTicking(bustle::client::ActorHandle Handle, AActor& Actor, bool bTicking);

	UBustleWorldSubsystem& Owner;
	std::vector<std::string> Archetypes;
	// Resolved once per archetype (null: none); kept alive by Owner.KeepLoaded.
	mutable TMap<uint16, TWeakObjectPtr<UClass>> ClassByArchetype;
	// Per pooled actor: the components that ticked when it was made (restored on activation).
	TMap<uint64, TArray<TWeakObjectPtr<UActorComponent>>> TickingComponents;
	TMap<uint64, FBustleEntityInfo> Active;  // handle -> the entity it draws
	FVector OriginCm = FVector::ZeroVector;
	bool bCollision = false;
};
