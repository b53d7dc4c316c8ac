// Spawn pipeline and lifecycle batches (spawn_pipeline.hpp): phase 5 and
// phase 9 of the step, and the command handlers that create handles.
#include <algorithm>
#include <cassert>

#include "bustle/core/digest.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

const char* to_string(SpawnState s) {
  switch (s) {
    case SpawnState::Queued: return "queued";
    case SpawnState::IdentityCreated: return "identity_created";
    case SpawnState::Registered: return "registered";
    case SpawnState::RepresentationRequested: return "representation_requested";
    case SpawnState::Attached: return "attached";
    case SpawnState::ReadyForGameplay: return "ready_for_gameplay";
    case SpawnState::Failed: return "failed";
    case SpawnState::Canceled: return "canceled";
    case SpawnState::TimedOut: return "timed_out";
  }
  return "?";
}

const char* to_string(SpawnFailure f) {
  switch (f) {
    case SpawnFailure::None: return "none";
    case SpawnFailure::EntityGone: return "entity_gone";
    case SpawnFailure::WorldReplaced: return "world_replaced";
  }
  return "?";
}

std::string World::validate_spawn(const SpawnPedestrian& c, std::int32_t& zone, std::uint32_t& lane,
                                  std::vector<LaneIndex>* route) const {
  zone = kAnyZone;
  lane = kAnyLane;
  if (c.route.size() > 256) return "route: at most 256 lanes";
  std::vector<LaneIndex> walk;
  for (std::size_t k = 0; k < c.route.size(); ++k) {
    const std::string at = "route[" + std::to_string(k) + "]: ";
    const std::optional<LaneIndex> found = lanes_.find(c.route[k]);
    if (!found) return at + "unknown lane '" + c.route[k] + "'";
    const LaneIndex l = *found;
    if (!is_pedestrian_lane(lanes_.lane(l).kind)) return at + "'" + c.route[k] + "' is not a pedestrian lane";
    if (k > 0) {
      const auto& succ = lanes_.lane(walk.back()).pedestrian_successors;
      if (std::find(succ.begin(), succ.end(), l) == succ.end()) {
        return at + "'" + c.route[k] + "' does not follow '" + c.route[k - 1] + "'";
      }
    }
    walk.push_back(l);
  }
  if (!walk.empty() && !c.lane.empty() && c.lane != c.route[0]) return "lane: must be route[0] when a route is given";
  if (route != nullptr) *route = walk;
  const SpawnPedestrian* req = &c;
  SpawnPedestrian with_lane;
  if (!walk.empty() && c.lane.empty()) {
    with_lane = c;
    with_lane.lane = c.route[0];  // the walk starts on its first lane
    req = &with_lane;
  }
  return validate_spawn_place(*req, zone, lane);
}

std::string World::validate_spawn_place(const SpawnPedestrian& c, std::int32_t& zone, std::uint32_t& lane) const {
  if (c.priority >= kPriorityClassCount) return "priority: must be 0 (story), 1 (quest), 2 (community) or 3 (background)";
  if (c.timeout_ms > 3'600'000) return "timeout_ms: must be at most 3600000 (0 = the scenario's spawn.timeout_ms)";
  if (!c.zone.empty()) {
    for (std::size_t z = 0; z < scenario_.zones.size(); ++z) {
      if (scenario_.zones[z].id == c.zone) zone = static_cast<std::int32_t>(z);
    }
    if (zone == kAnyZone) return "zone: unknown zone '" + c.zone + "'";
  }
  if (!c.lane.empty()) {
    const std::optional<LaneIndex> found = lanes_.find(c.lane);
    if (!found) return "lane: unknown lane '" + c.lane + "'";
    lane = *found;
    if (!is_pedestrian_lane(lanes_.lane(lane).kind)) return "lane: '" + c.lane + "' is not a pedestrian lane";
    if (zone != kAnyZone) {
      const auto& zl = population_.zone_lanes()[static_cast<std::size_t>(zone)];
      if (std::find(zl.begin(), zl.end(), lane) == zl.end()) {
        return "lane: '" + c.lane + "' is not a lane of zone '" + c.zone + "'";
      }
    }
  }
  if (zone == kAnyZone && lane == kAnyLane && lanes_.sidewalks().empty()) return "zone: the city has no sidewalk to spawn on";
  return {};
}

std::uint64_t World::accept_spawn(const SpawnPedestrian& c, std::int32_t zone, std::uint32_t lane,
                                  std::span<const LaneIndex> route, CommandOrigin origin) {
  SpawnHandleState h;
  if (!route.empty()) h.route = routes_.add(route);
  h.handle = spawn_.next_handle++;
  h.origin = origin;
  h.zone = zone;
  h.lane = lane;
  h.priority = static_cast<PriorityClass>(c.priority);
  h.requested_step = step_index_;
  const std::uint64_t timeout_us = std::uint64_t{c.timeout_ms != 0 ? c.timeout_ms : scenario_.spawn.timeout_ms} * 1000;
  h.deadline_step = step_index_ + (timeout_us + scenario_.step_us - 1) / scenario_.step_us;
  h.state_step = step_index_;
  ++spawn_.counters.requested;
  ++spawn_.counters.per_state_total[static_cast<std::size_t>(SpawnState::Queued)];
  spawn_events_.push_back({h.handle, h.state, h.failure, h.entity, h.origin});
  assert(spawn_.live.empty() || spawn_.live.back().handle < h.handle);  // invariant 1, read by find_spawn()
  spawn_.live.push_back(h);  // handles increase: the vector stays sorted
  return h.handle;
}

void World::set_spawn_state(SpawnHandleState& h, SpawnState s, SpawnFailure f) {
  // Invariants 2 and 3: a terminal handle never changes again, and only Failed carries a reason.
  assert(!is_core_terminal(h.state));
  assert((s == SpawnState::Failed) == (f != SpawnFailure::None));
  // A handle that ends before its walker holds the route gives the route back.
  if (is_core_terminal(s) && h.route != kNoRoute) {
    routes_.release(h.route);
    h.route = kNoRoute;
  }
  h.state = s;
  h.failure = f;
  h.state_step = step_index_;
  ++spawn_.counters.per_state_total[static_cast<std::size_t>(s)];
  spawn_events_.push_back({h.handle, h.state, h.failure, h.entity, h.origin});
}

void World::retire_terminal_spawns() {
  auto terminal = [](const SpawnHandleState& h) { return is_core_terminal(h.state); };
  for (const SpawnHandleState& h : spawn_.live) {
    if (terminal(h)) spawn_.recent.push_back(h);
  }
  assert(spawn_.recent.empty() || is_core_terminal(spawn_.recent.back().state));
  spawn_.live.erase(std::remove_if(spawn_.live.begin(), spawn_.live.end(), terminal), spawn_.live.end());
  if (spawn_.recent.size() > kSpawnHistory) {
    spawn_.recent.erase(spawn_.recent.begin(),
                        spawn_.recent.begin() + static_cast<std::ptrdiff_t>(spawn_.recent.size() - kSpawnHistory));
  }
}

const SpawnHandleState* World::find_live_spawn(EntityId id) const {
  if (id.packed() == EntityId{}.packed()) return nullptr;
  for (const SpawnHandleState& h : spawn_.live) {
    if (h.entity == id) return &h;
  }
  return nullptr;
}

SpawnHandleState* World::live_spawn_of(EntityId id) {
  return const_cast<SpawnHandleState*>(find_live_spawn(id));
}

std::optional<SpawnHandleState> World::find_spawn(std::uint64_t handle) const {
  auto it = std::lower_bound(spawn_.live.begin(), spawn_.live.end(), handle,
                             [](const SpawnHandleState& h, std::uint64_t v) { return h.handle < v; });
  if (it != spawn_.live.end() && it->handle == handle) return *it;
  for (const SpawnHandleState& h : spawn_.recent) {
    if (h.handle == handle) return h;
  }
  return std::nullopt;
}

// Phase 5 ------------------------------------------------------------------

void World::phase_spawn_pipeline() {
  SpawnCounters& c = spawn_.counters;
  c.deferred_by_cap = c.deferred_by_capacity = c.deferred_by_zone = 0;
  if (spawn_.live.empty()) return;
  std::uint32_t created = 0;
  for (SpawnHandleState& h : spawn_.live) {
    // One stage per handle per step, so every stage is observable.
    if (h.state_step == step_index_) continue;
    const bool entity_active = h.entity.packed() != EntityId{}.packed() && registry_.is_alive(h.entity) &&
                               peds_.dense_of[h.entity.index] != PedestrianStore::kNoSlot;
    switch (h.state) {
      case SpawnState::Queued:
        if (step_index_ > h.deadline_step) {
          set_spawn_state(h, SpawnState::TimedOut);
        } else if (created >= scenario_.spawn.per_step_cap) {
          ++c.deferred_by_cap;
        } else if (const AllocateResult a = registry_.allocate(); a.status != AllocateStatus::Allocated) {
          ++c.deferred_by_capacity;
        } else {
          h.entity = a.id;
          ++created;
          set_spawn_state(h, SpawnState::IdentityCreated);
        }
        break;
      case SpawnState::IdentityCreated: {
        // Re-validate the zone's room (its density budget counts community
        // members) before the entity joins the city.
        if (h.zone != kAnyZone) {
          std::uint32_t active = 0;
          for (std::uint32_t cc = 0; cc < scenario_.communities.size(); ++cc) {
            active += population_.active_in(cc, static_cast<std::uint32_t>(h.zone));
          }
          if (active >= scenario_.zones[static_cast<std::size_t>(h.zone)].capacity) {
            if (step_index_ > h.deadline_step) {
              registry_.release(h.entity);
              set_spawn_state(h, SpawnState::TimedOut);
            } else {
              ++c.deferred_by_zone;
            }
            break;
          }
        }
        LaneIndex lane = h.lane;
        if (lane == kAnyLane) {
          const auto& pool = h.zone != kAnyZone ? population_.zone_lanes()[static_cast<std::size_t>(h.zone)]
                                                : lanes_.sidewalks();
          lane = pool[rng_.next_below(static_cast<std::uint32_t>(pool.size()))];
        }
        // A routed walker starts at the beginning of its first lane.
        const double s = h.route != kNoRoute ? 0.0 : rng_.next_unit() * lanes_.lane(lane).length_m;
        push_pedestrian(h.entity, lane, s, PedestrianStore::kNoResident, h.priority, PedestrianOrigin::Spawned);
        set_pedestrian_route(peds_.size() - 1, h.route);
        h.route = kNoRoute;  // the walker holds it now
        ++counters_.spawned_total;
        set_spawn_state(h, SpawnState::Registered);
        break;
      }
      case SpawnState::Registered:
        if (!entity_active) set_spawn_state(h, SpawnState::Failed, SpawnFailure::EntityGone);
        break;
      default:
        break;
    }
  }
  retire_terminal_spawns();
}

// Phase 9 ------------------------------------------------------------------

// RepresentationRequested ends the core's part of the handle (see
// spawn_pipeline.hpp): it moves to recent at once, and the representation
// stages (Attached, ReadyForGameplay) are tracked outside the simulation.
void World::phase_representation_requests() {
  bool ended = false;
  for (SpawnHandleState& h : spawn_.live) {
    if (h.state == SpawnState::Registered && h.state_step < step_index_) {
      set_spawn_state(h, SpawnState::RepresentationRequested);
      ended = true;
    }
  }
  if (ended) retire_terminal_spawns();
}

// Lifecycle batches ----------------------------------------------------------

std::string World::validate_despawn(EntityId id) const {
  const std::string name = "entity " + std::to_string(id.index) + ":" + std::to_string(id.generation);
  if (!registry_.is_alive(id)) return name + " is not alive";
  if (vehicles_.is_vehicle(id)) return {};
  if (peds_.dense_of[id.index] != PedestrianStore::kNoSlot) return {};
  auto o = std::lower_bound(orphans_.begin(), orphans_.end(), id,
                            [](const OrphanRecord& r, EntityId v) { return r.id < v; });
  if (o != orphans_.end() && o->id == id) return name + " is already retiring";
  if (population_.resident_of(id) != ResidentStore::kNone) return name + " is a dormant resident (nothing to despawn)";
  return name + " has no representation yet (a spawn in progress: cancel it)";
}

CommandResult World::apply_batch(const LifecycleBatch& b, CommandResult r) {
  r.status = CommandStatus::Rejected;
  r.reason = RejectReason::InvalidArgument;
  r.batch = BatchStatus::RejectedNoChange;
  if (b.ops.empty() || b.ops.size() > 256) {
    r.message = "ops: a batch holds 1 to 256 operations";
    return r;
  }
  // 1. Validate everything; nothing changes on any error.
  std::vector<std::int32_t> zones(b.ops.size(), kAnyZone);
  std::vector<std::uint32_t> lanes(b.ops.size(), kAnyLane);
  std::vector<EntityId> despawned;
  std::vector<std::vector<LaneIndex>> routes(b.ops.size());
  std::size_t spawns = 0;
  for (std::size_t k = 0; k < b.ops.size(); ++k) {
    const LifecycleOp& op = b.ops[k];
    const std::string at = "ops[" + std::to_string(k) + "].";
    std::string why;
    if (op.kind == LifecycleOp::Kind::Spawn) {
      why = validate_spawn(op.spawn, zones[k], lanes[k], &routes[k]);
      ++spawns;
    } else {
      why = validate_despawn(op.id);
      if (why.empty() && std::find(despawned.begin(), despawned.end(), op.id) != despawned.end()) {
        why = "entity appears twice in the batch";
      }
      if (why.empty() && despawn_pending_[op.id.index] != 0) why = "entity already leaves this step";
      despawned.push_back(op.id);
      if (!why.empty()) why = "id: " + why;
    }
    if (!why.empty()) {
      r.message = at + why;
      return r;
    }
  }
  if (spawn_.live.size() + spawns > scenario_.spawn.queue_depth) {
    r.reason = RejectReason::QueueFull;
    r.message = "ops: " + std::to_string(spawns) + " spawns would exceed spawn.queue_depth (" +
                std::to_string(scenario_.spawn.queue_depth) + ")";
    return r;
  }
  // 2. Commit everything.
  const std::size_t live_before = spawn_.live.size();
  for (std::size_t k = 0; k < b.ops.size(); ++k) {
    const LifecycleOp& op = b.ops[k];
    if (op.kind == LifecycleOp::Kind::Spawn) {
      r.handles.push_back(accept_spawn(op.spawn, zones[k], lanes[k], routes[k], r.origin));
    } else {
      if (vehicles_.is_vehicle(op.id)) vehicles_.mark_despawn(op.id);
      request_despawn(op.id, DespawnReason::Requested);
    }
  }
  // 3. Check what the commit promised; a failure here is a bug, reported.
  std::string broken;
  if (spawn_.live.size() != live_before + spawns) broken = "spawn handles: count after commit";
  for (const EntityId id : despawned) {
    if (broken.empty() && despawn_pending_[id.index] == 0) broken = "despawn not recorded";
  }
  if (broken.empty()) broken = check_lifecycle_counts();
  if (!broken.empty()) {
    r.batch = BatchStatus::InvariantFailure;
    r.reason = RejectReason::InvariantFailure;
    r.message = "invariant failed after commit: " + broken;
    return r;
  }
  r.status = CommandStatus::Accepted;
  r.reason = RejectReason::None;
  r.batch = BatchStatus::Committed;
  r.message.clear();
  return r;
}

void World::digest_lifecycle_into(Digest& d) const {
  auto handle = [&](const SpawnHandleState& h) {
    d.u64(h.handle).u32(static_cast<std::uint32_t>(h.state)).u32(static_cast<std::uint32_t>(h.failure));
    // h.origin is left out: it names the session to send SpawnUpdates to
    // (routing, kept in checkpoints), not simulation state; see compute_digest.
    d.u64(h.entity.packed());
    d.u64(static_cast<std::uint64_t>(h.zone)).u32(h.lane).u32(static_cast<std::uint32_t>(h.priority));
    d.u64(h.requested_step).u64(h.deadline_step).u64(h.state_step).u32(h.route);
  };
  d.tag(40).u64(spawn_.next_handle).u64(spawn_.live.size());
  for (const SpawnHandleState& h : spawn_.live) handle(h);
  d.u64(spawn_.recent.size());
  for (const SpawnHandleState& h : spawn_.recent) handle(h);
  const SpawnCounters& c = spawn_.counters;
  d.u64(c.requested).u32(c.deferred_by_cap).u32(c.deferred_by_capacity).u32(c.deferred_by_zone);
  for (const std::uint64_t t : c.per_state_total) d.u64(t);
  d.tag(41).u64(orphans_.size());
  for (const OrphanRecord& o : orphans_) {
    d.u64(o.id.packed()).u32(static_cast<std::uint32_t>(o.reason)).u32(o.lane).f64(o.s_m).u32(o.resident);
    d.u64(o.release_step);
  }
  d.u64(retiring_fifo_.size());
  for (const EntityId id : retiring_fifo_) d.u64(id.packed());
  const RouteTableState& rt = routes_.state();
  d.tag(42).u64(rt.lanes.size()).u64(rt.count.size()).u64(rt.free_slots.size());
  for (const LaneIndex l : rt.lanes) d.u32(l);
  for (std::size_t k = 0; k < rt.count.size(); ++k) d.u32(rt.offset[k]).u32(rt.count[k]).u32(rt.target[k]);
  for (const std::uint32_t f : rt.free_slots) d.u32(f);
}

}  // namespace bustle::core
