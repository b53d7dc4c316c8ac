// Restore's error list, shared by the checkpoint's source files
// (checkpoint/*.cpp): restore() and load_save() report at most
// kMaxReportedErrors failures, each naming its checkpoint path. Not part of
// the core's interface.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "bustle/core/world.hpp"

namespace bustle::core {

inline constexpr std::size_t kMaxReportedErrors = 32;

// Restore's error list: each failure names the checkpoint path; at most
// kMaxReportedErrors are kept.
struct World::RestoreFailures {
  std::vector<RestoreError>& errors;
  void operator()(std::string path, std::string message) {
    if (errors.size() < kMaxReportedErrors) errors.push_back({std::move(path), std::move(message)});
  }
  bool any() const { return !errors.empty(); }
};

}  // namespace bustle::core
