// Phase 4 of World::step(): the spawn pipeline (spawn_pipeline.hpp) advances
// each live handle by at most one stage; Queued handles become identities
// most important first (SpawnRank), within spawn.per_step_cap.
#include <algorithm>
#include <cassert>

#include "bustle/core/world.hpp"

namespace bustle::core {

// A registered-to-be spawn that cannot join the city this step: past its
// deadline it times out (its id released), else it waits, counted.
template <class Count>
void World::defer_or_time_out(SpawnHandleState& h, Count& deferred) {
  if (step_index_ > h.deadline_step) {
    registry_.release(h.entity);
    set_spawn_state(h, SpawnState::TimedOut);
  } else {
    ++deferred;
  }
}

void World::phase_spawn_pipeline() {
  SpawnCounters& c = spawn_.counters;
  c.deferred_by_cap = c.deferred_by_capacity = c.deferred_by_zone = 0;
  if (spawn_.live.empty()) return;
  // 1. Every stage but Queued -> IdentityCreated, in handle order; the Queued
  // handles that may advance are ranked.
  spawn_order_.clear();
  for (std::uint32_t k = 0; k < spawn_.live.size(); ++k) {
    SpawnHandleState& h = spawn_.live[k];
    // One stage per handle per step, so every stage is observable.
    if (h.state_step == step_index_) continue;
    switch (h.state) {
      case SpawnState::Queued:
        if (step_index_ > h.deadline_step) {
          set_spawn_state(h, SpawnState::TimedOut);
        } else {
          spawn_order_.push_back(spawn_rank(h, k));
        }
        break;
      case SpawnState::IdentityCreated:
        register_spawn(h);
        break;
      case SpawnState::Registered: {
        const bool entity_active =
            !h.entity.is_null() && registry_.is_alive(h.entity) &&
            pedestrians_.dense_of[h.entity.index] != PedestrianStore::kNoSlot;
        if (!entity_active) set_spawn_state(h, SpawnState::Failed, SpawnFailure::EntityGone);
        break;
      }
      default:
        break;
    }
  }
  // 2. Identities for the most important Queued handles (ties by handle).
  std::sort(spawn_order_.begin(), spawn_order_.end());
  assert(spawn_order_.size() <= spawn_.live.size());
  std::uint32_t created = 0;
  for (const SpawnRank& rank : spawn_order_) {
    SpawnHandleState& h = spawn_.live[rank.live_index];
    assert(h.handle == rank.handle);
    assert(h.state == SpawnState::Queued);
    if (created >= scenario_.spawn.per_step_cap) {
      ++c.deferred_by_cap;
    } else if (const AllocateResult a = registry_.allocate();
               a.status != AllocateStatus::Allocated) {
      ++c.deferred_by_capacity;
    } else {
      h.entity = a.id;
      ++created;
      set_spawn_state(h, SpawnState::IdentityCreated);
    }
  }
  // Spawn pipeline: at most per_step_cap identities per step, and every
  // ranked handle either got one or was deferred.
  assert(created <= scenario_.spawn.per_step_cap);
  assert(created + c.deferred_by_cap + c.deferred_by_capacity == spawn_order_.size());
  retire_terminal_spawns();
}

void World::register_spawn(SpawnHandleState& h) {
  // Re-validate the zone's room (its density budget counts community
  // members) before the entity joins the city.
  if (h.zone != kAnyZone) {
    std::uint32_t active = 0;
    for (std::uint32_t cc = 0; cc < scenario_.communities.size(); ++cc) {
      active += population_.active_in(cc, static_cast<std::uint32_t>(h.zone));
    }
    if (active >= scenario_.zones[static_cast<std::size_t>(h.zone)].capacity) {
      defer_or_time_out(h, spawn_.counters.deferred_by_zone);
      return;
    }
  }
  LaneIndex lane = h.lane;
  if (lane == kAnyLane) {
    const auto& pool = h.zone != kAnyZone
                           ? population_.zone_lanes()[static_cast<std::size_t>(h.zone)]
                           : lanes_.sidewalks();
    lane = pick_open_lane(pool);
  } else if (!closed_lanes_.empty() && lane_closed_[lane] != 0) {
    lane = kAnyLane;
  }
  if (lane == kAnyLane) {
    // Its lane (or every lane it may use) is closed: it waits, like a full
    // zone, until a lane opens or the deadline passes.
    defer_or_time_out(h, lane_closure_.spawns_deferred_total);
    return;
  }
  assert(lane < lanes_.size());
  // A routed walker starts at the beginning of its first lane.
  const double s = h.route != kNoRoute ? 0.0 : rng_.next_unit() * lanes_.lane(lane).length_m;
  push_pedestrian(h.entity, lane, s, PedestrianStore::kNoResident, h.priority,
                  PedestrianOrigin::Spawned);
  assert(pedestrians_.id[pedestrians_.size() - 1] == h.entity);
  set_pedestrian_route(pedestrians_.size() - 1, h.route);
  h.route = kNoRoute;  // the walker holds it now
  ++counters_.spawned_total;
  set_spawn_state(h, SpawnState::Registered);
}

}  // namespace bustle::core
