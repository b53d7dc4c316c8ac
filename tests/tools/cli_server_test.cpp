// The bustle executable against a real bustle-server process.
#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>

#include "support/process.hpp"

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
  std::string error;
  auto server = t::start_server(BUSTLE_SERVER_PATH, args, error);
  INFO(error);
  REQUIRE(server != nullptr);
  return server;
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
  CHECK(field(lines[1], "updated/s") > 0);
  CHECK(lines[1].find("digest ") != std::string::npos);
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
