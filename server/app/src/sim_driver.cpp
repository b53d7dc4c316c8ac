// The sim thread's loop: commands in, steps on the clock, frames and
// answers out, snapshots and recordings handed to the persist worker
// (sim_driver.hpp).
#include "sim_driver.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <thread>

#include "bustle/net/client_text.hpp"

namespace bustle::app {

using Clock = std::chrono::steady_clock;
using Kind = net::ControlCommand::Kind;

// How long before a realtime tick the step's threads are woken: more than
// a sleeping thread's wake-up (about 0.1 ms on a virtual machine), less
// than their spin window (ThreadPhaseExecutor), so they are polling when
// the step begins.
constexpr std::chrono::microseconds kWakeThreadsAhead{300};

net::JobInfo to_job_info(const persist::JobStatus& job) {
  net::JobInfo j;
  j.job_id = job.job_id;
  j.kind = static_cast<wire::JobKind>(job.kind);
  j.state = static_cast<wire::JobState>(job.state);
  j.terminal = job.terminal;
  j.name = job.name;
  j.step = job.step;
  j.message = job.message;
  return j;
}

SimDriver::SimDriver(std::unique_ptr<core::World> world, net::Server& server,
                     net::CommandQueue& commands, SimDriverOptions options)
    : world_(std::move(world)),
      server_(server),
      commands_(commands),
      options_(options),
      clock_(std::chrono::microseconds(world_->step_us()), options.catchup_steps_max),
      archetypes_(net::make_archetypes(world_->scenario())) {
  const QualityBudgets& q = quality_budgets(options.quality);
  stages_.set_budgets(q.attached, q.unattached);
  // Clients that join before the first step get a baseline of the initial state.
  publish_frame();
}

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

// QueryZones: work-point k's anchor and which occupants stand at their slots.
void fill_work_point_anchor(const core::World& world, std::size_t k, wire::WorkPointInfoT& w) {
  core::LaneIndex lane = 0;
  double s_m = 0.0;
  if (!world.slot_anchor(k, 0, lane, s_m)) return;
  const core::WorkPointSpec& spec = world.scenario().work_points[k];
  w.anchor_lane = spec.anchor.lane;
  w.anchor_lane_index = static_cast<std::int32_t>(lane);
  w.anchor_s_m = s_m;
  const core::Vec2 p = world.lanes().position(lane, s_m);
  w.anchor_x_m = p.x_m;
  w.anchor_y_m = p.y_m;
  w.slot_spacing_m = spec.anchor.slot_spacing_m;
  const core::WorkPointState& wp = world.population().work_points()[k];
  w.arrived.assign(wp.occupant.size(), false);
  for (std::size_t s = 0; s < wp.occupant.size(); ++s) {
    const std::int32_t o = wp.occupant[s];
    if (o == core::ResidentStore::kNone) continue;
    w.arrived[s] = world.resident_at_anchor(static_cast<std::uint32_t>(o));
    w.arrived_count += w.arrived[s] ? 1 : 0;
  }
}
}  // namespace

core::Status check_world_invariants(const core::World& world) {
  const core::Status broken = world.check_invariants();
  if (broken.ok()) return {};
  spdlog::error("invariant broken after step {}: {}", world.step_index(), broken.message());
  return broken.within("invariant broken after step " + std::to_string(world.step_index()) + ": ");
}

void SimDriver::run(const std::atomic<bool>& stop) {
  // A broken invariant ends the run: no step runs on a world known to be wrong.
  while (!stop.load() && invariant_failure_.ok()) {
    if (telemetry_ != nullptr) publish_telemetry(Clock::now());
    apply_candidates();
    drain_commands();
    advance_rebuilt_loads();
    if (stop.load()) break;
    if (frame_without_entities_ && server_.subscriber_count() > 0) {
      // A client subscribed since the last frame, built without entities
      // while nobody was: publish this step's state in full for it now
      // (also when paused or in manual mode, where no step may come).
      stages_.awaiting(*world_, awaiting_);
      publish_frame();
    }

    if (options_.clock == net::ClockMode::Manual || paused_) {
      // Nothing runs until a command arrives (Step, Resume), a restore is
      // ready, or shutdown.
      commands_.wait_until(Clock::now() + std::chrono::milliseconds(200));
      continue;
    }
    if (options_.clock == net::ClockMode::Fast) {
      run_step();
      continue;
    }

    // Realtime: the fixed-step clock says how many steps are due now.
    const FixedStepClock::Due due = clock_.poll(Clock::now());
    if (due.dropped > 0) {
      dropped_steps_ += due.dropped;
      if (telemetry_ != nullptr) telemetry_->on_dropped(due.dropped);
      spdlog::warn("sim thread fell behind: dropped {} steps of wall-clock debt (total {})",
                   due.dropped, dropped_steps_);
    }
    if (due.steps == 0) {
      // The step's threads wake a little ahead of the tick (they sleep
      // between steps), so its first phase does not wait for their wake-up.
      const Clock::time_point wake_threads_at = due.wake_at - kWakeThreadsAhead;
      if (Clock::now() < wake_threads_at) {
        commands_.wait_until(wake_threads_at);
        continue;
      }
      if (core::PhaseExecutor* threads = world_->lent_phase_executor()) threads->prepare();
      commands_.wait_until(due.wake_at);
      continue;
    }
    for (std::uint64_t k = 0; k < due.steps && !stop.load() && invariant_failure_.ok(); ++k) {
      catching_up_ = k > 0;
      run_step();
      clock_.stepped();
    }
    catching_up_ = false;
  }
}

void SimDriver::offer_candidate(persist::PersistWorker::Candidate candidate) {
  {
    std::lock_guard lock(candidates_mu_);
    candidates_.push_back(std::move(candidate));
  }
  commands_.notify();
}

void SimDriver::apply_candidates() {
  std::vector<persist::PersistWorker::Candidate> ready;
  {
    std::lock_guard lock(candidates_mu_);
    ready.swap(candidates_);
  }
  for (auto& c : ready) {
    // Commands queued for the old world never apply; each still gets a result.
    for (const core::CommandEnvelope& env : world_->take_inbox()) {
      net::OutboundResult r;
      r.session_id = env.origin.client_id;
      r.request_id = env.origin.request_id;
      r.status = core::CommandStatus::Rejected;
      r.reason = core::RejectReason::WorldReplaced;
      r.message = "the world was replaced by " + std::string(persist::to_string(c.job.kind)) +
                  " '" + c.job.name + "' before this command applied";
      r.applied_step = world_->step_index();
      server_.deliver_result(std::move(r));
    }
    submitted_since_step_.clear();
    awaiting_result_.clear();
    spawn_sessions_.clear();
    const std::uint64_t from = world_->step_index();
    c.world->set_phase_executor(
        world_->lent_phase_executor());  // the same threads step the new world
    world_ = std::move(c.world);
    ++world_epoch_;
    restore_keyframe_due_ = recorder_ != nullptr;
    // Representation stages start over (clients get a baseline and re-report
    // leases); the restored client observers belonged to other sessions: the
    // current union replaces them before the next step.
    stages_.reset(*world_);
    world_client_observers_.clear();
    for (std::size_t k = 0; k < world_->client_observers().size(); ++k) {
      const core::ObserverView& v = world_->client_observer_views()[k];
      world_client_observers_.push_back({world_->client_observers()[k].x_m,
                                         world_->client_observers()[k].y_m, v.z_m, v.has_heading,
                                         v.heading_rad});
    }
    client_observers_dirty_ = true;
    stages_.awaiting(*world_, awaiting_);
    publish_frame();
    spdlog::info("world_replaced: {} '{}' applied: step {} -> {} (digest {:016x})",
                 persist::to_string(c.job.kind), c.job.name, from, world_->step_index(),
                 world_->digest());
    if (persist_ == nullptr) continue;
    if (c.job.kind == persist::JobKind::Restore) {
      persist_->advance(c.job, persist::JobState::Applied, c.origin, world_->step_index());
    } else {
      // Identities and persistent facts are in place...
      persist_->advance(c.job, persist::JobState::SnapshotApplied, c.origin, world_->step_index());
      // ...and so is the saved active set: World::load_save placed it in one
      // reconciling step (a save of schema < 4 has none; its lifecycle regrows
      // within the quotas).
      persist_->advance(c.job, persist::JobState::ScheduleReconciled, c.origin,
                        world_->step_index());
      // RepresentationRebuilt once every subscribed client has been sent its
      // baseline of this world (advance_rebuilt_loads).
      rebuilding_.push_back({c.job, c.origin, world_epoch_});
    }
  }
}

void SimDriver::advance_rebuilt_loads() {
  if (rebuilding_.empty() || persist_ == nullptr) return;
  if (server_.epoch_handed_out() < world_epoch_ || server_.baselines_owed() != 0) return;
  for (const RebuildingLoad& l : rebuilding_) {
    persist_->advance(l.job, persist::JobState::RepresentationRebuilt, l.origin,
                      world_->step_index());
  }
  rebuilding_.clear();
}

void SimDriver::drain_commands() {
  while (auto cmd = commands_.try_pop()) handle(std::move(*cmd));
}

void SimDriver::handle(net::InboundCommand cmd) {
  net::OutboundResult r;
  r.session_id = cmd.session_id;
  r.request_id = cmd.request_id;
  r.applied_step = world_->step_index();

  if (auto* world_cmd = std::get_if<core::WorldCommand>(&cmd.body)) {
    const core::CommandEnvelope env{core::CommandOrigin{cmd.session_id, cmd.request_id},
                                    *world_cmd};
    if (world_->submit(env) == core::SubmitStatus::Queued) {
      if (recorder_ != nullptr) submitted_since_step_.push_back(env);
      awaiting_result_.insert({cmd.session_id, cmd.request_id});
      return;  // answered after the next step
    }
    r.status = core::CommandStatus::Rejected;
    r.reason = core::RejectReason::InboxFull;
    r.message = "world command inbox is full";
    server_.deliver_result(std::move(r));
    return;
  }

  const auto& ctl = std::get<net::ControlCommand>(cmd.body);
  r.status = core::CommandStatus::Accepted;
  switch (ctl.kind) {
    case Kind::LeasesHeld:  // a notice: never answered
      leases_held(ctl.entities);
      return;
    case Kind::ClientObservers:  // a notice: never answered
      if (ctl.observers.empty()) {
        session_observers_.erase(cmd.session_id);
      } else {
        session_observers_[cmd.session_id] = ctl.observers;
      }
      client_observers_dirty_ = true;
      return;
    case Kind::ReportAttached:
      report_attached(ctl.entity, r);
      break;
    case Kind::Pause:
      paused_ = true;
      spdlog::info("paused at step {} by client {}", world_->step_index(), cmd.session_id);
      break;
    case Kind::Resume:
      if (paused_)
        spdlog::info("resumed at step {} by client {}", world_->step_index(), cmd.session_id);
      paused_ = false;
      clock_.request_resync();  // no catch-up burst for the time spent paused
      break;
    case Kind::Step:
      step_command(ctl, r);
      break;
    default:
      if (answer_query(ctl, r)) break;
      if (handle_snapshot_command(cmd, ctl, r)) return;  // answered by the persistence thread
      break;
  }
  server_.deliver_result(std::move(r));
}

void SimDriver::step_command(const net::ControlCommand& ctl, net::OutboundResult& r) {
  if (options_.clock != net::ClockMode::Manual) {
    r.status = core::CommandStatus::Rejected;
    r.reason = core::RejectReason::WrongClockMode;
    r.message = "Step is only valid with --clock manual";
    return;
  }
  if (ctl.step_count < 1 || ctl.step_count > options_.manual_step_max) {
    r.status = core::CommandStatus::Rejected;
    r.reason = core::RejectReason::InvalidArgument;
    r.message = "count must be in [1, " + std::to_string(options_.manual_step_max) + "]";
    return;
  }
  for (std::uint32_t k = 0; k < ctl.step_count && invariant_failure_.ok(); ++k) run_step();
  r.applied_step = world_->step_index();
}

bool SimDriver::answer_query(const net::ControlCommand& ctl, net::OutboundResult& r) {
  const auto not_alive = [&](const char* what) {
    r.status = core::CommandStatus::Rejected;
    r.reason = core::RejectReason::UnknownEntity;
    r.message = "entity " + core::id_text(ctl.entity) + what;
  };
  switch (ctl.kind) {
    case Kind::QueryStats:
      r.stats = stats();
      return true;
    case Kind::QueryGarages:
      r.garages = garage_reports();
      return true;
    case Kind::QuerySignals:
      r.signals = signal_reports();
      return true;
    case Kind::QueryZones: {
      std::vector<net::ZoneReport> zones;
      const core::PopulationSystem& pop = world_->population();
      const core::Scenario& sc = world_->scenario();
      for (std::size_t z = 0; z < pop.zones().size(); ++z) {
        zones.push_back({sc.zones[z].id, pop.zones()[z], sc.zones[z].capacity, {}});
        for (std::size_t k = 0; k < sc.work_points.size(); ++k) {
          if (sc.work_points[k].zone != sc.zones[z].id) continue;
          const core::WorkPointState& wp = pop.work_points()[k];
          wire::WorkPointInfoT w;
          w.id = sc.work_points[k].id;
          w.profession = sc.work_points[k].profession;
          w.slots = static_cast<std::uint32_t>(wp.occupant.size());
          w.occupied = static_cast<std::uint32_t>(
              std::count_if(wp.occupant.begin(), wp.occupant.end(),
                            [](std::int32_t o) { return o != core::ResidentStore::kNone; }));
          w.waiting = static_cast<std::uint32_t>(wp.waiting.size());
          fill_work_point_anchor(*world_, k, w);
          zones.back().work_points.push_back(std::move(w));
        }
      }
      r.zones = std::move(zones);
      return true;
    }
    case Kind::QueryEntity:
      r.entity_info = entity_info(ctl.entity);
      // Still answered with the report (lifecycle Gone), so the client sees why.
      if (!r.entity_info->report.alive) not_alive(" is not alive (stale or never issued)");
      return true;
    case Kind::QueryPopulation:
      r.population = population_report();
      return true;
    case Kind::QuerySpawn:
      if (const auto h = find_handle(ctl.spawn_handle)) {
        r.spawn = spawn_report(*h);
      } else {
        r.status = core::CommandStatus::Rejected;
        r.reason = core::RejectReason::NotFound;
        r.message = "no spawn handle " + std::to_string(ctl.spawn_handle) +
                    " (never issued, or older than the last " +
                    std::to_string(core::kSpawnHistory) + " finished handles)";
      }
      return true;
    case Kind::QueryVehicle:
      if (auto v = vehicle_report(ctl.entity)) {
        r.vehicle = std::move(*v);
      } else if (std::string mouth = world_->vehicles().mouth_text(ctl.entity); !mouth.empty()) {
        // Dispatched but on no lane yet: QueryGarages lists it in its garage's mouth.
        r.status = core::CommandStatus::Rejected;
        r.reason = core::RejectReason::InvalidArgument;
        r.message = "entity " + core::id_text(ctl.entity) + " is " + mouth +
                    " (QueryGarages lists the mouth)";
      } else {
        not_alive(" is not a vehicle");
      }
      return true;
    default:
      return false;
  }
}

bool SimDriver::handle_snapshot_command(const net::InboundCommand& cmd,
                                        const net::ControlCommand& ctl, net::OutboundResult& r) {
  auto reject = [&](core::RejectReason reason, std::string message) {
    r.status = core::CommandStatus::Rejected;
    r.reason = reason;
    r.message = std::move(message);
    return false;
  };
  if (persist_ == nullptr)
    return reject(core::RejectReason::StorageError, "snapshots are disabled on this server");
  const persist::JobOrigin origin{cmd.session_id, cmd.request_id};
  const bool named = ctl.kind == Kind::Checkpoint || ctl.kind == Kind::Restore ||
                     ctl.kind == Kind::Save || ctl.kind == Kind::Load ||
                     ctl.kind == Kind::DeleteSnapshot;
  if (named) {
    if (core::Status why = persist::validate_snapshot_name(ctl.name); !why.ok()) {
      return reject(core::RejectReason::InvalidArgument,
                    "snapshot name " + net::client_text(ctl.name) + ": " + why.message());
    }
  }
  std::optional<persist::JobStatus> job;
  switch (ctl.kind) {
    case Kind::Checkpoint:
      // The copy happens here, between steps; the worker commits it.
      job = persist_->submit_checkpoint(ctl.name, persist::JobKind::Checkpoint, capture(), origin);
      break;
    case Kind::Save:
      job = persist_->submit_save(ctl.name, world_->capture_save(), origin);
      break;
    case Kind::Restore:
      job = persist_->submit_restore(ctl.name, origin);
      break;
    case Kind::Load:
      job = persist_->submit_load(ctl.name, origin);
      break;
    case Kind::ListSnapshots:
      persist_->submit_list(origin);
      return true;
    case Kind::DeleteSnapshot:
      persist_->submit_delete(ctl.name, origin);
      return true;
    case Kind::QueryJob:
      job = persist_->query(ctl.job_id);
      if (!job) return reject(core::RejectReason::NotFound, "no job " + std::to_string(ctl.job_id));
      break;
    default:
      return reject(core::RejectReason::UnknownCommand, "unknown control command");
  }
  r.job = to_job_info(*job);
  if (job->state == persist::JobState::Failed && ctl.kind != Kind::QueryJob) {
    reject(core::RejectReason::StorageError, job->message);
  }
  return false;
}

void SimDriver::publish_telemetry(Clock::time_point now) {
  telemetry_->heartbeat(now);
  if (!telemetry_->sample_due(now)) return;
  ops::SimSample& s = telemetry_->sample_buffer();
  ops::sample_world(*world_, s);
  s.world_epoch = world_epoch_;
  s.paused = paused_;
  s.clock_mode = static_cast<std::uint8_t>(options_.clock);
  s.autosaves_skipped = autosaves_skipped_;
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

void SimDriver::publish_frame() {
  // Nobody subscribed: nobody reads the entities, whose build is most of a
  // large city's step (a pose for every entity).
  const bool with_entities = server_.subscriber_count() > 0;
  server_.publish(frames_.make(*world_, archetypes_, world_epoch_, awaiting_, with_entities));
  frame_without_entities_ = !with_entities;
}

void SimDriver::run_step() {
  submit_client_observers();
  const auto started = Clock::now();
  const std::uint64_t tick = tick_ + 1;
  if (recorder_ != nullptr) {
    // Keyframes are the state just before this tick's step, queued commands included.
    if (const auto reason =
            persist::keyframe_due(tick, restore_keyframe_due_, options_.record_keyframe_steps)) {
      recorder_->record_keyframe(tick, *reason, world_->capture());
    }
  }
  restore_keyframe_due_ = false;

  world_->step();
  tick_ = tick;
  if (options_.check_invariants) invariant_failure_ = check_world_invariants(*world_);
  stage_changes_.clear();
  stages_.after_step(*world_, stage_changes_);
  stages_.awaiting(*world_, awaiting_);
  publish_frame();
  deliver_step_results();
  deliver_spawn_events();
  for (const core::SpawnHandleState& h : stage_changes_) deliver_stage_update(h);
  prune_spawn_sessions();
  if (recorder_ != nullptr) {
    recorder_->record_tick(persist::RecordedTick{tick, world_->step_index(), world_->digest(),
                                                 std::move(submitted_since_step_)});
    submitted_since_step_.clear();
  }
  if (persist_ != nullptr && options_.autosave_steps > 0 &&
      world_->step_index() % options_.autosave_steps == 0) {
    // One autosave in flight at a time: a store slower than the interval skips
    // (and counts) autosaves instead of flooding the persistence queue.
    const auto previous = autosave_job_ != 0 ? persist_->query(autosave_job_) : std::nullopt;
    if (previous && !previous->terminal) {
      ++autosaves_skipped_;
    } else {
      autosave_job_ = persist_
                          ->submit_checkpoint("autosave", persist::JobKind::Autosave, capture(),
                                              persist::JobOrigin{})
                          .job_id;
    }
  }
  if (telemetry_ != nullptr) {
    const auto finished = Clock::now();
    telemetry_->on_step(finished - started, catching_up_);
    telemetry_->heartbeat(finished);
  }
  if (options_.debug_stall_ms > 0 && world_->step_index() == options_.debug_stall_at_step) {
    spdlog::warn("debug_stall: sim thread sleeps {} ms after step {} (--debug-stall-at-step)",
                 options_.debug_stall_ms, world_->step_index());
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.debug_stall_ms));
  }
}

void SimDriver::deliver_step_results() {
  for (const core::CommandResult& cr : world_->last_command_results()) {
    // Only commands submitted to this world by a live client are answered: a
    // restored checkpoint's queued commands were sent by sessions of another
    // world (or process) and were answered, or rejected, there.
    if (awaiting_result_.erase({cr.origin.client_id, cr.origin.request_id}) == 0) continue;
    net::OutboundResult r;
    r.session_id = cr.origin.client_id;
    r.request_id = cr.origin.request_id;
    r.status = cr.status;
    r.reason = cr.reason;
    r.message = cr.message;
    r.applied_step = cr.step;
    r.handle = cr.handle;
    r.entity = cr.entity;
    r.batch = cr.batch;
    r.handles = cr.handles;
    r.enqueue_ordinal = cr.enqueue_ordinal;
    // Results come before this step's spawn events, so a handle's first
    // states (Queued, IdentityCreated in the same step) are routed too. The
    // first result naming a handle is its spawn request's; later ones
    // (ReportAttached from a viewer) do not take its updates away.
    if (cr.handle != 0) spawn_sessions_.try_emplace(cr.handle, r.session_id);
    for (const std::uint64_t h : cr.handles) spawn_sessions_.try_emplace(h, r.session_id);
    server_.deliver_result(std::move(r));
  }
}

void SimDriver::deliver_spawn_events() {
  for (const core::SpawnEvent& ev : world_->spawn_events()) {
    const auto it = spawn_sessions_.find(ev.handle);
    if (it == spawn_sessions_.end() || it->second != ev.origin.client_id) continue;
    // The event says which state this update is about (a handle can pass
    // several states in one step); the handle adds what does not change.
    core::SpawnHandleState h;
    if (const auto found = world_->find_spawn(ev.handle)) h = *found;
    const bool current = h.handle == ev.handle && h.state == ev.state;
    h.handle = ev.handle;
    h.state = ev.state;
    h.failure = ev.failure;
    h.entity = ev.entity;
    h.origin = ev.origin;
    if (!current) h.state_step = world_->step_index();
    server_.deliver_spawn_update(ev.origin.client_id, spawn_report(h));
    if (core::is_terminal(ev.state)) spawn_sessions_.erase(it);
  }
}

void SimDriver::prune_spawn_sessions() {
  // A result can name a handle that already ended (no event will erase it):
  // keep only handles that have not ended on any axis, so the map stays
  // bounded by spawn.queue_depth plus the handles awaiting a representation.
  if (spawn_sessions_.size() > world_->spawn_pipeline().live.size() + stages_.waiting().size()) {
    std::erase_if(spawn_sessions_, [&](const auto& entry) {
      const auto found = find_handle(entry.first);
      return !found || core::is_terminal(found->state);
    });
  }
}

void SimDriver::deliver_stage_update(const core::SpawnHandleState& h) {
  const auto it = spawn_sessions_.find(h.handle);
  if (it == spawn_sessions_.end() || it->second != h.origin.client_id) return;
  server_.deliver_spawn_update(h.origin.client_id, spawn_report(h));
  if (core::is_terminal(h.state)) spawn_sessions_.erase(it);
}

std::optional<core::SpawnHandleState> SimDriver::find_handle(std::uint64_t handle) const {
  if (auto h = stages_.find(handle)) return h;
  return world_->find_spawn(handle);
}

void SimDriver::report_attached(core::EntityId id, net::OutboundResult& r) {
  core::SpawnHandleState h;
  const std::string name = "entity " + core::id_text(id);
  switch (stages_.attach(*world_, id, false, &h)) {
    case RepresentationStages::Attach::Attached:
      r.handle = h.handle;
      deliver_stage_update(h);
      return;
    case RepresentationStages::Attach::Unattached: {
      const RepresentationStages::Budgets b = stages_.budgets();
      r.handle = h.handle;
      r.message = "spawn " + std::to_string(h.handle) +
                  " waits in an unattached slot: attached budget full (" +
                  std::to_string(b.attached_in_use) + "/" + std::to_string(b.attached_limit) + ")";
      return;
    }
    case RepresentationStages::Attach::NoSlot: {
      const RepresentationStages::Budgets b = stages_.budgets();
      r.handle = h.handle;
      r.status = core::CommandStatus::Rejected;
      r.reason = core::RejectReason::QueueFull;
      r.message = "spawn " + std::to_string(h.handle) +
                  " failed (no_representation_slot): " + "attached budget full (" +
                  std::to_string(b.attached_in_use) + "/" + std::to_string(b.attached_limit) +
                  ") and unattached budget full (" + std::to_string(b.unattached_in_use) + "/" +
                  std::to_string(b.unattached_limit) + ")";
      deliver_stage_update(h);
      return;
    }
    case RepresentationStages::Attach::AlreadyAttached:
      r.handle = stages_.waiting_for(id)->handle;
      r.status = core::CommandStatus::Rejected;
      r.reason = core::RejectReason::InvalidArgument;
      r.message =
          "spawn " + std::to_string(r.handle) + " is attached, not representation_requested";
      return;
    case RepresentationStages::Attach::NotRequested:
    case RepresentationStages::Attach::Remembered:
      r.status = core::CommandStatus::Rejected;
      r.reason = core::RejectReason::InvalidArgument;
      r.message = name + ": its spawn is registered, not yet representation_requested";
      return;
    case RepresentationStages::Attach::NoHandle:
      r.status = core::CommandStatus::Rejected;
      r.reason = core::RejectReason::UnknownEntity;
      r.message = name + " has no spawn handle waiting for a representation";
      return;
  }
}

void SimDriver::leases_held(const std::vector<core::EntityId>& ids) {
  for (const core::EntityId id : ids) {
    core::SpawnHandleState h;
    const RepresentationStages::Attach a = stages_.attach(*world_, id, true, &h);
    if (a == RepresentationStages::Attach::Attached || a == RepresentationStages::Attach::NoSlot)
      deliver_stage_update(h);
  }
}

void SimDriver::submit_client_observers() {
  if (!client_observers_dirty_) return;
  std::vector<core::ObserverPoint> all;
  std::uint32_t dropped = 0;
  for (const auto& [session, points] : session_observers_) {  // by session id: older sessions first
    for (const core::ObserverPoint& p : points) {
      if (all.size() < core::kClientObserversMax) {
        all.push_back(p);
      } else {
        ++dropped;
      }
    }
  }
  client_observers_dropped_ = dropped;
  if (all == world_client_observers_) {
    client_observers_dirty_ = false;
    return;
  }
  const core::CommandEnvelope env{core::CommandOrigin{}, core::SetClientObservers{all}};
  if (world_->submit(env) != core::SubmitStatus::Queued)
    return;  // inbox full: retried before the next step
  if (recorder_ != nullptr) submitted_since_step_.push_back(env);
  world_client_observers_ = std::move(all);
  client_observers_dirty_ = false;
}

net::SpawnReport SimDriver::spawn_report(const core::SpawnHandleState& handle) const {
  net::SpawnReport r;
  r.handle = handle;
  const auto& zones = world_->scenario().zones;
  if (handle.zone >= 0 && static_cast<std::size_t>(handle.zone) < zones.size())
    r.zone = zones[handle.zone].id;
  return r;
}

net::EntityInfoReport SimDriver::entity_info(core::EntityId id) const {
  net::EntityInfoReport r;
  r.report = world_->describe(id);
  if (r.report.spawn_handle != 0) {
    if (const auto h = stages_.find(r.report.spawn_handle)) r.report.spawn_state = h->state;
  }
  const core::Scenario& sc = world_->scenario();
  const auto id_of = [](const auto& specs, std::int32_t i) {
    return i >= 0 && static_cast<std::size_t>(i) < specs.size() ? specs[i].id : std::string();
  };
  r.community = id_of(sc.communities, r.report.community);
  r.zone = id_of(sc.zones, r.report.zone);
  r.work_point = id_of(sc.work_points, r.report.work_point);
  r.last_portal = id_of(sc.zones, r.report.last_portal);
  if (r.report.resident >= 0) {
    static constexpr const char* kPhases[] = {"Home", "CommuteToWork", "Work", "Leisure",
                                              "CommuteHome"};
    const auto res = static_cast<std::size_t>(r.report.resident);
    const core::ResidentStore& rs = world_->population().residents();
    const core::CommunitySpec& cs = sc.communities[rs.community[res]];
    r.profession = cs.professions[rs.profession[res]];
    const int e = core::schedule_entry_at(cs.schedule, world_->population().hour());
    if (e >= 0) {
      const core::ScheduleEntry& entry = cs.schedule[static_cast<std::size_t>(e)];
      r.schedule_phase = kPhases[static_cast<std::size_t>(entry.phase)];
      r.activity = entry.activity;
    }
  }
  return r;
}

net::PopulationReport SimDriver::population_report() const {
  const core::World& w = *world_;
  const core::PopulationSystem& pop = w.population();
  const core::Scenario& sc = w.scenario();
  net::PopulationReport p;
  p.hour = pop.hour();
  p.time_scale = pop.time_scale();
  p.settings = pop.settings();
  for (std::uint32_t c = 0; c < sc.communities.size(); ++c) {
    const core::CommunitySpec& spec = sc.communities[c];
    net::CommunityReport cr;
    cr.id = spec.id;
    cr.base_population = spec.base_population;
    cr.target = pop.community_target(c);
    const std::int64_t zone = pop.community_zone(c);
    if (zone >= 0 && static_cast<std::size_t>(zone) < sc.zones.size()) cr.zone = sc.zones[zone].id;
    for (std::uint32_t z = 0; z < pop.zones().size(); ++z) cr.active += pop.active_in(c, z);
    cr.dormant = spec.base_population > cr.active ? spec.base_population - cr.active : 0;
    cr.saveable = spec.saveable;
    p.communities.push_back(std::move(cr));
  }
  p.residents = pop.residents().size();
  p.residents_active = pop.active_count();
  p.residents_retiring = pop.retiring_count();
  p.background = w.background_pedestrians();
  for (const std::uint8_t origin : w.pedestrians().origin) {
    if (origin == static_cast<std::uint8_t>(core::PedestrianOrigin::Spawned)) ++p.spawned;
  }
  p.pedestrian_target = w.pedestrian_target();
  p.handoffs_pending = static_cast<std::uint32_t>(pop.handoffs().size());
  for (const core::SpawnHandleState& h : w.spawn_pipeline().live)
    ++p.spawn_live[static_cast<std::size_t>(h.state)];
  for (const core::SpawnHandleState& h : stages_.waiting())
    ++p.spawn_live[static_cast<std::size_t>(h.state)];
  p.spawn = w.spawn_pipeline().counters;
  // The representation axis adds its entries (counted by this process since
  // it started; the core's part ended at RepresentationRequested).
  const RepresentationStages::Counters& rc = stages_.counters();
  p.spawn.per_state_total[static_cast<std::size_t>(core::SpawnState::Attached)] +=
      rc.attached_total;
  p.spawn.per_state_total[static_cast<std::size_t>(core::SpawnState::ReadyForGameplay)] +=
      rc.ready_total;
  p.spawn.per_state_total[static_cast<std::size_t>(core::SpawnState::Failed)] += rc.failed_total;
  const RepresentationStages::Budgets budgets = stages_.budgets();
  p.quality = std::string(quality_budgets(options_.quality).name);
  p.attached_in_use = budgets.attached_in_use;
  p.attached_limit = budgets.attached_limit;
  p.unattached_in_use = budgets.unattached_in_use;
  p.unattached_limit = budgets.unattached_limit;
  p.no_slot_total = rc.no_slot_total;
  p.retiring = static_cast<std::uint32_t>(w.orphans().size());
  const core::WorldCounters& counters = w.counters();
  p.faded_total = counters.faded_total;
  p.fade_skipped_total = counters.fade_skipped_total;
  std::copy(std::begin(counters.despawned_by_reason), std::end(counters.despawned_by_reason),
            p.despawned_by_reason.begin());
  p.tiers = w.pedestrian_tiers();
  p.force_full_refused = w.force_full_refused();
  p.admission_masked = static_cast<std::uint32_t>(w.admission_masked().size());
  p.prevention = w.prevention();
  for (const core::LaneIndex l : w.closed_lanes()) {
    p.closed_lanes.push_back(w.lanes().lane(l).id);
    p.closed_lane_indices.push_back(l);
  }
  p.lane_waiting_pedestrians = static_cast<std::uint32_t>(w.lane_waiters().size());
  p.lane_waiting_vehicles = w.vehicles().held_at_closures();
  p.lane_closure = w.lane_closure_counters();
  p.observers = w.observers();
  p.followed = w.followed();
  p.follow_first_vehicle = w.follow_first_vehicle_pending();
  p.ledger = w.ledger_summary();
  return p;
}

std::vector<net::GarageReport> SimDriver::garage_reports() const {
  const core::VehicleSystem& vs = world_->vehicles();
  std::vector<net::GarageReport> out;
  for (std::uint32_t g = 0; g < vs.garages().size(); ++g) {
    const core::GarageState& gs = vs.garages()[g];
    const core::GarageSpec& spec = world_->scenario().garages[g];
    net::GarageReport r;
    r.id = spec.id;
    for (const core::QueuedRequest& q : gs.queue) {
      r.queued.push_back(q.request_id);
      auto entry = std::make_unique<wire::QueuedRequestInfoT>();
      entry->request_id = q.request_id;
      entry->prototype = spec.prototypes[q.prototype];
      entry->priority = q.priority;
      entry->enqueue_ordinal = q.enqueue_ordinal;
      r.queue.push_back(std::move(entry));
    }
    r.dispatched_ids = gs.dispatched;
    r.next_enqueue_ordinal = gs.next_enqueue_ordinal;
    r.mouth_capacity = spec.mouth_capacity;
    for (const core::MouthVehicle& m : gs.mouth) {
      auto entry = std::make_unique<wire::MouthVehicleInfoT>();
      entry->id = wire::EntityId(m.id.index, m.id.generation);
      entry->vehicle_id = core::format_vehicle_id(spec.vehicle_id_format, spec.id,
                                                  world_->scenario().id, m.ordinal);
      entry->request_id = m.request_id;
      entry->prototype = spec.prototypes[m.prototype];
      r.mouth.push_back(std::move(entry));
    }
    r.dispatched = static_cast<std::uint32_t>(gs.dispatched.size());
    r.managed = vs.managed(g);
    r.capacity = spec.capacity;
    r.frame_index = gs.frame_index;
    r.next_vehicle_ordinal = gs.next_vehicle_ordinal;
    r.last_gate = static_cast<wire::DispatchGate>(gs.last_gate);
    r.gate_steps.assign(gs.gate_steps.begin(), gs.gate_steps.end());
    r.turnarounds = gs.turnarounds;
    r.rejected_invalid = gs.rejected_invalid;
    r.rejected_duplicate = gs.rejected_duplicate;
    r.rejected_queue_full = gs.rejected_queue_full;
    r.canceled = gs.canceled;
    r.plan_total = static_cast<std::uint32_t>(world_->scenario().vehicle_plan.requests.size());
    r.plan_injected = vs.plan().cursor;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<net::SignalReport> SimDriver::signal_reports() const {
  const core::VehicleSystem& vs = world_->vehicles();
  std::vector<net::SignalReport> out;
  for (std::size_t i = 0; i < vs.signals().size(); ++i) {
    const core::SignalSpec& spec = world_->scenario().signals[i];
    std::uint32_t lane = 0;
    for (std::uint32_t l = 0; l < world_->lanes().size(); ++l) {
      if (world_->lanes().lane(l).id == spec.lane) lane = l;
    }
    const core::SignalState& st = vs.signals()[i];
    net::SignalReport r;
    r.id = spec.id;
    r.lane = lane;
    r.phase = static_cast<wire::SignalPhase>(st.phase);
    r.phase_elapsed_us = st.phase_elapsed_us;
    r.cycles = st.cycles;
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<net::VehicleReport> SimDriver::vehicle_report(core::EntityId id) const {
  const core::VehicleSystem& vs = world_->vehicles();
  if (!vs.is_vehicle(id)) return std::nullopt;
  const core::VehicleStore& v = vs.store();
  const std::uint32_t i = v.dense_of[id.index];
  const core::GarageSpec& spec = world_->scenario().garages[v.garage[i]];
  const core::Pose p = vs.pose(i);
  net::VehicleReport r;
  r.id = wire::EntityId(id.index, id.generation);
  r.vehicle_id = vs.vehicle_id(i);
  r.garage = spec.id;
  r.request_id = v.request_id[i];
  r.prototype = spec.prototypes[v.prototype[i]];
  r.route_index = v.route_index[i];
  r.lane = v.lane[i];
  r.s_m = v.s_m[i];
  r.alpha = v.s_m[i] / world_->lanes().lane(v.lane[i]).length_m;
  r.x_m = p.x_m;
  r.y_m = p.y_m;
  r.speed_mps = v.speed_mps[i];
  r.strategy = static_cast<wire::VehicleStrategyState>(v.strategy[i]);
  r.policy = static_cast<wire::ControlPolicy>(v.control_policy[i]);
  r.reason = static_cast<wire::PolicyReason>(v.reason[i]);
  r.tier = static_cast<wire::SimTier>(v.sim_tier[i]);
  r.leader = wire::EntityId(v.leader[i].index, v.leader[i].generation);
  r.steps_advanced = v.steps_advanced[i];
  r.awaiting_turnaround = v.waiting_since[i] != 0;
  r.despawn_requested = v.despawn_requested[i] != 0;
  return r;
}

std::unique_ptr<core::WorldCheckpoint> SimDriver::capture() const {
  auto cp = persist_->take_spare_checkpoint();
  world_->capture_into(*cp);
  return cp;
}

net::StatsSnapshot SimDriver::stats() const {
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
    fill_step_timing(telemetry_->step_timing(ops::SimTelemetry::kStepTimingWindow), s);
  if (recorder_ != nullptr) {
    const persist::RecorderStatus rs = recorder_->status();
    s.recording = !rs.failed;
    s.recording_failed = rs.failed;
    s.recorded_ticks = rs.ticks_written;
  }
  return s;
}

}  // namespace bustle::app
