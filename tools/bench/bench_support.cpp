// The non-template helpers of bench_support.hpp.
#include "bench_support.hpp"

#include <time.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bustle/scenario/scenario_loader.hpp"
#include "bustle/scenario/scenario_writer.hpp"

namespace bustle::bench {

// Entity capacity for n entities: a power of two, at least 1024, with 25 % headroom.
// The default city with `agents` background pedestrians, all spawned on step 1.
bustle::core::Scenario scenario_for(std::uint32_t agents) {
  auto loaded = bustle::scenario::load_embedded_default();
  if (!loaded.ok()) {
    std::fprintf(stderr, "bustle-bench: %s\n", loaded.errors[0].to_string().c_str());
    std::exit(1);
  }
  bustle::core::Scenario s = *loaded.scenario;
  s.id = "bustle.bench." + std::to_string(agents);
  s.entity_capacity = capacity_for(agents);
  s.pedestrians.count = agents;
  s.pedestrians.spawn_per_step_max = std::max<std::uint32_t>(agents, 1);
  return s;
}

std::size_t write_scenario_file(const core::Scenario& s, const std::string& path) {
  const std::vector<core::ScenarioError> errors = core::validate_scenario(s);
  for (const core::ScenarioError& e : errors)
    std::fprintf(stderr, "bustle-bench: %s: %s\n", e.path.c_str(), e.message.c_str());
  if (!errors.empty()) return 0;
  const std::string text = scenario::write_scenario_json(s);
  if (text.size() > scenario::kScenarioFileBytesMax) {
    std::fprintf(stderr,
                 "bustle-bench: the city is %zu bytes of JSON, over the loader's limit of %zu "
                 "(16 MiB); choose a smaller --grid or fewer --vehicles\n",
                 text.size(), scenario::kScenarioFileBytesMax);
    return 0;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  const bool written = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if ((f != nullptr && std::fclose(f) != 0) || !written) {
    std::fprintf(stderr, "bustle-bench: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return 0;
  }
  return text.size();
}

// Milliseconds of a steady-clock duration.
double ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// CPU time of the calling thread in ms: unlike wall time it does not grow
// while other processes hold the cores, so on a loaded machine it is the
// better witness of what a change did (it still feels shared caches).
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// Peak resident set of this process (VmHWM), KiB.
long peak_rss_kb() {
  return bustle::bench::proc_status_kb("self", "VmHWM:");
}

// A world of scenario `s` after 10 steps (everyone spawned).
std::unique_ptr<bustle::core::World> populated(const Args& a, const bustle::core::Scenario& s) {
  auto w = std::move(bustle::core::World::create(s, a.seed).world);
  w->step();  // spawns everyone (spawn cap = agents)
  for (int k = 0; k < 9; ++k) w->step();
  return w;
}

// p50 / p99 / max / mean of a StepTimes, for --json.
nlohmann::json step_times_json(const StepTimes& t) {
  return {{"p50", t.p50()},
          {"p99", t.p99()},
          {"max", t.max()},
          {"mean", t.total_s * 1000.0 / static_cast<double>(t.ms.size())}};
}

// A digest as 16 hex digits.
std::string hex_digest(std::uint64_t d) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, d);
  return buf;
}

// "  step ms  p50 ... p99 ... max ... mean ...".
void print_step_times(const StepTimes& t) {
  std::printf("  step ms  p50 %.3f  p99 %.3f  max %.3f  mean %.3f\n", t.p50(), t.p99(), t.max(),
              t.total_s * 1000.0 / static_cast<double>(t.ms.size()));
}

}  // namespace bustle::bench
