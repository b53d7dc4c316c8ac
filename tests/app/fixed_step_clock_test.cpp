// The fixed-step clock seam (server/app/include/bustle/app/fixed_step_clock.hpp),
// driven with made-up times: the cadence does not drift, bursts and stalls
// are capped with the debt dropped and counted, rate changes keep the step
// already scheduled, and unrun steps stay due.
#include "bustle/app/fixed_step_clock.hpp"

#include <catch2/catch.hpp>

using bustle::app::FixedStepClock;
using namespace std::chrono_literals;

namespace {

const FixedStepClock::TimePoint t0{};  // any origin: the clock never reads one

// Runs every due step, as the sim thread does; returns how many ran.
std::uint64_t run_due(FixedStepClock& c, FixedStepClock::TimePoint now) {
  const FixedStepClock::Due d = c.poll(now);
  for (std::uint64_t k = 0; k < d.steps; ++k) c.stepped();
  return d.steps;
}

}  // namespace

TEST_CASE("the first poll resyncs: the first step is due one interval later") {
  FixedStepClock c(100ms, 5);
  CHECK(c.needs_resync());
  const auto d = c.poll(t0);
  CHECK(d.steps == 0);
  CHECK(d.wake_at == t0 + 100ms);
  CHECK_FALSE(c.needs_resync());
  CHECK(c.poll(t0 + 99ms).steps == 0);
  CHECK(c.poll(t0 + 100ms).steps == 1);
}

TEST_CASE("late wake-ups do not drift the cadence") {
  FixedStepClock c(100ms, 5);
  c.resync(t0);
  std::uint64_t ran = 0;
  // Woken 30 ms late every time: still one step per interval, due on the grid.
  for (int k = 1; k <= 50; ++k) ran += run_due(c, t0 + k * 100ms + 30ms);
  CHECK(ran == 50);
  const auto d = c.poll(t0 + 5030ms);
  CHECK(d.steps == 0);
  CHECK(d.wake_at == t0 + 5100ms);  // on the grid, not 5130
}

TEST_CASE("a burst within the cap runs every step it owes") {
  FixedStepClock c(100ms, 5);
  c.resync(t0);
  const auto d = c.poll(t0 + 350ms);  // steps due at 100, 200, 300
  CHECK(d.steps == 3);
  CHECK(d.dropped == 0);
}

TEST_CASE("a stall runs at most the cap and drops the older debt, counted") {
  FixedStepClock c(100ms, 5);
  c.resync(t0);
  const auto d = c.poll(t0 + 10'050ms);  // 100 steps owed
  CHECK(d.steps == 5);
  CHECK(d.dropped == 95);
  CHECK(c.dropped_total() == 95);
  for (std::uint64_t k = 0; k < d.steps; ++k) c.stepped();
  // Caught up: the next step is back on the grid, nothing more dropped.
  const auto next = c.poll(t0 + 10'050ms);
  CHECK(next.steps == 0);
  CHECK(next.wake_at == t0 + 10'100ms);
  CHECK(run_due(c, t0 + 10'100ms) == 1);
  CHECK(c.dropped_total() == 95);
}

TEST_CASE("steps the caller did not run stay due until a resync") {
  FixedStepClock c(100ms, 5);
  c.resync(t0);
  const auto d = c.poll(t0 + 300ms);
  REQUIRE(d.steps == 3);
  c.stepped();  // stopped after one (pause, shutdown)
  CHECK(c.poll(t0 + 300ms).steps == 2);
  c.request_resync();  // resume: no burst for the time spent paused
  CHECK(c.poll(t0 + 900ms).steps == 0);
  CHECK(c.poll(t0 + 1000ms).steps == 1);
}

TEST_CASE("a rate change keeps the scheduled step and spaces the next ones by the new interval") {
  FixedStepClock c(100ms, 5);
  c.resync(t0);
  REQUIRE(run_due(c, t0 + 100ms) == 1);  // next due at 200
  c.set_step(50ms);
  CHECK(c.poll(t0 + 199ms).steps == 0);
  CHECK(run_due(c, t0 + 200ms) == 1);  // the one already scheduled
  CHECK(c.poll(t0 + 249ms).steps == 0);
  CHECK(run_due(c, t0 + 250ms) == 1);  // then every 50 ms
  CHECK(run_due(c, t0 + 400ms) == 3);  // 300, 350, 400
  c.set_step(200ms);
  CHECK(c.poll(t0 + 449ms).steps == 0);
  CHECK(run_due(c, t0 + 450ms) == 1);
  CHECK(c.poll(t0 + 649ms).steps == 0);
  CHECK(run_due(c, t0 + 650ms) == 1);
}

TEST_CASE("a cap of zero is treated as one: a stalled clock always makes progress") {
  FixedStepClock c(100ms, 0);
  c.resync(t0);
  const auto d = c.poll(t0 + 1000ms);
  CHECK(d.steps == 1);
  CHECK(d.dropped == 9);
}
