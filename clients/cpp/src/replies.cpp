#include "bustle/client/replies.hpp"

#include "wire_util.hpp"

namespace bustle::client {

namespace wire = bustle::wire;
using detail::str;
using detail::to_vector;

StatsInfo to_stats_info(const wire::Stats& s) {
  StatsInfo out;
  out.step = s.step();
  out.sim_time_us = s.sim_time_us();
  out.digest = s.digest();
  out.step_us = s.step_us();
  out.clock_mode = s.clock_mode();
  out.paused = s.paused();
  out.pedestrians = s.pedestrians();
  out.pedestrian_target = s.pedestrian_target();
  out.entity_capacity = s.entity_capacity();
  out.clients = s.clients();
  out.spawned_total = s.spawned_total();
  out.despawned_total = s.despawned_total();
  out.commands_accepted = s.commands_accepted();
  out.commands_rejected = s.commands_rejected();
  out.dropped_steps = s.dropped_steps();
  out.recording = s.recording();
  out.recording_failed = s.recording_failed();
  out.recorded_ticks = s.recorded_ticks();
  out.vehicles = s.vehicles();
  out.vehicles_full = s.vehicles_full();
  out.vehicles_simulated = s.vehicles_simulated();
  out.vehicles_coarse = s.vehicles_coarse();
  out.vehicles_moving = s.vehicles_moving();
  out.vehicles_waiting = s.vehicles_waiting();
  out.vehicles_yielding = s.vehicles_yielding();
  out.tier_transitions_deferred = s.tier_transitions_deferred();
  out.hour = s.hour();
  out.time_scale = s.time_scale();
  out.residents = s.residents();
  out.residents_active = s.residents_active();
  out.leases_assigned = s.leases_assigned();
  out.leases_unassigned = s.leases_unassigned();
  out.leases_unassigned_past_grace = s.leases_unassigned_past_grace();
  out.leases_past_grace_by_reason = to_vector(s.leases_past_grace_by_reason());
  out.leases_released_total = s.leases_released_total();
  out.leases_preserved_total = s.leases_preserved_total();
  out.lease_reports_total = s.lease_reports_total();
  out.spawn_awaiting_representation = s.spawn_awaiting_representation();
  out.spawn_attached_total = s.spawn_attached_total();
  out.spawn_ready_total = s.spawn_ready_total();
  out.client_observers = s.client_observers();
  out.client_observers_dropped = s.client_observers_dropped();
  return out;
}

GarageReport to_garage_report(const wire::GarageInfo& g) {
  GarageReport out;
  out.id = str(g.id());
  if (const auto* queued = g.queued()) {
    out.queued.reserve(queued->size());
    for (const flatbuffers::String* q : *queued) out.queued.push_back(str(q));
  }
  out.dispatched = g.dispatched();
  out.managed = g.managed();
  out.capacity = g.capacity();
  out.frame_index = g.frame_index();
  out.next_vehicle_ordinal = g.next_vehicle_ordinal();
  out.last_gate = g.last_gate();
  out.gate_steps = to_vector(g.gate_steps());
  out.turnarounds = g.turnarounds();
  out.rejected_invalid = g.rejected_invalid();
  out.rejected_duplicate = g.rejected_duplicate();
  out.rejected_queue_full = g.rejected_queue_full();
  out.canceled = g.canceled();
  out.plan_total = g.plan_total();
  out.plan_injected = g.plan_injected();
  return out;
}

SignalReport to_signal_report(const wire::SignalInfo& s) {
  SignalReport out;
  out.id = str(s.id());
  out.lane = s.lane();
  out.phase = s.phase();
  out.phase_elapsed_us = s.phase_elapsed_us();
  out.cycles = s.cycles();
  return out;
}

VehicleReport to_vehicle_report(const wire::VehicleInfo& v) {
  VehicleReport out;
  if (v.id() != nullptr) out.id = EntityId::from_wire(*v.id());
  out.vehicle_id = str(v.vehicle_id());
  out.garage = str(v.garage());
  out.request_id = str(v.request_id());
  out.prototype = str(v.prototype());
  out.route_index = v.route_index();
  out.lane = v.lane();
  out.s_m = v.s_m();
  out.alpha = v.alpha();
  out.x_m = v.x_m();
  out.y_m = v.y_m();
  out.speed_mps = v.speed_mps();
  out.strategy = v.strategy();
  out.policy = static_cast<ControlPolicy>(v.policy());
  out.reason = v.reason();
  out.tier = static_cast<SimTier>(v.tier());
  if (v.leader() != nullptr) out.leader = EntityId::from_wire(*v.leader());
  out.steps_advanced = v.steps_advanced();
  out.awaiting_turnaround = v.awaiting_turnaround();
  out.despawn_requested = v.despawn_requested();
  return out;
}

ZoneReport to_zone_report(const wire::ZoneInfo& z) {
  ZoneReport out;
  out.id = str(z.id());
  out.target = z.target();
  out.active = z.active();
  out.dormant = z.dormant();
  out.pending_spawn = z.pending_spawn();
  out.pending_recycle = z.pending_recycle();
  out.activated = z.activated();
  out.recycled = z.recycled();
  out.deferred_by_quota = z.deferred_by_quota();
  out.rejected_by_capacity = z.rejected_by_capacity();
  out.activated_total = z.activated_total();
  out.recycled_total = z.recycled_total();
  out.capacity = z.capacity();
  out.migrated_in = z.migrated_in();
  out.deferred_by_migration = z.deferred_by_migration();
  out.handoffs_started = z.handoffs_started();
  out.handoffs_accepted = z.handoffs_accepted();
  out.handoffs_returned = z.handoffs_returned();
  out.retiring = z.retiring();
  return out;
}

SpawnStatusInfo to_spawn_status(const wire::SpawnStatus& s) {
  SpawnStatusInfo out;
  out.handle = s.handle();
  out.state = s.state();
  out.failure = s.failure();
  out.terminal = s.terminal();
  if (s.entity() != nullptr) out.entity = EntityId::from_wire(*s.entity());
  out.zone = str(s.zone());
  out.lane = s.lane();
  out.priority = s.priority();
  out.requested_step = s.requested_step();
  out.state_step = s.state_step();
  return out;
}

EntityReport to_entity_report(const wire::EntityInfo& e) {
  EntityReport out;
  if (e.id() != nullptr) out.id = EntityId::from_wire(*e.id());
  out.alive = e.alive();
  out.kind = static_cast<EntityKind>(e.kind());
  out.lifecycle = e.lifecycle();
  out.tier = static_cast<SimTier>(e.tier());
  out.representation = static_cast<RepresentationHint>(e.representation());
  out.priority = e.priority();
  out.origin = e.origin();
  out.saveable = e.saveable();
  out.forced_full = e.forced_full();
  out.community = str(e.community());
  out.zone = str(e.zone());
  out.work_point = str(e.work_point());
  out.work_slot = e.work_slot();
  out.lane = e.lane();
  out.s_m = e.s_m();
  out.x_m = e.x_m();
  out.y_m = e.y_m();
  out.effective_distance_m = e.effective_distance_m();
  out.spawn_handle = e.spawn_handle();
  out.spawn_state = e.spawn_state();
  out.retiring_reason = e.retiring_reason();
  out.release_step = e.release_step();
  return out;
}

PopulationReport to_population_report(const wire::PopulationInfo& p) {
  PopulationReport out;
  out.hour = p.hour();
  out.time_scale = p.time_scale();
  out.growth_quota = p.growth_quota();
  out.recycle_quota = p.recycle_quota();
  out.interval_ms = p.interval_ms();
  out.migration_budget = p.migration_budget();
  if (const auto* list = p.communities()) {
    out.communities.reserve(list->size());
    for (const wire::CommunityInfo* c : *list) {
      out.communities.push_back(CommunityReport{str(c->id()), c->base_population(), c->target(), str(c->zone()),
                                                c->active(), c->dormant(), c->saveable()});
    }
  }
  out.residents = p.residents();
  out.residents_active = p.residents_active();
  out.residents_retiring = p.residents_retiring();
  out.background = p.background();
  out.spawned = p.spawned();
  out.pedestrian_target = p.pedestrian_target();
  out.handoffs_pending = p.handoffs_pending();
  out.spawn_live = to_vector(p.spawn_live());
  out.spawn_totals = to_vector(p.spawn_totals());
  out.spawn_requested = p.spawn_requested();
  out.spawn_deferred_by_cap = p.spawn_deferred_by_cap();
  out.spawn_deferred_by_capacity = p.spawn_deferred_by_capacity();
  out.spawn_deferred_by_zone = p.spawn_deferred_by_zone();
  out.retiring = p.retiring();
  out.faded_total = p.faded_total();
  out.fade_skipped_total = p.fade_skipped_total();
  out.despawned_by_reason = to_vector(p.despawned_by_reason());
  out.tiers = to_vector(p.tiers());
  out.tier_promoted = p.tier_promoted();
  out.tier_demoted = p.tier_demoted();
  out.tier_deferred = p.tier_deferred();
  out.forced_full = p.forced_full();
  out.forced_overflow = p.forced_overflow();
  out.force_full_refused = p.force_full_refused();
  out.ledger_fragments = p.ledger_fragments();
  out.ledger_deficit = p.ledger_deficit();
  out.ledger_surplus = p.ledger_surplus();
  out.ledger_max_deficit = p.ledger_max_deficit();
  return out;
}

JobInfo to_job_info(const wire::JobStatus& j) {
  JobInfo out;
  out.job_id = j.job_id();
  out.kind = j.kind();
  out.state = j.state();
  out.terminal = j.terminal();
  out.name = str(j.name());
  out.step = j.step();
  out.message = str(j.message());
  return out;
}

SnapshotEntry to_snapshot_entry(const wire::SnapshotInfo& i) {
  SnapshotEntry out;
  out.name = str(i.name());
  out.kind = str(i.kind());
  out.scenario_id = str(i.scenario_id());
  out.step = i.step();
  out.sim_time_us = i.sim_time_us();
  out.digest = i.digest();
  out.pedestrians = i.pedestrians();
  out.created_unix_ms = i.created_unix_ms();
  return out;
}

LeaseSummaryReport to_lease_summary(const wire::LeaseSummary& l) {
  LeaseSummaryReport out;
  out.requested = to_vector(l.requested());
  out.applied = to_vector(l.applied());
  out.waiting = l.waiting();
  out.waiting_past_grace = l.waiting_past_grace();
  out.past_grace_by_reason = to_vector(l.past_grace_by_reason());
  out.grace_steps = l.grace_steps();
  out.reports = l.reports();
  out.entries = l.entries();
  out.unknown_entries = l.unknown_entries();
  return out;
}

CommandReply to_command_reply(const wire::CommandResult& r) {
  CommandReply out;
  out.request_id = r.request_id();
  out.status = r.status();
  out.reason = r.reason();
  out.message = str(r.message());
  out.applied_step = r.applied_step();
  if (r.stats() != nullptr) out.stats = to_stats_info(*r.stats());
  if (r.job() != nullptr) out.job = to_job_info(*r.job());
  if (const auto* list = r.snapshots()) {
    std::vector<SnapshotEntry> entries;
    entries.reserve(list->size());
    for (const wire::SnapshotInfo* info : *list) entries.push_back(to_snapshot_entry(*info));
    out.snapshots = std::move(entries);
  }
  if (const auto* list = r.garages()) {
    std::vector<GarageReport> v;
    v.reserve(list->size());
    for (const wire::GarageInfo* g : *list) v.push_back(to_garage_report(*g));
    out.garages = std::move(v);
  }
  if (const auto* list = r.signals()) {
    std::vector<SignalReport> v;
    v.reserve(list->size());
    for (const wire::SignalInfo* g : *list) v.push_back(to_signal_report(*g));
    out.signals = std::move(v);
  }
  if (const auto* list = r.zones()) {
    std::vector<ZoneReport> v;
    v.reserve(list->size());
    for (const wire::ZoneInfo* z : *list) v.push_back(to_zone_report(*z));
    out.zones = std::move(v);
  }
  if (r.vehicle() != nullptr) out.vehicle = to_vehicle_report(*r.vehicle());
  out.handle = r.handle();
  if (r.entity() != nullptr) out.entity = EntityId::from_wire(*r.entity());
  out.batch = r.batch();
  out.handles = to_vector(r.handles());
  if (r.entity_info() != nullptr) out.entity_info = to_entity_report(*r.entity_info());
  if (r.population() != nullptr) out.population = to_population_report(*r.population());
  if (r.spawn() != nullptr) out.spawn = to_spawn_status(*r.spawn());
  if (r.leases() != nullptr) out.leases = to_lease_summary(*r.leases());
  return out;
}

}  // namespace bustle::client
