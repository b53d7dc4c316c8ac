// `bustle-bench fanout`: many real clients on loopback against a real
// bustle-server process (the streaming issue's socket benchmark).
#pragma once

#include <cstdint>
#include <string>

namespace bustle::bench {

struct FanoutOptions {
  std::string server;                    // bustle-server binary
  std::string dir = "/tmp";              // scenario file, snapshot store and server log go here
  std::uint32_t clients = 64;            // connections per run
  std::uint32_t stalled_percent = 10;    // of `clients`, in the stalled run
  std::uint32_t agents = 2000;           // pedestrians of the city (every client receives all)
  std::uint32_t seconds = 20;            // measured window per run
  std::uint32_t warmup_seconds = 3;      // after every client subscribed, before measuring
  std::uint32_t repeat = 3;              // pairs of runs (no stall, stalled), interleaved
  std::uint64_t outbound_max_bytes = 0;  // 0: 256 KiB (so that stalled clients reach it)
  std::uint16_t motion_tolerance_mm =
      10;  // every client's Subscribe; 0: exact poses (the heaviest stream)
  // --city-scale: 0 = the default two-block city above; otherwise the district
  // city (fanout_city.hpp) with this many pedestrians, and each client
  // subscribes to its own district holding district_share of them; runs are
  // pairs (no client, every client reading its district).
  std::uint32_t district_pedestrians = 0;
  std::uint32_t district_share = 0;  // 0: district_pedestrians / 50 (20 000 of 1 M)
  std::uint32_t sim_threads = 0;     // the server's --sim-threads; 0: its default
  std::uint32_t net_threads = 0;     // the server's --net-threads; 0: its default
};

// Runs `repeat` pairs of runs and prints a table per run, the medians and
// RESULT lines. Returns a process exit status.
int run_fanout(const FanoutOptions& options);

}  // namespace bustle::bench
