// World::restore: builds a candidate world from a checkpoint and validates
// everything before returning it (pedestrian rows, identities and vehicles,
// observers and ForceFull, then the clock and counters), comparing the
// digest last. The lifecycle sections are in restore_lifecycle.cpp.
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"
#include "restore_failures.hpp"

namespace bustle::core {

namespace {

std::string hex(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = kDigits[v & 0xF];
  return out;
}

}  // namespace

World::RestoreResult World::restore(const Scenario& scenario, const WorldCheckpoint& cp,
                                    LogSink* log) {
  RestoreResult result;
  RestoreFailures fail{result.errors};
  for (ScenarioError& e : validate_scenario(scenario)) fail("scenario." + e.path, e.message);
  if (fail.any()) return result;
  if (cp.scenario_id != scenario.id) {
    fail("scenario_id",
         "checkpoint is of scenario '" + cp.scenario_id + "', not '" + scenario.id + "'");
  }
  if (cp.step_us != scenario.step_us) {
    fail("step_us", "checkpoint steps " + std::to_string(cp.step_us) + " us, scenario " +
                        std::to_string(scenario.step_us) + " us");
  }
  if (fail.any()) return result;

  std::unique_ptr<World> w(new World(scenario, cp.seed, log));
  if (Status st = w->registry_.import_state(cp.registry.generation, cp.registry.alive,
                                            cp.registry.free_fifo, cp.registry.pop_seq);
      !st.ok()) {
    const std::string& err = st.message();
    fail("registry." + err.substr(0, err.find(':')), err.substr(err.find(':') + 2));
    return result;
  }
  std::size_t spawned_pedestrians = 0;
  if (!restore_pedestrians(*w, cp, fail, spawned_pedestrians)) return result;
  restore_lifecycle(*w, cp, fail);
  if (cp.pedestrian_target > scenario.entity_capacity) {
    fail("pedestrian_target", std::to_string(cp.pedestrian_target) + " exceeds entity_capacity " +
                                  std::to_string(scenario.entity_capacity));
  }
  if (cp.inbox.size() > w->inbox_.size()) {
    fail("inbox", std::to_string(cp.inbox.size()) + " pending commands exceed the inbox capacity " +
                      std::to_string(w->inbox_.size()));
  }
  for (std::size_t i = 0; i < cp.observers.size(); ++i) {
    if (!std::isfinite(cp.observers[i].x_m) || !std::isfinite(cp.observers[i].y_m)) {
      fail("observers[" + std::to_string(i) + "]", "coordinates must be finite");
    }
  }
  if (fail.any()) return result;
  if (!restore_identities_and_vehicles(*w, cp, spawned_pedestrians, fail)) return result;
  if (!restore_observers_and_forced(*w, cp, fail)) return result;
  restore_prevention(*w, cp, fail);
  if (fail.any()) return result;
  if (std::optional<RestoreError> e = w->restore_lane_closures(cp)) {
    fail(std::move(e->path), std::move(e->message));
    return result;
  }
  w->restore_clock_and_counters(cp);

  // Last line of defence: a value that passed every range check but differs
  // from what was captured (a flipped bit in a distance, a counter) changes
  // the digest.
  w->pedestrian_digest_sum_ = w->pedestrian_digest_sum_recount();  // derived: rebuilt, never stored
  w->digest_ = w->compute_digest();
  if (w->digest_ != cp.digest) {
    fail("digest", "stored " + hex(cp.digest) + " but the restored state hashes to " +
                       hex(w->digest_) + " (the snapshot was altered or is from another build)");
    return result;
  }
  result.world = std::move(w);
  return result;
}

// The pedestrian rows, after the residents (their identities are alive
// whether active or dormant); false when restore must stop here.
bool World::restore_pedestrians(World& w, const WorldCheckpoint& cp, RestoreFailures& fail,
                                std::size_t& spawned_pedestrians) {
  const PedestrianState& p = cp.pedestrians;
  const std::size_t n = p.id.size();
  if (p.lane.size() != n || p.s_m.size() != n || p.hops.size() != n || p.resident.size() != n ||
      p.sim_tier.size() != n || p.catch_up_steps.size() != n || p.priority.size() != n ||
      p.origin.size() != n || p.route.size() != n) {
    fail("pedestrians",
         "column lengths differ (id " + std::to_string(n) + ", lane " +
             std::to_string(p.lane.size()) + ", s_m " + std::to_string(p.s_m.size()) + ", hops " +
             std::to_string(p.hops.size()) + ", resident " + std::to_string(p.resident.size()) +
             ", tier " + std::to_string(p.sim_tier.size()) + ", catch_up_steps " +
             std::to_string(p.catch_up_steps.size()) + ", priority " +
             std::to_string(p.priority.size()) + ", origin " + std::to_string(p.origin.size()) +
             ")");
    return false;
  }
  for (auto& [path, message] : w.population_.restore(cp.population, w.registry_))
    fail(path, message);
  if (fail.any()) return false;
  for (std::size_t i = 0; i < n; ++i) restore_pedestrian_row(w, p, i, cp.step_index, fail);
  // A failed row leaves the store partial (its columns of unequal length).
  if (fail.any()) return true;
  std::size_t resident_pedestrians = 0;
  spawned_pedestrians = 0;
  const PopulationSystem& population = w.population_;
  for (std::uint32_t i = 0; i < w.pedestrians_.size(); ++i) {
    const std::uint8_t o = w.pedestrians_.origin[i];
    // A deceased resident's corpse is not one of the active members.
    resident_pedestrians += o == static_cast<std::uint8_t>(PedestrianOrigin::Resident) &&
                            !population.is_deceased(w.pedestrians_.id[i]);
    spawned_pedestrians += o == static_cast<std::uint8_t>(PedestrianOrigin::Spawned);
  }
  if (resident_pedestrians + population.retiring_count() != population.active_count()) {
    fail("residents.active", std::to_string(population.active_count()) + " active residents but " +
                                 std::to_string(resident_pedestrians) +
                                 " resident pedestrians and " +
                                 std::to_string(population.retiring_count()) + " retiring");
  }
  return true;
}

// One checkpoint row, validated and appended (a row failing after its
// position was appended leaves the store partial; restore then fails).
void World::restore_pedestrian_row(World& w, const PedestrianState& p, std::size_t i,
                                   std::uint64_t step, RestoreFailures& fail) {
  const std::string row = "pedestrians[" + std::to_string(i) + "]";
  const EntityId id = p.id[i];
  PedestrianStore& peds = w.pedestrians_;
  if (!w.registry_.is_alive(id)) {
    fail(row + ".id", "entity " + id_text(id) + " is not alive in the registry");
    return;
  }
  if (peds.dense_of[id.index] != PedestrianStore::kNoSlot) {
    fail(row + ".id", "duplicate entity " + id_text(id) + " (also row " +
                          std::to_string(peds.dense_of[id.index]) + ")");
    return;
  }
  if (p.lane[i] >= w.lanes_.size()) {
    fail(row + ".lane", "lane " + std::to_string(p.lane[i]) + " does not exist (scenario has " +
                            std::to_string(w.lanes_.size()) + " lanes)");
    return;
  }
  const Lane& lane = w.lanes_.lane(p.lane[i]);
  if (!is_pedestrian_lane(lane.kind)) {
    fail(row + ".lane", "lane '" + lane.id + "' is not walkable");
    return;
  }
  if (!std::isfinite(p.s_m[i]) || p.s_m[i] < 0.0 || p.s_m[i] > lane.length_m) {
    fail(row + ".s_m", "distance " + std::to_string(p.s_m[i]) + " outside lane '" + lane.id +
                           "' [0, " + std::to_string(lane.length_m) + "]");
    return;
  }
  if (p.priority[i] >= kPriorityClassCount) {
    fail(row + ".priority", "unknown priority class " + std::to_string(p.priority[i]));
    return;
  }
  const std::uint32_t resident = p.resident[i];
  const bool has_resident = resident != PedestrianStore::kNoResident;
  if (p.origin[i] > static_cast<std::uint8_t>(PedestrianOrigin::Spawned) ||
      (p.origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Resident)) != has_resident) {
    fail(row + ".origin",
         "must be 0 (background), 1 (resident, with a resident index) or 2 (spawned)");
    return;
  }
  const ResidentStore& residents = w.population_.residents();
  if (has_resident) {
    // A deceased one's row is its corpse (checked with the corpses).
    if (resident >= residents.size() || residents.id[resident] != id ||
        (residents.active[resident] != ResidentStore::kActive &&
         residents.active[resident] != ResidentStore::kDeceased)) {
      fail(row + ".resident", "does not match an active or deceased resident with this identity");
      return;
    }
  } else if (w.population_.resident_of(id) != ResidentStore::kNone) {
    fail(row + ".resident", "identity belongs to a resident but the row says background");
    return;
  }
  peds.dense_of[id.index] = static_cast<std::uint32_t>(peds.id.size());
  peds.id.push_back(id);
  peds.lane.push_back(p.lane[i]);
  peds.s_m.push_back(p.s_m[i]);
  peds.hops.push_back(p.hops[i]);
  if (tier_index(p.sim_tier[i]) >= kSimTierCount) {
    fail(row + ".tier", "unknown simulation tier " + std::to_string(tier_index(p.sim_tier[i])));
    return;
  }
  peds.sim_tier.push_back(p.sim_tier[i]);
  // Between steps no row stands ahead of the step (pedestrian invariant 5b).
  const int catch_up = p.catch_up_steps[i];
  if (catch_up < -kMaxCatchUpSteps || catch_up > kMaxCatchUpSteps) {
    fail(row + ".catch_up_steps", std::to_string(catch_up) + " is outside [" +
                                      std::to_string(-kMaxCatchUpSteps) + ", " +
                                      std::to_string(kMaxCatchUpSteps) + "]");
    return;
  }
  if (const std::uint32_t since = steps_since_due(step, id_phase(id), p.sim_tier[i]);
      static_cast<int>(since) + catch_up < 0) {
    fail(row + ".catch_up_steps", std::to_string(catch_up) +
                                      " puts the row ahead of the step (its last due step was " +
                                      std::to_string(since) + " steps ago)");
    return;
  }
  peds.catch_up_steps.push_back(static_cast<std::int8_t>(catch_up));
  peds.priority.push_back(p.priority[i]);
  peds.phase.push_back(id_phase(id));
  peds.route.push_back(p.route[i]);
  peds.capacity_tier.push_back(p.sim_tier[i]);  // derived, not saved (sim_tier.hpp)
  peds.origin.push_back(p.origin[i]);
  if (p.origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Background)) ++w.background_count_;
}

// Every alive identity is exactly one background pedestrian, one vehicle or
// one resident (active or dormant), a spawned pedestrian, a spawn's identity
// or a retiring orphan; then the vehicles. False when restore must stop.
bool World::restore_identities_and_vehicles(World& w, const WorldCheckpoint& cp,
                                            std::size_t spawned_pedestrians,
                                            RestoreFailures& fail) {
  std::size_t pending_identities = 0, non_resident_orphans = 0;
  for (const SpawnHandleState& h : w.spawn_.live)
    pending_identities += h.state == SpawnState::IdentityCreated;
  for (const OrphanRecord& o : w.orphans_) non_resident_orphans += o.resident == UINT32_MAX;
  const std::size_t vehicles = cp.vehicles.store.id.size();
  std::size_t in_mouths = 0;  // dispatched, waiting in a garage mouth: identities, on no lane
  for (const GarageState& g : cp.vehicles.garages) in_mouths += g.mouth.size();
  const std::size_t residents = w.population_.residents().size();
  const std::size_t expected_alive = w.background_count_ + vehicles + in_mouths + residents +
                                     spawned_pedestrians + pending_identities +
                                     non_resident_orphans;
  if (expected_alive != w.registry_.alive_count()) {
    fail("registry.alive", std::to_string(w.registry_.alive_count()) + " alive identities but " +
                               std::to_string(w.background_count_) + " background pedestrians, " +
                               std::to_string(vehicles) + " vehicles, " +
                               std::to_string(in_mouths) + " in garage mouths, " +
                               std::to_string(residents) + " residents, " +
                               std::to_string(spawned_pedestrians) + " spawned pedestrians, " +
                               std::to_string(pending_identities) + " spawn identities and " +
                               std::to_string(non_resident_orphans) + " retiring");
    return false;
  }
  for (std::size_t i = 0; i < vehicles; ++i) {
    const EntityId id = cp.vehicles.store.id[i];
    if (id.index < w.pedestrians_.dense_of.size() &&
        w.pedestrians_.dense_of[id.index] != PedestrianStore::kNoSlot) {
      fail("vehicles[" + std::to_string(i) + "].id", "entity is also a pedestrian");
      return false;
    }
  }
  for (std::size_t g = 0; g < cp.vehicles.garages.size(); ++g) {
    const auto& mouth = cp.vehicles.garages[g].mouth;
    for (std::size_t k = 0; k < mouth.size(); ++k) {
      const EntityId id = mouth[k].id;
      if (id.index < w.pedestrians_.dense_of.size() &&
          w.pedestrians_.dense_of[id.index] != PedestrianStore::kNoSlot) {
        fail("garages[" + std::to_string(g) + "].mouth[" + std::to_string(k) + "].id",
             "entity is also a pedestrian");
        return false;
      }
    }
  }
  for (auto& [path, message] : w.vehicles_.restore(cp.vehicles, w.registry_)) fail(path, message);
  return !fail.any();
}

// Observers (both sets), the pedestrian tier counts, the ForceFull list and
// the admission mask.
bool World::restore_observers_and_forced(World& w, const WorldCheckpoint& cp,
                                         RestoreFailures& fail) {
  w.observers_ = cp.observers;
  w.observer_views_ = cp.observer_views;
  if (!cp.follow.is_null()) {
    Vec2 at;
    if (cp.observers.size() != 1) {
      fail("follow", "an entity is followed but " + std::to_string(cp.observers.size()) +
                         " observers are set (exactly 1 follows it)");
      return false;
    }
    if (!w.entity_position(cp.follow, at)) {
      fail("follow", "followed entity " + id_text(cp.follow) + " is not alive on a lane");
      return false;
    }
  }
  if (cp.follow_first_vehicle &&
      (!cp.follow.is_null() || w.scenario_.observer_follow != ObserverFollow::FirstVehicle)) {
    fail("follow_first_vehicle",
         cp.follow.is_null()
             ? "waiting to follow the first vehicle, but the scenario's observer_follow is not "
               "'first_vehicle'"
             : "waiting to follow the first vehicle while entity " + id_text(cp.follow) +
                   " is already followed");
    return false;
  }
  w.follow_ = cp.follow;
  w.follow_first_vehicle_ = cp.follow_first_vehicle;
  w.client_observers_ = cp.client_observers;
  w.client_observer_views_ = cp.client_observer_views;
  w.refresh_tier_observers();
  w.prepare_importance();
  w.pedestrian_tier_counts_ = cp.pedestrian_tiers;
  for (std::size_t k = 0; k < cp.forced_full.size(); ++k) {
    if (!w.registry_.is_alive(cp.forced_full[k])) {
      fail("forced_full[" + std::to_string(k) + "]", "identity is not alive");
      return false;
    }
    if (k > 0 && !(cp.forced_full[k - 1] < cp.forced_full[k])) {
      fail("forced_full[" + std::to_string(k) + "]", "not sorted or duplicated");
      return false;
    }
  }
  w.forced_full_ = cp.forced_full;
  w.force_full_refused_ = cp.force_full_refused;
  if (cp.admission_masked.size() > kMaxAdmissionMasked) {
    fail("admission_masked", std::to_string(cp.admission_masked.size()) +
                                 " masked pedestrians, more than the limit of " +
                                 std::to_string(kMaxAdmissionMasked));
    return false;
  }
  for (std::size_t k = 0; k < cp.admission_masked.size(); ++k) {
    const EntityId id = cp.admission_masked[k];
    const std::string at = "admission_masked[" + std::to_string(k) + "]";
    if (k > 0 && !(cp.admission_masked[k - 1] < id)) {
      fail(at, "not sorted or duplicated");
      return false;
    }
    const std::uint32_t slot = walking_slot(w.registry_, w.pedestrians_, id);
    if (slot == PedestrianStore::kNoSlot) {
      fail(at, id_text(id) + " is not a walking pedestrian");
      return false;
    }
    if (w.pedestrians_.catch_up_steps[slot] != 0) {  // a held row stands (sim_tier.hpp)
      fail(at, id_text(id) + " is masked but its row keeps a catch-up");
      return false;
    }
    // The row bit; the digest sum is recounted after this.
    w.pedestrians_.phase[slot] |= PedestrianStore::kAdmissionMaskedBit;
  }
  w.admission_masked_ = cp.admission_masked;
  return true;
}

// The pending commands, the clock, the PRNG and the counters (nothing here
// can fail: the ranges were checked above).
void World::restore_clock_and_counters(const WorldCheckpoint& cp) {
  for (const CommandEnvelope& env : cp.inbox) submit(env);
  step_index_ = cp.step_index;
  rng_.set_state(cp.rng_state);
  route_salt_ = cp.route_salt;
  pedestrian_target_ = cp.pedestrian_target;
  counters_.spawned_total = cp.counters.spawned_total;
  counters_.despawned_total = cp.counters.despawned_total;
  for (std::size_t r = 0; r < kDespawnReasonCount; ++r) {
    counters_.despawned_by_reason[r] = cp.counters.despawned_by_reason[r];
  }
  counters_.spawn_failed_capacity = cp.counters.spawn_failed_capacity;
  counters_.commands_accepted = cp.counters.commands_accepted;
  counters_.commands_rejected = cp.counters.commands_rejected;
  counters_.faded_total = cp.counters.faded_total;
  counters_.fade_skipped_total = cp.counters.fade_skipped_total;
}

}  // namespace bustle::core
