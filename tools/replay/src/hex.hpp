// A digest as the replay tool's reports print it: 16 lowercase hex digits.
// Private to bustle::replay (verify.cpp, diff.cpp).
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

namespace bustle::replay {

inline std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

}  // namespace bustle::replay
