// Headless reference backends: draw nothing, record everything. Used by the
// SDK's tests, tools and benchmarks to exercise the representation layer
// without an engine, and as the reference an engine backend is compared to.
//
//   HeadlessBackend       a RenderBackend that records activations,
//                         deactivations and the poses of every frame; it can be
//                         told to refuse initialize(), to hold only N instances
//                         (the rest Pending, PoolAtCap) or to need K activate()
//                         calls before an instance becomes active (a resource
//                         that loads), or to refuse given archetypes.
//   HeadlessActorFactory  an ActorFactory for ActorPoolBackend that records
//                         spawned, shown, parked actors and their poses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bustle/client/actor_pool.hpp"
#include "bustle/client/backend.hpp"

namespace bustle::client {

enum class HeadlessEventKind : std::uint8_t { Activated, Deactivated, Pending };

struct HeadlessEvent {
  HeadlessEventKind kind = HeadlessEventKind::Activated;
  SlotId slot;
  EntityId id;
  RepresentationHint hint = RepresentationHint::None;
  std::uint64_t frame = 0;  // frames begun before the event
  friend bool operator==(const HeadlessEvent&, const HeadlessEvent&) = default;
};

struct HeadlessBackendOptions {
  std::string name = "headless";
  bool refuse_initialize = false;
  std::uint32_t capacity = 0xFFFFFFFFu;  // instances held at once; beyond: Pending(PoolAtCap)
  std::uint32_t activation_attempts =
      1;                      // activate() calls before an instance is active [Limit: >= 1]
  bool record_events = true;  // keep events() (off for benchmarks)
  // Archetypes it cannot draw (no mesh): activate() is Refused(ClassNotLoaded).
  std::vector<std::uint16_t> refuse_archetypes = {};
};

class HeadlessBackend final : public RenderBackend {
 public:
  explicit HeadlessBackend(HeadlessBackendOptions options = {});

  std::string_view name() const override { return options_.name; }
  bool initialize(LogSink* log) override;
  void deinitialize() override { initialized_ = false; }
  ActivationResult activate(SlotId slot, EntityId id, std::uint16_t archetype,
                            RepresentationHint hint, const EntityState& initial) override;
  void deactivate(SlotId slot, EntityId id) override;
  bool extract_update(const EntityState& state, std::int64_t server_time_us, SlotId slot) override;
  void apply_interpolation(SlotId slot, std::int64_t render_time_us,
                           const RenderPose& pose) override;
  bool is_instance_active(SlotId slot) const override;
  void begin_frame(std::int64_t render_time_us) override;

  bool initialized() const { return initialized_; }
  // Active instances.
  std::size_t active_count() const { return active_count_; }
  std::vector<EntityId> active_ids() const;
  // The pose applied to `slot` in the current (last begun) frame; nullptr
  // when none was.
  const RenderPose* frame_pose(SlotId slot) const;
  std::size_t frame_pose_count() const { return frame_pose_count_; }
  std::int64_t frame_render_time_us() const { return frame_render_time_us_; }
  std::uint64_t frames() const { return frames_; }
  const std::vector<HeadlessEvent>& events() const { return events_; }
  std::uint64_t updates() const { return updates_; }
  std::uint64_t poses_applied() const { return poses_applied_; }
  void set_capacity(std::uint32_t capacity) { options_.capacity = capacity; }
  const HeadlessBackendOptions& options() const { return options_; }

 private:
  void record(HeadlessEventKind kind, SlotId slot, EntityId id, RepresentationHint hint);

  // Per-slot state in arrays indexed by SlotId::value (as the backend
  // contract suggests), grown on first use.
  struct SlotState {
    EntityId id;
    bool active = false;
    std::uint32_t attempts = 0;    // activate() calls while loading
    std::uint64_t pose_frame = 0;  // frames_ when `pose` was applied (0: never)
    RenderPose pose;
  };
  SlotState& state(SlotId slot);

  HeadlessBackendOptions options_;
  bool initialized_ = false;
  std::vector<SlotState> slots_;
  std::size_t active_count_ = 0;
  std::size_t frame_pose_count_ = 0;
  std::int64_t frame_render_time_us_ = 0;
  std::uint64_t frames_ = 0;
  std::vector<HeadlessEvent> events_;
  std::uint64_t updates_ = 0;
  std::uint64_t poses_applied_ = 0;
};

class HeadlessActorFactory final : public ActorFactory {
 public:
  struct Actor {
    std::uint16_t archetype = 0;
    bool shown = false;
    bool destroyed = false;
    bool ready = true;  // is_actor_ready()
    EntityId id;
    RenderPose pose;
    std::int64_t render_time_us = 0;
    RenderVelocity velocity;
    RepresentationHint hint = RepresentationHint::Actor;  // set_actor_hint
  };
  ActorHandle spawn_actor(std::uint16_t archetype) override;
  void activate_actor(ActorHandle actor, SlotId slot, EntityId id,
                      const EntityState& initial) override;
  void park_actor(ActorHandle actor) override;
  void set_actor_pose(ActorHandle actor, std::int64_t render_time_us,
                      const RenderPose& pose) override;
  void destroy_actor(ActorHandle actor) override;
  void set_actor_velocity(ActorHandle handle, const RenderVelocity& v) override {
    actors_.at(handle - 1).velocity = v;
  }
  void set_actor_hint(ActorHandle handle, RepresentationHint hint) override {
    actors_.at(handle - 1).hint = hint;
  }
  bool has_actor_class(std::uint16_t archetype) const override;
  bool is_actor_ready(ActorHandle handle) const override { return actors_.at(handle - 1).ready; }

  // Archetypes without an actor class (has_actor_class false).
  void set_no_class(std::uint16_t archetype) { no_class_.push_back(archetype); }
  // Whether actors spawned from now on start ready (an engine actor that
  // streams its meshes in is not).
  void set_spawn_ready(bool ready) { spawn_ready_ = ready; }
  void set_ready(ActorHandle handle, bool ready) { actors_.at(handle - 1).ready = ready; }

  // Handles are 1-based indices into actors().
  const std::vector<Actor>& actors() const { return actors_; }
  const Actor& actor(ActorHandle handle) const { return actors_.at(handle - 1); }
  std::uint32_t spawned(std::uint16_t archetype) const;
  std::uint32_t shown() const;

 private:
  std::vector<Actor> actors_;
  std::vector<std::uint16_t> no_class_;
  bool spawn_ready_ = true;
};

}  // namespace bustle::client
