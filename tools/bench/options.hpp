// bustle-bench's command line: one subcommand per bench, parsed with CLI11.
//
// The parser lives apart from the bench logic (bench_*.cpp) so that adding a
// bench or a flag touches this file and its bench function only. Every flag
// is range-checked here; a bench function receives only valid values.
//
// Exit codes (the same for every subcommand):
//   0  the bench ran (targets met or not: "target ... NOT met" is a result),
//      or --help / --version was printed;
//   1  the bench could not run or a self-check failed (a scenario did not
//      build, a file could not be written, a restore did not reproduce the
//      state, a server did not start);
//   2  bad command line (unknown subcommand or flag, missing or out-of-range
//      value): one line naming the flag on stderr, nothing run.
#pragma once

#include <cstdint>
#include <string>

#include "district_servers.hpp"
#include "fanout.hpp"
#include "gateway_bench.hpp"

namespace bustle::bench {

struct Args {
  std::string mode;  // the subcommand: step, population, snapshot, vehicles, stream, frame, fanout,
                     // districts, district-servers, gateway
  std::uint32_t agents = 100'000;   // step, snapshot, stream: pedestrians
  std::uint64_t steps = 1000;       // timed steps
  std::uint32_t repeat = 100;       // snapshot: checkpoints taken (a p99 below the max needs > 51)
  std::uint32_t steps_between = 1;  // snapshot: steps between checkpoints
  std::uint64_t seed = 1;
  std::string dir = "/tmp";           // snapshot, fanout: where files go
  std::uint32_t grid = 32;            // vehicles, stream: intersections per side
  std::uint32_t vehicles = 10'000;    // vehicles, stream: managed vehicles to reach
  std::uint32_t districts = 2;        // districts: strips of the district city
  std::string write_scenario;         // districts: write the city to this file and exit
  std::uint32_t active = 100'000;     // population: active background pedestrians
  std::uint32_t dormant = 1'000'000;  // population: dormant resident identities
  std::uint32_t residents = 0;        // population: how many of the active are community residents
  std::uint64_t warmup = 40;  // population: untimed steps at least (more until tiers settle)
  std::uint32_t threads = 1;  // population, step, snapshot, frame: threads for the parallel parts
  std::uint32_t frame_pedestrians = 1'000'000;  // frame: the district city's pedestrians
  std::uint32_t frame_clients = 8;              // frame: district clients
  std::uint32_t frame_share = 0;                // frame: per district (0: pedestrians / 50)
  std::uint64_t frame_steps = 100;              // frame: timed steps
  std::uint32_t frame_threads = 2;              // frame: the server's --sim-threads
  bool json = false;     // every bench: also print one JSON line (see report.hpp)
  FanoutOptions fanout;  // fanout: its own flags (agents, repeat, dir and warmup included)
  DistrictServersOptions district_servers;  // district-servers: its own flags
  GatewayBenchOptions gateway;              // gateway: its own flags
};

// What parse_args decided: run the bench in `args`, or exit with `exit_code`
// (help, version or an error already printed).
struct ParsedArgs {
  Args args;
  bool run = false;
  int exit_code = 0;
};

// Parses argv; prints --help / --version to stdout and errors to stderr.
ParsedArgs parse_args(int argc, char** argv);

// The version string printed by --version ("bustle-bench 0.1.0").
const char* version_text();

}  // namespace bustle::bench
