// Small measuring helpers shared by the bench modes (bench_*.cpp, fanout.cpp).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace bustle::bench {

// Nearest-rank percentile of `v` (p in [0, 1]); 0 for an empty sample.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// A KiB field of /proc/<process>/status ("self" or a pid), e.g. "VmHWM:"; -1 if absent.
inline long proc_status_kb(const std::string& process, const char* key) {
  std::ifstream in("/proc/" + process + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::strtol(line.c_str() + std::strlen(key), nullptr, 10);
  }
  return -1;
}

}  // namespace bustle::bench
