// The sim thread's loop (SimDriver::run): each wake applies restored or
// loaded worlds, drains the commands, then runs the steps the clock mode
// says are due (manual: none; fast: one; realtime: what the fixed-step clock
// owes, waking the step's threads just ahead of the tick). run_step() is one
// step and everything that hangs off it in order: the keyframe before it, the
// optional invariant check, representation stages, the frame, the results
// and spawn events, the recorded tick, the autosave and the step's timing.
#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "internal.hpp"
#include "sim_driver.hpp"

namespace bustle::app {

// How long before a realtime tick the step's threads are woken: more than
// a sleeping thread's wake-up (about 0.1 ms on a virtual machine), less
// than their spin window (ThreadPhaseExecutor), so they are polling when
// the step begins.
constexpr std::chrono::microseconds kWakeThreadsAhead{300};

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

core::Status check_world_invariants(const core::World& world) {
  const core::Status broken = world.check_invariants();
  if (broken.ok()) return {};
  spdlog::error("invariant broken after step {}: {}", world.step_index(), broken.message());
  return broken.within("invariant broken after step " + std::to_string(world.step_index()) + ": ");
}

void SimDriver::run(const std::atomic<bool>& stop) {
  // A broken invariant ends the run: no step runs on a world known to be
  // wrong; so do a district's failed links (its neighbours' steps are missing).
  stop_ = &stop;
  while (!stop.load() && invariant_failure_.ok() && district_failure_.ok()) {
    if (telemetry_ != nullptr) publish_telemetry(Clock::now());
    apply_candidates();
    drain_commands();
    advance_rebuilt_loads();
    if (stop.load()) break;
    const bool idle = options_.clock == net::ClockMode::Manual || paused_;
    if ((frame_without_entities_ && server_.subscriber_count() > 0) ||
        (idle && server_.interest_coverage().version() != published_coverage_version_)) {
      // A client subscribed since the last frame, built without entities
      // while nobody was: publish this step's state in full for it now
      // (also when paused or in manual mode, where no step may come). The
      // same while no step comes for a client whose new interest the last
      // frame's coverage may not hold; a running clock's next frame does.
      stages_.awaiting(*world_, awaiting_);
      publish_frame();
    }

    if (idle) {
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
    for (std::uint64_t k = 0;
         k < due.steps && !stop.load() && invariant_failure_.ok() && district_failure_.ok(); ++k) {
      catching_up_ = k > 0;
      run_step();
      clock_.stepped();
    }
    catching_up_ = false;
  }
}

void SimDriver::publish_frame() {
  // Nobody subscribed: nobody reads the entities, whose build is most of a
  // large city's step (a pose for every entity).
  // Otherwise only what some client may read (the sessions' coverage).
  const bool with_entities = server_.subscriber_count() > 0;
  const net::Coverage coverage = server_.interest_coverage().current(&published_coverage_version_);
  auto frame = frames_.make(*world_, archetypes_, world_epoch_, awaiting_, with_entities, coverage);
  frame_entities_ = static_cast<std::uint32_t>(frame->entities.size());
  frame_coverage_discs_ = static_cast<std::uint32_t>(frame->coverage.discs.size());
  server_.publish(std::move(frame));
  frame_without_entities_ = !with_entities;
}

// A district server: the neighbours' StepEnd of the current step, their
// arrivals submitted (and recorded) before this step. False when the run
// ends instead (stopping, or a failed link in district_failure_).
bool SimDriver::feed_district() {
  std::vector<core::CommandEnvelope> arrivals;
  // The wait answers queries (a neighbour may be down for a while).
  if (!district_links_->feed(*world_, *stop_, arrivals,
                             [this] { answer_queries_while_waiting(); })) {
    district_failure_ = district_links_->error();
    if (!district_failure_.ok())
      spdlog::error("district links: {}; this district stops", district_failure_.message());
    return false;
  }
  if (recorder_ != nullptr) {
    for (core::CommandEnvelope& env : arrivals) submitted_since_step_.push_back(std::move(env));
  }
  return true;
}

void SimDriver::run_step() {
  if (district_links_ != nullptr && (stop_ == nullptr || !feed_district())) return;
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
  if (district_links_ != nullptr) district_links_->step_ended(*world_);
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

}  // namespace bustle::app
