// Test-only access to the state behind World::check_invariants().
//
// The invariant tests must corrupt state on purpose and see the exact
// invariant trip. The public seams do not allow that: World::restore()
// validates every field a checkpoint carries and then the digest, so a
// doctored checkpoint never becomes a world. The core classes therefore name
// this struct a friend; it is defined here only, so production code cannot
// use it.
#pragma once

#include "bustle/core/world.hpp"

namespace bustle::core {

struct InvariantProbe {
  static EntityRegistry& registry(World& w) { return w.registry_; }
  static std::vector<std::uint32_t>& free_ring(EntityRegistry& r) { return r.free_ring_; }
  static std::uint32_t free_head(const EntityRegistry& r) { return r.free_head_; }
  static std::vector<std::uint32_t>& generations(EntityRegistry& r) { return r.generation_; }
  static PedestrianStore& pedestrians(World& w) { return w.pedestrians_; }
  static VehicleStore& vehicles(World& w) { return w.vehicles_.store_; }
  static std::vector<GarageState>& garages(World& w) { return w.vehicles_.garages_; }
  static std::vector<std::uint32_t>& active_cz(World& w) { return w.population_.active_cz_; }
  static std::vector<WorkPointState>& work_points(World& w) { return w.population_.work_points_; }
  static SpawnPipelineState& spawn(World& w) { return w.spawn_; }
  static std::vector<EntityId>& retiring_fifo(World& w) { return w.retiring_fifo_; }
  static std::vector<ObserverView>& client_observer_views(World& w) {
    return w.client_observer_views_;
  }
  static std::vector<Vec2>& tier_observers(World& w) { return w.tier_observers_; }
  // Phase 7's batch of effective distances, and the one-point definition
  // each of them must equal (tests/core/importance_test.cpp).
  static void pedestrian_effective_distances(const World& w, const std::uint32_t* rows,
                                             std::uint32_t count, double* out_m) {
    w.pedestrian_effective_distances(rows, count, out_m);
  }
  static double effective_distance_at(const World& w, Vec2 p, LaneIndex lane, PriorityClass cls) {
    return w.effective_distance_at(p, lane, cls, false);
  }
};

}  // namespace bustle::core
