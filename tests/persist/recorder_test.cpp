// The session recorder under failure: a recording that cannot be written
// stops, reports why, and never blocks the caller.
#include "bustle/persist/recorder.hpp"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "bustle/core/world.hpp"

using namespace bustle;
namespace fs = std::filesystem;

namespace {

core::Scenario small_city() {
  core::Scenario s;
  s.id = "test.recorder";
  s.lanes = {{"a", core::LaneKind::Sidewalk, {{0, 0}, {20, 0}, {20, 20}}, 1.4, {"b"}},
             {"b", core::LaneKind::Sidewalk, {{20, 20}, {0, 0}}, 1.4, {"a"}}};
  s.pedestrians.count = 30;
  s.entity_capacity = 64;
  return s;
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("bustle-rec-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

}  // namespace

TEST_CASE(
    "a recording holds keyframes, every tick's digest and commands, and reads back in order") {
  const std::string path = temp_path("a.db");
  fs::remove(path);
  auto w = std::move(core::World::create(small_city(), 3).world);
  {
    std::unique_ptr<persist::Recorder> rec;
    REQUIRE(persist::Recorder::create(path, R"({"id":"test.recorder"})", rec).ok());
    for (std::uint64_t tick = 1; tick <= 50; ++tick) {
      std::vector<core::CommandEnvelope> cmds;
      if (tick % 10 == 0) {
        const core::CommandEnvelope env{
            {2, static_cast<std::uint32_t>(tick)},
            core::SetPedestrianTarget{static_cast<std::uint32_t>(tick)}};
        REQUIRE(w->submit(env) == core::SubmitStatus::Queued);
        cmds.push_back(env);
      }
      if (tick == 15) {  // a walker on a route: in the tick's commands and in the keyframe at 25
        const core::CommandEnvelope env{{2, 15},
                                        core::SpawnPedestrian{"", "", 0, 0, {"a", "b", "a"}}};
        REQUIRE(w->submit(env) == core::SubmitStatus::Queued);
        cmds.push_back(env);
      }
      if (tick == 1) rec->record_keyframe(tick, persist::KeyframeReason::Initial, w->capture());
      if (tick == 25) rec->record_keyframe(tick, persist::KeyframeReason::Periodic, w->capture());
      w->step();
      rec->record_tick({tick, w->step_index(), w->digest(), cmds});
    }
    rec->flush();
    const auto st = rec->status();
    CHECK_FALSE(st.failed);
    CHECK(st.ticks_written == 50);
    CHECK(st.keyframes_written == 2);
  }
  persist::RecordingReader reader;
  const auto e = persist::RecordingReader::open(path, reader);
  INFO(e.to_string());
  REQUIRE(e.ok());
  CHECK(reader.last_tick() == 50);
  REQUIRE(reader.keyframes().size() == 2);
  CHECK(reader.keyframes()[0].reason == "initial");
  CHECK(reader.keyframes()[1].tick == 25);
  std::vector<persist::RecordedTick> ticks;
  REQUIRE(reader.read_ticks(1, 50, ticks).ok());
  REQUIRE(ticks.size() == 50);
  CHECK(ticks[9].commands.size() == 1);
  REQUIRE(ticks[14].commands.size() == 1);
  const auto* spawn = std::get_if<core::SpawnPedestrian>(&ticks[14].commands[0].command);
  REQUIRE(spawn != nullptr);
  CHECK(spawn->route == std::vector<std::string>{"a", "b", "a"});
  persist::LoadedCheckpoint kf;
  REQUIRE(reader.read_keyframe(reader.keyframes()[1], kf).ok());
  CHECK(kf.checkpoint.routes.count == std::vector<std::uint32_t>{3});
  CHECK(std::count(kf.checkpoint.pedestrians.route.begin(), kf.checkpoint.pedestrians.route.end(),
                   0u) == 1);
  auto restored = core::World::restore(small_city(), kf.checkpoint);
  if (!restored.errors.empty()) FAIL(restored.errors[0].path << ": " << restored.errors[0].message);
  // Replayed from the keyframe with the recorded commands, the run ends where it did.
  for (std::uint64_t tick = restored.world->step_index() + 1; tick <= 50; ++tick) {
    for (const core::CommandEnvelope& env : ticks[tick - 1].commands) {
      REQUIRE(restored.world->submit(env) == core::SubmitStatus::Queued);
    }
    restored.world->step();
    CHECK(restored.world->digest() == ticks[tick - 1].digest);
  }
  CHECK(restored.world->digest() == w->digest());
  CHECK(ticks[49].step == 50);
  CHECK(ticks[49].digest == w->digest());

  // Recording to an existing file is refused: a recording is never overwritten.
  std::unique_ptr<persist::Recorder> again;
  const auto e2 = persist::Recorder::create(path, "{}", again);
  CHECK(e2.message.find("already exists") != std::string::npos);
  fs::remove(path);
  fs::remove(path + "-wal");
  fs::remove(path + "-shm");
}

TEST_CASE("a failing recording stops, reports why, and never blocks the caller") {
  const std::string path = temp_path("b.db");
  fs::remove(path);
  std::unique_ptr<persist::Recorder> rec;
  REQUIRE(persist::Recorder::create(path, "{}", rec).ok());
  auto w = std::move(core::World::create(small_city(), 3).world);
  rec->record_keyframe(1, persist::KeyframeReason::Initial, w->capture());
  // Two records for the same tick violate the primary key: the writer fails.
  rec->record_tick({1, 1, 1, {}});
  rec->record_tick({1, 1, 1, {}});
  rec->flush();
  const auto st = rec->status();
  CHECK(st.failed);
  CHECK(st.error.find("recording_ticks") != std::string::npos);
  rec->record_tick({2, 2, 2, {}});  // ignored, returns at once
  CHECK(rec->status().failed);
  rec.reset();
  fs::remove(path);
  fs::remove(path + "-wal");
  fs::remove(path + "-shm");
}
