// The scenario: everything a World is created from, as plain data.
//
// The core never parses files. server/scenario turns JSON into this struct and
// reports syntax and type errors; validate_scenario() below checks the semantic
// rules (unique ids, known successors, positive lengths, ranges) and names the
// path of every offending field, so the same checks guard scenarios built in
// code (tests, benches) and scenarios read from disk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bustle::core {

enum class LaneKind : std::uint8_t { Sidewalk = 0, Crossing = 1, Road = 2 };

constexpr bool is_pedestrian_lane(LaneKind k) {
  return k == LaneKind::Sidewalk || k == LaneKind::Crossing;
}

struct Vec2 {
  double x_m = 0.0;
  double y_m = 0.0;
  friend bool operator==(const Vec2&, const Vec2&) = default;
};

struct LaneSpec {
  std::string id;
  LaneKind kind = LaneKind::Sidewalk;
  std::vector<Vec2> points;  // polyline, at least two points
  double speed_mps_limit = 1.4;
  std::vector<std::string> successors;  // lane ids
};

struct PedestrianSpec {
  std::uint32_t count = 0;               // target population on sidewalks
  std::uint32_t spawn_per_step_max = 8;  // creation cap per step
};

struct Scenario {
  std::string id;    // stable identifier, sent in Welcome and saved in snapshots
  std::string name;  // human-readable
  std::uint32_t step_us = 100'000;         // fixed step; 100 ms = 10 Hz
  std::uint32_t entity_capacity = 65'536;  // fixed at world creation
  std::uint32_t command_inbox_capacity = 1'024;
  std::vector<LaneSpec> lanes;
  PedestrianSpec pedestrians;
};

struct ScenarioError {
  std::string path;     // e.g. "lanes[3].successors[0]"
  std::string message;  // e.g. "unknown lane id 'x9'"
};

// Limits enforced by validation; documented in schema/scenario.schema.json.
inline constexpr std::uint32_t kStepUsMin = 1'000;          // 1000 Hz
inline constexpr std::uint32_t kStepUsMax = 1'000'000;      // 1 Hz
inline constexpr std::uint32_t kEntityCapacityMax = 1u << 24;
inline constexpr std::uint32_t kInboxCapacityMax = 1u << 20;
inline constexpr double kLaneLengthMinM = 0.01;
inline constexpr double kSpeedMpsMax = 100.0;

// Returns every semantic error found (empty = valid). Never throws.
std::vector<ScenarioError> validate_scenario(const Scenario& scenario);

}  // namespace bustle::core
