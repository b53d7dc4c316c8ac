// Spawn handles (spawn_pipeline.hpp): the shared part of the spawn commands
// (SpawnPedestrian, CancelSpawn, LifecycleBatch) and of phases 4 and 8.
//
// Sections: names of the states and failures; validation of a request;
// accepting it (a new handle); importance (SpawnRank); state changes and retiring terminal handles;
// look-ups by entity and by handle.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "bustle/core/digest.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

const char* to_string(SpawnState s) {
  switch (s) {
    case SpawnState::Queued:
      return "queued";
    case SpawnState::IdentityCreated:
      return "identity_created";
    case SpawnState::Registered:
      return "registered";
    case SpawnState::RepresentationRequested:
      return "representation_requested";
    case SpawnState::Attached:
      return "attached";
    case SpawnState::ReadyForGameplay:
      return "ready_for_gameplay";
    case SpawnState::Failed:
      return "failed";
    case SpawnState::Canceled:
      return "canceled";
    case SpawnState::TimedOut:
      return "timed_out";
  }
  return "?";
}

const char* to_string(SpawnFailure f) {
  switch (f) {
    case SpawnFailure::None:
      return "none";
    case SpawnFailure::EntityGone:
      return "entity_gone";
    case SpawnFailure::WorldReplaced:
      return "world_replaced";
    case SpawnFailure::Displaced:
      return "displaced";
    case SpawnFailure::NoRepresentationSlot:
      return "no_representation_slot";
  }
  return "?";
}

Status World::validate_spawn(const SpawnPedestrian& c, std::int32_t& zone, std::uint32_t& lane,
                             std::vector<LaneIndex>* route) const {
  zone = kAnyZone;
  lane = kAnyLane;
  if (c.route.size() > 256) return Status::invalid_argument("route: at most 256 lanes");
  std::vector<LaneIndex> walk;
  for (std::size_t k = 0; k < c.route.size(); ++k) {
    const std::string at = "route[" + std::to_string(k) + "]: ";
    const std::optional<LaneIndex> found = lanes_.find(c.route[k]);
    if (!found) return Status::invalid_argument(at + "unknown lane '" + c.route[k] + "'");
    const LaneIndex l = *found;
    if (!is_pedestrian_lane(lanes_.lane(l).kind))
      return Status::invalid_argument(at + "'" + c.route[k] + "' is not a pedestrian lane");
    if (k > 0) {
      const auto& succ = lanes_.lane(walk.back()).pedestrian_successors;
      if (std::find(succ.begin(), succ.end(), l) == succ.end()) {
        return Status::invalid_argument(at + "'" + c.route[k] + "' does not follow '" +
                                        c.route[k - 1] + "'");
      }
    }
    walk.push_back(l);
  }
  if (!walk.empty() && !c.lane.empty() && c.lane != c.route[0])
    return Status::invalid_argument("lane: must be route[0] when a route is given");
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

Status World::validate_spawn_place(const SpawnPedestrian& c, std::int32_t& zone,
                                   std::uint32_t& lane) const {
  if (c.priority >= kPriorityClassCount)
    return Status::invalid_argument(
        "priority: must be 0 (story), 1 (quest), 2 (community) or 3 (background)");
  if (c.timeout_ms > 3'600'000)
    return Status::invalid_argument(
        "timeout_ms: must be at most 3600000 (0 = the scenario's spawn.timeout_ms)");
  if (!c.zone.empty()) {
    for (std::size_t z = 0; z < scenario_.zones.size(); ++z) {
      if (scenario_.zones[z].id == c.zone) zone = static_cast<std::int32_t>(z);
    }
    if (zone == kAnyZone) return Status::invalid_argument("zone: unknown zone '" + c.zone + "'");
  }
  if (!c.lane.empty()) {
    const std::optional<LaneIndex> found = lanes_.find(c.lane);
    if (!found) return Status::invalid_argument("lane: unknown lane '" + c.lane + "'");
    lane = *found;
    if (!is_pedestrian_lane(lanes_.lane(lane).kind))
      return Status::invalid_argument("lane: '" + c.lane + "' is not a pedestrian lane");
    if (zone != kAnyZone) {
      const auto& zl = population_.zone_lanes()[static_cast<std::size_t>(zone)];
      if (std::find(zl.begin(), zl.end(), lane) == zl.end()) {
        return Status::invalid_argument("lane: '" + c.lane + "' is not a lane of zone '" + c.zone +
                                        "'");
      }
    }
  }
  if (zone == kAnyZone && lane == kAnyLane && lanes_.sidewalks().empty())
    return Status::invalid_argument("zone: the city has no sidewalk to spawn on");
  // A district world spawns on its own lanes only (world_districts.cpp).
  if (scenario_.own_district >= 0 && (lane == kAnyLane || leaves_district(lane))) {
    return Status::invalid_argument(
        "lane: a district server spawns on a lane of its own district '" +
        scenario_.districts[static_cast<std::size_t>(scenario_.own_district)].id + "'" +
        (lane == kAnyLane ? std::string(": name one") : ", not on '" + c.lane + "'"));
  }
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
  const std::uint64_t timeout_us =
      std::uint64_t{c.timeout_ms != 0 ? c.timeout_ms : scenario_.spawn.timeout_ms} * 1000;
  h.deadline_step = step_index_ + (timeout_us + scenario_.step_us - 1) / scenario_.step_us;
  h.state_step = step_index_;
  ++spawn_.counters.requested;
  ++spawn_.counters.per_state_total[static_cast<std::size_t>(SpawnState::Queued)];
  spawn_events_.push_back({h.handle, h.state, h.failure, h.entity, h.origin});
  assert(spawn_.live.empty() ||
         spawn_.live.back().handle < h.handle);  // invariant 1, read by find_spawn()
  spawn_.live.push_back(h);                      // handles increase: the vector stays sorted
  return h.handle;
}

double World::spawn_effective_distance(std::int32_t zone, std::uint32_t lane,
                                       PriorityClass cls) const {
  const auto at_midpoint = [&](LaneIndex l) {
    const Vec2 p = lanes_.position(l, 0.5 * lanes_.lane(l).length_m);
    return effective_distance_at(p, l, cls, false);
  };
  if (lane != kAnyLane) return at_midpoint(lane);
  double best = std::numeric_limits<double>::infinity();
  if (zone != kAnyZone) {
    for (const LaneIndex l : population_.zone_lanes()[static_cast<std::size_t>(zone)])
      best = std::min(best, at_midpoint(l));
  }
  return best;  // any sidewalk: no place to measure, after every placed request
}

SpawnRank World::spawn_rank(const SpawnHandleState& h, std::uint32_t live_index) const {
  const double d = spawn_effective_distance(h.zone, h.lane, h.priority);
  assert(!std::isnan(d));
  return {d, static_cast<std::uint8_t>(h.priority), h.handle, live_index};
}

std::optional<SpawnRank> World::weakest_queued_spawn() const {
  std::optional<SpawnRank> weakest;
  for (std::uint32_t k = 0; k < spawn_.live.size(); ++k) {
    if (spawn_.live[k].state != SpawnState::Queued) continue;
    const SpawnRank r = spawn_rank(spawn_.live[k], k);
    if (!weakest || *weakest < r) weakest = r;
  }
  return weakest;
}

void World::set_spawn_state(SpawnHandleState& h, SpawnState s, SpawnFailure f) {
  // Invariants 2 and 3: a terminal handle never changes again, and only
  // Failed (or a displaced Canceled) carries a reason.
  assert(!is_core_terminal(h.state));
  assert(spawn_failure_fits(s, f));
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
  spawn_.live.erase(std::remove_if(spawn_.live.begin(), spawn_.live.end(), terminal),
                    spawn_.live.end());
  if (spawn_.recent.size() > kSpawnHistory) {
    spawn_.recent.erase(
        spawn_.recent.begin(),
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
  auto it =
      std::lower_bound(spawn_.live.begin(), spawn_.live.end(), handle,
                       [](const SpawnHandleState& h, std::uint64_t v) { return h.handle < v; });
  if (it != spawn_.live.end() && it->handle == handle) return *it;
  for (const SpawnHandleState& h : spawn_.recent) {
    if (h.handle == handle) return h;
  }
  return std::nullopt;
}

}  // namespace bustle::core
