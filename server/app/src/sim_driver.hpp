// The sim thread: the only code that mutates the World.
//
// It drains the network's CommandQueue, handles control commands (clock,
// stats, snapshot jobs) itself, hands world commands to World::submit, runs
// steps under the chosen clock mode, publishes one immutable frame per step,
// routes command results back, pushes spawn-handle state changes to the
// client that asked for the spawn, feeds the session recorder, and swaps in
// restored worlds at step boundaries. It never touches a socket or a file.
//
// Clock modes:
//   realtime  fixed-step accumulator: a step is due every step_us of wall time;
//             after a stall at most catchup_steps_max steps run per wake, the
//             rest are dropped and counted (dropped_steps), so the city never
//             fast-forwards in a burst;
//   fast      steps back to back (replay, bench, soak);
//   manual    steps only on a Step(n) command (scripted tests, co-simulation).
// World commands are applied at the start of the next step, so in manual mode
// (or while paused) their result arrives after the next step runs.
//
// Spawn handles end their core part at RepresentationRequested; the
// representation stages (Attached, ReadyForGameplay) are kept here from
// client leases and ReportAttached, outside the World and its digest
// (representation_stages.hpp), and routed to the origin client like the
// core's stages.
//
// Client observers: the network side reports each session's observers; the
// driver unites them (by session id, then declaration order, at most
// core::kClientObserversMax: older sessions keep theirs, the rest are counted
// as dropped in Stats) and submits one recorded SetClientObservers, origin 0,
// before the next step whenever the union differs from the world's set (also
// after a restore or load, whose set belonged to other clients).
//
// Recording (when a Recorder is attached): tick T is the T-th executed step.
// Keyframes are captured just before a tick's step, after that tick's commands
// were submitted (initial at tick 1, every record_keyframe_steps ticks, and at
// the first tick after a restore/load); see persist/recorder.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "bustle/app/fixed_step_clock.hpp"
#include "bustle/core/status.hpp"
#include "bustle/core/world.hpp"
#include "bustle/net/command_queue.hpp"
#include "bustle/net/server.hpp"
#include "bustle/ops/telemetry.hpp"
#include "bustle/persist/persist_worker.hpp"
#include "bustle/persist/recorder.hpp"
#include "district_links.hpp"
#include "quality.hpp"
#include "representation_stages.hpp"

namespace bustle::app {

struct SimDriverOptions {
  net::ClockMode clock = net::ClockMode::Realtime;
  std::uint32_t catchup_steps_max = 5;
  std::uint32_t manual_step_max = 100'000;    // per Step command
  std::uint64_t autosave_steps = 0;           // 0 = off; else checkpoint "autosave" every N steps
  std::uint64_t record_keyframe_steps = 300;  // 0 = only the initial (and restore) keyframes
  bool check_invariants =
      false;  // World::check_invariants() after every step; the first failure stops run()
  // Test hook: after step debug_stall_at_step, the sim thread sleeps
  // debug_stall_ms (no heartbeat), so /healthz can be seen going unhealthy.
  std::uint64_t debug_stall_at_step = 0;
  std::uint32_t debug_stall_ms = 0;
  Quality quality = Quality::High;  // attached / unattached budgets (quality.hpp)
};

// Exit status of bustle-server when --check-invariants found a broken invariant.
inline constexpr int kExitInvariantBroken = 3;

// World::check_invariants() after a step: Ok, or Internal naming the broken
// invariant and the step (also logged at error).
core::Status check_world_invariants(const core::World& world);

class SimDriver {
 public:
  SimDriver(std::unique_ptr<core::World> world, net::Server& server, net::CommandQueue& commands,
            SimDriverOptions options);

  // Optional collaborators; set before run(). Both outlive run().
  void attach_persistence(persist::PersistWorker* worker) { persist_ = worker; }
  void attach_recorder(persist::Recorder* recorder) { recorder_ = recorder; }
  // Step timings, heartbeat and a once-a-second sample for the metrics endpoint.
  void attach_telemetry(ops::SimTelemetry* telemetry) { telemetry_ = telemetry; }
  // A district server's neighbour links (district_links.hpp): every step
  // waits for the neighbours' previous one and submits what they sent. The
  // starting step's StepEnd goes out now.
  void attach_district_links(DistrictLinks* links) {
    district_links_ = links;
    if (links != nullptr) links->step_ended(*world_);
  }

  // Runs until stop is set (and commands.close() wakes it).
  void run(const std::atomic<bool>& stop);

  // Thread-safe (persistence thread): a validated restore/load candidate.
  void offer_candidate(persist::PersistWorker::Candidate candidate);

  const core::World& world() const { return *world_; }
  std::uint64_t dropped_steps() const { return dropped_steps_; }
  // With check_invariants: the first broken invariant; run() returned at it
  // and no further step ran. Empty otherwise.
  const core::Status& invariant_failure() const { return invariant_failure_; }
  // A district server: why its links failed (run() returned at it), or empty.
  const core::Status& district_failure() const { return district_failure_; }

 private:
  void apply_candidates();
  void drain_commands();
  void handle(net::InboundCommand cmd);
  // While a district waits at its barrier: queries answered from the
  // current state at once, and Pause and Resume when nothing waits before
  // them; every other command kept for drain_commands() in arrival order
  // (nothing may change the world feed() holds).
  void answer_queries_while_waiting();
  // Step(n): only with the manual clock, n in [1, manual_step_max].
  void step_command(const net::ControlCommand& ctl, net::OutboundResult& r);
  // Fills r for the Query* commands answered from the current state; false
  // for any other kind.
  bool answer_query(const net::ControlCommand& ctl, net::OutboundResult& r);
  // Fills r, or returns true when the persistence thread will answer instead.
  bool handle_snapshot_command(const net::InboundCommand& cmd, const net::ControlCommand& ctl,
                               net::OutboundResult& r);
  // Publishes the current state (entities only when a client is subscribed).
  void publish_frame();
  void run_step();
  bool feed_district();
  // The heartbeat, and a new telemetry sample when one is due (between steps).
  void publish_telemetry(std::chrono::steady_clock::time_point now);
  // Step timing over the last `step_time_window` steps (0: net::kStepTimeWindowMax).
  net::StatsSnapshot stats(std::uint32_t step_time_window = 0) const;
  std::unique_ptr<core::WorldCheckpoint> capture() const;  // into a recycled buffer
  std::vector<net::GarageReport> garage_reports() const;
  std::vector<net::SignalReport> signal_reports() const;
  std::optional<net::VehicleReport> vehicle_report(core::EntityId id) const;
  net::EntityInfoReport entity_info(core::EntityId id) const;
  net::PopulationReport population_report() const;
  net::SpawnReport spawn_report(const core::SpawnHandleState& handle) const;
  // Routes the last step's results and spawn events to their sessions.
  void deliver_step_results();
  void deliver_spawn_events();
  // A representation-stage change of a handle, to the session that asked.
  void deliver_stage_update(const core::SpawnHandleState& h);
  // Forgets the routes of handles that ended on every axis.
  void prune_spawn_sessions();
  // A spawn handle on any axis: the representation stages first, then the core.
  std::optional<core::SpawnHandleState> find_handle(std::uint64_t handle) const;
  // Control commands of the representation axis and the network's notices.
  void report_attached(core::EntityId id, net::OutboundResult& r);
  void leases_held(const std::vector<core::EntityId>& ids);
  // Submits SetClientObservers when the union of the sessions' observers
  // differs from what the world has.
  void submit_client_observers();

  // Loads waiting for RepresentationRebuilt: every subscribed client sent
  // its baseline of world epoch `epoch` (net::Server::baselines_owed).
  struct RebuildingLoad {
    persist::JobStatus job;
    persist::JobOrigin origin;
    std::uint64_t epoch = 0;
  };
  void advance_rebuilt_loads();
  std::vector<RebuildingLoad> rebuilding_;

  std::unique_ptr<core::World> world_;
  net::Server& server_;
  net::CommandQueue& commands_;
  std::deque<net::InboundCommand> deferred_;  // popped at a district's barrier, not yet handled
  SimDriverOptions options_;
  FixedStepClock clock_;  // realtime: which steps are due (the only clock arithmetic)
  persist::PersistWorker* persist_ = nullptr;
  persist::Recorder* recorder_ = nullptr;
  ops::SimTelemetry* telemetry_ = nullptr;
  bool catching_up_ = false;  // realtime: the steps after the first of one wake are late

  bool paused_ = false;
  core::Status invariant_failure_;
  DistrictLinks* district_links_ = nullptr;
  core::Status district_failure_;
  const std::atomic<bool>* stop_ = nullptr;  // run()'s, for the district links' waits
  std::uint64_t dropped_steps_ = 0;
  std::uint64_t world_epoch_ = 0;
  net::ArchetypeTable
      archetypes_;         // Welcome.archetypes: same scenario for every world this driver runs
  net::FramePool frames_;  // published frames, reused once the network side lets go
  bool frame_without_entities_ = false;           // the last frame was published without entities
  std::uint64_t published_coverage_version_ = 0;  // of the interest coverage, at the last frame
  std::uint32_t frame_entities_ = 0;              // posed in the last frame (metrics)
  std::uint32_t frame_coverage_discs_ = 0;        // its coverage's discs (0: whole)
  std::uint64_t tick_ = 0;  // steps executed by this process (recording ticks)
  bool restore_keyframe_due_ = false;
  std::vector<core::CommandEnvelope> submitted_since_step_;  // for the recording
  // (session, request) of world commands submitted to the current world and
  // not yet answered; results for anything else are not routed.
  std::set<std::pair<std::uint32_t, std::uint32_t>> awaiting_result_;
  // Spawn handles answered to a live client of the current world, by handle:
  // their SpawnUpdates go to that session until the handle ends. Like
  // awaiting_result_, handles of a restored world are not routed (their
  // origins name sessions of another world or process).
  std::map<std::uint64_t, std::uint32_t> spawn_sessions_;
  RepresentationStages stages_;
  std::vector<core::SpawnHandleState> stage_changes_;  // scratch
  std::vector<core::EntityId> awaiting_;  // scratch: PublishedFrame.awaiting_representation
  std::map<std::uint32_t, std::vector<core::ObserverPoint>> session_observers_;  // non-empty only
  std::vector<core::ObserverPoint>
      world_client_observers_;  // what the world's set is (or will be once applied)
  bool client_observers_dirty_ = false;
  std::uint32_t client_observers_dropped_ = 0;
  std::uint64_t autosave_job_ = 0;
  std::uint64_t autosaves_skipped_ = 0;

  std::mutex candidates_mu_;
  std::vector<persist::PersistWorker::Candidate> candidates_;
};

// Conversions between persist job types and their wire mirrors.
net::JobInfo to_job_info(const persist::JobStatus& job);

}  // namespace bustle::app
