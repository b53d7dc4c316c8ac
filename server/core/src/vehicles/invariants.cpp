// VehicleSystem::check_invariants: invariants 1, 2, 3, 5 and 6 and the
// store's consistency, checked between steps, section by section.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "bustle/core/vehicles.hpp"
#include "internal.hpp"

namespace bustle::core {

// Invariants 1, 2, 3 and 5 and the store's consistency, section by section;
// the first violation found, or empty.
Status VehicleSystem::check_invariants(const EntityRegistry& registry) const {
  std::vector<std::uint32_t> managed;
  if (Status why = check_store_rows(registry, managed); !why.ok()) return why;
  if (Status why = check_garages(managed); !why.ok()) return why;
  if (Status why = check_mouths(registry); !why.ok()) return why;
  if (Status why = check_vehicle_ids_and_headways(); !why.ok()) return why;
  return check_derived();
}

// Columns, ids, routes, lanes and known values per row; counts each
// garage's vehicles into `managed`.
Status VehicleSystem::check_store_rows(const EntityRegistry& registry,
                                       std::vector<std::uint32_t>& managed) const {
  const std::string area = "vehicles: ";
  auto vehicle = [&](std::uint32_t i) { return "vehicle " + id_text(store_.id[i]); };
  const std::uint32_t n = store_.size();
  const bool columns_ok =
      store_.garage.size() == n && store_.ordinal.size() == n && store_.prototype.size() == n &&
      store_.route_index.size() == n && store_.lane.size() == n && store_.s_m.size() == n &&
      store_.speed_mps.size() == n && store_.strategy.size() == n &&
      store_.control_policy.size() == n && store_.reason.size() == n &&
      store_.sim_tier.size() == n && store_.leader.size() == n &&
      store_.steps_advanced.size() == n && store_.last_advance_step.size() == n &&
      store_.waiting_since.size() == n && store_.despawn_requested.size() == n &&
      store_.request_id.size() == n && cold_hash_.size() == n;
  if (!columns_ok) return Status::internal("vehicles: column lengths differ");
  managed.assign(garages_.size(), 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    const EntityId id = store_.id[i];
    if (!registry.is_alive(id))
      return Status::internal(area + vehicle(i) + " is not alive in the registry");
    if (store_.dense_of[id.index] != i) {
      return Status::internal(area + "dense_of[" + std::to_string(id.index) + "] is " +
                              std::to_string(store_.dense_of[id.index]) + ", " + vehicle(i) +
                              " is in slot " + std::to_string(i));
    }
    if (store_.garage[i] >= garages_.size())
      return Status::internal(area + vehicle(i) + " has unknown garage " +
                              std::to_string(store_.garage[i]));
    const auto& route = routes_[store_.garage[i]];
    if (store_.route_index[i] >= route.size() || route[store_.route_index[i]] != store_.lane[i]) {
      return Status::internal(area + vehicle(i) + " on lane " + std::to_string(store_.lane[i]) +
                              " is not at route index " + std::to_string(store_.route_index[i]) +
                              " of its garage route");
    }
    if (!(store_.s_m[i] >= 0.0 && store_.s_m[i] <= lanes_->lane(store_.lane[i]).length_m)) {
      return Status::internal(area + vehicle(i) + " at s " + std::to_string(store_.s_m[i]) +
                              " m is off lane " + std::to_string(store_.lane[i]));
    }
    if (tier_index(store_.sim_tier[i]) >= kSimTierCount ||
        store_.control_policy[i] >= kControlPolicyCount)
      return Status::internal(area + vehicle(i) + " has an unknown tier or policy");
    ++managed[store_.garage[i]];
  }
  std::uint32_t mapped = 0;
  for (const std::uint32_t d : store_.dense_of) mapped += d != VehicleStore::kNoSlot;
  if (mapped != n)
    return Status::internal(area + std::to_string(mapped) + " dense_of entries for " +
                            std::to_string(n) + " vehicles");
  return {};
}

// Per garage: managed counts and capacity, invariants 1-3 of its queue.
Status VehicleSystem::check_garages(const std::vector<std::uint32_t>& managed) const {
  const std::string area = "vehicles: ";
  for (std::uint32_t g = 0; g < garages_.size(); ++g) {
    const GarageState& gs = garages_[g];
    const std::string garage = "garage " + scenario_->garages[g].id;
    if (managed[g] != managed_[g]) {
      return Status::internal(area + garage + " counts " + std::to_string(managed_[g]) +
                              " managed vehicles, " + std::to_string(managed[g]) +
                              " are in the store");
    }
    if (managed[g] + gs.mouth.size() + gs.away > scenario_->garages[g].capacity)
      return Status::internal(
          area + garage +
          " manages more vehicles (on the road and in its mouth) than its capacity");
    // 1. A request id is in at most one of {queue, dispatched}, once.
    for (std::size_t k = 1; k < gs.dispatched.size(); ++k) {
      if (!(gs.dispatched[k - 1] < gs.dispatched[k]))
        return Status::internal(area + "invariant 1: " + garage +
                                " dispatched ids are not a sorted set");
    }
    std::vector<std::string_view> queued;
    for (const QueuedRequest& q : gs.queue) {
      if (std::binary_search(gs.dispatched.begin(), gs.dispatched.end(), q.request_id)) {
        return Status::internal(area + "invariant 1: " + garage + " request '" + q.request_id +
                                "' is both queued and dispatched");
      }
      queued.push_back(q.request_id);
    }
    std::sort(queued.begin(), queued.end());
    if (auto twice = std::adjacent_find(queued.begin(), queued.end()); twice != queued.end()) {
      return Status::internal(area + "invariant 1: " + garage + " request '" + std::string(*twice) +
                              "' is queued twice");
    }
    // 2. Priority (desc), then EnqueueOrdinal (asc).
    for (std::size_t k = 1; k < gs.queue.size(); ++k) {
      if (!queue_in_order(gs.queue[k - 1], gs.queue[k])) {
        return Status::internal(area + "invariant 2: " + garage + " queue[" + std::to_string(k) +
                                "] ('" + gs.queue[k].request_id +
                                "') is out of priority, then ordinal order");
      }
    }
    // 3. Ordinals below next_vehicle_ordinal (a load continues the numbering, so >= dispatches).
    if (gs.next_vehicle_ordinal < gs.dispatched.size()) {
      return Status::internal(area + "invariant 3: " + garage + " next_vehicle_ordinal " +
                              std::to_string(gs.next_vehicle_ordinal) + " is below its " +
                              std::to_string(gs.dispatched.size()) + " dispatches");
    }
  }
  return {};
}

// The garage mouths: within mouth_capacity; each vehicle alive, not on the
// road, in no other mouth, its request dispatched (invariant 1); front first
// in dispatch order: ordinals increasing from the front, above every ordinal
// of its garage on the road and below next_vehicle_ordinal (invariant 3).
Status VehicleSystem::check_mouths(const EntityRegistry& registry) const {
  const std::string area = "vehicles: ";
  std::vector<std::uint64_t> road_max(garages_.size(), 0);
  std::vector<std::uint8_t> on_road(garages_.size(), 0);
  for (std::uint32_t i = 0; i < store_.size(); ++i) {
    road_max[store_.garage[i]] = std::max(road_max[store_.garage[i]], store_.ordinal[i]);
    on_road[store_.garage[i]] = 1;
  }
  std::vector<EntityId> ids;
  for (std::uint32_t g = 0; g < garages_.size(); ++g) {
    const GarageState& gs = garages_[g];
    const GarageSpec& spec = scenario_->garages[g];
    const std::string garage = "garage " + spec.id + " mouth";
    if (gs.mouth.size() > spec.mouth_capacity) {
      return Status::internal(area + garage + " holds " + std::to_string(gs.mouth.size()) +
                              " vehicles, its mouth_capacity is " +
                              std::to_string(spec.mouth_capacity));
    }
    for (std::size_t k = 0; k < gs.mouth.size(); ++k) {
      const MouthVehicle& m = gs.mouth[k];
      const std::string at = garage + "[" + std::to_string(k) + "] (" + id_text(m.id) + ")";
      if (!registry.is_alive(m.id))
        return Status::internal(area + at + " is not alive in the registry");
      if (is_vehicle(m.id)) return Status::internal(area + at + " is also on the road");
      if (m.prototype >= spec.prototypes.size())
        return Status::internal(area + at + " has an unknown prototype");
      if (!std::binary_search(gs.dispatched.begin(), gs.dispatched.end(), m.request_id)) {
        return Status::internal(area + "invariant 1: " + at + " request '" + m.request_id +
                                "' is not in the dispatched set");
      }
      const bool after_previous =
          k > 0 ? m.ordinal > gs.mouth[k - 1].ordinal : on_road[g] == 0 || m.ordinal > road_max[g];
      if (!after_previous || m.ordinal >= gs.next_vehicle_ordinal) {
        return Status::internal(
            area + "invariant 3: " + at + " has ordinal " + std::to_string(m.ordinal) +
            ": not after the vehicles ahead of it and below next_vehicle_ordinal");
      }
      ids.push_back(m.id);
    }
  }
  std::sort(ids.begin(), ids.end());
  if (auto twice = std::adjacent_find(ids.begin(), ids.end()); twice != ids.end())
    return Status::internal(area + "vehicle " + id_text(*twice) + " is in a mouth twice");
  return {};
}

// Invariant 3 (VehicleIds never repeat) and 5 (headway per lane), over the
// store sorted two ways.
Status VehicleSystem::check_vehicle_ids_and_headways() const {
  const std::uint32_t n = store_.size();
  const std::string area = "vehicles: ";
  auto vehicle = [&](std::uint32_t i) { return "vehicle " + id_text(store_.id[i]); };
  // 3. VehicleIds never repeat: (garage, ordinal) unique, ordinal already issued.
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return store_.garage[a] != store_.garage[b] ? store_.garage[a] < store_.garage[b]
                                                : store_.ordinal[a] < store_.ordinal[b];
  });
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t i = order[k];
    // Another district's garage issues its ordinals there (borders.cpp).
    if (garage_here(store_.garage[i]) &&
        store_.ordinal[i] >= garages_[store_.garage[i]].next_vehicle_ordinal) {
      return Status::internal(area + "invariant 3: " + vehicle(i) + " has VehicleId " +
                              vehicle_id(i) + ", not yet issued");
    }
    if (k > 0 && store_.garage[order[k - 1]] == store_.garage[i] &&
        store_.ordinal[order[k - 1]] == store_.ordinal[i]) {
      return Status::internal(area + "invariant 3: " + vehicle(order[k - 1]) + " and " +
                              vehicle(i) + " share VehicleId " + vehicle_id(i));
    }
  }
  if (Status why = check_headways(order); !why.ok()) return why;
  return check_merges(order);
}

// 5. Each vehicle at least headway_block_m behind the next one along its
// route: the next on its lane by (s, EntityId), else the rear-most vehicle
// on the lanes its route continues onto (lane joins and the loop seam),
// walked while the distance is below the headway. O(n log n).
Status VehicleSystem::check_headways(std::vector<std::uint32_t>& order) const {
  const std::uint32_t n = store_.size();
  auto vehicle = [&](std::uint32_t i) { return "vehicle " + id_text(store_.id[i]); };
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (store_.lane[a] != store_.lane[b]) return store_.lane[a] < store_.lane[b];
    return store_.s_m[a] != store_.s_m[b] ? store_.s_m[a] < store_.s_m[b]
                                          : store_.id[a] < store_.id[b];
  });
  std::vector<std::uint32_t> rear(lanes_->size(), VehicleStore::kNoSlot);  // per lane: smallest s
  for (std::uint32_t k = n; k-- > 0;) rear[store_.lane[order[k]]] = order[k];
  const double block = scenario_->vehicle_rules.headway_block_m;
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t behind = order[k];
    std::uint32_t ahead = VehicleStore::kNoSlot;
    double gap = 0.0;
    if (k + 1 < n && store_.lane[order[k + 1]] == store_.lane[behind]) {
      ahead = order[k + 1];
      gap = store_.s_m[ahead] - store_.s_m[behind];
    } else {
      const std::uint32_t garage = store_.garage[behind];
      const auto& route = routes_[garage];
      std::uint32_t ri = store_.route_index[behind];
      gap = lanes_->lane(store_.lane[behind]).length_m - store_.s_m[behind];
      for (std::uint32_t hop = 0; hop < 64 && gap < block - kEps; ++hop) {
        if (ri + 1 < route.size()) {
          ++ri;
        } else if (route_loops_[garage] != 0) {
          ri = 0;
        } else {
          break;
        }
        if (const std::uint32_t j = rear[route[ri]]; j != VehicleStore::kNoSlot) {
          if (j != behind) ahead = j;
          gap += store_.s_m[j];
          break;
        }
        gap += lanes_->lane(route[ri]).length_m;
      }
    }
    if (ahead != VehicleStore::kNoSlot && gap < block - kEps) {
      return Status::internal("vehicles: invariant 5: " + vehicle(behind) + " on lane " +
                              std::to_string(store_.lane[behind]) + " is " + std::to_string(gap) +
                              " m behind " + vehicle(ahead) + " on lane " +
                              std::to_string(store_.lane[ahead]) + " along its route (at s " +
                              std::to_string(store_.s_m[behind]) + " m; headway_block_m " +
                              std::to_string(block) + ")");
    }
  }
  return {};
}

// 6. At each merge, the vehicles within headway_block_m of the merge point
// (on the merge lane, or on a feeder with their route continuing onto it)
// are at least headway_block_m apart on the merge axis when on different
// lanes (pairs on one lane are invariant 5's). `order` is sorted by (lane,
// s, EntityId) (check_headways). O(merges x feeders x log n + near pairs).
Status VehicleSystem::check_merges(const std::vector<std::uint32_t>& order) const {
  const double block = scenario_->vehicle_rules.headway_block_m;
  const auto on_lane = [&](LaneIndex l) {
    const auto b =
        std::lower_bound(order.begin(), order.end(), l,
                         [&](std::uint32_t i, LaneIndex x) { return store_.lane[i] < x; });
    const auto e = std::upper_bound(
        b, order.end(), l, [&](LaneIndex x, std::uint32_t i) { return x < store_.lane[i]; });
    return std::pair{b, e};
  };
  struct Near {
    double x_m;
    LaneIndex lane;
    std::uint32_t i;
  };
  std::vector<Near> near;
  for (std::uint32_t m = 0; m < merge_lane_.size(); ++m) {
    near.clear();
    const auto [mb, me] = on_lane(merge_lane_[m]);
    for (auto it = mb; it != me && store_.s_m[*it] < block - kEps; ++it)
      near.push_back({store_.s_m[*it], merge_lane_[m], *it});
    for (std::uint32_t k = merge_feeder_begin_[m]; k < merge_feeder_begin_[m + 1]; ++k) {
      const LaneIndex f = merge_feeders_[k];
      const double length_m = lanes_->lane(f).length_m;
      const auto [fb, fe] = on_lane(f);
      for (auto it = fe; it != fb;) {
        const std::uint32_t i = *--it;
        if (length_m - store_.s_m[i] >= block - kEps) break;
        if (next_on_route(i) == merge_lane_[m]) near.push_back({store_.s_m[i] - length_m, f, i});
      }
    }
    std::sort(near.begin(), near.end(), [](const Near& a, const Near& b) { return a.x_m < b.x_m; });
    for (std::size_t a = 0; a < near.size(); ++a) {
      for (std::size_t b = a + 1; b < near.size(); ++b) {
        if (near[a].lane == near[b].lane || near[b].x_m - near[a].x_m >= block - kEps) continue;
        return Status::internal(
            "vehicles: invariant 6: vehicle " + id_text(store_.id[near[a].i]) + " on lane " +
            std::to_string(near[a].lane) + " and vehicle " + id_text(store_.id[near[b].i]) +
            " on lane " + std::to_string(near[b].lane) + " are " +
            std::to_string(near[b].x_m - near[a].x_m) + " m apart at the merge onto lane " +
            std::to_string(merge_lane_[m]) + " (headway_block_m " + std::to_string(block) + ")");
      }
    }
  }
  return {};
}

// The derived state the step maintains instead of recounting.
Status VehicleSystem::check_derived() const {
  const std::uint32_t n = store_.size();
  const std::string area = "vehicles: ";
  auto vehicle = [&](std::uint32_t i) { return "vehicle " + id_text(store_.id[i]); };
  // The folded digest words, policy and tier counts, the turnaround
  // waiting lists.
  std::uint64_t sum = 0;
  std::array<std::uint32_t, kControlPolicyCount> policies{};
  std::array<std::uint32_t, kSimTierCount> tiers{};
  std::size_t waiting = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (hash_[i] != vehicle_word(i))
      return Status::internal(area + vehicle(i) +
                              " changed without its digest word being refolded");
    sum += hash_[i];
    ++policies[store_.control_policy[i]];
    ++tiers[tier_index(store_.sim_tier[i])];
    if (store_.waiting_since[i] != 0) {
      const auto& w = waiting_[store_.garage[i]];
      if (!std::binary_search(w.begin(), w.end(), Waiter{store_.waiting_since[i], store_.id[i]})) {
        return Status::internal(area + vehicle(i) +
                                " awaits turnaround but is not on its garage's waiting list");
      }
      ++waiting;
    }
  }
  if (sum != hash_sum_)
    return Status::internal("vehicles: the folded digest sum differs from its vehicles' words");
  if (policies != control_policy_count_)
    return Status::internal("vehicles: the maintained per-policy counts differ from the store");
  if (tiers != sim_tier_count_)
    return Status::internal("vehicles: the maintained per-tier counts differ from the store");
  std::size_t listed = 0;
  for (const auto& w : waiting_) listed += w.size();
  if (listed != waiting)
    return Status::internal(area +
                            "the turnaround waiting lists hold vehicles that are not waiting");
  return {};
}

}  // namespace bustle::core
