// The vehicle system's digest and checkpoint: each vehicle's digest word and
// the derived state rebuilt from the store, digest_into, capture, and restore
// with its checks (the same rules as check_invariants, reported by path).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "bustle/core/digest.hpp"
#include "bustle/core/vehicles.hpp"
#include "internal.hpp"

namespace bustle::core {

namespace {

// VehicleSystem::restore's error list: (path, message), at most 32.
void add_restore_error(std::vector<std::pair<std::string, std::string>>& errors, std::string path,
                       std::string message) {
  if (errors.size() < 32) errors.emplace_back(std::move(path), std::move(message));
}

}  // namespace

// refold()'s word; the kernel folds the same word from the values at hand.
std::uint64_t VehicleSystem::vehicle_word(std::uint32_t i) const {
  return fold_vehicle(cold_hash_[i], store_.route_index[i], store_.lane[i], store_.s_m[i],
                      store_.speed_mps[i],
                      vehicle_flags(store_.strategy[i], store_.control_policy[i], store_.reason[i],
                                    store_.sim_tier[i], store_.despawn_requested[i]),
                      store_.leader[i], store_.steps_advanced[i], store_.waiting_since[i],
                      store_.last_advance_step[i]);
}

void VehicleSystem::rebuild_derived() {
  const std::uint32_t n = store_.size();
  cold_hash_.clear();
  phase_.clear();
  capacity_tier_ = store_.sim_tier;  // derived, not saved: the applied tier until resolved
  for (std::uint32_t i = 0; i < n; ++i) {
    Digest c;
    c.u64(store_.id[i].packed())
        .u32(store_.garage[i])
        .u64(store_.ordinal[i])
        .u32(store_.prototype[i])
        .str(store_.request_id[i]);
    cold_hash_.push_back(c.value());
    phase_.push_back(id_phase(store_.id[i]));
  }
  hash_.assign(n, 0);
  hash_sum_ = 0;
  for (std::uint32_t i = 0; i < n; ++i) refold(i);
  control_policy_count_.fill(0);
  sim_tier_count_.fill(0);
  for (auto& w : waiting_) w.clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    ++control_policy_count_[store_.control_policy[i]];
    ++sim_tier_count_[tier_index(store_.sim_tier[i])];
    if (store_.waiting_since[i] != 0)
      waiting_[store_.garage[i]].push_back({store_.waiting_since[i], store_.id[i]});
  }
  for (auto& w : waiting_) std::sort(w.begin(), w.end());
}

void VehicleSystem::digest_into(Digest& d) const {
  d.tag(20).u32(store_.size());
  d.u64(hash_sum_);  // order-independent over the dense arrays, folded as vehicles change
  // Garages and signals change every step (queue frames, gate counts, phase
  // clocks): their scalars are folded in pairs (fold_pair), a record per
  // garage or signal salted by its index, and summed; queued requests (rare,
  // variable length) go through the Digest chain.
  d.tag(21).u32(static_cast<std::uint32_t>(garages_.size()));
  std::uint64_t garages = 0;
  for (std::uint32_t gi = 0; gi < garages_.size(); ++gi) {
    const GarageState& g = garages_[gi];
    if (!g.queue.empty()) {
      d.u32(gi).u64(g.queue.size());
      for (const QueuedRequest& q : g.queue)
        d.str(q.request_id)
            .u32(q.prototype)
            .u64(static_cast<std::uint64_t>(q.priority))
            .u64(q.enqueue_ordinal);
    }
    if (!g.mouth.empty()) {  // vehicles dispatched into the mouth (empty without one)
      d.tag(25).u32(gi).u64(g.mouth.size());
      for (const MouthVehicle& m : g.mouth)
        d.u64(m.id.packed()).u64(m.ordinal).u32(m.prototype).str(m.request_id);
    }
    const std::uint64_t salt = std::uint64_t{gi} << 8;
    const std::uint64_t small =
        (std::uint64_t{g.has_dispatched} << 8) | static_cast<std::uint64_t>(g.last_gate);
    std::uint64_t w = fold_pair(g.dispatched.size(), dispatched_hash_[gi], salt | 1) +
                      fold_pair(g.frame_index, g.last_dispatch_frame, salt | 2) +
                      fold_pair(g.next_enqueue_ordinal, g.next_vehicle_ordinal, salt | 3) +
                      fold_pair(g.turnarounds, small, salt | 4) +
                      fold_pair(g.gate_steps[0], g.gate_steps[1], salt | 5) +
                      fold_pair(g.gate_steps[2], g.gate_steps[3], salt | 6) +
                      fold_pair(g.gate_steps[4], g.gate_steps[5], salt | 7) +
                      fold_pair(g.rejected_invalid, g.rejected_duplicate, salt | 8) +
                      fold_pair(g.rejected_queue_full, g.canceled, salt | 9);
    static_assert(kDispatchGateCount == 6);
    if (g.away != 0) w += fold_pair(g.away, 0x41574159, salt | 10);  // district worlds only
    garages += mix64(w ^ g.queue.size());
  }
  d.u64(garages);
  if (!ghosts_.empty()) {  // district worlds: read by the next step (borders.cpp)
    d.tag(26).u64(ghosts_.size());
    for (const VehicleGhost& g : ghosts_)
      d.u64(g.id.packed()).u32(g.garage).u32(g.route_index).u32(g.lane).f64(g.s_m);
  }
  if (!foreign_crossings_.empty()) {
    d.tag(27).u64(foreign_crossings_.size());
    for (const LaneIndex l : foreign_crossings_) d.u32(l);
  }
  d.tag(22).u32(static_cast<std::uint32_t>(signals_.size()));
  std::uint64_t signals = 0;
  for (std::uint32_t si = 0; si < signals_.size(); ++si) {
    const SignalState& s = signals_[si];
    // cycles < 2^62 (one per cycle of at least 3 ms of phases), so the phase fits below it.
    signals +=
        fold_pair(s.phase_elapsed_us, (s.cycles << 2) | static_cast<std::uint64_t>(s.phase), si);
  }
  d.u64(signals);
  d.tag(23).u64(plan_.cursor).u64(plan_.accepted).u64(plan_.rejected);
  d.tag(24);
  for (const std::uint32_t c : last_tiers_.per_tier) d.u32(c);
  d.u32(last_tiers_.promoted).u32(last_tiers_.demoted).u32(last_tiers_.deferred);
  d.u32(last_tiers_.forced).u32(last_tiers_.forced_overflow);
  d.u32(last_step_.moving).u32(last_step_.turnarounds).u32(last_step_.dispatched);
  for (const std::uint32_t c : last_step_.per_policy) d.u32(c);
}

VehicleCheckpoint VehicleSystem::capture() const {
  VehicleCheckpoint cp;
  capture_into(cp);
  return cp;
}

namespace {
// Every store column but dense_of, which restore rebuilds: it has one entry
// per entity slot (8 MiB at a 2 M capacity), so copying it only to clear it
// was a sixth of a 1 M-pedestrian checkpoint's sim-thread copy.
void copy_rows(VehicleStore& to, const VehicleStore& from) {
  static_assert(sizeof(VehicleStore) == 19 * sizeof(std::vector<std::uint32_t>),
                "a new vehicle column must be copied here");
  to.id = from.id;
  to.garage = from.garage;
  to.ordinal = from.ordinal;
  to.prototype = from.prototype;
  to.route_index = from.route_index;
  to.lane = from.lane;
  to.s_m = from.s_m;
  to.speed_mps = from.speed_mps;
  to.strategy = from.strategy;
  to.control_policy = from.control_policy;
  to.reason = from.reason;
  to.sim_tier = from.sim_tier;
  to.leader = from.leader;
  to.steps_advanced = from.steps_advanced;
  to.last_advance_step = from.last_advance_step;
  to.waiting_since = from.waiting_since;
  to.despawn_requested = from.despawn_requested;
  to.request_id = from.request_id;
  to.dense_of.clear();  // the capacity stays for the next capture
}
}  // namespace

void VehicleSystem::capture_into(VehicleCheckpoint& cp) const {
  // Copy-assignment into cp's vectors keeps their capacity, so a recycled
  // checkpoint costs no allocation or page faults.
  copy_rows(cp.store, store_);
  cp.garage_ids.resize(scenario_->garages.size());
  for (std::size_t g = 0; g < cp.garage_ids.size(); ++g)
    cp.garage_ids[g] = scenario_->garages[g].id;
  cp.signal_ids.resize(scenario_->signals.size());
  for (std::size_t k = 0; k < cp.signal_ids.size(); ++k)
    cp.signal_ids[k] = scenario_->signals[k].id;
  cp.garages = garages_;
  cp.signals = signals_;
  cp.plan = plan_;
  cp.last_tiers = last_tiers_;
  cp.last_step = last_step_;
  cp.ghosts = ghosts_;
  cp.foreign_crossings = foreign_crossings_;
}

std::vector<std::pair<std::string, std::string>> VehicleSystem::restore(
    const VehicleCheckpoint& cp, const EntityRegistry& registry) {
  RestoreErrors errors;
  if (!restore_check_shape(cp, errors)) return errors;
  std::vector<std::uint32_t> dense_of(store_.dense_of.size(), VehicleStore::kNoSlot);
  std::vector<std::uint32_t> managed(garages_.size(), 0);
  std::vector<std::vector<std::uint64_t>> ordinals(garages_.size());
  restore_check_rows(cp, registry, errors, dense_of, managed, ordinals);
  restore_check_mouths(cp, registry, dense_of, ordinals, errors);
  restore_check_garages(cp, managed, ordinals, errors);
  restore_check_signals_and_leaders(cp, registry, errors);
  for (std::size_t k = 0; k < cp.ghosts.size(); ++k) {
    if (Status st = validate_ghost(cp.ghosts[k], registry); !st.ok())
      add_restore_error(errors, "vehicles.ghosts[" + std::to_string(k) + "]", st.message());
  }
  for (std::size_t k = 0; k < cp.foreign_crossings.size(); ++k) {
    if (Status st = validate_crossing(cp.foreign_crossings[k]); !st.ok())
      add_restore_error(errors, "vehicles.foreign_crossings[" + std::to_string(k) + "]",
                        st.message());
  }
  if (!errors.empty()) return errors;

  const VehicleStore& s = cp.store;
  store_ = s;
  store_.dense_of = std::move(dense_of);
  // Derived caches of the digest and the step: rebuilt from the restored
  // state, never stored.
  rebuild_derived();
  dispatched_hash_.assign(cp.garages.size(), 0);
  for (std::size_t g = 0; g < cp.garages.size(); ++g) {
    for (const std::string& r : cp.garages[g].dispatched)
      dispatched_hash_[g] += Digest{}.str(r).value();
  }
  lane_min_valid_ = false;
  garages_ = cp.garages;
  managed_ = managed;
  signals_ = cp.signals;
  plan_ = cp.plan;
  last_tiers_ = cp.last_tiers;
  last_step_ = cp.last_step;
  ghosts_ = cp.ghosts;
  foreign_crossings_ = cp.foreign_crossings;
  return errors;
}

// Column lengths, and garages and signals matching the scenario's; false
// when nothing further can be checked.
bool VehicleSystem::restore_check_shape(const VehicleCheckpoint& cp, RestoreErrors& errors) const {
  auto fail = [&](std::string path, std::string msg) {
    add_restore_error(errors, std::move(path), std::move(msg));
  };
  const VehicleStore& s = cp.store;
  const std::size_t n = s.id.size();
  const bool columns_ok =
      s.garage.size() == n && s.ordinal.size() == n && s.prototype.size() == n &&
      s.route_index.size() == n && s.lane.size() == n && s.s_m.size() == n &&
      s.speed_mps.size() == n && s.strategy.size() == n && s.control_policy.size() == n &&
      s.reason.size() == n && s.sim_tier.size() == n && s.leader.size() == n &&
      s.steps_advanced.size() == n && s.last_advance_step.size() == n &&
      s.waiting_since.size() == n && s.despawn_requested.size() == n && s.request_id.size() == n;
  if (!columns_ok) {
    fail("vehicles", "column lengths differ");
    return false;
  }
  if (cp.garages.size() != scenario_->garages.size()) {
    fail("garages", std::to_string(cp.garages.size()) + " garages, scenario has " +
                        std::to_string(scenario_->garages.size()));
    return false;
  }
  if (cp.signals.size() != scenario_->signals.size()) {
    fail("signals", std::to_string(cp.signals.size()) + " signals, scenario has " +
                        std::to_string(scenario_->signals.size()));
    return false;
  }
  for (std::size_t g = 0; g < cp.garage_ids.size() && g < scenario_->garages.size(); ++g) {
    if (cp.garage_ids[g] != scenario_->garages[g].id) {
      fail("garages[" + std::to_string(g) + "].garage_id", "'" + cp.garage_ids[g] +
                                                               "' does not match the scenario's '" +
                                                               scenario_->garages[g].id + "'");
    }
  }
  for (std::size_t i = 0; i < cp.signal_ids.size() && i < scenario_->signals.size(); ++i) {
    if (cp.signal_ids[i] != scenario_->signals[i].id) {
      fail("signals[" + std::to_string(i) + "].signal_id", "does not match the scenario");
    }
  }
  return errors.empty();
}

// Each vehicle row: alive, unique, on its garage route, known values; fills
// the dense map, managed counts and ordinals per garage.
void VehicleSystem::restore_check_rows(const VehicleCheckpoint& cp, const EntityRegistry& registry,
                                       RestoreErrors& errors, std::vector<std::uint32_t>& dense_of,
                                       std::vector<std::uint32_t>& managed,
                                       std::vector<std::vector<std::uint64_t>>& ordinals) const {
  auto fail = [&](std::string path, std::string msg) {
    add_restore_error(errors, std::move(path), std::move(msg));
  };
  const VehicleStore& s = cp.store;
  const std::size_t n = s.id.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::string row = "vehicles[" + std::to_string(i) + "]";
    if (!registry.is_alive(s.id[i])) {
      fail(row + ".id", "entity " + std::to_string(s.id[i].index) + ":" +
                            std::to_string(s.id[i].generation) + " is not alive in the registry");
      continue;
    }
    if (dense_of[s.id[i].index] != VehicleStore::kNoSlot) {
      fail(row + ".id",
           "duplicate entity (also row " + std::to_string(dense_of[s.id[i].index]) + ")");
      continue;
    }
    dense_of[s.id[i].index] = static_cast<std::uint32_t>(i);
    if (s.garage[i] >= garages_.size()) {
      fail(row + ".garage", "garage " + std::to_string(s.garage[i]) + " does not exist");
      continue;
    }
    const auto& route = routes_[s.garage[i]];
    if (s.route_index[i] >= route.size()) {
      fail(row + ".route_index", std::to_string(s.route_index[i]) + " is outside the garage route");
      continue;
    }
    if (s.lane[i] != route[s.route_index[i]]) {
      fail(row + ".lane", "lane " + std::to_string(s.lane[i]) + " does not match route index " +
                              std::to_string(s.route_index[i]));
      continue;
    }
    const double len = lanes_->lane(s.lane[i]).length_m;
    if (!std::isfinite(s.s_m[i]) || s.s_m[i] < 0.0 || s.s_m[i] > len) {
      fail(row + ".s_m",
           "distance " + std::to_string(s.s_m[i]) + " outside the lane (alpha must be in [0, 1])");
      continue;
    }
    if (s.prototype[i] >= scenario_->garages[s.garage[i]].prototypes.size())
      fail(row + ".prototype", "unknown");
    if (s.strategy[i] > 3)
      fail(row + ".strategy", "unknown strategy " + std::to_string(s.strategy[i]));
    if (s.control_policy[i] >= kControlPolicyCount) fail(row + ".policy", "unknown policy");
    if (tier_index(s.sim_tier[i]) >= kSimTierCount) fail(row + ".tier", "unknown tier");
    if (s.leader[i] == s.id[i]) fail(row + ".leader", "a vehicle cannot lead itself");
    ++managed[s.garage[i]];
    ordinals[s.garage[i]].push_back(s.ordinal[i]);
  }
}

// Each garage's mouth (check_mouths): within mouth_capacity, each vehicle
// alive, on no lane and in no other mouth, its request dispatched, ordinals
// increasing from the front above its garage's ordinals on the road (added
// to `ordinals`, so restore_check_garages checks them against the rest).
void VehicleSystem::restore_check_mouths(const VehicleCheckpoint& cp,
                                         const EntityRegistry& registry,
                                         const std::vector<std::uint32_t>& dense_of,
                                         std::vector<std::vector<std::uint64_t>>& ordinals,
                                         RestoreErrors& errors) const {
  auto fail = [&](std::string path, std::string msg) {
    add_restore_error(errors, std::move(path), std::move(msg));
  };
  std::vector<EntityId> ids;
  for (std::size_t g = 0; g < cp.garages.size(); ++g) {
    const GarageState& gs = cp.garages[g];
    const GarageSpec& spec = scenario_->garages[g];
    const std::string p = "garages[" + std::to_string(g) + "].mouth";
    if (gs.mouth.size() > spec.mouth_capacity) {
      fail(p, std::to_string(gs.mouth.size()) + " vehicles, mouth_capacity is " +
                  std::to_string(spec.mouth_capacity));
    }
    std::uint64_t after = 0;  // the smallest ordinal the next mouth vehicle may have
    for (const std::uint64_t o : ordinals[g]) after = std::max(after, o + 1);
    for (std::size_t k = 0; k < gs.mouth.size(); ++k) {
      const MouthVehicle& m = gs.mouth[k];
      const std::string row = p + "[" + std::to_string(k) + "]";
      if (!registry.is_alive(m.id)) {
        fail(row + ".id", "entity " + id_text(m.id) + " is not alive in the registry");
      } else if (dense_of[m.id.index] != VehicleStore::kNoSlot) {
        fail(row + ".id", "entity " + id_text(m.id) + " is also on the road (vehicles[" +
                              std::to_string(dense_of[m.id.index]) + "])");
      }
      if (m.prototype >= spec.prototypes.size()) fail(row + ".prototype", "unknown prototype");
      if (!std::binary_search(gs.dispatched.begin(), gs.dispatched.end(), m.request_id))
        fail(row + ".request_id", "request '" + m.request_id + "' is not dispatched");
      if (m.ordinal < after) {
        fail(row + ".ordinal", std::to_string(m.ordinal) +
                                   " is not after the vehicles ahead of it (front first, in "
                                   "dispatch order)");
      }
      after = m.ordinal + 1;
      ordinals[g].push_back(m.ordinal);
      ids.push_back(m.id);
    }
  }
  std::sort(ids.begin(), ids.end());
  if (auto twice = std::adjacent_find(ids.begin(), ids.end()); twice != ids.end())
    fail("garages", "entity " + id_text(*twice) + " is in a mouth twice");
}

// Each garage: queue (depth, order, prototypes, ordinals), dispatched set,
// VehicleId ordinals, capacity.
void VehicleSystem::restore_check_garages(const VehicleCheckpoint& cp,
                                          const std::vector<std::uint32_t>& managed,
                                          std::vector<std::vector<std::uint64_t>>& ordinals,
                                          RestoreErrors& errors) const {
  auto fail = [&](std::string path, std::string msg) {
    add_restore_error(errors, std::move(path), std::move(msg));
  };
  for (std::size_t g = 0; g < cp.garages.size(); ++g) {
    const GarageState& gs = cp.garages[g];
    const GarageSpec& spec = scenario_->garages[g];
    const std::string p = "garages[" + std::to_string(g) + "]";
    if (gs.queue.size() > spec.queue_depth) fail(p + ".queue", "longer than queue_depth");
    for (std::size_t k = 0; k < gs.queue.size(); ++k) {
      const QueuedRequest& q = gs.queue[k];
      const std::string qp = p + ".queue[" + std::to_string(k) + "]";
      if (std::binary_search(gs.dispatched.begin(), gs.dispatched.end(), q.request_id)) {
        fail(qp + ".request_id", "request '" + q.request_id + "' is both queued and dispatched");
      }
      if (q.prototype >= spec.prototypes.size()) fail(qp + ".prototype", "unknown prototype");
      if (q.enqueue_ordinal >= gs.next_enqueue_ordinal)
        fail(qp + ".enqueue_ordinal", "not below next_enqueue_ordinal");
      if (k > 0) {
        if (!queue_in_order(gs.queue[k - 1], q)) {
          fail(qp, "queue is not in priority, then ordinal order");
        }
      }
    }
    if (!std::is_sorted(gs.dispatched.begin(), gs.dispatched.end()) ||
        std::adjacent_find(gs.dispatched.begin(), gs.dispatched.end()) != gs.dispatched.end()) {
      fail(p + ".dispatched", "not a sorted set");
    }
    if (gs.next_vehicle_ordinal < gs.dispatched.size()) {
      fail(p + ".next_vehicle_ordinal", std::to_string(gs.next_vehicle_ordinal) +
                                            " is below the dispatched count " +
                                            std::to_string(gs.dispatched.size()));
    }
    // Another district's garage dispatches nothing here: its ordinals count there.
    for (const std::uint64_t o :
         garage_here(static_cast<std::uint32_t>(g)) ? ordinals[g] : std::vector<std::uint64_t>{}) {
      if (o >= gs.next_vehicle_ordinal)
        fail(p + ".next_vehicle_ordinal", "a managed vehicle has ordinal " + std::to_string(o));
    }
    auto& os = ordinals[g];
    std::sort(os.begin(), os.end());
    if (std::adjacent_find(os.begin(), os.end()) != os.end())
      fail(p, "two vehicles share a VehicleId ordinal");
    if (gs.away != 0 && !garage_here(static_cast<std::uint32_t>(g)))
      fail(p + ".away", "another district's garage counts no vehicle away here");
    if (managed[g] + gs.mouth.size() + gs.away > spec.capacity)
      fail(p, "more managed vehicles (on the road and in the mouth) than capacity");
    if (gs.has_dispatched && gs.last_dispatch_frame > gs.frame_index) {
      fail(p + ".last_dispatch_frame", "after the current queue frame");
    }
  }
}

// Signal phases, the plan cursor and the leaders.
void VehicleSystem::restore_check_signals_and_leaders(const VehicleCheckpoint& cp,
                                                      const EntityRegistry& registry,
                                                      RestoreErrors& errors) const {
  auto fail = [&](std::string path, std::string msg) {
    add_restore_error(errors, std::move(path), std::move(msg));
  };
  const std::size_t n = cp.store.id.size();
  for (std::size_t i = 0; i < cp.signals.size(); ++i) {
    const SignalSpec& sg = scenario_->signals[i];
    const SignalState& st = cp.signals[i];
    const std::uint64_t durations[3] = {std::uint64_t{sg.open_ms} * 1000,
                                        std::uint64_t{sg.yield_ms} * 1000,
                                        std::uint64_t{sg.closed_ms} * 1000};
    if (static_cast<int>(st.phase) > 2) {
      fail("signals[" + std::to_string(i) + "].phase", "unknown phase");
    } else if (st.phase_elapsed_us >= durations[static_cast<int>(st.phase)]) {
      fail("signals[" + std::to_string(i) + "].phase_elapsed_us", "not inside the phase duration");
    }
  }
  if (cp.plan.cursor > scenario_->vehicle_plan.requests.size())
    fail("plan.cursor", "beyond the planned requests");
  for (std::size_t i = 0; i < n; ++i) {
    // A district's vehicle may follow another district's (a ghost, away here).
    const EntityId leader = cp.store.leader[i];
    const bool away_leader = own_district_ >= 0 && leader.index < registry.capacity() &&
                             registry.slot_away(leader.index);
    if (!leader.is_null() && !registry.is_alive(leader) && !away_leader) {
      fail("vehicles[" + std::to_string(i) + "].leader", "leader is not alive");
    }
  }
}

}  // namespace bustle::core
