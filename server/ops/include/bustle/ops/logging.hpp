// Log set-up for bustle-server (spdlog, to stderr).
//
// Timestamps are UTC with the offset written out: 2026-12-01T10:04:18.123+00:00.
//   text  "<time> <level> <message>"
//   json  one JSON object per line:
//         {"ts":"...","level":"info","event":"client_joined","msg":"client 3 ..."}
// Lifecycle messages start with an event name and a colon ("client_joined: ...",
// "snapshot_committed: ..."); in JSON that name becomes "event" and the rest
// "msg". Lines without an event name have no "event" field.
#pragma once

#include <string>
#include <string_view>

namespace bustle::ops {

// Installs the default logger ("bustle", stderr) with `format` ("text" or
// "json") and `level` (spdlog level name).
void setup_logging(const std::string& format, const std::string& level);

// Splits "name: rest" into name and rest when name is [a-z][a-z0-9_]*;
// otherwise event is empty and rest is the whole message.
void split_event(std::string_view message, std::string_view& event, std::string_view& rest);

// Appends `text` to `out` as the inside of a JSON string (quotes, backslash,
// control bytes escaped; bytes >= 0x80 kept as they are, since client text
// is already made safe for logs).
void append_json_escaped(std::string_view text, std::string& out);

}  // namespace bustle::ops
