// The fixed-step clock seam: the one place that turns wall-clock time into a
// number of simulation steps. The live server's sim thread and
// `bustle-replay serve` both ask it "it is now T: how many steps are due?".
// It reads no clock itself (the caller passes `now`), so tests drive it with
// made-up times: bursts, stalls, rate changes.
//
// Contract:
//   1. Steps are due at a fixed cadence: the k-th after a resync at t0 is due
//      at t0 + k x step (no drift: lateness of one step does not move the next).
//   2. At most `catchup_steps_max` steps are due at once; older debt is
//      dropped (counted, never run), so a stall never becomes a long burst.
//   3. A rate change keeps the step already scheduled and spaces the ones
//      after it by the new interval.
//   4. The caller reports each step it ran (stepped()); steps it chose not to
//      run (shutdown, pause) stay due until the next resync.
#pragma once

#include <chrono>
#include <cstdint>

namespace bustle::app {

class FixedStepClock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  struct Due {
    std::uint64_t steps = 0;    // run this many now (0: sleep until wake_at)
    std::uint64_t dropped = 0;  // wall-clock debt dropped by this call
    TimePoint wake_at{};        // when the next step is due
  };

  FixedStepClock(Duration step, std::uint32_t catchup_steps_max);

  // The next step is due one interval after `now` (start, resume, after a
  // world swap or a manual stretch).
  void resync(TimePoint now);
  bool needs_resync() const { return needs_resync_; }
  // Forget the schedule: the next poll() resyncs instead of running.
  void request_resync() { needs_resync_ = true; }

  // How many steps are due at `now` (contract 1 and 2).
  Due poll(TimePoint now);
  // One due step ran (contract 4).
  void stepped() { next_due_ += step_; }

  // Contract 3.
  void set_step(Duration step);
  Duration step() const { return step_; }
  std::uint64_t dropped_total() const { return dropped_total_; }

 private:
  Duration step_;
  std::uint32_t catchup_steps_max_;
  TimePoint next_due_{};
  bool needs_resync_ = true;
  std::uint64_t dropped_total_ = 0;
};

}  // namespace bustle::app
