// Command line of bustle-replay (see usage_text()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bustle::replay {

enum class ReplayCommand : std::uint8_t { Help, Verify, Serve };
enum class ReplayClock : std::uint8_t { Realtime, Fast };

struct ReplayOptions {
  ReplayCommand command = ReplayCommand::Help;
  std::string file;
  std::optional<std::uint64_t>
      from_step;                         // start at the keyframe before the first tick reaching it
  std::optional<std::uint64_t> to_step;  // verify: stop after the first tick reaching it
  bool check_invariants = false;         // verify: World::check_invariants() after every tick
  // serve
  std::string bind_address = "127.0.0.1";
  std::uint16_t port = 7777;  // 0 = ephemeral
  std::string token;          // operator token; empty = none
  ReplayClock clock = ReplayClock::Realtime;
  std::optional<double> rate_hz;  // realtime pace; default: the recorded step rate
  bool loop = false;
  std::string log_level = "info";
};

struct ParsedOptions {
  ReplayOptions options;
  std::string error;  // non-empty: a usage error (exit 2)
};

ParsedOptions parse_options(const std::vector<std::string>& args);
std::string usage_text();

}  // namespace bustle::replay
