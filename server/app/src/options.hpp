// bustle-server settings: flags override BUSTLE_* environment variables, which
// override defaults. The scenario file (--config) holds the city itself.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bustle/net/server.hpp"

namespace bustle::app {

struct AppOptions {
  std::optional<std::string> config_path;  // empty: the embedded default city
  std::uint64_t seed = 1;
  std::optional<double> rate_hz;           // overrides the scenario's step_us
  net::ClockMode clock = net::ClockMode::Realtime;
  std::optional<std::uint64_t> batch_steps;  // --steps N: headless batch run
  bool print_digest = false;
  std::uint32_t catchup_steps_max = 5;     // realtime: steps run per wake at most
  std::string log_level = "info";
  net::ServerOptions server;
  bool show_help = false;
  bool show_version = false;
};

struct ParseResult {
  AppOptions options;
  std::string error;  // non-empty: refuse to start, print this
};

using EnvLookup = std::function<std::optional<std::string>(const char*)>;

ParseResult parse_options(const std::vector<std::string>& args, const EnvLookup& env);

std::string usage_text();

}  // namespace bustle::app
