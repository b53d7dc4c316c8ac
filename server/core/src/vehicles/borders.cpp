// Vehicles across district borders (issue 34; docs/districts.md).
//
// A district world's vehicle phase reads the pre-step state of every vehicle
// it can meet: its own rows, and as ghosts the rows of other districts'
// vehicles on lanes within its look-ahead horizon (leaders, merge feeders,
// entrance feeders). A neighbour's step k leaves those rows in its StepEnd;
// they are applied at this district's step k + 1, before its vehicle phase,
// so every vehicle reads the state after step k, as in one world. A vehicle
// the phase leaves on another district's lane departs with its whole row
// (depart) and is adopted by that district at its next step (adopt), with
// its id, VehicleId, route and place unchanged; the district that sent it
// keeps it as a ghost of its own for that next step (the receiver's
// ghosts are of its state before the arrival). Its garage's district counts
// it as away, so the garage's capacity holds across the city.
//
// Crossings work the same way: a district sends the neighbours whose cars
// yield at one of its crossing lanes whether a pedestrian is on it after its
// step, and keeps for its own next step the crossings of other districts its
// pedestrians just walked onto (foreign_crossings).
//
// Not covered: ghosts from a district that is not a neighbour (lanes shorter
// than the horizon at a corner of three districts).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <queue>
#include <string>

#include "bustle/core/digest.hpp"
#include "bustle/core/vehicles.hpp"
#include "internal.hpp"

namespace bustle::core {

namespace {

Status field_error(const std::string& at, const std::string& what) {
  return Status::invalid_argument(at + ": " + what);
}

}  // namespace

void VehicleSystem::set_district(const std::vector<std::int16_t>& lane_district, std::int32_t own,
                                 std::size_t districts) {
  own_district_ = own;
  const std::size_t lanes = lanes_->size();
  garage_here_.assign(routes_.size(), 0);
  garage_district_.assign(routes_.size(), 0);
  for (std::size_t g = 0; g < routes_.size(); ++g) {
    garage_district_[g] = static_cast<std::uint16_t>(lane_district[routes_[g][0]]);
    garage_here_[g] = lane_district[routes_[g][0]] == own;
  }
  lane_foreign_.assign(lanes, 0);
  for (std::size_t l = 0; l < lanes; ++l) lane_foreign_[l] = lane_district[l] != own;
  std::vector<std::vector<LaneIndex>> preds(lanes);  // the lanes leading onto each
  for (LaneIndex l = 0; l < lanes; ++l) {
    for (const LaneIndex next : lanes_->lane(l).successors) preds[next].push_back(l);
  }
  build_crossing_readers(lane_district, preds);
  // The farthest a vehicle looks ahead from its lane's end (the kernel's
  // look_m at the slowest tier's stride), and the farthest an entrance
  // looks behind it.
  const double dt_s = scenario_->step_us * 1e-6;
  double horizon_m = scenario_->vehicle_rules.headway_caution_m;
  for (std::size_t g = 0; g < routes_.size(); ++g) {
    horizon_m = std::max(horizon_m, route_max_speed_[g] * dt_s * tier_stride(SimTier::Coarse) +
                                        scenario_->vehicle_rules.headway_block_m);
    horizon_m = std::max(horizon_m, entrance_clear_m_[g]);
  }
  horizon_m += 1.0;
  // Per district d: the lanes its vehicles can reach within the horizon
  // (ahead, from the end of each of its lanes), those within the horizon
  // behind its lanes (entrance feeders), and the lanes leading onto the
  // ones ahead (merge feeders). Those of other districts are its ghosts.
  std::vector<std::vector<std::uint16_t>> readers(lanes);
  std::vector<double> ahead(lanes), behind(lanes);
  using Item = std::pair<double, LaneIndex>;
  for (std::size_t d = 0; d < districts; ++d) {
    const auto dd = static_cast<std::int16_t>(d);
    std::fill(ahead.begin(), ahead.end(), horizon_m);
    std::fill(behind.begin(), behind.end(), horizon_m);
    std::priority_queue<Item, std::vector<Item>, std::greater<>> q;
    for (LaneIndex l = 0; l < lanes; ++l) {
      if (lane_district[l] != dd) continue;
      for (const LaneIndex next : lanes_->lane(l).successors) {
        if (ahead[next] > 0.0) q.push({ahead[next] = 0.0, next});
      }
    }
    while (!q.empty()) {  // distance from a district lane's end to each lane's start
      const auto [dist, l] = q.top();
      q.pop();
      if (dist > ahead[l]) continue;
      const double on = dist + lanes_->lane(l).length_m;
      for (const LaneIndex next : lanes_->lane(l).successors) {
        if (on < ahead[next]) q.push({ahead[next] = on, next});
      }
    }
    for (LaneIndex l = 0; l < lanes; ++l) {
      if (lane_district[l] != dd) continue;
      for (const LaneIndex p : preds[l]) {
        if (behind[p] > 0.0) q.push({behind[p] = 0.0, p});
      }
    }
    while (!q.empty()) {  // distance from each lane's end to a district lane's start
      const auto [dist, l] = q.top();
      q.pop();
      if (dist > behind[l]) continue;
      const double on = dist + lanes_->lane(l).length_m;
      for (const LaneIndex p : preds[l]) {
        if (on < behind[p]) q.push({behind[p] = on, p});
      }
    }
    std::vector<std::uint8_t> read(lanes, 0);
    for (LaneIndex l = 0; l < lanes; ++l) {
      if (ahead[l] < horizon_m || behind[l] < horizon_m) read[l] = 1;
      if (ahead[l] < horizon_m || lane_district[l] == dd) {
        for (const LaneIndex p : preds[l]) read[p] = 1;
      }
    }
    for (LaneIndex l = 0; l < lanes; ++l) {
      if (read[l] != 0 && lane_district[l] != dd) readers[l].push_back(dd);
    }
  }
  ghost_to_begin_.assign(1, 0);
  ghost_to_.clear();
  for (std::size_t l = 0; l < lanes; ++l) {
    ghost_to_.insert(ghost_to_.end(), readers[l].begin(), readers[l].end());
    ghost_to_begin_.push_back(static_cast<std::uint32_t>(ghost_to_.size()));
  }
}

// Crossings: a car yields to pedestrians on a crossing of its lane or of
// the next one (the kernel's check_crossings), so the owners of those road
// lanes and of the lanes leading onto them read the crossing's occupancy.
void VehicleSystem::build_crossing_readers(const std::vector<std::int16_t>& lane_district,
                                           const std::vector<std::vector<LaneIndex>>& preds) {
  const std::size_t lanes = lanes_->size();
  std::vector<std::vector<std::uint16_t>> crossing_readers(lanes);
  for (LaneIndex r = 0; r < lanes; ++r) {
    for (const Conflict& c : conflicts_[r]) {
      std::vector<std::uint16_t>& to = crossing_readers[c.crossing];
      to.push_back(static_cast<std::uint16_t>(lane_district[r]));
      for (const LaneIndex p : preds[r]) to.push_back(static_cast<std::uint16_t>(lane_district[p]));
    }
  }
  crossing_readers_begin_.assign(1, 0);
  crossing_readers_.clear();
  for (LaneIndex l = 0; l < lanes; ++l) {
    std::vector<std::uint16_t>& to = crossing_readers[l];
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
    std::erase(to, static_cast<std::uint16_t>(lane_district[l]));  // the owner reads its own
    crossing_readers_.insert(crossing_readers_.end(), to.begin(), to.end());
    crossing_readers_begin_.push_back(static_cast<std::uint32_t>(crossing_readers_.size()));
  }
}

BorderVehicle VehicleSystem::depart(EntityId id) {
  assert(is_vehicle(id));
  const std::uint32_t i = store_.dense_of[id.index];
  assert(store_.waiting_since[i] == 0);  // a waiting vehicle stands at its own loop's end
  BorderVehicle v;
  v.id = id;
  v.garage = store_.garage[i];
  v.ordinal = store_.ordinal[i];
  v.prototype = store_.prototype[i];
  v.route_index = store_.route_index[i];
  v.lane = store_.lane[i];
  v.s_m = store_.s_m[i];
  v.speed_mps = store_.speed_mps[i];
  v.strategy = store_.strategy[i];
  v.control_policy = store_.control_policy[i];
  v.reason = store_.reason[i];
  v.sim_tier = static_cast<std::uint8_t>(store_.sim_tier[i]);
  v.leader = store_.leader[i];
  v.steps_advanced = store_.steps_advanced[i];
  v.last_advance_step = store_.last_advance_step[i];
  v.waiting_since = store_.waiting_since[i];
  v.request_id = store_.request_id[i];
  remove(id);
  if (garage_here(v.garage)) ++garages_[v.garage].away;
  return v;
}

// Where a crossing vehicle or a ghost is: an id away from here, a place on
// its garage's route, on a lane of this district (arrivals) or of another
// (ghosts), within the lane.
Status VehicleSystem::validate_place(EntityId id, std::uint32_t garage, std::uint32_t route_index,
                                     LaneIndex lane, double s_m, const EntityRegistry& registry,
                                     bool foreign) const {
  if (id.is_null() || id.index >= registry.capacity() || !registry.slot_away(id.index))
    return field_error("id", "entity " + id_text(id) + " is not away from here");
  if (garage >= routes_.size()) return field_error("garage", "no such garage");
  const std::vector<LaneIndex>& route = routes_[garage];
  if (route_index >= route.size() || route[route_index] != lane)
    return field_error("route_index", "not the lane's place on the garage's route");
  if (lane_foreign_.empty() || (lane_foreign_[lane] != 0) != foreign) {
    return field_error(
        "lane", std::to_string(lane) + (foreign ? " is" : " is not") + " a lane of this district");
  }
  if (!std::isfinite(s_m) || s_m < 0.0 || s_m > lanes_->lane(lane).length_m)
    return field_error("s_m", "out of the lane");
  return {};
}

Status VehicleSystem::validate_arrival(const BorderVehicle& v,
                                       const EntityRegistry& registry) const {
  if (Status st = validate_place(v.id, v.garage, v.route_index, v.lane, v.s_m, registry,
                                 /*foreign=*/false);
      !st.ok())
    return st;
  if (!std::isfinite(v.speed_mps) || v.speed_mps < 0.0)
    return field_error("speed_mps", "must be finite and not negative");
  if (v.strategy > static_cast<std::uint8_t>(VehicleStrategy::Manual))
    return field_error("strategy", "unknown");
  if (v.control_policy >= kControlPolicyCount) return field_error("control_policy", "unknown");
  if (v.reason > static_cast<std::uint8_t>(PolicyReason::MergeYield))
    return field_error("reason", "unknown");
  if (v.sim_tier >= kSimTierCount) return field_error("sim_tier", "unknown");
  if (v.waiting_since != 0) return field_error("waiting_since", "a waiting vehicle does not cross");
  if (v.prototype >= scenario_->garages[v.garage].prototypes.size())
    return field_error("prototype", "not one of the garage's");
  if (garage_here(v.garage) && garages_[v.garage].away == 0)
    return field_error("garage", "this district's garage has no vehicle away");
  if (v.request_id.size() > 128) return field_error("request_id", "longer than 128 characters");
  return {};
}

void VehicleSystem::adopt(const BorderVehicle& v) {
  append_row(v);
  if (garage_here(v.garage)) --garages_[v.garage].away;  // back home
  lane_min_valid_ = false;
}

Status VehicleSystem::validate_ghost(const VehicleGhost& g, const EntityRegistry& registry) const {
  return validate_place(g.id, g.garage, g.route_index, g.lane, g.s_m, registry, /*foreign=*/true);
}

Status VehicleSystem::validate_crossing(LaneIndex lane) const {
  if (lane >= lanes_->size() || lanes_->lane(lane).kind != LaneKind::Crossing)
    return field_error("crossings", std::to_string(lane) + " is not a crossing lane");
  if (lane_foreign_.empty() || lane_foreign_[lane] == 0)
    return field_error("crossings", std::to_string(lane) + " is a lane of this district");
  return {};
}

void VehicleSystem::returned_away(std::uint32_t garage) {
  assert(garage_here(garage) && garages_[garage].away > 0);
  --garages_[garage].away;
}

void VehicleSystem::share_ghosts(std::span<const BorderVehicle> departed,
                                 std::vector<std::pair<std::uint32_t, VehicleGhost>>& out) {
  assert(ghosts_.empty());  // the step's were dropped after its vehicle phase
  if (ghost_to_begin_.empty()) return;
  const auto own = static_cast<std::uint32_t>(own_district_);
  for (std::uint32_t i = 0; i < store_.size(); ++i) {
    const LaneIndex l = store_.lane[i];
    for (std::uint32_t k = ghost_to_begin_[l]; k < ghost_to_begin_[l + 1]; ++k) {
      out.push_back({ghost_to_[k],
                     {store_.id[i], store_.garage[i], store_.route_index[i], l, store_.s_m[i]}});
    }
  }
  // A vehicle that just left is real in its receiver from the next step on,
  // but that district's ghosts for the others (and for this one) are of its
  // state before the arrival: the sender passes it on as a ghost.
  for (const BorderVehicle& v : departed) {
    const VehicleGhost g{v.id, v.garage, v.route_index, v.lane, v.s_m};
    for (std::uint32_t k = ghost_to_begin_[v.lane]; k < ghost_to_begin_[v.lane + 1]; ++k) {
      if (ghost_to_[k] == own) {
        ghosts_.push_back(g);
      } else {
        out.push_back({ghost_to_[k], g});
      }
    }
  }
}

}  // namespace bustle::core
