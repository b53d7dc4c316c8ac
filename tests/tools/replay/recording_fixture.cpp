// Session recordings built in tests as the live server builds them, and
// edited with SQL (recording_fixture.hpp).
#include "recording_fixture.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <memory>
#include <optional>

#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"

namespace bustle::test {

std::string small_city_json(std::uint32_t pedestrians, std::uint32_t entity_capacity,
                            std::uint32_t spawn_per_step_max) {
  return R"({
  "id": "test.replay.small-city.v1",
  "name": "A sidewalk loop with a dead-end stub",
  "step_us": 100000,
  "entity_capacity": )" +
         std::to_string(entity_capacity) + R"(,
  "command_inbox_capacity": 64,
  "pedestrians": { "count": )" +
         std::to_string(pedestrians) + R"(, "spawn_per_step_max": )" +
         std::to_string(spawn_per_step_max) + R"( },
  "lanes": [
    { "id": "loop.south", "kind": "sidewalk", "speed_mps_limit": 4.0,
      "points": [[0, 0], [12, 0]], "successors": ["loop.north", "stub"] },
    { "id": "loop.north", "kind": "sidewalk", "speed_mps_limit": 3.5,
      "points": [[12, 0], [12, 8], [0, 8], [0, 0]], "successors": ["loop.south"] },
    { "id": "stub", "kind": "sidewalk", "speed_mps_limit": 3.0,
      "points": [[12, 0], [18, -4]], "successors": [] },
    { "id": "road", "kind": "road", "speed_mps_limit": 13.9,
      "points": [[-5, 4], [25, 4]], "successors": [] }
  ]
})";
}

std::vector<core::CommandEnvelope> scripted_commands(std::uint64_t tick, const core::World& world) {
  std::vector<core::CommandEnvelope> out;
  // Built in place: brace-initialising a CommandEnvelope temporary trips
  // GCC 12's -Wmaybe-uninitialized on the variant's other alternatives.
  const auto add = [&](std::uint32_t k, auto command) {
    core::CommandEnvelope& env = out.emplace_back();
    env.origin.client_id = static_cast<std::uint32_t>(1 + tick % 3);
    env.origin.request_id = static_cast<std::uint32_t>(tick * 10 + k);
    env.command = command;
  };
  if (tick % 10 == 0) add(0, core::SetPedestrianTarget{(tick / 10) % 2 == 0 ? 70u : 40u});
  if (tick % 7 == 3 && world.pedestrians().size() > 0)
    add(1, core::DespawnEntity{world.pedestrians().id[0]});
  // A stale id: rejected when applied, which is part of the recorded history.
  if (tick % 13 == 5) add(2, core::DespawnEntity{core::EntityId{3, 999}});
  return out;
}

BuiltRecording record_session(const std::string& path, const RecordingPlan& plan) {
  const scenario::LoadResult loaded =
      scenario::load_scenario_text(plan.scenario_json, "<test scenario>");
  REQUIRE(loaded.ok());
  const core::Scenario& sc = *loaded.scenario;
  auto created = core::World::create(sc, plan.seed);
  REQUIRE(created.world != nullptr);
  std::unique_ptr<core::World> world = std::move(created.world);

  std::unique_ptr<persist::Recorder> recorder;
  const persist::StoreError err = persist::Recorder::create(path, plan.scenario_json, recorder);
  INFO(err.to_string());
  REQUIRE(err.ok());

  BuiltRecording built;
  built.path = path;
  std::optional<core::WorldCheckpoint> saved;
  for (std::uint64_t tick = 1; tick <= plan.ticks; ++tick) {
    const bool restoring = plan.restore_at_tick != 0 && tick == plan.restore_at_tick;
    if (restoring) {
      // The operator restored an older checkpoint: the live world is replaced
      // at this step boundary, and steps repeat from there.
      REQUIRE(saved.has_value());
      auto restored = core::World::restore(sc, *saved);
      REQUIRE(restored.world != nullptr);
      world = std::move(restored.world);
    }
    std::vector<core::CommandEnvelope> cmds;
    if (plan.commands) cmds = scripted_commands(tick, *world);
    if (tick == plan.drop_commands_tick) cmds.clear();
    if (tick == plan.bump_target_tick) {
      bool bumped = false;
      for (core::CommandEnvelope& env : cmds) {
        if (auto* c = std::get_if<core::SetPedestrianTarget>(&env.command)) {
          ++c->count;
          bumped = true;
        }
      }
      REQUIRE(bumped);
    }
    for (const core::CommandEnvelope& env : cmds)
      REQUIRE(world->submit(env) == core::SubmitStatus::Queued);

    if (tick == 1) {
      recorder->record_keyframe(tick, persist::KeyframeReason::Initial, world->capture());
      built.keyframe_ticks.push_back(tick);
    } else if (restoring) {
      recorder->record_keyframe(tick, persist::KeyframeReason::Restore, world->capture());
      built.keyframe_ticks.push_back(tick);
    } else if (plan.periodic_every != 0 && (tick - 1) % plan.periodic_every == 0) {
      core::WorldCheckpoint cp = world->capture();
      if (tick == plan.wrong_keyframe_tick) {
        auto copy = core::World::restore(sc, cp);
        REQUIRE(copy.world != nullptr);
        core::CommandEnvelope extra;
        extra.origin = {9, 9};
        extra.command = core::SetPedestrianTarget{13};
        REQUIRE(copy.world->submit(extra) == core::SubmitStatus::Queued);
        cp = copy.world->capture();
      }
      recorder->record_keyframe(tick, persist::KeyframeReason::Periodic, std::move(cp));
      built.keyframe_ticks.push_back(tick);
    }
    if (plan.restore_from_tick != 0 && tick == plan.restore_from_tick) saved = world->capture();

    world->step();
    persist::RecordedTick rec{tick, world->step_index(), world->digest(), cmds};
    built.ticks.push_back(rec);
    recorder->record_tick(std::move(rec));
  }
  recorder->flush();
  const persist::RecorderStatus st = recorder->status();
  INFO(st.error);
  REQUIRE_FALSE(st.failed);
  REQUIRE(st.ticks_written == plan.ticks);
  REQUIRE(st.keyframes_written == built.keyframe_ticks.size());
  recorder.reset();
  return built;
}

int exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  INFO(path << ": " << (db != nullptr ? sqlite3_errmsg(db) : "open failed"));
  REQUIRE(rc == SQLITE_OK);
  char* msg = nullptr;
  rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
  const std::string text = msg != nullptr ? msg : "";
  sqlite3_free(msg);
  const int changed = sqlite3_changes(db);
  sqlite3_close(db);
  INFO(sql << ": " << text);
  REQUIRE(rc == SQLITE_OK);
  return changed;
}

namespace {

bool commands_have_json_args(const std::string& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(
              db,
              "SELECT count(*) FROM pragma_table_info('recording_commands') WHERE name = 'args'",
              -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  const bool has = sqlite3_column_int(st, 0) == 1;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return has;
}

}  // namespace

std::string sql_bump_target_count(const std::string& path, std::uint64_t tick) {
  const std::string where =
      " WHERE tick = " + std::to_string(tick) + " AND kind = 'set_pedestrian_target'";
  if (commands_have_json_args(path)) {
    return "UPDATE recording_commands SET args = json_set(args, '$.count', json_extract(args, "
           "'$.count') + 1)" +
           where;
  }
  return "UPDATE recording_commands SET count = count + 1" + where;
}

std::string sql_drop_target_count(const std::string& path, std::uint64_t tick) {
  const std::string where =
      " WHERE tick = " + std::to_string(tick) + " AND kind = 'set_pedestrian_target'";
  if (commands_have_json_args(path))
    return "UPDATE recording_commands SET args = json_remove(args, '$.count')" + where;
  return "UPDATE recording_commands SET count = NULL" + where;
}

TempDir::TempDir() {
  static std::atomic<unsigned> counter{0};
  dir_ = std::filesystem::temp_directory_path() /
         ("bustle-replay-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace bustle::test
