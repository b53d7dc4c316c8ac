// The `bustle` command-line tool: argument parsing and the subcommands, kept
// in a library so that tests can parse arguments without starting a process.
//
// Exit codes (documented in --help and docs/cli.md, "Exit codes"):
//   0 success, 1 the server could not be reached or misbehaved (unreachable,
//   timeout, protocol or server error), 2 usage error, 3 the server rejected
//   the command, or a job or spawn ended Failed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bustle::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitServer = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitRejected = 3;

struct CliOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 7777;
  std::string token;  // --token, else the BUSTLE_TOKEN environment variable
  std::uint32_t timeout_ms = 3000;
  bool json = false;        // --json: print JSON objects instead of text (docs/cli.md, JSON output)
  std::uint32_t count = 0;  // watch: lines to print, 0 = until interrupted
  std::uint32_t interval_ms = 1000;  // watch: time between lines
  // watch --observer X,Y[,R] (repeatable): where the subscription looks from
  // (metres; radius R, default 150). None: the whole city.
  struct WatchObserver {
    double x_m = 0.0;
    double y_m = 0.0;
    double radius_m = 150.0;
    friend bool operator==(const WatchObserver&, const WatchObserver&) = default;
  };
  std::vector<WatchObserver> watch_observers;
  std::string command;         // status, watch, pause, resume, step, target, checkpoint, restore,
                               // save, load, snapshots, delete, job, garages, signals, vehicle,
                               // garage-request, cancel-request, strategy, observers, hour,
                               // time-scale, zones, population, spawn, cancel-spawn,
                               // spawn-status, entity, lifecycle, help
  std::string help_topic;      // help COMMAND
  std::uint32_t argument = 0;  // step N, target N
  std::string name;            // checkpoint/restore/save/load/delete NAME
  std::uint64_t job_id = 0;    // job ID
  bool no_wait = false;        // --no-wait: snapshot jobs return after the first result
  // Vehicles and population.
  std::string garage;      // garage-request / cancel-request GARAGE
  std::string request_id;  // garage-request / cancel-request REQUEST_ID
  std::string prototype;   // garage-request PROTOTYPE
  std::string lane;        // garage-request / close-lane / open-lane LANE (lane id)
  static constexpr std::uint32_t kNoLaneIndex = UINT32_MAX;
  std::uint32_t lane_index = kNoLaneIndex;  // close-lane / open-lane --index N
  std::int32_t priority = 10;               // --priority P (garage-request)
  std::uint32_t entity_index = 0;           // vehicle / strategy / entity INDEX:GEN
  std::uint32_t entity_generation = 0;
  std::uint8_t strategy = 0;  // strategy: 0 route_follow, 1 lane_follow, 2 parked, 3 manual
  std::vector<std::pair<float, float>> observers;  // observers X,Y ... (empty: clear)
  bool follow = false;                             // observers --follow INDEX:GEN (entity_*)
  bool unmask = false;                             // mask INDEX:GEN --off
  double hour = 0.0;                               // hour H
  std::uint32_t time_scale = 1;                    // time-scale S
  // Spawn pipeline.
  std::string zone;                 // spawn --zone Z (empty: any sidewalk)
  std::string spawn_lane;           // spawn --lane L (empty: any lane of the zone)
  std::vector<std::string> route;   // spawn --route A,B,C: lane ids in walking order (empty: none)
  std::uint8_t spawn_priority = 1;  // spawn --priority: wire PriorityClass (1 quest)
  std::uint32_t spawn_timeout_ms = 0;      // spawn --spawn-timeout-ms (0: the scenario's)
  std::optional<std::uint8_t> wait_state;  // spawn --wait STATE (wire SpawnState value)
  bool attach = false;                     // spawn --attach: report the actor attached when asked
  std::uint64_t handle = 0;                // cancel-spawn / spawn-status HANDLE
  // lifecycle: the settings to change; unset ones keep their current value.
  std::optional<std::uint32_t> growth_quota;           // --growth
  std::optional<std::uint32_t> recycle_quota;          // --recycle
  std::optional<std::uint32_t> lifecycle_interval_ms;  // --interval-ms (with lifecycle)
  std::optional<std::uint32_t> migration_budget;       // --migration-budget
  // --step: under a manual clock, send one Step after a world command so that
  // its result arrives (otherwise the command is only queued).
  bool step_after = false;
};

enum class ParseStatus : std::uint8_t { Ok, Help, Version, Error };

struct ParseResult {
  ParseStatus status = ParseStatus::Error;
  CliOptions options;
  std::string error;  // on Error: what was wrong, one sentence
  std::string text;   // on Help and Version: what to print
};

// Parses the arguments after the program name (CLI11). The global options
// (--host, --port, --token, --timeout-ms, --json) may come before or after the
// command; a command's own options come after it; `--name value` or
// `--name=value`. `env_token` is the
// value of BUSTLE_TOKEN (nullptr if unset); --token wins over it. Likewise
// `env_host` and `env_port` (BUSTLE_HOST, BUSTLE_PORT) give the defaults of
// --host and --port; an invalid BUSTLE_PORT is an error naming the variable.
ParseResult parse_args(std::span<const std::string_view> args, const char* env_token,
                       const char* env_host = nullptr, const char* env_port = nullptr);

// Runs a parsed command; prints results to `out` and problems to `err`.
int run(const CliOptions& options, std::FILE* out, std::FILE* err);

// Whole program: parse, then run. Returns the exit code.
int main_entry(int argc, char** argv);

}  // namespace bustle::cli
