// Command line of bustle-replay (see usage_text()), parsed with CLI11.
//
// Exit codes, the same for every command:
//   0  success (verify: every digest matched; diff: the recordings agree)
//   1  verify: a tick or keyframe diverged; diff: the recordings differ
//   2  usage error, or a file that cannot be read or replayed
//   3  verify --check-invariants: a core invariant broke
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bustle::replay {

enum class ReplayCommand : std::uint8_t { Help, Version, Verify, Serve, Diff };
enum class ReplayClock : std::uint8_t { Realtime, Fast };
// verify's progress line on stderr: Auto = only when stderr is a terminal.
enum class ProgressMode : std::uint8_t { Auto, Always, Never };

struct ReplayOptions {
  ReplayCommand command = ReplayCommand::Help;
  std::string file;
  std::string file_b;  // diff: the second recording
  std::optional<std::uint64_t>
      from_step;                         // start at the keyframe before the first tick reaching it
  std::optional<std::uint64_t> to_step;  // verify: stop after the first tick reaching it
  bool check_invariants = false;         // verify: World::check_invariants() after every tick
  // verify: segments replayed at once; 0 = one per core. 1 = one world from
  // the start keyframe to the end (the sequential reference).
  std::uint32_t jobs = 0;
  ProgressMode progress = ProgressMode::Auto;
  bool json = false;                     // verify, diff: one JSON object on stdout instead of text
  std::uint32_t diff_entities_max = 20;  // diff: differing entities listed (all are counted)
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
  std::string help;   // the help text asked for (the command's own with `CMD --help`)
};

ParsedOptions parse_options(const std::vector<std::string>& args);
std::string usage_text();
std::string version_text();

}  // namespace bustle::replay
