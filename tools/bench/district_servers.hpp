// `bustle-bench district-servers` (issue 34): the district city run by K
// real bustle-server processes on loopback in batch mode, linked in
// neighbour lockstep (docs/districts.md), for K in a list; per district its
// wall time, step mean, barrier wait per step, efficiency and border bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bustle::bench {

struct DistrictServersOptions {
  std::string server;        // bustle-server binary
  std::string dir = "/tmp";  // the cities, server logs and recordings go here
  // strong: one city of `agents` pedestrians on a `grid` x `grid` grid, cut
  // in K districts; weak: `agents` pedestrians per district on a grid of
  // round(grid x sqrt(K)) nodes per side (about grid x grid nodes each).
  bool weak = false;
  std::vector<std::uint32_t> districts;  // the K to run; empty: 1, 2, 4 (weak: 1, 2, 3, 4)
  std::uint32_t grid = 32;
  std::uint32_t agents = 200'000;
  std::uint32_t vehicles = 0;  // cars on the blocks' loops (--weak: per district)
  std::uint64_t steps = 500;
  std::uint64_t seed = 1;
  std::uint32_t sim_threads = 1;  // each server's --sim-threads
  // --record: each server records (keyframes only at the start) and the
  // bench counts the pedestrians and cars each district received across its
  // borders and the ghost rows it read, from the recordings' border_arrivals;
  // recording costs step time.
  bool record = false;
  std::uint32_t start_timeout_s = 120;  // per server, to its "links on" line
  std::uint32_t run_timeout_s = 3600;   // per K, every server done
};

// The districts' grid for K districts (strong: `grid`; weak: it grows as
// sqrt(K), at least K).
std::uint32_t district_servers_grid(const DistrictServersOptions& o, std::uint32_t districts);

// Runs each K in turn, prints a table per K, RESULT lines and (figures())
// the JSON figures. Returns a process exit status: 1 when a server failed,
// did not start or did not finish in time.
int run_district_servers(const DistrictServersOptions& options);

}  // namespace bustle::bench
