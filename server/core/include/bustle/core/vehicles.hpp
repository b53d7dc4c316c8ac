// Vehicles (DESIGN §4): garage request queues, dispatch gates, content plan,
// signals, policy arbitration, leader relation, route advance, turnaround.
//
// Axes kept apart per vehicle: identity (EntityId, plus the session VehicleId
// "vehicle.<garage>.<ordinal:06>"), lifecycle (requested -> queued ->
// dispatched -> managed -> despawned), strategy (long-lived intent),
// control policy (this step's decision, with a reason), simulation tier.
//
// Garage request lifecycle (all transitions in VehicleSystem):
//
//   planned --inject_plan--> queued --dispatch--> dispatched (vehicle managed)
//      |                       |  \--cancel--> canceled
//      \--enqueue rejected--> invalid | duplicate | (queue full: retried later)
//
// A dispatched vehicle is managed from dispatch on: it has its EntityId and
// VehicleId and counts against the garage's capacity. With a garage mouth
// (GarageSpec::mouth_capacity > 0) a batch is dispatched into the mouth and
// its vehicles enter the road one at a time, front first, each when the
// entrance is clear (enter_from_mouth); until then a vehicle is in
// GarageState::mouth, not in the store: on no lane, not streamed, no tier.
// Without a mouth a request is dispatched only onto a clear entrance.
//
// Invariants:
//   1. A request id is in at most one of {queue, dispatched} per garage; the
//      request of every vehicle in a mouth is dispatched.
//   2. The queue is sorted by priority (desc), then EnqueueOrdinal (asc); a
//      rejected enqueue or a held dispatch never reorders it.
//   3. next_vehicle_ordinal == number of dispatches; VehicleIds never repeat.
//   4. Every step, every vehicle reads the same pre-step snapshot, so the
//      order of the vehicle arrays never changes an outcome.
//   5. A vehicle never advances to within headway_block_m of its leader's
//      pre-step position (stronger than the seed's 7 m observation), the
//      leader looked for along its route across lane joins as far as it can
//      reach; a vehicle entering from the mouth (or, with no mouth, dispatched)
//      and a turnaround are placed at s = 0 of the
//      entrance lane only when nothing is within max(entrance_clear_m,
//      headway_block_m) ahead on that lane or behind it on a lane leading
//      onto it (the loop seam). Between steps this leaves every vehicle at
//      least headway_block_m behind the next one along its route, on its lane
//      or across lane joins.
//   6. Merges: a merge lane is one that two or more lanes lead onto along
//      the routes (its feeders). Per step, among the front-most vehicle of
//      each feeder whose route continues onto it (pre-step snapshot), the one
//      nearest the merge point (ties by EntityId) is the merge winner; every
//      other vehicle whose look-ahead reaches the merge lane takes the winner
//      as a virtual leader at the winner's distance to the merge point
//      (Yielding, MergeYield) and so ends the step at least headway_block_m
//      further from it. Only the winner can enter the merge lane in a step;
//      the winner never yields at its own merge, so two vehicles never yield
//      to each other there. Between steps: on the merge axis (s on the merge
//      lane, minus the distance to its start on a feeder), two vehicles on
//      different lanes within headway_block_m of the merge point (on the
//      merge lane, or on a feeder with their route continuing onto it) are
//      at least headway_block_m apart.
//
// Which function performs each transition, and where each invariant is
// asserted (written / read back):
//   enqueue       planned -> queued          2 (insert position) / dispatch (front)
//   dispatch      queued -> dispatched       1, 3 (ordinal) / push_vehicle
//   enter_from_mouth  mouth -> on the road   5 (entrance clear) / check_invariants
//   cancel        queued -> canceled         1
//   evaluate_and_advance  moves a vehicle    5, 6 (advance cap) / check_invariants
//   find_merge_winners    per-step winners   6 (from the snapshot) / the kernel
//   remove        managed -> despawned       store maps / check_invariants
// check_invariants() checks all of them, and the store's maps, between steps.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bustle/core/command.hpp"
#include "bustle/core/despawn_reason.hpp"
#include "bustle/core/entity_id.hpp"
#include "bustle/core/importance.hpp"
#include "bustle/core/lane_graph.hpp"
#include "bustle/core/phase_executor.hpp"
#include "bustle/core/scenario.hpp"
#include "bustle/core/sim_tier.hpp"
#include "bustle/core/status.hpp"
#include "bustle/core/vehicles/garages.hpp"
#include "bustle/core/vehicles/policy.hpp"
#include "bustle/core/vehicles/signals.hpp"
#include "bustle/core/vehicles/store.hpp"

namespace bustle::core {

// The vehicle system's value types are in vehicles/: policy.hpp (strategy,
// control policy, arbitration), signals.hpp, garages.hpp (queues, mouths,
// gates, plan) and store.hpp (the store, step counts, checkpoint).

class VehicleSystem {
 public:
  VehicleSystem(const Scenario& scenario, const LaneGraph& lanes, std::uint32_t entity_capacity);

  // Validates everything before changing anything (invariant 2).
  EnqueueResult enqueue(const std::string& garage, const std::string& request_id,
                        const std::string& prototype, const std::string& lane,
                        std::int32_t priority);
  CancelStatus cancel(const std::string& garage, const std::string& request_id);

  // Despawn bookkeeping (the World owns the single despawn phase).
  bool is_vehicle(EntityId id) const;
  void mark_despawn(EntityId id);
  void remove(EntityId id);
  bool set_strategy(EntityId id, VehicleStrategy s);
  // Lane closures (the World's SetLaneClosed): a vehicle never drives onto
  // a closed lane; it stops at the end of its lane (PolicyReason::LaneClosed)
  // and drives on once the lane opens. A closed entrance lane holds
  // dispatch and turnarounds (EntranceBlocked). Derived from the World's
  // closed set (not checkpointed here; the World sets it after a restore).
  void set_closed_lanes(std::span<const LaneIndex> closed);
  // Vehicles whose last decision was LaneClosed (O(vehicles)).
  std::uint32_t held_at_closures() const;
  // Loading a save: continue VehicleId numbering where the saved city was.
  void set_next_vehicle_ordinal(std::uint32_t garage, std::uint64_t ordinal) {
    garages_[garage].next_vehicle_ordinal = ordinal;
  }

  struct DespawnRequest {
    EntityId id;
    // RouteCompleted: reached the end of a garage-ending route; Stuck:
    // off-screen and not moved for despawn.stuck_ms.
    DespawnReason reason = DespawnReason::Requested;
  };

  // Phase 5. `crossing_occupied[lane]` is nonzero for crossing lanes with a
  // pedestrian on them (pre-step). New vehicles take ids from `registry`;
  // vehicles that must leave are appended to `despawns`. The per-vehicle
  // kernel runs in parts of kVehicleRowsPerPart rows on `executor`; the
  // outcome is the same for every executor and thread count.
  void step(std::uint64_t step_index, std::uint32_t step_us, EntityRegistry& registry,
            const std::vector<std::uint8_t>& crossing_occupied, const std::vector<Vec2>& observers,
            std::vector<DespawnRequest>& despawns, PhaseExecutor& executor);
  // Rows per part of the vehicle kernel: fixed by the data alone (never by
  // the thread count), small enough that 10 k vehicles make 10 parts for
  // two threads to share evenly (a part is ~20 us of work).
  static constexpr std::uint32_t kVehicleRowsPerPart = 1024;

  // Phase 7: re-resolves the slice of vehicles whose id phase matches the
  // step (every tiers.vehicle_resolve_every_steps steps each), against the
  // caps the other slices' current tiers leave. `forced_full` is the world's
  // ForceFull list, sorted by EntityId (pedestrians in it are ignored).
  void resolve_tiers(std::uint64_t step_index, const TierSpec& spec,
                     const ImportanceField& importance, std::span<const EntityId> forced_full = {});

  // District worlds (vehicles/borders.cpp; docs/districts.md). Called once
  // by the World with each lane's district and its own: garages of other
  // districts dispatch nothing here, and lanes near another district are
  // marked for ghosts. Without it (a whole city) nothing below is used.
  void set_district(const std::vector<std::int16_t>& lane_district, std::int32_t own,
                    std::size_t districts);
  bool garage_here(std::uint32_t garage) const {
    return garage_here_.empty() || garage_here_[garage] != 0;
  }
  // A vehicle the last vehicle phase left on another district's lane.
  bool on_foreign_lane(std::uint32_t dense) const {
    return !lane_foreign_.empty() && lane_foreign_[store_.lane[dense]] != 0;
  }
  // Takes `id` off the road here: its row as it is, its garage counting it
  // away when the garage is this district's.
  BorderVehicle depart(EntityId id);
  // Arrivals and ghosts from a neighbour, checked before anything changes
  // (InvalidArgument naming the field), then applied.
  Status validate_arrival(const BorderVehicle& v, const EntityRegistry& registry) const;
  void adopt(const BorderVehicle& v);
  Status validate_ghost(const VehicleGhost& g, const EntityRegistry& registry) const;
  void add_ghost(const VehicleGhost& g) { ghosts_.push_back(g); }
  // A vehicle of this district's garage left the city elsewhere.
  void returned_away(std::uint32_t garage);
  // After the vehicle phase: the ghosts this step's state gives each
  // neighbour (`to` district, ghost), from the vehicles on the road here and
  // those that just left (`departed`, on their receivers' lanes); the ones
  // this district reads itself next step stay as its ghosts.
  void share_ghosts(std::span<const BorderVehicle> departed,
                    std::vector<std::pair<std::uint32_t, VehicleGhost>>& out);
  const std::vector<VehicleGhost>& ghosts() const { return ghosts_; }
  // Crossing lanes of other districts with a pedestrian on them, read by the
  // next vehicle phase like the district's own (then dropped): between steps
  // those this district's pedestrians just walked onto, then what the
  // neighbours sent (phase 1). Checkpointed and digested with the ghosts.
  Status validate_crossing(LaneIndex lane) const;
  void add_foreign_crossing(LaneIndex lane) { foreign_crossings_.push_back(lane); }
  const std::vector<LaneIndex>& foreign_crossings() const { return foreign_crossings_; }
  // After the step: the districts (other than this one and the lane's owner)
  // whose cars yield to pedestrians on crossing lane `lane`, and whether this
  // district's do.
  std::span<const std::uint16_t> crossing_readers(LaneIndex lane) const {
    if (crossing_readers_begin_.empty()) return {};
    return {crossing_readers_.data() + crossing_readers_begin_[lane],
            crossing_readers_begin_[lane + 1] - crossing_readers_begin_[lane]};
  }
  // Whether any crossing lane has a reader: a city cut with no crossing at
  // a border has none, and its districts share no occupancy.
  bool any_crossing_readers() const { return !crossing_readers_.empty(); }
  void keep_foreign_crossings(std::span<const LaneIndex> lanes) {
    foreign_crossings_.assign(lanes.begin(), lanes.end());
  }

  const VehicleStore& store() const { return store_; }
  // The capacity target of the vehicle in dense slot `dense` at its last
  // tier resolution (derived; see capacity_tier_).
  SimTier capacity_tier(std::uint32_t dense) const { return capacity_tier_[dense]; }
  // Vehicles per simulation tier, maintained as tiers change (checked by
  // check_invariants against the store).
  const std::array<std::uint32_t, kSimTierCount>& sim_tier_counts() const {
    return sim_tier_count_;
  }
  const std::vector<GarageState>& garages() const { return garages_; }
  const std::vector<SignalState>& signals() const { return signals_; }
  const PlanState& plan() const { return plan_; }
  const TierCounts& last_tiers() const { return last_tiers_; }
  const VehicleStepCounts& last_step() const { return last_step_; }
  // Vehicles out of `garage`'s queue that count against its capacity: on
  // the road plus waiting in its mouth.
  // In a district world, also those away in other districts.
  std::uint32_t managed(std::uint32_t garage) const {
    return managed_[garage] + static_cast<std::uint32_t>(garages_[garage].mouth.size()) +
           static_cast<std::uint32_t>(garages_[garage].away);
  }
  // Vehicles waiting in garage mouths (every garage): alive identities the
  // store does not hold (World::check_holders, restore).
  std::size_t mouth_count() const;
  // Where `id` waits in a mouth, or nullopt (not in any: on the road or not a vehicle).
  struct MouthPlace {
    std::uint32_t garage = 0;
    std::uint32_t position = 0;  // 0: the front, next onto the road
  };
  std::optional<MouthPlace> mouth_place(EntityId id) const;
  // "" when `id` is not in a mouth, else what a command on it is told:
  // "vehicle.g0.000003 waits in garage 'g0' mouth (place 2 of 3): not on the road yet".
  std::string mouth_text(EntityId id) const;
  std::optional<std::uint32_t> garage_index(const std::string& id) const;
  const Scenario& scenario() const { return *scenario_; }

  // "vehicle.<garage>.<ordinal:06>" for a dense slot.
  std::string vehicle_id(std::uint32_t dense) const;
  Pose pose(std::uint32_t dense) const {
    return lanes_->sample(store_.lane[dense], store_.s_m[dense]);
  }

  // Invariants 1, 2, 3, 5 and 6 and the store's consistency (dense_of, managed
  // counts, lanes on the route, live ids), O(vehicles log vehicles + queued
  // requests): Ok when they hold, else Internal with the first violation as
  // "vehicles: invariant N: ..." or "vehicles: ...".
  Status check_invariants(const EntityRegistry& registry) const;

  void digest_into(class Digest& d) const;
  VehicleCheckpoint capture() const;
  // The same into `cp`, reusing its vectors' capacity (World::capture_into).
  void capture_into(VehicleCheckpoint& cp) const;
  // Replaces the state; returns errors as (path, message) like World::restore.
  std::vector<std::pair<std::string, std::string>> restore(const VehicleCheckpoint& cp,
                                                           const EntityRegistry& registry);

 private:
  friend struct InvariantProbe;  // tests only: corrupts state to prove check_invariants() catches
                                 // it
  void advance_signals(std::uint32_t step_us);
  void inject_plan(std::uint64_t step_index);
  void dispatch(std::uint64_t step_index, EntityRegistry& registry,
                const std::vector<Vec2>& observers);
  // Dispatches up to `n` queued requests of `garage` (into its mouth, each
  // entering the road when the entrance is clear); returns how many.
  std::size_t dispatch_batch(std::uint64_t step_index, std::uint32_t garage, std::size_t n,
                             EntityRegistry& registry, const std::vector<Vec2>& observers);
  // The mouth's front vehicle enters the road when the entrance is clear
  // (one per clearance: it then holds the entrance); true when one entered.
  bool enter_from_mouth(std::uint64_t step_index, std::uint32_t garage,
                        const std::vector<Vec2>& observers);
  // A vehicle was just placed at s = 0 of `garage`'s entrance lane: the
  // lane extents entrance_clear() reads (valid: it ran before) include it.
  void occupy_entrance(std::uint32_t garage);
  // Invariant 5 at the entrance: nothing within entrance_clear_m_[garage]
  // ahead on the entrance lane or behind it on a feeder lane (a turnaround
  // skips the lanes behind on its own route: those vehicles follow it).
  bool entrance_clear(std::uint32_t garage, bool turnaround = false);
  void refresh_lane_extents();
  void build_route_tables();
  void build_feeders();
  void build_merges();
  void find_merge_winners();
  // The lane a vehicle's route continues onto after its current lane
  // (route[0] across the seam of a loop), or kNoLaneAhead at a route's end.
  LaneIndex next_on_route(std::uint32_t i) const;
  void regroup_store();
  void build_snapshot();
  void evaluate_and_advance(std::uint64_t step_index, std::uint32_t step_us,
                            const std::vector<std::uint8_t>& crossing_occupied,
                            std::vector<DespawnRequest>& despawns, PhaseExecutor& executor);
  // One part's outputs (phase_executor.hpp invariants 1-3): its digest and
  // policy deltas (wrapping), its moving count, and what would mutate shared
  // state, applied after all parts in part order (the sequential order):
  // despawn requests, and rows that reached their loop's end (waiting_).
  struct KernelPart {
    std::uint64_t sum = 0;
    std::uint32_t moving = 0;
    std::array<std::uint32_t, kControlPolicyCount> policies{};
    std::vector<DespawnRequest> despawns;
    std::vector<std::uint32_t> waiting;
  };
  std::vector<KernelPart> kernel_parts_;
  void evaluate_part(std::uint32_t begin, std::uint32_t end, std::uint64_t step_index, double dt_s,
                     const std::vector<std::uint8_t>& crossing_occupied, KernelPart& part);
  void turnarounds(std::uint64_t step_index);
  void count_policies();
  // Digest folding: each vehicle's state hashes to one word kept in hash_;
  // hash_sum_ is their sum (order-independent), updated whenever a vehicle
  // changes, so digest_into() does not rehash unchanged vehicles.
  std::uint64_t vehicle_word(std::uint32_t i) const;
  void refold(std::uint32_t i) {
    const std::uint64_t h = vehicle_word(i);
    hash_sum_ += h - hash_[i];
    hash_[i] = h;
  }
  void set_policy(std::uint32_t i, std::uint8_t p) {
    --control_policy_count_[store_.control_policy[i]];
    ++control_policy_count_[p];
    store_.control_policy[i] = p;
  }
  void rebuild_derived();
  // check_invariants() and restore() by section (vehicles/invariants.cpp,
  // vehicles/checkpoint.cpp).
  Status check_store_rows(const EntityRegistry& registry,
                          std::vector<std::uint32_t>& managed) const;
  Status check_garages(const std::vector<std::uint32_t>& managed) const;
  Status check_mouths(const EntityRegistry& registry) const;
  Status check_vehicle_ids_and_headways() const;
  Status check_headways(std::vector<std::uint32_t>& order) const;
  Status check_merges(const std::vector<std::uint32_t>& order) const;
  Status check_derived() const;
  using RestoreErrors = std::vector<std::pair<std::string, std::string>>;
  bool restore_check_shape(const VehicleCheckpoint& cp, RestoreErrors& errors) const;
  void restore_check_rows(const VehicleCheckpoint& cp, const EntityRegistry& registry,
                          RestoreErrors& errors, std::vector<std::uint32_t>& dense_of,
                          std::vector<std::uint32_t>& managed,
                          std::vector<std::vector<std::uint64_t>>& ordinals) const;
  void restore_check_mouths(const VehicleCheckpoint& cp, const EntityRegistry& registry,
                            const std::vector<std::uint32_t>& dense_of,
                            std::vector<std::vector<std::uint64_t>>& ordinals,
                            RestoreErrors& errors) const;
  void restore_check_garages(const VehicleCheckpoint& cp, const std::vector<std::uint32_t>& managed,
                             std::vector<std::vector<std::uint64_t>>& ordinals,
                             RestoreErrors& errors) const;
  void restore_check_signals_and_leaders(const VehicleCheckpoint& cp,
                                         const EntityRegistry& registry,
                                         RestoreErrors& errors) const;
  void start_waiting(std::uint32_t i, std::uint64_t step_index);
  void stop_waiting(std::uint32_t i);
  void find_stuck(std::uint64_t step_index, std::uint32_t step_us,
                  std::vector<DespawnRequest>& despawns);
  void push_vehicle(std::uint64_t step_index, EntityId id, std::uint32_t garage,
                    std::uint64_t ordinal, std::uint32_t prototype, const std::string& request_id,
                    SimTier tier);
  void append_row(const BorderVehicle& v);

  struct Conflict {
    double s_on_road_m;
    LaneIndex crossing;
  };

  const Scenario* scenario_;
  const LaneGraph* lanes_;
  std::vector<std::vector<LaneIndex>> routes_;    // per garage, lane indices
  std::vector<std::int32_t> signal_of_lane_;      // signal index or -1
  std::vector<std::vector<Conflict>> conflicts_;  // per road lane, sorted by s

  VehicleStore store_;
  std::vector<GarageState> garages_;
  std::vector<std::uint32_t> managed_;  // derived: vehicles per garage on the road (store rows)
  std::vector<SignalState> signals_;
  PlanState plan_;
  TierCounts last_tiers_;
  VehicleStepCounts last_step_;

  // Pre-step snapshot (derived each step): vehicles bucketed by lane, sorted
  // by (s, EntityId). Reused buffers.
  // snap_ holds, in lane order, each vehicle's pre-step position, id and
  // row: the leader of the vehicle at snap_[p] is snap_[p + 1] on the same
  // lane (the next entry, no lookup through its row).
  struct SnapRow {
    double s_m;
    EntityId id;
    std::uint32_t row;
  };
  std::vector<std::uint32_t> lane_start_;
  std::vector<SnapRow> snap_;
  std::vector<std::uint32_t> pos_in_order_;
  std::vector<double> distances_;
  TierResolver tier_resolver_;
  std::vector<double> lane_min_s_;  // per lane: smallest s of any vehicle (lazy)
  std::vector<double> lane_max_s_;  // per lane: largest s of any vehicle (with lane_min_s_)
  bool lane_min_valid_ = false;
  // Per garage: the clearance its entrance needs, max(entrance_clear_m,
  // headway_block_m), and the lanes leading onto its entrance lane within that
  // distance (from every route), each with the distance from its end to the
  // entrance; `own` when it is on this garage's own loop back from the seam.
  struct Feeder {
    LaneIndex lane;
    double to_entrance_m;
    bool own;
  };
  std::vector<double> entrance_clear_m_;
  std::vector<std::vector<Feeder>> feeders_;
  std::vector<double> route_max_speed_;  // per garage: the fastest lane of its route
  std::vector<std::uint32_t> cursor_;
  // regroup_store(): the new row order and which rows a permutation cycle visited.
  std::vector<std::uint32_t> regroup_order_;
  std::vector<std::uint8_t> regroup_seen_;
  // Digest caches (derived, rebuilt on restore): the hash of each vehicle's
  // fields that never change after dispatch, and per garage the sum of the
  // hashes of its dispatched request ids, so the per-step digest does not
  // rehash thousands of strings.
  std::vector<std::uint64_t> cold_hash_;        // per dense slot
  std::vector<std::uint64_t> dispatched_hash_;  // per garage
  std::vector<std::uint64_t> hash_;             // per dense slot: vehicle_word() as last folded
  std::uint64_t hash_sum_ = 0;
  // Derived per dense slot / per lane / per garage (rebuilt on restore).
  std::vector<std::uint8_t> phase_;  // id_phase(id): stride and resolve slice
  // Stage 2's capacity target at the vehicle's last tier resolution
  // (sim_tier.hpp): a derived observation for QueryEntity, never digested or
  // checkpointed; its applied tier until it is first resolved.
  std::vector<SimTier> capacity_tier_;
  std::array<std::uint32_t, kControlPolicyCount> control_policy_count_{};  // vehicles per policy
  std::array<std::uint32_t, kSimTierCount> sim_tier_count_{};              // vehicles per tier
  struct Waiter {
    std::uint64_t since;
    EntityId id;
    bool operator<(const Waiter& o) const { return since != o.since ? since < o.since : id < o.id; }
  };
  std::vector<std::vector<Waiter>> waiting_;  // per garage: vehicles awaiting turnaround, sorted
  std::vector<std::uint8_t> route_loops_;     // per garage: route_end == Loop
  std::vector<LaneIndex> route_lanes_;        // every garage route, concatenated
  std::vector<std::uint32_t> route_begin_;    // per garage + 1: its route in route_lanes_
  struct LaneHot {
    double length_m;
    double speed_mps;
    double stop_m;            // signal stop line from the lane start (stop_alpha x length)
    double yield_m;           // yield approach from the lane start
    std::int32_t signal;      // index or -1
    std::uint32_t conflicts;  // number of crossing conflicts
    SignalPhase phase;        // the signal's phase this step (advance_signals); Open without one
    std::int32_t merge;       // index into the merge tables (invariant 6) or -1
  };
  std::vector<LaneHot> lane_hot_;
  // Merges (invariant 6), built once from the routes: per merge its lane and
  // its feeder lanes (merge_feeders_[merge_feeder_begin_[m] ..
  // merge_feeder_begin_[m + 1]]); per step (find_merge_winners) its winner's
  // dense slot (kNoSlot: none) and the winner's distance to the merge point.
  std::vector<LaneIndex> merge_lane_;
  std::vector<std::uint32_t> merge_feeder_begin_;
  std::vector<LaneIndex> merge_feeders_;
  std::vector<std::uint32_t> merge_winner_;
  std::vector<double> merge_winner_d_m_;
  // District worlds (borders.cpp): per garage, whether it is this
  // district's; per lane, whether another district owns it, and the
  // districts (other than its owner) that read its vehicles as ghosts
  // (ghost_to_[ghost_to_begin_[l] .. ghost_to_begin_[l + 1]]). Empty for a
  // whole city.
  std::int32_t own_district_ = -1;
  std::vector<std::uint8_t> garage_here_;
  std::vector<std::uint16_t> garage_district_;
  std::vector<std::uint8_t> lane_foreign_;
  std::vector<std::uint32_t> ghost_to_begin_;
  std::vector<std::uint16_t> ghost_to_;
  // Other districts' vehicles read by the next vehicle phase: between steps
  // the ones this district sent away in its last step (checkpointed and
  // digested), then what the neighbours sent (phase 1). Snapshot rows past
  // the store's (row >= size()) are ghosts, ghosts_[row - size()].
  std::vector<VehicleGhost> ghosts_;
  std::vector<LaneIndex> foreign_crossings_;           // foreign_crossings()
  std::vector<std::uint32_t> crossing_readers_begin_;  // per lane + 1 (crossing_readers)
  std::vector<std::uint16_t> crossing_readers_;
  void build_crossing_readers(const std::vector<std::int16_t>& lane_district,
                              const std::vector<std::vector<LaneIndex>>& preds);
  Status validate_place(EntityId id, std::uint32_t garage, std::uint32_t route_index,
                        LaneIndex lane, double s_m, const EntityRegistry& registry,
                        bool foreign) const;
  EntityId snap_id(std::uint32_t row) const {
    return row < store_.size() ? store_.id[row] : ghosts_[row - store_.size()].id;
  }
  // After arbitration: a vehicle awaiting its turnaround does not advance; one
  // whose next lane (within reach; kNoLaneAhead: none) is closed is held at
  // its lane end (Yielding, LaneClosed).
  static constexpr LaneIndex kNoLaneAhead = UINT32_MAX;
  void hold(PolicyDecision& dec, bool awaiting, LaneIndex next_in_reach) const;
  // What a vehicle follows this step: its leader (invariant 5) and the merge
  // winner it yields to (invariant 6), each with its gap (infinity: none).
  struct Ahead {
    EntityId leader;
    EntityId merge_peer;
    double gap_m = std::numeric_limits<double>::infinity();
    double merge_gap_m = std::numeric_limits<double>::infinity();
  };
  Ahead look_ahead(std::uint32_t i, const LaneIndex* route, std::uint32_t route_size,
                   std::uint32_t ri, bool loops, double to_end, double look_m) const;
  // evaluate_and_advance's parts, per due vehicle in this order (vehicles/kernel.cpp):
  // its place on its route, its leader, its decision, its advance.
  struct Kernel;
  struct Evaluation;
  Evaluation evaluation(const Kernel& k, std::uint32_t i) const;
  Ahead find_leader(const Kernel& k, const Evaluation& e) const;
  PolicyDecision arbitrate_vehicle(const Kernel& k, const Evaluation& e, const Ahead& ahead) const;
  void advance_vehicle(Kernel& k, const Evaluation& e, double speed_multiplier, const Ahead& ahead);
  std::vector<std::uint8_t> lane_closed_;  // per lane, 1 when closed (set_closed_lanes)
  bool closures_active_ = false;           // any lane closed
  std::vector<LaneIndex> signal_lane_;     // per signal: the lane whose LaneHot shows its phase
  // Per signal: its phase durations (open, yield, closed) in us, dense for
  // advance_signals (the SignalSpec beside them is read once, at creation).
  std::vector<std::array<std::uint64_t, 3>> signal_us_;
  struct LaneGeo {
    bool straight = false;  // two points: position by the fields below
    double ax = 0, ay = 0, dx = 0, dy = 0, s0 = 0, seg = 0, length_m = 0;
    double elevation_m = 0;
  };
  std::vector<LaneGeo> lane_geo_;
  Vec2 position_of(std::uint32_t i) const;
  void slice_distances(std::uint32_t m, const ImportanceField& importance);
  // Tier resolution slice (reused buffers, sized for every row: a step's
  // slice is their first rows).
  std::vector<std::uint32_t> slice_;
  std::vector<EntityId> slice_ids_;
  std::vector<SimTier> slice_sim_tier_;
  std::vector<std::uint8_t> slice_force_;
};

}  // namespace bustle::core
