#include "bustle/client/entity_mirror.hpp"

#include <cassert>
#include <numbers>

namespace bustle::client {

namespace wire = bustle::wire;

double heading_q_to_rad(std::uint16_t heading_q) {
  return static_cast<double>(heading_q) * (2.0 * std::numbers::pi / 65536.0);
}

void write_state(EntityView& view, const wire::EntityState& state, std::uint64_t step) {
  view.kind = state.kind();
  view.x_m = static_cast<double>(state.x_cm()) / 100.0;
  view.y_m = static_cast<double>(state.y_cm()) / 100.0;
  view.heading_rad = heading_q_to_rad(state.heading_q());
  view.speed_mps = static_cast<double>(state.speed_cmps()) / 100.0;
  view.last_step = step;
}

EntityMirror::EntityMirror(std::uint32_t max_entities) : max_entities_(max_entities) {
  assert(max_entities >= 1);
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

void EntityMirror::remove_slot(std::uint32_t slot, MirrorListener* listener) {
  assert(slot < slots_.size());
  assert(live_[slot]);
  if (listener != nullptr) listener->on_left(slots_[slot]);
  by_index_.erase(slots_[slot].id.index);
  live_[slot] = 0;
  free_slots_.push_back(slot);
}

bool EntityMirror::insert(const wire::EntityState& state, std::uint64_t step,
                          MirrorListener* listener, ApplySummary& summary) {
  const EntityId id = EntityId::from_wire(state.id());
  assert(by_index_.find(id.index) == by_index_.end());
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
    return false;
  }
  assert(!live_[slot]);
  EntityView& view = slots_[slot];
  view = EntityView{};
  view.id = id;
  view.slot = SlotId{slot};
  view.entered_step = step;
  write_state(view, state, step);
  live_[slot] = 1;
  by_index_.emplace(id.index, slot);
  ++summary.entered;
  if (listener != nullptr) listener->on_entered(view);
  return true;
}

ApplySummary EntityMirror::apply(const wire::Delta& delta, MirrorListener* listener) {
  ApplySummary summary;
  const std::uint64_t step = delta.step();
  summary.baseline = delta.baseline();
  if (summary.baseline) {
    clear();
    if (listener != nullptr) listener->on_reset();
  } else if (has_step() && step <= last_step_) {
    summary.step_not_increasing = true;
  }

  if (const auto* left = delta.left()) {
    for (const wire::EntityId* w : *left) {
      const EntityId id = EntityId::from_wire(*w);
      const EntityView* view = find(id);
      if (view == nullptr) {
        ++summary.unknown_lefts;
        continue;
      }
      remove_slot(view->slot.value, listener);
      ++summary.left;
    }
  }

  if (const auto* entered = delta.entered()) {
    for (const wire::EntityState* state : *entered) {
      const EntityId id = EntityId::from_wire(state->id());
      const auto it = by_index_.find(id.index);
      if (it != by_index_.end()) {
        EntityView& existing = slots_[it->second];
        if (existing.id.generation == id.generation) {
          // The server says "new" for an id we already hold: trust the state.
          ++summary.duplicate_enters;
          write_state(existing, *state, step);
          if (listener != nullptr) listener->on_updated(existing);
          continue;
        }
        // Same index, other generation: the old entity is gone.
        ++summary.replaced;
        remove_slot(it->second, listener);
      }
      insert(*state, step, listener, summary);
    }
  }

  if (const auto* updated = delta.updated()) {
    for (const wire::EntityState* state : *updated) {
      const EntityId id = EntityId::from_wire(state->id());
      const auto it = by_index_.find(id.index);
      if (it == by_index_.end() || slots_[it->second].id.generation != id.generation) {
        ++summary.unknown_updates;
        continue;
      }
      EntityView& view = slots_[it->second];
      write_state(view, *state, step);
      ++summary.updated;
      if (listener != nullptr) listener->on_updated(view);
    }
  }

  if (const auto* retiring = delta.retiring()) {
    for (const wire::EntityId* w : *retiring) {
      const auto it = by_index_.find(w->index());
      if (it == by_index_.end() || slots_[it->second].id.generation != w->generation()) {
        ++summary.unknown_retiring;
        continue;
      }
      EntityView& view = slots_[it->second];
      if (view.retiring) continue;  // already known: nothing new
      view.retiring = true;
      ++summary.retiring;
      if (listener != nullptr) listener->on_retiring(view);
    }
  }

  if (summary.baseline) {
    chain_dots_.clear();
    has_dots_ = false;
  }
  if (const auto* dots = delta.dots()) {
    chain_dots_.assign(chain_dots_.size(), 0);
    for (const wire::ChainDots* d : *dots) {
      if (d->chain() >= kMaxDotChains) continue;  // never from a real server; bounds memory
      if (d->chain() >= chain_dots_.size()) chain_dots_.resize(std::size_t{d->chain()} + 1, 0);
      chain_dots_[d->chain()] = d->count();
    }
    has_dots_ = true;
    dots_step_ = step;
    summary.dots = true;
  }

  ++counters_.deltas;
  counters_.baselines += summary.baseline ? 1 : 0;
  counters_.steps_not_increasing += summary.step_not_increasing ? 1 : 0;
  counters_.entered += summary.entered;
  counters_.updated += summary.updated;
  counters_.left += summary.left;
  counters_.replaced += summary.replaced;
  counters_.duplicate_enters += summary.duplicate_enters;
  counters_.unknown_updates += summary.unknown_updates;
  counters_.unknown_lefts += summary.unknown_lefts;
  counters_.rejected_full += summary.rejected_full;
  counters_.retiring += summary.retiring;
  counters_.unknown_retiring += summary.unknown_retiring;
  counters_.dots += summary.dots ? 1 : 0;
  if (const auto* signals = delta.signals()) {
    for (const wire::SignalPhaseState* p : *signals) {
      if (p->index() >= signal_phases_.size()) {
        signal_phases_.resize(std::size_t{p->index()} + 1, wire::SignalPhase::Open);
      }
      signal_phases_[p->index()] = p->phase();
    }
  }
  last_step_ = step;
  last_sim_time_us_ = delta.sim_time_us();
  last_digest_ = delta.digest();
  assert(by_index_.size() + free_slots_.size() == slots_.size());
  return summary;
}

}  // namespace bustle::client
