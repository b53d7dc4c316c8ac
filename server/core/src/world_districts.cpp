// A district world: one district of a city split across servers (issue 34;
// docs/districts.md). Scenario::own_district names it; every district loads
// the same scenario, so lane indices mean the same lane everywhere.
//
// What changes against a whole-city world:
//   - ids: the registry starts with the district's share of the city's slots
//     (entity_id.hpp, invariant 5), so an id is never issued twice across the
//     city and never changes when its entity crosses;
//   - the pedestrian target is the district's share of pedestrians.count, by
//     sidewalk length, and background upkeep spawns and trims on its own
//     sidewalks only;
//   - phase 6: a background pedestrian entering another district's lane
//     leaves with its unused walking time (BorderPedestrian); phase 9 removes
//     its row and its id goes away here, after the step's despawns asked
//     first (one that is also despawning leaves the city instead);
//   - phase 1: BorderArrivals places the pedestrians a neighbour sent, their
//     ids adopted, each walking its unused time on its new lane;
//   - ids go home: an id released here whose range is another district's
//     (a pedestrian that crossed and then left the city) is sent towards its
//     home, neighbour by neighbour on a shortest way over the map's borders
//     (border_returns, BorderArrivals::returned), and its home queues it
//     again: every district's FIFO keeps holding its own range only.
// Residents, spawned pedestrians and response units do not cross yet: a
// foreign lane is a dead end for them (and a city with zones, work points or
// garages is refused for a district world, scenario_districts.cpp).
#include <algorithm>
#include <cassert>
#include <cmath>

#include "world_internal.hpp"

namespace bustle::core {

namespace {

// District k of n owns slots [range_first(k), range_first(k + 1)).
std::uint32_t range_first(std::uint32_t cap, std::size_t n, std::size_t k) {
  return static_cast<std::uint32_t>(std::uint64_t{cap} * k / n);
}

// Per district, the neighbour of `own` on a shortest way to it over the
// map's borders (the smallest index among equals); -1 for `own` and for a
// district it cannot reach.
std::vector<std::int16_t> next_hops(const std::vector<std::int16_t>& lane_district,
                                    const LaneGraph& lanes, std::size_t n, std::size_t own) {
  std::vector<std::vector<std::uint8_t>> adjacent(n, std::vector<std::uint8_t>(n, 0));
  for (LaneIndex l = 0; l < lanes.size(); ++l) {
    for (const LaneIndex next : lanes.lane(l).successors) {
      const auto a = static_cast<std::size_t>(lane_district[l]);
      const auto b = static_cast<std::size_t>(lane_district[next]);
      adjacent[a][b] = adjacent[b][a] = a != b;
    }
  }
  std::vector<std::int16_t> hop(n, -1);
  for (std::size_t home = 0; home < n; ++home) {
    std::vector<int> dist(n, -1);  // to `home`, breadth first
    std::vector<std::size_t> queue{home};
    dist[home] = 0;
    for (std::size_t q = 0; q < queue.size(); ++q) {
      for (std::size_t d = 0; d < n; ++d) {
        if (adjacent[queue[q]][d] && dist[d] < 0) {
          dist[d] = dist[queue[q]] + 1;
          queue.push_back(d);
        }
      }
    }
    for (std::size_t d = 0; d < n && home != own; ++d) {
      if (adjacent[own][d] && dist[d] >= 0 &&
          (hop[home] < 0 || dist[d] < dist[static_cast<std::size_t>(hop[home])]))
        hop[home] = static_cast<std::int16_t>(d);
    }
  }
  return hop;
}

}  // namespace

EntityRegistry World::make_registry(const Scenario& s) {
  const std::uint32_t cap = s.entity_capacity;
  if (s.own_district < 0) return EntityRegistry(cap);
  const std::size_t n = s.districts.size(), k = static_cast<std::size_t>(s.own_district);
  const std::uint32_t first = range_first(cap, n, k), end = range_first(cap, n, k + 1);
  // A capacity below n leaves some districts no slot: they spawn nothing.
  if (first == end) return EntityRegistry(cap, 0, 0);
  return EntityRegistry(cap, first, end);
}

std::int32_t World::home_district(std::uint32_t index) const {
  if (range_first_.empty()) return -1;
  const auto it = std::upper_bound(range_first_.begin(), range_first_.end(), index);
  return static_cast<std::int32_t>(it - range_first_.begin()) - 1;
}

void World::send_home(EntityId id, std::int32_t garage) {
  const std::int32_t home = home_district(id.index);
  assert(home >= 0 && home != scenario_.own_district);
  const std::int16_t to = next_hop_[static_cast<std::size_t>(home)];
  assert(to >= 0);  // validation: every district reaches every other
  border_returns_.push_back({static_cast<std::uint32_t>(to), id, garage});
}

BorderArrivals World::border_message(std::uint32_t to) const {
  BorderArrivals m;
  m.from_district = static_cast<std::uint32_t>(std::max(scenario_.own_district, 0));
  m.sent_step = step_index_;
  for (const BorderDeparture& d : border_departures_) {
    if (d.to_district == to) m.pedestrians.push_back(d.pedestrian);
  }
  for (const BorderReturn& r : border_returns_) {
    if (r.to_district != to) continue;
    if (r.garage < 0) {
      m.returned.push_back(r.id);
    } else {
      m.returned_vehicles.push_back({r.id, static_cast<std::uint32_t>(r.garage)});
    }
  }
  for (const BorderVehicleDeparture& v : border_vehicles_) {
    if (v.to_district == to) m.vehicles.push_back(v.vehicle);
  }
  for (const BorderGhost& g : border_ghosts_) {
    if (g.to_district == to) m.ghosts.push_back(g.ghost);
  }
  for (const auto& [d, lane] : border_crossing_lanes_) {
    if (d == to) m.crossings.push_back(lane);
  }
  return m;
}

void World::share_crossings() {
  // No car yields anywhere, or at no crossing another district reads: no
  // walk over the pedestrians.
  if (scenario_.garages.empty() || !vehicles_.any_crossing_readers()) return;
  std::vector<LaneIndex>& occupied = border_lane_scratch_;
  occupied.clear();
  for (std::uint32_t i = 0; i < pedestrians_.size(); ++i) {
    const LaneIndex l = pedestrians_.lane[i];
    if (!vehicles_.crossing_readers(l).empty() && lanes_.lane(l).kind == LaneKind::Crossing)
      occupied.push_back(l);
  }
  std::sort(occupied.begin(), occupied.end());
  occupied.erase(std::unique(occupied.begin(), occupied.end()), occupied.end());
  for (const LaneIndex l : occupied) {
    for (const std::uint16_t d : vehicles_.crossing_readers(l))
      border_crossing_lanes_.push_back({d, l});
  }
  // Pedestrians that just walked onto another district's crossing: real
  // there from the next step, so that district's own count of it comes a
  // step late for everyone else; this district passes it on, and keeps it
  // for its own next vehicle phase.
  const auto own = static_cast<std::uint16_t>(scenario_.own_district);
  std::vector<LaneIndex>& self = border_lane_scratch_;  // done with `occupied`
  self.clear();
  for (const BorderDeparture& dep : border_departures_) {
    const LaneIndex l = dep.pedestrian.lane;
    if (lanes_.lane(l).kind != LaneKind::Crossing) continue;
    for (const std::uint16_t d : vehicles_.crossing_readers(l)) {
      if (d == own) {
        self.push_back(l);
      } else {
        border_crossing_lanes_.push_back({d, l});
      }
    }
  }
  std::sort(border_crossing_lanes_.begin(), border_crossing_lanes_.end());
  border_crossing_lanes_.erase(
      std::unique(border_crossing_lanes_.begin(), border_crossing_lanes_.end()),
      border_crossing_lanes_.end());
  std::sort(self.begin(), self.end());
  self.erase(std::unique(self.begin(), self.end()), self.end());
  vehicles_.keep_foreign_crossings(self);
}

std::vector<BorderArrivals> World::border_outbox() const {
  std::vector<BorderArrivals> out;
  for (std::uint32_t d = 0; d < scenario_.districts.size(); ++d) out.push_back(border_message(d));
  return out;
}

// Phase 5, after the vehicles moved: those on another district's lane leave,
// in id order, unless a despawn was asked for them (they leave the city here
// in phase 9); then the ghosts of this step go out (vehicles/borders.cpp).
void World::leave_by_border_vehicles() {
  std::vector<EntityId>& leaving = border_leaving_;
  leaving.clear();
  const VehicleStore& st = vehicles_.store();
  for (std::uint32_t i = 0; i < st.size(); ++i) {
    if (vehicles_.on_foreign_lane(i) && despawn_pending_[st.id[i].index] == 0)
      leaving.push_back(st.id[i]);
  }
  std::sort(leaving.begin(), leaving.end());
  std::vector<BorderVehicle>& departed = border_departed_;
  departed.clear();
  for (const EntityId id : leaving) {
    if (auto f = std::lower_bound(forced_full_.begin(), forced_full_.end(), id);
        f != forced_full_.end() && *f == id) {
      forced_full_.erase(f);  // ForceFull is this server's; the receiver decides its own
    }
    BorderVehicle v = vehicles_.depart(id);
    const bool departed_id = registry_.depart(id);
    assert(departed_id);
    (void)departed_id;
    border_vehicles_.push_back({static_cast<std::uint32_t>(lane_district_[v.lane]), v});
    departed.push_back(std::move(v));
  }
  std::vector<std::pair<std::uint32_t, VehicleGhost>>& ghosts = border_ghost_scratch_;
  ghosts.clear();
  vehicles_.share_ghosts(departed, ghosts);
  for (const auto& [to, g] : ghosts) border_ghosts_.push_back({to, g});
}

void World::init_district() {
  lane_district_ = lane_districts(scenario_, lanes_);
  if (scenario_.districts.empty() || scenario_.own_district < 0) return;
  const std::size_t n = scenario_.districts.size();
  for (std::size_t k = 0; k < n; ++k)
    range_first_.push_back(range_first(scenario_.entity_capacity, n, k));
  next_hop_ =
      next_hops(lane_district_, lanes_, n, static_cast<std::size_t>(scenario_.own_district));
  vehicles_.set_district(lane_district_, scenario_.own_district, n);
  // The district's share of the city's target, by sidewalk length (the
  // ledger's own rule), so the districts' targets add up to about the city's.
  double own_m = 0.0, all_m = 0.0;
  for (const LaneFragment& f : lanes_.fragments()) {
    all_m += f.length_m;
    if (!leaves_district(f.lane)) own_m += f.length_m;
  }
  pedestrian_target_ =
      all_m > 0.0
          ? static_cast<std::uint32_t>(std::lround(scenario_.pedestrians.count * own_m / all_m))
          : 0;
}

Status World::validate_border_arrivals(const BorderArrivals& c) const {
  const std::int32_t own = scenario_.own_district;
  if (own < 0) return Status::failed_precondition("this server owns no district");
  if (c.from_district >= scenario_.districts.size() ||
      c.from_district == static_cast<std::uint32_t>(own)) {
    return Status::invalid_argument("from_district: " + std::to_string(c.from_district) +
                                    " is not another district of the map");
  }
  if (c.pedestrians.size() > kBorderPedestriansMax || c.returned.size() > kBorderPedestriansMax)
    return Status::invalid_argument("pedestrians, returned: more than the limit");
  const double time_max_s = 2.0 * scenario_.step_us * 1e-6 * tier_stride(SimTier::Coarse);
  std::vector<EntityId> ids;
  ids.reserve(c.pedestrians.size());
  for (std::size_t k = 0; k < c.pedestrians.size(); ++k) {
    const BorderPedestrian& p = c.pedestrians[k];
    const std::string at = "pedestrians[" + std::to_string(k) + "].";
    if (p.lane >= lanes_.size() || lane_district_[p.lane] != own ||
        !is_pedestrian_lane(lanes_.lane(p.lane).kind)) {
      return Status::invalid_argument(at + "lane: " + std::to_string(p.lane) +
                                      " is not a pedestrian lane of this district");
    }
    if (!std::isfinite(p.time_left_s) || p.time_left_s < 0.0 || p.time_left_s > time_max_s)
      return Status::invalid_argument(at + "time_left_s: out of range");
    if (p.id.is_null() || p.id.index >= registry_.capacity() || !registry_.slot_away(p.id.index))
      return Status::invalid_argument(at + "id: " + entity_text(p.id) + " is not away from here");
    ids.push_back(p.id);
  }
  if (c.vehicles.size() > kBorderPedestriansMax || c.ghosts.size() > kBorderPedestriansMax ||
      c.returned_vehicles.size() > kBorderPedestriansMax)
    return Status::invalid_argument("vehicles, ghosts, returned_vehicles: more than the limit");
  for (std::size_t k = 0; k < c.vehicles.size(); ++k) {
    if (Status st = vehicles_.validate_arrival(c.vehicles[k], registry_); !st.ok())
      return Status::invalid_argument("vehicles[" + std::to_string(k) + "]." + st.message());
    ids.push_back(c.vehicles[k].id);
  }
  for (std::size_t k = 0; k < c.crossings.size(); ++k) {
    if (Status st = vehicles_.validate_crossing(c.crossings[k]); !st.ok())
      return Status::invalid_argument(st.message() + " (crossings[" + std::to_string(k) + "])");
  }
  if (c.crossings.size() > lanes_.size())
    return Status::invalid_argument("crossings: more than the city's lanes");
  std::vector<EntityId> ghost_ids;
  for (std::size_t k = 0; k < c.ghosts.size(); ++k) {
    if (Status st = vehicles_.validate_ghost(c.ghosts[k], registry_); !st.ok())
      return Status::invalid_argument("ghosts[" + std::to_string(k) + "]." + st.message());
    ghost_ids.push_back(c.ghosts[k].id);
  }
  std::sort(ghost_ids.begin(), ghost_ids.end());
  if (std::adjacent_find(ghost_ids.begin(), ghost_ids.end()) != ghost_ids.end())
    return Status::invalid_argument("ghosts: a vehicle is listed twice");
  // Vehicles of this district's garages back home, or coming back as ids.
  std::vector<std::uint64_t> back(scenario_.garages.size(), 0);
  for (const BorderVehicle& v : c.vehicles) back[v.garage] += vehicles_.garage_here(v.garage);
  for (std::size_t k = 0; k < c.returned_vehicles.size(); ++k) {
    const ReturnedVehicle& r = c.returned_vehicles[k];
    const std::string at = "returned_vehicles[" + std::to_string(k) + "]: ";
    if (r.id.is_null() || r.id.index >= registry_.capacity() || !registry_.slot_away(r.id.index))
      return Status::invalid_argument(at + entity_text(r.id) + " is not away from here");
    if (r.garage >= scenario_.garages.size())
      return Status::invalid_argument(at + "garage " + std::to_string(r.garage) + " is unknown");
    const std::int32_t home = home_district(r.id.index);
    if (home == own) {
      if (!vehicles_.garage_here(r.garage))
        return Status::invalid_argument(at + "garage " + std::to_string(r.garage) +
                                        " is not this district's");
      ++back[r.garage];
    } else if (next_hop_[static_cast<std::size_t>(home)] < 0) {
      return Status::invalid_argument(at + "no way from here to its home district " +
                                      std::to_string(home));
    }
    ids.push_back(r.id);
  }
  for (std::size_t g = 0; g < back.size(); ++g) {
    if (back[g] > vehicles_.garages()[g].away)
      return Status::invalid_argument("vehicles, returned_vehicles: more of garage '" +
                                      scenario_.garages[g].id + "' back than are away");
  }
  for (std::size_t k = 0; k < c.returned.size(); ++k) {
    const EntityId id = c.returned[k];
    const std::string at = "returned[" + std::to_string(k) + "]: ";
    if (id.is_null() || id.index >= registry_.capacity() || !registry_.slot_away(id.index))
      return Status::invalid_argument(at + entity_text(id) + " is not away from here");
    const std::int32_t home = home_district(id.index);
    if (home != own && next_hop_[static_cast<std::size_t>(home)] < 0)
      return Status::invalid_argument(at + "no way from here to its home district " +
                                      std::to_string(home));
    ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  if (const auto twice = std::adjacent_find(
          ids.begin(), ids.end(), [](EntityId a, EntityId b) { return a.index == b.index; });
      twice != ids.end()) {
    return Status::invalid_argument(entity_text(*twice) + " arrives twice");
  }
  return {};
}

// Phase 1: everything is checked before anything changes.
void World::apply_command(const BorderArrivals& c, CommandResult& r) {
  if (Status st = validate_border_arrivals(c); !st.ok()) {
    reject(r, RejectReason::InvalidArgument, "border_arrivals: " + st.message());
    return;
  }
  for (const BorderPedestrian& p : c.pedestrians) {
    const bool adopted = registry_.adopt(p.id);
    assert(adopted);
    (void)adopted;
    // The walk the sender could not finish, on the new lane. Lanes are long
    // against a step's walk; one ending past this lane waits at its end until
    // the row moves again (a few centimetres of progress at most).
    const Lane& lane = lanes_.lane(p.lane);
    const double s_m = std::min(p.time_left_s * lane.speed_mps_limit, lane.length_m);
    push_pedestrian(p.id, p.lane, s_m, PedestrianStore::kNoResident, PriorityClass::Background,
                    PedestrianOrigin::Background);
    const std::uint32_t slot = pedestrians_.dense_of[p.id.index];
    pedestrian_digest_sum_ -= pedestrian_row_hash(slot);
    pedestrians_.hops[slot] = p.hops;
    pedestrian_digest_sum_ += pedestrian_row_hash(slot);
  }
  for (const EntityId id : c.returned) {
    if (home_district(id.index) != scenario_.own_district) {
      send_home(id);  // passed on towards its home
      continue;
    }
    const bool queued = registry_.take_home(id);
    assert(queued);
    (void)queued;
  }
  for (const BorderVehicle& v : c.vehicles) {
    const bool adopted = registry_.adopt(v.id);
    assert(adopted);
    (void)adopted;
    vehicles_.adopt(v);
  }
  for (const VehicleGhost& g : c.ghosts) vehicles_.add_ghost(g);
  for (const std::uint32_t l : c.crossings) vehicles_.add_foreign_crossing(l);
  for (const ReturnedVehicle& rv : c.returned_vehicles) {
    if (home_district(rv.id.index) != scenario_.own_district) {
      send_home(rv.id, static_cast<std::int32_t>(rv.garage));
      continue;
    }
    const bool queued = registry_.take_home(rv.id);
    assert(queued);
    (void)queued;
    vehicles_.returned_away(rv.garage);
  }
  accept(r);
}

// Phase 9, before the despawns: rows that crossed in phase 6 leave, in id
// order, unless a despawn was asked for them this step (they leave the city
// here instead, fading where they stand).
void World::leave_by_border() {
  std::sort(border_crossings_.begin(), border_crossings_.end(),
            [](const BorderPedestrian& a, const BorderPedestrian& b) { return a.id < b.id; });
  for (const BorderPedestrian& p : border_crossings_) {
    if (despawn_pending_[p.id.index] != 0) continue;
    assert(pedestrians_.dense_of[p.id.index] != PedestrianStore::kNoSlot);
    if (auto f = std::lower_bound(forced_full_.begin(), forced_full_.end(), p.id);
        f != forced_full_.end() && *f == p.id) {
      forced_full_.erase(f);  // ForceFull is this server's; the receiver decides its own
    }
    remove_pedestrian(p.id);
    const bool departed = registry_.depart(p.id);
    assert(departed);
    (void)departed;
    border_departures_.push_back({static_cast<std::uint32_t>(lane_district_[p.lane]), p});
  }
  border_crossings_.clear();
}

}  // namespace bustle::core
