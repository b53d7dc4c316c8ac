// Population orchestration (DESIGN §3): resident identities, zones, community
// schedules, the zone lifecycle queue and work-point occupancy.
//
// A resident is an identity that outlives its representation: its EntityId is
// allocated when the world is created and never released while the world
// lives. Lifecycle per resident:
//
//   Dormant --activate (zone growth, within quota)--> Active (walks as a pedestrian)
//   Active  --recycle (zone shrink, farthest first)--> Dormant
//   Active  --despawn reason (dead end, request)-----> Retiring (fading) --> Dormant (identity
//   kept) Active  --handoff to another zone (two-phase)-----> Active in the target zone
//
// Every lifecycle interval (default 0.25 s) the coordinator reads each
// community's schedule entry at the current hour, sets per-zone targets
// (round(base x density) in the entry's zone, 0 elsewhere), then per zone:
//   1. recycle: members above their target go dormant, farthest from any
//      observer first (ties by EntityId), at most recycle_quota;
//   2. grow: dormant members of short communities are activated here
//      (those already assigned to this zone first, then by EntityId), at most
//      growth_quota, never above the zone's capacity. A member assigned to
//      another zone is handed over (its zone changes, its identity does not)
//      only while the interval's migration budget lasts; otherwise it stays
//      in its source zone and the shortfall is deferred by migration.
// What the quotas hold back is counted as deferred, never failed; what the
// capacity refuses is counted as rejected by capacity.
//
// Migration of active members (before the per-zone steps): when a community's
// schedule moves it to zone z and z lacks members, its members active in other
// zones are offered to z (lowest EntityId first) while the interval's
// migration budget lasts. The handoff completes at the next interval: if z
// still wants the member and has room, the member's zone changes (the World
// moves its representation there; its identity never changes); otherwise it
// returns to its source zone and is counted as returned. A member in handoff
// is never recycled by its source zone.
//
// Work-points: each slot holds at most one resident; when all are taken the
// resident waits in a FIFO; leaving a slot hands it to the head of the queue.
//
// Invariants (check_invariants() checks them all):
//   1. Identities: every resident's EntityId is alive for the world's life and
//      resident_of() maps it back; active is dormant, active or retiring.
//   2. Counts: per zone, active + dormant = the members assigned to it (and
//      the per community x zone, total and retiring counts match a recount);
//      over all zones active + dormant = identities.
//   3. Capacity: per zone, active <= capacity.
//   4. Work-points: a slot holds at most one resident, and a resident holds at
//      most one slot; slot and resident name each other; only active members
//      hold or await a work-point.
//   5. Waiting: a resident waits in its work-point's FIFO once, only while it
//      holds no slot, and only while every slot is taken.
//   6. Handoffs: sorted by resident, unique; each is active in its source zone.
//
// Transitions and where the invariants are asserted (written / read back):
//   on_activated     Dormant -> Active      2 (set_active) / 4 (claim_work_point)
//   on_retiring      Active -> Retiring     4 (release_work_point reads the slot claim wrote)
//   on_deactivated   * -> Dormant           2, 4, 6
//   resolve_handoffs Active in z -> Active in z'   2 (move_zone), 6
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "bustle/core/entity_id.hpp"
#include "bustle/core/lane_graph.hpp"
#include "bustle/core/row_write_stamps.hpp"
#include "bustle/core/scenario.hpp"
#include "bustle/core/status.hpp"

namespace bustle::core {

class Digest;

class ColumnCopies;  // column_copies.hpp

struct ResidentStore {
  static constexpr std::int32_t kNone = -1;
  // Values of `active`: dormant, walking, or fading out after a despawn (its
  // zone still counts it until the despawn phase lets it go); or deceased:
  // killed (KillPedestrian), lying as a corpse until cleanup removes the row,
  // then a record only. A deceased member is neither active nor dormant,
  // holds no work-point, is never activated or handed over again, and keeps
  // its identity (saves name the saveable ones: seed 000's persistence).
  static constexpr std::uint8_t kDormant = 0, kActive = 1, kRetiring = 2, kDeceased = 3;
  std::vector<EntityId> id;
  std::vector<std::uint32_t> community;
  std::vector<std::uint32_t> profession;
  std::vector<std::uint32_t> zone;  // zone it belongs to now
  std::vector<std::uint8_t> active;
  std::vector<std::int32_t> work_point;  // held or awaited work-point, or kNone
  std::vector<std::int32_t> work_slot;   // slot held, or kNone (waiting when work_point set)

  std::uint32_t size() const { return static_cast<std::uint32_t>(id.size()); }
};

struct ZoneStatus {
  std::uint32_t target = 0;
  std::uint32_t active = 0;
  std::uint32_t dormant = 0;  // dormant members assigned to this zone
  // Counts below are per community, summed over the zone (gross): a
  // community short by 3 and another in excess by 3 give pending_spawn 3 and
  // pending_recycle 3, never a net 0. After each interval they add up:
  //   pending_spawn + pending_recycle
  //     == rejected_by_capacity + deferred_by_quota + deferred_by_migration
  // (the excess left is the recycle part of deferred_by_quota; the shortfall
  // left is rejected, deferred by a quota, or deferred by the migration
  // budget). Handoffs on their way count as arrived / gone.
  std::uint32_t pending_spawn = 0;    // shortfall still to activate (gross)
  std::uint32_t pending_recycle = 0;  // excess still to recycle (gross)
  std::uint32_t activated = 0;        // done in the last interval
  std::uint32_t recycled = 0;         // done in the last interval
  // Held back by the growth or recycle quota in the last interval (a
  // deferral, retried next interval; includes arrivals waiting for members
  // on their way out: the excess the recycle quota keeps, members handed
  // over to another zone, members fading out).
  std::uint32_t deferred_by_quota = 0;
  // Shortfall that would not fit the zone's capacity even after every member
  // on its way out has left (a real refusal).
  std::uint32_t rejected_by_capacity = 0;
  std::uint32_t migrated_in = 0;  // records handed over from other zones, last interval
  // Places the growth quota gave whose dormant record (assigned to another
  // zone) could not move for lack of migration budget, last interval.
  std::uint32_t deferred_by_migration = 0;
  std::uint64_t activated_total = 0;
  std::uint64_t recycled_total = 0;
  std::uint32_t handoffs_started = 0;   // active members offered to this zone, last interval
  std::uint32_t handoffs_accepted = 0;  // active members that arrived, last interval
  std::uint32_t handoffs_returned = 0;  // offered here but returned to their source, last interval
  std::uint32_t retiring = 0;           // members fading out (counted in active)
  friend bool operator==(const ZoneStatus&, const ZoneStatus&) = default;
};

// An active member on its way from one zone to another (see above).
struct ZoneHandoff {
  std::uint32_t resident = 0;
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  friend bool operator==(const ZoneHandoff&, const ZoneHandoff&) = default;
};

// Runtime lifecycle settings (SetLifecycle); start as scenario.population's.
struct LifecycleSettings {
  std::uint32_t growth_quota = 2;
  std::uint32_t recycle_quota = 2;
  std::uint32_t interval_ms = 250;
  std::uint32_t migration_budget = 4;
  friend bool operator==(const LifecycleSettings&, const LifecycleSettings&) = default;
};

struct WorkPointState {
  std::vector<std::int32_t> occupant;  // resident index per slot, or kNone
  std::vector<std::uint32_t> waiting;  // resident indices, FIFO
};

// A resident's migrations (seed 001's HUD: migration count and last portal):
// every change of its zone, by a dormant record's handover or an active
// member's handoff. Sparse, sorted by resident: only residents that ever
// migrated have an entry, so a city whose residents stay home pays nothing
// (a dense column would add 8 B per resident to every checkpoint copy).
struct ResidentMigration {
  std::uint32_t resident = 0;     // resident index
  std::uint32_t count = 0;        // zone changes so far (>= 1)
  std::uint32_t last_portal = 0;  // the zone it left at its last migration
  friend bool operator==(const ResidentMigration&, const ResidentMigration&) = default;
};

struct PopulationCheckpoint {
  ResidentStore residents;
  std::vector<ResidentMigration> migrations;  // sorted by resident
  std::vector<std::string> zone_ids;          // scenario zone ids, in index order (readable tables)
  std::vector<ZoneStatus> zones;
  std::vector<WorkPointState> work_points;
  std::uint64_t day_us = 0;
  std::uint32_t time_scale = 1;
  std::uint64_t last_interval = 0;
  LifecycleSettings settings;
  std::vector<ZoneHandoff> handoffs;     // pending, sorted by resident
  std::uint64_t interval_origin_us = 0;  // sim time the current interval grid starts at
};

// Ok when valid; otherwise InvalidArgument naming the field and the allowed range.
Status validate_lifecycle_settings(const LifecycleSettings& s);

class PopulationSystem {
 public:
  explicit PopulationSystem(const Scenario& scenario);

  // Allocates every resident's identity (all dormant, in their home zone).
  // Returns false when the registry is too small (validation prevents it).
  bool create_identities(EntityRegistry& registry);

  // Phase 2: advances the time of day; true when a lifecycle interval begins.
  bool advance_clock(std::uint64_t sim_time_us, std::uint32_t step_us);
  double hour() const { return static_cast<double>(day_us_) / 3.6e9; }
  void set_hour(double hour);
  void set_time_scale(std::uint32_t scale) { time_scale_ = scale; }
  std::uint32_t time_scale() const { return time_scale_; }
  std::uint64_t day_us() const { return day_us_; }
  void set_day_us(std::uint64_t day_us) { day_us_ = day_us; }

  // Phase 2, at each lifecycle interval: migration and the zone lifecycle.
  // `distance_m(r)` gives active resident r's distance to the nearest
  // observer; it is asked only for recycle candidates, so a city with
  // many active residents pays for distances only where a zone shrinks.
  // Appends residents to activate (the World places them on a lane of their
  // zone), to deactivate, and those whose handoff completed (the World moves
  // them to a lane of their new zone).
  void lifecycle(const std::function<double(std::uint32_t)>& distance_m,
                 std::vector<std::uint32_t>& activate, std::vector<std::uint32_t>& deactivate,
                 std::vector<std::uint32_t>& moved);

  // Called by the World when a resident leaves the pedestrian arrays for any
  // reason (recycle, dead end, request): it becomes dormant, keeps its id.
  void on_deactivated(std::uint32_t resident);
  void on_activated(std::uint32_t resident);
  // A walking member was killed: it lets its work-point and any handoff go
  // and is deceased from now on (its corpse row stays until cleanup).
  void on_died(std::uint32_t resident);
  // A save's deceased member (World::load_save): dormant -> deceased.
  void load_deceased(std::uint32_t resident);
  // A despawn moved the resident's representation into the retiring FIFO.
  void on_retiring(std::uint32_t resident);

  const LifecycleSettings& settings() const { return settings_; }
  // Takes effect at once; a new interval length restarts the interval grid
  // at `sim_time_us` (the next step runs the coordinator).
  void set_settings(const LifecycleSettings& s, std::uint64_t sim_time_us);
  const std::vector<ZoneHandoff>& handoffs() const { return handoffs_; }
  // Loading a save: a dormant resident's zone ownership.
  void assign_zone(std::uint32_t resident, std::uint32_t zone) { move_zone(resident, zone); }
  // Zone statuses' `active` from the per-community counts (a load placed
  // residents outside a lifecycle interval).
  void refresh_zone_counts();
  // Target of each community at the current hour (round(base x density)) and its zone index (-1:
  // none).
  std::uint32_t community_target(std::uint32_t community) const;
  std::int64_t community_zone(std::uint32_t community) const;
  std::uint32_t community_first(std::uint32_t community) const {
    return community_first_[community];
  }

  const ResidentStore& residents() const { return residents_; }
  const std::vector<ZoneStatus>& zones() const { return zones_; }
  const std::vector<WorkPointState>& work_points() const { return work_points_; }
  const std::vector<std::vector<LaneIndex>>& zone_lanes() const { return zone_lanes_; }
  void set_zone_lanes(std::vector<std::vector<LaneIndex>> lanes) { zone_lanes_ = std::move(lanes); }
  // Per zone, 1 while every lane of it is closed (empty: none). Set by the
  // World from its closed lanes before each lifecycle(): growth of such a
  // zone is deferred (counted in deferred_by_quota) and a handoff into it
  // returns to its source (handoffs_returned), so nobody is placed on a
  // closed lane. Derived from the closed lanes, so neither digested nor saved.
  void set_zones_closed(std::span<const std::uint8_t> closed) {
    zone_closed_.assign(closed.begin(), closed.end());
  }
  // Index of a resident by entity index (kNone when not a resident).
  // The resident's migrations, or null when it never left its first zone.
  const ResidentMigration* migration_of(std::uint32_t resident) const;
  const std::vector<ResidentMigration>& migrations() const { return migrations_; }
  std::int32_t resident_of(EntityId id) const;
  std::uint32_t active_count() const { return active_total_; }  // walking + retiring
  std::uint32_t retiring_count() const { return retiring_total_; }
  std::uint32_t deceased_count() const { return deceased_total_; }
  // True when `id` is a resident whose record is deceased (killed).
  bool is_deceased(EntityId id) const {
    const std::int32_t r = resident_of(id);
    return r != ResidentStore::kNone &&
           residents_.active[static_cast<std::uint32_t>(r)] == ResidentStore::kDeceased;
  }
  // Active members of community c in zone z (walking + retiring).
  std::uint32_t active_in(std::uint32_t c, std::uint32_t z) const {
    return active_cz_[c * zones_.size() + z];
  }

  // Invariants 1-6 above over every resident, zone and work-point slot
  // (O(residents + slots)): Ok when they hold, else Internal with the first
  // violation as "population: invariant N: ...".
  Status check_invariants(const EntityRegistry& registry) const;
  Status check_member_total(std::uint32_t active_total, std::uint32_t dormant_total) const;

  void digest_into(Digest& d) const;
  // Copies this system's state into `cp`, reusing its vectors' capacity:
  // the resident columns are sized and queued on `copies` (the caller runs
  // them, World::capture_into), the rest is copied here.
  // `held_epoch`: the capture epoch cp's resident columns hold (0: none);
  // only rows written since are copied (resident_rows_written()).
  void capture_into(PopulationCheckpoint& cp, ColumnCopies& copies,
                    std::uint64_t held_epoch = 0) const;
  // Per chunk of resident rows, the capture epoch of its last write.
  const RowWriteStamps& resident_rows_written() const { return resident_rows_written_; }
  std::vector<std::pair<std::string, std::string>> restore(const PopulationCheckpoint& cp,
                                                           const EntityRegistry& registry);

 private:
  friend struct InvariantProbe;  // tests only: corrupts state to prove check_invariants() catches
                                 // it
  int entry_index(std::uint32_t community) const;
  // The growth quota of zone z this interval: 0 while every lane of it is
  // closed (nowhere to place anyone: growth is deferred, never rejected).
  std::uint32_t growth_quota_in(std::uint32_t z) const {
    return !zone_closed_.empty() && zone_closed_[z] != 0 ? 0u : settings_.growth_quota;
  }
  void claim_work_point(std::uint32_t resident);
  void release_work_point(std::uint32_t resident);
  // Incremental bookkeeping: every change to a resident's row goes through
  // refresh(), which keeps the digest sum current, so neither the digest nor
  // the coordinator scans all (possibly a million dormant) residents.
  std::uint64_t row_hash(std::uint32_t resident) const;
  void refresh(std::uint32_t resident);
  void set_active(std::uint32_t resident, std::uint8_t value);
  void move_zone(std::uint32_t resident, std::uint32_t zone);
  // Counts a zone change of resident i away from `from_zone` (move_zone).
  void record_migration(std::uint32_t i, std::uint32_t from_zone);
  // restore()'s checks of the handoffs and migration records.
  void check_handoffs_and_migrations(
      const PopulationCheckpoint& cp,
      const std::function<void(std::string, std::string)>& fail) const;
  // check_invariants()'s sections, in its order (population/invariants.cpp).
  struct Recount;
  Status check_resident_rows(const EntityRegistry& registry, Recount& r) const;
  Status check_resident_work_point(std::uint32_t resident) const;
  Status check_counts(const Recount& r) const;
  Status check_work_point_slots() const;
  Status check_handoffs() const;
  void rebuild_indexes();
  bool in_handoff(std::uint32_t resident) const;
  // Active members of community c (walking or retiring), in EntityId order;
  // valid during lifecycle().
  std::span<const std::uint32_t> active_members(std::uint32_t c) const;
  void resolve_handoffs(const std::vector<std::int64_t>& desired_zone,
                        std::vector<std::uint32_t>& moved);
  void start_handoffs(const std::vector<std::int64_t>& desired_zone,
                      const std::vector<std::uint32_t>& desired_n, std::uint32_t& migrations_left);
  // lifecycle()'s parts, in the order it runs them: the schedule's wish per
  // community (desired_zone_, desired_n_, desired_wp_; zone counters reset),
  // work points following it, the handoffs per zone pair (pending_in_,
  // pending_out_), then per zone the recycle and the growth.
  void plan_schedule();
  void follow_work_points();
  void count_pending_handoffs();
  // Queues zone z's excess for deactivation (at most the recycle quota);
  // returns how many, adds the whole excess to `excess_total`.
  std::uint32_t recycle_zone(std::uint32_t z,
                             const std::function<double(std::uint32_t)>& distance_m,
                             std::vector<std::uint32_t>& deactivate, std::uint32_t& excess_total);
  // Dormant members to activate in zone z, in order, into grow_; adds the
  // communities' shortfall there to `need_total`.
  void grow_candidates(std::uint32_t z, std::uint32_t& need_total);
  void grow_zone(std::uint32_t z, std::uint32_t active_z, std::uint32_t recycle,
                 std::uint32_t excess_total, std::uint32_t& migrations_left,
                 std::vector<std::uint32_t>& activate);

  const Scenario* scenario_;
  // Resolved once from the scenario's ids, so the coordinator compares
  // indices, never strings: per community and schedule entry, the entry's
  // zone and work-point (kNone when it has none); and per community the
  // contiguous range of its residents [first, first + base_population).
  std::vector<std::vector<std::uint32_t>> entry_zone_;
  std::vector<std::vector<std::int32_t>> entry_work_point_;
  std::vector<std::uint32_t> community_first_;
  ResidentStore residents_;
  std::vector<std::int32_t> resident_by_entity_;  // entity index -> resident, or kNone
  std::vector<ZoneStatus> zones_;
  std::vector<WorkPointState> work_points_;
  std::vector<std::vector<LaneIndex>> zone_lanes_;
  std::vector<std::uint8_t> zone_closed_;  // per zone, or empty (set_zones_closed)
  std::uint64_t day_us_ = 0;
  std::uint32_t time_scale_ = 1;
  std::uint64_t last_interval_ = 0;
  std::uint64_t interval_origin_us_ = 0;
  LifecycleSettings settings_;
  std::vector<ResidentMigration> migrations_;  // sorted by resident (ResidentMigration)
  std::vector<ZoneHandoff> handoffs_;          // sorted by resident
  // Derived indexes (rebuilt on restore, never in checkpoints).
  std::vector<std::uint64_t> row_hash_;
  std::uint64_t row_sum_ = 0;
  RowWriteStamps resident_rows_written_;  // marked by refresh() (not state)
  std::vector<std::uint32_t> active_cz_;  // community x zone: walking + retiring
  std::vector<std::uint32_t>
      active_list_;  // residents with active != 0, ascending (EntityId order)
  std::uint32_t active_total_ = 0;
  std::uint32_t retiring_total_ = 0;
  std::uint32_t deceased_total_ = 0;
  // Scratch (reused every interval).
  std::vector<std::pair<double, std::uint32_t>> scratch_a_, scratch_b_;  // (distance, resident)
  std::vector<std::uint32_t> grow_;
  std::vector<std::int64_t> desired_zone_;  // per community, this interval
  std::vector<std::uint32_t> desired_n_;
  std::vector<std::int32_t> desired_wp_;
  std::vector<std::uint32_t> pending_in_, pending_out_;  // community x zone
};

}  // namespace bustle::core
