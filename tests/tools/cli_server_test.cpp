// The bustle executable against a real bustle-server process.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <sstream>

#include "support/process.hpp"
#include "support/server_fixture.hpp"

#ifndef BUSTLE_CLI_PATH
#error "BUSTLE_CLI_PATH must name the bustle executable"
#endif
#ifndef BUSTLE_SERVER_PATH
#error "BUSTLE_SERVER_PATH must name the bustle-server executable"
#endif

namespace t = bustle::test;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<t::ServerUnderTest> start(const std::vector<std::string>& args) {
  return t::start_or_fail(BUSTLE_SERVER_PATH, args);
}

// Runs the CLI against `server`; BUSTLE_TOKEN is unset unless `env` sets it.
t::RunResult cli(const t::ServerUnderTest& server, std::vector<std::string> args,
                 std::vector<std::string> env = {"BUSTLE_TOKEN"}) {
  std::vector<std::string> argv = {BUSTLE_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--host", server.host, "--port", std::to_string(server.port)});
  return t::run_process(argv, 15000ms, env);
}

std::vector<std::string> lines_starting_with(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

// The number after `label` in `line`, or -1.
double field(const std::string& line, const std::string& label) {
  const auto at = line.find(label + " ");
  if (at == std::string::npos) return -1;
  return std::stod(line.substr(at + label.size() + 1));
}

}  // namespace

TEST_CASE("bustle status prints the stats table of a running server", "[cli][server]") {
  auto server = start({"--clock", "fast"});
  const auto r = cli(*server, {"status"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exited);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("bustle-server") != std::string::npos);
  for (const char* row : {"step", "sim time", "clock", "Fast", "pedestrians", "pedestrian target",
                          "entity capacity", "clients", "commands accepted", "digest"}) {
    INFO(row);
    CHECK(r.out.find(row) != std::string::npos);
  }
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle watch --count 2 prints two live lines and exits 0", "[cli][server]") {
  auto server = start({"--clock", "fast"});
  const auto begin = std::chrono::steady_clock::now();
  const auto r = cli(*server, {"watch", "--count", "2", "--interval-ms", "500"});
  const auto took = std::chrono::steady_clock::now() - begin;
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exited);
  CHECK(r.exit.exit_code == 0);
  CHECK(took >= 900ms);
  CHECK(took < 8s);
  const auto lines = lines_starting_with(r.out, "step ");
  REQUIRE(lines.size() == 2);
  const double step1 = field(lines[0], "step");
  const double step2 = field(lines[1], "step");
  CHECK(step1 > 0);
  CHECK(step2 > step1);  // a fast clock advances between lines
  CHECK(field(lines[1], "entities") > 0);
  CHECK(field(lines[1], "moved/s") > 0);     // motion corrections: lane and speed changes
  CHECK(field(lines[1], "truncated") == 0);  // the default budgets hold the whole city
  CHECK(lines[1].find("digest ") != std::string::npos);
  CHECK(r.out.find("whole city") != std::string::npos);
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle watch --observer receives only what is near the observers", "[cli][server]") {
  auto server = start({"--clock", "fast"});
  const auto city = cli(*server, {"watch", "--count", "2", "--interval-ms", "300"});
  // A 1 m area far outside the city: nothing to receive.
  const auto far = cli(
      *server, {"watch", "--count", "2", "--interval-ms", "300", "--observer", "-90000,-90000,1"});
  INFO("city:\n" << city.out << city.err << "\nfar:\n" << far.out << far.err);
  CHECK(far.exit.exit_code == 0);
  CHECK(far.out.find("1 observers") != std::string::npos);
  const auto city_lines = lines_starting_with(city.out, "step ");
  const auto far_lines = lines_starting_with(far.out, "step ");
  REQUIRE(city_lines.size() == 2);
  REQUIRE(far_lines.size() == 2);
  CHECK(field(city_lines[1], "entities") > 0);
  CHECK(field(far_lines[1], "entities") == 0);
  CHECK(field(far_lines[1], "step") > 0);  // the stream still runs
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle pause, resume and step as operator", "[cli][server]") {
  SECTION("fast clock: pause and resume are accepted, step is rejected") {
    auto server = start({"--clock", "fast"});
    auto r = cli(*server, {"pause"});
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit.exit_code == 0);
    CHECK(r.out.find("pause accepted") != std::string::npos);
    r = cli(*server, {"status"});
    CHECK(r.out.find("(paused)") != std::string::npos);
    r = cli(*server, {"step", "3"});
    CHECK(r.exit.exit_code == 3);
    CHECK(r.err.find("WrongClockMode") != std::string::npos);
    r = cli(*server, {"resume"});
    CHECK(r.exit.exit_code == 0);
    r = cli(*server, {"target", "5"});
    CHECK(r.exit.exit_code == 0);
    CHECK(r.out.find("target accepted") != std::string::npos);
    CHECK(server->process.terminate(5000ms).exit_code == 0);
  }
  SECTION("manual clock: step advances the server") {
    auto server = start({"--clock", "manual"});
    const auto r = cli(*server, {"step", "4"});
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit.exit_code == 0);
    const auto s = cli(*server, {"status"});
    // The table row "  step   <n>" (not "  step length ...").
    const auto rows = lines_starting_with(s.out, "  step   ");
    REQUIRE(rows.size() == 1);
    CHECK(field(rows[0], " step") == 4);
    CHECK(server->process.terminate(5000ms).exit_code == 0);
  }
}

TEST_CASE("bustle operator commands carry --token or BUSTLE_TOKEN", "[cli][server]") {
  auto server = start({"--clock", "fast", "--token", "s3cret"});
  auto r = cli(*server, {"pause", "--token", "s3cret"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("pause accepted") != std::string::npos);

  r = cli(*server, {"resume"}, {"BUSTLE_TOKEN=s3cret"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("resume accepted") != std::string::npos);

  // Without the token the server must not let the command through; whether
  // it refuses the handshake (exit 1) or the command (exit 3), say why.
  r = cli(*server, {"pause"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code != 0);
  CHECK(r.out.find("accepted") == std::string::npos);
  CHECK_FALSE(r.err.empty());

  // status works for anyone (viewer role).
  r = cli(*server, {"status"});
  CHECK(r.exit.exit_code == 0);
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

namespace {

// Lines of `text` that contain `needle`, in order.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  return out;
}

// The job states printed by a snapshot command ("<kind> 'NAME' job N: State ..."), in order.
std::vector<std::string> job_states(const std::string& out) {
  std::vector<std::string> states;
  for (const auto& line : lines_with(out, " job ")) {
    const auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    const std::string rest = line.substr(colon + 2);
    states.push_back(rest.substr(0, rest.find_first_of(" :")));
  }
  return states;
}

// The "step" row of `bustle status`.
double status_step(const t::ServerUnderTest& server) {
  const auto s = cli(server, {"status"});
  const auto rows = lines_starting_with(s.out, "  step   ");
  REQUIRE(rows.size() == 1);
  return field(rows[0], " step");
}

}  // namespace

TEST_CASE("bustle checkpoint, snapshots, restore and delete against a server",
          "[cli][server][snapshots]") {
  auto server = start({"--clock", "manual"});
  REQUIRE(cli(*server, {"step", "10"}).exit.exit_code == 0);

  auto r = cli(*server, {"checkpoint", "x"});
  INFO("checkpoint stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(job_states(r.out) == std::vector<std::string>{"Copied", "Committed"});
  CHECK(lines_with(r.out, "checkpoint 'x' job ").size() == 2);
  CHECK(r.out.find("(step 10)") != std::string::npos);

  REQUIRE(cli(*server, {"step", "5"}).exit.exit_code == 0);
  r = cli(*server, {"snapshots"});
  INFO("snapshots stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  const auto header = lines_starting_with(r.out, "NAME");
  REQUIRE(header.size() == 1);
  for (const char* col : {"KIND", "STEP", "SIM TIME", "PEDESTRIANS", "DIGEST", "CREATED"}) {
    INFO(col);
    CHECK(header[0].find(col) != std::string::npos);
  }
  const auto rows = lines_starting_with(r.out, "x ");
  REQUIRE(rows.size() == 1);
  {
    std::istringstream row(rows[0]);
    std::string name, kind, time_unit, digest, created;
    std::uint64_t step = 0, pedestrians = 0;
    double sim_s = 0;
    row >> name >> kind >> step >> sim_s >> time_unit >> pedestrians >> digest >> created;
    CHECK(name == "x");
    CHECK(kind == "checkpoint");
    CHECK(step == 10);
    CHECK(sim_s == Approx(1.0));  // 10 steps of the default 100 ms
    CHECK(time_unit == "s");
    CHECK(pedestrians > 0);
    CHECK(digest.size() == 16);
    CHECK(created.size() == 20);  // 2026-01-02T03:04:05Z
    CHECK(created.back() == 'Z');
  }
  CHECK(r.out.find("1 snapshot\n") != std::string::npos);

  r = cli(*server, {"restore", "x"});
  INFO("restore stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(job_states(r.out) == std::vector<std::string>{"Queued", "Validated", "Applied"});
  CHECK(status_step(*server) == 10);

  r = cli(*server, {"job", "1"});
  INFO("job stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("checkpoint 'x' job 1: Committed") != std::string::npos);

  r = cli(*server, {"delete", "x"});
  INFO("delete stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("deleted snapshot 'x'") != std::string::npos);
  r = cli(*server, {"snapshots"});
  CHECK(r.exit.exit_code == 0);
  CHECK(lines_starting_with(r.out, "x ").empty());
  CHECK(r.out.find("0 snapshots") != std::string::npos);

  r = cli(*server, {"delete", "x"});
  INFO("delete again stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("NotFound") != std::string::npos);
  CHECK(r.err.find("'x'") != std::string::npos);
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle restore of a missing snapshot exits 3 naming it", "[cli][server][snapshots]") {
  auto server = start({"--clock", "manual"});
  REQUIRE(cli(*server, {"step", "3"}).exit.exit_code == 0);
  auto r = cli(*server, {"restore", "missing"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exited);
  CHECK(r.exit.exit_code == 3);
  CHECK(job_states(r.out) == std::vector<std::string>{"Queued", "Failed"});
  CHECK(r.err.find("restore 'missing' failed") != std::string::npos);
  CHECK(r.err.find("no snapshot") != std::string::npos);
  CHECK(status_step(*server) == 3);  // the live world is untouched

  r = cli(*server, {"load", "bad name"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("InvalidArgument") != std::string::npos);
  CHECK(r.err.find("bad name") != std::string::npos);

  r = cli(*server, {"job", "424242"});
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("NotFound") != std::string::npos);

  // Nothing was stored by any of that.
  r = cli(*server, {"snapshots"});
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("0 snapshots") != std::string::npos);
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle save and load print the three load phases, and --no-wait stops early",
          "[cli][server][snapshots]") {
  auto server = start({"--clock", "manual"});
  REQUIRE(cli(*server, {"step", "4"}).exit.exit_code == 0);
  auto r = cli(*server, {"save", "s"});
  INFO("save stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(job_states(r.out) == std::vector<std::string>{"Copied", "Committed"});
  REQUIRE(cli(*server, {"step", "6"}).exit.exit_code == 0);

  r = cli(*server, {"load", "s"});
  INFO("load stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(job_states(r.out) == std::vector<std::string>{"Queued", "Validated", "SnapshotApplied",
                                                      "ScheduleReconciled",
                                                      "RepresentationRebuilt"});
  CHECK(status_step(*server) == 4);

  r = cli(*server, {"checkpoint", "quick", "--no-wait"});
  INFO("no-wait stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(job_states(r.out) == std::vector<std::string>{"Copied"});
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle status prints the recording fields", "[cli][server]") {
  SECTION("not recording") {
    auto server = start({"--clock", "manual"});
    const auto r = cli(*server, {"status"});
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit.exit_code == 0);
    REQUIRE(lines_starting_with(r.out, "  recording ").size() == 1);
    CHECK(lines_starting_with(r.out, "  recording ")[0].find(" no") != std::string::npos);
    REQUIRE(lines_starting_with(r.out, "  recorded ticks ").size() == 1);
    CHECK(field(lines_starting_with(r.out, "  recorded ticks ")[0], "ticks") == 0);
    CHECK(server->process.terminate(5000ms).exit_code == 0);
  }
  SECTION("recording to a file") {
    char dir[] = "/tmp/bustle-cli-record-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    const std::string path = std::string(dir) + "/session.rec";
    {
      auto server = start({"--clock", "manual", "--record", path});
      REQUIRE(cli(*server, {"step", "3"}).exit.exit_code == 0);
      // The recorder commits in batches off the sim thread: poll briefly.
      double ticks = -1;
      std::string out;
      const auto deadline = std::chrono::steady_clock::now() + 5s;
      while (ticks < 3 && std::chrono::steady_clock::now() < deadline) {
        const auto r = cli(*server, {"status"});
        REQUIRE(r.exit.exit_code == 0);
        out = r.out;
        const auto rows = lines_starting_with(out, "  recorded ticks ");
        REQUIRE(rows.size() == 1);
        ticks = field(rows[0], "ticks");
      }
      INFO("stdout:\n" << out);
      CHECK(ticks == 3);
      REQUIRE(lines_starting_with(out, "  recording ").size() == 1);
      CHECK(lines_starting_with(out, "  recording ")[0].find(" yes") != std::string::npos);
      CHECK(server->process.terminate(5000ms).exit_code == 0);
    }
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      unlink((path + suffix).c_str());
    }
    rmdir(dir);
  }
}
