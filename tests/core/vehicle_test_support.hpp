// Shared by the vehicle tests: what "array order never changes an outcome"
// needs, a checkpoint whose dense vehicle rows are reversed (every column
// the same way), so a restored world steps them in the opposite order.
#pragma once

#include <algorithm>

#include "bustle/core/vehicles.hpp"

namespace bustle::core::test {

inline void reverse_vehicle_rows(VehicleStore& v) {
  auto rev = [](auto& col) { std::reverse(col.begin(), col.end()); };
  rev(v.id), rev(v.garage), rev(v.ordinal), rev(v.prototype), rev(v.route_index), rev(v.lane),
      rev(v.s_m);
  rev(v.speed_mps), rev(v.strategy), rev(v.control_policy), rev(v.reason), rev(v.sim_tier),
      rev(v.leader);
  rev(v.steps_advanced), rev(v.last_advance_step), rev(v.waiting_since), rev(v.despawn_requested),
      rev(v.request_id);
}

}  // namespace bustle::core::test
