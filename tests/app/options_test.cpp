// bustle-server's settings (server/app/src/options.cpp): defaults, flags over
// the environment, bad values naming the flag or variable, batch mode and
// what it refuses, the operations and quality settings.
#include "options.hpp"

#include <catch2/catch.hpp>
#include <map>

using bustle::app::parse_options;

namespace {
bustle::app::ParseResult parse(std::vector<std::string> args,
                               std::map<std::string, std::string> env = {}) {
  return parse_options(args, [&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}
}  // namespace

TEST_CASE("defaults") {
  const auto r = parse({});
  REQUIRE(r.error.empty());
  CHECK(r.options.server.port == 7777);
  CHECK(r.options.server.bind_address == "127.0.0.1");
  CHECK(r.options.seed == 1);
  CHECK_FALSE(r.options.config_path.has_value());
  CHECK(r.options.clock == bustle::net::ClockMode::Realtime);
}

TEST_CASE("flags override the environment") {
  const auto r =
      parse({"--port", "9000", "--clock=manual"}, {{"BUSTLE_PORT", "8000"}, {"BUSTLE_SEED", "42"}});
  REQUIRE(r.error.empty());
  CHECK(r.options.server.port == 9000);
  CHECK(r.options.seed == 42);
  CHECK(r.options.clock == bustle::net::ClockMode::Manual);
}

TEST_CASE("bad values name the flag or variable") {
  CHECK(parse({"--port", "70000"}).error.find("--port") != std::string::npos);
  CHECK(parse({"--clock", "slow"}).error.find("realtime, fast or manual") != std::string::npos);
  CHECK(parse({"--rate", "0"}).error.find("--rate") != std::string::npos);
  CHECK(parse({"--bogus"}).error.find("unknown option '--bogus'") != std::string::npos);
  CHECK(parse({"--seed"}).error.find("missing value") != std::string::npos);
  CHECK(parse({"--print-digest"}).error.find("--steps") != std::string::npos);
  CHECK(parse({}, {{"BUSTLE_PORT", "x"}}).error.find("environment BUSTLE_PORT") !=
        std::string::npos);
}

TEST_CASE("sim threads are auto (0) unless a count is given") {
  CHECK(parse({}).options.sim_threads == 0);
  CHECK(parse({"--sim-threads", "auto"}).options.sim_threads == 0);
  CHECK(parse({"--sim-threads", "3"}).options.sim_threads == 3);
  CHECK(parse({}, {{"BUSTLE_SIM_THREADS", "2"}}).options.sim_threads == 2);
  CHECK(parse({"--sim-threads", "0"}).error.find("a thread count or auto") != std::string::npos);
}

TEST_CASE("batch mode") {
  const auto r = parse({"--steps", "1000", "--seed", "7", "--print-digest"});
  REQUIRE(r.error.empty());
  CHECK(*r.options.batch_steps == 1000);
  CHECK(r.options.print_digest);
  CHECK(r.options.seed == 7);
}

TEST_CASE("the invariant check option is off by default and allowed live and in batch mode") {
  CHECK_FALSE(parse({}).options.check_invariants);
  const auto live = parse({"--check-invariants", "--clock", "manual"});
  REQUIRE(live.error.empty());
  CHECK(live.options.check_invariants);
  const auto batch = parse({"--steps", "10", "--check-invariants"});
  REQUIRE(batch.error.empty());
  CHECK(batch.options.check_invariants);
}

TEST_CASE("batch mode refuses every setting it would silently ignore, naming both") {
  const std::vector<std::pair<std::string, std::string>> ignored = {
      {"--port", "0"},           {"--bind", "0.0.0.0"},
      {"--token", "t"},          {"--handshake-timeout-ms", "100"},
      {"--max-clients", "2"},    {"--client-outbound-max-bytes", "8192"},
      {"--snapshot-db", "x.db"}, {"--snapshot-db-max-pages", "10"},
      {"--autosave-steps", "5"}, {"--clock", "realtime"},
      {"--clock", "manual"},
  };
  for (const auto& [flag, value] : ignored) {
    INFO(flag << " " << value);
    const std::string error = parse({"--steps", "10", flag, value}).error;
    CHECK(error.rfind(flag + " has no effect with --steps: batch mode ", 0) == 0);
    // The same flag is accepted by the server, and in either order with --steps.
    CHECK(parse({flag, value}).error.empty());
    CHECK(parse({flag, value, "--steps", "10"}).error == error);
  }
  SECTION("from the environment too, naming the variable") {
    const std::string error = parse({"--steps", "10"}, {{"BUSTLE_SNAPSHOT_DB", "x.db"}}).error;
    CHECK(error.rfind("environment BUSTLE_SNAPSHOT_DB (--snapshot-db) has no effect with --steps",
                      0) == 0);
    CHECK(parse({}, {{"BUSTLE_SNAPSHOT_DB", "x.db"}}).error.empty());
  }
  SECTION("what batch mode does use is accepted") {
    const auto r = parse({"--steps", "10", "--config", "c.json", "--seed", "3", "--rate", "20",
                          "--log-level", "warn", "--record", "r.db", "--record-keyframe-steps",
                          "100", "--print-digest", "--clock", "fast"});
    INFO(r.error);
    REQUIRE(r.error.empty());
    CHECK(*r.options.record_path == "r.db");
    CHECK(r.options.record_keyframe_steps == 100);
  }
}

TEST_CASE("a keyframe interval without a recording is refused in every mode") {
  CHECK(parse({"--record-keyframe-steps", "10"}).error ==
        "--record-keyframe-steps has no effect without --record FILE");
  CHECK(parse({"--steps", "5", "--record-keyframe-steps", "10"})
            .error.find("without --record FILE") != std::string::npos);
  CHECK(parse({}, {{"BUSTLE_RECORD_KEYFRAME_STEPS", "10"}})
            .error.find("environment BUSTLE_RECORD_KEYFRAME_STEPS") != std::string::npos);
  CHECK(parse({"--record-keyframe-steps", "10"}, {{"BUSTLE_RECORD", "r.db"}}).error.empty());
}

TEST_CASE("operations settings: metrics bind, log format, checkpoint on exit, agones") {
  const auto off = parse({});
  REQUIRE(off.error.empty());
  CHECK_FALSE(off.options.metrics_bind.has_value());  // no endpoint unless asked for
  CHECK(off.options.log_format == "text");
  CHECK_FALSE(off.options.agones);

  const auto on =
      parse({"--metrics-bind", "0.0.0.0:9464", "--log-format", "json", "--checkpoint-on-exit",
             "final", "--agones", "--health-max-lag-steps", "20"});
  INFO(on.error);
  REQUIRE(on.error.empty());
  CHECK(*on.options.metrics_bind == "0.0.0.0:9464");
  CHECK(on.options.log_format == "json");
  CHECK(*on.options.checkpoint_on_exit == "final");
  CHECK(on.options.agones);
  CHECK(on.options.health_max_lag_steps == 20);

  const auto env = parse(
      {},
      {{"BUSTLE_METRICS_BIND", "[::1]:0"}, {"BUSTLE_AGONES", "1"}, {"BUSTLE_LOG_FORMAT", "json"}});
  INFO(env.error);
  REQUIRE(env.error.empty());
  CHECK(*env.options.metrics_bind == "[::1]:0");
  CHECK(env.options.agones);
  CHECK(parse({"--metrics-bind", "127.0.0.1:1"}, {{"BUSTLE_METRICS_BIND", "0.0.0.0:2"}})
            .options.metrics_bind == "127.0.0.1:1");

  CHECK(parse({"--metrics-bind", "localhost"}).error.find("ADDR:PORT") != std::string::npos);
  CHECK(parse({"--metrics-bind", "127.0.0.1:70000"}).error.find("port") != std::string::npos);
  CHECK(parse({"--metrics-bind", "::1:9464"}).error.find("--metrics-bind") != std::string::npos);
  CHECK(parse({"--log-format", "xml"}).error.find("text or json") != std::string::npos);
  CHECK(parse({"--checkpoint-on-exit", "bad name"}).error.find("--checkpoint-on-exit") !=
        std::string::npos);
  CHECK(parse({}, {{"BUSTLE_AGONES", "maybe"}}).error.find("environment BUSTLE_AGONES") !=
        std::string::npos);
  CHECK(parse({"--health-max-lag-steps", "5"}).error.find("without --metrics-bind") !=
        std::string::npos);
  CHECK(parse({"--agones-health-ms", "500"}).error.find("without --agones") != std::string::npos);
  CHECK(parse({"--debug-stall-ms", "10"}).error.find("go together") != std::string::npos);
  CHECK(parse({"--steps", "10", "--metrics-bind", "127.0.0.1:0"})
            .error.rfind("--metrics-bind has no effect with --steps", 0) == 0);
  CHECK(parse({"--steps", "10", "--checkpoint-on-exit", "x"})
            .error.find("has no effect with --steps") != std::string::npos);
  CHECK(parse({"--steps", "10", "--log-format", "json"}).error.empty());
}

TEST_CASE("help, version, flags that take no value, and the last of a repeated flag") {
  CHECK(parse({"--help"}).options.show_help);
  CHECK(parse({"-h"}).options.show_help);
  CHECK(parse({"--version"}).options.show_version);
  CHECK_FALSE(parse({}).options.show_version);
  CHECK(parse({"--print-digest=1", "--steps", "1"}).error == "--print-digest: takes no value");
  CHECK(parse({"--agones=0"}).error == "--agones: takes no value");
  // --help=no once started a server and --help=yes printed help.
  for (const char* arg : {"--help=no", "--help=yes", "--help=true", "-h=0"}) {
    INFO(arg);
    const auto r = parse({arg});
    const std::string name = std::string(arg).substr(0, std::string(arg).find('='));
    CHECK(r.error == name + ": takes no value");
    CHECK_FALSE(r.options.show_help);
  }
  CHECK(parse({"--version=no"}).error == "--version: takes no value");
  CHECK(parse({"--seed=9"}).options.seed == 9);
  CHECK(parse({"--seed", "3", "--seed", "4"}).options.seed == 4);
  CHECK(parse({"--seed", "3", "--seed", "x"}).error ==
        "--seed: expected an unsigned 64-bit integer, got 'x'");
  CHECK(parse({"city.json"}).error == "unknown option 'city.json' (see --help)");
  CHECK(parse({"--port", "70000"}).error ==
        "--port: expected an integer in [0, 65535], got '70000'");
  CHECK(parse({}, {{"BUSTLE_PORT", "x"}}).error ==
        "environment BUSTLE_PORT: expected an integer in [0, 65535], got 'x'");
  // A flag overrides its variable.
  CHECK(parse({"--agones"}, {{"BUSTLE_AGONES", "0"}}).options.agones);
}

TEST_CASE("the --quality flag picks a row of the quality table and the default client budgets") {
  const auto high = parse({});
  REQUIRE(high.error.empty());
  CHECK(high.options.quality == bustle::app::Quality::High);
  CHECK(high.options.server.default_budgets.actors == 256);  // the stream's defaults of before
  const auto low = parse({"--quality", "low"});
  REQUIRE(low.error.empty());
  CHECK(low.options.quality == bustle::app::Quality::Low);
  CHECK(low.options.server.default_budgets.actors == 64);
  CHECK(low.options.server.default_budgets.instances == 1024);
  CHECK(low.options.server.default_budgets.markers == 4096);
  CHECK(bustle::app::quality_budgets(bustle::app::Quality::Low).attached == 16);
  CHECK(bustle::app::quality_budgets(bustle::app::Quality::Low).unattached == 32);
  const auto epic = parse({}, {{"BUSTLE_QUALITY", "epic"}});
  REQUIRE(epic.error.empty());
  CHECK(epic.options.server.default_budgets.actors == 512);
  const std::string bad = parse({"--quality", "ultra"}).error;
  CHECK(bad.find("--quality") != std::string::npos);
  CHECK(bad.find("expected low, medium, high or epic, got 'ultra'") != std::string::npos);
  CHECK(parse({}, {{"BUSTLE_QUALITY", "x"}}).error.find("environment BUSTLE_QUALITY") !=
        std::string::npos);
  CHECK(parse({"--steps", "10", "--quality", "low"}).error.rfind("--quality has no effect", 0) ==
        0);
}

TEST_CASE("district settings: the district, where it listens, the peers it dials") {
  const auto r = parse({"--district", "east", "--district-listen", "[::1]:7101", "--district-peers",
                        "west=127.0.0.1:7100,north=10.0.0.2:7102"});
  REQUIRE(r.error.empty());
  CHECK(r.options.district == "east");
  CHECK(r.options.district_listen_host == "::1");
  CHECK(r.options.district_listen_port == 7101);
  REQUIRE(r.options.district_peers.size() == 2);
  CHECK(r.options.district_peers[1].district == "north");
  CHECK(r.options.district_peers[1].host == "10.0.0.2");
  CHECK(r.options.district_peers[1].port == 7102);
  CHECK(parse({}).options.district_listen_port == 0);  // any free port by default
  CHECK(parse({"--district", "e", "--district-peers", "west"}).error.find("ID=HOST:PORT") !=
        std::string::npos);
  CHECK(parse({"--district", "e", "--district-peers", "west=host"}).error.find("west: ") !=
        std::string::npos);
  CHECK(parse({"--district", "e", "--district-listen", "127.0.0.1:99999"}).error.find("port") !=
        std::string::npos);
  CHECK(parse({"--district-peers", "west=127.0.0.1:1"}).error.find("without --district ID") !=
        std::string::npos);
  CHECK(parse({}, {{"BUSTLE_DISTRICT", "west"}}).options.district == "west");
}
