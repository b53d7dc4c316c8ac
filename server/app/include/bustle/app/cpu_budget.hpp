// How many CPUs this process may keep busy: the default for --sim-threads.
//
// A container is usually given a CPU quota (Kubernetes `limits.cpu`, podman
// `--cpus`) rather than a cpuset, so the affinity mask alone overstates what
// the server may use: threads beyond the quota only get throttled together.
// The budget is the smaller of the two.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace bustle::app {

// The CPU count a cgroup quota allows, rounded up: from cgroup v2's cpu.max
// ("max 100000", "150000 100000"), or nullopt when there is no quota or the
// text is not one.
std::optional<std::uint32_t> quota_cpus(std::string_view cpu_max);

// min(CPUs in this process's affinity mask, the cgroup quota), at least 1.
// Reads /sys/fs/cgroup/cpu.max (cgroup v2) or, failing that, cgroup v1's
// cpu.cfs_quota_us and cpu.cfs_period_us.
std::uint32_t usable_cpus();

// --sim-threads when not given: one thread per usable CPU, at most this many
// (beyond it the step's parts are too small to gain).
inline constexpr std::uint32_t kSimThreadsAutoMax = 8;

}  // namespace bustle::app
