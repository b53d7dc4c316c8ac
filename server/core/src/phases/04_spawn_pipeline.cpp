// Phase 4 of World::step(): the spawn pipeline (spawn_pipeline.hpp) advances
// each live handle by at most one stage, within spawn.per_step_cap.
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
  std::uint32_t created = 0;
  for (SpawnHandleState& h : spawn_.live) {
    // One stage per handle per step, so every stage is observable.
    if (h.state_step == step_index_) continue;
    const bool entity_active = h.entity.packed() != EntityId{}.packed() &&
                               registry_.is_alive(h.entity) &&
                               pedestrians_.dense_of[h.entity.index] != PedestrianStore::kNoSlot;
    switch (h.state) {
      case SpawnState::Queued:
        if (step_index_ > h.deadline_step) {
          set_spawn_state(h, SpawnState::TimedOut);
        } else if (created >= scenario_.spawn.per_step_cap) {
          ++c.deferred_by_cap;
        } else if (const AllocateResult a = registry_.allocate();
                   a.status != AllocateStatus::Allocated) {
          ++c.deferred_by_capacity;
        } else {
          h.entity = a.id;
          ++created;
          set_spawn_state(h, SpawnState::IdentityCreated);
        }
        break;
      case SpawnState::IdentityCreated: {
        // Re-validate the zone's room (its density budget counts community
        // members) before the entity joins the city.
        if (h.zone != kAnyZone) {
          std::uint32_t active = 0;
          for (std::uint32_t cc = 0; cc < scenario_.communities.size(); ++cc) {
            active += population_.active_in(cc, static_cast<std::uint32_t>(h.zone));
          }
          if (active >= scenario_.zones[static_cast<std::size_t>(h.zone)].capacity) {
            defer_or_time_out(h, c.deferred_by_zone);
            break;
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
          // Its lane (or every lane it may use) is closed: it waits, like a
          // full zone, until a lane opens or the deadline passes.
          defer_or_time_out(h, lane_closure_.spawns_deferred_total);
          break;
        }
        // A routed walker starts at the beginning of its first lane.
        const double s = h.route != kNoRoute ? 0.0 : rng_.next_unit() * lanes_.lane(lane).length_m;
        push_pedestrian(h.entity, lane, s, PedestrianStore::kNoResident, h.priority,
                        PedestrianOrigin::Spawned);
        set_pedestrian_route(pedestrians_.size() - 1, h.route);
        h.route = kNoRoute;  // the walker holds it now
        ++counters_.spawned_total;
        set_spawn_state(h, SpawnState::Registered);
        break;
      }
      case SpawnState::Registered:
        if (!entity_active) set_spawn_state(h, SpawnState::Failed, SpawnFailure::EntityGone);
        break;
      default:
        break;
    }
  }
  retire_terminal_spawns();
}

}  // namespace bustle::core
