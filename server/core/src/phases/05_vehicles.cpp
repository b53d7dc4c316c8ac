// Phase 5 of World::step(): vehicles (VehicleSystem::step in vehicles/kernel.cpp),
// fed the pre-step crossing occupancy; their despawn requests join the
// world's single despawn phase (phase 9).
#include <algorithm>
#include <cassert>

#include "bustle/core/world.hpp"

namespace bustle::core {

void World::phase_vehicles() {
  if (scenario_.garages.empty()) return;
  // Crossing occupancy from the pre-step pedestrian state (phase 6 has not run).
  assert(crossing_occupied_.size() == lanes_.size());
  std::fill(crossing_occupied_.begin(), crossing_occupied_.end(), 0);
  for (std::uint32_t i = 0; i < pedestrians_.size(); ++i) {
    if (lanes_.lane(pedestrians_.lane[i]).kind == LaneKind::Crossing)
      crossing_occupied_[pedestrians_.lane[i]] = 1;
  }
  // A district world: other districts' crossings with someone on them.
  for (const LaneIndex l : vehicles_.foreign_crossings()) crossing_occupied_[l] = 1;
  vehicle_despawns_.clear();
  vehicles_.step(step_index_, scenario_.step_us, registry_, crossing_occupied_, tier_observers_,
                 vehicle_despawns_, executor());
  // Every request names a vehicle alive this step (phase 9 removes it).
  for (const VehicleSystem::DespawnRequest& d : vehicle_despawns_) {
    assert(registry_.is_alive(d.id));
    request_despawn(d.id, d.reason);
  }
  if (scenario_.own_district >= 0) leave_by_border_vehicles();  // world_districts.cpp
}

}  // namespace bustle::core
