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
};

// Runs `repeat` pairs of runs and prints a table per run, the medians and
// RESULT lines. Returns a process exit status.
int run_fanout(const FanoutOptions& options);

}  // namespace bustle::bench
