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
//   every subcommand: [--json] [--help]; bustle-bench --version
//
// The command line (flags, ranges, exit codes) is options.cpp; each bench is
// bench_<name>.cpp (fanout: fanout.cpp), their shared helpers bench_support.*.
//
// `fanout` runs N real clients against a real bustle-server process over
// loopback, with and without a share of stalled clients (fanout.cpp).
// Figures go to docs/performance.md with machine and command.
#include <filesystem>
#include <string>
#include <system_error>

#include "bench_support.hpp"
#include "fanout.hpp"
#include "options.hpp"
#include "report.hpp"

using bustle::bench::Args;

// fanout: the server next to this binary in the build tree unless --server.
int bench_fanout(const Args& a, const char* argv0) {
  bustle::bench::FanoutOptions o = a.fanout;
  if (o.server.empty()) {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    o.server =
        ec ? std::string(argv0)
           : (self.parent_path() / "../../server/app/bustle-server").lexically_normal().string();
  }
  return bustle::bench::run_fanout(o);
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
