#include "json_output.hpp"

#include <algorithm>
#include <cinttypes>

namespace bustle::cli::json {
namespace {
namespace wire = bustle::wire;
}  // namespace

std::string hex(std::uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, value);
  return buf;
}

std::string ident(client::EntityId id) {
  return std::to_string(id.index) + ":" + std::to_string(id.generation);
}

Json stats(const client::StatsInfo& s) {
  return {{"step", s.step},
          {"sim_time_us", s.sim_time_us},
          {"step_us", s.step_us},
          {"clock_mode", wire::EnumNameClockMode(s.clock_mode)},
          {"paused", s.paused},
          {"pedestrians", s.pedestrians},
          {"pedestrian_target", s.pedestrian_target},
          {"entity_capacity", s.entity_capacity},
          {"clients", s.clients},
          {"spawned_total", s.spawned_total},
          {"despawned_total", s.despawned_total},
          {"commands_accepted", s.commands_accepted},
          {"commands_rejected", s.commands_rejected},
          {"dropped_steps", s.dropped_steps},
          {"recording", s.recording},
          {"recording_failed", s.recording_failed},
          {"recorded_ticks", s.recorded_ticks},
          {"vehicles", s.vehicles},
          {"vehicles_full", s.vehicles_full},
          {"vehicles_simulated", s.vehicles_simulated},
          {"vehicles_coarse", s.vehicles_coarse},
          {"vehicles_moving", s.vehicles_moving},
          {"vehicles_waiting", s.vehicles_waiting},
          {"vehicles_yielding", s.vehicles_yielding},
          {"tier_transitions_deferred", s.tier_transitions_deferred},
          {"hour", s.hour},
          {"time_scale", s.time_scale},
          {"residents", s.residents},
          {"residents_active", s.residents_active},
          {"leases_assigned", s.leases_assigned},
          {"leases_unassigned", s.leases_unassigned},
          {"leases_unassigned_past_grace", s.leases_unassigned_past_grace},
          {"leases_past_grace_by_reason", s.leases_past_grace_by_reason},
          {"leases_released_total", s.leases_released_total},
          {"leases_preserved_total", s.leases_preserved_total},
          {"lease_reports_total", s.lease_reports_total},
          {"spawn_awaiting_representation", s.spawn_awaiting_representation},
          {"spawn_attached_total", s.spawn_attached_total},
          {"spawn_ready_total", s.spawn_ready_total},
          {"client_observers", s.client_observers},
          {"client_observers_dropped", s.client_observers_dropped},
          {"step_time_window", s.step_time_window},
          {"step_time_p50_us", s.step_time_p50_us},
          {"step_time_p99_us", s.step_time_p99_us},
          {"step_time_max_us", s.step_time_max_us},
          {"step_time_bucket_le_us", s.step_time_bucket_le_us},
          {"step_time_bucket_counts", s.step_time_bucket_counts},
          {"steps_timed_total", s.steps_timed_total},
          {"digest", hex(s.digest)}};
}

Json job(const client::JobInfo& j) {
  return {{"job_id", j.job_id},   {"kind", wire::EnumNameJobKind(j.kind)},
          {"name", j.name},       {"state", wire::EnumNameJobState(j.state)},
          {"step", j.step},       {"terminal", j.terminal},
          {"failed", j.failed()}, {"message", j.message}};
}

Json snapshot(const client::SnapshotEntry& e) {
  return {{"name", e.name},
          {"kind", e.kind},
          {"scenario_id", e.scenario_id},
          {"step", e.step},
          {"sim_time_us", e.sim_time_us},
          {"pedestrians", e.pedestrians},
          {"digest", hex(e.digest)},
          {"created_unix_ms", e.created_unix_ms}};
}

Json garage(const client::GarageReport& g) {
  return {{"id", g.id},
          {"queued", g.queued},
          {"dispatched", g.dispatched},
          {"managed", g.managed},
          {"capacity", g.capacity},
          {"last_gate", wire::EnumNameDispatchGate(g.last_gate)},
          {"turnarounds", g.turnarounds},
          {"canceled", g.canceled},
          {"rejected_invalid", g.rejected_invalid},
          {"rejected_duplicate", g.rejected_duplicate},
          {"rejected_queue_full", g.rejected_queue_full},
          {"plan_total", g.plan_total},
          {"plan_injected", g.plan_injected}};
}

Json signal(const client::SignalReport& s) {
  return {{"id", s.id},
          {"lane", s.lane},
          {"phase", wire::EnumNameSignalPhase(s.phase)},
          {"phase_elapsed_us", s.phase_elapsed_us},
          {"cycles", s.cycles}};
}

Json zone(const client::ZoneReport& z) {
  return {{"id", z.id},
          {"target", z.target},
          {"active", z.active},
          {"dormant", z.dormant},
          {"pending_spawn", z.pending_spawn},
          {"pending_recycle", z.pending_recycle},
          {"deferred_by_quota", z.deferred_by_quota},
          {"rejected_by_capacity", z.rejected_by_capacity},
          {"capacity", z.capacity},
          {"retiring", z.retiring}};
}

Json vehicle(const client::VehicleReport& v) {
  return {{"id", ident(v.id)},
          {"vehicle_id", v.vehicle_id},
          {"garage", v.garage},
          {"request_id", v.request_id},
          {"prototype", v.prototype},
          {"route_index", v.route_index},
          {"lane", v.lane},
          {"s_m", v.s_m},
          {"alpha", v.alpha},
          {"x_m", v.x_m},
          {"y_m", v.y_m},
          {"speed_mps", v.speed_mps},
          {"strategy", wire::EnumNameVehicleStrategyState(v.strategy)},
          {"policy", client::to_string(v.policy)},
          {"reason", wire::EnumNamePolicyReason(v.reason)},
          {"tier", client::to_string(v.tier)},
          {"leader", v.has_leader() ? Json(ident(v.leader)) : Json(nullptr)},
          {"steps_advanced", v.steps_advanced},
          {"awaiting_turnaround", v.awaiting_turnaround},
          {"despawn_requested", v.despawn_requested}};
}

Json entity(const client::EntityReport& e) {
  const bool retiring = e.lifecycle == wire::LifecycleState::Retiring;
  return {{"id", ident(e.id)},
          {"kind", client::to_string(e.kind)},
          {"alive", e.alive},
          {"saveable", e.saveable},
          {"lifecycle", wire::EnumNameLifecycleState(e.lifecycle)},
          {"tier", client::to_string(e.tier)},
          {"forced_full", e.forced_full},
          {"representation", client::to_string(e.representation)},
          {"priority", wire::EnumNamePriorityClass(static_cast<wire::PriorityClass>(e.priority))},
          {"origin", wire::EnumNamePedestrianOrigin(e.origin)},
          {"community", e.community},
          {"zone", e.zone},
          {"work_point", e.work_point},
          {"work_slot", e.work_slot},
          {"lane", e.lane},
          {"s_m", e.s_m},
          {"x_m", e.x_m},
          {"y_m", e.y_m},
          {"effective_distance_m", e.effective_distance_m},
          {"spawn_handle", e.spawn_handle},
          {"spawn_state",
           e.spawn_handle != 0 ? Json(wire::EnumNameSpawnState(e.spawn_state)) : Json(nullptr)},
          {"retiring_reason", retiring ? Json(e.retiring_reason) : Json(nullptr)},
          {"release_step", retiring ? Json(e.release_step) : Json(nullptr)}};
}

Json population(const client::PopulationReport& p) {
  Json communities = Json::array();
  for (const auto& c : p.communities) {
    if (!c) continue;
    communities.push_back({{"id", c->id},
                           {"base_population", c->base_population},
                           {"target", c->target},
                           {"zone", c->zone},
                           {"active", c->active},
                           {"dormant", c->dormant},
                           {"saveable", c->saveable}});
  }
  Json spawn_states = Json::object();
  const std::size_t states = std::max(p.spawn_live.size(), p.spawn_totals.size());
  for (std::size_t i = 0; i < states; ++i) {
    spawn_states[wire::EnumNameSpawnState(static_cast<wire::SpawnState>(i))] = {
        {"live", i < p.spawn_live.size() ? p.spawn_live[i] : 0u},
        {"total", i < p.spawn_totals.size() ? p.spawn_totals[i] : std::uint64_t{0}}};
  }
  Json tiers = Json::object();
  for (std::size_t i = 0; i < p.tiers.size(); ++i) {
    tiers[wire::EnumNameSimTier(static_cast<wire::SimTier>(i))] = p.tiers[i];
  }
  return {{"hour", p.hour},
          {"time_scale", p.time_scale},
          {"lifecycle",
           {{"growth_quota", p.growth_quota},
            {"recycle_quota", p.recycle_quota},
            {"interval_ms", p.interval_ms},
            {"migration_budget", p.migration_budget}}},
          {"communities", communities},
          {"residents", p.residents},
          {"residents_active", p.residents_active},
          {"residents_retiring", p.residents_retiring},
          {"background", p.background},
          {"spawned", p.spawned},
          {"pedestrian_target", p.pedestrian_target},
          {"handoffs_pending", p.handoffs_pending},
          {"spawn_requested", p.spawn_requested},
          {"spawn_states", spawn_states},
          {"spawn_deferred_by_cap", p.spawn_deferred_by_cap},
          {"spawn_deferred_by_capacity", p.spawn_deferred_by_capacity},
          {"spawn_deferred_by_zone", p.spawn_deferred_by_zone},
          {"retiring", p.retiring},
          {"faded_total", p.faded_total},
          {"fade_skipped_total", p.fade_skipped_total},
          {"despawned_by_reason", p.despawned_by_reason},
          {"tiers", tiers},
          {"tier_promoted", p.tier_promoted},
          {"tier_demoted", p.tier_demoted},
          {"tier_deferred", p.tier_deferred},
          {"forced_full", p.forced_full},
          {"forced_overflow", p.forced_overflow},
          {"force_full_refused", p.force_full_refused},
          {"ledger",
           {{"fragments", p.ledger_fragments},
            {"deficit", p.ledger_deficit},
            {"surplus", p.ledger_surplus},
            {"max_deficit", p.ledger_max_deficit}}}};
}

Json spawn(const client::SpawnStatusInfo& s) {
  const bool any_lane = s.lane == client::SpawnStatusInfo::kNoLane;
  return {{"handle", s.handle},
          {"state", wire::EnumNameSpawnState(s.state)},
          {"failure", wire::EnumNameSpawnFailure(s.failure)},
          {"terminal", s.terminal},
          {"entity", s.entity == client::EntityId{} ? Json(nullptr) : Json(ident(s.entity))},
          {"zone", s.zone.empty() ? Json(nullptr) : Json(s.zone)},
          {"lane", any_lane ? Json(nullptr) : Json(s.lane)},
          {"priority", wire::EnumNamePriorityClass(static_cast<wire::PriorityClass>(s.priority))},
          {"requested_step", s.requested_step},
          {"state_step", s.state_step}};
}

void print(std::FILE* out, const Json& value) {
  const std::string text = value.dump();
  std::fprintf(out, "%s\n", text.c_str());
  std::fflush(out);
}

}  // namespace bustle::cli::json
