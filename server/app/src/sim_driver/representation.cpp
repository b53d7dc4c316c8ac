// After a step: command results to the sessions that sent them, spawn
// events and representation stage updates to the session that owns each
// spawn handle; between steps: clients' attach reports and lease notices,
// and the union of the clients' observers handed to the world.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "internal.hpp"
#include "sim_driver.hpp"

namespace bustle::app {

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

}  // namespace bustle::app
