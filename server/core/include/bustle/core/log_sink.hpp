// Logging seam for the core. The core never includes a logging library; the
// application injects a sink (spdlog in server/app). The default does nothing,
// so tests and benches pay nothing for logging they did not ask for.
#pragma once

#include <string_view>

namespace bustle::core {

enum class LogLevel : unsigned char { Debug, Info, Warn, Error };

class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void log(LogLevel level, std::string_view message) = 0;
};

class NullLogSink final : public LogSink {
 public:
  void log(LogLevel, std::string_view) override {}
};

}  // namespace bustle::core
