// The persistence thread (persist_worker.hpp): commits the snapshots the sim
// thread copied, prepares restores and loads off the sim thread, and moves
// each job through its graded states to exactly one terminal state.
#include "bustle/persist/persist_worker.hpp"

#include <pthread.h>

#include <chrono>

#include "bustle/persist/scenario_diff.hpp"
#include "wall_clock.hpp"

namespace bustle::persist {
namespace {

constexpr std::size_t kQueueMax = 64;
constexpr std::size_t kJobHistory = 1024;

bool is_terminal(JobKind kind, JobState s) {
  if (s == JobState::Failed) return true;
  switch (kind) {
    case JobKind::Checkpoint:
    case JobKind::Save:
    case JobKind::Autosave:
      return s == JobState::Committed;
    case JobKind::Restore:
      return s == JobState::Applied;
    case JobKind::Load:
      return s == JobState::RepresentationRebuilt;
  }
  return false;
}

}  // namespace

const char* to_string(JobKind k) {
  switch (k) {
    case JobKind::Checkpoint:
      return "checkpoint";
    case JobKind::Save:
      return "save";
    case JobKind::Restore:
      return "restore";
    case JobKind::Load:
      return "load";
    case JobKind::Autosave:
      return "autosave";
  }
  return "?";
}

const char* to_string(JobState s) {
  switch (s) {
    case JobState::Queued:
      return "queued";
    case JobState::Copied:
      return "copied";
    case JobState::Committed:
      return "committed";
    case JobState::Validated:
      return "validated";
    case JobState::Applied:
      return "applied";
    case JobState::SnapshotApplied:
      return "snapshot_applied";
    case JobState::ScheduleReconciled:
      return "schedule_reconciled";
    case JobState::RepresentationRebuilt:
      return "representation_rebuilt";
    case JobState::Failed:
      return "failed";
  }
  return "?";
}

core::Status validate_snapshot_name(const std::string& name) {
  if (name.empty() || name.size() > 64)
    return core::Status::invalid_argument("name must be 1 to 64 characters");
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok)
      return core::Status::invalid_argument(
          "name may only contain letters, digits, '.', '_' and '-'");
  }
  if (name.rfind("keyframe.", 0) == 0)
    return core::Status::invalid_argument(
        "names starting with 'keyframe.' are reserved for recordings");
  return {};
}

StoreError PersistWorker::start(const std::string& path, core::Scenario scenario,
                                std::string scenario_json, Callbacks callbacks,
                                std::unique_ptr<PersistWorker>& out) {
  std::unique_ptr<PersistWorker> w(new PersistWorker());
  if (StoreError e = SnapshotStore::open(path, FileKind::Snapshots, true, w->store_); !e.ok())
    return e;
  // WAL checkpoints run after a job is reported, not inside its commit (see wal_checkpoint()).
  if (StoreError e = w->store_.defer_wal_checkpoints(); !e.ok()) return e;
  w->scenario_ = std::move(scenario);
  w->scenario_json_ = std::move(scenario_json);
  w->cb_ = std::move(callbacks);
  w->thread_ = std::thread([p = w.get()] {
    pthread_setname_np(pthread_self(), "bustle-persist");
    p->run();
  });
  out = std::move(w);
  return {};
}

PersistWorker::~PersistWorker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

JobStatus PersistWorker::new_job(JobKind kind, const std::string& name, JobState state,
                                 std::uint64_t step) {
  std::lock_guard lock(mu_);
  JobStatus j;
  j.created = std::chrono::steady_clock::now();
  j.job_id = next_job_id_++;
  j.kind = kind;
  j.state = state;
  j.name = name;
  j.step = step;
  j.terminal = is_terminal(kind, state);
  jobs_[j.job_id] = j;
  while (jobs_.size() > kJobHistory) jobs_.erase(jobs_.begin());
  return j;
}

void PersistWorker::update(JobStatus job, const JobOrigin& origin) {
  job.terminal = is_terminal(job.kind, job.state);
  if (job.terminal && (job.kind == JobKind::Restore || job.kind == JobKind::Load))
    candidates_in_flight_.fetch_sub(1);
  {
    std::lock_guard lock(mu_);
    jobs_[job.job_id] = job;
  }
  if (cb_.on_update) cb_.on_update(job, origin);
}

bool PersistWorker::enqueue(Task task) {
  {
    std::lock_guard lock(mu_);
    if (tasks_.size() >= kQueueMax || stop_) return false;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void PersistWorker::run() {
  // Spare checkpoint buffers with room for the whole entity capacity, made
  // and page-faulted here, so that not even the first capture on the sim
  // thread allocates (issue 13: the sim-thread stall's tail).
  for (std::size_t k = 0; k < kSpareCheckpoints; ++k) {
    auto cp = std::make_unique<core::WorldCheckpoint>();
    core::reserve_for_capture(*cp, scenario_.entity_capacity);
    std::lock_guard lock(mu_);
    if (spare_.size() < kSpareCheckpoints) spare_.push_back(std::move(cp));
  }
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stop_ and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
      busy_ = true;
    }
    task();
    {
      std::lock_guard lock(mu_);
      busy_ = false;
    }
    idle_cv_.notify_all();
  }
}

void PersistWorker::wal_checkpoint() {
  // Committed data is in the WAL already; a failed WAL checkpoint (disk
  // full, I/O error) only leaves the WAL longer until the next one succeeds.
  if (!store_.checkpoint_wal().ok()) wal_checkpoint_failures_.fetch_add(1);
}

void PersistWorker::drain() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return tasks_.empty() && !busy_; });
}

JobStatus PersistWorker::submit_checkpoint(const std::string& name, JobKind kind,
                                           core::WorldCheckpoint checkpoint,
                                           const JobOrigin& origin) {
  return submit_checkpoint(name, kind,
                           std::make_unique<core::WorldCheckpoint>(std::move(checkpoint)), origin);
}

std::unique_ptr<core::WorldCheckpoint> PersistWorker::take_spare_checkpoint() {
  std::lock_guard lock(mu_);
  if (spare_.empty()) return std::make_unique<core::WorldCheckpoint>();
  auto cp = std::move(spare_.back());
  spare_.pop_back();
  return cp;
}

JobStatus PersistWorker::submit_checkpoint(const std::string& name, JobKind kind,
                                           std::unique_ptr<core::WorldCheckpoint> checkpoint,
                                           const JobOrigin& origin) {
  JobStatus job = new_job(kind, name, JobState::Copied, checkpoint->step_index);
  std::shared_ptr<core::WorldCheckpoint> cp(std::move(checkpoint));
  const bool queued = enqueue([this, job, cp, origin]() mutable {
    const StoreError e =
        store_.write_checkpoint(job.name, "checkpoint", *cp, scenario_json_, now_unix_ms());
    job.state = e.ok() ? JobState::Committed : JobState::Failed;
    job.message = e.ok() ? "" : e.to_string();
    {
      // Hand the buffer back for the next capture (keeps its capacity).
      std::lock_guard lock(mu_);
      if (spare_.size() < kSpareCheckpoints && cp.use_count() == 1) {
        spare_.push_back(std::make_unique<core::WorldCheckpoint>(std::move(*cp)));
      }
    }
    update(job, origin);
    wal_checkpoint();
  });
  if (!queued) {
    job.state = JobState::Failed;
    job.message = "persistence queue is full (" + std::to_string(kQueueMax) + " jobs)";
    update(job, origin);
  }
  return job;
}

JobStatus PersistWorker::submit_save(const std::string& name, core::SaveState save,
                                     const JobOrigin& origin) {
  JobStatus job = new_job(JobKind::Save, name, JobState::Copied, save.step_index);
  const bool queued = enqueue([this, job, save, origin]() mutable {
    const StoreError e = store_.write_save(job.name, save, scenario_json_, now_unix_ms());
    job.state = e.ok() ? JobState::Committed : JobState::Failed;
    job.message = e.ok() ? "" : e.to_string();
    update(job, origin);
    wal_checkpoint();
  });
  if (!queued) {
    job.state = JobState::Failed;
    job.message = "persistence queue is full";
    update(job, origin);
  }
  return job;
}

namespace {

// Where the core's state paths were read from: the path prefix, its table,
// and how that table labels the element between brackets.
struct StateTable {
  const char* prefix;
  const char* table;
  const char* row_key;           // followed by the element index
  const char* column = nullptr;  // the field a bare element ("routes.lanes[3]") stands for
};
// Longer prefixes first ("routes.lanes" before "routes").
constexpr StateTable kStateTables[] = {
    {"pedestrians", "pedestrian_columns", "element "},
    {"inbox", "pending_commands", "element "},
    {"registry", "world_state", "element "},
    {"vehicles", "vehicle_columns", "element "},
    {"signals", "signals", "element "},
    {"plan", "world_state", "element "},
    {"client_observer_views", "client_observers", "observer_index="},
    {"client_observers", "client_observers", "observer_index="},
    {"observers", "world_state", "element "},
    {"observer_views", "observer_views", "observer_index="},
    {"spawn.live", "spawn_handles", "list='live' position="},
    {"spawn.recent", "spawn_handles", "list='recent' position="},
    {"orphans", "orphans", "position="},
    {"retiring_fifo", "retiring_fifo", "position="},
    {"routes.lanes", "route_lanes", "position=", "lane"},
    {"routes.free_slots", "route_free_slots", "position=", "slot"},
    {"routes", "route_slots", "slot=", "slot"},
    {"active_residents", "save_active_residents", "position="},
};

}  // namespace

std::string PersistWorker::restore_error_text(const std::string& snapshot,
                                              const core::RestoreError& e) const {
  // Map the core's state paths onto the tables they were read from.
  std::string table = "snapshots";
  std::string row_key = "element ";
  const char* column = nullptr;
  const std::string& rest = e.path;
  if (rest.rfind("garages", 0) == 0) {
    table = rest.find(".queue") != std::string::npos ? "garage_queue" : "garages";
  } else {
    for (const StateTable& t : kStateTables) {
      const std::string_view prefix = t.prefix;
      // Whole path components: "routes" takes "routes[3]" and "routes.lanes", not "routes_x".
      if (rest.starts_with(prefix) && (rest.size() == prefix.size() || rest[prefix.size()] == '[' ||
                                       rest[prefix.size()] == '.')) {
        table = t.table;
        row_key = t.row_key;
        column = t.column;
        break;
      }
    }
  }
  std::string row = "name='" + snapshot + "'";
  std::string field = rest;
  if (auto lb = rest.find('['); lb != std::string::npos) {
    const auto rb = rest.find(']', lb);
    row += " " + row_key + rest.substr(lb + 1, rb - lb - 1);
    const bool bare = rb + 1 >= rest.size();
    field =
        bare && column != nullptr ? column : rest.substr(0, lb) + (bare ? "" : rest.substr(rb + 1));
  }
  // "pedestrians.lane" -> "lane": the table already names the collection.
  if (auto dot = field.rfind('.'); dot != std::string::npos) field = field.substr(dot + 1);
  return StoreError{store_.path(), table, row, field, e.message, 0}.to_string();
}

// Restore and load share one shape: read and check on this thread, build a
// validated candidate World, hand it to the sim thread. `build` returns the
// candidate (or sets job.message and returns null).
JobStatus PersistWorker::submit_candidate(
    JobKind kind, const std::string& name, const JobOrigin& origin,
    std::function<std::unique_ptr<core::World>(JobStatus&)> build) {
  JobStatus job = new_job(kind, name, JobState::Queued, 0);
  candidates_in_flight_.fetch_add(1);  // until the job is terminal (update())
  const bool queued = enqueue([this, job, origin, build = std::move(build)]() mutable {
    if (const std::uint32_t ms = debug_restore_delay_ms_.load(); ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    std::unique_ptr<core::World> candidate = build(job);
    if (!candidate) {
      job.state = JobState::Failed;
      return update(job, origin);
    }
    job.state = JobState::Validated;
    job.step = candidate->step_index();
    update(job, origin);
    if (cb_.on_candidate) cb_.on_candidate(Candidate{std::move(candidate), job, origin});
  });
  if (!queued) {
    job.state = JobState::Failed;
    job.message = "persistence queue is full";
    update(job, origin);
  }
  return job;
}

JobStatus PersistWorker::submit_restore(const std::string& name, const JobOrigin& origin) {
  return submit_candidate(
      JobKind::Restore, name, origin, [this](JobStatus& job) -> std::unique_ptr<core::World> {
        LoadedCheckpoint lc;
        if (StoreError e = store_.read_checkpoint(job.name, lc); !e.ok()) {
          job.message = e.to_string();
          return nullptr;
        }
        if (lc.scenario_json != scenario_json_) {
          job.message =
              StoreError{store_.path(),
                         "snapshots",
                         "name='" + job.name + "'",
                         "scenario_json",
                         "snapshot was taken with a different scenario: " +
                             describe_scenario_difference(lc.scenario_json, scenario_json_),
                         0}
                  .to_string();
          return nullptr;
        }
        auto restored = core::World::restore(scenario_, lc.checkpoint, core_log_.load());
        if (!restored.world) job.message = restore_error_text(job.name, restored.errors.front());
        return std::move(restored.world);
      });
}

JobStatus PersistWorker::submit_load(const std::string& name, const JobOrigin& origin) {
  return submit_candidate(
      JobKind::Load, name, origin, [this](JobStatus& job) -> std::unique_ptr<core::World> {
        LoadedSave ls;
        if (StoreError e = store_.read_save(job.name, ls); !e.ok()) {
          job.message = e.to_string();
          return nullptr;
        }
        complete_schema1_save(ls, scenario_);
        if (ls.info.scenario_id != scenario_.id) {
          job.message = StoreError{store_.path(),
                                   "snapshots",
                                   "name='" + job.name + "'",
                                   "scenario_id",
                                   "save is of scenario '" + ls.info.scenario_id +
                                       "', the server runs '" + scenario_.id + "'",
                                   0}
                            .to_string();
          return nullptr;
        }
        auto loaded = core::World::load_save(scenario_, ls.save, core_log_.load());
        if (!loaded.world) job.message = restore_error_text(job.name, loaded.errors.front());
        return std::move(loaded.world);
      });
}

void PersistWorker::submit_list(const JobOrigin& origin) {
  const bool queued = enqueue([this, origin] {
    std::vector<SnapshotInfo> infos;
    const StoreError e = store_.list(infos);
    if (cb_.on_list) cb_.on_list(origin, e, std::move(infos));
  });
  if (!queued && cb_.on_list)
    cb_.on_list(origin, StoreError{store_.path(), "", "", "", "persistence queue is full", 0}, {});
}

void PersistWorker::submit_delete(const std::string& name, const JobOrigin& origin) {
  const bool queued = enqueue([this, name, origin] {
    bool found = false;
    const StoreError e = store_.remove(name, found);
    if (cb_.on_delete) cb_.on_delete(origin, e, found);
    wal_checkpoint();
  });
  if (!queued && cb_.on_delete) {
    cb_.on_delete(origin, StoreError{store_.path(), "", "", "", "persistence queue is full", 0},
                  false);
  }
}

void PersistWorker::advance(const JobStatus& job, JobState state, const JobOrigin& origin,
                            std::uint64_t step) {
  JobStatus next = job;
  next.state = state;
  next.step = step;
  next.message.clear();
  update(next, origin);
}

std::optional<JobStatus> PersistWorker::query(std::uint64_t job_id) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second;
}

void PersistWorker::set_max_page_count(std::int64_t pages) {
  enqueue([this, pages] { store_.set_max_page_count(pages); });
  drain();
}

}  // namespace bustle::persist
