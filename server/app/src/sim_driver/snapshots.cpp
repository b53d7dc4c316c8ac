// Checkpoints, saves, restores and loads as the sim thread sees them:
// snapshot commands become persist-worker jobs with a captured world; a
// restored or loaded world (a candidate the worker hands back) replaces the
// current one between steps, answering the old world's queued commands, and
// its job advances through its states (a load's last, RepresentationRebuilt,
// once every subscribed client has its baseline).
#include <spdlog/spdlog.h>

#include <string>
#include <utility>
#include <vector>

#include "bustle/net/client_text.hpp"
#include "internal.hpp"
#include "sim_driver.hpp"

namespace bustle::app {

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

std::unique_ptr<core::WorldCheckpoint> SimDriver::capture() const {
  auto cp = persist_->take_spare_checkpoint();
  world_->capture_into(*cp);
  return cp;
}

}  // namespace bustle::app
