// The server's quality setting (--quality / BUSTLE_QUALITY): one row of a
// table scales the representation budgets, on the representation axis only
// (never the World, its digest or a checkpoint):
//   - the default per-client budgets of the stream (net::RepresentationBudgets:
//     actors, instances, markers) for a client whose Subscribe names none;
//   - the attached and unattached budgets of spawned handles
//     (representation_stages.hpp): attached slots are the expensive actor
//     representations, unattached slots hold leased handles waiting for one.
//
//   quality  actors  instances  markers  attached  unattached
//   low          64       1024     4096        16          32
//   medium      128       2048     8192        64         128
//   high        256       4096    16384       256         512   (default)
//   epic        512       8192    32768       512        1024
// High is the stream's defaults of before (client.fbs RepresentationBudgets).
// The attached budget is server-wide and counts spawned handles only, so it
// can be smaller than one client's actor budget.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "bustle/net/stream_tracker.hpp"

namespace bustle::app {

enum class Quality : std::uint8_t { Low = 0, Medium = 1, High = 2, Epic = 3 };

struct QualityBudgets {
  std::string_view name;
  net::RepresentationBudgets client;  // default per-client stream budgets
  std::uint32_t attached = 0;         // spawned entities with an attached representation
  std::uint32_t unattached = 0;       // leased handles waiting for an attached slot
};

inline constexpr std::array<QualityBudgets, 4> kQualityTable{{
    {"low", {64, 1024, 4096}, 16, 32},
    {"medium", {128, 2048, 8192}, 64, 128},
    {"high", {256, 4096, 16384}, 256, 512},
    {"epic", {512, 8192, 32768}, 512, 1024},
}};

constexpr const QualityBudgets& quality_budgets(Quality q) {
  return kQualityTable[static_cast<std::size_t>(q)];
}

inline std::optional<Quality> parse_quality(std::string_view s) {
  for (std::size_t k = 0; k < kQualityTable.size(); ++k) {
    if (kQualityTable[k].name == s) return static_cast<Quality>(k);
  }
  return std::nullopt;
}

}  // namespace bustle::app
