// The vehicle grid's geometry, shared by the cities built on it (grid_city.cpp,
// district_city.cpp): nodes kGridBlockM apart, and the four directions a
// lane leaves a node in.
#pragma once

#include <array>
#include <cstdint>

namespace bustle::citygen {

inline constexpr double kGridBlockM = 100.0;
enum GridDir : std::uint32_t { kEast = 0, kNorth = 1, kWest = 2, kSouth = 3 };
inline constexpr std::array<const char*, 4> kGridDirName = {"e", "n", "w", "s"};
inline constexpr std::array<int, 4> kGridDx = {1, 0, -1, 0};
inline constexpr std::array<int, 4> kGridDy = {0, 1, 0, -1};

}  // namespace bustle::citygen
