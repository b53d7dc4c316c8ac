// verify_recording(): keyframe-to-keyframe segments on several threads give
// the verdict one world replayed from the start gives, on clean recordings
// and on recordings doctored in the first, a middle or the last segment, or
// in a keyframe.
#include "bustle/replay/verify.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "recording_fixture.hpp"

namespace t = bustle::test;
using bustle::replay::DivergenceKind;
using bustle::replay::ReplayOptions;
using bustle::replay::verify_recording;
using bustle::replay::VerifyReport;
using bustle::replay::VerifyVerdict;

namespace {

// 400 ticks with periodic keyframes every 50: 8 segments (1, 51, ..., 351).
t::RecordingPlan eight_segments() {
  t::RecordingPlan plan;
  plan.ticks = 400;
  plan.periodic_every = 50;
  return plan;
}

VerifyReport verify(const std::string& path, std::uint32_t jobs) {
  ReplayOptions o;
  o.file = path;
  o.jobs = jobs;
  return verify_recording(o);
}

// The sequential reference and several parallel runs agree on everything a
// verdict says.
VerifyReport same_verdict_for_all_jobs(const std::string& path, std::uint32_t segments = 8) {
  const VerifyReport seq = verify(path, 1);
  CHECK(seq.jobs == 1);
  CHECK(seq.segments == 1);
  for (std::uint32_t jobs : {2u, 3u, 8u}) {
    INFO("jobs " << jobs);
    const VerifyReport par = verify(path, jobs);
    CHECK(par.jobs == jobs);
    CHECK(par.segments == segments);
    CHECK(par.verdict == seq.verdict);
    CHECK(par.error == seq.error);
    CHECK(par.kind == seq.kind);
    CHECK(par.tick == seq.tick);
    CHECK(par.step == seq.step);
    CHECK(par.recorded_digest == seq.recorded_digest);
    CHECK(par.replayed_digest == seq.replayed_digest);
    CHECK(par.ticks == seq.ticks);
    CHECK(par.step_first == seq.step_first);
    CHECK(par.step_last == seq.step_last);
  }
  return seq;
}

}  // namespace

TEST_CASE("parallel verify: a clean recording verifies in every segment", "[replay][verify]") {
  t::TempDir dir;
  const auto rec = t::record_session(dir.file("clean.bustle-rec"), eight_segments());
  REQUIRE(rec.keyframe_ticks.size() == 8);
  const VerifyReport r = same_verdict_for_all_jobs(rec.path);
  CHECK(r.verdict == VerifyVerdict::Ok);
  CHECK(r.ticks == 400);
  CHECK(r.step_first == 1);
  CHECK(r.step_last == 400);

  // A sub-range cuts segments at its ends.
  ReplayOptions o;
  o.file = rec.path;
  o.from_step = 120;
  o.to_step = 260;
  for (std::uint32_t jobs : {1u, 2u}) {
    o.jobs = jobs;
    const VerifyReport sub = verify_recording(o);
    CHECK(sub.verdict == VerifyVerdict::Ok);
    CHECK(sub.ticks == 160);  // keyframe 101 .. tick 260
    CHECK(sub.step_first == 101);
    CHECK(sub.step_last == 260);
    CHECK(sub.segments == (jobs == 1 ? 1u : 4u));  // 101, 151, 201, 251
  }
}

TEST_CASE("parallel verify: a restore keyframe starts a segment with no check across it",
          "[replay][verify]") {
  t::TempDir dir;
  t::RecordingPlan plan = eight_segments();
  plan.restore_at_tick = 230;  // the world goes back to the state before tick 120
  plan.restore_from_tick = 120;
  const auto rec = t::record_session(dir.file("restore.bustle-rec"), plan);
  REQUIRE(rec.step_at_tick(230) == 120);  // steps repeat after the restore
  const VerifyReport r = same_verdict_for_all_jobs(rec.path, 9);
  CHECK(r.verdict == VerifyVerdict::Ok);
  CHECK(r.ticks == 400);

  // A changed command after the restore still diverges at its tick.
  REQUIRE(t::exec_sql(rec.path, t::sql_bump_target_count(rec.path, 240)) == 1);
  const VerifyReport d = same_verdict_for_all_jobs(rec.path, 9);
  CHECK(d.verdict == VerifyVerdict::Diverged);
  CHECK(d.tick == 240);
}

TEST_CASE("parallel verify: a changed command diverges at its tick in any segment",
          "[replay][verify]") {
  // Segment 1 (ticks 1..50), segment 3 (101..150) and the last (351..400).
  for (std::uint64_t tick : {20u, 130u, 380u}) {
    DYNAMIC_SECTION("command at tick " << tick) {
      t::TempDir dir;
      const auto rec = t::record_session(dir.file("cmd.bustle-rec"), eight_segments());
      REQUIRE(t::exec_sql(rec.path, t::sql_bump_target_count(rec.path, tick)) == 1);
      const VerifyReport r = same_verdict_for_all_jobs(rec.path);
      CHECK(r.verdict == VerifyVerdict::Diverged);
      CHECK(r.kind == DivergenceKind::Tick);
      CHECK(r.tick == tick);
      CHECK(r.step == tick);
      CHECK(r.recorded_digest == rec.digest_at_tick(tick));
      CHECK(r.replayed_digest != r.recorded_digest);
    }
  }
}

TEST_CASE("parallel verify: the earliest of several divergences wins", "[replay][verify]") {
  t::TempDir dir;
  const auto rec = t::record_session(dir.file("two.bustle-rec"), eight_segments());
  // A late one in the last segment, an early one in segment 2; the late
  // segment may well finish first on another thread.
  REQUIRE(t::exec_sql(rec.path, t::sql_bump_target_count(rec.path, 390)) == 1);
  t::exec_sql(rec.path, "UPDATE recording_ticks SET digest = ~digest WHERE tick = 77");
  const VerifyReport r = same_verdict_for_all_jobs(rec.path);
  CHECK(r.verdict == VerifyVerdict::Diverged);
  CHECK(r.tick == 77);
  CHECK(r.recorded_digest == ~rec.digest_at_tick(77));
  CHECK(r.replayed_digest == rec.digest_at_tick(77));
}

TEST_CASE("parallel verify: a wrong keyframe diverges at its tick", "[replay][verify]") {
  t::TempDir dir;
  t::RecordingPlan plan = eight_segments();
  plan.wrong_keyframe_tick = 151;  // segment 4 starts from it
  const auto rec = t::record_session(dir.file("kf.bustle-rec"), plan);
  const VerifyReport r = same_verdict_for_all_jobs(rec.path);
  CHECK(r.verdict == VerifyVerdict::Diverged);
  CHECK(r.kind == DivergenceKind::Keyframe);
  CHECK(r.tick == 151);
  CHECK(r.step == 150);  // the keyframe's state: after tick 150's step
  CHECK(r.recorded_digest != r.replayed_digest);
}

TEST_CASE("parallel verify: a keyframe that does not restore is a file error at its tick",
          "[replay][verify]") {
  t::TempDir dir;
  const auto rec = t::record_session(dir.file("bad.bustle-rec"), eight_segments());
  t::exec_sql(rec.path,
              "UPDATE world_state SET pedestrian_target = 1000000 WHERE snapshot_id = "
              "(SELECT snapshot_id FROM recording_keyframes WHERE tick = 201)");
  const VerifyReport r = same_verdict_for_all_jobs(rec.path);
  CHECK(r.verdict == VerifyVerdict::Error);
  CHECK(r.error.find("tick=201") != std::string::npos);
  CHECK(r.error.find("pedestrian_target") != std::string::npos);

  // An earlier divergence still comes first.
  t::exec_sql(rec.path, "UPDATE recording_ticks SET digest = ~digest WHERE tick = 120");
  const VerifyReport e = same_verdict_for_all_jobs(rec.path);
  CHECK(e.verdict == VerifyVerdict::Diverged);
  CHECK(e.tick == 120);
}

TEST_CASE("verify progress line", "[replay][verify]") {
  using bustle::replay::format_progress;
  CHECK(format_progress(500, 2000, 2.0, 2) ==
        "verify: 500/2000 ticks (25%)  250 steps/s  ETA 6.0 s  [2 jobs]");
  CHECK(format_progress(0, 2000, 0.0, 1) == "verify: 0/2000 ticks (0%)  0 steps/s  [1 job]");
  CHECK(format_progress(2000, 2000, 4.0, 1) ==
        "verify: 2000/2000 ticks (100%)  500 steps/s  [1 job]");
}
