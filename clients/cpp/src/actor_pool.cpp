// The actor pool: pre-made actors per archetype handed out and parked,
// spawns spread over frames, waits and refusals graded (actor_pool.hpp).
#include "bustle/client/actor_pool.hpp"

#include <algorithm>
#include <cassert>

namespace bustle::client {

ActorPoolBackend::ActorPoolBackend(ActorFactory& factory, ActorPoolConfig config)
    : factory_(factory), config_(std::move(config)) {}

ActorPoolBackend::~ActorPoolBackend() {
  // A pool still holding actors releases them (deinitialize() was not called).
  if (!pools_.empty()) deinitialize();
}

std::uint32_t ActorPoolBackend::up_front_size(std::uint16_t archetype) const {
  const auto it = config_.pool_size_by_archetype.find(archetype);
  return it != config_.pool_size_by_archetype.end() ? it->second : config_.default_pool_size;
}

std::uint32_t ActorPoolBackend::cap(std::uint16_t archetype) const {
  const auto it = config_.max_pool_size_by_archetype.find(archetype);
  const std::uint32_t configured =
      it != config_.max_pool_size_by_archetype.end() ? it->second : config_.max_pool_size;
  return std::max(configured, up_front_size(archetype));
}

void ActorPoolBackend::trace(const std::string& message) const {
  if (config_.trace) log_to(log_, LogLevel::Trace, "pool", message);
}

bool ActorPoolBackend::initialize(LogSink* log) {
  log_ = log;
  for (const auto& [archetype, size] : config_.pool_size_by_archetype) {
    (void)size;
    if (factory_.has_actor_class(archetype)) pool_for(archetype);  // pre-warm the overrides
  }
  return true;
}

void ActorPoolBackend::deinitialize() {
  for (SlotEntry& e : slots_) {
    if (e.actor != 0) factory_.park_actor(e.actor);
  }
  for (auto& [archetype, pool] : pools_) {
    (void)archetype;
    for (ActorHandle a : pool.free) factory_.destroy_actor(a);
  }
  for (SlotEntry& e : slots_) {
    if (e.actor != 0) factory_.destroy_actor(e.actor);
  }
  pools_.clear();
  slots_.clear();
}

ActorPoolBackend::Pool& ActorPoolBackend::pool_for(std::uint16_t archetype) {
  auto it = pools_.find(archetype);
  if (it != pools_.end()) return it->second;
  Pool& pool = pools_[archetype];
  pool.up_front = up_front_size(archetype);
  pool.free.reserve(pool.up_front);
  prewarm(archetype, pool);
  trace("archetype " + std::to_string(archetype) + ": pool created with " +
        std::to_string(pool.size) + " of " + std::to_string(pool.up_front) +
        " up-front actors (cap " + std::to_string(cap(archetype)) + ")");
  return pool;
}

void ActorPoolBackend::prewarm(std::uint16_t archetype, Pool& pool) {
  while (pool.size < pool.up_front && can_spawn()) {
    const ActorHandle actor = factory_.spawn_actor(archetype);
    ++spawns_this_frame_;
    if (actor == 0) break;  // the engine cannot make one now; next frame again
    pool.free.push_back(actor);
    ++pool.size;
  }
}

void ActorPoolBackend::begin_frame(std::int64_t /*render_time_us*/) {
  spawns_this_frame_ = 0;
  for (auto& [archetype, pool] : pools_) {
    if (pool.size >= pool.up_front) continue;
    // Waiting entities cannot exist here: a pool below its up-front size
    // is below its cap, so its entities are pending (retried), not queued.
    prewarm(archetype, pool);
  }
}

ActorPoolBackend::SlotEntry& ActorPoolBackend::entry(SlotId slot) {
  assert(slot.valid());
  if (slot.value >= slots_.size()) slots_.resize(static_cast<std::size_t>(slot.value) + 1);
  return slots_[slot.value];
}

void ActorPoolBackend::give(Pool& pool, ActorHandle actor, SlotId slot, SlotEntry& e) {
  assert(actor != 0);
  assert(e.actor == 0);
  e.actor = actor;
  e.waiting = false;
  e.hint = e.latest.representation;
  e.has_pose = false;
  ++pool.in_use;
  assert(pool.in_use <= pool.size);
  factory_.activate_actor(actor, slot, e.id, e.latest);
}

ActivationResult ActorPoolBackend::activate(SlotId slot, EntityId id, std::uint16_t archetype,
                                            RepresentationHint /*hint*/,
                                            const EntityState& initial) {
  SlotEntry& e = entry(slot);
  if (e.actor != 0 || e.waiting) {
    // A retry (invariant 4): the slot already holds an actor or waits.
    assert(e.id == id);
    if (e.waiting) e.latest = initial;
    return e.actor != 0 ? ActivationResult::active()
                        : ActivationResult::pending(UnassignedReason::PoolAtCap);
  }
  if (!factory_.has_actor_class(archetype)) {
    // Invariant 7: no class, no actor; the layer falls back to a coarser backend.
    if (config_.trace)
      trace("archetype " + std::to_string(archetype) + ": no actor class, refused");
    return ActivationResult::refused(UnassignedReason::ClassNotLoaded);
  }
  e.id = id;
  e.archetype = archetype;
  e.latest = initial;
  Pool& pool = pool_for(archetype);
  const std::string what =
      "archetype " + std::to_string(archetype) + ", slot " + std::to_string(slot.value);
  if (!pool.free.empty()) {
    const ActorHandle actor = pool.free.back();
    pool.free.pop_back();
    give(pool, actor, slot, e);
    if (config_.trace) trace(what + ": actor taken from the pool");
    return ActivationResult::active();
  }
  const std::uint32_t limit = cap(archetype);
  if (pool.size < limit) {
    if (!can_spawn()) {
      // Invariant 6: over this frame's spawn budget; retried by the layer.
      if (config_.trace) trace(what + ": spawn budget of this frame spent, retried next frame");
      return ActivationResult::pending(UnassignedReason::Loading);
    }
    const ActorHandle actor = factory_.spawn_actor(archetype);
    ++spawns_this_frame_;
    if (actor == 0) {
      log_to(log_, LogLevel::Warning, "pool",
             what + ": the engine could not make an actor; retried next frame");
      return ActivationResult::pending(UnassignedReason::ClassNotLoaded);
    }
    const bool up_front = pool.size < pool.up_front;
    ++pool.size;
    if (!up_front) ++pool.grown;
    give(pool, actor, slot, e);
    if (config_.trace) {
      trace(what +
            (up_front ? ": up-front actor spawned for it, pool at " : ": pool grew by one to ") +
            std::to_string(pool.size));
    }
    return ActivationResult::active();
  }
  e.waiting = true;
  pool.waiting.push_back(slot);
  if (!pool.warned_at_cap) {
    pool.warned_at_cap = true;
    log_to(log_, LogLevel::Warning, "pool",
           "archetype " + std::to_string(archetype) + ": pool at its cap of " +
               std::to_string(limit) +
               " actors; further entities wait until one leaves (raise max_pool_size to draw more "
               "at once)");
  }
  if (config_.trace)
    trace(what + ": waiting at the cap (" + std::to_string(pool.waiting.size()) + " waiting)");
  return ActivationResult::pending(UnassignedReason::PoolAtCap);
}

void ActorPoolBackend::deactivate(SlotId slot, EntityId /*id*/) {
  if (!slot.valid() || slot.value >= slots_.size()) return;
  SlotEntry& e = slots_[slot.value];
  auto it = pools_.find(e.archetype);
  if (it == pools_.end()) return;
  Pool& pool = it->second;
  if (e.waiting) {
    pool.waiting.erase(std::find(pool.waiting.begin(), pool.waiting.end(), slot));
    e = SlotEntry{};
    return;
  }
  if (e.actor == 0) {
    e = SlotEntry{};  // pending on the spawn budget, or never activated
    return;
  }
  const ActorHandle actor = e.actor;
  factory_.park_actor(actor);
  assert(pool.in_use > 0);
  --pool.in_use;
  e = SlotEntry{};
  if (config_.trace) {
    trace("archetype " + std::to_string(it->first) + ", slot " + std::to_string(slot.value) +
          ": actor released");
  }
  if (!pool.waiting.empty()) {
    // Invariant 3: the first entity waiting for this archetype takes it.
    const SlotId next = pool.waiting.front();
    pool.waiting.pop_front();
    ++pool.reused;
    give(pool, actor, next, slots_[next.value]);
    if (config_.trace) {
      trace("archetype " + std::to_string(it->first) + ", slot " + std::to_string(next.value) +
            ": actor reused for a waiting entity");
    }
    return;
  }
  pool.free.push_back(actor);
}

bool ActorPoolBackend::extract_update(const EntityState& state, std::int64_t /*server_time_us*/,
                                      SlotId slot) {
  if (!slot.valid() || slot.value >= slots_.size()) return false;
  SlotEntry& e = slots_[slot.value];
  if (e.waiting) e.latest = state;  // activated with the newest state when an actor frees
  if (e.actor != 0 && state.representation != e.hint) {
    e.hint = state.representation;
    factory_.set_actor_hint(e.actor, e.hint);
  }
  return true;
}

void ActorPoolBackend::apply_interpolation(SlotId slot, std::int64_t render_time_us,
                                           const RenderPose& pose) {
  if (!slot.valid() || slot.value >= slots_.size()) return;
  SlotEntry& e = slots_[slot.value];
  if (e.actor == 0) return;
  factory_.set_actor_pose(e.actor, render_time_us, pose);
  if (e.has_pose && render_time_us == e.pose_time_us) return;  // the velocity told still holds
  RenderVelocity v;  // zero on the first pose, and after render time went back (a rewind)
  if (e.has_pose && render_time_us > e.pose_time_us) {
    const double dt_s = static_cast<double>(render_time_us - e.pose_time_us) / 1e6;
    v = RenderVelocity{(pose.x_m - e.pose.x_m) / dt_s, (pose.y_m - e.pose.y_m) / dt_s,
                       (pose.z_m - e.pose.z_m) / dt_s};
  }
  e.has_pose = true;
  e.pose = pose;
  e.pose_time_us = render_time_us;
  factory_.set_actor_velocity(e.actor, v);
}

bool ActorPoolBackend::is_instance_active(SlotId slot) const {
  // Invariant 8: an actor not ready yet is not drawn; whatever covers it stays.
  const ActorHandle actor = actor_of(slot);
  return actor != 0 && factory_.is_actor_ready(actor);
}

ActorHandle ActorPoolBackend::actor_of(SlotId slot) const {
  return slot.valid() && slot.value < slots_.size() ? slots_[slot.value].actor : 0;
}

bool ActorPoolBackend::waiting(SlotId slot) const {
  return slot.valid() && slot.value < slots_.size() && slots_[slot.value].waiting;
}

ArchetypePoolStats ActorPoolBackend::stats(std::uint16_t archetype) const {
  ArchetypePoolStats s;
  s.cap = cap(archetype);
  const auto it = pools_.find(archetype);
  if (it == pools_.end()) return s;
  s.size = it->second.size;
  s.in_use = it->second.in_use;
  s.waiting = static_cast<std::uint32_t>(it->second.waiting.size());
  s.grown = it->second.grown;
  s.reused = it->second.reused;
  return s;
}

}  // namespace bustle::client
