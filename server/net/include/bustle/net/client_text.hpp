// Client-supplied text made safe for logs and echoed messages.
//
// Whatever a client sends (its name in Hello, a snapshot or garage id in a
// command) may be megabytes long or hold control bytes and terminal escapes.
// Before such a string reaches a log line or an error message it goes
// through client_text(): at most `max_bytes` bytes of it are kept, bytes
// outside printable ASCII are written as \xNN, and a cut is marked with the
// original length, e.g. 'aaaa...' (1048576 bytes).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace bustle::net {

inline constexpr std::size_t kClientTextLogBytes = 64;

// Quoted, printable, and at most about 4 * max_bytes + 32 characters.
std::string client_text(std::string_view text, std::size_t max_bytes = kClientTextLogBytes);

}  // namespace bustle::net
