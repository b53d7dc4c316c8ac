// Writes core::Scenario as scenario JSON: the inverse of the loader
// (scenario_loader.hpp), so a city built in code (a bench's generated city,
// a test's) becomes a file that bustle-server --config can run.
//
// Invariants (tests/scenario/scenario_writer_test.cpp checks them on every
// scenario fixture, the embedded default and the generated district city):
//   1. For a scenario that passes core::validate_scenario, the loader accepts
//      the text with no error, and the scenario it yields writes the same
//      text again, byte for byte: write(load(write(s))) == write(s).
//   2. A World created from s and from load(write(s)) with the same seed
//      steps to the same digests.
//   3. The text depends on s alone: keys in the order
//      schema/scenario.schema.json lists them, 2-space indent, doubles in
//      their shortest form that reads back to the same double (std::to_chars,
//      always with a '.' or an exponent, so -0.0 stays -0.0).
//   4. Every field the loader reads is written, except optional fields at
//      the value the loader gives them when absent (a default-constructed
//      spec's), which are left out; required fields are always written.
#pragma once

#include <string>

#include "bustle/core/scenario.hpp"

namespace bustle::scenario {

// The scenario as JSON text, ending with a newline. Arrays and objects that
// hold no object and fit in 100 columns are written on one line ("points",
// id lists, a planned request); the rest one element a line.
// [Limit: a number that is not finite (validate_scenario refuses it) is
// written as null, which the loader refuses in turn; a string that is not
// valid UTF-8 has its bad bytes replaced by U+FFFD.]
std::string write_scenario_json(const core::Scenario& scenario);

}  // namespace bustle::scenario
