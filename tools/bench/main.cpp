// bustle-bench: scale measurements that are not unit tests.
//
//   bustle-bench step       [--agents N] [--steps S] [--seed K]
//   bustle-bench population [--active N] [--residents R] [--dormant M] [--steps S]
//                           [--warmup W] [--seed K]
//   bustle-bench snapshot   [--agents N] [--repeat R] [--dir DIR] [--threads T] [--seed K]
//   bustle-bench vehicles   [--grid N] [--vehicles V] [--steps S] [--threads T] [--seed K]
//   bustle-bench stream     [--agents N] [--grid N] [--vehicles V] [--steps S] [--seed K]
//   bustle-bench districts  [--grid N] [--districts K] [--agents P] [--vehicles V] [--steps S]
//                           [--write-scenario PATH]
//   bustle-bench fanout     [--clients N] [--stalled-percent P] [--agents N] [--seconds S]
//                           [--warmup W] [--repeat R] [--server PATH] [--dir DIR]
//                           [--outbound-max-bytes B] [--motion-tolerance-mm T]
//                           [--city-scale two-blocks|N[k|m]] [--share S] [--sim-threads T]
//   bustle-bench district-servers [--weak] [--districts 1,2,4] [--grid N] [--agents P]
//                           [--steps S] [--seed K] [--sim-threads T] [--record]
//                           [--server PATH] [--dir DIR]
//   bustle-bench gateway    [--districts K] [--grid N] [--agents P] [--clients 0,1,4,16]
//                           [--seconds S] [--warmup W] [--repeat R] [--server PATH]
//                           [--gateway PATH] [--dir DIR]
//   every subcommand: [--json] [--help]; bustle-bench --version
//
// The command line (flags, ranges, exit codes) is options.cpp; each bench is
// bench_<name>.cpp (fanout: fanout.cpp), their shared helpers bench_support.*.
//
// `fanout` runs N real clients against a real bustle-server process over
// loopback, with and without a share of stalled clients (fanout.cpp);
// `district-servers` runs the district city on K real bustle-server
// processes in neighbour lockstep (district_servers.cpp); `gateway` runs
// them live behind bustle-gateway with clients (gateway_bench.cpp).
// Figures go to docs/performance.md with machine and command.
#include <filesystem>
#include <string>
#include <system_error>

#include "bench_support.hpp"
#include "fanout.hpp"
#include "options.hpp"
#include "report.hpp"

using bustle::bench::Args;

// The server next to this binary in the build tree (fanout, district-servers
// without --server).
std::string server_in_build_tree(const char* argv0) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(argv0)
            : (self.parent_path() / "../../server/app/bustle-server").lexically_normal().string();
}

int bench_fanout(const Args& a, const char* argv0) {
  bustle::bench::FanoutOptions o = a.fanout;
  if (o.server.empty()) o.server = server_in_build_tree(argv0);
  return bustle::bench::run_fanout(o);
}

int bench_district_servers(const Args& a, const char* argv0) {
  bustle::bench::DistrictServersOptions o = a.district_servers;
  if (o.server.empty()) o.server = server_in_build_tree(argv0);
  return bustle::bench::run_district_servers(o);
}

int bench_gateway(const Args& a, const char* argv0) {
  bustle::bench::GatewayBenchOptions o = a.gateway;
  if (o.server.empty()) o.server = server_in_build_tree(argv0);
  if (o.gateway.empty()) {
    o.gateway = (std::filesystem::path(o.server).parent_path() / "../gateway/bustle-gateway")
                    .lexically_normal()
                    .string();
  }
  return bustle::bench::run_gateway_bench(o);
}

int main(int argc, char** argv) {
  const bustle::bench::ParsedArgs parsed = bustle::bench::parse_args(argc, argv);
  if (!parsed.run) return parsed.exit_code;
  const Args& a = parsed.args;
  std::string command = "bustle-bench";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  bustle::bench::print_header(a.mode, command);
  int status = 0;
  if (a.mode == "fanout") {
    status = bench_fanout(a, argv[0]);
  } else if (a.mode == "district-servers") {
    status = bench_district_servers(a, argv[0]);
  } else if (a.mode == "gateway") {
    status = bench_gateway(a, argv[0]);
  } else if (a.mode == "frame") {
    status = bustle::bench::bench_frame(a);
  } else if (a.mode == "stream") {
    status = bustle::bench::bench_stream(a);
  } else if (a.mode == "vehicles") {
    status = bustle::bench::bench_vehicles(a);
  } else if (a.mode == "districts") {
    status = bustle::bench::bench_districts(a);
  } else if (a.mode == "population") {
    status = bustle::bench::bench_population(a);
  } else {
    status = a.mode == "step" ? bustle::bench::bench_step(a) : bustle::bench::bench_snapshot(a);
  }
  bustle::bench::print_footer(a.json && status == 0);
  return status;
}
