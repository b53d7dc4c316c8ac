// The bustle executable as a process: help, usage errors, unreachable server.
#include <catch2/catch.hpp>
#include <chrono>

#include "support/fake_server.hpp"
#include "support/process.hpp"

#ifndef BUSTLE_CLI_PATH
#error "BUSTLE_CLI_PATH must name the bustle executable"
#endif

namespace t = bustle::test;
using namespace std::chrono_literals;

TEST_CASE("bustle --help documents every command and option", "[cli]") {
  const auto r = t::run_process({BUSTLE_CLI_PATH, "--help"}, 5000ms);
  CHECK(r.exit.exited);
  CHECK(r.exit.exit_code == 0);
  for (const char* word : {"status",          "watch",
                           "pause",           "resume",
                           "step N",          "target N",
                           "checkpoint NAME", "restore NAME",
                           "save NAME",       "load NAME",
                           "snapshots",       "delete NAME",
                           "job ID",          "RepresentationRebuilt",
                           "--no-wait",       "--host",
                           "--port",          "--token",
                           "BUSTLE_TOKEN",    "--timeout-ms",
                           "--count",         "--interval-ms",
                           "exit codes",      "garages",
                           "signals",         "vehicle INDEX:GEN",
                           "garage-request GARAGE REQUEST_ID PROTOTYPE LANE",
                           "cancel-request GARAGE REQUEST_ID",
                           "route_follow|lane_follow|parked|manual",
                           "observers",       "hour H",
                           "time-scale S",    "zones",
                           "--priority",      "--step",
                           "queued",          "population",
                           "spawn [--zone Z] [--lane L]",
                           "story|quest|community|background",
                           "cancel-spawn HANDLE", "spawn-status HANDLE",
                           "entity INDEX:GEN", "lifecycle [--growth N]",
                           "--spawn-timeout-ms", "--wait STATE",
                           "--attach",        "--migration-budget",
                           "ready_for_gameplay"}) {
    INFO(word);
    CHECK(r.out.find(word) != std::string::npos);
  }
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
