#include "bustle/core/world.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "bustle/core/digest.hpp"

namespace bustle::core {
namespace {

// Bounds the lane hops one agent can make in one step, so a pathological graph
// (many tiny lanes) can never turn a step into an unbounded loop.
constexpr std::uint32_t kMaxHopsPerStep = 64;

constexpr std::uint64_t kPurposeRoutes = 0x524F555445530001ull;  // "ROUTES"

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

void digest_spawn_request(Digest& d, const SpawnPedestrian& c) {
  d.str(c.zone).str(c.lane).u32(c.priority).u32(c.timeout_ms).u64(c.route.size());
  for (const std::string& l : c.route) d.str(l);
}

// Lifecycle events of the step just run, one debug line each, named like the
// server's structured events (the sink adds nothing). Reads only what the
// step exposes; never changes state.
void log_lifecycle_events(const World& w, LogSink& log) {
  for (const SpawnEvent& ev : w.spawn_events()) {
    std::string line = "spawn_state: step " + std::to_string(w.step_index()) + " handle " + std::to_string(ev.handle) +
                       " -> " + to_string(ev.state);
    if (!ev.entity.is_null()) line += " (entity " + id_text(ev.entity) + ")";
    if (ev.failure != SpawnFailure::None) line += std::string(" failure ") + to_string(ev.failure);
    log.log(LogLevel::Debug, line);
  }
  for (const DespawnNotice& n : w.despawn_notices()) {
    log.log(LogLevel::Debug, "despawn: step " + std::to_string(w.step_index()) + " " +
                                 (n.kind == EntityKind::Vehicle ? "vehicle " : "pedestrian ") + id_text(n.id) + " " +
                                 to_string(n.reason) + (n.stage == DespawnStage::Retiring ? " (retiring)" : " (gone)"));
  }
}

}  // namespace

const char* to_string(CommandStatus s) {
  switch (s) {
    case CommandStatus::Accepted: return "accepted";
    case CommandStatus::Rejected: return "rejected";
  }
  return "?";
}

const char* to_string(RejectReason r) {
  switch (r) {
    case RejectReason::None: return "none";
    case RejectReason::InboxFull: return "inbox_full";
    case RejectReason::InvalidArgument: return "invalid_argument";
    case RejectReason::UnknownEntity: return "unknown_entity";
    case RejectReason::NotAuthorized: return "not_authorized";
    case RejectReason::WrongClockMode: return "wrong_clock_mode";
    case RejectReason::UnknownCommand: return "unknown_command";
    case RejectReason::ShuttingDown: return "shutting_down";
    case RejectReason::NotFound: return "not_found";
    case RejectReason::StorageError: return "storage_error";
    case RejectReason::WorldReplaced: return "world_replaced";
    case RejectReason::Duplicate: return "duplicate";
    case RejectReason::QueueFull: return "queue_full";
    case RejectReason::InvariantFailure: return "invariant_failure";
    case RejectReason::RateLimited: return "rate_limited";
  }
  return "?";
}

const char* to_string(BatchStatus s) {
  switch (s) {
    case BatchStatus::None: return "none";
    case BatchStatus::RejectedNoChange: return "rejected_no_change";
    case BatchStatus::Committed: return "committed";
    case BatchStatus::PartiallyCommitted: return "partially_committed";
    case BatchStatus::InvariantFailure: return "invariant_failure";
  }
  return "?";
}

const char* to_string(PedestrianOrigin o) {
  switch (o) {
    case PedestrianOrigin::Background: return "background";
    case PedestrianOrigin::Resident: return "resident";
    case PedestrianOrigin::Spawned: return "spawned";
  }
  return "?";
}

const char* to_string(LifecycleState s) {
  switch (s) {
    case LifecycleState::Requested: return "requested";
    case LifecycleState::Active: return "active";
    case LifecycleState::Dormant: return "dormant";
    case LifecycleState::Retiring: return "retiring";
    case LifecycleState::Gone: return "gone";
  }
  return "?";
}

const char* to_string(RepresentationHint h) {
  switch (h) {
    case RepresentationHint::Actor: return "actor";
    case RepresentationHint::Instanced: return "instanced";
    case RepresentationHint::Marker: return "marker";
    case RepresentationHint::None: return "none";
  }
  return "?";
}

const char* command_name(const WorldCommand& c) {
  return std::visit(Overloaded{[](const SetPedestrianTarget&) { return "set_pedestrian_target"; },
                               [](const DespawnEntity&) { return "despawn_entity"; },
                               [](const GarageRequest&) { return "garage_request"; },
                               [](const CancelGarageRequest&) { return "cancel_garage_request"; },
                               [](const SetVehicleStrategy&) { return "set_vehicle_strategy"; },
                               [](const SetObservers&) { return "set_observers"; },
                               [](const SetHour&) { return "set_hour"; },
                               [](const SetTimeScale&) { return "set_time_scale"; },
                               [](const ForceFull&) { return "force_full"; },
                               [](const SpawnPedestrian&) { return "spawn_pedestrian"; },
                               [](const CancelSpawn&) { return "cancel_spawn"; },
                               [](const SetLifecycle&) { return "set_lifecycle"; },
                               [](const LifecycleBatch&) { return "lifecycle_batch"; },
                               [](const SetClientObservers&) { return "set_client_observers"; }},
                    c);
}

const char* to_string(DespawnReason r) {
  switch (r) {
    case DespawnReason::OutOfRange: return "out_of_range";
    case DespawnReason::Stuck: return "stuck";
    case DespawnReason::SpawnError: return "spawn_error";
    case DespawnReason::LaneDeadEnd: return "lane_dead_end";
    case DespawnReason::Requested: return "requested";
    case DespawnReason::Overpopulated: return "overpopulated";
    case DespawnReason::RouteCompleted: return "route_completed";
  }
  return "?";
}

World::CreateResult World::create(const Scenario& scenario, std::uint64_t seed, LogSink* log) {
  CreateResult result;
  result.errors = validate_scenario(scenario);
  if (!result.errors.empty()) return result;
  result.world.reset(new World(scenario, seed, log));
  return result;
}

World::World(const Scenario& scenario, std::uint64_t seed, LogSink* log)
    : scenario_(scenario),
      lanes_(scenario),
      log_(log != nullptr ? log : &null_log_),
      seed_(seed),
      rng_(seed),
      route_salt_(rng_.derive(kPurposeRoutes).next_u64()),
      registry_(scenario.entity_capacity),
      pedestrian_target_(scenario.pedestrians.count),
      inbox_(scenario.command_inbox_capacity),
      vehicles_(scenario_, lanes_, scenario.entity_capacity),
      population_(scenario_),
      observers_(scenario.observers) {
  const std::uint32_t cap = scenario.entity_capacity;
  peds_.id.reserve(cap);
  peds_.lane.reserve(cap);
  peds_.s_m.reserve(cap);
  peds_.hops.reserve(cap);
  peds_.tier.reserve(cap);
  peds_.priority.reserve(cap);
  peds_.origin.reserve(cap);
  peds_.phase.reserve(cap);
  peds_.route.reserve(cap);
  peds_.dense_of.assign(cap, PedestrianStore::kNoSlot);
  // Tier-resolution scratch for a slice of up to every pedestrian: the step
  // allocates nothing after warm-up, however the slices' sizes wander.
  slice_.reserve(cap);
  slice_ids_.reserve(cap);
  slice_tier_.reserve(cap);
  ped_distance_.reserve(cap);
  force_scratch_.reserve(cap);
  ped_tier_resolver_.reserve(cap);
  observer_views_.assign(observers_.size(), ObserverView{});
  refresh_tier_observers();
  // Resident identities exist from the start (all dormant); validation made
  // sure they fit the entity capacity.
  {
    std::vector<std::vector<LaneIndex>> zone_lanes;
    for (const ZoneSpec& z : scenario_.zones) {
      std::vector<LaneIndex> ls;
      for (const std::string& id : z.lanes) ls.push_back(*lanes_.find(id));
      zone_lanes.push_back(std::move(ls));
    }
    population_.set_zone_lanes(std::move(zone_lanes));
    const bool ok = population_.create_identities(registry_);
    assert(ok);
    (void)ok;
  }
  despawn_requests_.reserve(cap);
  results_.reserve(scenario.command_inbox_capacity);
  despawn_pending_.assign(cap, 0);
  crossing_occupied_.assign(lanes_.size(), 0);
  prepare_importance();
  digest_ = compute_digest();
}

std::vector<CommandEnvelope> World::take_inbox() {
  std::vector<CommandEnvelope> out;
  out.reserve(inbox_count_);
  while (inbox_count_ > 0) {
    out.push_back(std::move(inbox_[inbox_head_]));
    inbox_head_ = (inbox_head_ + 1) % inbox_.size();
    --inbox_count_;
  }
  return out;
}

SubmitStatus World::submit(CommandEnvelope envelope) {
  if (inbox_count_ == inbox_.size()) return SubmitStatus::InboxFull;
  inbox_[(inbox_head_ + inbox_count_) % inbox_.size()] = std::move(envelope);
  ++inbox_count_;
  return SubmitStatus::Queued;
}

void World::step() {
  ++step_index_;
  results_.clear();
  spawn_events_.clear();
  despawn_notices_.clear();
  phase_apply_commands();
  prepare_importance();  // observers may have changed in phase 1
  phase_time_and_zones();
  phase_population_upkeep();
  phase_spawn_pipeline();
  phase_vehicles();
  phase_move_pedestrians();
  phase_tiers();
  phase_representation_requests();
  phase_despawn();
  digest_ = compute_digest();
  if (log_ != &null_log_) log_lifecycle_events(*this, *log_);  // only when a sink was injected
}

// Phase 1 ------------------------------------------------------------------

void World::phase_apply_commands() {
  while (inbox_count_ > 0) {
    CommandEnvelope env = std::move(inbox_[inbox_head_]);
    inbox_head_ = (inbox_head_ + 1) % inbox_.size();
    --inbox_count_;
    CommandResult r = apply(env);
    if (r.status == CommandStatus::Accepted) {
      ++counters_.commands_accepted;
    } else {
      ++counters_.commands_rejected;
    }
    results_.push_back(std::move(r));
  }
}

CommandResult World::apply(const CommandEnvelope& env) {
  CommandResult r;
  r.origin = env.origin;
  r.step = step_index_;
  std::visit(Overloaded{
                 [&](const SetPedestrianTarget& c) {
                   if (c.count > scenario_.entity_capacity) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::InvalidArgument;
                     r.message = "count " + std::to_string(c.count) + " exceeds entity_capacity " +
                                 std::to_string(scenario_.entity_capacity);
                     return;
                   }
                   pedestrian_target_ = c.count;
                   r.status = CommandStatus::Accepted;
                 },
                 [&](const DespawnEntity& c) {
                   // A spawn that has an identity but no registration yet is
                   // canceled: the id goes back instead of being created and deleted.
                   if (SpawnHandleState* h = live_spawn_of(c.id); h != nullptr && h->state == SpawnState::IdentityCreated) {
                     r.handle = h->handle;
                     r.entity = c.id;
                     set_spawn_state(*h, SpawnState::Canceled);
                     registry_.release(c.id);
                     retire_terminal_spawns();
                     r.status = CommandStatus::Accepted;
                     r.message = "spawn " + std::to_string(r.handle) + " canceled before registration; id released";
                     return;
                   }
                   if (std::string why = validate_despawn(c.id); !why.empty()) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::UnknownEntity;
                     r.message = std::move(why);
                     return;
                   }
                   if (vehicles_.is_vehicle(c.id)) vehicles_.mark_despawn(c.id);  // policy DespawnPending this step
                   request_despawn(c.id, DespawnReason::Requested);
                   r.status = CommandStatus::Accepted;
                 },
                 [&](const GarageRequest& c) {
                   const EnqueueResult e = vehicles_.enqueue(c.garage, c.request_id, c.prototype, c.lane, c.priority);
                   switch (e.status) {
                     case EnqueueStatus::Accepted:
                       r.status = CommandStatus::Accepted;
                       r.message = "enqueue ordinal " + std::to_string(e.ordinal);
                       return;
                     case EnqueueStatus::Invalid:
                       r.reason = RejectReason::InvalidArgument;
                       r.message = e.field + ": " + e.message;
                       break;
                     case EnqueueStatus::Duplicate:
                       r.reason = RejectReason::Duplicate;
                       r.message = e.message;
                       break;
                     case EnqueueStatus::QueueFull:
                       r.reason = RejectReason::QueueFull;
                       r.message = e.message;
                       break;
                   }
                   r.status = CommandStatus::Rejected;
                 },
                 [&](const CancelGarageRequest& c) {
                   switch (vehicles_.cancel(c.garage, c.request_id)) {
                     case CancelStatus::Canceled:
                       r.status = CommandStatus::Accepted;
                       return;
                     case CancelStatus::NotQueued:
                       r.reason = RejectReason::NotFound;
                       r.message = "request '" + c.request_id + "' is not queued";
                       break;
                     case CancelStatus::AlreadyDispatched:
                       r.reason = RejectReason::InvalidArgument;
                       r.message = "request '" + c.request_id + "' was already dispatched";
                       break;
                     case CancelStatus::UnknownGarage:
                       r.reason = RejectReason::InvalidArgument;
                       r.message = "garage: unknown garage '" + c.garage + "'";
                       break;
                   }
                   r.status = CommandStatus::Rejected;
                 },
                 [&](const SetVehicleStrategy& c) {
                   if (c.strategy > 3) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::InvalidArgument;
                     r.message = "strategy must be 0-3 (route_follow, lane_follow, parked, manual)";
                     return;
                   }
                   if (!vehicles_.set_strategy(c.id, static_cast<VehicleStrategy>(c.strategy))) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::UnknownEntity;
                     r.message = "entity " + std::to_string(c.id.index) + ":" + std::to_string(c.id.generation) +
                                 " is not a vehicle";
                     return;
                   }
                   r.status = CommandStatus::Accepted;
                 },
                 [&](const SetObservers& c) {
                   if (c.points.size() > 64) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::InvalidArgument;
                     r.message = "at most 64 observers";
                     return;
                   }
                   if (!set_observer_points(c.points, observers_, observer_views_, r)) return;
                   r.status = CommandStatus::Accepted;
                 },
                 [&](const SetClientObservers& c) {
                   if (c.points.size() > kClientObserversMax) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::InvalidArgument;
                     r.message = "at most " + std::to_string(kClientObserversMax) + " client observers";
                     return;
                   }
                   if (!set_observer_points(c.points, client_observers_, client_observer_views_, r)) return;
                   r.status = CommandStatus::Accepted;
                 },
                 [&](const SetHour& c) {
                   if (!(c.hour >= 0.0 && c.hour < 24.0)) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::InvalidArgument;
                     r.message = "hour must be in [0, 24)";
                     return;
                   }
                   population_.set_hour(c.hour);
                   r.status = CommandStatus::Accepted;
                 },
                 [&](const ForceFull& c) {
                   const bool ped = registry_.is_alive(c.id) && peds_.dense_of[c.id.index] != PedestrianStore::kNoSlot;
                   if (!ped && !vehicles_.is_vehicle(c.id)) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::UnknownEntity;
                     r.message = "entity " + std::to_string(c.id.index) + ":" + std::to_string(c.id.generation) +
                                 " is not an active pedestrian or vehicle";
                     return;
                   }
                   auto it = std::lower_bound(forced_full_.begin(), forced_full_.end(), c.id);
                   const bool present = it != forced_full_.end() && *it == c.id;
                   if (!c.on) {
                     if (present) forced_full_.erase(it);
                     r.status = CommandStatus::Accepted;
                     return;
                   }
                   if (!present) {
                     std::uint32_t same_kind = 0;
                     for (const EntityId f : forced_full_) same_kind += vehicles_.is_vehicle(f) == !ped;
                     if (same_kind >= scenario_.tiers.hard_full_cap) {
                       ++force_full_refused_;
                       r.status = CommandStatus::Rejected;
                       r.reason = RejectReason::InvalidArgument;
                       r.message = "ForceFull refused: the hard safety cap of " +
                                   std::to_string(scenario_.tiers.hard_full_cap) + " Full entities is reached";
                       return;
                     }
                     forced_full_.insert(it, c.id);
                   }
                   r.status = CommandStatus::Accepted;
                 },
                 [&](const SetTimeScale& c) {
                   if (c.scale < 1 || c.scale > 3600) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::InvalidArgument;
                     r.message = "time scale must be in [1, 3600] game seconds per second";
                     return;
                   }
                   population_.set_time_scale(c.scale);
                   r.status = CommandStatus::Accepted;
                 },
                 [&](const SpawnPedestrian& c) {
                   std::int32_t zone = kAnyZone;
                   std::uint32_t lane = kAnyLane;
                   std::vector<LaneIndex> route;
                   std::string why = validate_spawn(c, zone, lane, &route);
                   if (why.empty() && spawn_.live.size() >= scenario_.spawn.queue_depth) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::QueueFull;
                     r.message = "spawn queue is at its depth (" + std::to_string(scenario_.spawn.queue_depth) + ")";
                     return;
                   }
                   if (!why.empty()) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::InvalidArgument;
                     r.message = std::move(why);
                     return;
                   }
                   r.handle = accept_spawn(c, zone, lane, route, env.origin);
                   r.status = CommandStatus::Accepted;
                 },
                 [&](const CancelSpawn& c) {
                   auto it = std::lower_bound(spawn_.live.begin(), spawn_.live.end(), c.handle,
                                              [](const SpawnHandleState& h, std::uint64_t v) { return h.handle < v; });
                   r.status = CommandStatus::Rejected;
                   if (it == spawn_.live.end() || it->handle != c.handle) {
                     const auto ended = find_spawn(c.handle);
                     if (ended && ended->state == SpawnState::RepresentationRequested) {
                       // The core's part ended, but its entity walks: as for Registered.
                       r.reason = RejectReason::InvalidArgument;
                       r.message = "spawn " + std::to_string(c.handle) +
                                   " is representation_requested: its entity exists; despawn it instead";
                       return;
                     }
                     r.reason = RejectReason::NotFound;
                     r.message = ended ? "spawn " + std::to_string(c.handle) + " already ended (" +
                                             to_string(ended->state) + ")"
                                       : "no spawn handle " + std::to_string(c.handle);
                     return;
                   }
                   if (it->state != SpawnState::Queued && it->state != SpawnState::IdentityCreated) {
                     r.reason = RejectReason::InvalidArgument;
                     r.message = "spawn " + std::to_string(c.handle) + " is " + to_string(it->state) +
                                 ": its entity exists; despawn it instead";
                     return;
                   }
                   r.handle = c.handle;
                   if (it->state == SpawnState::IdentityCreated) {
                     r.entity = it->entity;
                     registry_.release(it->entity);
                   }
                   set_spawn_state(*it, SpawnState::Canceled);
                   retire_terminal_spawns();
                   r.status = CommandStatus::Accepted;
                 },
                 [&](const SetLifecycle& c) {
                   const LifecycleSettings ls{c.growth_quota, c.recycle_quota, c.interval_ms, c.migration_budget};
                   if (std::string why = validate_lifecycle_settings(ls); !why.empty()) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::InvalidArgument;
                     r.message = std::move(why);
                     return;
                   }
                   population_.set_settings(ls, sim_time_us());
                   r.status = CommandStatus::Accepted;
                 },
                 [&](const LifecycleBatch& c) { r = apply_batch(c, std::move(r)); },
             },
             env.command);
  return r;
}

// Phases 4-5 (population upkeep) -------------------------------------------

void World::phase_time_and_zones() {
  if (!population_.advance_clock(step_index_ * scenario_.step_us, scenario_.step_us)) return;
  const ResidentStore& rs = population_.residents();
  // Asked only for recycle candidates (walking residents).
  const auto distance = [&](std::uint32_t r) {
    const std::uint32_t slot = peds_.dense_of[rs.id[r].index];
    if (slot == PedestrianStore::kNoSlot) return 0.0;
    const Vec2 p = lanes_.position(peds_.lane[slot], peds_.s_m[slot]);
    return nearest_observer_m(tier_observers_, p.x_m, p.y_m);
  };
  to_activate_.clear();
  to_deactivate_.clear();
  to_move_.clear();
  population_.lifecycle(distance, to_activate_, to_deactivate_, to_move_);
  for (const std::uint32_t r : to_move_) move_resident(r);
  for (const std::uint32_t r : to_deactivate_) {
    remove_pedestrian(rs.id[r]);
    population_.on_deactivated(r);
  }
  for (const std::uint32_t r : to_activate_) place_resident(r);
}

std::uint8_t World::initial_tier(LaneIndex lane, double s_m, PriorityClass cls) const {
  // Effective distance alone (no budget): the next tier resolution applies caps.
  const Vec2 p = lanes_.position(lane, s_m);
  const double d = effective_distance_at(p, lane, cls, false);
  const TierSpec& t = scenario_.tiers;
  const SimTier tier = d <= t.full_enter_m ? SimTier::Full : d <= t.simulated_enter_m ? SimTier::Simulated : SimTier::Coarse;
  return static_cast<std::uint8_t>(tier);
}

void World::place_resident(std::uint32_t r) {
  const ResidentStore& rs = population_.residents();
  const auto& lanes = population_.zone_lanes()[rs.zone[r]];
  const LaneIndex lane = lanes[rng_.next_below(static_cast<std::uint32_t>(lanes.size()))];
  const double s = rng_.next_unit() * lanes_.lane(lane).length_m;
  push_pedestrian(rs.id[r], lane, s, r, PriorityClass::Community, PedestrianOrigin::Resident);
  population_.on_activated(r);
}

void World::move_resident(std::uint32_t r) {
  // A completed handoff: the representation re-enters on a lane of its new
  // zone; identity, tier and route counter are kept.
  const ResidentStore& rs = population_.residents();
  const std::uint32_t slot = peds_.dense_of[rs.id[r].index];
  if (slot == PedestrianStore::kNoSlot) return;
  const auto& lanes = population_.zone_lanes()[rs.zone[r]];
  const LaneIndex lane = lanes[rng_.next_below(static_cast<std::uint32_t>(lanes.size()))];
  ped_sum_ -= ped_row_hash(slot) + ped_motion_hash(peds_.id[slot], peds_.s_m[slot]);
  peds_.lane[slot] = lane;
  peds_.s_m[slot] = rng_.next_unit() * lanes_.lane(lane).length_m;
  ped_sum_ += ped_row_hash(slot) + ped_motion_hash(peds_.id[slot], peds_.s_m[slot]);
}

void World::push_pedestrian(EntityId id, LaneIndex lane, double s_m, std::uint32_t resident, PriorityClass cls,
                            PedestrianOrigin origin) {
  // Pedestrian invariants 1-3 where they are written (read back by remove_pedestrian).
  assert(peds_.dense_of[id.index] == PedestrianStore::kNoSlot);
  assert(registry_.is_alive(id));
  assert((origin == PedestrianOrigin::Resident) == (resident != PedestrianStore::kNoResident));
  assert(resident == PedestrianStore::kNoResident ||
         population_.resident_of(id) == static_cast<std::int32_t>(resident));  // invariant 3: derived from the id
  (void)resident;
  peds_.dense_of[id.index] = peds_.size();
  peds_.id.push_back(id);
  peds_.lane.push_back(lane);
  peds_.s_m.push_back(s_m);
  peds_.hops.push_back(0);
  peds_.tier.push_back(initial_tier(lane, s_m, cls));
  peds_.priority.push_back(static_cast<std::uint8_t>(cls));
  peds_.origin.push_back(static_cast<std::uint8_t>(origin));
  peds_.phase.push_back(id_phase(id));
  peds_.route.push_back(kNoRoute);
  if (origin == PedestrianOrigin::Background) ++background_count_;
  ped_sum_ += ped_row_hash(peds_.size() - 1) + ped_motion_hash(id, s_m);
}

void World::set_pedestrian_route(std::uint32_t slot, std::uint32_t route) {
  ped_sum_ -= ped_row_hash(slot);
  peds_.route[slot] = route;
  ped_sum_ += ped_row_hash(slot);
}

void World::ledger_targets(std::vector<double>& out) const {
  // The background target shared among sidewalk fragments by length.
  const auto& frags = lanes_.fragments();
  double total = 0.0;
  for (const LaneFragment& f : frags) total += f.length_m;
  out.assign(frags.size(), 0.0);
  for (std::size_t k = 0; k < frags.size() && total > 0.0; ++k) {
    out[k] = pedestrian_target_ * frags[k].length_m / total;
  }
}

void World::ledger_counts(std::vector<std::uint32_t>& out, std::vector<std::uint32_t>* fragment_of_slot) const {
  out.assign(lanes_.fragments().size(), 0);
  if (fragment_of_slot != nullptr) fragment_of_slot->assign(peds_.size(), LaneGraph::kNoFragment);
  for (std::uint32_t i = 0; i < peds_.size(); ++i) {
    if (peds_.origin[i] != static_cast<std::uint8_t>(PedestrianOrigin::Background)) continue;
    const std::uint32_t f = lanes_.fragment_of(peds_.lane[i], peds_.s_m[i]);
    if (f == LaneGraph::kNoFragment) continue;
    ++out[f];
    if (fragment_of_slot != nullptr) (*fragment_of_slot)[i] = f;
  }
}

void World::refresh_ledger_target() {
  if (ledger_target_for_ == pedestrian_target_) return;
  ledger_targets(ledger_target_);
  ledger_target_for_ = pedestrian_target_;
}

void World::density_ledger(std::vector<double>& out) const {
  ledger_targets(out);
  std::vector<std::uint32_t> actual;
  ledger_counts(actual);
  for (std::size_t f = 0; f < out.size(); ++f) out[f] -= actual[f];
}

LedgerSummary World::ledger_summary() const {
  std::vector<double> gap;
  density_ledger(gap);
  LedgerSummary s;
  s.fragments = static_cast<std::uint32_t>(gap.size());
  for (const double g : gap) {
    if (g > 0.0) s.deficit += g;
    if (g < 0.0) s.surplus -= g;
    s.max_deficit = std::max(s.max_deficit, g);
  }
  return s;
}

void World::phase_population_upkeep() {
  // Background upkeep is driven by the lane density ledger (target - actual
  // per sidewalk fragment): growth fills the largest deficit first, trimming
  // takes from the largest surplus. Both only run when the totals differ, so
  // a city at its target pays nothing here.
  const std::uint32_t alive = background_count_;
  if (alive == pedestrian_target_) return;
  refresh_ledger_target();
  // Fragments per pedestrian are found once; trimming reuses them.
  ledger_counts(ledger_actual_, alive > pedestrian_target_ ? &ped_fragment_ : nullptr);
  const std::uint32_t nf = static_cast<std::uint32_t>(ledger_actual_.size());
  if (alive > pedestrian_target_) {
    const std::uint32_t n = std::min(alive - pedestrian_target_, scenario_.pedestrians.spawn_per_step_max);
    // Candidates per fragment: Coarse (off-screen) before others, then the
    // highest EntityId; the choice depends on state only, never on storage order.
    for (std::uint32_t k = 0; k < n; ++k) {
      std::uint32_t worst = LaneGraph::kNoFragment;
      double worst_surplus = 0.0;
      for (std::uint32_t f = 0; f < nf; ++f) {
        const double surplus = ledger_actual_[f] - ledger_target_[f];
        if (ledger_actual_[f] > 0 && (worst == LaneGraph::kNoFragment || surplus > worst_surplus)) {
          worst = f;
          worst_surplus = surplus;
        }
      }
      std::uint32_t pick = PedestrianStore::kNoSlot;
      for (std::uint32_t i = 0; i < peds_.size(); ++i) {
        if (peds_.origin[i] != static_cast<std::uint8_t>(PedestrianOrigin::Background) ||
            despawn_pending_[peds_.id[i].index] != 0) {
          continue;
        }
        if (worst != LaneGraph::kNoFragment && ped_fragment_[i] != worst) continue;
        if (pick == PedestrianStore::kNoSlot) {
          pick = i;
          continue;
        }
        const bool ci = peds_.tier[i] == static_cast<std::uint8_t>(SimTier::Coarse);
        const bool cp = peds_.tier[pick] == static_cast<std::uint8_t>(SimTier::Coarse);
        if (ci != cp ? ci : peds_.id[pick] < peds_.id[i]) pick = i;
      }
      if (pick == PedestrianStore::kNoSlot) break;
      if (worst != LaneGraph::kNoFragment) --ledger_actual_[worst];
      request_despawn(peds_.id[pick], DespawnReason::Overpopulated);
    }
    return;
  }
  const std::uint32_t n = std::min(pedestrian_target_ - alive, scenario_.pedestrians.spawn_per_step_max);
  for (std::uint32_t k = 0; k < n; ++k) {
    std::uint32_t best = 0;
    double best_gap = -std::numeric_limits<double>::infinity();
    for (std::uint32_t f = 0; f < nf; ++f) {
      const double gap = ledger_target_[f] - ledger_actual_[f];
      if (gap > best_gap) {
        best = f;
        best_gap = gap;
      }
    }
    if (nf == 0 || !spawn_pedestrian(best)) break;
    ++ledger_actual_[best];
  }
}

bool World::spawn_pedestrian(std::uint32_t fragment) {
  const AllocateResult a = registry_.allocate();
  if (a.status != AllocateStatus::Allocated) {
    ++counters_.spawn_failed_capacity;
    return false;
  }
  const LaneFragment& f = lanes_.fragments()[fragment];
  const double s = f.start_m + rng_.next_unit() * f.length_m;
  push_pedestrian(a.id, f.lane, s, PedestrianStore::kNoResident, PriorityClass::Background,
                  PedestrianOrigin::Background);
  ++counters_.spawned_total;
  return true;
}

// Phase 6 ------------------------------------------------------------------

void World::phase_vehicles() {
  if (scenario_.garages.empty()) return;
  // Crossing occupancy from the pre-step pedestrian state (phase 7 has not run).
  std::fill(crossing_occupied_.begin(), crossing_occupied_.end(), 0);
  for (std::uint32_t i = 0; i < peds_.size(); ++i) {
    if (lanes_.lane(peds_.lane[i]).kind == LaneKind::Crossing) crossing_occupied_[peds_.lane[i]] = 1;
  }
  vehicle_despawns_.clear();
  vehicles_.step(step_index_, scenario_.step_us, registry_, crossing_occupied_, tier_observers_, vehicle_despawns_);
  for (const auto& d : vehicle_despawns_) {
    request_despawn(d.id, d.stuck             ? DespawnReason::Stuck
                          : d.route_completed ? DespawnReason::RouteCompleted
                                              : DespawnReason::Requested);
  }
}

// Phase 8 ------------------------------------------------------------------

void World::fill_force(std::span<const EntityId> ids) {
  force_scratch_.assign(ids.size(), 0);
  if (forced_full_.empty()) return;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    force_scratch_[i] = std::binary_search(forced_full_.begin(), forced_full_.end(), ids[i]) ? 1 : 0;
  }
}

void World::phase_tiers() {
  if (vehicles_.store().size() > 0) vehicles_.resolve_tiers(step_index_, scenario_.tiers, importance_, forced_full_);
  // Pedestrians are resolved a slice at a time: each step takes those whose
  // id phase (like the stride phase) matches the step, so each pedestrian is
  // re-resolved every pedestrian_resolve_every_steps steps and every step
  // does the same share of the work. The slice competes for what the caps
  // leave after the other slices' current tiers.
  const std::uint32_t every = scenario_.tiers.pedestrian_resolve_every_steps;
  const auto phase = static_cast<std::uint32_t>(step_index_ % every);
  const std::uint32_t n = peds_.size();
  constexpr auto kFull = static_cast<std::uint8_t>(SimTier::Full);
  std::uint8_t in_slice[64];  // by id phase (< 64): no division per pedestrian
  for (std::uint32_t ph = 0; ph < 64; ++ph) in_slice[ph] = ph % every == phase;
  // The slice in row order, built in parts: count each part's members (and
  // the tiers of the rest), place each part at its prefix offset, and take
  // every member's effective distance on the way (a pure function of it).
  const std::uint32_t parts = parts_for_rows(n);
  if (tier_parts_.size() < parts) tier_parts_.resize(parts);
  run_parts(executor(), parts, [&](std::uint32_t p) {
    TierPart& t = tier_parts_[p];
    t = TierPart{};
    const std::uint32_t end = std::min(n, (p + 1) * kRowsPerPart);
    for (std::uint32_t i = p * kRowsPerPart; i < end; ++i) {
      if (in_slice[peds_.phase[i]]) {
        ++t.members;
      } else {
        ++t.others[peds_.tier[i]];
      }
    }
  });
  std::uint32_t others[kSimTierCount] = {};
  std::uint32_t m = 0;
  for (std::uint32_t p = 0; p < parts; ++p) {
    TierPart& t = tier_parts_[p];
    t.first = m;
    m += t.members;
    for (std::size_t tier = 0; tier < kSimTierCount; ++tier) others[tier] += t.others[tier];
  }
  slice_.resize(m);
  slice_ids_.resize(m);
  slice_tier_.resize(m);
  ped_distance_.resize(m);
  run_parts(executor(), parts, [&](std::uint32_t p) {
    std::uint32_t k = tier_parts_[p].first;
    const std::uint32_t end = std::min(n, (p + 1) * kRowsPerPart);
    for (std::uint32_t i = p * kRowsPerPart; i < end; ++i) {
      if (!in_slice[peds_.phase[i]]) continue;
      slice_[k] = i;
      slice_ids_[k] = peds_.id[i];
      slice_tier_[k] = peds_.tier[i];
      ped_distance_[k] = pedestrian_effective_distance(i);
      ++k;
    }
  });
  const double out_of_range = scenario_.despawn.out_of_range_m;
  if (out_of_range > 0.0 && !tier_observers_.empty()) {
    for (std::uint32_t k = 0; k < m; ++k) {
      const std::uint32_t i = slice_[k];
      if (peds_.origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Background) && ped_distance_[k] > out_of_range) {
        request_despawn(peds_.id[i], DespawnReason::OutOfRange);
      }
    }
  }
  fill_force(slice_ids_);
  // ForceFull entities of other slices hold Full outside full_cap but inside
  // the hard cap.
  std::uint32_t others_forced = 0;
  for (const EntityId f : forced_full_) {
    const std::uint32_t slot = f.index < peds_.dense_of.size() ? peds_.dense_of[f.index] : PedestrianStore::kNoSlot;
    if (slot != PedestrianStore::kNoSlot && peds_.id[slot] == f && peds_.tier[slot] == kFull &&
        id_phase(f) % every != phase) {
      ++others_forced;
    }
  }
  const TierSpec spec = slice_caps(scenario_.tiers, others, others_forced);
  const TierCounts sc = ped_tier_resolver_.resolve(spec, slice_ids_, ped_distance_, slice_tier_, force_scratch_);
  // The new tiers into the rows (each slice member is one row), in parts;
  // the digest sum's change added up in part order.
  const std::uint32_t apply_parts = parts_for_rows(m);
  run_parts(executor(), apply_parts, [&](std::uint32_t p) {
    std::uint64_t delta = 0;
    const std::uint32_t end = std::min(m, (p + 1) * kRowsPerPart);
    for (std::uint32_t k = p * kRowsPerPart; k < end; ++k) {
      const std::uint32_t i = slice_[k];
      if (peds_.tier[i] == slice_tier_[k]) continue;
      delta -= ped_row_hash(i);
      peds_.tier[i] = slice_tier_[k];
      delta += ped_row_hash(i);
    }
    tier_parts_[p].sum_delta = delta;
  });
  for (std::uint32_t p = 0; p < apply_parts; ++p) ped_sum_ += tier_parts_[p].sum_delta;
  ped_tiers_ = sc;
  for (std::size_t t = 0; t < kSimTierCount; ++t) ped_tiers_.per_tier[t] = sc.per_tier[t] + others[t];
  ped_tiers_.forced = sc.forced + others_forced;
}

double World::pedestrian_effective_distance(std::uint32_t i) const {
  const Vec2 p = lanes_.position(peds_.lane[i], peds_.s_m[i]);
  return effective_distance_at(p, peds_.lane[i], static_cast<PriorityClass>(peds_.priority[i]), false);
}

double World::effective_distance_at(Vec2 p, LaneIndex lane, PriorityClass cls, bool vehicle) const {
  const double w = importance_.weight(cls, vehicle, p.x_m, p.y_m);
  return importance_.effective_distance_m(p.x_m, p.y_m, lanes_.lane(lane).elevation_m, w);
}

void World::prepare_importance() {
  importance_.prepare(scenario_.tiers.importance, tier_observers_, tier_views_);
}

bool World::set_observer_points(std::span<const ObserverPoint> points, std::vector<Vec2>& out,
                                std::vector<ObserverView>& views, CommandResult& r) {
  for (const ObserverPoint& p : points) {
    if (!std::isfinite(p.x_m) || !std::isfinite(p.y_m) || !std::isfinite(p.z_m) || !std::isfinite(p.heading_rad)) {
      r.status = CommandStatus::Rejected;
      r.reason = RejectReason::InvalidArgument;
      r.message = "observer coordinates, height and heading must be finite";
      return false;
    }
  }
  out.clear();
  views.clear();
  for (const ObserverPoint& p : points) {
    out.push_back({p.x_m, p.y_m});
    views.push_back({p.z_m, p.has_heading, p.has_heading ? p.heading_rad : 0.0});
  }
  refresh_tier_observers();
  return true;
}

void World::refresh_tier_observers() {
  tier_observers_ = observers_;
  tier_views_ = observer_views_;
  tier_views_.resize(tier_observers_.size());
  tier_observers_.insert(tier_observers_.end(), client_observers_.begin(), client_observers_.end());
  tier_views_.insert(tier_views_.end(), client_observer_views_.begin(), client_observer_views_.end());
}

// Phase 7 ------------------------------------------------------------------

void World::phase_move_pedestrians() {
  const double dt_s = static_cast<double>(scenario_.step_us) * 1e-6;
  const std::uint32_t n = peds_.size();
  // Due this step, by tier and id phase (a table per step, so the loop over
  // every pedestrian does one load instead of the stride arithmetic).
  std::uint8_t due[kSimTierCount][64];
  for (std::size_t t = 0; t < kSimTierCount; ++t) {
    for (std::uint8_t ph = 0; ph < 64; ++ph) due[t][ph] = tier_due_phase(step_index_, ph, static_cast<SimTier>(t));
  }
  // Parts of kRowsPerPart rows, run by the executor in any order and on any
  // threads; their queued effects are applied below in part (= row) order,
  // exactly as the sequential loop applied them.
  const std::uint32_t parts = parts_for_rows(n);
  if (move_parts_.size() < parts) move_parts_.resize(parts);
  run_parts(executor(), parts, [&](std::uint32_t p) {
    MovePart& out = move_parts_[p];
    out.sum_delta = 0;
    out.despawns.clear();
    out.released_routes.clear();
    move_pedestrian_rows(p * kRowsPerPart, std::min(n, (p + 1) * kRowsPerPart), due, dt_s, out);
  });
  for (std::uint32_t p = 0; p < parts; ++p) {
    const MovePart& part = move_parts_[p];
    ped_sum_ += part.sum_delta;
    for (const DespawnRequest& d : part.despawns) request_despawn(d.id, d.reason);
    for (const std::uint32_t route : part.released_routes) routes_.release(route);
  }
}

// Rows [begin, end) of phase 7. Writes only those rows and `out`; reads the
// lane graph and the routes (a route's cursor belongs to its one pedestrian;
// releasing a route may compact the table, so it is queued).
void World::move_pedestrian_rows(std::uint32_t begin, std::uint32_t end,
                                 const std::uint8_t (&due)[kSimTierCount][64], double dt_s, MovePart& out) {
  for (std::uint32_t i = begin; i < end; ++i) {
    // Not due this step: the next due step moves by the whole stride's time,
    // so progress over time is the same in every tier.
    if (!due[peds_.tier[i]][peds_.phase[i]]) continue;
    const auto tier = static_cast<SimTier>(peds_.tier[i]);
    LaneIndex lane = peds_.lane[i];
    const double s_before = peds_.s_m[i];
    double s = s_before;
    double time_left_s = dt_s * tier_stride(tier);
    bool hopped = false;
    for (std::uint32_t hop = 0; hop < kMaxHopsPerStep; ++hop) {
      const Lane& L = lanes_.lane(lane);
      const double travel_m = L.speed_mps_limit * time_left_s;
      if (s + travel_m < L.length_m) {
        s += travel_m;
        break;
      }
      // Reached the lane end: keep the unused time and spend it on the next
      // lane at that lane's speed, so no progress is lost at corners.
      time_left_s -= (L.length_m - s) / L.speed_mps_limit;
      if (time_left_s < 0.0) time_left_s = 0.0;
      const auto& next = L.pedestrian_successors;
      if (next.empty()) {
        s = L.length_m;
        out.despawns.push_back({peds_.id[i], DespawnReason::LaneDeadEnd});
        break;
      }
      // The row (lane, hops, route) is about to change: take its old hash
      // out of the digest sum while the columns still hold the old values.
      if (!hopped) out.sum_delta -= ped_row_hash(i);
      hopped = true;
      // A pedestrian with a route takes its next lane (validated as a
      // successor when the route was accepted); afterwards it wanders.
      std::optional<LaneIndex> routed;
      if (peds_.route[i] != kNoRoute) {
        routed = routes_.next(peds_.route[i]);
        if (!routed) {
          out.released_routes.push_back(peds_.route[i]);
          peds_.route[i] = kNoRoute;
        }
      }
      // Route choice is a pure function of (world seed stream, id, hop count):
      // it does not depend on the order agents are processed in.
      const std::uint64_t h = mix64(route_salt_ ^ peds_.id[i].packed() * 0x9E3779B97F4A7C15ull ^
                                    peds_.hops[i]);
      lane = routed ? *routed : next[static_cast<std::size_t>(h % next.size())];
      s = 0.0;
      ++peds_.hops[i];
    }
    peds_.lane[i] = lane;
    peds_.s_m[i] = s;
    if (hopped) out.sum_delta += ped_row_hash(i);
    if (s != s_before) out.sum_delta += ped_motion_hash(peds_.id[i], s) - ped_motion_hash(peds_.id[i], s_before);
  }
}

void World::remove_pedestrian(EntityId id) {
  const std::uint32_t slot = peds_.dense_of[id.index];
  assert(slot != PedestrianStore::kNoSlot);
  assert(peds_.id[slot] == id);  // invariant 1, as push_pedestrian wrote it
  const std::uint32_t last = peds_.size() - 1;
  ped_sum_ -= ped_row_hash(slot) + ped_motion_hash(id, peds_.s_m[slot]);
  if (peds_.route[slot] != kNoRoute) routes_.release(peds_.route[slot]);
  if (peds_.origin[slot] == static_cast<std::uint8_t>(PedestrianOrigin::Background)) --background_count_;
  if (slot != last) {
    peds_.id[slot] = peds_.id[last];
    peds_.lane[slot] = peds_.lane[last];
    peds_.s_m[slot] = peds_.s_m[last];
    peds_.hops[slot] = peds_.hops[last];
    peds_.tier[slot] = peds_.tier[last];
    peds_.priority[slot] = peds_.priority[last];
    peds_.origin[slot] = peds_.origin[last];
    peds_.phase[slot] = peds_.phase[last];
    peds_.route[slot] = peds_.route[last];
    peds_.dense_of[peds_.id[slot].index] = slot;
  }
  peds_.id.pop_back();
  peds_.lane.pop_back();
  peds_.s_m.pop_back();
  peds_.hops.pop_back();
  peds_.tier.pop_back();
  peds_.priority.pop_back();
  peds_.origin.pop_back();
  peds_.phase.pop_back();
  peds_.route.pop_back();
  peds_.dense_of[id.index] = PedestrianStore::kNoSlot;
}

// Pedestrian digest terms --------------------------------------------------

std::uint64_t World::ped_row_hash(std::uint32_t slot) const {
  // Every column but s_m (ped_motion_hash) and the two derived from others:
  // phase (from the id) and resident (the population maps the id to it, and
  // its rows are digested there).
  Digest e;
  e.u64(peds_.id[slot].packed());
  e.u64(std::uint64_t{peds_.lane[slot]} << 32 | std::uint64_t{peds_.tier[slot]} << 16 |
        std::uint64_t{peds_.priority[slot]} << 8 | peds_.origin[slot]);
  e.u64(peds_.hops[slot]);
  if (peds_.route[slot] != kNoRoute) e.u64(peds_.route[slot]);
  return e.value();
}

std::uint64_t World::ped_sum_recount() const {
  std::uint64_t sum = 0;
  for (std::uint32_t slot = 0; slot < peds_.size(); ++slot) {
    sum += ped_row_hash(slot) + ped_motion_hash(peds_.id[slot], peds_.s_m[slot]);
  }
  return sum;
}

// Derived views ------------------------------------------------------------

Pose World::pedestrian_pose(std::uint32_t dense) const {
  return lanes_.sample(peds_.lane[dense], peds_.s_m[dense]);
}

double World::pedestrian_speed_mps(std::uint32_t dense) const {
  return lanes_.lane(peds_.lane[dense]).speed_mps_limit;
}

// Phase 11 -----------------------------------------------------------------

std::uint64_t World::compute_digest() const {
  // Canonical encoding: fixed section order; collections whose storage order
  // is not part of the contract (registry slots, dense pedestrian arrays) are
  // folded in as sums of per-element hashes, so the value depends on the state
  // alone and costs O(live entities) per step, not O(capacity).
  Digest d;
  d.tag(1).u64(step_index_).u32(scenario_.step_us);
  for (const std::uint64_t w : rng_.state()) d.u64(w);
  d.u64(route_salt_).u32(pedestrian_target_);

  d.tag(2).u32(registry_.capacity()).u32(registry_.alive_count()).u64(registry_.state_digest());

  // Pedestrians as an order-independent sum of per-entity hashes: canonical
  // (independent of dense storage order), maintained as rows change (O(1)
  // here; see ped_row_hash).
  d.tag(4).u32(peds_.size()).u32(background_count_).u64(ped_sum_);
  for (const std::uint32_t c : ped_tiers_.per_tier) d.u32(c);
  d.u32(ped_tiers_.promoted).u32(ped_tiers_.demoted).u32(ped_tiers_.deferred);
  d.u32(ped_tiers_.forced).u32(ped_tiers_.forced_overflow);
  d.tag(8).u64(forced_full_.size()).u64(force_full_refused_);
  for (const EntityId f : forced_full_) d.u64(f.packed());
  population_.digest_into(d);

  d.tag(5).u64(inbox_count_);
  for (std::size_t k = 0; k < inbox_count_; ++k) {
    const CommandEnvelope& env = inbox_[(inbox_head_ + k) % inbox_.size()];
    // Not env.origin: who sent a command (session and request ids) only routes
    // its result. It is checkpointed, but the same commands from another
    // connection are the same simulation and must give the same digest.
    // The command's kind, numbered as before ReportAttached (11) left the
    // world commands, so a pending command digests as it always did.
    const std::size_t kind = env.command.index();
    d.u64(kind >= 11 ? kind + 1 : kind);
    std::visit(Overloaded{[&](const SetPedestrianTarget& c) { d.u32(c.count); },
                          [&](const DespawnEntity& c) { d.u64(c.id.packed()); },
                          [&](const GarageRequest& c) {
                            d.str(c.garage).str(c.request_id).str(c.prototype).str(c.lane);
                            d.u64(static_cast<std::uint64_t>(c.priority));
                          },
                          [&](const CancelGarageRequest& c) { d.str(c.garage).str(c.request_id); },
                          [&](const SetVehicleStrategy& c) { d.u64(c.id.packed()).u32(c.strategy); },
                          [&](const SetObservers& c) {
                            d.u64(c.points.size());
                            for (const ObserverPoint& p : c.points) {
                              d.f64(p.x_m).f64(p.y_m).f64(p.z_m).boolean(p.has_heading).f64(p.heading_rad);
                            }
                          },
                          [&](const SetHour& c) { d.f64(c.hour); },
                          [&](const SetTimeScale& c) { d.u32(c.scale); },
                          [&](const ForceFull& c) { d.u64(c.id.packed()).boolean(c.on); },
                          [&](const SpawnPedestrian& c) { digest_spawn_request(d, c); },
                          [&](const CancelSpawn& c) { d.u64(c.handle); },
                          [&](const SetLifecycle& c) {
                            d.u32(c.growth_quota).u32(c.recycle_quota).u32(c.interval_ms).u32(c.migration_budget);
                          },
                          [&](const LifecycleBatch& c) {
                            d.u64(c.ops.size());
                            for (const LifecycleOp& op : c.ops) {
                              d.u32(static_cast<std::uint32_t>(op.kind)).u64(op.id.packed());
                              digest_spawn_request(d, op.spawn);
                            }
                          },
                          [&](const SetClientObservers& c) {
                            d.u64(c.points.size());
                            for (const ObserverPoint& p : c.points) {
                              d.f64(p.x_m).f64(p.y_m).f64(p.z_m).boolean(p.has_heading).f64(p.heading_rad);
                            }
                          }},
               env.command);
  }

  vehicles_.digest_into(d);
  d.tag(7).u64(observers_.size());
  for (const Vec2& o : observers_) d.f64(o.x_m).f64(o.y_m);
  for (const ObserverView& v : observer_views_) d.f64(v.z_m).boolean(v.has_heading).f64(v.heading_rad);
  // The clients' observers (SetClientObservers). An empty set adds nothing, so
  // a run without client observers keeps the digests of earlier builds.
  if (!client_observers_.empty()) {
    d.tag(9).u64(client_observers_.size());
    for (std::size_t k = 0; k < client_observers_.size(); ++k) {
      const ObserverView& v = client_observer_views_[k];
      d.f64(client_observers_[k].x_m).f64(client_observers_[k].y_m).f64(v.z_m).boolean(v.has_heading).f64(v.heading_rad);
    }
  }
  digest_lifecycle_into(d);

  d.tag(6).u64(counters_.spawned_total).u64(counters_.despawned_total);
  for (const std::uint64_t c : counters_.despawned_by_reason) d.u64(c);
  d.u64(counters_.spawn_failed_capacity).u64(counters_.commands_accepted).u64(counters_.commands_rejected);
  d.u64(counters_.faded_total).u64(counters_.fade_skipped_total);
  return d.value();
}

}  // namespace bustle::core
