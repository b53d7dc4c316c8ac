// Client-supplied text cut short and stripped of control bytes before it
// reaches a log line or an echoed message (client_text.hpp).
#include "bustle/net/client_text.hpp"

#include <algorithm>
#include <cstdio>

namespace bustle::net {

std::string client_text(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 16);
  out.push_back('\'');
  const std::size_t kept = std::min(text.size(), max_bytes);
  for (std::size_t i = 0; i < kept; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (kept < text.size()) {
    out += "...'";
    out += " (" + std::to_string(text.size()) + " bytes)";
  } else {
    out.push_back('\'');
  }
  return out;
}

}  // namespace bustle::net
