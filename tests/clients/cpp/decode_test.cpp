// Decoding of server answers into the SDK's owned types: CommandResult with a
// job or a snapshot list, JobUpdate, the Stats recording fields, the v2
// Welcome geometry and Delta (malformed motion bytes included). Frames
// are built in memory and pass the same verifier as frames from a socket.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "bustle/client/replies.hpp"
#include "bustle/proto/framing.hpp"
#include "support/sdk_frames.hpp"

namespace c = bustle::client;
namespace t = bustle::test;
namespace wire = bustle::wire;

namespace {

const wire::ServerFrame* verified_server_frame(const std::vector<std::uint8_t>& payload) {
  std::string error;
  const auto* root = bustle::proto::verify_server_frame(payload, error);
  INFO(error);
  REQUIRE(root != nullptr);
  return root;
}

c::CommandReply reply_of(const std::vector<std::uint8_t>& payload) {
  const auto* r = verified_server_frame(payload)->message_as_CommandResult();
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
  const auto* done = verified_server_frame(done_payload)->message_as_JobUpdate();
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
  const c::JobInfo f =
      c::to_job_info(*verified_server_frame(fail_payload)->message_as_JobUpdate()->job());
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

namespace {

// The error decode_delta gives for a Delta built from `spec` ("" when it decodes).
std::string decode_error(const t::DeltaSpec& spec) {
  const auto payload = t::delta_payload(spec);
  const wire::Delta* d = verified_server_frame(payload)->message_as_Delta();
  REQUIRE(d != nullptr);
  c::Delta out;
  return c::decode_delta(*d, out);
}

}  // namespace

TEST_CASE("A v2 Delta decodes every field into SDK types", "[decode][v2]") {
  t::DeltaSpec spec;
  spec.step = 77;
  spec.sim_time_us = 7'700'000;
  spec.digest = 0xfeed;
  spec.baseline = true;
  spec.entered = {t::enter(3, 2, 5, 1234, 1400, wire::EntityKind::Vehicle, 4, wire::SimTier::Coarse,
                           wire::RepresentationHint::Marker, wire::ControlPolicy::Parked),
                  t::enter(9, 1, 0, 0)};
  spec.labels = {{3, "vehicle.g.000003"}};
  spec.motion = {t::motion(1, 10, 20), t::motion(300, 5, 0, 7),
                 t::motion(100000, 4000000000u, 1u << 20)};
  spec.changes = {wire::EntityChange(1, wire::EntityField::Representation, 1)};
  spec.left = {wire::EntityId(4, 4)};
  spec.signals = {wire::SignalPhaseState(1, wire::SignalPhase::Closed)};
  spec.with_dots = true;
  spec.dots = {wire::ChainDots(2, 30)};
  spec.retiring = {wire::EntityId(9, 1)};
  spec.interest_truncated = 12;
  const c::Delta d = t::decoded(spec);
  CHECK(d.step == 77);
  CHECK(d.sim_time_us == 7'700'000);
  CHECK(d.digest == 0xfeed);
  CHECK(d.baseline);
  REQUIRE(d.entered.size() == 2);
  CHECK(d.entered[0] == c::EnteredEntity{{3, 2},
                                         5,
                                         1234,
                                         1400,
                                         4,
                                         c::EntityKind::Vehicle,
                                         c::SimTier::Coarse,
                                         c::RepresentationHint::Marker,
                                         c::ControlPolicy::Parked});
  CHECK(d.entered[1].id == c::EntityId{9, 1});
  CHECK(d.entered[1].representation == c::RepresentationHint::Actor);
  CHECK(d.labels == std::vector<c::EntityLabel>{{3, "vehicle.g.000003"}});
  REQUIRE(d.motion.size() == 3);
  CHECK(d.motion[0] == bustle::proto::MotionRecord{1, false, 0, 10, 20});
  CHECK(d.motion[1] == bustle::proto::MotionRecord{300, true, 7, 5, 0});
  CHECK(d.motion[2] == bustle::proto::MotionRecord{100000, false, 0, 4000000000u, 1u << 20});
  CHECK(d.motion_bytes > 0);
  REQUIRE(d.changes.size() == 1);
  CHECK(d.changes[0].field == c::EntityField::Representation);
  CHECK(d.changes[0].representation() == c::RepresentationHint::Instanced);
  CHECK(d.left == std::vector<c::EntityId>{{4, 4}});
  CHECK(d.signals == std::vector<c::SignalPhaseEntry>{{1, wire::SignalPhase::Closed}});
  REQUIRE(d.dots.has_value());
  CHECK(*d.dots == std::vector<c::ChainDotsEntry>{{2, 30}});
  CHECK(d.retiring == std::vector<c::EntityId>{{9, 1}});
  CHECK(d.interest_truncated == 12);

  // Absent vectors decode empty; dots absent differ from dots empty.
  const c::Delta empty = t::decoded(t::DeltaSpec{});
  CHECK(empty.entered.empty());
  CHECK(empty.motion.empty());
  CHECK(empty.motion_bytes == 0);
  CHECK_FALSE(empty.dots.has_value());
  t::DeltaSpec no_dots;
  no_dots.with_dots = true;
  REQUIRE(t::decoded(no_dots).dots.has_value());
  CHECK(t::decoded(no_dots).dots->empty());
}

TEST_CASE("A malformed motion vector is a decode error naming the byte", "[decode][v2]") {
  auto with_motion = [](std::vector<std::uint8_t> bytes) {
    t::DeltaSpec spec;
    spec.motion_bytes = std::move(bytes);
    return decode_error(spec);
  };
  // A valid record (index 5, lane 0, s 1, speed 2), then one cut short.
  CHECK(with_motion({5, 0, 1, 2}).empty());
  CHECK(with_motion({5, 0, 1, 2, 1, 0}) == "motion[byte 6]: truncated or over-long varint (s_mm)");
  CHECK(with_motion({0x80}) == "motion[byte 0]: truncated or over-long varint (index delta)");
  // Eleven continuation bytes: longer than any 64-bit varint.
  CHECK(with_motion({5, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0}) ==
        "motion[byte 2]: truncated or over-long varint (s_mm)");
  // s_mm of 2^32: over 32 bits.
  const std::string over = with_motion({5, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0});
  CHECK(over.find("motion[byte 2]: s_mm 4294967296 exceeds 32 bits") == 0);
  // A second record with index delta 0: indices must increase.
  CHECK(with_motion({5, 0, 1, 2, 0, 0, 1, 2}) ==
        "motion[byte 4]: index delta 0 (indices must increase)");
  // The lane code may be one more than the largest lane index, no more.
  CHECK(with_motion({5, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0}).empty());
  CHECK_FALSE(with_motion({5, 0x81, 0x80, 0x80, 0x80, 0x10, 0, 0}).empty());
}

TEST_CASE("Out-of-range enums in entered and changes are decode errors naming the entry",
          "[decode][v2]") {
  t::DeltaSpec tier;
  tier.entered = {t::enter(1, 1, 0, 0), t::enter(2, 1, 0, 0, 0, wire::EntityKind::Pedestrian, 0,
                                                 static_cast<wire::SimTier>(9))};
  CHECK(decode_error(tier) == "entered[1].sim_tier: 9 is not a valid SimTier");
  t::DeltaSpec rep;
  rep.entered = {t::enter(1, 1, 0, 0, 0, wire::EntityKind::Pedestrian, 0, wire::SimTier::Full,
                          static_cast<wire::RepresentationHint>(4))};
  CHECK(decode_error(rep) == "entered[0].representation: 4 is not a valid RepresentationHint");
  t::DeltaSpec kind;
  kind.entered = {t::enter(1, 1, 0, 0, 0, static_cast<wire::EntityKind>(2))};
  CHECK(decode_error(kind) == "entered[0].kind: 2 is not a valid EntityKind");
  t::DeltaSpec field;
  field.changes = {wire::EntityChange(1, static_cast<wire::EntityField>(4), 0)};
  CHECK(decode_error(field) == "changes[0].field: 4 is not a valid EntityField");
  t::DeltaSpec alive;  // a corpse never comes back: its change carries 1 only
  alive.changes = {wire::EntityChange(1, wire::EntityField::Corpse, 1),
                   wire::EntityChange(2, wire::EntityField::Corpse, 0)};
  CHECK(decode_error(alive) == "changes[1].value: 0 is not a valid Corpse (only 1)");
  t::DeltaSpec value;
  value.changes = {wire::EntityChange(1, wire::EntityField::Policy, 6),
                   wire::EntityChange(1, wire::EntityField::Policy, 7)};
  CHECK(decode_error(value) == "changes[1].value: 7 is not a valid ControlPolicy");
}

TEST_CASE("Welcome lanes decode in doubles with length_mm, elevation and archetypes",
          "[decode][v2]") {
  t::WelcomeSpec spec;
  spec.step_us = 50000;
  spec.lanes = {{"a", {{0.125, 0.5}, {3.125, 4.5}}, 1.5f, wire::LaneKind::Road, {1}},
                {"b", {{3.125, 4.5}, {3.125, 14.5}}, 0.0f, wire::LaneKind::Crossing, {}, 9999}};
  spec.archetypes = {"pedestrian", "vehicle.van"};
  const c::WelcomeInfo w = t::decoded(spec);
  CHECK(w.step_us == 50000);
  REQUIRE(w.lanes.size() == 2);
  const c::LaneGeometry& a = w.lanes[0];
  CHECK(a.index == 0);
  CHECK(a.id == "a");
  CHECK(a.kind == wire::LaneKind::Road);
  CHECK(a.points == std::vector<c::LanePoint>{{0.125, 0.5}, {3.125, 4.5}});
  CHECK(a.length_m == 5.0);
  CHECK(a.length_mm == 5000);
  CHECK(a.elevation_m == 1.5f);
  CHECK(a.successors == std::vector<std::uint32_t>{1});
  CHECK(w.lanes[1].length_mm == 9999);  // as sent, not recomputed
  CHECK(w.archetypes == std::vector<std::string>{"pedestrian", "vehicle.van"});

  const auto polylines = c::lane_polylines(w);
  REQUIRE(polylines.size() == 2);
  CHECK(polylines[0].length_m == 5.0);
  CHECK(polylines[0].length_mm == 5000);
  CHECK(polylines[0].elevation_m == 1.5);
  const auto mid = bustle::proto::sample_lane(polylines[0], 2.5);
  CHECK(mid.x_m == Approx(1.625));
  CHECK(mid.y_m == Approx(2.5));
  CHECK(mid.z_m == 1.5);
  CHECK(polylines[1].length_mm == 9999);
}
