// The Replayer against recordings built with persist::Recorder exactly as the
// live server writes them: full verification, seeking to keyframes, restore
// keyframes, and recordings altered on disk.
#include "bustle/replay/replayer.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>

#include "bustle/replay/options.hpp"
#include "recording_fixture.hpp"

namespace t = bustle::test;
using bustle::replay::Replayer;
using bustle::replay::ReplayError;
using bustle::replay::TickOutcome;

namespace {

std::unique_ptr<Replayer> open_ok(const std::string& path) {
  std::unique_ptr<Replayer> rep;
  const ReplayError e = Replayer::open(path, rep);
  INFO(e.message);
  REQUIRE(e.ok());
  REQUIRE(rep != nullptr);
  return rep;
}

// Replays from the keyframe before `from_tick` to the end; returns every outcome.
std::vector<TickOutcome> replay_all(Replayer& rep, std::uint64_t from_tick = 1) {
  const ReplayError e = rep.seek(from_tick);
  INFO(e.message);
  REQUIRE(e.ok());
  std::vector<TickOutcome> out;
  while (!rep.at_end()) {
    TickOutcome oc;
    const ReplayError err = rep.next_tick(oc);
    INFO(err.message);
    REQUIRE(err.ok());
    out.push_back(oc);
  }
  return out;
}

std::optional<std::uint64_t> first_divergence(const std::vector<TickOutcome>& outcomes) {
  for (const TickOutcome& oc : outcomes) {
    if (oc.diverged()) return oc.tick;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("the recording fixture produces churn and rejected commands", "[replay][fixture]") {
  // Guards the fixture itself: a recording without despawns, respawns and
  // rejected commands would let the replay tests pass trivially.
  t::TempDir dir;
  const auto rec = t::record_session(dir.file("churn.bustle-rec"), {});
  auto rep = open_ok(rec.path);
  const auto outcomes = replay_all(*rep);
  REQUIRE(outcomes.size() == 120);
  const auto& c = rep->world().counters();
  CHECK(c.despawned_total > 5);
  CHECK(c.despawned_by_reason[static_cast<std::size_t>(bustle::core::DespawnReason::LaneDeadEnd)] >
        0);
  CHECK(c.despawned_by_reason[static_cast<std::size_t>(bustle::core::DespawnReason::Requested)] >
        0);
  CHECK(c.spawned_total > c.despawned_total);
  CHECK(c.commands_rejected > 0);
  CHECK(c.commands_accepted > 10);
  // Digests change from tick to tick (the state really moves).
  std::size_t distinct = 0;
  for (std::size_t k = 1; k < rec.ticks.size(); ++k)
    distinct += rec.ticks[k].digest != rec.ticks[k - 1].digest;
  CHECK(distinct == rec.ticks.size() - 1);
}

TEST_CASE("Replayer verifies every tick of a recording", "[replay]") {
  t::TempDir dir;
  t::RecordingPlan plan;
  plan.ticks = 150;
  plan.periodic_every = 25;
  const auto rec = t::record_session(dir.file("full.bustle-rec"), plan);
  auto rep = open_ok(rec.path);
  CHECK(rep->last_tick() == 150);
  REQUIRE(rep->keyframes().size() == rec.keyframe_ticks.size());
  CHECK(rep->scenario().id == "test.replay.small-city.v1");

  const auto outcomes = replay_all(*rep);
  REQUIRE(outcomes.size() == 150);
  for (const TickOutcome& oc : outcomes) {
    INFO("tick " << oc.tick);
    CHECK_FALSE(oc.diverged());
    CHECK(oc.replayed_digest == rec.digest_at_tick(oc.tick));
    CHECK(oc.replayed_step == oc.tick);
    // Periodic keyframes are seek targets, never reloaded mid-stream.
    CHECK(oc.loaded_keyframe == (oc.tick == 1));
  }
  CHECK(outcomes.front().tick == 1);
  CHECK(outcomes.back().tick == 150);
}

TEST_CASE("Replayer reads a recording longer than one chunk", "[replay]") {
  t::TempDir dir;
  t::RecordingPlan plan;
  plan.ticks = Replayer::kChunkTicks + 300;
  const auto rec = t::record_session(dir.file("long.bustle-rec"), plan);
  auto rep = open_ok(rec.path);
  const auto outcomes = replay_all(*rep);
  REQUIRE(outcomes.size() == plan.ticks);
  CHECK_FALSE(first_divergence(outcomes).has_value());
  // Commands beyond the chunk boundary were applied (tick 4100 sets a target).
  std::size_t with_commands = 0;
  for (const TickOutcome& oc : outcomes)
    with_commands += oc.tick > Replayer::kChunkTicks && oc.commands > 0;
  CHECK(with_commands > 20);
}

TEST_CASE("seek starts at the nearest keyframe at or before the first tick reaching a step",
          "[replay]") {
  t::TempDir dir;
  t::RecordingPlan plan;
  plan.periodic_every = 25;  // keyframes at ticks 1, 26, 51, 76, 101
  const auto rec = t::record_session(dir.file("seek.bustle-rec"), plan);
  REQUIRE(rec.keyframe_ticks == std::vector<std::uint64_t>{1, 26, 51, 76, 101});
  // An altered digest before the keyframe must not be seen from there on.
  t::exec_sql(rec.path, "UPDATE recording_ticks SET digest = ~digest WHERE tick = 10");
  auto rep = open_ok(rec.path);

  std::optional<std::uint64_t> tick;
  REQUIRE(rep->first_tick_at_step(60, tick).ok());
  REQUIRE(tick == 60u);
  const auto from60 = replay_all(*rep, *tick);
  REQUIRE_FALSE(from60.empty());
  CHECK(from60.front().tick == 51);
  CHECK(from60.front().loaded_keyframe);
  CHECK(from60.size() == 70);
  CHECK_FALSE(first_divergence(from60).has_value());

  // Exactly at a keyframe.
  const auto from76 = replay_all(*rep, 76);
  CHECK(from76.front().tick == 76);
  CHECK_FALSE(first_divergence(from76).has_value());

  // From the start the altered tick is found.
  const auto all = replay_all(*rep, 1);
  CHECK(first_divergence(all) == 10u);

  REQUIRE(rep->first_tick_at_step(121, tick).ok());
  CHECK_FALSE(tick.has_value());
  CHECK_FALSE(rep->seek(121).ok());
}

TEST_CASE("a restore keyframe replaces the world where the live session did", "[replay]") {
  t::TempDir dir;
  t::RecordingPlan plan;
  plan.ticks = 120;
  plan.periodic_every = 40;  // 1, 41, 81
  plan.restore_from_tick = 30;
  plan.restore_at_tick = 60;  // tick 60 runs step 30 again
  const auto rec = t::record_session(dir.file("restore.bustle-rec"), plan);
  REQUIRE(rec.step_at_tick(59) == 59);
  REQUIRE(rec.step_at_tick(60) == 30);
  REQUIRE(rec.step_at_tick(120) == 90);

  SECTION("verifies all ticks, reloading at tick 60 only") {
    auto rep = open_ok(rec.path);
    const auto outcomes = replay_all(*rep);
    REQUIRE(outcomes.size() == 120);
    for (const TickOutcome& oc : outcomes) {
      INFO("tick " << oc.tick);
      CHECK_FALSE(oc.diverged());
      CHECK(oc.loaded_keyframe == (oc.tick == 1 || oc.tick == 60));
    }
    // Steps repeat after the restore, digests match the live run there too.
    CHECK(outcomes[59].replayed_step == 30);
    CHECK(outcomes[59].replayed_digest == rec.digest_at_tick(60));
  }
  SECTION("seeking past the restore starts from it") {
    auto rep = open_ok(rec.path);
    std::optional<std::uint64_t> tick;
    REQUIRE(rep->first_tick_at_step(65, tick).ok());
    CHECK(tick == 95u);  // steps 1..59 at ticks 1..59, then 30..90 at ticks 60..120
    REQUIRE(rep->first_tick_at_step(50, tick).ok());
    CHECK(tick == 50u);
    const auto outcomes = replay_all(*rep, 70);
    REQUIRE_FALSE(outcomes.empty());
    CHECK(outcomes.front().tick == 60);
    CHECK(outcomes.front().replayed_step == 30);
    CHECK_FALSE(first_divergence(outcomes).has_value());
  }
  SECTION("without the restore keyframe the replay diverges exactly there") {
    CHECK(t::exec_sql(rec.path, "DELETE FROM recording_keyframes WHERE reason = 'restore'") == 1);
    auto rep = open_ok(rec.path);
    CHECK(first_divergence(replay_all(*rep)) == 60u);
  }
}

TEST_CASE("an altered command log diverges at exactly that tick", "[replay]") {
  t::TempDir dir;
  t::RecordingPlan plan;
  plan.periodic_every = 25;
  const auto rec = t::record_session(dir.file("cmd.bustle-rec"), plan);
  REQUIRE(t::exec_sql(rec.path, t::sql_bump_target_count(rec.path, 40)) == 1);
  auto rep = open_ok(rec.path);
  const auto outcomes = replay_all(*rep);
  const auto at = first_divergence(outcomes);
  REQUIRE(at.has_value());
  CHECK(*at == 40);
  CHECK(outcomes[39].recorded_step == 40);
  CHECK(outcomes[39].recorded_digest == rec.digest_at_tick(40));
  CHECK(outcomes[39].replayed_digest != rec.digest_at_tick(40));
}

TEST_CASE("a dropped command diverges at its tick", "[replay]") {
  t::TempDir dir;
  const auto rec = t::record_session(dir.file("drop.bustle-rec"), {});
  REQUIRE(t::exec_sql(rec.path, "DELETE FROM recording_commands WHERE tick = 52") ==
          1);  // a despawn
  auto rep = open_ok(rec.path);
  CHECK(first_divergence(replay_all(*rep)) == 52u);
}

TEST_CASE("an altered digest diverges at exactly that tick", "[replay]") {
  t::TempDir dir;
  const auto rec = t::record_session(dir.file("digest.bustle-rec"), {});
  REQUIRE(t::exec_sql(rec.path, "UPDATE recording_ticks SET digest = ~digest WHERE tick = 77") ==
          1);
  auto rep = open_ok(rec.path);
  const auto outcomes = replay_all(*rep);
  CHECK(first_divergence(outcomes) == 77u);
  CHECK(outcomes[76].replayed_digest == rec.digest_at_tick(77));
  CHECK(outcomes[76].recorded_digest == ~rec.digest_at_tick(77));
  // Only that tick: the replayed state itself did not diverge.
  std::size_t diverged = 0;
  for (const TickOutcome& oc : outcomes) diverged += oc.diverged();
  CHECK(diverged == 1);
}

TEST_CASE("unreadable recordings are errors naming the file", "[replay][errors]") {
  t::TempDir dir;
  std::unique_ptr<Replayer> rep;

  SECTION("missing file") {
    const std::string path = dir.file("nope.bustle-rec");
    const ReplayError e = Replayer::open(path, rep);
    REQUIRE_FALSE(e.ok());
    CHECK(e.message.find(path) != std::string::npos);
    CHECK(rep == nullptr);
  }
  SECTION("not SQLite") {
    const std::string path = dir.file("text.bustle-rec");
    std::FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("this is not a database, just text that is long enough to be read as a header\n", f);
    std::fclose(f);
    const ReplayError e = Replayer::open(path, rep);
    REQUIRE_FALSE(e.ok());
    CHECK(e.message.find(path) != std::string::npos);
  }
  SECTION("a snapshot store, not a recording") {
    const std::string path = dir.file("snapshots.db");
    bustle::persist::SnapshotStore store;
    REQUIRE(bustle::persist::SnapshotStore::open(path, bustle::persist::FileKind::Snapshots, true,
                                                 store)
                .ok());
    const ReplayError e = Replayer::open(path, rep);
    REQUIRE_FALSE(e.ok());
    CHECK(e.message.find(path) != std::string::npos);
    CHECK(e.message.find("file_kind") != std::string::npos);
  }
  SECTION("missing initial keyframe") {
    const auto rec = t::record_session(dir.file("nokf.bustle-rec"), {});
    t::exec_sql(rec.path, "DELETE FROM recording_keyframes WHERE tick = 1");
    const ReplayError e = Replayer::open(rec.path, rep);
    REQUIRE_FALSE(e.ok());
    CHECK(e.message.find("recording_keyframes") != std::string::npos);
  }
  SECTION("a keyframe whose checkpoint fails validation") {
    t::RecordingPlan plan;
    plan.periodic_every = 50;  // 1, 51, 101
    const auto rec = t::record_session(dir.file("badkf.bustle-rec"), plan);
    // A counter edited on disk: structurally fine, but the digest check fails.
    t::exec_sql(rec.path,
                "UPDATE world_state SET spawned_total = spawned_total + 1 WHERE snapshot_id = "
                "(SELECT snapshot_id FROM recording_keyframes WHERE tick = 51)");
    rep = open_ok(rec.path);
    CHECK(rep->seek(1).ok());
    const ReplayError e = rep->seek(60);
    REQUIRE_FALSE(e.ok());
    CHECK(e.message.find(rec.path) != std::string::npos);
    CHECK(e.message.find("tick=51") != std::string::npos);
    CHECK(e.message.find("digest") != std::string::npos);
  }
  SECTION("a command row with missing arguments") {
    const auto rec = t::record_session(dir.file("badcmd.bustle-rec"), {});
    REQUIRE(t::exec_sql(rec.path, t::sql_drop_target_count(rec.path, 30)) == 1);
    rep = open_ok(rec.path);
    REQUIRE(rep->seek(1).ok());
    ReplayError e;
    TickOutcome oc;
    while (e.ok() && !rep->at_end()) e = rep->next_tick(oc);
    REQUIRE_FALSE(e.ok());
    CHECK(e.message.find("recording_commands") != std::string::npos);
    CHECK(e.message.find("tick=30") != std::string::npos);
  }
}

TEST_CASE("bustle-replay options", "[replay][options]") {
  using bustle::replay::parse_options;
  using bustle::replay::ReplayClock;
  using bustle::replay::ReplayCommand;
  // A flag takes no value, not even "true" (CLI11 would take one).
  for (const char* flag : {"--help=no", "--version=yes", "--json=true"}) {
    INFO(flag);
    CHECK(parse_options({"verify", "f.db", flag}).error.find(": takes no value") !=
          std::string::npos);
  }
  auto p = parse_options({"verify", "f.db", "--from-step", "10", "--to-step", "20"});
  REQUIRE(p.error.empty());
  CHECK(p.options.command == ReplayCommand::Verify);
  CHECK(p.options.file == "f.db");
  CHECK(p.options.from_step == 10u);
  CHECK(p.options.to_step == 20u);

  p = parse_options({"serve", "f.db", "--port", "0", "--clock", "fast", "--loop", "--bind", "::1"});
  REQUIRE(p.error.empty());
  CHECK(p.options.command == ReplayCommand::Serve);
  CHECK(p.options.port == 0);
  CHECK(p.options.clock == ReplayClock::Fast);
  CHECK(p.options.loop);
  CHECK(p.options.bind_address == "::1");

  p = parse_options({"serve", "f.db", "--rate", "20"});
  REQUIRE(p.error.empty());
  CHECK(p.options.rate_hz == 20.0);

  CHECK_FALSE(parse_options({}).error.empty());
  CHECK_FALSE(parse_options({"verify"}).error.empty());
  CHECK_FALSE(parse_options({"check", "f.db"}).error.empty());
  CHECK_FALSE(parse_options({"verify", "f.db", "--port", "1"}).error.empty());  // serve only
  CHECK_FALSE(parse_options({"verify", "f.db", "--from-step", "x"}).error.empty());
  CHECK_FALSE(
      parse_options({"verify", "f.db", "--from-step", "9", "--to-step", "3"}).error.empty());
  CHECK_FALSE(parse_options({"serve", "f.db", "--rate", "20", "--clock", "fast"}).error.empty());
  CHECK_FALSE(parse_options({"serve", "f.db", "--rate", "0"}).error.empty());
  CHECK_FALSE(parse_options({"serve", "f.db", "--port", "70000"}).error.empty());
  CHECK_FALSE(parse_options({"serve", "a.db", "b.db"}).error.empty());
  CHECK(parse_options({"--help"}).options.command == ReplayCommand::Help);
  CHECK(parse_options({"verify", "--help"}).help.find("--jobs") != std::string::npos);
  CHECK(parse_options({"--version"}).options.command == ReplayCommand::Version);

  p = parse_options({"verify", "f.db", "--jobs", "4", "--json", "--progress", "never"});
  REQUIRE(p.error.empty());
  CHECK(p.options.jobs == 4);
  CHECK(p.options.json);
  CHECK(p.options.progress == bustle::replay::ProgressMode::Never);
  CHECK(parse_options({"verify", "f.db"}).options.jobs == 0);  // one per core
  CHECK(parse_options({"verify", "f.db", "--jobs", "0"}).error ==
        "verify: --jobs: expected a number of jobs in 1..256, got '0'");
  CHECK(parse_options({"verify", "f.db", "--progress", "often"}).error ==
        "verify: --progress: expected auto, always or never, got 'often'");
  CHECK(parse_options({"serve", "f.db", "--port", "x"}).error ==
        "serve: --port: expected 0..65535, got 'x'");

  p = parse_options({"diff", "a.db", "b.db", "--limit", "3", "--json"});
  REQUIRE(p.error.empty());
  CHECK(p.options.command == ReplayCommand::Diff);
  CHECK(p.options.file == "a.db");
  CHECK(p.options.file_b == "b.db");
  CHECK(p.options.diff_entities_max == 3);
  CHECK(p.options.json);
  CHECK_FALSE(parse_options({"diff", "a.db"}).error.empty());
  CHECK_FALSE(parse_options({"diff", "a.db", "b.db", "c.db"}).error.empty());
}

// Not a test: writes a recording for manual runs and measurements, e.g.
//   BUSTLE_MAKE_RECORDING=/tmp/big.rec BUSTLE_MAKE_TICKS=600 BUSTLE_MAKE_PEDESTRIANS=100000
//   replay_tests "[.make-recording]"
TEST_CASE("make a recording from the environment", "[.make-recording]") {
  const char* path = std::getenv("BUSTLE_MAKE_RECORDING");
  REQUIRE(path != nullptr);
  const auto env_u32 = [](const char* name, std::uint32_t fallback) {
    const char* v = std::getenv(name);
    return v != nullptr ? static_cast<std::uint32_t>(std::stoul(v)) : fallback;
  };
  t::RecordingPlan plan;
  plan.ticks = env_u32("BUSTLE_MAKE_TICKS", 600);
  plan.periodic_every = env_u32("BUSTLE_MAKE_KEYFRAME_EVERY", 0);
  const std::uint32_t peds = env_u32("BUSTLE_MAKE_PEDESTRIANS", 60);
  if (peds > 200) {
    // A big city: the scripted targets (40/70) would empty it, so no commands.
    plan.scenario_json = t::small_city_json(peds, 131072, peds);
    plan.commands = false;
  }
  t::record_session(path, plan);
}
