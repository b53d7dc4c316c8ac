// bustle-server settings: flags override BUSTLE_* environment variables, which
// override defaults. The scenario file (--config) holds the city itself.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bustle/args/addresses.hpp"
#include "bustle/net/server.hpp"
#include "quality.hpp"

namespace bustle::app {

struct AppOptions {
  std::optional<std::string> config_path;  // empty: the embedded default city
  std::uint64_t seed = 1;
  std::optional<double> rate_hz;  // overrides the scenario's step_us
  // Threads for the step's parallel parts; 0 (the default, or "auto"): one
  // per usable CPU, at most kSimThreadsAutoMax (cpu_budget.hpp).
  std::uint32_t sim_threads = 0;
  std::uint32_t net_threads = 1;  // threads that encode several clients' deltas at once
  net::ClockMode clock = net::ClockMode::Realtime;
  std::optional<std::uint64_t> batch_steps;  // --steps N: headless batch run
  bool print_digest = false;
  bool check_invariants = false;  // --check-invariants: World::check_invariants() after every step
  std::uint32_t catchup_steps_max = 5;  // realtime: steps run per wake at most
  std::string log_level = "info";
  std::string log_format = "text";          // text | json
  std::optional<std::string> metrics_bind;  // --metrics-bind ADDR:PORT; unset = no endpoint
  std::uint32_t health_max_lag_steps = 50;  // /healthz: sim heartbeat older than this many steps
  std::optional<std::string> checkpoint_on_exit;  // checkpoint NAME on SIGTERM/SIGINT
  bool agones = false;                            // report to the Agones SDK sidecar
  // --agones-district: the district (and its peers) come with the Agones
  // allocation (labels and annotations read from the SDK sidecar).
  bool agones_district = false;
  std::uint32_t agones_health_ms = 2000;  // POST /health period
  // Test hooks (not in --help; docs/operations.md): stall the sim thread
  // after a step, slow restores down.
  std::uint64_t debug_stall_at_step = 0;
  std::uint32_t debug_stall_ms = 0;
  std::uint32_t debug_restore_delay_ms = 0;
  std::string snapshot_db = "bustle-snapshots.db";  // snapshot store file
  std::int64_t snapshot_db_max_pages = 0;           // 0 = no cap (fault injection, quotas)
  std::uint64_t autosave_steps = 0;                 // 0 = off
  std::optional<std::string> record_path;           // --record FILE
  std::uint64_t record_keyframe_steps = 300;        // docs/snapshots-and-replay.md
  // A district server (docs/districts.md): the district it runs (an id of
  // the scenario's district map), where it listens for its neighbours, and
  // where the neighbours it dials (those with a lower index) listen.
  std::optional<std::string> district;
  std::string district_listen_host = "127.0.0.1";
  std::uint16_t district_listen_port = 0;  // 0: any free port (printed at start)
  using DistrictPeerAddress = args::DistrictAddress;
  std::vector<DistrictPeerAddress> district_peers;
  std::uint32_t district_wait_s = 60;  // waiting longer for a neighbour's step ends the district
  // --resume FILE: start where this recording (of the same city) ends.
  std::optional<std::string> resume_path;
  // --quality: representation budgets (quality.hpp); sets server.default_budgets.
  Quality quality = Quality::High;
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

// "ID=HOST:PORT[,...]" (--district-peers, and the Agones annotation) into
// `out`; an error message naming the bad item, or empty.
std::string parse_district_peers(const std::string& v,
                                 std::vector<AppOptions::DistrictPeerAddress>& out);

}  // namespace bustle::app
