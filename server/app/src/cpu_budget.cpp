// The CPUs this process may keep busy (cpu_budget.hpp).
#include "bustle/app/cpu_budget.hpp"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace bustle::app {

namespace {

std::optional<std::uint64_t> whole(std::string_view s) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<std::uint32_t> quota_cpus(std::string_view cpu_max) {
  cpu_max = trim(cpu_max);
  const std::size_t space = cpu_max.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto quota = whole(cpu_max.substr(0, space));  // "max": no quota
  const auto period = whole(cpu_max.substr(space + 1));
  if (!quota || !period || *period == 0 || *quota == 0) return std::nullopt;
  const std::uint64_t cpus = (*quota + *period - 1) / *period;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(cpus, 1u << 16));
}

std::uint32_t usable_cpus() {
  std::uint32_t cpus = 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    cpus = static_cast<std::uint32_t>(std::max(1, CPU_COUNT(&set)));
  }
  std::optional<std::uint32_t> quota = quota_cpus(read_file("/sys/fs/cgroup/cpu.max"));
  if (!quota) {
    // cgroup v1: a quota of -1 means none (whole() refuses it).
    const std::string q = read_file("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
    const std::string p = read_file("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
    quota = quota_cpus(std::string(trim(q)) + " " + std::string(trim(p)));
  }
  if (quota) cpus = std::min(cpus, std::max<std::uint32_t>(*quota, 1));
  return cpus;
}

}  // namespace bustle::app
