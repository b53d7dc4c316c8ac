// FixedStepClock (fixed_step_clock.hpp): how many steps are due at a given
// time, with the catch-up cap, dropped debt and rate changes of its contract.
// It reads no clock; the caller passes the time.
#include "bustle/app/fixed_step_clock.hpp"

#include <algorithm>
#include <cassert>

namespace bustle::app {

FixedStepClock::FixedStepClock(Duration step, std::uint32_t catchup_steps_max)
    : step_(step), catchup_steps_max_(std::max<std::uint32_t>(1, catchup_steps_max)) {
  assert(step.count() > 0);
}

void FixedStepClock::resync(TimePoint now) {
  next_due_ = now + step_;
  needs_resync_ = false;
}

FixedStepClock::Due FixedStepClock::poll(TimePoint now) {
  Due d;
  if (needs_resync_) {
    resync(now);
    d.wake_at = next_due_;
    return d;
  }
  if (now < next_due_) {
    d.wake_at = next_due_;
    return d;
  }
  d.steps = static_cast<std::uint64_t>((now - next_due_) / step_) + 1;
  if (d.steps > catchup_steps_max_) {
    d.dropped = d.steps - catchup_steps_max_;
    dropped_total_ += d.dropped;
    next_due_ += step_ * static_cast<std::int64_t>(d.dropped);
    d.steps = catchup_steps_max_;
  }
  d.wake_at = next_due_;
  return d;
}

void FixedStepClock::set_step(Duration step) {
  assert(step.count() > 0);
  step_ = step;  // next_due_ (the step already scheduled) stays
}

}  // namespace bustle::app
