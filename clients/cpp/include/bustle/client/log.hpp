// LogSink: where the SDK's representation layer, pools and backends write
// what they decide (pool growth, an entity waiting at a pool's cap, a backend
// that refused to initialize). The SDK never prints on its own: a caller
// passes a sink, and an engine plugin routes it to its own log (UE_LOG).
// Without a sink nothing is written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bustle::client {

enum class LogLevel : std::uint8_t { Trace = 0, Debug = 1, Info = 2, Warning = 3, Error = 4 };
const char* to_string(LogLevel level);

class LogSink {
 public:
  virtual ~LogSink() = default;
  // `category` names the part that writes ("pool", "representation", a
  // backend's name); `message` is one sentence. Called on the thread that
  // drives the representation layer; must not call back into it.
  virtual void write(LogLevel level, std::string_view category, std::string_view message) = 0;
  // Lets a sink drop a level before the message is formatted.
  virtual bool enabled(LogLevel /*level*/) const { return true; }
};

// Keeps every line in memory (tests, tools).
class MemoryLogSink final : public LogSink {
 public:
  struct Line {
    LogLevel level = LogLevel::Info;
    std::string category;
    std::string message;
  };
  void write(LogLevel level, std::string_view category, std::string_view message) override;
  const std::vector<Line>& lines() const { return lines_; }
  // Lines of `category` whose message contains `text`.
  std::size_t count(std::string_view category, std::string_view text) const;
  void clear() { lines_.clear(); }

 private:
  std::vector<Line> lines_;
};

// Writes `message` to `sink` when the sink is set and enables `level`.
void log_to(LogSink* sink, LogLevel level, std::string_view category, std::string_view message);

}  // namespace bustle::client
