// The representation stages of spawn handles (representation_stages.hpp):
// RepresentationRequested -> Attached -> ReadyForGameplay from client leases
// or ReportAttached, kept on the sim thread beside the World, never in it.
#include "representation_stages.hpp"

#include <algorithm>

namespace bustle::app {
namespace {

bool walking(const core::World& w, core::EntityId id) {
  if (id.is_null() || !w.registry().is_alive(id)) return false;
  const core::PedestrianStore& p = w.pedestrians();
  if (id.index >= p.dense_of.size()) return false;
  const std::uint32_t slot = p.dense_of[id.index];
  return slot != core::PedestrianStore::kNoSlot && p.id[slot] == id;
}

bool registered_in_core(const core::World& w, core::EntityId id) {
  for (const core::SpawnHandleState& h : w.spawn_pipeline().live) {
    if (h.state == core::SpawnState::Registered && h.entity == id) return true;
  }
  return false;
}

}  // namespace

void RepresentationStages::set(core::SpawnHandleState& h, core::SpawnState s, std::uint64_t step,
                               std::vector<core::SpawnHandleState>* changed, core::SpawnFailure f) {
  h.state = s;
  h.failure = f;
  h.state_step = step;
  if (s == core::SpawnState::Attached) ++counters_.attached_total;
  if (s == core::SpawnState::ReadyForGameplay) ++counters_.ready_total;
  if (s == core::SpawnState::Failed) ++counters_.failed_total;
  if (f == core::SpawnFailure::NoRepresentationSlot) ++counters_.no_slot_total;
  if (changed != nullptr) changed->push_back(h);
}

RepresentationStages::Attach RepresentationStages::take_slot(
    core::SpawnHandleState& h, std::uint64_t step, std::vector<core::SpawnHandleState>* changed) {
  if (attached_slots_.size() < attached_limit_) {
    std::erase(unattached_, h.entity);
    attached_slots_.push_back(h.entity);
    set(h, core::SpawnState::Attached, step, changed);
    return Attach::Attached;
  }
  if (std::find(unattached_.begin(), unattached_.end(), h.entity) != unattached_.end())
    return Attach::Unattached;
  if (unattached_.size() < unattached_limit_) {
    unattached_.push_back(h.entity);
    return Attach::Unattached;
  }
  set(h, core::SpawnState::Failed, step, changed, core::SpawnFailure::NoRepresentationSlot);
  return Attach::NoSlot;
}

void RepresentationStages::set_budgets(std::uint32_t attached_limit,
                                       std::uint32_t unattached_limit) {
  attached_limit_ = attached_limit;
  unattached_limit_ = unattached_limit;
}

RepresentationStages::Budgets RepresentationStages::budgets() const {
  return {static_cast<std::uint32_t>(attached_slots_.size()), attached_limit_,
          static_cast<std::uint32_t>(unattached_.size()), unattached_limit_};
}

void RepresentationStages::after_step(const core::World& world,
                                      std::vector<core::SpawnHandleState>& changed) {
  const std::uint64_t step = world.step_index();
  // 0. Entities that stopped walking give their attached or unattached slot back.
  std::erase_if(attached_slots_, [&](core::EntityId id) { return !walking(world, id); });
  std::erase_if(unattached_, [&](core::EntityId id) { return !walking(world, id); });
  // 1. Waiting handles: one stage per step.
  for (core::SpawnHandleState& h : live_) {
    if (!walking(world, h.entity)) {
      set(h, core::SpawnState::Failed, step, &changed, core::SpawnFailure::EntityGone);
    } else if (h.state == core::SpawnState::Attached && h.state_step < step) {
      set(h, core::SpawnState::ReadyForGameplay, step, &changed);
    }
  }
  // 1b. Unattached handles take freed attached slots, first come first served.
  while (!unattached_.empty() && attached_slots_.size() < attached_limit_) {
    const core::EntityId id = unattached_.front();
    unattached_.erase(unattached_.begin());
    for (core::SpawnHandleState& h : live_) {
      if (h.entity == id && h.state == core::SpawnState::RepresentationRequested)
        take_slot(h, step, &changed);
    }
  }
  // 2. Handles whose core part ended this step at RepresentationRequested
  // (their SpawnEvent was already routed by the caller).
  for (const core::SpawnEvent& ev : world.spawn_events()) {
    if (ev.state != core::SpawnState::RepresentationRequested) continue;
    const auto h = world.find_spawn(ev.handle);
    if (!h || h->state != core::SpawnState::RepresentationRequested) continue;
    live_.push_back(*h);  // handles only grow: live_ stays sorted
    const auto held = std::find(held_.begin(), held_.end(), h->entity);
    if (held != held_.end()) {
      held_.erase(held);
      take_slot(live_.back(), step, &changed);
    }
  }
  // 3. Ended handles move to recent.
  for (const core::SpawnHandleState& h : live_) {
    if (core::is_terminal(h.state)) recent_.push_back(h);
  }
  std::erase_if(live_, [](const core::SpawnHandleState& h) { return core::is_terminal(h.state); });
  if (recent_.size() > core::kSpawnHistory) {
    recent_.erase(recent_.begin(), recent_.begin() + static_cast<std::ptrdiff_t>(
                                                         recent_.size() - core::kSpawnHistory));
  }
  // 4. Remembered leases only while their handle is still Registered.
  std::erase_if(held_, [&](core::EntityId id) { return !registered_in_core(world, id); });
}

RepresentationStages::Attach RepresentationStages::attach(const core::World& world,
                                                          core::EntityId id, bool remember,
                                                          core::SpawnHandleState* changed) {
  for (core::SpawnHandleState& h : live_) {
    if (h.entity != id || core::is_terminal(h.state)) continue;
    if (h.state == core::SpawnState::Attached) return Attach::AlreadyAttached;
    std::vector<core::SpawnHandleState> one;
    const Attach a = take_slot(h, world.step_index(), &one);
    if (changed != nullptr && !one.empty()) *changed = one.front();
    if (changed != nullptr && one.empty()) *changed = h;
    return a;
  }
  if (!registered_in_core(world, id)) return Attach::NoHandle;
  if (!remember) return Attach::NotRequested;
  if (std::find(held_.begin(), held_.end(), id) == held_.end()) held_.push_back(id);
  return Attach::Remembered;
}

void RepresentationStages::reset(const core::World& world) {
  live_.clear();
  recent_.clear();
  held_.clear();
  attached_slots_.clear();
  unattached_.clear();
  for (const core::SpawnHandleState& h : world.spawn_pipeline().recent) {
    if (h.state == core::SpawnState::RepresentationRequested && walking(world, h.entity))
      live_.push_back(h);
  }
  std::sort(live_.begin(), live_.end(),
            [](const core::SpawnHandleState& a, const core::SpawnHandleState& b) {
              return a.handle < b.handle;
            });
}

std::optional<core::SpawnHandleState> RepresentationStages::find(std::uint64_t handle) const {
  for (const auto* list : {&live_, &recent_}) {
    for (const core::SpawnHandleState& h : *list) {
      if (h.handle == handle) return h;
    }
  }
  return std::nullopt;
}

const core::SpawnHandleState* RepresentationStages::waiting_for(core::EntityId id) const {
  for (const core::SpawnHandleState& h : live_) {
    if (h.entity == id) return &h;
  }
  return nullptr;
}

void RepresentationStages::awaiting(const core::World& world,
                                    std::vector<core::EntityId>& out) const {
  out.clear();
  for (const core::SpawnHandleState& h : world.spawn_pipeline().live) {
    if (h.state == core::SpawnState::Registered) out.push_back(h.entity);
  }
  for (const core::SpawnHandleState& h : live_) {
    if (h.state == core::SpawnState::RepresentationRequested) out.push_back(h.entity);
  }
  std::sort(out.begin(), out.end(),
            [](core::EntityId a, core::EntityId b) { return a.packed() < b.packed(); });
}

}  // namespace bustle::app
