// The wall-clock time the persist library stamps on what it writes (the
// created_unix_ms of snapshots, saves and recordings). Private to
// bustle::persist; the core never reads a clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace bustle::persist {

inline std::int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace bustle::persist
