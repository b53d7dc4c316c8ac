// Builds session recordings in tests exactly as the live server does
// (persist::Recorder: initial keyframe before the first step, commands and
// digest per tick, optional periodic keyframes, a "restore" keyframe where the
// world is replaced by an older checkpoint), and edits them with SQL.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bustle/core/command.hpp"
#include "bustle/core/world.hpp"
#include "bustle/persist/recorder.hpp"

namespace bustle::test {

// A small city: a loop of two sidewalks and a dead-end stub, so pedestrians
// walk off the stub and are respawned (churn in ids and counters).
std::string small_city_json(std::uint32_t pedestrians = 60, std::uint32_t entity_capacity = 256,
                            std::uint32_t spawn_per_step_max = 4);

struct RecordingPlan {
  std::uint64_t ticks = 120;
  std::uint64_t seed = 7;
  std::string scenario_json = small_city_json();
  std::uint64_t periodic_every = 0;   // periodic keyframes at ticks 1 + k * every (0 = none)
  std::uint64_t restore_at_tick = 0;  // 0 = none; the world is replaced before this tick
  std::uint64_t restore_from_tick =
      0;                 // ... by the state captured before this (earlier) tick's step
  bool commands = true;  // submit the scripted commands
  // One tick's commands changed (a session that differs from the plain one
  // by exactly that): its set_pedestrian_target asks for one more
  // pedestrian (the tick must be a multiple of 10) ...
  std::uint64_t bump_target_tick = 0;
  // ... or all its commands are left out.
  std::uint64_t drop_commands_tick = 0;
  // A wrong but self-consistent periodic keyframe at this tick: it is
  // captured from a copy of the world with one extra, unrecorded command
  // queued, so it restores fine but is not the state the session had.
  std::uint64_t wrong_keyframe_tick = 0;
};

struct BuiltRecording {
  std::string path;
  std::vector<persist::RecordedTick> ticks;  // what the live run recorded, tick order
  std::vector<std::uint64_t> keyframe_ticks;
  std::uint64_t digest_at_tick(std::uint64_t tick) const { return ticks.at(tick - 1).digest; }
  std::uint64_t step_at_tick(std::uint64_t tick) const { return ticks.at(tick - 1).step; }
};

// The scripted commands of tick `tick` (some rejected on purpose: a stale id).
// Every tick that is a multiple of 10 sets the pedestrian target.
std::vector<core::CommandEnvelope> scripted_commands(std::uint64_t tick, const core::World& world);

// Runs the plan, recording into `path` (which must not exist). REQUIREs success.
BuiltRecording record_session(const std::string& path, const RecordingPlan& plan);

// Runs one SQL statement on the file; REQUIREs success, returns rows changed.
int exec_sql(const std::string& path, const std::string& sql);

// SQL that adds 1 to the count of the set_pedestrian_target command(s) of
// `tick`, or removes that count (a malformed row), whichever way the
// recording_commands table stores arguments (columns, or JSON `args`).
std::string sql_bump_target_count(const std::string& path, std::uint64_t tick);
std::string sql_drop_target_count(const std::string& path, std::uint64_t tick);

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

std::string hex16(std::uint64_t v);

}  // namespace bustle::test
