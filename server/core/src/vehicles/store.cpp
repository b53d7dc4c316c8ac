// The vehicle store's rows: adding (push_vehicle) and removing a vehicle,
// its strategy and despawn marks, the turnaround waiting lists, and the
// periodic regrouping of rows by garage (regroup_store).
#include <algorithm>
#include <cassert>
#include <string>
#include <utility>
#include <vector>

#include "bustle/core/digest.hpp"
#include "bustle/core/vehicles.hpp"

namespace bustle::core {

namespace {

// Swap-remove: the store's rows are unordered (invariant 4).
template <class T>
void erase_at(std::vector<T>& v, std::uint32_t slot) {
  v[slot] = std::move(v.back());
  v.pop_back();
}

}  // namespace

bool VehicleSystem::is_vehicle(EntityId id) const {
  return id.index < store_.dense_of.size() && store_.dense_of[id.index] != VehicleStore::kNoSlot &&
         store_.id[store_.dense_of[id.index]] == id;
}

void VehicleSystem::mark_despawn(EntityId id) {
  if (!is_vehicle(id)) return;
  const std::uint32_t i = store_.dense_of[id.index];
  store_.despawn_requested[i] = 1;
  refold(i);
}

bool VehicleSystem::set_strategy(EntityId id, VehicleStrategy s) {
  if (!is_vehicle(id)) return false;
  const std::uint32_t i = store_.dense_of[id.index];
  store_.strategy[i] = static_cast<std::uint8_t>(s);
  refold(i);
  return true;
}

void VehicleSystem::start_waiting(std::uint32_t i, std::uint64_t step_index) {
  store_.waiting_since[i] = step_index;
  auto& w = waiting_[store_.garage[i]];
  const Waiter me{step_index, store_.id[i]};
  w.insert(std::upper_bound(w.begin(), w.end(), me), me);
}

void VehicleSystem::stop_waiting(std::uint32_t i) {
  auto& w = waiting_[store_.garage[i]];
  const Waiter me{store_.waiting_since[i], store_.id[i]};
  const auto it = std::lower_bound(w.begin(), w.end(), me);
  assert(it != w.end() && it->id == me.id);
  w.erase(it);
  store_.waiting_since[i] = 0;
}

void VehicleSystem::push_vehicle(std::uint64_t step_index, EntityId id, std::uint32_t garage,
                                 std::uint64_t ordinal, std::uint32_t prototype,
                                 const std::string& request_id, SimTier tier) {
  assert(managed(garage) < scenario_->garages[garage].capacity);  // the mouth's front left it
  BorderVehicle row;
  row.id = id;
  row.garage = garage;
  row.ordinal = ordinal;
  row.prototype = prototype;
  row.lane = routes_[garage][0];  // s = 0 of its entrance, standing
  row.strategy = static_cast<std::uint8_t>(VehicleStrategy::RouteFollow);
  row.control_policy = static_cast<std::uint8_t>(ControlPolicy::RouteFollow);
  row.reason = static_cast<std::uint8_t>(PolicyReason::Clear);
  row.sim_tier = static_cast<std::uint8_t>(tier);
  row.last_advance_step = step_index;
  row.request_id = request_id;
  append_row(row);
}

// One row at the end of the store, with its derived columns and counts: a
// dispatched vehicle (push_vehicle) or one arriving from another district
// (adopt, borders.cpp). Never waiting, never marked for despawn.
void VehicleSystem::append_row(const BorderVehicle& v) {
  assert(store_.dense_of[v.id.index] ==
         VehicleStore::kNoSlot);  // read back by is_vehicle()/remove()
  const auto tier = static_cast<SimTier>(v.sim_tier);
  store_.dense_of[v.id.index] = store_.size();
  store_.id.push_back(v.id);
  store_.garage.push_back(v.garage);
  store_.ordinal.push_back(v.ordinal);
  store_.prototype.push_back(v.prototype);
  store_.route_index.push_back(v.route_index);
  store_.lane.push_back(v.lane);
  store_.s_m.push_back(v.s_m);
  store_.speed_mps.push_back(v.speed_mps);
  store_.strategy.push_back(v.strategy);
  store_.control_policy.push_back(v.control_policy);
  store_.reason.push_back(v.reason);
  store_.sim_tier.push_back(tier);
  store_.leader.push_back(v.leader);
  store_.steps_advanced.push_back(v.steps_advanced);
  store_.last_advance_step.push_back(v.last_advance_step);
  store_.waiting_since.push_back(0);
  store_.despawn_requested.push_back(0);
  store_.request_id.push_back(v.request_id);
  Digest c;
  c.u64(v.id.packed()).u32(v.garage).u64(v.ordinal).u32(v.prototype).str(v.request_id);
  cold_hash_.push_back(c.value());
  phase_.push_back(id_phase(v.id));
  capacity_tier_.push_back(tier);  // not resolved here yet
  hash_.push_back(0);
  ++control_policy_count_[v.control_policy];
  ++sim_tier_count_[tier_index(tier)];
  refold(store_.size() - 1);
  ++managed_[v.garage];
}

void VehicleSystem::remove(EntityId id) {
  if (!is_vehicle(id)) return;
  const std::uint32_t slot = store_.dense_of[id.index];
  const std::uint32_t last = store_.size() - 1;
  assert(managed_[store_.garage[slot]] > 0);
  --managed_[store_.garage[slot]];
  if (store_.waiting_since[slot] != 0) stop_waiting(slot);
  hash_sum_ -= hash_[slot];
  --control_policy_count_[store_.control_policy[slot]];
  --sim_tier_count_[tier_index(store_.sim_tier[slot])];
  erase_at(hash_, slot);
  erase_at(phase_, slot);
  erase_at(capacity_tier_, slot);
  erase_at(store_.id, slot);
  erase_at(store_.garage, slot);
  erase_at(store_.ordinal, slot);
  erase_at(store_.prototype, slot);
  erase_at(store_.route_index, slot);
  erase_at(store_.lane, slot);
  erase_at(store_.s_m, slot);
  erase_at(store_.speed_mps, slot);
  erase_at(store_.strategy, slot);
  erase_at(store_.control_policy, slot);
  erase_at(store_.reason, slot);
  erase_at(store_.sim_tier, slot);
  erase_at(store_.leader, slot);
  erase_at(store_.steps_advanced, slot);
  erase_at(store_.last_advance_step, slot);
  erase_at(store_.waiting_since, slot);
  erase_at(store_.despawn_requested, slot);
  erase_at(store_.request_id, slot);
  erase_at(cold_hash_, slot);
  if (slot != last) store_.dense_of[store_.id[slot].index] = slot;
  store_.dense_of[id.index] = VehicleStore::kNoSlot;
}

std::string VehicleSystem::vehicle_id(std::uint32_t dense) const {
  const GarageSpec& g = scenario_->garages[store_.garage[dense]];
  return format_vehicle_id(g.vehicle_id_format, g.id, scenario_->id, store_.ordinal[dense]);
}

namespace {
// Applies `order` (new row k = old row order[k]) to one column in place, by
// cycles; `seen` is all zero on entry and on return.
template <class T>
void permute_column(std::vector<T>& v, const std::vector<std::uint32_t>& order,
                    std::vector<std::uint8_t>& seen) {
  const auto n = static_cast<std::uint32_t>(order.size());
  for (std::uint32_t start = 0; start < n; ++start) {
    if (seen[start] || order[start] == start) continue;
    T carried = std::move(v[start]);
    std::uint32_t k = start;
    while (order[k] != start) {
      v[k] = std::move(v[order[k]]);
      seen[k] = 1;
      k = order[k];
    }
    v[k] = std::move(carried);
    seen[k] = 1;
  }
  std::fill(seen.begin(), seen.end(), 0);
}
}  // namespace

// Keeps the rows grouped by garage, then by place along the route: dispatch
// appends and remove() swaps the last row in, so the groups fray; once the
// garage changes between neighbouring rows more than n/16 times beyond the
// grouped minimum (one run per garage with vehicles), the rows are sorted by
// (garage, route index, s, EntityId) again. The kernel then
// reads a route's lanes, signals and leaders from a few cache lines instead
// of one random line per vehicle. The decision is a function of the store
// alone (a restored world regroups exactly when the original did), and the
// order never changes an outcome (invariant 4).
void VehicleSystem::regroup_store() {
  const std::uint32_t n = store_.size();
  const std::uint32_t* const g = store_.garage.data();
  std::uint32_t runs = n > 0 ? 1 : 0;
  for (std::uint32_t i = 1; i < n; ++i) runs += g[i] != g[i - 1] ? 1 : 0;
  std::uint32_t grouped = 0;  // runs when grouped: garages with vehicles
  for (const std::uint32_t m : managed_) grouped += m > 0 ? 1 : 0;
  if (runs <= grouped + n / 16) return;
  regroup_order_.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) regroup_order_[i] = i;
  const VehicleStore& st = store_;
  std::sort(regroup_order_.begin(), regroup_order_.end(), [&st](std::uint32_t a, std::uint32_t b) {
    if (st.garage[a] != st.garage[b]) return st.garage[a] < st.garage[b];
    if (st.route_index[a] != st.route_index[b]) return st.route_index[a] < st.route_index[b];
    if (st.s_m[a] != st.s_m[b]) return st.s_m[a] < st.s_m[b];
    return st.id[a] < st.id[b];
  });
  regroup_seen_.assign(n, 0);
  // Every column below: a new column must be added here too.
  static_assert(sizeof(VehicleStore) == 19 * sizeof(std::vector<std::uint32_t>));
  const auto apply = [this](auto& column) {
    permute_column(column, regroup_order_, regroup_seen_);
  };
  apply(store_.id);
  apply(store_.garage);
  apply(store_.ordinal);
  apply(store_.prototype);
  apply(store_.route_index);
  apply(store_.lane);
  apply(store_.s_m);
  apply(store_.speed_mps);
  apply(store_.strategy);
  apply(store_.control_policy);
  apply(store_.reason);
  apply(store_.sim_tier);
  apply(store_.leader);
  apply(store_.steps_advanced);
  apply(store_.last_advance_step);
  apply(store_.waiting_since);
  apply(store_.despawn_requested);
  apply(store_.request_id);
  apply(cold_hash_);
  apply(hash_);
  apply(phase_);
  apply(capacity_tier_);
  for (std::uint32_t i = 0; i < n; ++i) store_.dense_of[store_.id[i].index] = i;
}

}  // namespace bustle::core
