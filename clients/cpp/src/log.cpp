// Log level names, the in-memory sink tests read, and log_to(), which skips
// a null or disabled sink (log.hpp).
#include "bustle/client/log.hpp"

namespace bustle::client {

const char* to_string(LogLevel level) {
  switch (level) {
    case LogLevel::Trace:
      return "trace";
    case LogLevel::Debug:
      return "debug";
    case LogLevel::Info:
      return "info";
    case LogLevel::Warning:
      return "warning";
    case LogLevel::Error:
      return "error";
  }
  return "?";
}

void MemoryLogSink::write(LogLevel level, std::string_view category, std::string_view message) {
  lines_.push_back(Line{level, std::string(category), std::string(message)});
}

std::size_t MemoryLogSink::count(std::string_view category, std::string_view text) const {
  std::size_t n = 0;
  for (const Line& line : lines_) {
    if (line.category == category && line.message.find(text) != std::string::npos) ++n;
  }
  return n;
}

void log_to(LogSink* sink, LogLevel level, std::string_view category, std::string_view message) {
  if (sink != nullptr && sink->enabled(level)) sink->write(level, category, message);
}

}  // namespace bustle::client
