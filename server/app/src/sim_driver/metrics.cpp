// What the sim thread tells operations: telemetry samples for the metrics
// endpoint and health (publish_telemetry, at most once per sample interval)
// and the QueryStats reply with the step timing window.
#include "internal.hpp"
#include "sim_driver.hpp"

namespace bustle::app {

namespace {

// Stats' step timing fields from the telemetry's window (the same
// measurement the metrics histogram gets: SimDriver::step_once).
void fill_step_timing(const ops::StepTimingSummary& t, net::StatsSnapshot& s) {
  s.step_time_window = t.window;
  s.step_time_p50_us = t.p50_us;
  s.step_time_p99_us = t.p99_us;
  s.step_time_max_us = t.max_us;
  s.step_time_bucket_le_us = t.bucket_le_us;
  s.step_time_bucket_counts = t.bucket_counts;
  s.steps_timed_total = t.steps_total;
}

}  // namespace

void SimDriver::publish_telemetry(Clock::time_point now) {
  telemetry_->heartbeat(now);
  if (!telemetry_->sample_due(now)) return;
  ops::SimSample& s = telemetry_->sample_buffer();
  ops::sample_world(*world_, s);
  s.world_epoch = world_epoch_;
  s.paused = paused_;
  s.clock_mode = static_cast<std::uint8_t>(options_.clock);
  s.autosaves_skipped = autosaves_skipped_;
  s.frame_entities = frame_entities_;
  s.frame_coverage_discs = frame_coverage_discs_;
  const RepresentationStages::Budgets slots = stages_.budgets();
  s.attached_in_use = slots.attached_in_use;
  s.attached_limit = slots.attached_limit;
  s.unattached_in_use = slots.unattached_in_use;
  s.unattached_limit = slots.unattached_limit;
  if (recorder_ != nullptr) {
    const persist::RecorderStatus rs = recorder_->status();
    s.recording = rs.failed ? 2 : 1;
    s.recorded_ticks = rs.ticks_written;
  }
  telemetry_->publish_sample(now);
}

static_assert(net::kStepTimeWindowMax == ops::SimTelemetry::kStepTimingWindow);

net::StatsSnapshot SimDriver::stats(std::uint32_t step_time_window) const {
  net::StatsSnapshot s;
  s.step = world_->step_index();
  s.sim_time_us = world_->sim_time_us();
  s.digest = world_->digest();
  s.step_us = world_->step_us();
  s.clock_mode = static_cast<wire::ClockMode>(options_.clock);
  s.paused = paused_;
  s.pedestrians = world_->pedestrians().size();
  s.pedestrian_target = world_->pedestrian_target();
  s.entity_capacity = world_->registry().capacity();
  s.clients = server_.client_count();
  s.spawned_total = world_->counters().spawned_total;
  s.despawned_total = world_->counters().despawned_total;
  s.commands_accepted = world_->counters().commands_accepted;
  s.commands_rejected = world_->counters().commands_rejected;
  s.dropped_steps = dropped_steps_;
  const core::VehicleSystem& vs = world_->vehicles();
  s.vehicles = vs.store().size();
  const auto& per_tier = vs.sim_tier_counts();
  s.vehicles_full = per_tier[core::tier_index(core::SimTier::Full)];
  s.vehicles_simulated = per_tier[core::tier_index(core::SimTier::Simulated)];
  s.vehicles_coarse = per_tier[core::tier_index(core::SimTier::Coarse)];
  s.vehicles_moving = vs.last_step().moving;
  s.vehicles_waiting =
      vs.last_step().per_policy[static_cast<int>(core::ControlPolicy::WaitingAtSignal)];
  s.vehicles_yielding = vs.last_step().per_policy[static_cast<int>(core::ControlPolicy::Yielding)];
  s.tier_transitions_deferred = vs.last_tiers().deferred;
  s.hour = world_->population().hour();
  s.time_scale = world_->population().time_scale();
  s.residents = world_->population().residents().size();
  s.residents_active = world_->population().active_count();
  for (const core::SpawnHandleState& h : stages_.waiting()) {
    s.spawn_awaiting_representation += h.state == core::SpawnState::RepresentationRequested;
  }
  s.spawn_attached_total = stages_.counters().attached_total;
  s.spawn_ready_total = stages_.counters().ready_total;
  s.client_observers = static_cast<std::uint32_t>(world_->client_observers().size());
  s.client_observers_dropped = client_observers_dropped_;
  if (telemetry_ != nullptr)
    fill_step_timing(
        telemetry_->step_timing(step_time_window != 0 ? step_time_window
                                                      : ops::SimTelemetry::kStepTimingWindow),
        s);
  if (recorder_ != nullptr) {
    const persist::RecorderStatus rs = recorder_->status();
    s.recording = !rs.failed;
    s.recording_failed = rs.failed;
    s.recorded_ticks = rs.ticks_written;
  }
  return s;
}

}  // namespace bustle::app
