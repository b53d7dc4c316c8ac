// Decisions an engine plugin would otherwise make on its own, kept here so
// that they are tested without an engine:
//
// Archetype lookup. Welcome.archetypes names are dotted ("pedestrian",
// "pedestrian.harbour.baker", "vehicle.sedan"); a project configures actor
// classes, meshes or pool sizes by name, for any prefix. The most specific
// configured prefix wins: "pedestrian.harbour.baker", then
// "pedestrian.harbour", then "pedestrian". Names are stable across
// scenarios, Welcome indices are not, so configuration is by name and
// resolved to indices once per Welcome.
//
// InterestPacer: when to send UpdateInterest for a moving camera. Sending
// on every frame floods the server (each UpdateInterest is answered and
// re-ranks the client's hints); never sending leaves the area of interest
// behind. An update is due when at least min_interval_us passed since the
// last one sent AND the observer moved more than move_threshold_m or turned
// more than turn_threshold_rad (or its presence of a heading changed), or
// when max_interval_us passed with any change at all. The first observer
// is always due.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bustle/client/messages.hpp"

namespace bustle::client {

// `name`, then each shorter dotted prefix: "a.b.c" -> {"a.b.c", "a.b", "a"}.
// An empty name gives {}.
std::vector<std::string_view> archetype_lookup_chain(std::string_view name);

// For each archetype index of `archetypes` whose lookup chain hits a key of
// `by_name`, the value of the most specific key.
template <class T>
std::map<std::uint16_t, T> resolve_by_archetype(
    const std::vector<std::string>& archetypes,
    const std::map<std::string, T, std::less<>>& by_name) {
  std::map<std::uint16_t, T> out;
  for (std::size_t i = 0; i < archetypes.size() && i <= 0xFFFF; ++i) {
    for (std::string_view prefix : archetype_lookup_chain(archetypes[i])) {
      if (auto it = by_name.find(prefix); it != by_name.end()) {
        out.emplace(static_cast<std::uint16_t>(i), it->second);
        break;
      }
    }
  }
  return out;
}

struct InterestPacerConfig {
  std::int64_t min_interval_us = 250'000;    // never more often than this
  std::int64_t max_interval_us = 2'000'000;  // any change is sent after this
  double move_threshold_m = 5.0;
  double turn_threshold_rad = 0.26;  // ~15 degrees
};

class InterestPacer {
 public:
  explicit InterestPacer(InterestPacerConfig config = {}) : config_(config) {}
  // Whether `observer` at `now_us` (monotonic) should be sent now.
  bool due(const InterestObserver& observer, std::int64_t now_us) const;
  // Records that `observer` was sent at `now_us`.
  void sent(const InterestObserver& observer, std::int64_t now_us);
  void reset() { last_.reset(); }
  const std::optional<InterestObserver>& last_sent() const { return last_; }
  const InterestPacerConfig& config() const { return config_; }

 private:
  InterestPacerConfig config_;
  std::optional<InterestObserver> last_;
  std::int64_t last_us_ = 0;
};

}  // namespace bustle::client
