// Phase 4b of World::step() (after the spawn pipeline): prevention
// (prevention.hpp). Response units advance one stage each: Queued units are
// placed within prevention.spawn_per_step, Active ones whose entity left or
// died are Lost, Retiring ones whose entity has left are Despawned. Then,
// every prevention.cleanup_every_steps steps, corpse cleanup sorts the
// corpses into the three ranges and, under resource pressure, removes one
// kept corpse. Everything it removes goes through phase 9 (request_despawn).
// O(units + corpses x observers) per step; nothing at all when both are empty.
#include <algorithm>
#include <cassert>
#include <limits>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {
namespace {

constexpr std::uint32_t kPlacementTries = 8;

}  // namespace

void World::phase_prevention() {
  prevention_.deferred_last_step = 0;
  if (!prevention_.units.empty()) advance_response_units();
  if (!prevention_.corpses.empty() && step_index_ % scenario_.prevention.cleanup_every_steps == 0) {
    clean_up_corpses();
  }
}

void World::advance_response_units() {
  PreventionState& p = prevention_;
  std::uint32_t placed = 0;
  std::erase_if(p.units, [&](ResponseUnit& u) {
    PreventionLevelCounts& counts = p.per_level[u.level - 1];
    const bool walking =
        u.state != ResponseUnitState::Queued &&
        walking_slot(registry_, pedestrians_, u.entity) != PedestrianStore::kNoSlot;
    switch (u.state) {
      case ResponseUnitState::Queued:
        // One stage per step: a unit queued by this step's command waits a step.
        if (u.state_step == step_index_) return false;
        if (placed >= scenario_.prevention.spawn_per_step || !place_response_unit(u)) {
          ++p.deferred_last_step;
          return false;
        }
        ++placed;
        ++counts.spawned;
        return false;
      case ResponseUnitState::Active:
        if (walking && !is_corpse(u.entity)) return false;
        ++counts.lost;
        return true;
      case ResponseUnitState::Retiring:
        if (walking) return false;
        ++counts.despawned;
        return true;
      default:
        assert(false && "a terminal response unit stayed in the live list");
        return true;
    }
  });
}

// A sidewalk point in the ring around the first observer (the scenario /
// operator ones first, then the clients'), and an identity; false (and
// nothing changed but the PRNG) when there is no observer, no point was found
// in kPlacementTries draws, or the registry is full.
bool World::place_response_unit(ResponseUnit& u) {
  const std::vector<LaneIndex>& sidewalks = lanes_.sidewalks();
  if (sidewalks.empty() || tier_observers_.empty()) return false;
  const Vec2 centre = tier_observers_.front();
  const double r_min = scenario_.prevention.ring_min_m, r_max = scenario_.prevention.ring_max_m;
  for (std::uint32_t t = 0; t < kPlacementTries; ++t) {
    const LaneIndex lane = sidewalks[rng_.next_below(static_cast<std::uint32_t>(sidewalks.size()))];
    const double s = rng_.next_unit() * lanes_.lane(lane).length_m;
    const Vec2 q = lanes_.position(lane, s);
    const double dx = q.x_m - centre.x_m, dy = q.y_m - centre.y_m;
    const double d2 = dx * dx + dy * dy;
    if (d2 < r_min * r_min || d2 > r_max * r_max) continue;
    const AllocateResult a = registry_.allocate();
    if (a.status != AllocateStatus::Allocated) return false;
    push_pedestrian(a.id, lane, s, PedestrianStore::kNoResident, PriorityClass::Quest,
                    PedestrianOrigin::Spawned);
    u.entity = a.id;
    u.state = ResponseUnitState::Active;
    u.state_step = step_index_;
    return true;
  }
  return false;
}

void World::clean_up_corpses() {
  if (tier_observers_.empty()) return;  // no one to be near or far from
  PreventionState& p = prevention_;
  const PreventionSpec& spec = scenario_.prevention;
  ++p.corpse.cleanup_passes;
  const double keep2 = spec.corpse_keep_m * spec.corpse_keep_m;
  const double force2 = spec.corpse_force_m * spec.corpse_force_m;
  std::uint32_t removed = 0;
  // The farthest kept corpse off screen and on screen (ties: the lower id,
  // which comes first in the sorted list).
  EntityId far_hidden{}, far_visible{};
  double far_hidden_d2 = -1.0, far_visible_d2 = -1.0;
  for (const CorpseRecord& c : p.corpses) {
    const std::uint32_t slot = pedestrians_.dense_of[c.id.index];
    assert(slot != PedestrianStore::kNoSlot && pedestrians_.id[slot] == c.id);
    const Vec2 q = lanes_.position(pedestrians_.lane[slot], pedestrians_.s_m[slot]);
    double d2 = std::numeric_limits<double>::infinity();
    for (const Vec2& o : tier_observers_) {
      const double dx = q.x_m - o.x_m, dy = q.y_m - o.y_m;
      d2 = std::min(d2, dx * dx + dy * dy);
    }
    if (d2 >= force2) {
      request_despawn(c.id, DespawnReason::CorpseForced);
      ++p.corpse.force_deleted;
      ++removed;
    } else if (d2 >= keep2) {
      request_despawn(c.id, DespawnReason::CorpseCleanup);
      ++p.corpse.soft_deleted;
      ++removed;
    } else if (pedestrians_.sim_tier[slot] == SimTier::Coarse) {
      if (d2 > far_hidden_d2) {
        far_hidden = c.id;
        far_hidden_d2 = d2;
      }
    } else if (d2 > far_visible_d2) {
      far_visible = c.id;
      far_visible_d2 = d2;
    }
  }
  const std::uint32_t limit =
      spec.pressure_entities != 0 ? spec.pressure_entities : registry_.capacity();
  if (removed == 0 && p.corpses.size() > spec.corpse_pressure_count &&
      registry_.alive_count() >= limit) {
    const EntityId pick = !far_hidden.is_null() ? far_hidden : far_visible;
    assert(!pick.is_null());  // nothing removed: every corpse was kept
    request_despawn(pick, DespawnReason::CorpsePressure);
    ++p.corpse.pressure_deleted;
  }
}

}  // namespace bustle::core
