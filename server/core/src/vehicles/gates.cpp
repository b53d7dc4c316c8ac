// Dispatch and its gates: per garage, the queue's front goes into the mouth
// and onto the road when cooldown, capacity and a clear entrance (invariant
// 5) allow; lane closures; turnarounds, which compete for the same entrance.
#include <algorithm>
#include <cassert>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bustle/core/digest.hpp"
#include "bustle/core/vehicles.hpp"
#include "internal.hpp"

namespace bustle::core {

const char* to_string(DispatchGate g) {
  switch (g) {
    case DispatchGate::Dispatched:
      return "dispatched";
    case DispatchGate::QueueEmpty:
      return "queue_empty";
    case DispatchGate::Cooldown:
      return "cooldown";
    case DispatchGate::Capacity:
      return "capacity";
    case DispatchGate::EntranceBlocked:
      return "entrance_blocked";
    case DispatchGate::PerStepMax:
      return "per_step_max";
  }
  return "?";
}

void VehicleSystem::refresh_lane_extents() {
  lane_min_s_.assign(lanes_->size(), std::numeric_limits<double>::infinity());
  lane_max_s_.assign(lanes_->size(), -std::numeric_limits<double>::infinity());
  for (std::uint32_t i = 0; i < store_.size(); ++i) {
    const LaneIndex l = store_.lane[i];
    lane_min_s_[l] = std::min(lane_min_s_[l], store_.s_m[i]);
    lane_max_s_[l] = std::max(lane_max_s_[l], store_.s_m[i]);
  }
  for (const VehicleGhost& g : ghosts_) {  // another district's, near an entrance here
    lane_min_s_[g.lane] = std::min(lane_min_s_[g.lane], g.s_m);
    lane_max_s_[g.lane] = std::max(lane_max_s_[g.lane], g.s_m);
  }
  lane_min_valid_ = true;
}

void VehicleSystem::set_closed_lanes(std::span<const LaneIndex> closed) {
  lane_closed_.assign(lanes_->size(), 0);
  for (const LaneIndex l : closed) lane_closed_[l] = 1;
  closures_active_ = !closed.empty();
}

std::uint32_t VehicleSystem::held_at_closures() const {
  std::uint32_t n = 0;
  for (const std::uint8_t r : store_.reason)
    n += r == static_cast<std::uint8_t>(PolicyReason::LaneClosed);
  return n;
}

bool VehicleSystem::entrance_clear(std::uint32_t garage, bool turnaround) {
  if (closures_active_ && lane_closed_[routes_[garage][0]] != 0) return false;  // closed entrance
  if (!lane_min_valid_) refresh_lane_extents();
  const double clear = entrance_clear_m_[garage];
  if (lane_min_s_[routes_[garage][0]] < clear) return false;
  // A turnaround leaves the vehicle at the merge point where it waited, and
  // the other feeders' vehicles yield to it there (invariant 6) and stop
  // headway_block_m short of it: asking them for more would hold both forever.
  const double behind = turnaround ? scenario_->vehicle_rules.headway_block_m : clear;
  for (const Feeder& f : feeders_[garage]) {
    if (turnaround && f.own) continue;
    if (f.to_entrance_m + lane_hot_[f.lane].length_m - lane_max_s_[f.lane] < behind) return false;
  }
  return true;
}

void VehicleSystem::dispatch(std::uint64_t step_index, EntityRegistry& registry,
                             const std::vector<Vec2>& observers) {
  lane_min_valid_ = false;
  for (std::uint32_t g = 0; g < garages_.size(); ++g) {
    if (!garage_here(g)) continue;  // another district's (borders.cpp)
    GarageState& gs = garages_[g];
    const GarageSpec& spec = scenario_->garages[g];
    ++gs.frame_index;
    // The mouth's front was dispatched before anything queued: it takes the
    // entrance first. Cooldown and the per-step maximum gate the queue only.
    enter_from_mouth(step_index, g, observers);
    DispatchGate gate;
    if (gs.queue.empty()) {
      gate = DispatchGate::QueueEmpty;
    } else if (gs.has_dispatched &&
               gs.frame_index - gs.last_dispatch_frame <= spec.cooldown_frames) {
      gate = DispatchGate::Cooldown;
    } else if (managed(g) >= spec.capacity) {
      gate = DispatchGate::Capacity;
    } else if (gs.mouth.size() >= spec.mouth_capacity && !entrance_clear(g)) {
      gate = DispatchGate::EntranceBlocked;  // no place in the mouth, and the entrance is not clear
    } else {
      const std::size_t n =
          std::min<std::size_t>({static_cast<std::size_t>(spec.capacity - managed(g)),
                                 spec.dispatch_per_step_max, gs.queue.size()});
      const std::size_t done = dispatch_batch(step_index, g, n, registry, observers);
      if (done > 0) {
        gs.has_dispatched = true;
        gs.last_dispatch_frame = gs.frame_index;
        gate = (done == spec.dispatch_per_step_max && !gs.queue.empty()) ? DispatchGate::PerStepMax
                                                                         : DispatchGate::Dispatched;
      } else {
        gate = DispatchGate::Capacity;  // the world's entity capacity held it
      }
    }
    // Capacity counts the mouth too: a dispatch never exceeds it.
    assert(managed(g) <= spec.capacity);
    gs.last_gate = gate;
    ++gs.gate_steps[static_cast<std::size_t>(gate)];
  }
}

std::size_t VehicleSystem::dispatch_batch(std::uint64_t step_index, std::uint32_t g, std::size_t n,
                                          EntityRegistry& registry,
                                          const std::vector<Vec2>& observers) {
  assert(g < garages_.size());
  GarageState& gs = garages_[g];
  assert(n <= gs.queue.size());
  const std::uint32_t mouth_capacity = scenario_->garages[g].mouth_capacity;
  [[maybe_unused]] const std::size_t queued_before = gs.queue.size();
  [[maybe_unused]] const std::uint64_t ordinal_before = gs.next_vehicle_ordinal;
  std::size_t done = 0;
  for (; done < n; ++done) {
    // A free place in the mouth, or else a clear entrance (without a mouth
    // the vehicle just placed at s = 0 holds the entrance for the next).
    if (done > 0 && gs.mouth.size() >= mouth_capacity && !entrance_clear(g)) break;
    const AllocateResult a = registry.allocate();
    if (a.status != AllocateStatus::Allocated) break;  // entity capacity: the request stays queued
    // Invariant 2 where it is read: the front goes first.
    assert(gs.queue.size() < 2 || queue_in_order(gs.queue[0], gs.queue[1]));
    QueuedRequest q = std::move(gs.queue.front());
    gs.queue.erase(gs.queue.begin());
    gs.dispatched.insert(std::upper_bound(gs.dispatched.begin(), gs.dispatched.end(), q.request_id),
                         q.request_id);
    dispatched_hash_[g] += Digest{}.str(q.request_id).value();
    gs.mouth.push_back({a.id, gs.next_vehicle_ordinal++, q.prototype, std::move(q.request_id)});
    ++last_step_.dispatched;
    enter_from_mouth(step_index, g, observers);  // the front, when the entrance is clear
  }
  // Requests conserved: each one dispatched left the queue and took the next
  // VehicleId ordinal (invariant 3).
  assert(gs.queue.size() + done == queued_before);
  assert(gs.next_vehicle_ordinal == ordinal_before + done);
  return done;
}

bool VehicleSystem::enter_from_mouth(std::uint64_t step_index, std::uint32_t g,
                                     const std::vector<Vec2>& observers) {
  GarageState& gs = garages_[g];
  if (gs.mouth.empty() || !entrance_clear(g)) return false;
  [[maybe_unused]] const std::uint32_t on_road_before = store_.size();
  const MouthVehicle m = std::move(gs.mouth.front());
  gs.mouth.erase(gs.mouth.begin());
  const Pose start = lanes_->sample(routes_[g][0], 0.0);
  const double d = nearest_observer_m(observers, start.x_m, start.y_m);
  const TierSpec& t = scenario_->tiers;
  const SimTier tier = d <= t.full_enter_m        ? SimTier::Full
                       : d <= t.simulated_enter_m ? SimTier::Simulated
                                                  : SimTier::Coarse;
  push_vehicle(step_index, m.id, g, m.ordinal, m.prototype, m.request_id, tier);
  assert(store_.size() == on_road_before + 1);
  occupy_entrance(g);
  return true;
}

void VehicleSystem::occupy_entrance(std::uint32_t g) {
  const LaneIndex entrance = routes_[g][0];
  lane_min_s_[entrance] = 0.0;  // valid: entrance_clear() ran before
  lane_max_s_[entrance] = std::max(lane_max_s_[entrance], 0.0);
}

void VehicleSystem::turnarounds(std::uint64_t step_index) {
  (void)step_index;
  lane_min_valid_ = false;
  // Per garage, the earliest waiting vehicle (waiting_since, then EntityId):
  // the front of its sorted waiting list, skipping vehicles about to leave.
  for (std::uint32_t g = 0; g < garages_.size(); ++g) {
    if (waiting_[g].empty() || route_loops_[g] == 0) continue;
    std::uint32_t best = VehicleStore::kNoSlot;
    for (const Waiter& w : waiting_[g]) {
      const std::uint32_t i = store_.dense_of[w.id.index];
      if (!store_.despawn_requested[i]) {
        best = i;
        break;
      }
    }
    if (best == VehicleStore::kNoSlot || !entrance_clear(g, /*turnaround=*/true)) continue;
    stop_waiting(best);
    store_.route_index[best] = 0;
    store_.lane[best] = routes_[g][0];
    store_.s_m[best] = 0.0;
    refold(best);
    occupy_entrance(g);
    ++garages_[g].turnarounds;
    ++last_step_.turnarounds;
  }
}

}  // namespace bustle::core
