// Backends that draw nothing and record everything: the reference for the
// SDK's tests, tools and benchmarks (headless_backend.hpp).
#include "bustle/client/headless_backend.hpp"

#include <algorithm>
#include <cassert>

namespace bustle::client {

HeadlessBackend::HeadlessBackend(HeadlessBackendOptions options) : options_(std::move(options)) {
  assert(options_.activation_attempts >= 1);
}

bool HeadlessBackend::initialize(LogSink* log) {
  if (options_.refuse_initialize) {
    log_to(log, LogLevel::Error, options_.name,
           "refused to initialize (told to refuse); the previous backend stays installed");
    return false;
  }
  initialized_ = true;
  return true;
}

void HeadlessBackend::record(HeadlessEventKind kind, SlotId slot, EntityId id,
                             RepresentationHint hint) {
  if (options_.record_events) events_.push_back(HeadlessEvent{kind, slot, id, hint, frames_});
}

HeadlessBackend::SlotState& HeadlessBackend::state(SlotId slot) {
  assert(slot.valid());
  if (slot.value >= slots_.size()) slots_.resize(static_cast<std::size_t>(slot.value) + 1);
  return slots_[slot.value];
}

ActivationResult HeadlessBackend::activate(SlotId slot, EntityId id, std::uint16_t archetype,
                                           RepresentationHint hint,
                                           const EntityState& /*initial*/) {
  const auto& refused = options_.refuse_archetypes;
  if (std::find(refused.begin(), refused.end(), archetype) != refused.end()) {
    return ActivationResult::refused(UnassignedReason::ClassNotLoaded);
  }
  SlotState& st = state(slot);
  if (st.active) return ActivationResult::active();
  if (active_count_ >= options_.capacity) {
    record(HeadlessEventKind::Pending, slot, id, hint);
    return ActivationResult::pending(UnassignedReason::PoolAtCap);
  }
  ++st.attempts;
  if (st.attempts < options_.activation_attempts) {
    // Accepted, but its resource is still loading: inactive until a later call.
    record(HeadlessEventKind::Pending, slot, id, hint);
    return ActivationResult::active();
  }
  st.attempts = 0;
  st.active = true;
  st.id = id;
  ++active_count_;
  record(HeadlessEventKind::Activated, slot, id, hint);
  return ActivationResult::active();
}

void HeadlessBackend::deactivate(SlotId slot, EntityId id) {
  if (!slot.valid() || slot.value >= slots_.size()) return;
  SlotState& st = slots_[slot.value];
  st.attempts = 0;
  if (!st.active) return;
  st.active = false;
  assert(active_count_ > 0);
  --active_count_;
  record(HeadlessEventKind::Deactivated, slot, id, RepresentationHint::None);
}

bool HeadlessBackend::extract_update(const EntityState& /*state*/, std::int64_t /*server_time_us*/,
                                     SlotId /*slot*/) {
  ++updates_;
  return true;
}

void HeadlessBackend::apply_interpolation(SlotId slot, std::int64_t /*render_time_us*/,
                                          const RenderPose& pose) {
  assert(slot.valid() && slot.value < slots_.size());
  SlotState& st = slots_[slot.value];
  assert(st.active);
  if (st.pose_frame != frames_) ++frame_pose_count_;
  st.pose_frame = frames_;
  st.pose = pose;
  ++poses_applied_;
}

bool HeadlessBackend::is_instance_active(SlotId slot) const {
  return slot.valid() && slot.value < slots_.size() && slots_[slot.value].active;
}

const RenderPose* HeadlessBackend::frame_pose(SlotId slot) const {
  if (!slot.valid() || slot.value >= slots_.size() || frames_ == 0) return nullptr;
  const SlotState& st = slots_[slot.value];
  return st.pose_frame == frames_ ? &st.pose : nullptr;
}

void HeadlessBackend::begin_frame(std::int64_t render_time_us) {
  frame_render_time_us_ = render_time_us;
  frame_pose_count_ = 0;
  ++frames_;
}

std::vector<EntityId> HeadlessBackend::active_ids() const {
  std::vector<EntityId> ids;
  ids.reserve(active_count_);
  for (const SlotState& st : slots_) {
    if (st.active) ids.push_back(st.id);
  }
  return ids;
}

ActorHandle HeadlessActorFactory::spawn_actor(std::uint16_t archetype) {
  Actor a;
  a.archetype = archetype;
  a.ready = spawn_ready_;
  actors_.push_back(a);
  return actors_.size();
}

bool HeadlessActorFactory::has_actor_class(std::uint16_t archetype) const {
  return std::find(no_class_.begin(), no_class_.end(), archetype) == no_class_.end();
}

void HeadlessActorFactory::activate_actor(ActorHandle actor, SlotId /*slot*/, EntityId id,
                                          const EntityState& initial) {
  Actor& a = actors_.at(actor - 1);
  assert(!a.shown);
  a.shown = true;
  a.id = id;
  a.pose = initial.pose;
  a.hint = initial.representation;
  a.velocity = RenderVelocity{};
}

void HeadlessActorFactory::park_actor(ActorHandle actor) {
  Actor& a = actors_.at(actor - 1);
  a.shown = false;
  a.id = EntityId{};
}

void HeadlessActorFactory::set_actor_pose(ActorHandle actor, std::int64_t render_time_us,
                                          const RenderPose& pose) {
  Actor& a = actors_.at(actor - 1);
  assert(a.shown);
  a.pose = pose;
  a.render_time_us = render_time_us;
}

void HeadlessActorFactory::destroy_actor(ActorHandle actor) {
  actors_.at(actor - 1).destroyed = true;
}

std::uint32_t HeadlessActorFactory::spawned(std::uint16_t archetype) const {
  return static_cast<std::uint32_t>(std::count_if(
      actors_.begin(), actors_.end(), [&](const Actor& a) { return a.archetype == archetype; }));
}

std::uint32_t HeadlessActorFactory::shown() const {
  return static_cast<std::uint32_t>(
      std::count_if(actors_.begin(), actors_.end(), [](const Actor& a) { return a.shown; }));
}

}  // namespace bustle::client
