// A traffic signal's phase and clock (VehicleSystem::advance_signals).
// Part of vehicles.hpp, which includes it.
#pragma once

#include <cstdint>

namespace bustle::core {

enum class SignalPhase : std::uint8_t { Open = 0, Yield = 1, Closed = 2 };
const char* to_string(SignalPhase p);

struct SignalState {
  SignalPhase phase = SignalPhase::Open;
  std::uint64_t phase_elapsed_us = 0;
  std::uint64_t cycles = 0;
};

}  // namespace bustle::core
