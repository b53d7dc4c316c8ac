#include "bustle/core/world.hpp"

#include <algorithm>
#include <map>
#include <cassert>
#include <cmath>
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
                               [](const ForceFull&) { return "force_full"; }},
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
  peds_.resident.reserve(cap);
  peds_.tier.reserve(cap);
  peds_.dense_of.assign(cap, PedestrianStore::kNoSlot);
  // Resident identities exist from the start (all dormant); validation made
  // sure they fit the entity capacity.
  {
    std::map<std::string, LaneIndex> lane_by_id;
    for (LaneIndex l = 0; l < lanes_.size(); ++l) lane_by_id.emplace(lanes_.lane(l).id, l);
    std::vector<std::vector<LaneIndex>> zone_lanes;
    for (const ZoneSpec& z : scenario_.zones) {
      std::vector<LaneIndex> ls;
      for (const std::string& id : z.lanes) ls.push_back(lane_by_id.at(id));
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
  phase_apply_commands();
  phase_time_and_zones();
  phase_population_upkeep();
  phase_vehicles();
  phase_move_pedestrians();
  phase_tiers();
  phase_despawn();
  digest_ = compute_digest();
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
                   const bool ped = registry_.is_alive(c.id) && peds_.dense_of[c.id.index] != PedestrianStore::kNoSlot;
                   const bool veh = vehicles_.is_vehicle(c.id);
                   if (!ped && !veh) {
                     r.status = CommandStatus::Rejected;
                     r.reason = RejectReason::UnknownEntity;
                     r.message = "entity " + std::to_string(c.id.index) + ":" +
                                 std::to_string(c.id.generation) + " is not alive";
                     return;
                   }
                   if (veh) vehicles_.mark_despawn(c.id);  // policy DespawnPending this step
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
                   for (const ObserverPoint& p : c.points) {
                     if (!std::isfinite(p.x_m) || !std::isfinite(p.y_m)) {
                       r.status = CommandStatus::Rejected;
                       r.reason = RejectReason::InvalidArgument;
                       r.message = "observer coordinates must be finite";
                       return;
                     }
                   }
                   observers_.clear();
                   for (const ObserverPoint& p : c.points) observers_.push_back({p.x_m, p.y_m});
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
             },
             env.command);
  return r;
}

// Phases 4-5 (population upkeep) -------------------------------------------

void World::phase_time_and_zones() {
  if (!population_.advance_clock(step_index_ * scenario_.step_us, scenario_.step_us)) return;
  const ResidentStore& rs = population_.residents();
  resident_distance_.assign(rs.size(), 0.0);
  for (std::uint32_t i = 0; i < peds_.size(); ++i) {
    if (peds_.resident[i] == PedestrianStore::kNoResident) continue;
    const Vec2 p = lanes_.position(peds_.lane[i], peds_.s_m[i]);
    resident_distance_[peds_.resident[i]] = nearest_observer_m(observers_, p.x_m, p.y_m);
  }
  to_activate_.clear();
  to_deactivate_.clear();
  population_.lifecycle(resident_distance_, to_activate_, to_deactivate_);
  for (const std::uint32_t r : to_deactivate_) {
    remove_pedestrian(rs.id[r]);
    population_.on_deactivated(r);
  }
  for (const std::uint32_t r : to_activate_) place_resident(r);
}

std::uint8_t World::initial_tier(LaneIndex lane, double s_m) const {
  // Distance alone (no budget): the next tier resolution applies caps.
  const Vec2 p = lanes_.position(lane, s_m);
  const double d = nearest_observer_m(observers_, p.x_m, p.y_m);
  const TierSpec& t = scenario_.tiers;
  const SimTier tier = d <= t.full_enter_m ? SimTier::Full : d <= t.simulated_enter_m ? SimTier::Simulated : SimTier::Coarse;
  return static_cast<std::uint8_t>(tier);
}

void World::place_resident(std::uint32_t r) {
  const ResidentStore& rs = population_.residents();
  const auto& lanes = population_.zone_lanes()[rs.zone[r]];
  const LaneIndex lane = lanes[rng_.next_below(static_cast<std::uint32_t>(lanes.size()))];
  const double s = rng_.next_unit() * lanes_.lane(lane).length_m;
  const EntityId id = rs.id[r];
  peds_.dense_of[id.index] = peds_.size();
  peds_.id.push_back(id);
  peds_.lane.push_back(lane);
  peds_.s_m.push_back(s);
  peds_.hops.push_back(0);
  peds_.resident.push_back(r);
  peds_.tier.push_back(initial_tier(lane, s));
  population_.on_activated(r);
}

void World::phase_population_upkeep() {
  const std::uint32_t alive = background_count_;
  if (alive > pedestrian_target_) {
    // Shrink: the newest background identities (highest EntityId) leave first.
    // Choosing by id, never by storage position, keeps the choice canonical.
    std::vector<EntityId> ids;
    ids.reserve(alive);
    for (std::uint32_t i = 0; i < peds_.size(); ++i) {
      if (peds_.resident[i] == PedestrianStore::kNoResident) ids.push_back(peds_.id[i]);
    }
    const std::uint32_t excess = alive - pedestrian_target_;
    const std::uint32_t n = std::min(excess, scenario_.pedestrians.spawn_per_step_max);
    std::partial_sort(ids.begin(), ids.begin() + n, ids.end(),
                      [](EntityId a, EntityId b) { return b < a; });
    for (std::uint32_t k = 0; k < n; ++k) request_despawn(ids[k], DespawnReason::Overpopulated);
    return;
  }
  const std::uint32_t gap = pedestrian_target_ - alive;
  const std::uint32_t n = std::min(gap, scenario_.pedestrians.spawn_per_step_max);
  for (std::uint32_t k = 0; k < n; ++k) {
    if (!spawn_pedestrian()) break;
  }
}

bool World::spawn_pedestrian() {
  const AllocateResult a = registry_.allocate();
  if (a.status != AllocateStatus::Allocated) {
    ++counters_.spawn_failed_capacity;
    return false;
  }
  const auto& sidewalks = lanes_.sidewalks();
  assert(!sidewalks.empty());
  const LaneIndex lane = sidewalks[rng_.next_below(static_cast<std::uint32_t>(sidewalks.size()))];
  const double s = rng_.next_unit() * lanes_.lane(lane).length_m;
  peds_.dense_of[a.id.index] = peds_.size();
  peds_.id.push_back(a.id);
  peds_.lane.push_back(lane);
  peds_.s_m.push_back(s);
  peds_.hops.push_back(0);
  peds_.resident.push_back(PedestrianStore::kNoResident);
  peds_.tier.push_back(initial_tier(lane, s));
  ++background_count_;
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
  vehicles_.step(step_index_, scenario_.step_us, registry_, crossing_occupied_, observers_, vehicle_despawns_);
  for (const auto& d : vehicle_despawns_) {
    request_despawn(d.id, d.route_completed ? DespawnReason::RouteCompleted : DespawnReason::Requested);
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
  if (vehicles_.store().size() > 0) {
    fill_force(vehicles_.store().id);
    vehicles_.resolve_tiers(scenario_.tiers, observers_, force_scratch_);
  }
  if (step_index_ % scenario_.tiers.pedestrian_resolve_every_steps != 0) return;
  const std::uint32_t n = peds_.size();
  ped_distance_.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const Vec2 p = lanes_.position(peds_.lane[i], peds_.s_m[i]);
    ped_distance_[i] = nearest_observer_m(observers_, p.x_m, p.y_m);
  }
  fill_force(peds_.id);
  ped_tiers_ = ped_tier_resolver_.resolve(scenario_.tiers, peds_.id, ped_distance_, peds_.tier, force_scratch_);
}

// Phase 7 ------------------------------------------------------------------

void World::phase_move_pedestrians() {
  const double dt_s = static_cast<double>(scenario_.step_us) * 1e-6;
  const std::uint32_t n = peds_.size();
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto tier = static_cast<SimTier>(peds_.tier[i]);
    // Not due this step: the next due step moves by the whole stride's time,
    // so progress over time is the same in every tier.
    if (!tier_due(step_index_, peds_.id[i], tier)) continue;
    LaneIndex lane = peds_.lane[i];
    double s = peds_.s_m[i];
    double time_left_s = dt_s * tier_stride(tier);
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
        request_despawn(peds_.id[i], DespawnReason::LaneDeadEnd);
        break;
      }
      // Route choice is a pure function of (world seed stream, id, hop count):
      // it does not depend on the order agents are processed in.
      const std::uint64_t h = mix64(route_salt_ ^ peds_.id[i].packed() * 0x9E3779B97F4A7C15ull ^
                                    peds_.hops[i]);
      lane = next[static_cast<std::size_t>(h % next.size())];
      s = 0.0;
      ++peds_.hops[i];
    }
    peds_.lane[i] = lane;
    peds_.s_m[i] = s;
  }
}

// Phase 10 -----------------------------------------------------------------

void World::request_despawn(EntityId id, DespawnReason reason) {
  if (despawn_pending_[id.index] != 0) return;  // first reason wins
  despawn_pending_[id.index] = 1;
  despawn_requests_.push_back({id, reason});
}

void World::phase_despawn() {
  // One exit for every reason, in canonical EntityId order.
  std::sort(despawn_requests_.begin(), despawn_requests_.end(),
            [](const DespawnRequest& a, const DespawnRequest& b) { return a.id < b.id; });
  for (const DespawnRequest& req : despawn_requests_) {
    despawn_pending_[req.id.index] = 0;
    // A released identity cannot stay forced (residents keep theirs).
    if (population_.resident_of(req.id) == ResidentStore::kNone) {
      auto f = std::lower_bound(forced_full_.begin(), forced_full_.end(), req.id);
      if (f != forced_full_.end() && *f == req.id) forced_full_.erase(f);
    }
    if (vehicles_.is_vehicle(req.id)) {
      vehicles_.remove(req.id);
    } else if (const std::int32_t r = population_.resident_of(req.id); r != ResidentStore::kNone) {
      // A resident's representation leaves; its identity stays (dormant).
      remove_pedestrian(req.id);
      population_.on_deactivated(static_cast<std::uint32_t>(r));
      continue;  // not a despawn of an identity: counters count released ids
    } else {
      remove_pedestrian(req.id);
    }
    const ReleaseStatus rs = registry_.release(req.id);
    assert(rs == ReleaseStatus::Released);
    (void)rs;
    ++counters_.despawned_total;
    ++counters_.despawned_by_reason[static_cast<std::size_t>(req.reason)];
  }
  despawn_requests_.clear();
}

void World::remove_pedestrian(EntityId id) {
  const std::uint32_t slot = peds_.dense_of[id.index];
  assert(slot != PedestrianStore::kNoSlot);
  const std::uint32_t last = peds_.size() - 1;
  if (peds_.resident[slot] == PedestrianStore::kNoResident) --background_count_;
  if (slot != last) {
    peds_.id[slot] = peds_.id[last];
    peds_.lane[slot] = peds_.lane[last];
    peds_.s_m[slot] = peds_.s_m[last];
    peds_.hops[slot] = peds_.hops[last];
    peds_.resident[slot] = peds_.resident[last];
    peds_.tier[slot] = peds_.tier[last];
    peds_.dense_of[peds_.id[slot].index] = slot;
  }
  peds_.id.pop_back();
  peds_.lane.pop_back();
  peds_.s_m.pop_back();
  peds_.hops.pop_back();
  peds_.resident.pop_back();
  peds_.tier.pop_back();
  peds_.dense_of[id.index] = PedestrianStore::kNoSlot;
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
  // (independent of dense storage order) and O(live), with no sort.
  std::uint64_t ped_sum = 0;
  for (std::uint32_t slot = 0; slot < peds_.size(); ++slot) {
    Digest e;
    e.u64(peds_.id[slot].packed()).u32(peds_.lane[slot]).f64(peds_.s_m[slot]).u32(peds_.hops[slot]);
    e.u32(peds_.resident[slot]).u32(peds_.tier[slot]);
    ped_sum += e.value();
  }
  d.tag(4).u32(peds_.size()).u32(background_count_).u64(ped_sum);
  for (const std::uint32_t c : ped_tiers_.per_tier) d.u32(c);
  d.u32(ped_tiers_.promoted).u32(ped_tiers_.demoted).u32(ped_tiers_.deferred);
  d.u32(ped_tiers_.forced).u32(ped_tiers_.forced_overflow);
  d.tag(8).u64(forced_full_.size()).u64(force_full_refused_);
  for (const EntityId f : forced_full_) d.u64(f.packed());
  population_.digest_into(d);

  d.tag(5).u64(inbox_count_);
  for (std::size_t k = 0; k < inbox_count_; ++k) {
    const CommandEnvelope& env = inbox_[(inbox_head_ + k) % inbox_.size()];
    d.u32(env.origin.client_id).u32(env.origin.request_id).u64(env.command.index());
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
                            for (const ObserverPoint& p : c.points) d.f64(p.x_m).f64(p.y_m);
                          },
                          [&](const SetHour& c) { d.f64(c.hour); },
                          [&](const SetTimeScale& c) { d.u32(c.scale); },
                          [&](const ForceFull& c) { d.u64(c.id.packed()).boolean(c.on); }},
               env.command);
  }

  vehicles_.digest_into(d);
  d.tag(7).u64(observers_.size());
  for (const Vec2& o : observers_) d.f64(o.x_m).f64(o.y_m);

  d.tag(6).u64(counters_.spawned_total).u64(counters_.despawned_total);
  for (const std::uint64_t c : counters_.despawned_by_reason) d.u64(c);
  d.u64(counters_.spawn_failed_capacity).u64(counters_.commands_accepted).u64(counters_.commands_rejected);
  return d.value();
}

}  // namespace bustle::core
