// World commands as (kind, JSON args) text, the form pending_commands and
// recording_commands store: readable with the sqlite3 shell, and strict on
// the way back in (every field checked, unknown kinds refused).
#pragma once

#include <optional>
#include <string>

#include "bustle/core/command.hpp"
#include "bustle/core/status.hpp"

namespace bustle::persist {

std::string command_args_json(const core::WorldCommand& command);

// Returns the command, or DataLoss whose message starts with the bad field
// ("count: expected an unsigned integer").
core::StatusOr<core::WorldCommand> decode_command(const std::string& kind,
                                                  const std::string& args_json);

}  // namespace bustle::persist
