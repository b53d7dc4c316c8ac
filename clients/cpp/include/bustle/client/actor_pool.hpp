// Actor pool policy: the default backend for the Actor hint. It keeps a pool
// of pre-made actors per archetype and hands one out when an entity is to be
// drawn; the engine side only makes, shows, hides and moves actors
// (ActorFactory), so every decision below is made (and tested) here.
//
// Invariants:
//   1. A pool is created on the first entity of its archetype with its
//      up-front size (default 8); an archetype listed in the overrides is
//      created (pre-warmed) at initialize().
//   2. A pool grows by exactly one actor when every actor is in use, up to
//      its cap (default 256, never below the up-front size).
//   3. At the cap an entity waits, in arrival order, and is activated as soon
//      as an entity of its archetype leaves. Nothing is dropped: every entity
//      either holds an actor or waits, until it leaves.
//   4. A slot holds at most one actor; activate() for a slot that holds one
//      or waits changes nothing (a retry).
//   5. Actors are destroyed only by deinitialize().
//   6. With max_spawns_per_frame N > 0, at most N actors are spawned between
//      two begin_frame() calls (an engine's frame). An activation that needs
//      a spawn beyond it is Pending(Loading), not waiting: the layer retries
//      it next frame. Up-front actors not spawned yet are spawned by later
//      begin_frame() calls within the same bound (pre-warm spread over
//      frames) and count as up-front, not as growth.
//   7. An archetype the factory has no class for (has_actor_class) is
//      refused, never drawn with a stand-in actor; no pool is made for it.
//   8. A slot is active only once its actor is ready (is_actor_ready).
//
// Transitions (per slot):
//   free   --activate(), actor free or pool below cap--> active   (take / grow)
//   free   --activate(), pool at cap-----------------> waiting   (queued)
//   active --deactivate()----------------------------> free     (actor parked; the
//          first waiting slot of the archetype takes it: waiting --> active)
//   waiting --deactivate()---------------------------> free     (leaves the queue)
//
// Trace (ActorPoolConfig::trace): one "pool" Trace line per spawn, growth,
// reuse, wait and release. A pool reaching its cap writes one Warning per
// archetype, naming it and the cap.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "bustle/client/backend.hpp"

namespace bustle::client {

struct ActorPoolConfig {
  std::uint32_t default_pool_size = 8;  // actors made up front per archetype
  std::uint32_t max_pool_size = 256;    // cap per archetype (raised to the up-front size if below)
  // Per-archetype up-front size; listed archetypes are pre-warmed at initialize().
  std::map<std::uint16_t, std::uint32_t> pool_size_by_archetype = {};
  // Per-archetype cap.
  std::map<std::uint16_t, std::uint32_t> max_pool_size_by_archetype = {};
  bool trace = false;  // pool trace lines (LogLevel::Trace, category "pool")
  // Spawns per frame (between begin_frame() calls); 0: unbounded. An engine
  // sets it so that a new archetype's pool does not spawn all its actors in
  // one frame (Mass budgets ~1.5 ms of spawning per frame).
  std::uint32_t max_spawns_per_frame = 0;
};

// An engine-side actor, opaque to the SDK (an index, a pointer cast, an id).
using ActorHandle = std::uint64_t;

// How fast a drawn actor moves, metres per second in Bustle's frame: the
// change of its interpolated pose over render time, so it is exactly the
// motion on screen (an animation blueprint's speed), zero while it holds.
struct RenderVelocity {
  double x_mps = 0.0;
  double y_mps = 0.0;
  double z_mps = 0.0;
  friend bool operator==(const RenderVelocity&, const RenderVelocity&) = default;
};

// What the engine does for the pool. Called only from the pool's methods.
class ActorFactory {
 public:
  virtual ~ActorFactory() = default;
  // Make one actor of `archetype`, hidden and inert (parked). 0 when the
  // engine cannot make one now: pre-warm stops for this frame and the
  // entity that needed it is Pending(ClassNotLoaded), retried; nothing is
  // counted as made.
  virtual ActorHandle spawn_actor(std::uint16_t archetype) = 0;
  // Show it for `id` at the initial state.
  virtual void activate_actor(ActorHandle actor, SlotId slot, EntityId id,
                              const EntityState& initial) = 0;
  // Hide it again (back in the pool).
  virtual void park_actor(ActorHandle actor) = 0;
  virtual void set_actor_pose(ActorHandle actor, std::int64_t render_time_us,
                              const RenderPose& pose) = 0;
  // After set_actor_pose: its velocity (zero on the first pose after activation).
  virtual void set_actor_velocity(ActorHandle /*actor*/, const RenderVelocity& /*velocity*/) {}
  // The server's hint for the entity an actor draws changed while it draws
  // it (e.g. to Instanced: the actor goes once the instance is drawn).
  virtual void set_actor_hint(ActorHandle /*actor*/, RepresentationHint /*hint*/) {}
  // deinitialize(): the pool ends.
  virtual void destroy_actor(ActorHandle actor) = 0;
  // Whether this engine has an actor class for `archetype` at all. False:
  // the pool refuses the entity (Refused(ClassNotLoaded)) and the layer
  // draws it with the next coarser backend, instead of an actor that shows
  // nothing.
  virtual bool has_actor_class(std::uint16_t /*archetype*/) const { return true; }
  // Whether an activated actor is ready to be seen (spawned, begun play,
  // meshes streamed in). Until then the pool reports the slot not active,
  // so the layer keeps the cover (an instance or marker) that stands in.
  virtual bool is_actor_ready(ActorHandle /*actor*/) const { return true; }
};

struct ArchetypePoolStats {
  std::uint32_t size = 0;  // actors made
  std::uint32_t in_use = 0;
  std::uint32_t waiting = 0;  // entities waiting at the cap
  std::uint32_t cap = 0;
  std::uint64_t grown = 0;   // actors made beyond the up-front size
  std::uint64_t reused = 0;  // actors handed to a waiting entity on release
};

class ActorPoolBackend final : public RenderBackend {
 public:
  // `factory` must outlive the backend.
  explicit ActorPoolBackend(ActorFactory& factory, ActorPoolConfig config = {});
  ~ActorPoolBackend() override;

  std::string_view name() const override { return "actor-pool"; }
  bool initialize(LogSink* log) override;
  void deinitialize() override;
  ActivationResult activate(SlotId slot, EntityId id, std::uint16_t archetype,
                            RepresentationHint hint, const EntityState& initial) override;
  void deactivate(SlotId slot, EntityId id) override;
  bool extract_update(const EntityState& state, std::int64_t server_time_us, SlotId slot) override;
  void apply_interpolation(SlotId slot, std::int64_t render_time_us,
                           const RenderPose& pose) override;
  bool is_instance_active(SlotId slot) const override;
  void begin_frame(std::int64_t render_time_us) override;

  // Actors spawned since the last begin_frame().
  std::uint32_t spawns_this_frame() const { return spawns_this_frame_; }

  // Pool figures of one archetype (zeros when it has no pool yet).
  ArchetypePoolStats stats(std::uint16_t archetype) const;
  bool has_pool(std::uint16_t archetype) const { return pools_.count(archetype) != 0; }
  // The actor a slot holds (0: none).
  ActorHandle actor_of(SlotId slot) const;
  bool waiting(SlotId slot) const;
  std::uint32_t up_front_size(std::uint16_t archetype) const;
  std::uint32_t cap(std::uint16_t archetype) const;
  const ActorPoolConfig& config() const { return config_; }

 private:
  struct Pool {
    std::vector<ActorHandle> free;  // parked actors (LIFO)
    std::deque<SlotId> waiting;     // entities at the cap, in arrival order
    std::uint32_t size = 0;
    std::uint32_t up_front = 0;  // actors to make up front (size < up_front: pre-warm unfinished)
    std::uint32_t in_use = 0;
    std::uint64_t grown = 0;
    std::uint64_t reused = 0;
    bool warned_at_cap = false;
  };
  struct SlotEntry {
    ActorHandle actor = 0;
    EntityId id;
    std::uint16_t archetype = 0;
    bool waiting = false;
    EntityState latest;  // the state a waiting slot is activated with
    RepresentationHint hint = RepresentationHint::Actor;  // as last told to the actor
    bool has_pose = false;                                // since activation
    std::int64_t pose_time_us = 0;
    RenderPose pose;  // the last, for the velocity
  };
  Pool& pool_for(std::uint16_t archetype);
  SlotEntry& entry(SlotId slot);
  void give(Pool& pool, ActorHandle actor, SlotId slot, SlotEntry& e);
  void trace(const std::string& message) const;
  bool can_spawn() const {
    return config_.max_spawns_per_frame == 0 || spawns_this_frame_ < config_.max_spawns_per_frame;
  }
  // Spawns parked actors until the pool has its up-front size or the frame's budget is spent.
  void prewarm(std::uint16_t archetype, Pool& pool);

  ActorFactory& factory_;
  ActorPoolConfig config_;
  LogSink* log_ = nullptr;
  std::map<std::uint16_t, Pool> pools_;
  std::vector<SlotEntry> slots_;  // by SlotId::value
  std::uint32_t spawns_this_frame_ = 0;
};

}  // namespace bustle::client
