// Traffic signals: their names and the per-step advance of each signal's
// phase clock, which the kernel reads beside the lane's other facts.
#include <array>
#include <cstdint>
#include <string>

#include "bustle/core/vehicles.hpp"

namespace bustle::core {

const char* to_string(SignalPhase p) {
  switch (p) {
    case SignalPhase::Open:
      return "open";
    case SignalPhase::Yield:
      return "yield";
    case SignalPhase::Closed:
      return "closed";
  }
  return "?";
}

void VehicleSystem::advance_signals(std::uint32_t step_us) {
  for (std::size_t i = 0; i < signals_.size(); ++i) {
    const std::array<std::uint64_t, 3>& durations = signal_us_[i];
    SignalState& st = signals_[i];
    st.phase_elapsed_us += step_us;
    while (st.phase_elapsed_us >= durations[static_cast<int>(st.phase)]) {
      st.phase_elapsed_us -= durations[static_cast<int>(st.phase)];
      st.phase = static_cast<SignalPhase>((static_cast<int>(st.phase) + 1) % 3);
      if (st.phase == SignalPhase::Open) ++st.cycles;
    }
    // The kernel reads the phase beside the lane's other facts (one line per
    // lane, no second lookup); written every step, so restore needs no sync.
    LaneHot& h = lane_hot_[signal_lane_[i]];
    if (h.signal == static_cast<std::int32_t>(i)) h.phase = st.phase;
  }
}

}  // namespace bustle::core
