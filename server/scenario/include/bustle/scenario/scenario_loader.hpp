// Reads scenario JSON into core::Scenario.
//
// Parsing uses nlohmann-json (Debian's nlohmann-json3-dev); this library adds
// strict typing (no silent coercion, unknown fields rejected) and then runs
// core::validate_scenario for the semantic rules. Every error names the source
// (file name or "<embedded default>"), the JSON path and the field, e.g.
//   configs/x.city.json: lanes[2].speed_mps_limit: must be in (0, 100] m/s
// The schema is documented in schema/scenario.schema.json.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bustle/core/scenario.hpp"

namespace bustle::scenario {

struct LoadError {
  std::string source;  // file path or "<embedded default>"
  std::string path;    // JSON path ("" for whole-file errors such as syntax)
  std::string message;

  // "source: path: message" (path omitted when empty).
  std::string to_string() const;
};

struct LoadResult {
  std::optional<core::Scenario> scenario;  // set only when errors is empty
  std::vector<LoadError> errors;
  // The exact JSON text, kept with snapshots and recordings so a restore can
  // prove it belongs to the running scenario and replay can rebuild it.
  std::string text;

  bool ok() const { return errors.empty(); }
};

// Parses and validates JSON text; `source` is used in error messages.
LoadResult load_scenario_text(std::string_view json_text, std::string_view source);

// Scenario files larger than this are refused (the file is read only up to one
// byte past it): a real city is a few hundred KiB of JSON, and a bound keeps a
// wrong path (/dev/zero, a pipe, a log) from exhausting memory.
inline constexpr std::size_t kScenarioFileBytesMax = std::size_t{16} << 20;  // 16 MiB

// Reads and loads a file. A missing, unreadable or oversized file is an error
// naming it.
LoadResult load_scenario_file(const std::string& path);

// The scenario text as actually run: `text` itself when its step_us already
// equals `step_us` and no district is named, otherwise the same document with
// step_us replaced (the --rate override) and "own_district" set (a district
// server's --district), so snapshots and recordings rebuild the same world.
std::string effective_scenario_text(const std::string& text, std::uint32_t step_us,
                                    const std::string& own_district = {});

// The default city compiled into the binary (identical to
// configs/default.city.json; a test checks that).
std::string_view embedded_default_scenario_text();
LoadResult load_embedded_default();

}  // namespace bustle::scenario
