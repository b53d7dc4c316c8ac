// `bustle-bench gateway` (issue 34): one city on K live district servers
// behind bustle-gateway, as users run it (realtime clock, whole-city clients
// with the default budgets), on loopback. For each client count of
// --clients, in interleaved repeats: the gateway's CPU per published step
// (merge, frame, every client's delta), each district's CPU per step, and
// the bytes each client receives per second.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bustle::bench {

struct GatewayBenchOptions {
  std::string server;        // bustle-server binary
  std::string gateway;       // bustle-gateway binary
  std::string dir = "/tmp";  // the city and the processes' logs go here
  std::uint32_t districts = 2;
  std::uint32_t grid = 32;
  std::uint32_t agents = 200'000;
  std::vector<std::uint32_t> clients;   // client counts, in order; empty: 0, 1, 4, 16
  std::uint32_t seconds = 10;           // measured window per run
  std::uint32_t warmup_seconds = 3;     // after the clients subscribed
  std::uint32_t repeat = 3;             // rounds over every client count
  std::uint32_t start_timeout_s = 180;  // every process started and the city populated
};

// Prints a table per round, the medians and ranges, RESULT lines and the
// JSON figures. Returns a process exit status (1: a process failed).
int run_gateway_bench(const GatewayBenchOptions& options);

}  // namespace bustle::bench
