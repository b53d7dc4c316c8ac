// The persistence thread (server/persist/src/persist_worker.cpp): every job
// walks its graded states in order (the first is the submit call's answer,
// each later one goes through on_update) and ends in one terminal state; a
// failing write fails that job only; a restore hands over a validated
// candidate and never touches the live world; the queue is bounded.
#include "bustle/persist/persist_worker.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <mutex>
#include <vector>

using namespace bustle;
namespace fs = std::filesystem;
using persist::JobKind;
using persist::JobState;

namespace {

struct WorkerTempDir {
  fs::path path = fs::temp_directory_path() / ("bustle-worker-test-" + std::to_string(::getpid()) +
                                               "-" + std::to_string(next()));
  WorkerTempDir() { fs::create_directories(path); }
  ~WorkerTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int next() {
    static int n = 0;
    return n++;
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

core::Scenario worker_city() {
  core::Scenario s;
  s.id = "test.worker";
  s.lanes = {{"a", core::LaneKind::Sidewalk, {{0, 0}, {30, 0}, {30, 20}}, 1.4, {"b"}},
             {"b", core::LaneKind::Sidewalk, {{30, 20}, {0, 20}, {0, 0}}, 1.4, {"a"}}};
  // Enough pedestrians that a checkpoint needs new pages (the full-disk case).
  s.pedestrians.count = 600;
  s.pedestrians.spawn_per_step_max = 64;
  s.entity_capacity = 1024;
  return s;
}

// Everything the worker reports, in order, from whichever thread.
struct ReportLog {
  std::mutex mu;
  std::vector<persist::JobStatus> updates;
  std::vector<persist::PersistWorker::Candidate> candidates;
  std::vector<std::string> listed;
  int deletes_found = -1;

  persist::PersistWorker::Callbacks callbacks() {
    persist::PersistWorker::Callbacks cb;
    cb.on_update = [this](const persist::JobStatus& j, const persist::JobOrigin&) {
      std::lock_guard lock(mu);
      updates.push_back(j);
    };
    cb.on_candidate = [this](persist::PersistWorker::Candidate c) {
      std::lock_guard lock(mu);
      candidates.push_back(std::move(c));
    };
    cb.on_list = [this](const persist::JobOrigin&, const persist::StoreError& e,
                        std::vector<persist::SnapshotInfo> infos) {
      std::lock_guard lock(mu);
      REQUIRE(e.ok());
      for (const auto& i : infos) listed.push_back(i.name);
    };
    cb.on_delete = [this](const persist::JobOrigin&, const persist::StoreError&, bool found) {
      std::lock_guard lock(mu);
      deletes_found = found ? 1 : 0;
    };
    return cb;
  }
  std::vector<JobState> states_of(std::uint64_t job) {
    std::lock_guard lock(mu);
    std::vector<JobState> out;
    for (const auto& u : updates) {
      if (u.job_id == job) out.push_back(u.state);
    }
    return out;
  }
};

std::unique_ptr<persist::PersistWorker> start_worker(const std::string& path, ReportLog& rec) {
  std::unique_ptr<persist::PersistWorker> w;
  const persist::StoreError e = persist::PersistWorker::start(
      path, worker_city(), R"({"id":"test.worker"})", rec.callbacks(), w);
  INFO(e.to_string());
  REQUIRE(e.ok());
  return w;
}

std::unique_ptr<core::World> worker_world_at(std::uint64_t steps) {
  auto w = std::move(core::World::create(worker_city(), 3).world);
  REQUIRE(w);
  for (std::uint64_t k = 0; k < steps; ++k) w->step();
  return w;
}

}  // namespace

TEST_CASE("a checkpoint goes Copied -> Committed and a restore Queued -> Validated -> Applied") {
  WorkerTempDir dir;
  ReportLog rec;
  auto worker = start_worker(dir.file("s.db"), rec);
  auto live = worker_world_at(30);
  const persist::JobStatus cp =
      worker->submit_checkpoint("c1", JobKind::Checkpoint, live->capture(), {7, 1});
  CHECK(cp.state == JobState::Copied);  // accepted, not completed: the first state is the answer
  CHECK(cp.step == 30);
  worker->drain();
  CHECK(rec.states_of(cp.job_id) ==
        std::vector<JobState>{JobState::Committed});  // every later one is reported
  const auto done = worker->query(cp.job_id);
  REQUIRE(done);
  CHECK(done->terminal);

  const std::uint64_t digest_at_30 = live->digest();
  for (int k = 0; k < 10; ++k) live->step();  // the live world moves on
  const persist::JobStatus rs = worker->submit_restore("c1", {7, 2});
  CHECK(rs.state == JobState::Queued);
  worker->drain();
  CHECK(rec.states_of(rs.job_id) == std::vector<JobState>{JobState::Validated});
  CHECK_FALSE(worker->query(rs.job_id)->terminal);  // Validated waits for the sim thread
  CHECK(worker->candidates_in_flight() == 1);
  {
    std::lock_guard lock(rec.mu);
    REQUIRE(rec.candidates.size() == 1);
    CHECK(rec.candidates[0].world->step_index() == 30);
    CHECK(rec.candidates[0].world->digest() == digest_at_30);
    CHECK(rec.candidates[0].origin.request_id == 2);
  }
  CHECK(live->step_index() == 40);  // untouched by the restore
  worker->advance(rec.candidates[0].job, JobState::Applied, rec.candidates[0].origin, 40);
  CHECK(worker->query(rs.job_id)->state == JobState::Applied);
  CHECK(worker->query(rs.job_id)->terminal);
  CHECK(worker->candidates_in_flight() == 0);
}

TEST_CASE("a restore of a snapshot that does not exist fails with its name, nothing handed over") {
  WorkerTempDir dir;
  ReportLog rec;
  auto worker = start_worker(dir.file("s.db"), rec);
  const persist::JobStatus rs = worker->submit_restore("nope", {});
  worker->drain();
  const auto done = worker->query(rs.job_id);
  REQUIRE(done);
  CHECK(done->state == JobState::Failed);
  CHECK(done->terminal);
  CHECK(done->message.find("nope") != std::string::npos);
  CHECK(rec.candidates.empty());
  CHECK(worker->candidates_in_flight() == 0);
}

TEST_CASE(
    "a write failure fails that job only; earlier snapshots stay restorable and later writes "
    "work") {
  WorkerTempDir dir;
  ReportLog rec;
  auto worker = start_worker(dir.file("s.db"), rec);
  auto live = worker_world_at(20);
  const auto first = worker->submit_checkpoint("before", JobKind::Checkpoint, live->capture(), {});
  worker->drain();
  REQUIRE(worker->query(first.job_id)->state == JobState::Committed);

  worker->set_max_page_count(1);  // SQLite clamps this to the current size: no new page
  for (int k = 0; k < 20; ++k) live->step();
  const auto full =
      worker->submit_checkpoint("while_full", JobKind::Checkpoint, live->capture(), {});
  worker->drain();
  const auto failed = worker->query(full.job_id);
  REQUIRE(failed);
  CHECK(failed->state == JobState::Failed);
  CHECK(failed->message.find("full") != std::string::npos);

  worker->set_max_page_count(1 << 30);
  const auto after = worker->submit_checkpoint("after", JobKind::Checkpoint, live->capture(), {});
  const auto rs = worker->submit_restore("before", {});
  worker->drain();
  CHECK(worker->query(after.job_id)->state == JobState::Committed);
  CHECK(worker->query(rs.job_id)->state == JobState::Validated);
  worker->submit_list({});
  worker->drain();
  std::lock_guard lock(rec.mu);
  CHECK(rec.listed == std::vector<std::string>{"before", "after"});  // nothing of the failed job
}

TEST_CASE("a full queue fails the job at once instead of waiting") {
  WorkerTempDir dir;
  ReportLog rec;
  auto worker = start_worker(dir.file("s.db"), rec);
  worker->set_debug_restore_delay_ms(200);  // the first restore holds the worker
  std::vector<persist::JobStatus> jobs;
  for (int k = 0; k < 200; ++k) jobs.push_back(worker->submit_restore("missing", {}));
  std::size_t refused = 0;
  for (const auto& j : jobs) {
    if (j.state == JobState::Failed) {
      ++refused;
      CHECK(j.message.find("queue is full") != std::string::npos);
    }
  }
  CHECK(refused > 0);
  CHECK(refused < jobs.size());  // the ones that fit were accepted
  worker->set_debug_restore_delay_ms(0);
  worker->drain();
  for (const auto& j : jobs)
    CHECK(worker->query(j.job_id)->terminal);  // every job ends, none is lost
}

TEST_CASE("snapshot names are checked before anything is queued") {
  auto why = [](const std::string& name) {
    return persist::validate_snapshot_name(name).message();
  };
  CHECK(persist::validate_snapshot_name("city-1.ok_name").ok());
  const core::Status empty = persist::validate_snapshot_name("");
  CHECK(empty.code() == core::StatusCode::InvalidArgument);
  CHECK(empty.message() == "name must be 1 to 64 characters");
  CHECK(why(std::string(65, 'a')).find("1 to 64") != std::string::npos);
  CHECK(why("a/b").find("only contain") != std::string::npos);
  CHECK(why("keyframe.12").find("reserved") != std::string::npos);
}

TEST_CASE("delete reports whether the snapshot existed") {
  WorkerTempDir dir;
  ReportLog rec;
  auto worker = start_worker(dir.file("s.db"), rec);
  auto live = worker_world_at(5);
  worker->submit_checkpoint("gone", JobKind::Checkpoint, live->capture(), {});
  worker->submit_delete("gone", {});
  worker->drain();
  CHECK(rec.deletes_found == 1);
  worker->submit_delete("gone", {});
  worker->drain();
  CHECK(rec.deletes_found == 0);
}
