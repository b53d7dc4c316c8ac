// Integration: snapshot jobs against the real bustle-server (manual clock,
// a private temporary snapshot store per server, see support/process.hpp).
// Checkpoint/restore, save/load with their graded job states, the baseline a
// subscribed client gets after the world is replaced, list/delete/NotFound,
// QueryJob, and roles.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "bustle/client/client.hpp"
#include "bustle/client/entity_mirror.hpp"
#include "support/process.hpp"
#include "support/server_fixture.hpp"
#include "support/stream_checks.hpp"

#ifndef BUSTLE_SERVER_PATH
#error "BUSTLE_SERVER_PATH must name the bustle-server executable"
#endif

namespace c = bustle::client;
namespace t = bustle::test;
namespace wire = bustle::wire;
using namespace std::chrono_literals;
using JS = wire::JobState;

namespace {

std::unique_ptr<t::ServerUnderTest> start_manual() {
  auto server = t::start_or_fail(BUSTLE_SERVER_PATH, {"--clock", "manual"});
  REQUIRE_FALSE(server->snapshot_db.empty());  // a private store, never the default file
  return server;
}

void stop_snapshot_server(t::ServerUnderTest& server) {
  const t::ExitInfo e = server.process.terminate(5000ms);
  INFO("server " << e.describe() << "; stderr tail:\n" << t::file_tail(server.stderr_path));
  CHECK(e.exited);
  CHECK(e.exit_code == 0);
}

c::ClientOptions snapshot_client_options(const t::ServerUnderTest& server, wire::Role role) {
  c::ClientOptions o;
  o.host = server.host;
  o.port = server.port;
  o.role = role;
  o.client_name = "snapshot-test";
  return o;
}

std::vector<JS> states_of(const std::vector<c::JobInfo>& jobs) {
  std::vector<JS> out;
  for (const auto& j : jobs) out.push_back(j.state);
  return out;
}

std::string describe(const std::vector<c::JobInfo>& jobs) {
  std::string s;
  for (const auto& j : jobs) {
    s += std::string(wire::EnumNameJobState(j.state)) + "(step " + std::to_string(j.step) + ")" +
         (j.message.empty() ? "" : ": " + j.message) + " ";
  }
  return s;
}

// An operator client with an entity mirror, driving a manual clock.
struct Operator {
  c::Client client;
  c::EntityMirror mirror;

  explicit Operator(const t::ServerUnderTest& server)
      : client(snapshot_client_options(server, wire::Role::Operator)) {
    const auto w = client.connect();
    INFO(w.message);
    REQUIRE(w.ok());
    REQUIRE(w.value.role == wire::Role::Operator);
    mirror.set_strict(true);
    mirror.set_world(w.value);
  }

  void subscribe() {
    REQUIRE(client.subscribe().ok());
    REQUIRE(t::next_applied(client, mirror).baseline);
  }

  // Applies one Delta; the caller checks what it was.
  c::ApplySummary apply_next(std::uint64_t* step = nullptr, bool* baseline = nullptr) {
    const auto d = client.next_delta(5000ms);
    INFO(d.message);
    REQUIRE(d.ok());
    if (step != nullptr) *step = d.value.step;
    if (baseline != nullptr) *baseline = d.value.baseline;
    return mirror.apply(d.value);
  }

  // Steps the manual clock by n and, if subscribed, mirrors up to the new step.
  void step(std::uint32_t n, bool subscribed) {
    const std::uint64_t before = stats().step;
    const auto r = client.command(c::StepCmd{n}, 5000ms);
    INFO(r.message);
    REQUIRE(r.ok());
    REQUIRE(r.value.accepted());
    REQUIRE(r.value.applied_step == before + n);
    while (subscribed && mirror.last_step() < before + n) {
      const auto s = apply_next();
      INFO(s.error);
      CHECK(s.ok());
      CHECK_FALSE(s.step_not_increasing);
    }
  }

  c::StatsInfo stats() {
    const auto r = client.command(c::QueryStatsCmd{}, 5000ms);
    INFO(r.message);
    REQUIRE(r.ok());
    REQUIRE(r.value.stats.has_value());
    return *r.value.stats;
  }

  // Runs a snapshot command that starts a job; returns its first state and
  // every later one up to the terminal state.
  std::vector<c::JobInfo> job(const c::CommandSpec& spec, wire::JobKind kind, JS first) {
    const auto r = client.command(spec, 5000ms);
    INFO(c::command_name(spec) << ": " << r.message);
    REQUIRE(r.ok());
    INFO(wire::EnumNameRejectReason(r.value.reason) << " " << r.value.message);
    REQUIRE(r.value.accepted());
    REQUIRE(r.value.job.has_value());
    CHECK(r.value.job->kind == kind);
    CHECK(r.value.job->state == first);
    CHECK_FALSE(r.value.job->terminal);
    std::vector<c::JobInfo> all = {*r.value.job};
    const auto rest = client.wait_job(r.value.job->job_id, 10000ms);
    INFO(rest.message << "; states " << describe(rest.value));
    REQUIRE(rest.ok());
    for (const auto& j : rest.value) {
      CHECK(j.job_id == r.value.job->job_id);
      CHECK(j.kind == kind);
    }
    all.insert(all.end(), rest.value.begin(), rest.value.end());
    return all;
  }
};

}  // namespace

TEST_CASE("Checkpoint at step 10, restore at 20: back to 10, same digests, mirror rebuilt",
          "[integration][snapshots]") {
  auto server = start_manual();
  {
    Operator op(*server);
    op.subscribe();
    op.step(10, true);
    const c::StatsInfo at10 = op.stats();
    REQUIRE(at10.step == 10);
    REQUIRE(op.mirror.last_digest() == at10.digest);

    const auto cp = op.job(c::CheckpointCmd{"x"}, wire::JobKind::Checkpoint, JS::Copied);
    INFO(describe(cp));
    CHECK(states_of(cp) == std::vector<JS>{JS::Copied, JS::Committed});
    CHECK(cp.back().succeeded());
    CHECK(cp.front().step == 10);
    CHECK(cp.back().step == 10);
    CHECK(cp.back().name == "x");

    op.step(10, true);
    const c::StatsInfo at20 = op.stats();
    REQUIRE(at20.step == 20);
    CHECK(at20.digest != at10.digest);

    // A world command still queued when the world is replaced never applies.
    const auto queued = op.client.send_command(c::SetPedestrianTargetCmd{3});
    REQUIRE(queued.ok());

    const auto rs = op.job(c::RestoreCmd{"x"}, wire::JobKind::Restore, JS::Queued);
    INFO(describe(rs));
    CHECK(states_of(rs) == std::vector<JS>{JS::Queued, JS::Validated, JS::Applied});
    CHECK(rs.back().terminal);
    CHECK(rs.back().step == 10);

    const auto replaced = op.client.wait_result(queued.value, 5000ms);
    INFO(replaced.message);
    REQUIRE(replaced.ok());
    CHECK_FALSE(replaced.value.accepted());
    CHECK(replaced.value.reason == wire::RejectReason::WorldReplaced);
    CHECK(replaced.value.message.find("'x'") != std::string::npos);

    const c::StatsInfo restored = op.stats();
    CHECK(restored.step == 10);
    CHECK(restored.digest == at10.digest);
    CHECK(restored.pedestrians == at10.pedestrians);
    CHECK(restored.pedestrian_target == at10.pedestrian_target);

    // The subscribed client gets a baseline of the restored world at step 10,
    // lower than the 20 it saw last; the mirror takes it as a reset.
    std::uint64_t step = 0;
    bool baseline = false;
    const auto summary = op.apply_next(&step, &baseline);
    CHECK(baseline);
    CHECK(summary.baseline);
    CHECK(step == 10);
    CHECK_FALSE(summary.step_not_increasing);
    CHECK(op.mirror.counters().steps_not_increasing == 0);
    CHECK(op.mirror.last_step() == 10);
    CHECK(op.mirror.last_digest() == at10.digest);
    CHECK(op.mirror.size() == restored.pedestrians);

    // Continuing from the checkpoint repeats history exactly.
    op.step(10, true);
    const c::StatsInfo again20 = op.stats();
    CHECK(again20.step == 20);
    CHECK(again20.digest == at20.digest);
    CHECK(op.mirror.last_digest() == at20.digest);
    CHECK(op.client.stray_results() == 0);
    CHECK(op.client.buffered_job_updates() == 0);
  }
  stop_snapshot_server(*server);
}

TEST_CASE("Save then load reports Validated and the three load phases in order",
          "[integration][snapshots]") {
  auto server = start_manual();
  {
    Operator op(*server);
    op.subscribe();
    op.step(10, true);
    const c::StatsInfo at10 = op.stats();

    const auto sv = op.job(c::SaveCmd{"s"}, wire::JobKind::Save, JS::Copied);
    INFO(describe(sv));
    CHECK(states_of(sv) == std::vector<JS>{JS::Copied, JS::Committed});
    CHECK(sv.back().step == 10);

    op.step(15, true);
    CHECK(op.stats().step == 25);

    const auto ld = op.job(c::LoadCmd{"s"}, wire::JobKind::Load, JS::Queued);
    INFO(describe(ld));
    CHECK(states_of(ld) == std::vector<JS>{JS::Queued, JS::Validated, JS::SnapshotApplied,
                                           JS::ScheduleReconciled, JS::RepresentationRebuilt});
    CHECK(ld.back().terminal);
    CHECK(ld.back().succeeded());
    CHECK(ld.back().step == 10);

    const c::StatsInfo loaded = op.stats();
    CHECK(loaded.step == 10);
    CHECK(loaded.sim_time_us == at10.sim_time_us);
    CHECK(loaded.pedestrian_target == at10.pedestrian_target);

    // RepresentationRebuilt: the subscribed client rebuilds from a baseline.
    std::uint64_t step = 0;
    bool baseline = false;
    const auto summary = op.apply_next(&step, &baseline);
    CHECK(baseline);
    CHECK(step == 10);
    CHECK_FALSE(summary.step_not_increasing);
    CHECK(op.mirror.size() == loaded.pedestrians);
    op.step(1, true);
    CHECK(op.mirror.last_step() == 11);
  }
  stop_snapshot_server(*server);
}

TEST_CASE("Snapshots are listed, deleted once, then NotFound, and jobs can be queried",
          "[integration][snapshots]") {
  auto server = start_manual();
  {
    Operator op(*server);
    c::Client viewer(snapshot_client_options(*server, wire::Role::Viewer));
    REQUIRE(viewer.connect().ok());

    // An empty store lists nothing (but does answer with a list).
    const auto empty = viewer.command(c::ListSnapshotsCmd{}, 5000ms);
    INFO(empty.message);
    REQUIRE(empty.ok());
    CHECK(empty.value.accepted());
    REQUIRE(empty.value.snapshots.has_value());
    CHECK(empty.value.snapshots->empty());

    const auto wall_before = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    op.step(5, false);
    const c::StatsInfo at5 = op.stats();
    const auto cp = op.job(c::CheckpointCmd{"a"}, wire::JobKind::Checkpoint, JS::Copied);
    REQUIRE(cp.back().state == JS::Committed);
    op.step(5, false);
    const auto sv = op.job(c::SaveCmd{"b"}, wire::JobKind::Save, JS::Copied);
    REQUIRE(sv.back().state == JS::Committed);
    const auto wall_after = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();

    // Listing is allowed for a viewer.
    const auto list = viewer.command(c::ListSnapshotsCmd{}, 5000ms);
    INFO(list.message);
    REQUIRE(list.ok());
    REQUIRE(list.value.accepted());
    REQUIRE(list.value.snapshots.has_value());
    REQUIRE(list.value.snapshots->size() == 2);
    const c::SnapshotEntry* a = nullptr;
    const c::SnapshotEntry* b = nullptr;
    for (const auto& e : *list.value.snapshots) {
      if (e.name == "a") a = &e;
      if (e.name == "b") b = &e;
    }
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    CHECK(a->kind == "checkpoint");
    CHECK(a->step == 5);
    CHECK(a->sim_time_us == at5.sim_time_us);
    CHECK(a->digest == at5.digest);
    CHECK(a->pedestrians == at5.pedestrians);
    CHECK(a->scenario_id == op.client.welcome().scenario_id);
    CHECK(a->created_unix_ms >= wall_before - 1000);
    CHECK(a->created_unix_ms <= wall_after + 1000);
    CHECK(b->kind == "save");
    CHECK(b->step == 10);

    // Viewers may not write, restore or delete.
    for (const c::CommandSpec& spec :
         {c::CommandSpec{c::CheckpointCmd{"v"}}, c::CommandSpec{c::RestoreCmd{"a"}},
          c::CommandSpec{c::DeleteSnapshotCmd{"a"}}}) {
      const auto r = viewer.command(spec, 5000ms);
      INFO(c::command_name(spec) << ": " << r.message);
      REQUIRE(r.ok());
      CHECK_FALSE(r.value.accepted());
      CHECK(r.value.reason == wire::RejectReason::NotAuthorized);
    }

    // A name the server refuses is rejected at once, with no job.
    const auto bad = op.client.command(c::CheckpointCmd{"no spaces"}, 5000ms);
    REQUIRE(bad.ok());
    CHECK_FALSE(bad.value.accepted());
    CHECK(bad.value.reason == wire::RejectReason::InvalidArgument);
    CHECK(bad.value.message.find("no spaces") != std::string::npos);
    CHECK_FALSE(bad.value.job.has_value());

    // Delete once, then it is gone.
    const auto del = op.client.command(c::DeleteSnapshotCmd{"a"}, 5000ms);
    INFO(del.message);
    REQUIRE(del.ok());
    CHECK(del.value.accepted());
    const auto again = op.client.command(c::DeleteSnapshotCmd{"a"}, 5000ms);
    REQUIRE(again.ok());
    CHECK_FALSE(again.value.accepted());
    CHECK(again.value.reason == wire::RejectReason::NotFound);
    const auto after = viewer.command(c::ListSnapshotsCmd{}, 5000ms);
    REQUIRE(after.ok());
    REQUIRE(after.value.snapshots.has_value());
    REQUIRE(after.value.snapshots->size() == 1);
    CHECK(after.value.snapshots->front().name == "b");

    // Restoring the deleted checkpoint is accepted as a job that fails,
    // naming the snapshot; the live world is untouched.
    const c::StatsInfo before_restore = op.stats();
    const auto missing = op.job(c::RestoreCmd{"a"}, wire::JobKind::Restore, JS::Queued);
    INFO(describe(missing));
    CHECK(states_of(missing) == std::vector<JS>{JS::Queued, JS::Failed});
    CHECK(missing.back().terminal);
    CHECK(missing.back().message.find("'a'") != std::string::npos);
    const c::StatsInfo after_restore = op.stats();
    CHECK(after_restore.step == before_restore.step);
    CHECK(after_restore.digest == before_restore.digest);

    // Jobs can be queried by anyone, by id; unknown ids are NotFound.
    const auto q = viewer.command(c::QueryJobCmd{missing.back().job_id}, 5000ms);
    INFO(q.message);
    REQUIRE(q.ok());
    CHECK(q.value.accepted());
    REQUIRE(q.value.job.has_value());
    CHECK(q.value.job->job_id == missing.back().job_id);
    CHECK(q.value.job->state == JS::Failed);
    CHECK(q.value.job->terminal);
    CHECK(q.value.job->name == "a");
    const auto qc = viewer.command(c::QueryJobCmd{cp.front().job_id}, 5000ms);
    REQUIRE(qc.ok());
    REQUIRE(qc.value.job.has_value());
    CHECK(qc.value.job->state == JS::Committed);
    const auto unknown = viewer.command(c::QueryJobCmd{999'999}, 5000ms);
    REQUIRE(unknown.ok());
    CHECK_FALSE(unknown.value.accepted());
    CHECK(unknown.value.reason == wire::RejectReason::NotFound);
    // A viewer is never sent JobUpdates of jobs it did not start (reading
    // would buffer them; it is not subscribed, so nothing else comes).
    CHECK(viewer.next_delta(300ms).status == c::ClientStatus::Timeout);
    CHECK(viewer.buffered_job_updates() == 0);
  }
  stop_snapshot_server(*server);
}
