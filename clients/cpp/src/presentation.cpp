// Display helpers for HUDs: the control policy a HUD shows, changed only
// once the new one has held for a while (waiting at a signal at once), and
// its colour (presentation.hpp).
#include "bustle/client/presentation.hpp"

namespace bustle::client {

ControlPolicy PolicyDisplay::update(ControlPolicy authoritative, std::int64_t now_us) {
  if (!displayed_.has_value() || authoritative == ControlPolicy::WaitingAtSignal) {
    // The first policy, and waiting at a signal, are shown at once.
    displayed_ = authoritative;
    candidate_.reset();
    return *displayed_;
  }
  if (authoritative == *displayed_) {
    candidate_.reset();  // the evidence for a change is interrupted
    return *displayed_;
  }
  if (candidate_ != authoritative) {
    candidate_ = authoritative;
    candidate_since_us_ = now_us;
  }
  const std::int64_t needed_us =
      *displayed_ == ControlPolicy::WaitingAtSignal ? config_.leave_waiting_us : config_.change_us;
  if (now_us - candidate_since_us_ >= needed_us) {
    displayed_ = authoritative;
    candidate_.reset();
  }
  return *displayed_;
}

void PolicyDisplay::reset() {
  displayed_.reset();
  candidate_.reset();
  candidate_since_us_ = 0;
}

Rgb policy_colour(ControlPolicy policy) {
  switch (policy) {
    case ControlPolicy::RouteFollow:
    case ControlPolicy::LaneFollow:
      return Rgb{40, 180, 60};
    case ControlPolicy::Yielding:
      return Rgb{255, 150, 0};
    case ControlPolicy::WaitingAtSignal:
      return Rgb{220, 30, 30};
    case ControlPolicy::Parked:
      return Rgb{140, 140, 140};
    case ControlPolicy::Manual:
      return Rgb{40, 110, 230};
    case ControlPolicy::DespawnPending:
      return Rgb{70, 70, 70};
  }
  return Rgb{255, 0, 255};
}

}  // namespace bustle::client
