// The default --sim-threads: a cgroup quota caps the affinity mask.
#include "bustle/app/cpu_budget.hpp"

#include <catch2/catch.hpp>

using bustle::app::quota_cpus;

TEST_CASE("a cgroup v2 cpu.max gives its quota in whole CPUs, rounded up") {
  CHECK(quota_cpus("200000 100000\n") == 2u);
  CHECK(quota_cpus("150000 100000") == 2u);  // 1.5 CPUs: two threads, throttled a little
  CHECK(quota_cpus("50000 100000") == 1u);
  CHECK(quota_cpus("100000 100000") == 1u);
}

TEST_CASE("no quota, or text that is not one, gives none") {
  CHECK_FALSE(quota_cpus("max 100000\n").has_value());
  CHECK_FALSE(quota_cpus("").has_value());
  CHECK_FALSE(quota_cpus("-1 100000").has_value());  // cgroup v1's "no quota"
  CHECK_FALSE(quota_cpus("100000").has_value());
  CHECK_FALSE(quota_cpus("100000 0").has_value());
  CHECK_FALSE(quota_cpus("abc def").has_value());
}

TEST_CASE("the usable CPUs are at least one and at most the affinity mask") {
  const std::uint32_t cpus = bustle::app::usable_cpus();
  CHECK(cpus >= 1);
  CHECK(cpus <= 1024);
}
