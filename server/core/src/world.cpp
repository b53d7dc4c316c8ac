// The World: creation, the command inbox, and World::step(), the one place
// that lists the step's phases in order (world.hpp numbers them; each phase is
// in phases/NN_<phase>.cpp, each command in commands/<command>.cpp).
//
// Elsewhere: pedestrian rows (pedestrian_rows.cpp), spawn handles
// (world_spawn.cpp), read-only views (world_views.cpp), checkpoints and saves
// (checkpoint/), invariants (world_invariants.cpp), enum names (names.cpp),
// the vehicle and population systems (vehicles/, population/).
#include "bustle/core/world.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "bustle/core/digest.hpp"

namespace bustle::core {
namespace {

constexpr std::uint64_t kPurposeRoutes = 0x524F555445530001ull;  // "ROUTES"

// Lifecycle events of the step just run, one debug line each, named like the
// server's structured events (the sink adds nothing). Reads only what the
// step exposes; never changes state.
void log_lifecycle_events(const World& w, LogSink& log) {
  for (const SpawnEvent& ev : w.spawn_events()) {
    std::string line = "spawn_state: step " + std::to_string(w.step_index()) + " handle " +
                       std::to_string(ev.handle) + " -> " + to_string(ev.state);
    if (!ev.entity.is_null()) line += " (entity " + id_text(ev.entity) + ")";
    if (ev.failure != SpawnFailure::None) line += std::string(" failure ") + to_string(ev.failure);
    log.log(LogLevel::Debug, line);
  }
  for (const DespawnNotice& n : w.despawn_notices()) {
    log.log(LogLevel::Debug, "despawn: step " + std::to_string(w.step_index()) + " " +
                                 (n.kind == EntityKind::Vehicle ? "vehicle " : "pedestrian ") +
                                 id_text(n.id) + " " + to_string(n.reason) +
                                 (n.stage == DespawnStage::Retiring ? " (retiring)" : " (gone)"));
  }
}

}  // namespace

namespace {
// A number no other World of this process has (CaptureStamp::lineage): a
// checkpoint captured from one world is never taken as holding another's
// rows. Worlds are built on any thread (restore candidates), hence atomic;
// it decides no outcome.
std::uint64_t next_capture_lineage() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

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
      registry_(make_registry(scenario)),
      capture_lineage_(next_capture_lineage()),
      pedestrian_target_(scenario.pedestrians.count),
      inbox_(scenario.command_inbox_capacity),
      vehicles_(scenario_, lanes_, scenario.entity_capacity),
      population_(scenario_),
      observers_(scenario.observers),
      follow_first_vehicle_(scenario.observer_follow == ObserverFollow::FirstVehicle) {
  const std::uint32_t cap = scenario.entity_capacity;
  pedestrians_.id.reserve(cap);
  pedestrians_.lane.reserve(cap);
  pedestrians_.s_m.reserve(cap);
  pedestrians_.hops.reserve(cap);
  pedestrians_.sim_tier.reserve(cap);
  pedestrians_.catch_up_steps.reserve(cap);
  pedestrians_.priority.reserve(cap);
  pedestrians_.origin.reserve(cap);
  pedestrians_.phase.reserve(cap);
  pedestrians_.route.reserve(cap);
  pedestrians_.capacity_tier.reserve(cap);
  pedestrians_.dense_of.assign(cap, PedestrianStore::kNoSlot);
  pedestrian_rows_written_.reserve(cap);
  pedestrian_lanes_written_.reserve(cap);
  pedestrian_tiers_written_.reserve(cap);
  // Tier-resolution scratch for a slice of up to every pedestrian: the step
  // allocates nothing after warm-up, however the slices' sizes wander.
  slice_.reserve(cap);
  slice_ids_.reserve(cap);
  slice_sim_tier_.reserve(cap);
  slice_distance_.reserve(cap);
  force_scratch_.reserve(cap);
  pedestrian_tier_resolver_.reserve(cap);
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
  spawn_order_.reserve(scenario.spawn.queue_depth);
  results_.reserve(scenario.command_inbox_capacity);
  despawn_pending_.assign(cap, 0);
  crossing_occupied_.assign(lanes_.size(), 0);
  lane_closed_.assign(lanes_.size(), 0);
  build_anchor_routes();
  init_district();
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
  executor().prepare();  // the lent threads wake while the first phases run
  ++step_index_;
  movement_pending_ = true;
  results_.clear();
  spawn_events_.clear();
  despawn_notices_.clear();
  border_departures_.clear();
  border_returns_.clear();
  border_vehicles_.clear();
  border_ghosts_.clear();
  border_crossing_lanes_.clear();
  phase_apply_commands();    // 1  phases/01_apply_commands.cpp
  update_follow_observer();  //    commands/set_observers.cpp (SetObservers.follow)
  prepare_importance();      //    observers may have changed in phase 1
  phase_ended(StepPhase::ApplyCommands);
  phase_time_and_zones();  // 2  phases/02_time_and_zones.cpp
  phase_ended(StepPhase::TimeAndZones);
  phase_background_upkeep();  // 3  phases/03_background_upkeep.cpp
  phase_ended(StepPhase::BackgroundUpkeep);
  phase_spawn_pipeline();  // 4  phases/04_spawn_pipeline.cpp
  phase_ended(StepPhase::SpawnPipeline);
  phase_prevention();  // 4b phases/04b_prevention.cpp
  phase_ended(StepPhase::Prevention);
  phase_vehicles();  // 5  phases/05_vehicles.cpp
  phase_ended(StepPhase::Vehicles);
  const Moved moved = phase_move_pedestrians();  // 6  phases/06_move_pedestrians.cpp
  movement_pending_ = false;
  pedestrians_due_ = moved.due_rows;
  fold_pedestrian_terms(moved.digest_terms);
  phase_ended(StepPhase::MovePedestrians);
  fold_pedestrian_terms(phase_sim_tiers(moved.tier_slice));  // 7  phases/07_sim_tiers.cpp
  phase_ended(StepPhase::SimTiers);
  phase_representation_requests();  // 8  phases/08_representation_requests.cpp
  phase_ended(StepPhase::RepresentationRequests);
  phase_despawn();                                     // 9  phases/09_despawn.cpp
  if (scenario_.own_district >= 0) share_crossings();  // world_districts.cpp
  phase_ended(StepPhase::Despawn);
  digest_ = compute_digest();  // 10 phases/10_digest.cpp
  phase_ended(StepPhase::Digest);
  if (log_ != &null_log_) log_lifecycle_events(*this, *log_);  // only when a sink was injected
}

}  // namespace bustle::core
