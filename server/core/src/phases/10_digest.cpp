// Phase 10 of World::step(): the digest over the canonical state.
//
// Sections: compute_digest (fixed section order), the pending commands'
// terms, the lifecycle terms (spawn handles, orphans, routes), and the
// pedestrian row hashes kept current as rows change.
#include <cassert>

#include "../world_internal.hpp"
#include "bustle/core/digest.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {
namespace {

void digest_spawn_request(Digest& d, const SpawnPedestrian& c) {
  d.str(c.zone).str(c.lane).u32(c.priority).u32(c.timeout_ms).u64(c.route.size());
  for (const std::string& l : c.route) d.str(l);
}

// A pending command's terms (its kind is digested by the caller).
void digest_command(Digest& d, const WorldCommand& command) {
  std::visit(
      Overloaded{
          [&](const SetPedestrianTarget& c) { d.u32(c.count); },
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
          [&](const SetHour& c) { d.f64(c.hour); }, [&](const SetTimeScale& c) { d.u32(c.scale); },
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
          },
          [&](const SetAdmissionMask& c) { d.u64(c.id.packed()).boolean(c.masked); },
          [&](const SetPreventionLevel& c) { d.u32(c.level); },
          [&](const KillPedestrian& c) { d.u64(c.id.packed()); },
          [&](const SetLaneClosed& c) { d.str(c.lane).u32(c.lane_index).boolean(c.closed); },
          [&](const BorderArrivals& c) {
            d.u32(c.from_district).u64(c.sent_step).u64(c.pedestrians.size());
            for (const BorderPedestrian& p : c.pedestrians)
              d.u64(p.id.packed()).u32(p.lane).f64(p.time_left_s).u32(p.hops);
            d.u64(c.returned.size());
            for (const EntityId id : c.returned) d.u64(id.packed());
          }},
      command);
}

}  // namespace

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
  // here; see pedestrian_row_hash).
  d.tag(4).u32(pedestrians_.size()).u32(background_count_).u64(pedestrian_digest_sum_);
  for (const std::uint32_t c : pedestrian_tier_counts_.per_tier) d.u32(c);
  d.u32(pedestrian_tier_counts_.promoted)
      .u32(pedestrian_tier_counts_.demoted)
      .u32(pedestrian_tier_counts_.deferred);
  d.u32(pedestrian_tier_counts_.forced).u32(pedestrian_tier_counts_.forced_overflow);
  d.tag(8).u64(forced_full_.size()).u64(force_full_refused_);
  for (const EntityId f : forced_full_) d.u64(f.packed());
  population_.digest_into(d);

  assert(inbox_count_ <= inbox_.size());
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
    digest_command(d, env.command);
  }

  vehicles_.digest_into(d);
  if (!follow_.is_null()) d.tag(13).u64(follow_.packed());  // SetObservers.follow
  if (follow_first_vehicle_) d.tag(12);                     // observer_follow still waiting
  // Lane closures: a term only once a lane was ever closed, so runs without
  // closures keep the digests of earlier builds.
  if (lane_closure_.closures_total != 0) {
    d.tag(15).u64(closed_lanes_.size());
    for (const LaneIndex l : closed_lanes_) d.u32(l);
    d.u64(lane_waiters_.size());
    for (const LaneWaiter& w : lane_waiters_) d.u64(w.id.packed()).u64(w.since_step);
    d.u64(lane_closure_.closures_total)
        .u64(lane_closure_.openings_total)
        .u64(lane_closure_.reroutes_total)
        .u64(lane_closure_.dead_ends_total)
        .u64(lane_closure_.spawns_deferred_total);
  }
  d.tag(7).u64(observers_.size());
  for (const Vec2& o : observers_) d.f64(o.x_m).f64(o.y_m);
  for (const ObserverView& v : observer_views_)
    d.f64(v.z_m).boolean(v.has_heading).f64(v.heading_rad);
  // The clients' observers (SetClientObservers). An empty set adds nothing, so
  // a run without client observers keeps the digests of earlier builds.
  if (!client_observers_.empty()) {
    d.tag(9).u64(client_observers_.size());
    for (std::size_t k = 0; k < client_observers_.size(); ++k) {
      const ObserverView& v = client_observer_views_[k];
      d.f64(client_observers_[k].x_m)
          .f64(client_observers_[k].y_m)
          .f64(v.z_m)
          .boolean(v.has_heading)
          .f64(v.heading_rad);
    }
  }
  digest_lifecycle_into(d);

  d.tag(6).u64(counters_.spawned_total).u64(counters_.despawned_total);
  for (std::size_t r = 0; r < kDespawnReasonCountBeforePrevention; ++r)
    d.u64(counters_.despawned_by_reason[r]);
  d.u64(counters_.spawn_failed_capacity)
      .u64(counters_.commands_accepted)
      .u64(counters_.commands_rejected);
  d.u64(counters_.faded_total).u64(counters_.fade_skipped_total);
  // Prevention adds terms only once used, so earlier runs keep their digests.
  if (!prevention_.unused()) digest_prevention_into(d);
  return d.value();
}

void World::digest_prevention_into(Digest& d) const {
  const PreventionState& p = prevention_;
  d.tag(14).u32(p.level).u64(p.next_handle).u64(p.units.size());
  for (const ResponseUnit& u : p.units) {
    d.u64(u.handle).u32(u.level).u32(static_cast<std::uint32_t>(u.state));
    d.u64(u.entity.packed()).u64(u.state_step);
  }
  for (const PreventionLevelCounts& c : p.per_level) {
    d.u64(c.queued).u64(c.spawned).u64(c.canceled).u64(c.despawned).u64(c.lost).u64(c.capped);
  }
  d.u32(p.deferred_last_step).u64(p.corpses.size());
  for (const CorpseRecord& c : p.corpses) d.u64(c.id.packed()).u64(c.death_step);
  d.u64(p.corpse.killed).u64(p.corpse.soft_deleted).u64(p.corpse.force_deleted);
  d.u64(p.corpse.pressure_deleted).u64(p.corpse.cleanup_passes);
  for (std::size_t r = kDespawnReasonCountBeforePrevention; r < kDespawnReasonCount; ++r)
    d.u64(counters_.despawned_by_reason[r]);
}

void World::digest_lifecycle_into(Digest& d) const {
  auto handle = [&](const SpawnHandleState& h) {
    d.u64(h.handle)
        .u32(static_cast<std::uint32_t>(h.state))
        .u32(static_cast<std::uint32_t>(h.failure));
    // h.origin is left out: it names the session to send SpawnUpdates to
    // (routing, kept in checkpoints), not simulation state; see compute_digest.
    d.u64(h.entity.packed());
    d.u64(static_cast<std::uint64_t>(h.zone))
        .u32(h.lane)
        .u32(static_cast<std::uint32_t>(h.priority));
    d.u64(h.requested_step).u64(h.deadline_step).u64(h.state_step).u32(h.route);
  };
  d.tag(40).u64(spawn_.next_handle).u64(spawn_.live.size());
  for (const SpawnHandleState& h : spawn_.live) handle(h);
  d.u64(spawn_.recent.size());
  for (const SpawnHandleState& h : spawn_.recent) handle(h);
  const SpawnCounters& c = spawn_.counters;
  d.u64(c.requested).u32(c.deferred_by_cap).u32(c.deferred_by_capacity).u32(c.deferred_by_zone);
  for (const std::uint64_t t : c.per_state_total) d.u64(t);
  // Only when something was displaced, so worlds without spawn pressure keep their digests.
  if (c.displaced_total != 0) d.tag(49).u64(c.displaced_total);
  d.tag(41).u64(orphans_.size());
  for (const OrphanRecord& o : orphans_) {
    d.u64(o.id.packed())
        .u32(static_cast<std::uint32_t>(o.reason))
        .u32(o.lane)
        .f64(o.s_m)
        .u32(o.resident);
    d.u64(o.release_step);
  }
  d.u64(retiring_fifo_.size());
  for (const EntityId id : retiring_fifo_) d.u64(id.packed());
  const RouteTableState& rt = routes_.state();
  d.tag(42).u64(rt.lanes.size()).u64(rt.count.size()).u64(rt.free_slots.size());
  for (const LaneIndex l : rt.lanes) d.u32(l);
  for (std::size_t k = 0; k < rt.count.size(); ++k)
    d.u32(rt.offset[k]).u32(rt.count[k]).u32(rt.target[k]);
  for (const std::uint32_t f : rt.free_slots) d.u32(f);
}

std::uint64_t World::pedestrian_row_hash(std::uint32_t slot) const {
  assert(slot < pedestrians_.size());
  // Every column but s_m (pedestrian_motion_hash) and the two derived from others:
  // phase (from the id; only its admission-mask bit is state) and resident (the
  // population maps the id to it, and its rows are digested there).
  Digest e;
  e.u64(pedestrians_.id[slot].packed());
  e.u64(std::uint64_t{pedestrians_.lane[slot]} << 32 |
        std::uint64_t{tier_index(pedestrians_.sim_tier[slot])} << 16 |
        std::uint64_t{pedestrians_.priority[slot]} << 8 | pedestrians_.origin[slot]);
  e.u64(pedestrians_.hops[slot]);
  if (pedestrians_.route[slot] != kNoRoute) e.u64(pedestrians_.route[slot]);
  // Only masked rows add a term, so an unmasked row hashes as it always did.
  if (pedestrians_.phase[slot] & PedestrianStore::kAdmissionMaskedBit)
    e.u64(0xAD31'5510'4A5C'0001ull);
  // Likewise only a row with a catch-up (sim_tier.hpp) adds one.
  if (const std::int8_t c = pedestrians_.catch_up_steps[slot]; c != 0)
    e.u64(0xCA7C'4000'0000'0000ull | static_cast<std::uint8_t>(c));
  return e.value();
}

std::uint64_t World::pedestrian_digest_sum_recount() const {
  std::uint64_t sum = 0;
  for (std::uint32_t slot = 0; slot < pedestrians_.size(); ++slot) {
    sum += pedestrian_row_hash(slot) +
           pedestrian_motion_hash(pedestrians_.id[slot], pedestrians_.s_m[slot]);
  }
  return sum;
}

}  // namespace bustle::core
