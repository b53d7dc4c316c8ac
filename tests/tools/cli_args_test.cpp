// The `bustle` command line parsed in-process (tools/cli/src/args.cpp): global
// options anywhere, every command's operands and flags, help and version, and
// usage errors worded with their reason.
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bustle/cli/cli.hpp"

using bustle::cli::ParseStatus;

namespace {

bustle::cli::ParseResult parse(std::vector<std::string_view> args, const char* env = nullptr) {
  return bustle::cli::parse_args(args, env);
}

}  // namespace

TEST_CASE("CLI defaults", "[cli]") {
  const auto r = parse({"status"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.command == "status");
  CHECK(r.options.host == "127.0.0.1");
  CHECK(r.options.port == 7777);
  CHECK(r.options.token.empty());
  CHECK(r.options.timeout_ms == 3000);
  CHECK(r.options.count == 0);
  CHECK(r.options.interval_ms == 1000);
}

TEST_CASE("CLI options before or after the command, with = or a space", "[cli]") {
  const auto r = parse({"--host", "10.0.0.2", "watch", "--port=9000", "--count", "2",
                        "--interval-ms=250", "--timeout-ms", "500"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.command == "watch");
  CHECK(r.options.host == "10.0.0.2");
  CHECK(r.options.port == 9000);
  CHECK(r.options.count == 2);
  CHECK(r.options.interval_ms == 250);
  CHECK(r.options.timeout_ms == 500);
}

TEST_CASE("CLI watch takes any number of observers, with a default radius", "[cli]") {
  auto r = parse({"watch"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.watch_observers.empty());
  r = parse({"watch", "--observer", "10.5,-3", "--observer=0,0,25"});
  REQUIRE(r.status == ParseStatus::Ok);
  using W = bustle::cli::CliOptions::WatchObserver;
  CHECK(r.options.watch_observers == std::vector<W>{W{10.5, -3.0, 150.0}, W{0.0, 0.0, 25.0}});
}

TEST_CASE("CLI token: --token wins over BUSTLE_TOKEN", "[cli]") {
  CHECK(parse({"pause"}, "from-env").options.token == "from-env");
  CHECK(parse({"pause", "--token", "flag"}, "from-env").options.token == "flag");
}

TEST_CASE("CLI commands with a number", "[cli]") {
  auto r = parse({"step", "5"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.argument == 5);
  r = parse({"target", "0"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.command == "target");
  CHECK(r.options.argument == 0);
}

TEST_CASE("CLI snapshot commands take a name, job takes an id, --no-wait is a flag", "[cli]") {
  for (const char* cmd : {"checkpoint", "restore", "save", "load", "delete"}) {
    INFO(cmd);
    const auto r = parse({cmd, "noon.1"});
    REQUIRE(r.status == ParseStatus::Ok);
    CHECK(r.options.command == cmd);
    CHECK(r.options.name == "noon.1");
    CHECK_FALSE(r.options.no_wait);
  }
  auto r = parse({"--port", "9", "restore", "x", "--no-wait"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.no_wait);
  CHECK(r.options.name == "x");
  CHECK(r.options.port == 9);
  r = parse({"snapshots"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.command == "snapshots");
  r = parse({"job", "18446744073709551615"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.job_id == 18446744073709551615ull);
  // Names are the server's to judge: passed through as given.
  r = parse({"save", "has space"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.name == "has space");
}

TEST_CASE("CLI help and version", "[cli]") {
  CHECK(parse({"--help"}).status == ParseStatus::Help);
  CHECK(parse({"status", "-h"}).status == ParseStatus::Help);
  CHECK(parse({"help"}).status == ParseStatus::Help);
  // bustle COMMAND --help and bustle help COMMAND: that command's operands and options.
  for (const auto& args : {std::vector<std::string_view>{"spawn", "--help"},
                           std::vector<std::string_view>{"help", "spawn"}}) {
    const auto r = parse(args);
    REQUIRE(r.status == ParseStatus::Help);
    CHECK(r.text.find("Usage: bustle spawn") != std::string::npos);
    CHECK(r.text.find("--wait STATE") != std::string::npos);
    CHECK(r.text.find("--count") == std::string::npos);  // watch's, not spawn's
  }
  CHECK(parse({"help", "nonsense"}).status == ParseStatus::Error);
  const auto v = parse({"--version"});
  REQUIRE(v.status == ParseStatus::Version);
  CHECK(v.text.find("(protocol 3)") != std::string::npos);
}

TEST_CASE("CLI --json is a global option, before or after the command", "[cli]") {
  CHECK_FALSE(parse({"status"}).options.json);
  CHECK(parse({"--json", "status"}).options.json);
  CHECK(parse({"population", "--json"}).options.json);
  CHECK(parse({"spawn", "--wait", "queued", "--json"}).options.json);
}

TEST_CASE("CLI rejects bad input with a reason", "[cli][population]") {
  struct Case {
    std::vector<std::string_view> args;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {{}, "no command"},
      {{"frobnicate"}, "unknown command"},
      {{"status", "--bogus"}, "unknown option"},
      {{"status", "--port"}, "needs a value"},
      {{"--help=no"}, "--help: takes no value"},
      {{"status", "--json=no"}, "--json: takes no value"},
      {{"status", "--json=true"}, "--json: takes no value"},
      {{"--version=0"}, "--version: takes no value"},
      {{"status", "--port", "0"}, "--port"},
      {{"status", "--port", "65536"}, "--port"},
      {{"status", "--port", "12ab"}, "--port"},
      {{"status", "--timeout-ms", "0"}, "--timeout-ms"},
      {{"watch", "--count", "-1"}, "--count"},
      {{"watch", "--interval-ms", "1"}, "--interval-ms"},
      {{"step"}, "needs a number"},
      {{"step", "0"}, "step N: expected a step count in [1, 4294967295], got '0'"},
      {{"step", "x"}, "step N: expected"},
      {{"target", "4294967296"}, "target N: expected a count in [0, 4294967295]"},
      {{"status", "extra"}, "unexpected argument"},
      {{"status", "--host="}, "--host"},
      {{"checkpoint"}, "needs a snapshot name"},
      {{"restore"}, "bustle restore NAME"},
      {{"delete", "a", "b"}, "unexpected argument"},
      {{"snapshots", "a"}, "unexpected argument"},
      {{"job"}, "needs a job id"},
      {{"job", "-1"}, "job ID: expected a job id"},
      {{"job", "18446744073709551616"}, "job ID: expected"},
      {{"job", "7x"}, "got '7x'"},
      {{"restore", "x", "--no-wait=maybe"}, "--no-wait: takes no value"},
      {{"--no-wait", "restore", "x"}, "put it after the command"},
      {{"status", "--step"}, "--step is only for target"},
      // Spawn pipeline commands.
      {{"spawn", "--priority", "urgent"},
       "--priority: expected story, quest, community or background, got 'urgent'"},
      {{"spawn", "--priority", "1"}, "--priority"},
      {{"spawn", "--wait", "done"}, "--wait: expected queued, identity_created"},
      {{"spawn", "--wait", "failed"}, "--wait"},
      {{"spawn", "--wait"}, "needs a value"},
      {{"spawn", "--attach"}, "--attach"},
      {{"spawn", "--wait", "registered", "--attach"}, "--attach"},
      {{"spawn", "--spawn-timeout-ms", "-5"}, "--spawn-timeout-ms"},
      {{"spawn", "extra"}, "unexpected argument"},
      {{"status", "--zone", "market"}, "--zone is only for spawn"},
      {{"lifecycle", "--lane", "x", "--growth", "1"}, "--lane is only for spawn"},
      {{"spawn", "--growth", "1"}, "--growth is only for lifecycle"},
      {{"spawn", "--route"}, "needs a value"},
      {{"spawn", "--route", ""}, "--route: expected"},
      {{"spawn", "--route", "a,,b"}, "lane ids separated by commas"},
      {{"spawn", "--route=a,b,"},
       "--route: expected lane ids separated by commas (e.g. market.loop,x.market.office), got "
       "'a,b,'"},
      {{"spawn", "--route", ",a"}, "--route"},
      {{"status", "--route", "a"}, "--route is only for spawn"},
      {{"lifecycle"}, "at least one"},
      {{"lifecycle", "--growth", "-1"}, "--growth"},
      {{"lifecycle", "--migration-budget", "x"}, "--migration-budget"},
      {{"lifecycle", "--interval-ms", "3600001"}, "--interval-ms"},
      {{"watch", "--interval-ms", "0"}, "--interval-ms"},
      {{"cancel-spawn"}, "bustle cancel-spawn HANDLE"},
      {{"cancel-spawn", "0"}, "cancel-spawn HANDLE: expected a spawn handle in [1,"},
      {{"cancel-spawn", "1", "2"}, "unexpected argument"},
      {{"spawn-status", "x"},
       "spawn-status HANDLE: expected a spawn handle in [1, 18446744073709551615], got 'x'"},
      {{"spawn-status", "-1"}, "spawn-status HANDLE"},
      {{"entity"}, "bustle entity INDEX:GEN"},
      {{"entity", "12"}, "entity INDEX:GEN: expected an entity id INDEX:GEN (e.g. 12:1), got '12'"},
      {{"population", "extra"}, "unexpected argument"},
      // watch --observer X,Y[,R]
      {{"status", "--observer", "1,2"}, "--observer is only for watch"},
      {{"watch", "--observer", "1"},
       "--observer: expected X,Y or X,Y,RADIUS in metres (radius in (0, 100000]), got '1'"},
      {{"watch", "--observer", "1,2,3,4"}, "--observer: expected"},
      {{"watch", "--observer", "1,x"}, "--observer: expected"},
      {{"watch", "--observer", "1,2,0"}, "radius in (0, 100000]"},
      {{"watch", "--observer", "1,2,100001"}, "--observer: expected"},
      {{"watch", "--observer", "1,2,"}, "--observer: expected"},
  };
  for (const auto& c : cases) {
    const auto r = parse(c.args);
    INFO("expecting: " << c.needle << "; got: " << r.error);
    CHECK(r.status == ParseStatus::Error);
    CHECK(r.error.find(c.needle) != std::string::npos);
  }
}

TEST_CASE("CLI vehicle commands parse their arguments", "[cli][vehicles]") {
  auto r = parse({"garage-request", "g0", "r99", "sedan", "lane0", "--priority", "-5", "--step"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.command == "garage-request");
  CHECK(r.options.garage == "g0");
  CHECK(r.options.request_id == "r99");
  CHECK(r.options.prototype == "sedan");
  CHECK(r.options.lane == "lane0");
  CHECK(r.options.priority == -5);
  CHECK(r.options.step_after);
  r = parse({"garage-request", "g0", "r99", "sedan", "lane0"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.priority == 10);
  CHECK_FALSE(r.options.step_after);

  r = parse({"cancel-request", "g0", "r5"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.garage == "g0");
  CHECK(r.options.request_id == "r5");

  r = parse({"vehicle", "12:3"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.entity_index == 12);
  CHECK(r.options.entity_generation == 3);

  const char* names[] = {"route_follow", "lane_follow", "parked", "manual"};
  for (std::uint8_t i = 0; i < 4; ++i) {
    r = parse({"strategy", "4:1", names[i]});
    REQUIRE(r.status == ParseStatus::Ok);
    CHECK(r.options.strategy == i);
    CHECK(r.options.entity_index == 4);
  }

  r = parse({"observers", "25,25", "-10.5,3"});
  REQUIRE(r.status == ParseStatus::Ok);
  REQUIRE(r.options.observers.size() == 2);
  CHECK(r.options.observers[1].first == -10.5f);
  CHECK(r.options.observers[1].second == 3.0f);
  r = parse({"observers"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.observers.empty());

  for (const auto& q : {"garages", "signals", "zones"}) {
    INFO(q);
    CHECK(parse({q}).status == ParseStatus::Ok);
    CHECK(parse({q, "extra"}).status == ParseStatus::Error);
  }
}

TEST_CASE("CLI population commands parse their arguments", "[cli][population]") {
  auto r = parse({"hour", "7.5"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.hour == 7.5);
  r = parse({"hour", "30"});  // the server judges the range
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.hour == 30.0);
  r = parse({"time-scale", "60"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.time_scale == 60);
}

TEST_CASE("CLI vehicle and population usage errors", "[cli][vehicles]") {
  const std::vector<std::vector<std::string_view>> bad = {
      {"garage-request", "g0", "r1", "sedan"},
      {"garage-request", "g0", "r1", "sedan", "lane0", "extra"},
      {"garage-request", "g0", "r1", "sedan", "lane0", "--priority", "x"},
      {"cancel-request", "g0"},
      {"vehicle"},
      {"vehicle", "12"},
      {"vehicle", "12:"},
      {"vehicle", "a:1"},
      {"strategy", "1:1"},
      {"strategy", "1:1", "fly"},
      {"observers", "1"},
      {"observers", "1,nan"},
      {"observers", "1,2,3"},
      {"hour"},
      {"hour", "noon"},
      {"hour", "inf"},
      {"time-scale", "-1"},
      {"time-scale", "1.5"},
  };
  for (const auto& args : bad) {
    std::string shown;
    for (auto a : args) shown += std::string(a) + " ";
    INFO(shown);
    const auto r = parse(args);
    CHECK(r.status == ParseStatus::Error);
    CHECK_FALSE(r.error.empty());
  }
}

TEST_CASE("CLI spawn pipeline commands parse their arguments", "[cli][population]") {
  auto r = parse({"spawn"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.command == "spawn");
  CHECK(r.options.zone.empty());
  CHECK(r.options.spawn_lane.empty());
  CHECK(r.options.spawn_priority == 1);  // quest
  CHECK(r.options.spawn_timeout_ms == 0);
  CHECK(r.options.route.empty());
  CHECK_FALSE(r.options.wait_state.has_value());
  CHECK_FALSE(r.options.attach);
  CHECK(r.options.timeout_ms == 3000);  // --timeout-ms stays the tool's own timeout

  r = parse({"spawn", "--zone", "market", "--lane=market.loop", "--priority", "background",
             "--spawn-timeout-ms", "5000", "--wait", "ready_for_gameplay", "--attach", "--step",
             "--timeout-ms", "800"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.zone == "market");
  CHECK(r.options.spawn_lane == "market.loop");
  CHECK(r.options.spawn_priority == 3);
  CHECK(r.options.spawn_timeout_ms == 5000);
  REQUIRE(r.options.wait_state.has_value());
  CHECK(*r.options.wait_state == 5);  // ReadyForGameplay
  CHECK(r.options.attach);
  CHECK(r.options.step_after);
  CHECK(r.options.timeout_ms == 800);

  // --route: lane ids in walking order, passed on as given (the server judges
  // them, their succession and their number); the last --route wins.
  r = parse({"spawn", "--route", "x.facilities.market,market.loop,market.loop", "--lane",
             "x.facilities.market"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.route ==
        std::vector<std::string>{"x.facilities.market", "market.loop", "market.loop"});
  CHECK(r.options.spawn_lane == "x.facilities.market");
  r = parse({"spawn", "--route=a", "--route", "b,c"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.route == std::vector<std::string>{"b", "c"});

  // Names are matched without case, '_' or '-': the wire's CamelCase works too.
  const char* states[] = {"queued",   "identity-created",  "Registered", "RepresentationRequested",
                          "ATTACHED", "ready_for_gameplay"};
  for (std::uint8_t i = 0; i < 6; ++i) {
    INFO(states[i]);
    r = parse({"spawn", "--wait", states[i]});
    REQUIRE(r.status == ParseStatus::Ok);
    CHECK(r.options.wait_state == std::optional<std::uint8_t>(i));
  }
  const char* priorities[] = {"story", "Quest", "COMMUNITY", "background"};
  for (std::uint8_t i = 0; i < 4; ++i) {
    r = parse({"spawn", "--priority", priorities[i]});
    REQUIRE(r.status == ParseStatus::Ok);
    CHECK(r.options.spawn_priority == i);
  }
  // --priority stays an integer for garage-request.
  r = parse({"garage-request", "g0", "r1", "sedan", "lane0", "--priority", "7"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.priority == 7);

  r = parse({"cancel-spawn", "7", "--step"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.handle == 7);
  CHECK(r.options.step_after);
  r = parse({"spawn-status", "18446744073709551615"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.handle == 18446744073709551615ull);

  r = parse({"entity", "40:2"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.entity_index == 40);
  CHECK(r.options.entity_generation == 2);

  CHECK(parse({"population"}).status == ParseStatus::Ok);
}

TEST_CASE("CLI lifecycle takes the settings to change and keeps the rest unset",
          "[cli][population]") {
  auto r = parse({"lifecycle", "--growth", "4"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.growth_quota == std::optional<std::uint32_t>(4));
  CHECK_FALSE(r.options.recycle_quota.has_value());
  CHECK_FALSE(r.options.lifecycle_interval_ms.has_value());
  CHECK_FALSE(r.options.migration_budget.has_value());

  r = parse({"lifecycle", "--recycle=3", "--interval-ms", "0", "--migration-budget", "9"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.recycle_quota == std::optional<std::uint32_t>(3));
  CHECK(r.options.lifecycle_interval_ms == std::optional<std::uint32_t>(0));  // the server judges
  CHECK(r.options.migration_budget == std::optional<std::uint32_t>(9));
  CHECK(r.options.interval_ms == 1000);  // watch's interval untouched

  r = parse({"watch", "--interval-ms", "250"});
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.interval_ms == 250);
  CHECK_FALSE(r.options.lifecycle_interval_ms.has_value());
}

TEST_CASE("CLI BUSTLE_HOST and BUSTLE_PORT are defaults that flags override", "[cli]") {
  std::vector<std::string_view> status = {"status"};
  auto r = bustle::cli::parse_args(status, nullptr, "10.1.2.3", "9001");
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.host == "10.1.2.3");
  CHECK(r.options.port == 9001);
  std::vector<std::string_view> flags = {"status", "--host", "h", "--port", "9002"};
  r = bustle::cli::parse_args(flags, nullptr, "10.1.2.3", "9001");
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.host == "h");
  CHECK(r.options.port == 9002);
  r = bustle::cli::parse_args(status, nullptr, "", "");  // empty variables are unset
  REQUIRE(r.status == ParseStatus::Ok);
  CHECK(r.options.port == 7777);
  r = bustle::cli::parse_args(status, nullptr, nullptr, "70000");
  REQUIRE(r.status == ParseStatus::Error);
  CHECK(r.error.find("BUSTLE_PORT") != std::string::npos);
}
