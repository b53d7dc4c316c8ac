// The persistence thread: commits snapshots and prepares restores off the sim
// thread.
//
// Jobs and their graded states (terminal states marked *):
//
//   checkpoint/save/autosave:  Queued -> Copied -> Committed* | Failed*
//       the sim thread copies the state at a step boundary (Copied) before
//       handing it over; the worker commits it in one transaction.
//   restore:  Queued -> Validated -> Applied* | Failed*
//       the worker reads the checkpoint, checks it belongs to the running
//       scenario and builds a validated *candidate* World; the sim thread
//       swaps it in at a step boundary (Applied). The live world is never
//       touched by a failing restore.
//   load (a save):  Queued -> Validated -> SnapshotApplied ->
//       ScheduleReconciled -> RepresentationRebuilt* | Failed*
//
// Every state change is reported through the update callback (any thread) and
// kept for query(). The job queue is bounded; a full queue fails the job at
// once. A write failure (disk full, I/O error, read-only file) fails that job
// only; the store stays usable and earlier snapshots stay loadable.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "bustle/core/status.hpp"
#include "bustle/core/world.hpp"
#include "bustle/persist/snapshot_store.hpp"

namespace bustle::persist {

enum class JobKind : std::uint8_t { Checkpoint = 0, Save = 1, Restore = 2, Load = 3, Autosave = 4 };
enum class JobState : std::uint8_t {
  Queued = 0,
  Copied = 1,
  Committed = 2,
  Validated = 3,
  Applied = 4,
  SnapshotApplied = 5,
  ScheduleReconciled = 6,
  RepresentationRebuilt = 7,
  Failed = 8,
};
const char* to_string(JobKind k);
const char* to_string(JobState s);

struct JobOrigin {
  std::uint32_t session_id = 0;  // 0: the server itself (autosave)
  std::uint32_t request_id = 0;
};

struct JobStatus {
  std::uint64_t job_id = 0;
  JobKind kind = JobKind::Checkpoint;
  JobState state = JobState::Queued;
  bool terminal = false;
  std::string name;
  std::uint64_t step = 0;
  std::string message;
  std::chrono::steady_clock::time_point
      created{};  // when the job was submitted (metrics: durations)
};

// Snapshot names: 1-64 characters of [A-Za-z0-9._-], not starting with
// "keyframe." (reserved for recordings). Ok, or InvalidArgument saying why not.
core::Status validate_snapshot_name(const std::string& name);

class PersistWorker {
 public:
  struct Candidate {
    std::unique_ptr<core::World> world;
    JobStatus job;
    JobOrigin origin;
  };
  struct Callbacks {
    std::function<void(const JobStatus&, const JobOrigin&)> on_update;  // every state change
    std::function<void(Candidate)> on_candidate;  // restore/load ready to swap
    std::function<void(const JobOrigin&, const StoreError&, std::vector<SnapshotInfo>)> on_list;
    std::function<void(const JobOrigin&, const StoreError&, bool found)> on_delete;
  };

  // Opens (creating) the store at `path` on the calling thread, so start-up
  // fails early with a clear error, then starts the worker thread.
  static StoreError start(const std::string& path, core::Scenario scenario,
                          std::string scenario_json, Callbacks callbacks,
                          std::unique_ptr<PersistWorker>& out);
  ~PersistWorker();  // finishes queued jobs, then joins

  // Sim thread. The state is already copied; returns the job in state Copied
  // (or Failed when the queue is full).
  JobStatus submit_checkpoint(const std::string& name, JobKind kind,
                              core::WorldCheckpoint checkpoint, const JobOrigin& origin);
  JobStatus submit_checkpoint(const std::string& name, JobKind kind,
                              std::unique_ptr<core::WorldCheckpoint> checkpoint,
                              const JobOrigin& origin);
  // A checkpoint buffer the writer has finished with (or a new one): capturing
  // into a recycled buffer costs the sim thread no allocation or page faults.
  // The worker prepares kSpareCheckpoints of them when it starts
  // (core::reserve_for_capture: room for the scenario's entity capacity).
  std::unique_ptr<core::WorldCheckpoint> take_spare_checkpoint();
  JobStatus submit_save(const std::string& name, core::SaveState save, const JobOrigin& origin);
  // Returns the job in state Queued (or Failed).
  JobStatus submit_restore(const std::string& name, const JobOrigin& origin);
  JobStatus submit_load(const std::string& name, const JobOrigin& origin);
  void submit_list(const JobOrigin& origin);
  void submit_delete(const std::string& name, const JobOrigin& origin);

  // Sim thread, after swapping a candidate in: records and reports the next state.
  void advance(const JobStatus& job, JobState state, const JobOrigin& origin, std::uint64_t step);

  std::optional<JobStatus> query(std::uint64_t job_id) const;
  // WAL checkpoints that failed (each retried after the next write job).
  std::uint64_t wal_checkpoint_failures() const { return wal_checkpoint_failures_.load(); }
  // Thread-safe: restore and load jobs submitted and not yet terminal (readiness).
  std::uint32_t candidates_in_flight() const { return candidates_in_flight_.load(); }
  // Test hook (--debug-restore-delay-ms): restores and loads wait this long
  // on the worker before reading the snapshot, so a test can watch them run.
  void set_debug_restore_delay_ms(std::uint32_t ms) { debug_restore_delay_ms_.store(ms); }
  // The core log sink restored and loaded worlds get (null: none). Set before
  // the first restore; it must outlive every world built with it.
  void set_core_log(core::LogSink* log) { core_log_.store(log); }
  // Test/diagnostic hook: see SnapshotStore::set_max_page_count (runs on the worker).
  void set_max_page_count(std::int64_t pages);
  // Blocks until every job queued so far has finished (tests, shutdown).
  void drain();

 private:
  PersistWorker() = default;
  using Task = std::function<void()>;
  JobStatus new_job(JobKind kind, const std::string& name, JobState state, std::uint64_t step);
  JobStatus submit_candidate(JobKind kind, const std::string& name, const JobOrigin& origin,
                             std::function<std::unique_ptr<core::World>(JobStatus&)> build);
  void update(JobStatus job, const JobOrigin& origin);
  bool enqueue(Task task);
  void run();
  // Worker thread, after each write job: SnapshotStore::checkpoint_wal (the
  // store defers WAL checkpoints so no commit pays for one).
  void wal_checkpoint();
  std::string restore_error_text(const std::string& snapshot, const core::RestoreError& e) const;

  std::atomic<std::uint32_t> candidates_in_flight_{0};
  std::atomic<std::uint32_t> debug_restore_delay_ms_{0};
  std::atomic<core::LogSink*> core_log_{nullptr};
  SnapshotStore store_;
  core::Scenario scenario_;
  std::string scenario_json_;
  Callbacks cb_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Task> tasks_;
  bool busy_ = false;
  bool stop_ = false;
  std::uint64_t next_job_id_ = 1;
  std::map<std::uint64_t, JobStatus> jobs_;  // most recent kJobHistory
  static constexpr std::size_t kSpareCheckpoints = 2;
  std::vector<std::unique_ptr<core::WorldCheckpoint>>
      spare_;  // at most kSpareCheckpoints, guarded by mu_
  std::atomic<std::uint64_t> wal_checkpoint_failures_{0};
  std::thread thread_;
};

}  // namespace bustle::persist
