#include <catch2/catch.hpp>

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../support/completeness_guard.hpp"
#include "bustle/persist/snapshot_store.hpp"
#include "bustle/scenario/scenario_loader.hpp"

using namespace bustle;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("bustle-persist-test-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

core::Scenario city() {
  core::Scenario s;
  s.id = "test.persist";
  s.lanes = {
      {"a", core::LaneKind::Sidewalk, {{0, 0}, {30, 0}, {30, 20}}, 1.4, {"b", "x"}},
      {"b", core::LaneKind::Sidewalk, {{30, 20}, {0, 20}, {0, 0}}, 1.4, {"a"}},
      {"x", core::LaneKind::Crossing, {{30, 20}, {30, 30}}, 1.2, {"dead"}},
      {"dead", core::LaneKind::Sidewalk, {{30, 30}, {40, 30}}, 1.4, {}},
  };
  s.pedestrians.count = 80;
  s.entity_capacity = 256;
  return s;
}

const std::string kScenarioJson = R"({"id":"test.persist"})";

std::unique_ptr<core::World> world_at(std::uint64_t steps) {
  auto w = std::move(core::World::create(city(), 5).world);
  for (std::uint64_t k = 0; k < steps; ++k) w->step();
  return w;
}

persist::SnapshotStore open_store(const std::string& path) {
  persist::SnapshotStore store;
  const persist::StoreError e = persist::SnapshotStore::open(path, persist::FileKind::Snapshots, true, store);
  INFO(e.to_string());
  REQUIRE(e.ok());
  return store;
}

// Reads `name` back and restores it; returns the first error text or "".
std::string restore_error(const std::string& path, const std::string& name, std::uint64_t* digest_out = nullptr) {
  persist::SnapshotStore store;
  if (auto e = persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store); !e.ok()) {
    return e.to_string();
  }
  persist::LoadedCheckpoint lc;
  if (auto e = store.read_checkpoint(name, lc); !e.ok()) return e.to_string();
  auto r = core::World::restore(city(), lc.checkpoint);
  if (!r.errors.empty()) return r.errors[0].path + ": " + r.errors[0].message;
  if (digest_out != nullptr) *digest_out = r.world->digest();
  return "";
}

}  // namespace

TEST_CASE("completeness guard through a SQLite round-trip") {
  TempDir dir;
  auto store = open_store(dir.file("snapshots.db"));
  int n = 0;
  const std::vector<bustle::test::ScriptedCommand> script = {
      {20, core::SetPedestrianTarget{40}}, {60, core::DespawnEntity{core::EntityId{2, 1}}},
      {61, core::SetPedestrianTarget{120}}};
  bustle::test::check_checkpoint_completeness(
      city(), 5, script, 200, {0, 20, 60, 61, 150}, [&](const core::WorldCheckpoint& cp) {
        const std::string name = "cp" + std::to_string(n++);
        const auto we = store.write_checkpoint(name, "checkpoint", cp, kScenarioJson, 0);
        REQUIRE(we.ok());
        persist::LoadedCheckpoint lc;
        const auto re = store.read_checkpoint(name, lc);
        INFO(re.to_string());
        REQUIRE(re.ok());
        CHECK(lc.scenario_json == kScenarioJson);
        return lc.checkpoint;
      });
}

TEST_CASE("list, replace and delete snapshots") {
  TempDir dir;
  auto store = open_store(dir.file("s.db"));
  auto w = world_at(10);
  REQUIRE(store.write_checkpoint("one", "checkpoint", w->capture(), kScenarioJson, 1).ok());
  w->step();
  REQUIRE(store.write_checkpoint("two", "checkpoint", w->capture(), kScenarioJson, 2).ok());
  REQUIRE(store.write_checkpoint("one", "checkpoint", w->capture(), kScenarioJson, 3).ok());  // replace
  REQUIRE(store.write_save("save1", w->capture_save(), kScenarioJson, 4).ok());
  std::vector<persist::SnapshotInfo> infos;
  REQUIRE(store.list(infos).ok());
  REQUIRE(infos.size() == 3);
  CHECK(infos[0].name == "two");
  CHECK(infos[1].name == "one");
  CHECK(infos[1].step == 11);
  CHECK(infos[2].kind == "save");
  bool found = false;
  REQUIRE(store.remove("two", found).ok());
  CHECK(found);
  REQUIRE(store.remove("two", found).ok());
  CHECK_FALSE(found);
  persist::LoadedCheckpoint lc;
  const auto e = store.read_checkpoint("two", lc);
  CHECK(e.message.find("no snapshot") != std::string::npos);
  const auto e2 = store.read_checkpoint("save1", lc);
  CHECK(e2.field == "kind");
}

TEST_CASE("a save keeps the persistent facts and regenerates the background population") {
  TempDir dir;
  auto store = open_store(dir.file("s.db"));
  auto w = world_at(40);
  REQUIRE(store.write_save("s", w->capture_save(), kScenarioJson, 0).ok());
  persist::LoadedSave ls;
  REQUIRE(store.read_save("s", ls).ok());
  auto r = core::World::load_save(city(), ls.save);
  REQUIRE(r.world);
  CHECK(r.world->step_index() == 40);
  CHECK(r.world->pedestrian_target() == w->pedestrian_target());
  CHECK(r.world->pedestrians().size() == 0);
  for (int k = 0; k < 20; ++k) r.world->step();
  // Regenerated up to the target (minus any that reached the dead end this step).
  CHECK(r.world->pedestrians().size() + r.world->counters().despawned_total >= w->pedestrian_target());
  CHECK(r.world->pedestrians().size() >= w->pedestrian_target() - 5);
  CHECK(r.world->counters().spawned_total >= w->pedestrian_target());
}

TEST_CASE("bad snapshots are rejected with their own error and the live world is untouched") {
  TempDir dir;
  const std::string path = dir.file("s.db");
  auto live = world_at(30);
  const core::WorldCheckpoint good = live->capture();
  const std::uint64_t live_digest = live->digest();
  {
    auto store = open_store(path);
    REQUIRE(store.write_checkpoint("good", "checkpoint", good, kScenarioJson, 0).ok());
  }
  REQUIRE(restore_error(path, "good").empty());

  SECTION("duplicate ids") {
    core::WorldCheckpoint cp = good;
    cp.pedestrians.id[3] = cp.pedestrians.id[2];
    auto store = open_store(path);
    REQUIRE(store.write_checkpoint("bad", "checkpoint", cp, kScenarioJson, 0).ok());
    CHECK(restore_error(path, "bad").find("pedestrians[3].id: duplicate") != std::string::npos);
  }
  SECTION("dangling lane reference") {
    core::WorldCheckpoint cp = good;
    cp.pedestrians.lane[0] = 77;
    auto store = open_store(path);
    REQUIRE(store.write_checkpoint("bad", "checkpoint", cp, kScenarioJson, 0).ok());
    CHECK(restore_error(path, "bad").find("pedestrians[0].lane: lane 77 does not exist") != std::string::npos);
  }
  SECTION("blob of the wrong size") {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "UPDATE pedestrian_columns SET s_m = substr(s_m, 1, 8)", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    const std::string e = restore_error(path, "good");
    CHECK(e.find("table pedestrian_columns") != std::string::npos);
    CHECK(e.find("field s_m") != std::string::npos);
  }
  SECTION("a value altered inside a blob") {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    // Overwrite the first pedestrian's distance with 0.0 (still in range).
    REQUIRE(sqlite3_exec(db, "UPDATE pedestrian_columns SET s_m = zeroblob(8) || substr(s_m, 9)", nullptr, nullptr,
                         nullptr) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(restore_error(path, "good").find("digest") != std::string::npos);
  }
  SECTION("wrong schema version") {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(restore_error(path, "good").find("schema version 99") != std::string::npos);
  }
  SECTION("wrong magic") {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "UPDATE meta SET value='other' WHERE key='magic'", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(restore_error(path, "good").find("wrong magic") != std::string::npos);
  }
  SECTION("not a database at all") {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << std::string(8192, 'x');
    fs::remove(path + "-wal");
    fs::remove(path + "-shm");
    CHECK(restore_error(path, "good").find("not a") != std::string::npos);
  }
  CHECK(live->digest() == live_digest);
  CHECK(live->compute_digest() == live_digest);
}

TEST_CASE("truncation and bit flips never restore a different state") {
  TempDir dir;
  const std::string path = dir.file("s.db");
  auto live = world_at(30);
  std::uint64_t good_digest = 0;
  {
    auto store = open_store(path);
    REQUIRE(store.write_checkpoint("good", "checkpoint", live->capture(), kScenarioJson, 0).ok());
    // Fold the WAL into the main file so the file alone holds the snapshot.
    REQUIRE(store.db().exec("PRAGMA wal_checkpoint(TRUNCATE)").ok());
  }
  REQUIRE(restore_error(path, "good", &good_digest).empty());
  std::string original;
  {
    std::ifstream in(path, std::ios::binary);
    original.assign(std::istreambuf_iterator<char>(in), {});
  }
  REQUIRE(original.size() > 4096);
  int rejected = 0;
  int identical = 0;
  auto try_variant = [&](const std::string& bytes, const std::string& what) {
    TempDir d2;
    const std::string p2 = d2.file("v.db");
    std::ofstream(p2, std::ios::binary) << bytes;
    std::uint64_t digest = 0;
    const std::string e = restore_error(p2, "good", &digest);
    INFO(what << " -> " << (e.empty() ? "restored" : e));
    if (e.empty()) {
      REQUIRE(digest == good_digest);  // a harmless change (unused space) restores the same state
      ++identical;
    } else {
      ++rejected;
    }
  };
  for (const std::size_t cut : {std::size_t{0}, std::size_t{50}, std::size_t{100}, std::size_t{4096},
                                original.size() / 2, original.size() - 4096, original.size() - 1}) {
    try_variant(original.substr(0, cut), "truncated at " + std::to_string(cut));
  }
  for (std::size_t off = 17; off < original.size(); off += original.size() / 61) {
    std::string flipped = original;
    flipped[off] = static_cast<char>(flipped[off] ^ 0x5A);
    try_variant(flipped, "bit flip at " + std::to_string(off));
  }
  CHECK(rejected >= 10);
  INFO("rejected " << rejected << ", identical " << identical);
  CHECK(rejected + identical >= 60);
}

TEST_CASE("a failed write (disk full, read-only) is reported and the previous snapshot still loads") {
  TempDir dir;
  const std::string path = dir.file("s.db");
  auto w = world_at(10);
  auto store = open_store(path);
  REQUIRE(store.write_checkpoint("prev", "checkpoint", w->capture(), kScenarioJson, 0).ok());
  std::uint64_t before = 0;
  REQUIRE(restore_error(path, "prev", &before).empty());

  SECTION("disk full") {
    // Cap the file at its current size: the next write needs new pages.
    persist::SqlError err;
    auto st = store.db().prepare("PRAGMA page_count", err);
    REQUIRE(st.step());
    REQUIRE(store.set_max_page_count(st.column_i64(0)).ok());
    for (int k = 0; k < 20; ++k) w->step();
    const persist::StoreError e = store.write_checkpoint("next", "checkpoint", w->capture(), kScenarioJson, 0);
    CHECK_FALSE(e.ok());
    CHECK(e.sql_code == SQLITE_FULL);
  }
  SECTION("read-only") {
    REQUIRE(store.db().exec("PRAGMA query_only=1").ok());
    const persist::StoreError e = store.write_checkpoint("next", "checkpoint", w->capture(), kScenarioJson, 0);
    CHECK_FALSE(e.ok());
    CHECK(e.sql_code == SQLITE_READONLY);
  }
  std::uint64_t after = 0;
  CHECK(restore_error(path, "prev", &after).empty());
  CHECK(after == before);
}

TEST_CASE("completeness guard on the embedded default city through SQLite") {
  auto loaded = bustle::scenario::load_embedded_default();
  REQUIRE(loaded.ok());
  const core::Scenario city_default = *loaded.scenario;
  TempDir dir;
  auto store = open_store(dir.file("default.db"));
  int n = 0;
  const std::vector<bustle::test::ScriptedCommand> script = {
      {5, core::SetPedestrianTarget{200}}, {30, core::DespawnEntity{core::EntityId{7, 1}}},
      {31, core::SetPedestrianTarget{90}}};
  bustle::test::check_checkpoint_completeness(
      city_default, 7, script, 120, {0, 5, 30, 31, 100}, [&](const core::WorldCheckpoint& cp) {
        const std::string name = "d" + std::to_string(n++);
        REQUIRE(store.write_checkpoint(name, "checkpoint", cp, loaded.text, 0).ok());
        persist::LoadedCheckpoint lc;
        REQUIRE(store.read_checkpoint(name, lc).ok());
        CHECK(lc.scenario_json == loaded.text);
        return lc.checkpoint;
      });
}

TEST_CASE("completeness guard on the vehicle corridor through SQLite, including mid-dispatch") {
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) + "/configs/corridor.city.json");
  REQUIRE(loaded.ok());
  const core::Scenario corridor = *loaded.scenario;
  TempDir dir;
  auto store = open_store(dir.file("corridor.db"));
  int n = 0;
  const std::vector<bustle::test::ScriptedCommand> script = {
      {12, core::GarageRequest{"g0", "extra1", "sedan", "lane0", 50}},
      {12, core::GarageRequest{"g0", "r05", "sedan", "lane0", 1}},  // duplicate of a planned request
      {40, core::SetObservers{{{500.0, 500.0}}}},
      {41, core::CancelGarageRequest{"g0", "r17"}},
      {90, core::SetObservers{{{25.0, 25.0}}}},
      {150, core::SetVehicleStrategy{core::EntityId{8, 1}, 2}},
  };
  bustle::test::check_checkpoint_completeness(
      corridor, 3, script, 300, {0, 12, 35, 41, 90, 151, 280}, [&](const core::WorldCheckpoint& cp) {
        const std::string name = "c" + std::to_string(n++);
        const auto we = store.write_checkpoint(name, "checkpoint", cp, loaded.text, 0);
        INFO(we.to_string());
        REQUIRE(we.ok());
        persist::LoadedCheckpoint lc;
        const auto re = store.read_checkpoint(name, lc);
        INFO(re.to_string());
        REQUIRE(re.ok());
        return lc.checkpoint;
      });
}

TEST_CASE("a request in two collections is refused at restore, naming the garage and row") {
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) + "/configs/corridor.city.json");
  REQUIRE(loaded.ok());
  const core::Scenario corridor = *loaded.scenario;
  auto w = std::move(core::World::create(corridor, 1).world);
  for (int k = 0; k < 35; ++k) w->step();
  REQUIRE_FALSE(w->vehicles().garages()[0].queue.empty());
  TempDir dir;
  const std::string path = dir.file("c.db");
  {
    auto store = open_store(path);
    REQUIRE(store.write_checkpoint("mid", "checkpoint", w->capture(), loaded.text, 0).ok());
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db,
                       "INSERT INTO garage_dispatched SELECT snapshot_id, garage_index, request_id FROM garage_queue "
                       "WHERE position = 0",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  persist::SnapshotStore store;
  REQUIRE(persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store).ok());
  persist::LoadedCheckpoint lc;
  REQUIRE(store.read_checkpoint("mid", lc).ok());
  auto r = core::World::restore(corridor, lc.checkpoint);
  REQUIRE_FALSE(r.world);
  CHECK(r.errors[0].path == "garages[0].queue[0].request_id");
  CHECK(r.errors[0].message.find("both queued and dispatched") != std::string::npos);
}

TEST_CASE("completeness guard on the large block (residents, zones, work-points) through SQLite") {
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) + "/configs/largeblock.city.json");
  REQUIRE(loaded.ok());
  const core::Scenario block = *loaded.scenario;
  TempDir dir;
  auto store = open_store(dir.file("block.db"));
  int n = 0;
  const std::vector<bustle::test::ScriptedCommand> script = {
      {10, core::SetHour{12.0}}, {60, core::SetHour{22.0}}, {90, core::SetTimeScale{900}}, {130, core::SetHour{8.0}}};
  bustle::test::check_checkpoint_completeness(
      block, 9, script, 200, {0, 10, 45, 91, 150}, [&](const core::WorldCheckpoint& cp) {
        const std::string name = "b" + std::to_string(n++);
        const auto we = store.write_checkpoint(name, "checkpoint", cp, loaded.text, 0);
        INFO(we.to_string());
        REQUIRE(we.ok());
        persist::LoadedCheckpoint lc;
        const auto re = store.read_checkpoint(name, lc);
        INFO(re.to_string());
        REQUIRE(re.ok());
        return lc.checkpoint;
      });
}

TEST_CASE("a save keeps the time of day and garage counters: VehicleIds are never reissued after a load") {
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) + "/configs/corridor.city.json");
  REQUIRE(loaded.ok());
  const core::Scenario corridor = *loaded.scenario;
  auto w = std::move(core::World::create(corridor, 2).world);
  for (int k = 0; k < 120; ++k) w->step();
  const std::uint64_t ordinal = w->vehicles().garages()[0].next_vehicle_ordinal;
  REQUIRE(ordinal > 3);
  TempDir dir;
  auto store = open_store(dir.file("save.db"));
  REQUIRE(store.write_save("s", w->capture_save(), loaded.text, 0).ok());
  persist::LoadedSave ls;
  const auto e = store.read_save("s", ls);
  INFO(e.to_string());
  REQUIRE(e.ok());
  CHECK(ls.save.day_us == w->population().day_us());
  auto r = core::World::load_save(corridor, ls.save);
  REQUIRE(r.world);
  CHECK(r.world->population().day_us() == w->population().day_us());
  REQUIRE(r.world->submit({{1, 1}, core::GarageRequest{"g0", "after-load", "sedan", "lane0", 500}}) ==
          core::SubmitStatus::Queued);
  for (int k = 0; k < 3; ++k) r.world->step();
  bool found = false;
  for (std::uint32_t i = 0; i < r.world->vehicles().store().size(); ++i) {
    if (r.world->vehicles().store().request_id[i] == "after-load") {
      CHECK(r.world->vehicles().store().ordinal[i] == ordinal);  // numbering continues
      found = true;
    }
  }
  CHECK(found);
}
