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
