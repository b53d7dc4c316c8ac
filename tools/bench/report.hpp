// What every bustle-bench run states besides its figures (issue 13's bench
// hygiene): the machine (cores, CPU model, kernel, memory), the load average
// before and after, and, with --json, one machine-readable line.
//
// main() prints the machine and the load before a bench runs and the load
// after it; a bench adds its figures to figures() as it prints them. With
// --json the last line of the output is
//   {"bench": MODE, "version": ..., "command": ..., "machine": {...},
//    "load_before": [1, 5, 15 min], "load_after": [...], "figures": {...}}
// which tools/bench/run-all.sh collects (one JSON object per line, nothing else
// on that line).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>

namespace bustle::bench {

// /proc/loadavg's 1, 5 and 15 minute averages; zeros if unreadable.
std::array<double, 3> load_average();

// "2 cores, AMD EPYC, Linux 6.1.0, 23.5 GiB" and the same as JSON.
nlohmann::json machine_info();
std::string machine_line(const nlohmann::json& machine);

// The figures of this run, for the --json line; a bench adds its own.
nlohmann::json& figures();

// Called by main(): the header lines before the bench and the load line (and
// with `json` the JSON line) after it.
// `command` is the command line as run (for the JSON line).
void print_header(const std::string& mode, const std::string& command);
void print_footer(bool json);

}  // namespace bustle::bench
