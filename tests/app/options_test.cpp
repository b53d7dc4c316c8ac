#include <catch2/catch.hpp>

#include <map>

#include "options.hpp"

using bustle::app::parse_options;

namespace {
bustle::app::ParseResult parse(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
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
  const auto r = parse({"--port", "9000", "--clock=manual"}, {{"BUSTLE_PORT", "8000"}, {"BUSTLE_SEED", "42"}});
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
  CHECK(parse({}, {{"BUSTLE_PORT", "x"}}).error.find("environment BUSTLE_PORT") != std::string::npos);
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
      {"--port", "0"},
      {"--bind", "0.0.0.0"},
      {"--token", "t"},
      {"--handshake-timeout-ms", "100"},
      {"--max-clients", "2"},
      {"--client-outbound-max-bytes", "8192"},
      {"--snapshot-db", "x.db"},
      {"--snapshot-db-max-pages", "10"},
      {"--autosave-steps", "5"},
      {"--clock", "realtime"},
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
    CHECK(error.rfind("environment BUSTLE_SNAPSHOT_DB (--snapshot-db) has no effect with --steps", 0) == 0);
    CHECK(parse({}, {{"BUSTLE_SNAPSHOT_DB", "x.db"}}).error.empty());
  }
  SECTION("what batch mode does use is accepted") {
    const auto r = parse({"--steps", "10", "--config", "c.json", "--seed", "3", "--rate", "20", "--log-level", "warn",
                          "--record", "r.db", "--record-keyframe-steps", "100", "--print-digest", "--clock", "fast"});
    INFO(r.error);
    REQUIRE(r.error.empty());
    CHECK(*r.options.record_path == "r.db");
    CHECK(r.options.record_keyframe_steps == 100);
  }
}

TEST_CASE("a keyframe interval without a recording is refused in every mode") {
  CHECK(parse({"--record-keyframe-steps", "10"}).error == "--record-keyframe-steps has no effect without --record FILE");
  CHECK(parse({"--steps", "5", "--record-keyframe-steps", "10"}).error.find("without --record FILE") !=
        std::string::npos);
  CHECK(parse({}, {{"BUSTLE_RECORD_KEYFRAME_STEPS", "10"}}).error.find("environment BUSTLE_RECORD_KEYFRAME_STEPS") !=
        std::string::npos);
  CHECK(parse({"--record-keyframe-steps", "10"}, {{"BUSTLE_RECORD", "r.db"}}).error.empty());
}
