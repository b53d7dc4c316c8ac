// What the benches of bustle-bench share (one bench per bench_<name>.cpp):
// the default city at a given size, timing World::step one step at a time
// (wall and this thread's CPU time), peak RSS, the heap allocation count
// (allocations.cpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "bustle/citygen/cities.hpp"
#include "bustle/core/scenario.hpp"
#include "bustle/core/world.hpp"
#include "measure.hpp"
#include "options.hpp"

namespace bustle::bench {

using Clock = std::chrono::steady_clock;

// Heap allocations made by this process so far (operator new, allocations.cpp).
std::uint64_t heap_allocations();

// The benches, one file each; main.cpp runs the one named on the command line.
int bench_step(const Args& a);        // bench_step.cpp
int bench_population(const Args& a);  // bench_population.cpp
int bench_snapshot(const Args& a);    // bench_snapshot.cpp
int bench_vehicles(const Args& a);    // bench_vehicles.cpp
int bench_stream(const Args& a);      // bench_stream.cpp
int bench_districts(const Args& a);   // bench_districts.cpp
int bench_frame(const Args& a);       // bench_frame.cpp

// The default city with `agents` background pedestrians, all spawned on step 1.
bustle::core::Scenario scenario_for(std::uint32_t agents);

// Writes scenario `s` as a file bustle-server --config loads
// (scenario_writer.hpp); its size in bytes, or 0 after printing why not (the
// scenario is refused, over the loader's 16 MiB or cannot be written).
std::size_t write_scenario_file(const bustle::core::Scenario& s, const std::string& path);

// Milliseconds of a steady-clock duration.
double ms(Clock::duration d);

// CPU time of the calling thread in ms: unlike wall time it does not grow
// while other processes hold the cores, so on a loaded machine it is the
// better witness of what a change did (it still feels shared caches).
double thread_cpu_ms();

// Peak resident set of this process (VmHWM), KiB.
long peak_rss_kb();

// A world of scenario `s` after 10 steps (everyone spawned).
std::unique_ptr<bustle::core::World> populated(const Args& a, const bustle::core::Scenario& s);

// A digest as 16 hex digits.
std::string hex_digest(std::uint64_t d);

// A scenario built in code and its world (null after printing every
// validation error), with the time both took.
struct BuiltWorld {
  bustle::core::Scenario scenario;
  std::unique_ptr<bustle::core::World> world;
  double build_s = 0.0;
};

template <class MakeScenario>
BuiltWorld build_world(MakeScenario&& make_scenario, std::uint64_t seed) {
  const auto t0 = Clock::now();
  BuiltWorld b{make_scenario(), nullptr, 0.0};
  auto created = bustle::core::World::create(b.scenario, seed);
  for (const auto& e : created.errors)
    std::fprintf(stderr, "bustle-bench: %s: %s\n", e.path.c_str(), e.message.c_str());
  b.world = std::move(created.world);
  b.build_s = ms(Clock::now() - t0) / 1000.0;
  return b;
}

// Wall time of `steps` calls of World::step, one by one; `before` runs before
// each step, outside the timing.
struct StepTimes {
  std::vector<double> ms;      // per step
  std::vector<double> cpu_ms;  // per step, this thread's CPU time
  double total_s = 0.0;        // sum of the steps' times
  double p50() const { return percentile(ms, 0.5); }
  double p99() const { return percentile(ms, 0.99); }
  double max() const { return *std::max_element(ms.begin(), ms.end()); }
};

template <class Before>
StepTimes time_steps(bustle::core::World& w, std::uint64_t steps, Before&& before) {
  StepTimes t;
  t.ms.reserve(steps);
  t.cpu_ms.reserve(steps);
  for (std::uint64_t k = 0; k < steps; ++k) {
    before();
    const double c = thread_cpu_ms();
    const auto b = Clock::now();
    w.step();
    t.ms.push_back(ms(Clock::now() - b));
    t.cpu_ms.push_back(thread_cpu_ms() - c);
    t.total_s += t.ms.back() / 1000.0;
  }
  return t;
}

// p50 / p99 / max / mean of a StepTimes, for --json.
nlohmann::json step_times_json(const StepTimes& t);

// "  step ms  p50 ... p99 ... max ... mean ...".
void print_step_times(const StepTimes& t);

// The generated cities are in tools/citygen (bustle/citygen/cities.hpp).
using bustle::citygen::capacity_for;
using bustle::citygen::district_city;
using bustle::citygen::grid_city;

}  // namespace bustle::bench
