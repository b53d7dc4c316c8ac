// The client's copy of the streamed entities: Deltas applied in order,
// each entity at a stable slot (entity_mirror.hpp).
#include "bustle/client/entity_mirror.hpp"

#include <cassert>

namespace bustle::client {

namespace wire = bustle::wire;

EntityMirror::EntityMirror(std::uint32_t max_entities) : max_entities_(max_entities) {
  assert(max_entities >= 1);
}

void EntityMirror::set_world(const WelcomeInfo& welcome) {
  set_world(lane_polylines(welcome), welcome.step_us);
}

void EntityMirror::set_world(std::vector<proto::LanePolyline> lanes, std::uint32_t step_us) {
  lanes_ = std::move(lanes);
  step_us_ = step_us;
}

void EntityMirror::clear() {
  slots_.clear();
  live_.clear();
  free_slots_.clear();
  by_index_.clear();
}

const EntityView* EntityMirror::find(EntityId id) const {
  const auto it = by_index_.find(id.index);
  if (it == by_index_.end()) return nullptr;
  const EntityView& view = slots_[it->second];
  assert(live_[it->second]);
  assert(view.id.index == id.index);
  return view.id.generation == id.generation ? &view : nullptr;
}

const EntityView* EntityMirror::at(SlotId slot) const {
  if (!slot.valid() || slot.value >= slots_.size()) return nullptr;
  return live_[slot.value] ? &slots_[slot.value] : nullptr;
}

EntityView* EntityMirror::live_by_index(std::uint32_t index) {
  const auto it = by_index_.find(index);
  return it == by_index_.end() ? nullptr : &slots_[it->second];
}

EntityView* EntityMirror::live_by_id(EntityId id) {
  EntityView* view = live_by_index(id.index);
  return view != nullptr && view->id.generation == id.generation ? view : nullptr;
}

std::optional<EntityPose> EntityMirror::pose(const EntityView& view, std::uint64_t step) const {
  const proto::MotionAnchor& a = view.anchor;
  if (a.lane >= lanes_.size()) return std::nullopt;
  const proto::LanePolyline& lane = lanes_[a.lane];
  const std::uint32_t s_mm = proto::predict_s_mm(a, step, step_us_, lane.length_mm);
  const proto::LanePose p = proto::sample_lane(lane, static_cast<double>(s_mm) / 1000.0);
  return EntityPose{p.x_m, p.y_m, p.z_m, p.heading_rad, a.lane, s_mm};
}

std::optional<EntityPose> EntityMirror::pose(SlotId slot, std::uint64_t step) const {
  const EntityView* view = at(slot);
  return view == nullptr ? std::nullopt : pose(*view, step);
}

std::optional<EntityPose> EntityMirror::pose(EntityId id, std::uint64_t step) const {
  const EntityView* view = find(id);
  return view == nullptr ? std::nullopt : pose(*view, step);
}

void EntityMirror::problem(ApplySummary& summary, std::string what) const {
  if (strict_ && summary.error.empty()) summary.error = std::move(what);
}

void EntityMirror::check_lane(std::uint32_t lane, ApplySummary& summary, const char* what) {
  if (lanes_.empty() || lane < lanes_.size()) return;  // no world: nothing to check against
  ++summary.unknown_lanes;
  problem(summary, std::string(what) + ": lane " + std::to_string(lane) +
                       " is not in the Welcome (" + std::to_string(lanes_.size()) + " lanes)");
}

void EntityMirror::remove_slot(std::uint32_t slot, MirrorListener* listener) {
  assert(slot < slots_.size());
  assert(live_[slot]);
  if (listener != nullptr) listener->on_left(slots_[slot]);
  by_index_.erase(slots_[slot].id.index);
  live_[slot] = 0;
  free_slots_.push_back(slot);
}

namespace {

void write_entered(EntityView& view, const EnteredEntity& e, std::uint64_t step) {
  view.kind = e.kind;
  view.archetype = e.archetype;
  view.sim_tier = e.sim_tier;
  view.representation = e.representation;
  view.policy = e.policy;
  view.corpse = e.corpse;
  view.anchor = proto::MotionAnchor{e.lane, e.s_mm, e.speed_mmps, step};
}

}  // namespace

bool EntityMirror::insert(const EnteredEntity& e, std::uint64_t step, MirrorListener* listener,
                          ApplySummary& summary) {
  assert(by_index_.find(e.id.index) == by_index_.end());
  std::uint32_t slot = 0;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else if (slots_.size() < max_entities_) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
    live_.push_back(0);
  } else {
    ++summary.rejected_full;
    problem(summary, "entered " + id_text(e.id) + ": the mirror is full (" +
                         std::to_string(max_entities_) + ")");
    return false;
  }
  assert(!live_[slot]);
  EntityView& view = slots_[slot];
  view = EntityView{};
  view.id = e.id;
  view.slot = SlotId{slot};
  view.entered_step = step;
  write_entered(view, e, step);
  live_[slot] = 1;
  by_index_.emplace(e.id.index, slot);
  ++summary.entered;
  if (listener != nullptr) listener->on_entered(view);
  return true;
}

void EntityMirror::apply_membership(const Delta& delta, MirrorListener* listener,
                                    ApplySummary& summary) {
  const std::uint64_t step = delta.step;
  for (const EntityId id : delta.left) {
    const EntityView* view = find(id);
    if (view == nullptr) {
      ++summary.unknown_lefts;
      problem(summary, "left: " + id_text(id) + " is not received");
      continue;
    }
    remove_slot(view->slot.value, listener);
    ++summary.left;
  }

  for (const EnteredEntity& e : delta.entered) {
    check_lane(e.lane, summary, "entered");
    if (EntityView* existing = live_by_index(e.id.index)) {
      if (existing->id.generation == e.id.generation) {
        // The server says "new" for an id we already hold: trust the state.
        ++summary.duplicate_enters;
        problem(summary, "entered: " + id_text(e.id) + " is already received");
        write_entered(*existing, e, step);
        if (listener != nullptr) listener->on_moved(*existing);
        continue;
      }
      // Same index, other generation: the old entity is gone.
      ++summary.replaced;
      remove_slot(existing->slot.value, listener);
    }
    insert(e, step, listener, summary);
  }

  for (const EntityLabel& l : delta.labels) {
    EntityView* view = live_by_index(l.index);
    if (view == nullptr || view->entered_step != step) {
      ++summary.unknown_labels;
      problem(summary, "labels: index " + std::to_string(l.index) + " did not enter in this Delta");
      continue;
    }
    view->label = l.label;
  }
}

void EntityMirror::apply_updates(const Delta& delta, MirrorListener* listener,
                                 ApplySummary& summary) {
  const std::uint64_t step = delta.step;
  for (const proto::MotionRecord& r : delta.motion) {
    EntityView* view = live_by_index(r.index);
    if (view == nullptr) {
      ++summary.unknown_motion;
      problem(summary, "motion: index " + std::to_string(r.index) + " is not received");
      continue;
    }
    const std::uint32_t lane = r.lane_changed ? r.lane : view->anchor.lane;
    check_lane(lane, summary, "motion");
    view->anchor = proto::MotionAnchor{lane, r.s_mm, r.speed_mmps, step};
    ++summary.moved;
    if (listener != nullptr) listener->on_moved(*view);
  }

  for (const EntityChange& c : delta.changes) {
    EntityView* view = live_by_index(c.index);
    if (view == nullptr) {
      ++summary.unknown_changes;
      problem(summary, "changes: index " + std::to_string(c.index) + " is not received");
      continue;
    }
    switch (c.field) {
      case EntityField::SimTier:
        view->sim_tier = c.sim_tier();
        break;
      case EntityField::Representation:
        view->representation = c.representation();
        break;
      case EntityField::Policy:
        view->policy = c.policy();
        break;
      case EntityField::Corpse:
        if (view->corpse) continue;  // already known: nothing new
        view->corpse = true;
        ++summary.corpses;
        break;
    }
    ++summary.changed;
    if (listener != nullptr) listener->on_changed(*view, c.field);
  }

  for (const EntityId id : delta.retiring) {
    EntityView* view = live_by_id(id);
    if (view == nullptr) {
      ++summary.unknown_retiring;
      problem(summary, "retiring: " + id_text(id) + " is not received");
      continue;
    }
    if (view->retiring) continue;  // already known: nothing new
    view->retiring = true;
    ++summary.retiring;
    if (listener != nullptr) listener->on_retiring(*view);
  }
}

void EntityMirror::apply_city(const Delta& delta, ApplySummary& summary) {
  if (summary.baseline) {
    chain_dots_.clear();
    has_dots_ = false;
  }
  if (delta.dots) {
    chain_dots_.assign(chain_dots_.size(), 0);
    for (const ChainDotsEntry& d : *delta.dots) {
      if (d.chain >= kMaxDotChains) continue;  // never from a real server; bounds memory
      if (d.chain >= chain_dots_.size()) chain_dots_.resize(std::size_t{d.chain} + 1, 0);
      chain_dots_[d.chain] = d.count;
    }
    has_dots_ = true;
    dots_step_ = delta.step;
    summary.dots = true;
  }
  for (const SignalPhaseEntry& p : delta.signals) {
    if (p.index >= signal_phases_.size()) {
      signal_phases_.resize(std::size_t{p.index} + 1, wire::SignalPhase::Open);
    }
    signal_phases_[p.index] = p.phase;
  }
}

void EntityMirror::count(const ApplySummary& summary) {
  ++counters_.deltas;
  counters_.baselines += summary.baseline ? 1 : 0;
  counters_.steps_not_increasing += summary.step_not_increasing ? 1 : 0;
  counters_.entered += summary.entered;
  counters_.moved += summary.moved;
  counters_.changed += summary.changed;
  counters_.left += summary.left;
  counters_.replaced += summary.replaced;
  counters_.duplicate_enters += summary.duplicate_enters;
  counters_.unknown_motion += summary.unknown_motion;
  counters_.unknown_changes += summary.unknown_changes;
  counters_.unknown_labels += summary.unknown_labels;
  counters_.unknown_lefts += summary.unknown_lefts;
  counters_.unknown_lanes += summary.unknown_lanes;
  counters_.rejected_full += summary.rejected_full;
  counters_.retiring += summary.retiring;
  counters_.corpses += summary.corpses;
  counters_.unknown_retiring += summary.unknown_retiring;
  counters_.dots += summary.dots ? 1 : 0;
  counters_.errors += summary.error.empty() ? 0 : 1;
}

ApplySummary EntityMirror::apply(const Delta& delta, MirrorListener* listener) {
  ApplySummary summary;
  const std::uint64_t step = delta.step;
  summary.baseline = delta.baseline;
  if (summary.baseline) {
    clear();
    if (listener != nullptr) listener->on_reset();
  } else if (has_step() && step <= last_step_) {
    summary.step_not_increasing = true;
  }

  apply_membership(delta, listener, summary);
  apply_updates(delta, listener, summary);
  apply_city(delta, summary);
  count(summary);
  last_step_ = step;
  last_sim_time_us_ = delta.sim_time_us;
  last_digest_ = delta.digest;
  interest_truncated_ = delta.interest_truncated;
  assert(by_index_.size() + free_slots_.size() == slots_.size());
  return summary;
}

}  // namespace bustle::client
