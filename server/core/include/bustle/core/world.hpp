// The deterministic world: all authoritative simulation state and the fixed step.
//
// A World is created from a validated Scenario and a seed. It owns its PRNG,
// its entity registry, its lane graph and its populations, and advances only in
// step(). It performs no I/O, reads no clock and starts no thread: time is
// step_index() * step_us. Given the same scenario, seed and sequence of
// submitted commands (and the steps at which they were submitted), every step
// produces the same digest.
//
// Step phases (DESIGN §2; later phases never feed earlier ones in one step):
//   1. apply commands (arrival order) -> command results
//   2. time of day; at each lifecycle interval the zone coordinator
//      activates / recycles resident identities within quotas (population.hpp)
//   4. background upkeep: grow or trim anonymous pedestrians towards the target
//   6. vehicles: content plan, signals, garage dispatch gates, pre-step
//      snapshot, policy arbitration, route advance, turnaround gate
//   7. pedestrian movement: advance along lanes at lane speed, carrying the
//      remaining time across lane ends; dead ends request a despawn
//   8. simulation tiers for vehicles and pedestrians (sim_tier.hpp): Full moves
//      every step, Simulated every 2nd, Coarse every 8th, by the same amount
//      of time in total
//  10. despawn phase: one exit for all reasons, in EntityId order, ids released
//      to the back of the FIFO
//  11. digest over the canonical state
// Phases 2-3, 5 and 9 arrive with the population and representation work.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bustle/core/checkpoint.hpp"
#include "bustle/core/command.hpp"
#include "bustle/core/entity_id.hpp"
#include "bustle/core/lane_graph.hpp"
#include "bustle/core/log_sink.hpp"
#include "bustle/core/prng.hpp"
#include "bustle/core/scenario.hpp"
#include "bustle/core/population.hpp"
#include "bustle/core/vehicles.hpp"

namespace bustle::core {

enum class EntityKind : std::uint8_t { Pedestrian = 0, Vehicle = 1 };

enum class DespawnReason : std::uint8_t {
  OutOfRange = 0,
  Stuck = 1,
  SpawnError = 2,
  LaneDeadEnd = 3,
  Requested = 4,
  Overpopulated = 5,
  RouteCompleted = 6,  // a vehicle reached the end of a garage-ending route
};
inline constexpr std::size_t kDespawnReasonCount = 7;
const char* to_string(DespawnReason r);

enum class SubmitStatus : std::uint8_t { Queued, InboxFull };

// Hot pedestrian state, structure-of-arrays, dense. Removal is swap-remove;
// dense_of maps an entity index to its dense slot (kNoSlot when absent), so
// iteration order is a deterministic function of history, never of addresses.
struct PedestrianStore {
  static constexpr std::uint32_t kNoSlot = UINT32_MAX;
  std::vector<EntityId> id;
  std::vector<LaneIndex> lane;
  std::vector<double> s_m;           // distance along the lane
  std::vector<std::uint32_t> hops;   // lanes entered so far; seeds route choice
  std::vector<std::uint32_t> resident;  // resident index, or kNoResident (background)
  std::vector<std::uint8_t> tier;       // SimTier: how often this pedestrian's logic runs
  std::vector<std::uint32_t> dense_of;
  static constexpr std::uint32_t kNoResident = UINT32_MAX;

  std::uint32_t size() const { return static_cast<std::uint32_t>(id.size()); }
};

struct WorldCounters {
  std::uint64_t spawned_total = 0;
  std::uint64_t despawned_total = 0;
  std::uint64_t despawned_by_reason[kDespawnReasonCount] = {};
  std::uint64_t spawn_failed_capacity = 0;
  std::uint64_t commands_accepted = 0;
  std::uint64_t commands_rejected = 0;
};

class World {
 public:
  struct CreateResult {
    std::unique_ptr<World> world;         // null when errors is non-empty
    std::vector<ScenarioError> errors;
  };
  // Validates the scenario first; never throws for bad input.
  static CreateResult create(const Scenario& scenario, std::uint64_t seed,
                             LogSink* log = nullptr);

  struct RestoreResult {
    std::unique_ptr<World> world;  // the candidate; null when errors is non-empty
    std::vector<RestoreError> errors;
  };
  // Builds a candidate world from a checkpoint of `scenario`, validating every
  // collection, reference and range first (and the stored digest last).
  // Never touches any existing world. [Precondition: none; bad input -> errors]
  static RestoreResult restore(const Scenario& scenario, const WorldCheckpoint& checkpoint,
                               LogSink* log = nullptr);

  // Copies the complete authoritative state (call between steps).
  WorldCheckpoint capture() const;
  // The same into an existing checkpoint, reusing its buffers: a caller that
  // recycles checkpoints pays no allocation or page faults on the sim thread.
  void capture_into(WorldCheckpoint& out) const;

  // Persistent facts only; see SaveState.
  SaveState capture_save() const;
  // A fresh world carrying the saved facts: same clock and population target,
  // an empty population that the normal spawn phase regenerates. The PRNG is
  // derived from (seed, step) so a loaded city does not replay the spawns of
  // step 0.
  static RestoreResult load_save(const Scenario& scenario, const SaveState& save,
                                 LogSink* log = nullptr);

  // Queues a command for the next step. Never blocks; a full inbox rejects.
  SubmitStatus submit(CommandEnvelope envelope);
  std::uint32_t inbox_size() const { return static_cast<std::uint32_t>(inbox_count_); }
  // Removes and returns the queued commands (arrival order) without applying
  // them; used when this world is about to be replaced, so each still gets a
  // result.
  std::vector<CommandEnvelope> take_inbox();

  // Advances one fixed step through all phases.
  void step();

  std::uint64_t step_index() const { return step_index_; }
  std::uint64_t sim_time_us() const { return step_index_ * scenario_.step_us; }
  std::uint32_t step_us() const { return scenario_.step_us; }
  std::uint64_t seed() const { return seed_; }
  // Digest of the state after the last step (or after creation).
  std::uint64_t digest() const { return digest_; }

  const Scenario& scenario() const { return scenario_; }
  const LaneGraph& lanes() const { return lanes_; }
  const EntityRegistry& registry() const { return registry_; }
  const PedestrianStore& pedestrians() const { return peds_; }
  std::uint32_t pedestrian_target() const { return pedestrian_target_; }
  const WorldCounters& counters() const { return counters_; }
  const VehicleSystem& vehicles() const { return vehicles_; }
  const PopulationSystem& population() const { return population_; }
  const TierCounts& pedestrian_tiers() const { return ped_tiers_; }
  const std::vector<EntityId>& forced_full() const { return forced_full_; }
  std::uint64_t force_full_refused() const { return force_full_refused_; }
  std::uint32_t background_pedestrians() const { return background_count_; }
  const std::vector<Vec2>& observers() const { return observers_; }
  const Prng& prng() const { return rng_; }

  // Results of the commands applied in the last step, in arrival order.
  std::span<const CommandResult> last_command_results() const { return results_; }

  // Derived, not authoritative: pose and speed of a pedestrian by dense slot.
  Pose pedestrian_pose(std::uint32_t dense) const;
  double pedestrian_speed_mps(std::uint32_t dense) const;

  // Recomputes the digest from scratch over the canonical state.
  std::uint64_t compute_digest() const;

 private:
  World(const Scenario& scenario, std::uint64_t seed, LogSink* log);

  void phase_apply_commands();
  void phase_time_and_zones();
  void phase_vehicles();
  void phase_move_pedestrians();
  void phase_tiers();
  void phase_despawn();
  void phase_population_upkeep();

  CommandResult apply(const CommandEnvelope& env);
  void request_despawn(EntityId id, DespawnReason reason);
  bool spawn_pedestrian();
  void place_resident(std::uint32_t resident);
  std::uint8_t initial_tier(LaneIndex lane, double s_m) const;
  void remove_pedestrian(EntityId id);

  Scenario scenario_;
  LaneGraph lanes_;
  LogSink* log_;
  NullLogSink null_log_;
  std::uint64_t seed_;
  Prng rng_;
  std::uint64_t route_salt_;  // derived stream key for per-entity route choices
  EntityRegistry registry_;
  PedestrianStore peds_;
  std::uint32_t pedestrian_target_;
  std::uint64_t step_index_ = 0;
  std::uint64_t digest_ = 0;
  WorldCounters counters_;

  std::vector<CommandEnvelope> inbox_;  // ring buffer, fixed capacity
  std::size_t inbox_head_ = 0;
  std::size_t inbox_count_ = 0;
  std::vector<CommandResult> results_;

  struct DespawnRequest {
    EntityId id;
    DespawnReason reason;
  };
  std::vector<DespawnRequest> despawn_requests_;
  VehicleSystem vehicles_;
  PopulationSystem population_;
  std::uint32_t background_count_ = 0;  // pedestrians without a resident identity
  std::vector<double> resident_distance_;
  std::vector<double> ped_distance_;
  TierResolver ped_tier_resolver_;
  TierCounts ped_tiers_;
  std::vector<EntityId> forced_full_;  // sorted by EntityId; bounded by 2 x hard_full_cap
  std::uint64_t force_full_refused_ = 0;
  std::vector<std::uint8_t> force_scratch_;
  void fill_force(std::span<const EntityId> ids);
  std::vector<std::uint32_t> to_activate_, to_deactivate_;
  std::vector<Vec2> observers_;
  std::vector<std::uint8_t> crossing_occupied_;  // per lane, pre-step (phase 6 input)
  std::vector<VehicleSystem::DespawnRequest> vehicle_despawns_;
  std::vector<std::uint8_t> despawn_pending_;  // by entity index; cleared in phase 10
};

}  // namespace bustle::core
