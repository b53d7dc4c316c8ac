// Executable invariants: World::check_invariants() and its sections. Each
// section checks what one header numbers, against the current state, and
// names the first violation with the ids involved. Nothing here changes state
// or runs inside step(); callers opt in (tests, bustle-server
// --check-invariants, bustle-replay verify --check-invariants).
#include <algorithm>

#include "bustle/core/world.hpp"
#include "world_internal.hpp"

namespace bustle::core {
namespace {

const OrphanRecord* find_orphan(const std::vector<OrphanRecord>& orphans, EntityId id) {
  auto o = std::lower_bound(orphans.begin(), orphans.end(), id,
                            [](const OrphanRecord& r, EntityId v) { return r.id < v; });
  return o != orphans.end() && o->id == id ? &*o : nullptr;
}

// Invariant 1 of the pedestrian store: equal column lengths, one dense_of
// entry per row.
Status check_pedestrian_columns(const PedestrianStore& p) {
  const std::uint32_t n = p.size();
  if (p.lane.size() != n || p.s_m.size() != n || p.hops.size() != n || p.sim_tier.size() != n ||
      p.catch_up_steps.size() != n || p.priority.size() != n || p.origin.size() != n ||
      p.phase.size() != n || p.route.size() != n || p.capacity_tier.size() != n) {
    return Status::internal("pedestrians: invariant 1: column lengths differ");
  }
  std::uint32_t mapped = 0;
  for (const std::uint32_t d : p.dense_of) mapped += d != PedestrianStore::kNoSlot;
  if (mapped != n) {
    return Status::internal("pedestrians: invariant 1: " + std::to_string(mapped) +
                            " dense_of entries for " + std::to_string(n) + " pedestrians");
  }
  return {};
}

}  // namespace

Status World::check_lifecycle_counts() const {
  std::uint32_t background = 0, residents = 0;
  for (std::uint32_t i = 0; i < pedestrians_.size(); ++i) {
    const EntityId id = pedestrians_.id[i];
    if (pedestrians_.dense_of[id.index] != i) {
      return Status::internal("pedestrians: invariant 1: dense_of[" + std::to_string(id.index) +
                              "] is " + std::to_string(pedestrians_.dense_of[id.index]) +
                              ", pedestrian " + id_text(id) + " is in slot " + std::to_string(i));
    }
    if (!registry_.is_alive(id))
      return Status::internal("pedestrians: invariant 2: pedestrian " + id_text(id) +
                              " is not alive");
    switch (static_cast<PedestrianOrigin>(pedestrians_.origin[i])) {
      case PedestrianOrigin::Background:
        ++background;
        break;
      case PedestrianOrigin::Resident:
        // A deceased resident's corpse is not one of the active members.
        residents += !population_.is_deceased(id);
        break;
      case PedestrianOrigin::Spawned:
        break;
    }
  }
  if (background != background_count_) {
    return Status::internal("pedestrians: invariant 3: background count is " +
                            std::to_string(background_count_) + ", " + std::to_string(background) +
                            " pedestrians have origin background");
  }
  const PopulationSystem& pop = population_;
  if (residents + pop.retiring_count() != pop.active_count()) {
    return Status::internal("population: invariant 2: " + std::to_string(residents) +
                            " walking + " + std::to_string(pop.retiring_count()) +
                            " retiring residents != " + std::to_string(pop.active_count()) +
                            " active");
  }
  std::uint32_t dormant = 0;
  for (const ZoneStatus& z : pop.zones()) dormant += z.dormant;
  if (pop.active_count() + dormant + pop.deceased_count() != pop.residents().size()) {
    return Status::internal(
        "population: invariant 2: active " + std::to_string(pop.active_count()) + " + dormant " +
        std::to_string(dormant) + " + deceased " + std::to_string(pop.deceased_count()) +
        " != identities " + std::to_string(pop.residents().size()));
  }
  for (std::size_t k = 1; k < orphans_.size(); ++k) {
    if (!(orphans_[k - 1].id < orphans_[k].id)) {
      return Status::internal("orphans: invariant 1: orphan " + id_text(orphans_[k].id) +
                              " is not after " + id_text(orphans_[k - 1].id));
    }
  }
  if (retiring_fifo_.size() != orphans_.size()) {
    return Status::internal("orphans: invariant 1: the retiring FIFO holds " +
                            std::to_string(retiring_fifo_.size()) + " ids, the orphan set " +
                            std::to_string(orphans_.size()));
  }
  return {};
}

Status World::check_pedestrians() const {
  const std::uint32_t n = pedestrians_.size();
  if (Status columns = check_pedestrian_columns(pedestrians_); !columns.ok()) return columns;
  const ResidentStore& rs = population_.residents();
  std::size_t masked_rows = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const EntityId id = pedestrians_.id[i];
    const std::string ped = "pedestrian " + id_text(id);
    if (vehicles_.is_vehicle(id))
      return Status::internal("pedestrians: invariant 2: " + ped + " is also a vehicle");
    const auto origin = static_cast<PedestrianOrigin>(pedestrians_.origin[i]);
    const std::int32_t of = population_.resident_of(id);
    const std::uint32_t r =
        of == ResidentStore::kNone ? PedestrianStore::kNoResident : static_cast<std::uint32_t>(of);
    if ((origin == PedestrianOrigin::Resident) != (r != PedestrianStore::kNoResident)) {
      return Status::internal(
          "pedestrians: invariant 3: " + ped + " has origin " + to_string(origin) +
          " and resident " +
          (r == PedestrianStore::kNoResident ? std::string("none") : std::to_string(r)));
    }
    // A deceased resident's row is its corpse (invariant 4: held bit, and
    // prevention_.corpses lists it).
    if (r != PedestrianStore::kNoResident &&
        (r >= rs.size() || rs.id[r] != id ||
         (rs.active[r] != ResidentStore::kActive &&
          !(rs.active[r] == ResidentStore::kDeceased && is_corpse(id))))) {
      return Status::internal("pedestrians: invariant 3: " + ped + " walks for resident " +
                              std::to_string(r) +
                              ", which is not this active identity (nor its corpse)");
    }
    if (pedestrians_.lane[i] >= lanes_.size() ||
        !is_pedestrian_lane(lanes_.lane(pedestrians_.lane[i]).kind)) {
      return Status::internal("pedestrians: invariant 4: " + ped + " is on lane " +
                              std::to_string(pedestrians_.lane[i]) + ", not a pedestrian lane");
    }
    if (!(pedestrians_.s_m[i] >= 0.0 &&
          pedestrians_.s_m[i] <= lanes_.lane(pedestrians_.lane[i]).length_m)) {
      return Status::internal("pedestrians: invariant 4: " + ped + " at s " +
                              std::to_string(pedestrians_.s_m[i]) + " m is off lane " +
                              std::to_string(pedestrians_.lane[i]));
    }
    if (tier_index(pedestrians_.sim_tier[i]) >= kSimTierCount ||
        pedestrians_.priority[i] >= kPriorityClassCount || pedestrians_.origin[i] > 2) {
      return Status::internal("pedestrians: invariant 4: " + ped +
                              " has an unknown tier, priority or origin");
    }
    if ((pedestrians_.phase[i] & PedestrianStore::kIdPhaseMask) != id_phase(id) ||
        (pedestrians_.phase[i] &
         ~(PedestrianStore::kIdPhaseMask | PedestrianStore::kAdmissionMaskedBit)) != 0)
      return Status::internal("pedestrians: invariant 4: " + ped +
                              " has a phase not derived from its id");
    const bool held = (pedestrians_.phase[i] & PedestrianStore::kAdmissionMaskedBit) != 0;
    masked_rows += held;
    const int catch_up = pedestrians_.catch_up_steps[i];
    if (catch_up < -kMaxCatchUpSteps || catch_up > kMaxCatchUpSteps || (held && catch_up != 0) ||
        static_cast<int>(
            steps_since_due(step_index_, pedestrians_.phase[i], pedestrians_.sim_tier[i])) +
                catch_up <
            0) {
      return Status::internal("pedestrians: invariant 5b: " + ped + " keeps a catch-up of " +
                              std::to_string(catch_up) + " steps in tier " +
                              to_string(pedestrians_.sim_tier[i]) + (held ? " while held" : ""));
    }
    const std::uint32_t route = pedestrians_.route[i];
    if (route != kNoRoute &&
        (route >= routes_.state().count.size() || routes_.state().count[route] == 0)) {
      return Status::internal("pedestrians: invariant 5: " + ped + " holds route slot " +
                              std::to_string(route) + ", which is free");
    }
  }
  // The mask bit and the list agree: every entry (strictly sorted, so no
  // duplicates) is a walking row with the bit, and no other row has it.
  for (std::size_t k = 0; k < admission_masked_.size(); ++k) {
    const EntityId id = admission_masked_[k];
    const std::uint32_t slot = walking_slot(registry_, pedestrians_, id);
    if ((k > 0 && !(admission_masked_[k - 1] < id)) || slot == PedestrianStore::kNoSlot ||
        (pedestrians_.phase[slot] & PedestrianStore::kAdmissionMaskedBit) == 0) {
      return Status::internal(
          "pedestrians: invariant 4: admission mask entry " + std::to_string(k) +
          " is unsorted, duplicated, not a walking pedestrian or its row lacks the mask bit");
    }
  }
  // Corpses carry the same bit (check_prevention checks each entry).
  if (masked_rows != admission_masked_.size() + prevention_.corpses.size())
    return Status::internal("pedestrians: invariant 4: " + std::to_string(masked_rows) +
                            " rows carry the admission-mask bit but " +
                            std::to_string(admission_masked_.size()) +
                            " pedestrians are masked and " +
                            std::to_string(prevention_.corpses.size()) + " are corpses");
  if (pedestrian_digest_sum_recount() != pedestrian_digest_sum_)
    return Status::internal(
        "pedestrians: invariant 6: the maintained digest sum differs from a recount");
  return {};
}

Status World::check_spawn_pipeline() const {
  const SpawnPipelineState& sp = spawn_;
  const std::string area = "spawn pipeline: ";
  auto handle = [](const SpawnHandleState& h) { return "handle " + std::to_string(h.handle); };
  std::vector<std::uint64_t> seen;
  for (std::size_t k = 0; k < sp.live.size(); ++k) {
    const SpawnHandleState& h = sp.live[k];
    if (k > 0 && !(sp.live[k - 1].handle < h.handle)) {
      return Status::internal(area + "invariant 1: live " + handle(h) + " is not after " +
                              handle(sp.live[k - 1]));
    }
    if (h.state > SpawnState::Registered)
      return Status::internal(area + "invariant 2: live " + handle(h) + " is " +
                              to_string(h.state));
  }
  if (sp.recent.size() > kSpawnHistory)
    return Status::internal(
        "spawn pipeline: invariant 2: recent holds more than kSpawnHistory handles");
  for (const SpawnHandleState& h : sp.recent) {
    if (!is_core_terminal(h.state))
      return Status::internal(area + "invariant 2: recent " + handle(h) + " is " +
                              to_string(h.state));
  }
  // The representation stages are not core state (spawn_pipeline.hpp).
  for (const SpawnState s : {SpawnState::Attached, SpawnState::ReadyForGameplay}) {
    if (sp.counters.per_state_total[static_cast<std::size_t>(s)] != 0) {
      return Status::internal(area + "invariant 2: the core counted entries into " +
                              std::string(to_string(s)));
    }
  }
  for (const auto* list : {&sp.live, &sp.recent}) {
    for (const SpawnHandleState& h : *list) {
      if (h.handle == 0 || h.handle >= sp.next_handle) {
        return Status::internal(area + "invariant 1: " + handle(h) +
                                " was not issued (next_handle " + std::to_string(sp.next_handle) +
                                ")");
      }
      if (!spawn_failure_fits(h.state, h.failure)) {
        return Status::internal(area + "invariant 2: " + handle(h) + " is " + to_string(h.state) +
                                " with failure " + to_string(h.failure));
      }
      seen.push_back(h.handle);
    }
  }
  std::sort(seen.begin(), seen.end());
  if (auto twice = std::adjacent_find(seen.begin(), seen.end()); twice != seen.end()) {
    return Status::internal(area + "invariant 1: handle " + std::to_string(*twice) +
                            " is both live and recent (or recent twice)");
  }
  // 3. Each handle ends exactly once.
  const SpawnCounters& c = sp.counters;
  std::uint64_t ended = 0;
  for (std::size_t s = 0; s < kSpawnStateCount; ++s) {
    if (is_core_terminal(static_cast<SpawnState>(s))) ended += c.per_state_total[s];
  }
  if (c.requested != sp.next_handle - 1 || c.requested != sp.live.size() + ended) {
    return Status::internal(area + "invariant 3: " + std::to_string(c.requested) +
                            " requested (next_handle " + std::to_string(sp.next_handle) + ") but " +
                            std::to_string(sp.live.size()) + " live + " + std::to_string(ended) +
                            " core-terminal entries");
  }
  // 4. Entity consistency.
  for (const SpawnHandleState& h : sp.live) {
    const bool null = h.entity.is_null();
    const bool walking = !null && registry_.is_alive(h.entity) &&
                         pedestrians_.dense_of[h.entity.index] != PedestrianStore::kNoSlot;
    switch (h.state) {
      case SpawnState::Queued:
        if (!null)
          return Status::internal(area + "invariant 4: queued " + handle(h) +
                                  " already holds entity " + id_text(h.entity));
        break;
      case SpawnState::IdentityCreated:
        if (null || !registry_.is_alive(h.entity) || walking || vehicles_.is_vehicle(h.entity)) {
          return Status::internal(area + "invariant 4: identity_created " + handle(h) + " entity " +
                                  id_text(h.entity) + " is not a live id off every lane");
        }
        break;
      default:
        if (null)
          return Status::internal(area + "invariant 4: " + std::string(to_string(h.state)) + " " +
                                  handle(h) + " has no entity");
        if (walking && pedestrians_.origin[pedestrians_.dense_of[h.entity.index]] !=
                           static_cast<std::uint8_t>(PedestrianOrigin::Spawned)) {
          return Status::internal(area + "invariant 4: " + handle(h) + " entity " +
                                  id_text(h.entity) + " walks with origin " +
                                  to_string(static_cast<PedestrianOrigin>(
                                      pedestrians_.origin[pedestrians_.dense_of[h.entity.index]])));
        }
        if (h.route != kNoRoute)
          return Status::internal(area + "invariant 4: " + handle(h) + " still holds route slot " +
                                  std::to_string(h.route));
        break;
    }
  }
  return {};
}

Status World::check_orphans() const {
  // Invariant 1's order and sizes are in check_lifecycle_counts().
  std::vector<EntityId> fifo = retiring_fifo_;
  std::sort(fifo.begin(), fifo.end());
  for (std::size_t k = 0; k < fifo.size(); ++k) {
    if (!(fifo[k] == orphans_[k].id)) {
      return Status::internal(
          "orphans: invariant 1: the retiring FIFO and the orphan set differ at " +
          id_text(orphans_[k].id));
    }
  }
  const OrphanRecord* previous = nullptr;
  for (const EntityId id : retiring_fifo_) {
    const OrphanRecord* o = find_orphan(orphans_, id);
    if (previous != nullptr && o->release_step < previous->release_step) {
      return Status::internal("orphans: invariant 1: " + id_text(id) + " is released at step " +
                              std::to_string(o->release_step) + ", before " +
                              id_text(previous->id) + " ahead of it in the FIFO");
    }
    previous = o;
  }
  std::uint32_t resident_orphans = 0;
  const ResidentStore& rs = population_.residents();
  for (const OrphanRecord& o : orphans_) {
    const std::string orphan = "orphan " + id_text(o.id);
    if (!registry_.is_alive(o.id))
      return Status::internal("orphans: invariant 2: " + orphan + " is not alive");
    if (pedestrians_.dense_of[o.id.index] != PedestrianStore::kNoSlot ||
        vehicles_.is_vehicle(o.id)) {
      return Status::internal("orphans: invariant 2: " + orphan + " is still on a lane");
    }
    if (o.lane >= lanes_.size())
      return Status::internal("orphans: invariant 2: " + orphan + " faded on unknown lane " +
                              std::to_string(o.lane));
    if (o.resident != UINT32_MAX) {
      if (o.resident >= rs.size() || rs.id[o.resident] != o.id ||
          (rs.active[o.resident] != ResidentStore::kRetiring &&
           rs.active[o.resident] != ResidentStore::kDeceased)) {
        return Status::internal("orphans: invariant 2: " + orphan + " names resident " +
                                std::to_string(o.resident) +
                                ", which is not this retiring (or deceased) identity");
      }
      resident_orphans += rs.active[o.resident] == ResidentStore::kRetiring;
    }
  }
  if (resident_orphans != population_.retiring_count()) {
    return Status::internal("orphans: invariant 2: " + std::to_string(resident_orphans) +
                            " resident orphans, the population counts " +
                            std::to_string(population_.retiring_count()) + " retiring");
  }
  return {};
}

Status World::check_holders() const {
  // Every live id has exactly one holder (a leak or a double release breaks
  // the sum), and every live route slot has exactly one holder.
  std::uint64_t held =
      population_.residents().size() + vehicles_.store().size() + vehicles_.mouth_count();
  held += pedestrians_.size() - (population_.active_count() - population_.retiring_count());
  // Deceased residents' corpses are rows too, held by their resident.
  for (const CorpseRecord& c : prevention_.corpses)
    held -= population_.resident_of(c.id) != ResidentStore::kNone;
  for (const OrphanRecord& o : orphans_) held += o.resident == UINT32_MAX;
  std::uint32_t routes_held = 0;
  for (const SpawnHandleState& h : spawn_.live) {
    held += h.state == SpawnState::IdentityCreated;
    routes_held += h.route != kNoRoute;
  }
  if (held != registry_.alive_count()) {
    return Status::internal(
        "lifecycle: " + std::to_string(registry_.alive_count()) + " live ids but " +
        std::to_string(held) +
        " holders (residents, non-resident pedestrians, vehicles on the road and in garage "
        "mouths, non-resident orphans, identity_created handles)");
  }
  for (const std::uint32_t r : pedestrians_.route) routes_held += r != kNoRoute;
  if (Status why = RouteTable::validate(routes_.state(), lanes_.size()); !why.ok())
    return Status::internal("routes: " + why.message());
  if (routes_held != routes_.live()) {
    return Status::internal("routes: " + std::to_string(routes_.live()) + " live route slots but " +
                            std::to_string(routes_held) +
                            " holders (pedestrians and waiting spawn handles)");
  }
  return {};
}

Status World::check_invariants() const {
  Status broken = registry_.check_invariants();
  if (broken.ok()) broken = check_lifecycle_counts();
  if (broken.ok()) broken = check_pedestrians();
  if (broken.ok()) broken = vehicles_.check_invariants(registry_);
  if (broken.ok()) broken = population_.check_invariants(registry_);
  if (broken.ok()) broken = check_spawn_pipeline();
  if (broken.ok()) broken = check_orphans();
  if (broken.ok()) broken = check_holders();
  if (broken.ok()) broken = check_observers();
  if (broken.ok()) broken = check_prevention();
  if (broken.ok()) broken = check_lane_closures();
  return broken;
}

// prevention.hpp's invariants.
Status World::check_prevention() const {
  const PreventionState& p = prevention_;
  const auto levels = static_cast<std::uint32_t>(scenario_.prevention.units_per_level.size());
  if (p.level > levels)
    return Status::internal("prevention: invariant 1: level " + std::to_string(p.level) +
                            " is above " + std::to_string(levels));
  for (std::size_t k = 0; k < p.units.size(); ++k) {
    const ResponseUnit& u = p.units[k];
    const std::string unit = "prevention: invariant 1: unit " + std::to_string(u.handle);
    if ((k > 0 && p.units[k - 1].handle >= u.handle) || u.handle >= p.next_handle)
      return Status::internal(unit + " is unsorted, duplicated or not below next_handle");
    if (u.level < 1 || u.level > levels)
      return Status::internal(unit + " has level " + std::to_string(u.level));
    if ((u.state == ResponseUnitState::Queued) != u.entity.is_null() ||
        u.state > ResponseUnitState::Retiring)
      return Status::internal(unit + " is " + to_string(u.state) + " with entity " +
                              id_text(u.entity));
    if (u.level > p.level && u.state != ResponseUnitState::Retiring)
      return Status::internal(unit + " of level " + std::to_string(u.level) +
                              " outlived the level's drop");
  }
  for (std::size_t k = 0; k < p.corpses.size(); ++k) {
    const EntityId id = p.corpses[k].id;
    const std::uint32_t slot = walking_slot(registry_, pedestrians_, id);
    if ((k > 0 && !(p.corpses[k - 1].id < id)) || slot == PedestrianStore::kNoSlot ||
        (pedestrians_.phase[slot] & PedestrianStore::kAdmissionMaskedBit) == 0 ||
        (pedestrians_.origin[slot] == static_cast<std::uint8_t>(PedestrianOrigin::Resident) &&
         !population_.is_deceased(id)) ||
        is_admission_masked(id)) {
      return Status::internal(
          "prevention: invariant 2: corpse entry " + std::to_string(k) + " (" + id_text(id) +
          ") is unsorted, duplicated, not a walking pedestrian (a resident one deceased) with "
          "the held bit, or also masked");
    }
  }
  return {};
}

// Observers (world.hpp): the clients' set is bounded and has one view per
// point, and the tier resolver's set is exactly the scenario / operator
// observers followed by the clients'.
Status World::check_observers() const {
  if (client_observers_.size() > kClientObserversMax ||
      client_observer_views_.size() != client_observers_.size()) {
    return Status::internal("observers: invariant 1: " + std::to_string(client_observers_.size()) +
                            " client observers with " +
                            std::to_string(client_observer_views_.size()) + " views (at most " +
                            std::to_string(kClientObserversMax) + ", one view each)");
  }
  if (tier_observers_.size() != observers_.size() + client_observers_.size() ||
      tier_views_.size() != tier_observers_.size()) {
    return Status::internal(
        "observers: invariant 2: the tier resolver's set is not the scenario's plus the "
        "clients'");
  }
  for (std::size_t k = 0; k < tier_observers_.size(); ++k) {
    const Vec2 want =
        k < observers_.size() ? observers_[k] : client_observers_[k - observers_.size()];
    if (tier_observers_[k].x_m != want.x_m || tier_observers_[k].y_m != want.y_m) {
      return Status::internal("observers: invariant 2: tier observer " + std::to_string(k) +
                              " differs from its source");
    }
  }
  return {};
}

}  // namespace bustle::core
