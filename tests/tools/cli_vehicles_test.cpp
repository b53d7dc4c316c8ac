// The bustle executable's vehicle and population commands (including the
// spawn pipeline: spawn, cancel-spawn, spawn-status, entity, population,
// lifecycle) against a real bustle-server with the corridor and large-block
// scenarios.
#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>

#include "support/process.hpp"
#include "support/server_fixture.hpp"

#ifndef BUSTLE_CLI_PATH
#error "BUSTLE_CLI_PATH must name the bustle executable"
#endif
#ifndef BUSTLE_SERVER_PATH
#error "BUSTLE_SERVER_PATH must name the bustle-server executable"
#endif
#ifndef BUSTLE_REPO_DIR
#error "BUSTLE_REPO_DIR must name the source tree (for configs/)"
#endif

namespace t = bustle::test;
using namespace std::chrono_literals;

namespace {

const std::string kCorridor = std::string(BUSTLE_REPO_DIR) + "/configs/corridor.city.json";
const std::string kLargeBlock = std::string(BUSTLE_REPO_DIR) + "/configs/largeblock.city.json";

std::unique_ptr<t::ServerUnderTest> start_vehicles_server(const std::vector<std::string>& args) {
  return t::start_or_fail(BUSTLE_SERVER_PATH, args);
}

t::RunResult vehicles_cli(const t::ServerUnderTest& server, std::vector<std::string> args) {
  std::vector<std::string> argv = {BUSTLE_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--host", server.host, "--port", std::to_string(server.port)});
  return t::run_process(argv, 15000ms, {"BUSTLE_TOKEN"});
}

// The first line of `text` starting with `prefix`, or "".
std::string line_starting_with(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The word after the word `label` in `line`, or "".
std::string word_after(const std::string& line, const std::string& label) {
  const auto w = words(line);
  for (std::size_t i = 0; i + 1 < w.size(); ++i) {
    if (w[i] == label) return w[i + 1];
  }
  return "";
}

}  // namespace

TEST_CASE("bustle garages and signals print the corridor's tables", "[cli][server][vehicles]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kCorridor});
  auto r = vehicles_cli(*server, {"step", "40"});
  REQUIRE(r.exit.exit_code == 0);

  r = vehicles_cli(*server, {"garages"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  for (const char* header : {"ID", "QUEUED", "DISPATCHED", "MANAGED/CAP", "LAST GATE",
                             "TURNAROUNDS", "REJECTED INVALID/DUPLICATE/FULL"}) {
    INFO(header);
    CHECK(r.out.find(header) != std::string::npos);
  }
  const auto g0 = words(line_starting_with(r.out, "g0 "));
  REQUIRE(g0.size() == 8);
  CHECK(std::stoi(g0[2]) >= 1);                   // dispatched
  CHECK(g0[3].find("/18") != std::string::npos);  // managed/capacity
  CHECK(g0[7] == "0/0/0");                        // nothing rejected yet
  CHECK(r.out.find("1 garage at step 40") != std::string::npos);

  r = vehicles_cli(*server, {"signals"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  for (const char* header : {"ID", "LANE", "PHASE", "ELAPSED", "CYCLES"}) {
    INFO(header);
    CHECK(r.out.find(header) != std::string::npos);
  }
  const auto s1 = words(line_starting_with(r.out, "s1 "));
  REQUIRE(s1.size() == 6);
  CHECK(s1[1] == "1");  // lane index
  CHECK((s1[2] == "Open" || s1[2] == "Yield" || s1[2] == "Closed"));

  r = vehicles_cli(*server, {"status"});
  CHECK(r.exit.exit_code == 0);
  for (const char* row :
       {"vehicles", "vehicle motion", "tier deferred", "time of day", "time scale", "residents"}) {
    INFO(row);
    CHECK(r.out.find(row) != std::string::npos);
  }
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle garage-request: queued then accepted with --step and a duplicate exits 3",
          "[cli][server][vehicles]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kCorridor});
  // Manual clock without --step: only queued, exit 0, the message says why.
  auto r = vehicles_cli(*server, {"garage-request", "g0", "x1", "sedan", "lane0"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("queued") != std::string::npos);
  CHECK(r.out.find("next step") != std::string::npos);

  // The queued one applies at this step; a new id with --step is answered.
  r = vehicles_cli(*server,
                   {"garage-request", "g0", "x2", "sedan", "lane0", "--priority", "50", "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("garage-request accepted at step") != std::string::npos);
  CHECK(r.out.find("enqueue ordinal") != std::string::npos);

  // x1 was applied by that step even though its client had gone.
  r = vehicles_cli(*server, {"garage-request", "g0", "x1", "sedan", "lane0", "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("Duplicate") != std::string::npos);

  r = vehicles_cli(*server, {"garage-request", "g0", "x3", "sedan", "nolane", "--step"});
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("InvalidArgument") != std::string::npos);

  r = vehicles_cli(*server, {"cancel-request", "g0", "never", "--step"});
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("NotFound") != std::string::npos);

  r = vehicles_cli(*server, {"garages"});
  const auto g0 = words(line_starting_with(r.out, "g0 "));
  REQUIRE(g0.size() == 8);
  CHECK(g0[7] == "1/1/0");

  // Usage errors never reach the server.
  r = vehicles_cli(*server, {"garage-request", "g0", "x4"});
  CHECK(r.exit.exit_code == 2);
  CHECK(r.err.find("garage-request GARAGE REQUEST_ID PROTOTYPE LANE") != std::string::npos);
  r = vehicles_cli(*server, {"garage-request", "g0", "x4", "sedan", "lane0", "--priority", "high"});
  CHECK(r.exit.exit_code == 2);
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle garage-request with a fast clock is answered within a step",
          "[cli][server][vehicles]") {
  auto server = start_vehicles_server({"--clock", "fast", "--config", kCorridor});
  auto r = vehicles_cli(*server, {"garage-request", "g0", "fast1", "sedan", "lane0"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("garage-request accepted at step") != std::string::npos);
  r = vehicles_cli(*server, {"garage-request", "g0", "fast1", "sedan", "lane0"});
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("Duplicate") != std::string::npos);
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle hour and time-scale and zones on the large block", "[cli][server][population]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kLargeBlock});
  auto r = vehicles_cli(*server, {"zones"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  for (const char* header : {"ID", "TARGET", "ACTIVE", "DORMANT", "PENDING SPAWN",
                             "PENDING RECYCLE", "DEFERRED", "REJECTED BY CAPACITY"}) {
    INFO(header);
    CHECK(r.out.find(header) != std::string::npos);
  }
  CHECK(r.out.find("3 zones") != std::string::npos);

  r = vehicles_cli(*server, {"hour", "12", "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("hour accepted at step") != std::string::npos);

  r = vehicles_cli(*server, {"hour", "25", "--step"});
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("InvalidArgument") != std::string::npos);
  r = vehicles_cli(*server, {"hour", "noon"});
  CHECK(r.exit.exit_code == 2);

  r = vehicles_cli(*server, {"time-scale", "60"});  // queued under the manual clock
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("time-scale queued") != std::string::npos);
  r = vehicles_cli(*server, {"time-scale", "0", "--step"});
  CHECK(r.exit.exit_code == 3);

  REQUIRE(vehicles_cli(*server, {"step", "10"}).exit.exit_code == 0);
  r = vehicles_cli(*server, {"status"});
  CHECK(r.out.find("60 game s per s") != std::string::npos);
  CHECK(r.out.find("(active ") != std::string::npos);

  r = vehicles_cli(*server, {"zones"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  int targets = 0;
  for (const char* zone : {"market ", "office ", "facilities "}) {
    const auto row = words(line_starting_with(r.out, zone));
    INFO(zone);
    REQUIRE(row.size() == 9);
    targets += std::stoi(row[1]);
  }
  CHECK(targets > 0);
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle vehicle and strategy on the corridor", "[cli][server][vehicles]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kCorridor});
  REQUIRE(vehicles_cli(*server, {"step", "20"}).exit.exit_code == 0);
  // Not a vehicle: exit 3 naming the reason.
  auto r = vehicles_cli(*server, {"vehicle", "999:9"});
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("UnknownEntity") != std::string::npos);
  // Find a vehicle: live entities have generation >= 1; the corridor's 8
  // pedestrians come first, vehicles after them.
  std::string id;
  for (int index = 0; index < 64 && id.empty(); ++index) {
    const std::string candidate = std::to_string(index) + ":1";
    if (vehicles_cli(*server, {"vehicle", candidate}).exit.exit_code == 0) id = candidate;
  }
  REQUIRE_FALSE(id.empty());
  r = vehicles_cli(*server, {"vehicle", id});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  for (const char* row :
       {"vehicle id", "garage", "request", "prototype", "route index", "lane", "distance on lane",
        "position", "speed", "strategy", "policy", "reason", "tier", "leader", "steps advanced",
        "awaiting turnaround", "despawn requested"}) {
    INFO(row);
    CHECK(r.out.find("  " + std::string(row)) != std::string::npos);
  }
  CHECK(r.out.find("vehicle.g0.") != std::string::npos);

  r = vehicles_cli(*server, {"strategy", id, "parked"});  // manual clock: queued
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("strategy queued") != std::string::npos);
  REQUIRE(vehicles_cli(*server, {"step", "2"}).exit.exit_code == 0);
  r = vehicles_cli(*server, {"vehicle", id});
  CHECK(line_starting_with(r.out, "  strategy").find("Parked") != std::string::npos);
  CHECK(line_starting_with(r.out, "  policy").find("Parked") != std::string::npos);
  r = vehicles_cli(*server, {"strategy", id, "route_follow", "--step"});
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("strategy accepted at step") != std::string::npos);

  r = vehicles_cli(*server, {"vehicle", "nine"});
  CHECK(r.exit.exit_code == 2);
  r = vehicles_cli(*server, {"strategy", "1:1", "flying"});
  CHECK(r.exit.exit_code == 2);
  r = vehicles_cli(*server, {"observers", "25,25", "--step"});
  CHECK(r.exit.exit_code == 0);
  r = vehicles_cli(*server, {"observers", "25"});
  CHECK(r.exit.exit_code == 2);
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle spawn --wait steps to the state, spawn-status and entity describe it",
          "[cli][server][population]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kLargeBlock});
  auto r = vehicles_cli(*server, {"spawn", "--zone", "market", "--priority", "story", "--wait",
                                  "representation_requested", "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit.exit_code == 0);
  CHECK(r.out.find("spawn accepted at step 1: handle 1") != std::string::npos);
  // Every state once, in pipeline order, each printed as it arrives.
  std::size_t at = 0;
  for (const char* state : {"spawn 1: Queued", "spawn 1: IdentityCreated", "spawn 1: Registered",
                            "spawn 1: RepresentationRequested"}) {
    INFO(state);
    const auto found = r.out.find(state, at);
    REQUIRE(found != std::string::npos);
    at = found;
  }
  const std::string requested = line_starting_with(r.out, "spawn 1: RepresentationRequested");
  CHECK(word_after(requested, "zone") == "market");
  CHECK(word_after(requested, "priority") == "Story");
  const std::string id = word_after(requested, "entity");
  REQUIRE(id.find(':') != std::string::npos);

  r = vehicles_cli(*server, {"spawn-status", "1"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(line_starting_with(r.out, "spawn 1: RepresentationRequested") != "");
  CHECK(r.out.find("in progress") != std::string::npos);

  r = vehicles_cli(*server, {"entity", id});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  for (const char* row :
       {"identity", "lifecycle", "tier", "representation", "priority/origin", "community/zone",
        "lane/position", "effective distance", "spawn", "retiring"}) {
    INFO(row);
    CHECK(line_starting_with(r.out, "  " + std::string(row) + " ") != "");
  }
  CHECK(line_starting_with(r.out, "  identity").find(id + " Pedestrian, alive") !=
        std::string::npos);
  CHECK(line_starting_with(r.out, "  lifecycle").find("Active") != std::string::npos);
  CHECK(line_starting_with(r.out, "  priority/origin").find("priority Story, origin Spawned") !=
        std::string::npos);
  CHECK(line_starting_with(r.out, "  community/zone").find("zone market") != std::string::npos);
  CHECK(line_starting_with(r.out, "  spawn").find("handle 1, RepresentationRequested") !=
        std::string::npos);
  CHECK(line_starting_with(r.out, "  retiring").find("no") != std::string::npos);

  // --attach reports the actor, so the handle becomes ready.
  r = vehicles_cli(
      *server, {"spawn", "--zone", "office", "--wait", "ready_for_gameplay", "--attach", "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("reported entity ") != std::string::npos);
  CHECK(line_starting_with(r.out, "spawn 2: Attached") != "");
  CHECK(line_starting_with(r.out, "spawn 2: ReadyForGameplay") != "");
  r = vehicles_cli(*server, {"spawn-status", "2"});
  CHECK(r.out.find("terminal") != std::string::npos);

  // Without anyone holding an actor, the wait ends at --timeout-ms (exit 1).
  r = vehicles_cli(*server,
                   {"spawn", "--wait", "ready_for_gameplay", "--step", "--timeout-ms", "700"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 1);
  CHECK(line_starting_with(r.out, "spawn 3: RepresentationRequested") != "");
  CHECK(r.err.find("did not reach ReadyForGameplay") != std::string::npos);
  CHECK(r.err.find("--attach") != std::string::npos);

  // Manual clock without --step or --wait: only queued.
  r = vehicles_cli(*server, {"spawn"});
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("spawn queued") != std::string::npos);

  // Bad input: the server names the field (exit 3); the parser names the option (exit 2).
  r = vehicles_cli(*server, {"spawn", "--zone", "nowhere", "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("InvalidArgument") != std::string::npos);
  CHECK(r.err.find("zone: unknown zone 'nowhere'") != std::string::npos);
  r = vehicles_cli(*server, {"spawn", "--priority", "urgent"});
  CHECK(r.exit.exit_code == 2);
  CHECK(r.err.find("--priority: expected story, quest, community or background, got 'urgent'") !=
        std::string::npos);
  r = vehicles_cli(*server, {"spawn-status", "4242"});
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("NotFound") != std::string::npos);
  r = vehicles_cli(*server, {"spawn-status", "x"});
  CHECK(r.exit.exit_code == 2);
  r = vehicles_cli(*server, {"entity", "60000:7"});
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("UnknownEntity") != std::string::npos);
  r = vehicles_cli(*server, {"entity", "nine"});
  CHECK(r.exit.exit_code == 2);
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle spawn --wait with a fast clock needs no --step", "[cli][server][population]") {
  auto server = start_vehicles_server({"--clock", "fast", "--config", kLargeBlock});
  const auto r = vehicles_cli(
      *server, {"spawn", "--zone", "market", "--wait", "ready_for_gameplay", "--attach"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(line_starting_with(r.out, "spawn 1: ReadyForGameplay") != "");
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle cancel-spawn gives the identity back", "[cli][server][population]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kLargeBlock});
  auto r = vehicles_cli(*server, {"spawn", "--zone", "market", "--step"});
  REQUIRE(r.exit.exit_code == 0);
  const std::string handle = word_after(r.out, "handle");
  REQUIRE(handle == "1");
  REQUIRE(vehicles_cli(*server, {"step", "1"}).exit.exit_code == 0);  // -> IdentityCreated
  r = vehicles_cli(*server, {"cancel-spawn", handle, "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("cancel-spawn accepted at step") != std::string::npos);
  const std::string given = line_starting_with(r.out, "spawn 1 canceled");
  CHECK(given.find("given back") != std::string::npos);
  CHECK(word_after(given, "entity").find(':') != std::string::npos);

  r = vehicles_cli(*server, {"spawn-status", handle});
  CHECK(r.exit.exit_code == 0);
  CHECK(line_starting_with(r.out, "spawn 1: Canceled") != "");
  CHECK(r.out.find("terminal") != std::string::npos);

  // Canceled while still queued: no identity existed yet.
  r = vehicles_cli(*server, {"spawn", "--step"});
  REQUIRE(r.exit.exit_code == 0);
  r = vehicles_cli(*server, {"cancel-spawn", "2", "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("no entity given back") != std::string::npos);

  // Bad input: an ended handle is refused by the server, 0 by the parser.
  r = vehicles_cli(*server, {"cancel-spawn", handle, "--step"});
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("NotFound") != std::string::npos);
  CHECK(r.err.find("already ended") != std::string::npos);
  r = vehicles_cli(*server, {"cancel-spawn", "0"});
  CHECK(r.exit.exit_code == 2);
  CHECK(r.err.find("cancel-spawn HANDLE: expected a spawn handle") != std::string::npos);
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle population prints every section and lifecycle keeps unset settings",
          "[cli][server][population]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kLargeBlock});
  REQUIRE(vehicles_cli(*server, {"step", "5"}).exit.exit_code == 0);
  auto r = vehicles_cli(*server, {"population"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit.exit_code == 0);
  CHECK(r.out.rfind("population at step 5, time of day ", 0) == 0);
  const auto header = words(line_starting_with(r.out, "ID "));
  CHECK(header ==
        std::vector<std::string>{"ID", "BASE", "TARGET", "ZONE", "ACTIVE", "DORMANT", "SAVEABLE"});
  CHECK(r.out.find("3 communities") != std::string::npos);
  for (const char* community : {"market_vendors ", "office_workers ", "maintenance "}) {
    INFO(community);
    const auto row = words(line_starting_with(r.out, community));
    REQUIRE(row.size() == 7);
    CHECK(std::stoi(row[4]) + std::stoi(row[5]) == std::stoi(row[1]));  // active + dormant = base
  }
  for (const char* section :
       {"residents", "pedestrians", "lifecycle", "spawn pipeline", "spawn deferred", "retiring",
        "despawns by reason", "tiers", "forced full", "ledger"}) {
    INFO(section);
    CHECK(line_starting_with(r.out, "  " + std::string(section) + " ") != "");
  }
  CHECK(line_starting_with(r.out, "  residents").find("72: active ") != std::string::npos);
  CHECK(line_starting_with(r.out, "  lifecycle")
            .find("growth quota 2, recycle quota 2, interval 250 ms, migration budget 4") !=
        std::string::npos);
  CHECK(line_starting_with(r.out, "  despawns by reason").find("Requested 0") != std::string::npos);
  CHECK(line_starting_with(r.out, "  tiers").find("Full ") != std::string::npos);
  CHECK(words(line_starting_with(r.out, "SPAWN STATE")) ==
        std::vector<std::string>{"SPAWN", "STATE", "LIVE", "TOTAL"});
  for (const char* state :
       {"Queued ", "IdentityCreated ", "Registered ", "RepresentationRequested ", "Attached ",
        "ReadyForGameplay ", "Failed ", "Canceled ", "TimedOut "}) {
    INFO(state);
    CHECK(words(line_starting_with(r.out, state)).size() == 3);
  }

  r = vehicles_cli(*server, {"lifecycle", "--growth", "5", "--interval-ms", "500", "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(r.out.find("lifecycle accepted at step") != std::string::npos);
  CHECK(line_starting_with(r.out, "  growth quota").find("5 (was 2)") != std::string::npos);
  CHECK(line_starting_with(r.out, "  interval").find("500 ms (was 250 ms)") != std::string::npos);
  // Only --recycle given: the growth quota and interval set above stay.
  r = vehicles_cli(*server, {"lifecycle", "--recycle", "3", "--step"});
  CHECK(r.exit.exit_code == 0);
  CHECK(line_starting_with(r.out, "  growth quota").find("5") != std::string::npos);
  CHECK(line_starting_with(r.out, "  growth quota").find("was") == std::string::npos);
  r = vehicles_cli(*server, {"population"});
  CHECK(line_starting_with(r.out, "  lifecycle")
            .find("growth quota 5, recycle quota 3, interval 500 ms, migration budget 4") !=
        std::string::npos);

  // Bad input: the server names the field (exit 3); the parser the option (exit 2).
  r = vehicles_cli(*server, {"lifecycle", "--interval-ms", "0", "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("interval_ms must be in [1, 3600000]") != std::string::npos);
  r = vehicles_cli(*server, {"lifecycle"});
  CHECK(r.exit.exit_code == 2);
  CHECK(r.err.find("at least one") != std::string::npos);
  r = vehicles_cli(*server, {"lifecycle", "--growth", "many"});
  CHECK(r.exit.exit_code == 2);
  CHECK(r.err.find("--growth: expected an integer in [0, 4294967295], got 'many'") !=
        std::string::npos);
  r = vehicles_cli(*server, {"population", "extra"});
  CHECK(r.exit.exit_code == 2);
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}

TEST_CASE("bustle spawn --route starts on its first lane and a bad route exits 3 naming the entry",
          "[cli][server][population]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kLargeBlock});
  auto r =
      vehicles_cli(*server, {"spawn", "--route", "x.facilities.market,market.loop,x.market.office",
                             "--wait", "registered", "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit.exit_code == 0);
  CHECK(r.out.find("spawn accepted at step 1: handle 1") != std::string::npos);
  const std::string registered = line_starting_with(r.out, "spawn 1: Registered");
  REQUIRE(registered != "");
  const std::string lane = word_after(registered, "lane");
  CHECK(lane != "any");  // route[0] is the lane asked for

  // The same lane asked for directly has the same index.
  r = vehicles_cli(*server,
                   {"spawn", "--lane", "x.facilities.market", "--wait", "queued", "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit.exit_code == 0);
  CHECK(word_after(line_starting_with(r.out, "spawn 2: Queued"), "lane") == lane);

  r = vehicles_cli(*server, {"entity", word_after(registered, "entity")});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 0);
  CHECK(line_starting_with(r.out, "  lane/position").find("lane " + lane + ",") !=
        std::string::npos);

  // The core judges succession and the lane/route agreement (exit 3, the entry named).
  r = vehicles_cli(*server, {"spawn", "--route", "market.loop,office.loop", "--step"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("InvalidArgument") != std::string::npos);
  CHECK(r.err.find("route[1]: 'office.loop' does not follow 'market.loop'") != std::string::npos);
  r = vehicles_cli(*server, {"spawn", "--route", "market.loop", "--lane", "office.loop", "--step"});
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("lane: must be route[0]") != std::string::npos);
  r = vehicles_cli(*server, {"spawn", "--route", "office.loop", "--zone", "market", "--step"});
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("is not a lane of zone 'market'") != std::string::npos);

  // The server's parser the number of lanes.
  std::string long_walk = "market.loop";
  for (int i = 0; i < 256; ++i) long_walk += ",market.loop";
  r = vehicles_cli(*server, {"spawn", "--route", long_walk, "--step"});
  INFO("stderr:\n" << r.err);
  CHECK(r.exit.exit_code == 3);
  CHECK(r.err.find("route: 257 lanes, at most 256 per spawn") != std::string::npos);
  CHECK(server->process.terminate(5000ms).exit_code == 0);
}
