// The bustle executable as a process: help, usage errors, unreachable server.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "support/fake_server.hpp"
#include "support/process.hpp"

#ifndef BUSTLE_CLI_PATH
#error "BUSTLE_CLI_PATH must name the bustle executable"
#endif

namespace t = bustle::test;
using namespace std::chrono_literals;

TEST_CASE("bustle --help lists every command, the global options and the exit codes", "[cli]") {
  const auto r = t::run_process({BUSTLE_CLI_PATH, "--help"}, 5000ms);
  CHECK(r.exit.exited);
  CHECK(r.exit.exit_code == 0);
  for (const char* word : {"status",       "watch",          "pause",
                           "resume",       "step",           "target",
                           "checkpoint",   "restore",        "save",
                           "load",         "snapshots",      "delete",
                           "job",          "garages",        "signals",
                           "vehicle",      "garage-request", "cancel-request",
                           "strategy",     "observers",      "hour",
                           "time-scale",   "zones",          "population",
                           "spawn",        "cancel-spawn",   "spawn-status",
                           "entity",       "lifecycle",      "help",
                           "--host",       "--port",         "--token",
                           "BUSTLE_TOKEN", "BUSTLE_HOST",    "BUSTLE_PORT",
                           "--timeout-ms", "--json",         "--version",
                           "exit codes",   "2 usage error",  "--step",
                           "queued"}) {
    INFO(word);
    CHECK(r.out.find(word) != std::string::npos);
  }
}

TEST_CASE("bustle COMMAND --help shows that command's operands and options", "[cli]") {
  struct Case {
    const char* command;
    std::vector<const char*> words;
  };
  const std::vector<Case> cases = {
      {"watch", {"--count", "--interval-ms", "--observer X,Y[,R]"}},
      {"step", {"bustle step", "N"}},
      {"restore", {"NAME", "--no-wait", "RepresentationRebuilt"}},
      {"job", {"ID"}},
      {"vehicle", {"INDEX:GEN"}},
      {"garage-request", {"GARAGE REQUEST_ID PROTOTYPE LANE", "--priority P", "--step"}},
      {"cancel-request", {"GARAGE REQUEST_ID"}},
      {"strategy", {"route_follow|lane_follow|parked|manual"}},
      {"hour", {"H"}},
      {"time-scale", {"S"}},
      {"spawn",
       {"--zone Z", "--lane L", "--route", "story|quest|community|background", "--spawn-timeout-ms",
        "--wait STATE", "--attach", "ReadyForGameplay", "--step"}},
      {"lifecycle", {"--growth", "--recycle", "--interval-ms", "--migration-budget"}},
      {"cancel-spawn", {"HANDLE"}},
      {"spawn-status", {"HANDLE"}},
      {"entity", {"INDEX:GEN"}},
  };
  for (const Case& c : cases) {
    INFO(c.command);
    for (const auto& args : {std::vector<std::string>{BUSTLE_CLI_PATH, c.command, "--help"},
                             std::vector<std::string>{BUSTLE_CLI_PATH, "help", c.command}}) {
      const auto r = t::run_process(args, 5000ms);
      CHECK(r.exit.exit_code == 0);
      CHECK(r.out.find(std::string("Usage: bustle ") + c.command) != std::string::npos);
      for (const char* word : c.words) {
        INFO(word);
        CHECK(r.out.find(word) != std::string::npos);
      }
    }
  }
}

TEST_CASE("bustle --version names the version and the protocol", "[cli]") {
  const auto r = t::run_process({BUSTLE_CLI_PATH, "--version"}, 5000ms);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.rfind(std::string("bustle ") + BUSTLE_VERSION + " ", 0) == 0);
  CHECK(r.out.find("(protocol 3)") != std::string::npos);
}

TEST_CASE("bustle with bad arguments exits 2 with a message", "[cli]") {
  const auto r = t::run_process({BUSTLE_CLI_PATH, "status", "--port", "nope"}, 5000ms);
  CHECK(r.exit.exit_code == 2);
  CHECK(r.err.find("--port") != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE("bustle status against a closed port exits non-zero with a message", "[cli]") {
  const std::string port = std::to_string(t::closed_port());
  const auto start = std::chrono::steady_clock::now();
  const auto r =
      t::run_process({BUSTLE_CLI_PATH, "status", "--port", port, "--timeout-ms", "2000"}, 10000ms);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK_FALSE(r.exit.timed_out);
  CHECK(r.exit.exited);
  CHECK(r.exit.exit_code == 1);
  INFO("stderr: " << r.err);
  CHECK(r.err.find("unreachable") != std::string::npos);
  CHECK(r.err.find("127.0.0.1:" + port) != std::string::npos);
  CHECK(r.err.find("refused") != std::string::npos);
}
