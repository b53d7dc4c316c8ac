// Presentation helpers for HUDs and debug views. Display state only: nothing
// here feeds back into what the client reports or the server decides.
//
// PolicyDisplay: the control policy a HUD shows for one entity, with the
// colour hysteresis of the vehicle scheduling contract, so a vehicle that
// alternates between policies on consecutive fixed steps does not flicker:
//   - WaitingAtSignal is shown at once;
//   - leaving WaitingAtSignal needs leave_waiting_us (0.3 s) of stable
//     evidence (the same other policy reported throughout);
//   - every other change needs change_us (0.5 s) of stable evidence.
// The authoritative policy (EntityView::policy) is never delayed.
#pragma once

#include <cstdint>
#include <optional>

#include "bustle/client/stream.hpp"

namespace bustle::client {

struct PolicyDisplayConfig {
  std::int64_t leave_waiting_us = 300'000;
  std::int64_t change_us = 500'000;
};

class PolicyDisplay {
 public:
  explicit PolicyDisplay(PolicyDisplayConfig config = {}) : config_(config) {}
  // Feeds the authoritative policy at `now_us` (any monotonic clock, not
  // decreasing) and returns the policy to display. The first call displays
  // its policy at once.
  ControlPolicy update(ControlPolicy authoritative, std::int64_t now_us);
  // [Limit: after the first update()]
  ControlPolicy displayed() const { return displayed_.value_or(ControlPolicy::RouteFollow); }
  void reset();

 private:
  PolicyDisplayConfig config_;
  std::optional<ControlPolicy> displayed_;
  std::optional<ControlPolicy> candidate_;
  std::int64_t candidate_since_us_ = 0;
};

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  friend constexpr bool operator==(const Rgb&, const Rgb&) = default;
};
// The debug palette: RouteFollow / LaneFollow green, Yielding orange,
// WaitingAtSignal red, Parked grey, Manual blue, DespawnPending dark grey.
Rgb policy_colour(ControlPolicy policy);

}  // namespace bustle::client
