// Decoding of server answers into the SDK's owned types: CommandResult with a
// job or a snapshot list, JobUpdate, and the Stats recording fields. Frames
// are built in memory and pass the same verifier as frames from a socket.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "bustle/client/client.hpp"
#include "bustle/proto/framing.hpp"
#include "support/server_frames.hpp"

namespace c = bustle::client;
namespace t = bustle::test;
namespace wire = bustle::wire;

namespace {

const wire::ServerFrame* verified(const std::vector<std::uint8_t>& payload) {
  std::string error;
  const auto* root = bustle::proto::verify_server_frame(payload, error);
  INFO(error);
  REQUIRE(root != nullptr);
  return root;
}

c::CommandReply reply_of(const std::vector<std::uint8_t>& payload) {
  const auto* r = verified(payload)->message_as_CommandResult();
  REQUIRE(r != nullptr);
  return c::to_command_reply(*r);
}

}  // namespace

TEST_CASE("A CommandResult with a job decodes every JobStatus field", "[decode][snapshots]") {
  t::ResultSpec spec;
  spec.request_id = 42;
  spec.applied_step = 10;
  spec.job = t::JobSpec{7, wire::JobKind::Restore, wire::JobState::Queued, false, "noon", 0, ""};
  const auto payload = t::result_payload(spec);
  const c::CommandReply r = reply_of(payload);
  CHECK(r.request_id == 42);
  CHECK(r.accepted());
  CHECK(r.applied_step == 10);
  CHECK_FALSE(r.stats.has_value());
  CHECK_FALSE(r.snapshots.has_value());
  REQUIRE(r.job.has_value());
  CHECK(r.job->job_id == 7);
  CHECK(r.job->kind == wire::JobKind::Restore);
  CHECK(r.job->state == wire::JobState::Queued);
  CHECK_FALSE(r.job->terminal);
  CHECK(r.job->name == "noon");
  CHECK(r.job->message.empty());
  CHECK_FALSE(r.job->failed());
  CHECK_FALSE(r.job->succeeded());
}

TEST_CASE("A rejected snapshot command keeps reason, message and the failed job",
          "[decode][snapshots]") {
  t::ResultSpec spec;
  spec.status = wire::CommandStatus::Rejected;
  spec.reason = wire::RejectReason::StorageError;
  spec.message = "persistence queue is full";
  spec.job = t::JobSpec{9,  wire::JobKind::Save,        wire::JobState::Failed, true, "s1",
                        33, "persistence queue is full"};
  const auto payload = t::result_payload(spec);
  const c::CommandReply r = reply_of(payload);
  CHECK_FALSE(r.accepted());
  CHECK(r.reason == wire::RejectReason::StorageError);
  CHECK(r.message == "persistence queue is full");
  REQUIRE(r.job.has_value());
  CHECK(r.job->failed());
  CHECK(r.job->terminal);
  CHECK_FALSE(r.job->succeeded());
  CHECK(r.job->step == 33);
  CHECK(r.job->message == "persistence queue is full");

  // The new reject reasons have wire names the CLI prints.
  CHECK(std::string(wire::EnumNameRejectReason(wire::RejectReason::NotFound)) == "NotFound");
  CHECK(std::string(wire::EnumNameRejectReason(wire::RejectReason::StorageError)) ==
        "StorageError");
  CHECK(std::string(wire::EnumNameRejectReason(wire::RejectReason::WorldReplaced)) ==
        "WorldReplaced");
}

TEST_CASE("A ListSnapshots result decodes every row in order, and empty differs from absent",
          "[decode][snapshots]") {
  t::ResultSpec spec;
  spec.snapshots = std::vector<t::SnapshotSpec>{
      {"a", "checkpoint", "city.v1", 10, 1'000'000, 0xfeedfacecafebeefull, 120, 1'700'000'000'123},
      {"b", "save", "city.v1", 20, 2'000'000, 1, 0, -5},
  };
  const auto payload = t::result_payload(spec);
  const c::CommandReply r = reply_of(payload);
  CHECK_FALSE(r.job.has_value());
  REQUIRE(r.snapshots.has_value());
  REQUIRE(r.snapshots->size() == 2);
  const c::SnapshotEntry& a = (*r.snapshots)[0];
  CHECK(a.name == "a");
  CHECK(a.kind == "checkpoint");
  CHECK(a.scenario_id == "city.v1");
  CHECK(a.step == 10);
  CHECK(a.sim_time_us == 1'000'000);
  CHECK(a.digest == 0xfeedfacecafebeefull);
  CHECK(a.pedestrians == 120);
  CHECK(a.created_unix_ms == 1'700'000'000'123);
  const c::SnapshotEntry& b = (*r.snapshots)[1];
  CHECK(b.name == "b");
  CHECK(b.kind == "save");
  CHECK(b.created_unix_ms == -5);

  t::ResultSpec empty;
  empty.snapshots = std::vector<t::SnapshotSpec>{};
  const auto empty_payload = t::result_payload(empty);
  const c::CommandReply e = reply_of(empty_payload);
  REQUIRE(e.snapshots.has_value());
  CHECK(e.snapshots->empty());

  const auto plain_payload = t::result_payload(t::ResultSpec{});
  CHECK_FALSE(reply_of(plain_payload).snapshots.has_value());
}

TEST_CASE("A JobUpdate decodes to JobInfo for terminal success and failure",
          "[decode][snapshots]") {
  const auto done_payload = t::job_update_payload(
      {3, wire::JobKind::Load, wire::JobState::RepresentationRebuilt, true, "s", 20, ""});
  const auto* done = verified(done_payload)->message_as_JobUpdate();
  REQUIRE(done != nullptr);
  REQUIRE(done->job() != nullptr);
  const c::JobInfo j = c::to_job_info(*done->job());
  CHECK(j.job_id == 3);
  CHECK(j.kind == wire::JobKind::Load);
  CHECK(j.state == wire::JobState::RepresentationRebuilt);
  CHECK(j.terminal);
  CHECK(j.succeeded());
  CHECK(j.step == 20);

  const auto fail_payload =
      t::job_update_payload({4, wire::JobKind::Restore, wire::JobState::Failed, true, "missing", 0,
                             "snap.db: snapshots name='missing': no snapshot with this name"});
  const c::JobInfo f = c::to_job_info(*verified(fail_payload)->message_as_JobUpdate()->job());
  CHECK(f.failed());
  CHECK_FALSE(f.succeeded());
  CHECK(f.message.find("missing") != std::string::npos);
}

TEST_CASE("Stats decode the recording fields", "[decode]") {
  const auto payload = t::command_result_payload(5, wire::CommandStatus::Accepted,
                                                 wire::RejectReason::None, 30, true);
  const c::CommandReply r = reply_of(payload);
  REQUIRE(r.stats.has_value());
  CHECK(r.stats->recording);
  CHECK_FALSE(r.stats->recording_failed);
  CHECK(r.stats->recorded_ticks == 77);
  CHECK(r.stats->step == 30);
}
