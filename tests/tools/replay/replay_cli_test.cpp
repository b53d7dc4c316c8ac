// The bustle-replay executable: verify's exit codes and output lines, and
// serve streaming a recording to the C++ SDK client over a loopback socket.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "bustle/client/client.hpp"
#include "bustle/persist/snapshot_store.hpp"
#include "recording_fixture.hpp"
#include "support/process.hpp"

#ifndef BUSTLE_REPLAY_PATH
#error "BUSTLE_REPLAY_PATH must name the bustle-replay executable"
#endif

namespace t = bustle::test;
namespace c = bustle::client;
using namespace std::chrono_literals;

namespace {

t::RunResult replay(std::vector<std::string> args) {
  std::vector<std::string> argv = {BUSTLE_REPLAY_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return t::run_process(argv, 15000ms);
}

// A running `bustle-replay serve`; always stopped (SIGTERM, then SIGKILL after
// a bound) when the test ends, even on a failed REQUIRE.
struct ServeUnderTest {
  t::ChildProcess process;
  std::uint16_t port = 0;
  std::string stderr_path;
  ~ServeUnderTest() {
    if (process.running()) process.terminate(3000ms);
  }
};

void start_serve(ServeUnderTest& s, const std::string& file, const std::vector<std::string>& extra,
                 const std::string& stderr_path) {
  std::vector<std::string> argv = {BUSTLE_REPLAY_PATH, "serve", file, "--port", "0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  s.stderr_path = stderr_path;
  std::string error;
  REQUIRE(s.process.start(argv, stderr_path, error));
  const auto line = s.process.read_line(10000ms);
  INFO("stderr: " << t::file_tail(stderr_path));
  REQUIRE(line.has_value());
  static const std::regex kListening(R"(bustle-replay listening on 127\.0\.0\.1:([0-9]+))");
  std::smatch m;
  REQUIRE(std::regex_match(*line, m, kListening));
  s.port = static_cast<std::uint16_t>(std::stoul(m[1].str()));
  REQUIRE(s.port != 0);
}

c::Client connect_operator(std::uint16_t port) {
  c::ClientOptions opt;
  opt.port = port;
  opt.role = bustle::wire::Role::Operator;
  opt.client_name = "replay-test";
  return c::Client(opt);
}

c::StatsInfo query_stats(c::Client& client) {
  const auto r = client.command(c::QueryStatsCmd{}, 3000ms);
  INFO(r.message);
  REQUIRE(r.ok());
  REQUIRE(r.value.accepted());
  REQUIRE(r.value.stats.has_value());
  return *r.value.stats;
}

}  // namespace

TEST_CASE("bustle-replay verify: OK line and exit 0 on an intact recording", "[replay][cli]") {
  t::TempDir dir;
  t::RecordingPlan plan;
  plan.periodic_every = 25;  // keyframes at 1, 26, 51, 76, 101
  const auto rec = t::record_session(dir.file("ok.bustle-rec"), plan);

  auto r = replay({"verify", rec.path});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exited);
  CHECK(r.exit.exit_code == 0);
  static const std::regex kOk(
      R"(OK verified 120 ticks \(steps 1\.\.120\) in [0-9]+\.[0-9]{3} s, [0-9]+\.[0-9]x real time )"
      R"(\([0-9]+ jobs?, [0-9]+ segments?\)\n)");
  CHECK(std::regex_match(r.out, kOk));

  r = replay({"verify", rec.path, "--from-step", "60"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.rfind("OK verified 70 ticks (steps 51..120) in ", 0) == 0);

  r = replay({"verify", rec.path, "--from-step", "30", "--to-step", "80"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.rfind("OK verified 55 ticks (steps 26..80) in ", 0) == 0);
}

TEST_CASE("bustle-replay verify: DIVERGED line and exit 1 at the first bad tick", "[replay][cli]") {
  t::TempDir dir;
  SECTION("altered digest at tick 77") {
    const auto rec = t::record_session(dir.file("digest.bustle-rec"), {});
    t::exec_sql(rec.path, "UPDATE recording_ticks SET digest = ~digest WHERE tick = 77");
    const auto r = replay({"verify", rec.path});
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit.exit_code == 1);
    CHECK(r.out == "DIVERGED at tick 77 step 77: recorded " + t::hex16(~rec.digest_at_tick(77)) +
                       " replayed " + t::hex16(rec.digest_at_tick(77)) + "\n");
  }
  SECTION("altered command at tick 40") {
    const auto rec = t::record_session(dir.file("cmd.bustle-rec"), {});
    REQUIRE(t::exec_sql(rec.path, t::sql_bump_target_count(rec.path, 40)) == 1);
    const auto r = replay({"verify", rec.path});
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit.exit_code == 1);
    static const std::regex kDiverged(
        R"(DIVERGED at tick 40 step 40: recorded ([0-9a-f]{16}) replayed ([0-9a-f]{16})\n)");
    std::smatch m;
    REQUIRE(std::regex_match(r.out, m, kDiverged));
    CHECK(m[1].str() == t::hex16(rec.digest_at_tick(40)));
    CHECK(m[2].str() != m[1].str());
  }
}

TEST_CASE("bustle-replay verify: exit 2 with a message naming the file", "[replay][cli]") {
  t::TempDir dir;
  SECTION("missing file") {
    const std::string path = dir.file("missing.bustle-rec");
    const auto r = replay({"verify", path});
    INFO("stderr:\n" << r.err);
    CHECK(r.exit.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(path) != std::string::npos);
  }
  SECTION("a snapshot store is not a recording") {
    const std::string path = dir.file("snapshots.db");
    {
      bustle::persist::SnapshotStore store;
      REQUIRE(bustle::persist::SnapshotStore::open(path, bustle::persist::FileKind::Snapshots, true,
                                                   store)
                  .ok());
    }
    const auto r = replay({"verify", path});
    INFO("stderr:\n" << r.err);
    CHECK(r.exit.exit_code == 2);
    CHECK(r.err.find(path) != std::string::npos);
    CHECK(r.err.find("file_kind") != std::string::npos);
  }
  SECTION("a keyframe that fails restore validation") {
    const auto rec = t::record_session(dir.file("badkf.bustle-rec"), {});
    t::exec_sql(rec.path,
                "UPDATE world_state SET pedestrian_target = 1000000");  // > entity_capacity
    const auto r = replay({"verify", rec.path});
    INFO("stderr:\n" << r.err);
    CHECK(r.exit.exit_code == 2);
    CHECK(r.err.find(rec.path) != std::string::npos);
    CHECK(r.err.find("tick=1") != std::string::npos);
    CHECK(r.err.find("pedestrian_target") != std::string::npos);
  }
  SECTION("usage errors") {
    CHECK(replay({"verify"}).exit.exit_code == 2);
    CHECK(replay({"verify", "x", "--bogus"}).exit.exit_code == 2);
    const auto help = replay({"--help"});
    CHECK(help.exit.exit_code == 0);
    CHECK(help.out.find("bustle-replay verify FILE") != std::string::npos);
  }
}

TEST_CASE("bustle-replay serve streams recorded digests to an SDK client", "[replay][serve]") {
  t::TempDir dir;
  t::RecordingPlan plan;
  plan.ticks = 3000;
  const auto rec = t::record_session(dir.file("serve.bustle-rec"), plan);
  std::map<std::uint64_t, std::uint64_t> digest_by_step;
  for (const auto& tick : rec.ticks) digest_by_step[tick.step] = tick.digest;

  ServeUnderTest serve;
  start_serve(serve, rec.path, {"--clock", "fast", "--loop"}, dir.file("serve.stderr"));
  INFO("serve stderr: " << t::file_tail(serve.stderr_path));
  c::Client client = connect_operator(serve.port);
  const auto welcome = client.connect();
  INFO(welcome.message);
  REQUIRE(welcome.ok());
  CHECK(welcome.value.scenario_id == "test.replay.small-city.v1");
  CHECK(welcome.value.step_us == 100000);
  CHECK(welcome.value.clock_mode == bustle::wire::ClockMode::Fast);
  CHECK(welcome.value.lanes.size() == 4);
  REQUIRE(client.subscribe().ok());

  // Deltas may be coalesced, and --loop restarts the steps, so count a run of
  // strictly increasing steps; every recorded step must carry its recorded digest.
  std::size_t run = 0;
  std::size_t checked = 0;
  std::uint64_t last_step = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (run < 10 && std::chrono::steady_clock::now() < deadline) {
    const auto d = client.next_delta(2000ms);
    INFO(d.message);
    REQUIRE(d.ok());
    const c::Delta* delta = &d.value;
    const auto it = digest_by_step.find(delta->step);
    if (it == digest_by_step.end()) {
      run = 0;  // the start keyframe's state (step 0) after a loop
      continue;
    }
    CHECK(delta->digest == it->second);
    ++checked;
    run = (run > 0 && delta->step > last_step) ? run + 1 : 1;
    last_step = delta->step;
  }
  CHECK(run >= 10);
  CHECK(checked >= 10);
  client.close();

  // A second, unsubscribed client for commands: a subscriber to a fast replay
  // would have to read thousands of Deltas while waiting for each result.
  c::Client control = connect_operator(serve.port);
  REQUIRE(control.connect().ok());
  // Stats answer; everything that would change the world is refused.
  const c::StatsInfo stats = query_stats(control);
  CHECK(stats.clock_mode == bustle::wire::ClockMode::Fast);
  CHECK(stats.step_us == 100000);
  CHECK(stats.step <= 3000);
  CHECK(stats.entity_capacity == 256);
  for (const c::CommandSpec& cmd :
       {c::CommandSpec{c::SetPedestrianTargetCmd{5}}, c::CommandSpec{c::StepCmd{1}},
        c::CommandSpec{c::DespawnEntityCmd{}}}) {
    const auto r = control.command(cmd, 3000ms);
    INFO(c::command_name(cmd) << ": " << r.message);
    REQUIRE(r.ok());
    CHECK_FALSE(r.value.accepted());
    CHECK(r.value.reason == bustle::wire::RejectReason::NotAuthorized);
    CHECK(r.value.message == "replay is read-only");
  }

  // Pause freezes the replay; Resume continues it.
  auto r = control.command(c::PauseCmd{}, 3000ms);
  REQUIRE(r.ok());
  CHECK(r.value.accepted());
  const c::StatsInfo paused1 = query_stats(control);
  std::this_thread::sleep_for(300ms);
  const c::StatsInfo paused2 = query_stats(control);
  CHECK(paused1.paused);
  CHECK(paused2.paused);
  CHECK(paused2.step == paused1.step);
  r = control.command(c::ResumeCmd{}, 3000ms);
  REQUIRE(r.ok());
  CHECK(r.value.accepted());
  std::this_thread::sleep_for(300ms);
  const c::StatsInfo resumed = query_stats(control);
  CHECK_FALSE(resumed.paused);
  CHECK(resumed.step != paused2.step);

  control.close();
  const t::ExitInfo exit = serve.process.terminate(5000ms);
  INFO(exit.describe());
  CHECK(exit.exited);
  CHECK(exit.exit_code == 0);
}

TEST_CASE("bustle-replay serve stops at the end of the recording and keeps the last frame",
          "[replay][serve]") {
  t::TempDir dir;
  t::RecordingPlan plan;
  plan.ticks = 200;
  const auto rec = t::record_session(dir.file("end.bustle-rec"), plan);

  ServeUnderTest serve;
  start_serve(serve, rec.path, {"--clock", "fast"}, dir.file("end.stderr"));
  INFO("serve stderr: " << t::file_tail(serve.stderr_path));
  c::Client client = connect_operator(serve.port);
  REQUIRE(client.connect().ok());

  c::StatsInfo stats;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  do {
    stats = query_stats(client);
    if (stats.step == 200) break;
    std::this_thread::sleep_for(20ms);
  } while (std::chrono::steady_clock::now() < deadline);
  CHECK(stats.step == 200);
  CHECK(stats.paused);
  CHECK(stats.digest == rec.digest_at_tick(200));

  std::this_thread::sleep_for(200ms);
  CHECK(query_stats(client).step == 200);
  REQUIRE(client.subscribe().ok());
  const auto d = client.next_delta(3000ms);
  REQUIRE(d.ok());
  CHECK(d.value.step == 200);
  CHECK(d.value.digest == rec.digest_at_tick(200));

  CHECK(serve.process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle-replay serve paces a realtime replay", "[replay][serve]") {
  t::TempDir dir;
  t::RecordingPlan plan;
  plan.ticks = 400;
  const auto rec = t::record_session(dir.file("rt.bustle-rec"), plan);

  ServeUnderTest serve;
  start_serve(serve, rec.path, {"--rate", "40", "--from-step", "100"}, dir.file("rt.stderr"));
  INFO("serve stderr: " << t::file_tail(serve.stderr_path));
  c::Client client = connect_operator(serve.port);
  const auto welcome = client.connect();
  REQUIRE(welcome.ok());
  CHECK(welcome.value.clock_mode == bustle::wire::ClockMode::Realtime);
  const auto t0 = std::chrono::steady_clock::now();
  const c::StatsInfo a = query_stats(client);
  std::this_thread::sleep_for(1000ms);
  const c::StatsInfo b = query_stats(client);
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // No periodic keyframes: --from-step 100 starts from the initial keyframe.
  CHECK(a.step < 100);
  // 40 Hz for about a second: about 40 steps (wide bounds for a shared
  // machine), far fewer than a fast replay of the remaining ticks would run.
  // The upper bound is from the time that really passed: this thread may
  // wake late on a loaded machine, never early.
  CHECK(b.step - a.step >= 10);
  CHECK(static_cast<double>(b.step - a.step) <= elapsed_s * 40.0 * 1.5 + 5.0);
  CHECK_FALSE(b.paused);
  CHECK(serve.process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle-replay verify --json and --jobs", "[replay][cli]") {
  t::TempDir dir;
  t::RecordingPlan plan;
  plan.ticks = 300;
  plan.periodic_every = 50;
  const auto rec = t::record_session(dir.file("json.bustle-rec"), plan);

  auto r = replay({"verify", rec.path, "--json", "--jobs", "3"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["verdict"] == "ok");
  CHECK(j["ticks"] == 300);
  CHECK(j["steps"] == nlohmann::json::array({1, 300}));
  CHECK(j["jobs"] == 3);
  CHECK(j["segments"] == 6);
  CHECK(j["seconds"].get<double>() >= 0.0);
  CHECK(r.err.empty());  // not a terminal: no progress line

  REQUIRE(t::exec_sql(rec.path, t::sql_bump_target_count(rec.path, 260)) == 1);
  r = replay({"verify", rec.path, "--json", "-j", "2"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 1);
  j = nlohmann::json::parse(r.out);
  CHECK(j["verdict"] == "diverged");
  CHECK(j["first_divergence"]["what"] == "tick");
  CHECK(j["first_divergence"]["tick"] == 260);
  CHECK(j["first_divergence"]["step"] == 260);
  CHECK(j["first_divergence"]["expected_digest"] == t::hex16(rec.digest_at_tick(260)));

  // The text line names the same tick with any number of jobs.
  for (const char* jobs : {"1", "2"}) {
    r = replay({"verify", rec.path, "--jobs", jobs});
    CHECK(r.exit.exit_code == 1);
    CHECK(r.out.rfind("DIVERGED at tick 260 step 260: recorded " +
                          t::hex16(rec.digest_at_tick(260)) + " replayed ",
                      0) == 0);
  }

  r = replay({"verify", dir.file("missing.db"), "--json"});
  CHECK(r.exit.exit_code == 2);
  j = nlohmann::json::parse(r.out);
  CHECK(j["verdict"] == "error");
  CHECK(j["error"].get<std::string>().find("missing.db") != std::string::npos);

  r = replay({"verify", rec.path, "--jobs", "0"});
  CHECK(r.exit.exit_code == 2);
  CHECK(r.err.find("--jobs: expected a number of jobs in 1..256, got '0'") != std::string::npos);
}

TEST_CASE("bustle-replay verify --progress always draws one rewritten line", "[replay][cli]") {
  t::TempDir dir;
  t::RecordingPlan plan;
  plan.ticks = 200;
  const auto rec = t::record_session(dir.file("progress.bustle-rec"), plan);
  const auto r = replay({"verify", rec.path, "--progress", "always"});
  INFO("stderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.err.rfind("\rverify: ", 0) == 0);
  CHECK(r.err.find("/200 ticks (") != std::string::npos);
  CHECK(r.err.find('\n') == std::string::npos);  // one line, rewritten, then cleared
  CHECK(r.err.size() >= 4);
  CHECK(r.err.substr(r.err.size() - 4) == "\r\033[K");
}

TEST_CASE("bustle-replay --version and per-command help", "[replay][cli]") {
  auto r = replay({"--version"});
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.rfind("bustle-replay ", 0) == 0);
  r = replay({"diff", "--help"});
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("--limit") != std::string::npos);
  r = replay({"diff", "only-one.db"});
  CHECK(r.exit.exit_code == 2);
  CHECK(r.err.find("diff: B is required") != std::string::npos);
}

TEST_CASE("bustle-replay diff finds the first divergence of two recordings",
          "[replay][cli][diff]") {
  t::TempDir dir;
  t::RecordingPlan plan;
  plan.ticks = 150;
  plan.periodic_every = 25;
  const auto a = t::record_session(dir.file("a.bustle-rec"), plan);

  SECTION("identical sessions") {
    const auto b = t::record_session(dir.file("b.bustle-rec"), plan);
    const auto r = replay({"diff", a.path, b.path});
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit.exit_code == 0);
    CHECK(r.out == "SAME: 150 ticks, every recorded step and digest equal\n");
  }
  SECTION("one changed command: the tick, the command and the state it changed") {
    t::RecordingPlan other = plan;
    other.bump_target_tick = 60;  // 70 -> 71 pedestrians wanted
    const auto b = t::record_session(dir.file("b.bustle-rec"), other);
    REQUIRE(b.digest_at_tick(59) == a.digest_at_tick(59));
    auto r = replay({"diff", a.path, b.path});
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit.exit_code == 1);
    CHECK(r.out.rfind("DIFFER at tick 60: A step 60 digest " + t::hex16(a.digest_at_tick(60)) +
                          ", B step 60 digest " + t::hex16(b.digest_at_tick(60)) + "\n",
                      0) == 0);
    CHECK(r.out.find("set_pedestrian_target {\"count\":70}") != std::string::npos);
    CHECK(r.out.find("set_pedestrian_target {\"count\":71}") != std::string::npos);
    CHECK(r.out.find("pedestrian_target  A=70  B=71") != std::string::npos);

    r = replay({"diff", a.path, b.path, "--json"});
    CHECK(r.exit.exit_code == 1);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["verdict"] == "differ");
    CHECK(j["first_difference"]["tick"] == 60);
    CHECK(j["commands"].size() == 1);
    bool target_listed = false;
    for (const auto& d : j["state"]) {
      if (d["field"] == "pedestrian_target") {
        CHECK(d["section"] == "clock");
        CHECK(d["a"] == "70");
        CHECK(d["b"] == "71");
        target_listed = true;
      }
    }
    CHECK(target_listed);
  }
  SECTION("a dropped despawn: the entity is gone in A, active in B") {
    t::RecordingPlan other = plan;
    other.drop_commands_tick = 3;  // tick 3 despawns the first pedestrian
    const auto b = t::record_session(dir.file("b.bustle-rec"), other);
    const auto r = replay({"diff", a.path, b.path, "--json", "--limit", "5"});
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit.exit_code == 1);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["first_difference"]["tick"] == 3);
    CHECK(j["entities"]["differing"].get<int>() >= 1);
    CHECK(j["entities"]["listed"].size() <= 5);
    // Off-screen (Coarse) despawns skip the fade, so the entity is gone at once.
    const std::string despawned = j["commands"][0]["a"].get<std::string>();
    CHECK(despawned.rfind("despawn_entity {\"id\":[0,1]}", 0) == 0);
    CHECK(j["commands"][0]["b"] == "(none)");
    bool lifecycle = false;
    for (const auto& e : j["entities"]["listed"]) {
      if (e["id"] != "0:1") continue;
      CHECK(e["kind"] == "pedestrian");
      for (const auto& f : e["fields"]) {
        if (f["field"] == "lifecycle" && f["a"] == "gone" && f["b"] == "active") lifecycle = true;
      }
    }
    CHECK(lifecycle);
    bool counted = false;
    for (const auto& d : j["state"]) {
      if (d["field"] == "despawned_by_reason.requested" && d["a"] == "1" && d["b"] == "0")
        counted = true;
    }
    CHECK(counted);
  }
  SECTION("a doctored copy: diff says which side does not replay to its own digests") {
    const std::string b = dir.file("b.bustle-rec");
    std::filesystem::copy_file(a.path, b);
    REQUIRE(t::exec_sql(b, t::sql_bump_target_count(b, 40)) == 1);
    t::exec_sql(b, "UPDATE recording_ticks SET digest = digest + 1 WHERE tick >= 40");
    const auto r = replay({"diff", a.path, b});
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit.exit_code == 1);
    CHECK(r.out.rfind("DIFFER at tick 40: ", 0) == 0);
    CHECK(r.out.find("note: at this tick B does not replay to its own recorded digest") !=
          std::string::npos);
    CHECK(r.out.find("pedestrian_target  A=70  B=71") != std::string::npos);
  }
  SECTION("a missing file is exit 2 naming it") {
    const auto r = replay({"diff", a.path, dir.file("nope.db")});
    CHECK(r.exit.exit_code == 2);
    CHECK(r.err.find("nope.db") != std::string::npos);
  }
}
