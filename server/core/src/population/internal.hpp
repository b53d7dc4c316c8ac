// What the PopulationSystem's source files (population/*.cpp) share beyond
// population.hpp: the length of the simulated day, which the clock
// (schedules.cpp) wraps at and restore (checkpoint.cpp) checks against. Not
// part of the core's interface.
#pragma once

#include <cstdint>

namespace bustle::core {

inline constexpr std::uint64_t kDayUs = 86'400'000'000ull;

}  // namespace bustle::core
