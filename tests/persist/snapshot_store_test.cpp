// The SQLite snapshot store: every field of a checkpoint and a save
// round-trips exactly (completeness guards on the shipped cities), bad and
// corrupted files are refused with their own error and the live world kept.
#include "bustle/persist/snapshot_store.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>

#include "../support/completeness_guard.hpp"
#include "bustle/persist/command_codec.hpp"
#include "bustle/persist/persist_worker.hpp"
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
  const persist::StoreError e =
      persist::SnapshotStore::open(path, persist::FileKind::Snapshots, true, store);
  INFO(e.to_string());
  REQUIRE(e.ok());
  return store;
}

// A completeness-guard transport through a real SQLite round-trip: each
// checkpoint is written as "<prefix><n>" and read back with its scenario text;
// `check`, when given, sees what was written and what came back.
using RoundTripCheck =
    std::function<void(const core::WorldCheckpoint&, const core::WorldCheckpoint&)>;
bustle::test::CheckpointTransport through_sqlite(persist::SnapshotStore& store,
                                                 const std::string& prefix,
                                                 const std::string& scenario_json,
                                                 RoundTripCheck check = {}) {
  return [&store, prefix, scenario_json, check, n = 0](const core::WorldCheckpoint& cp) mutable {
    const std::string name = prefix + std::to_string(n++);
    const auto we = store.write_checkpoint(name, "checkpoint", cp, scenario_json, 0);
    INFO(we.to_string());
    REQUIRE(we.ok());
    persist::LoadedCheckpoint lc;
    const auto re = store.read_checkpoint(name, lc);
    INFO(re.to_string());
    REQUIRE(re.ok());
    CHECK(lc.scenario_json == scenario_json);
    if (check) check(cp, lc.checkpoint);
    return lc.checkpoint;
  };
}

// Reads `name` back and restores it; returns the first error text or "".
std::string restore_error(const std::string& path, const std::string& name,
                          std::uint64_t* digest_out = nullptr) {
  persist::SnapshotStore store;
  if (auto e = persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store);
      !e.ok()) {
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
  const std::vector<bustle::test::ScriptedCommand> script = {
      {20, core::SetPedestrianTarget{40}},
      {60, core::DespawnEntity{core::EntityId{2, 1}}},
      {61, core::SetPedestrianTarget{120}}};
  bustle::test::check_checkpoint_completeness(city(), 5, script, 200, {0, 20, 60, 61, 150},
                                              through_sqlite(store, "cp", kScenarioJson));
}

TEST_CASE("list, replace and delete snapshots") {
  TempDir dir;
  auto store = open_store(dir.file("s.db"));
  auto w = world_at(10);
  REQUIRE(store.write_checkpoint("one", "checkpoint", w->capture(), kScenarioJson, 1).ok());
  w->step();
  REQUIRE(store.write_checkpoint("two", "checkpoint", w->capture(), kScenarioJson, 2).ok());
  REQUIRE(
      store.write_checkpoint("one", "checkpoint", w->capture(), kScenarioJson, 3).ok());  // replace
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
  CHECK(r.world->pedestrians().size() + r.world->counters().despawned_total >=
        w->pedestrian_target());
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
    CHECK(restore_error(path, "bad").find("pedestrians[0].lane: lane 77 does not exist") !=
          std::string::npos);
  }
  SECTION("blob of the wrong size") {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "UPDATE pedestrian_columns SET s_m = substr(s_m, 1, 8)", nullptr,
                         nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    const std::string e = restore_error(path, "good");
    CHECK(e.find("table pedestrian_columns") != std::string::npos);
    CHECK(e.find("field s_m") != std::string::npos);
  }
  SECTION("a value altered inside a blob") {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    // Overwrite the first pedestrian's distance with 0.0 (still in range).
    REQUIRE(sqlite3_exec(db, "UPDATE pedestrian_columns SET s_m = zeroblob(8) || substr(s_m, 9)",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
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
    REQUIRE(sqlite3_exec(db, "UPDATE meta SET value='other' WHERE key='magic'", nullptr, nullptr,
                         nullptr) == SQLITE_OK);
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
  for (const std::size_t cut :
       {std::size_t{0}, std::size_t{50}, std::size_t{100}, std::size_t{4096}, original.size() / 2,
        original.size() - 4096, original.size() - 1}) {
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

TEST_CASE(
    "a failed write (disk full, read-only) is reported and the previous snapshot still loads") {
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
    const persist::StoreError e =
        store.write_checkpoint("next", "checkpoint", w->capture(), kScenarioJson, 0);
    CHECK_FALSE(e.ok());
    CHECK(e.sql_code == SQLITE_FULL);
  }
  SECTION("read-only") {
    REQUIRE(store.db().exec("PRAGMA query_only=1").ok());
    const persist::StoreError e =
        store.write_checkpoint("next", "checkpoint", w->capture(), kScenarioJson, 0);
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
  const std::vector<bustle::test::ScriptedCommand> script = {
      {5, core::SetPedestrianTarget{200}},
      {30, core::DespawnEntity{core::EntityId{7, 1}}},
      {31, core::SetPedestrianTarget{90}}};
  bustle::test::check_checkpoint_completeness(city_default, 7, script, 120, {0, 5, 30, 31, 100},
                                              through_sqlite(store, "d", loaded.text));
}

TEST_CASE("completeness guard on the vehicle corridor through SQLite, including mid-dispatch") {
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) +
                                                     "/configs/corridor.city.json");
  REQUIRE(loaded.ok());
  const core::Scenario corridor = *loaded.scenario;
  TempDir dir;
  auto store = open_store(dir.file("corridor.db"));
  const std::vector<bustle::test::ScriptedCommand> script = {
      {12, core::GarageRequest{"g0", "extra1", "sedan", "lane0", 50}},
      {12,
       core::GarageRequest{"g0", "r05", "sedan", "lane0", 1}},  // duplicate of a planned request
      {40, core::SetObservers{{{500.0, 500.0}}}},
      {41, core::CancelGarageRequest{"g0", "r17"}},
      {90, core::SetObservers{{{25.0, 25.0}}}},
      {150, core::SetVehicleStrategy{core::EntityId{8, 1}, 2}},
      // A followed entity whose index is not 0 (its observer_follow row was
      // once refused on read as "not contiguous from 0").
      {160, core::SetObservers{{}, core::EntityId{8, 1}}},
  };
  // Step 0: the scenario's observer_follow still waits for its first vehicle.
  bustle::test::check_checkpoint_completeness(corridor, 3, script, 300,
                                              {0, 12, 35, 41, 90, 151, 200, 280},
                                              through_sqlite(store, "c", loaded.text));
}

TEST_CASE("a request in two collections is refused at restore, naming the garage and row") {
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) +
                                                     "/configs/corridor.city.json");
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
                       "INSERT INTO garage_dispatched SELECT snapshot_id, garage_index, request_id "
                       "FROM garage_queue "
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
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) +
                                                     "/configs/largeblock.city.json");
  REQUIRE(loaded.ok());
  const core::Scenario block = *loaded.scenario;
  TempDir dir;
  auto store = open_store(dir.file("block.db"));
  const std::vector<bustle::test::ScriptedCommand> script = {{10, core::SetHour{12.0}},
                                                             {60, core::SetHour{22.0}},
                                                             {90, core::SetTimeScale{900}},
                                                             {130, core::SetHour{8.0}}};
  bustle::test::check_checkpoint_completeness(block, 9, script, 200, {0, 10, 45, 91, 150},
                                              through_sqlite(store, "b", loaded.text));
}

TEST_CASE(
    "a save keeps the time of day and garage counters: VehicleIds are never reissued after a "
    "load") {
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) +
                                                     "/configs/corridor.city.json");
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
  REQUIRE(
      r.world->submit({{1, 1}, core::GarageRequest{"g0", "after-load", "sedan", "lane0", 500}}) ==
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

// ---------------------------------------------------------------------------
// Schema 2: the population pipeline (spawn handles, orphans, retiring FIFO,
// observer views, zone handoffs, lifecycle settings, saveable residents).

namespace {

// A walk through configs/largeblock.city.json: each lane a pedestrian
// successor of the one before (market loop, crossing, office loop, ...).
const std::vector<std::string> kBlockRoute = {"market.loop",         "x.market.office",
                                              "office.loop",         "office.loop",
                                              "x.office.facilities", "facilities.loop"};

core::Scenario largeblock() {
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) +
                                                     "/configs/largeblock.city.json");
  INFO((loaded.errors.empty() ? std::string() : loaded.errors[0].to_string()));
  REQUIRE(loaded.ok());
  return *loaded.scenario;
}

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

core::SpawnHandleState handle_state(std::uint64_t handle, core::SpawnState state,
                                    core::SpawnFailure failure, core::EntityId entity,
                                    core::CommandOrigin origin, std::int32_t zone,
                                    std::uint32_t lane, core::PriorityClass priority,
                                    std::uint64_t step, std::uint32_t route = core::kNoRoute) {
  return {handle, state,    failure, entity,     origin,   zone,
          lane,   priority, step,    step + 100, step + 3, route};
}

// A checkpoint of the large block whose schema-2 fields all hold values no
// run would produce together: extremes of every integer type, -0.0, denormal
// and huge doubles, sentinels (any zone, any lane, no resident). Structurally
// valid for the store, not for World::restore.
core::WorldCheckpoint extreme_checkpoint() {
  auto w = std::move(core::World::create(largeblock(), 4).world);
  for (int k = 0; k < 30; ++k) w->step();
  core::WorldCheckpoint cp = w->capture();
  REQUIRE(cp.pedestrians.id.size() >= 2);
  REQUIRE(cp.population.zones.size() == 3);
  for (std::size_t i = 0; i < cp.pedestrians.id.size(); ++i) {
    cp.pedestrians.priority[i] = static_cast<std::uint8_t>(i % 4);
    cp.pedestrians.origin[i] = static_cast<std::uint8_t>(255 - i % 3);
    cp.pedestrians.route[i] = i == 0 ? 2 : i == 1 ? UINT32_MAX - 1 : core::kNoRoute;
  }
  // The route table: consistent as a table (targets within their routes, live
  // slices inside the buffer), with released lanes left in the buffer, a free
  // slot with a stale offset and lane indices no city has.
  cp.routes.lanes = {0, 1, 2, UINT32_MAX, 7, 3, 0x8000'0000u};
  cp.routes.offset = {0, 0, 3, 5, UINT32_MAX};
  cp.routes.count = {3, 0, 2, 2, 0};
  cp.routes.target = {3, 0, 0, 1, 0};
  cp.routes.free_slots = {4, 1};
  cp.counters.faded_total = 0xFEDC'BA98'7654'3210ull;
  cp.counters.fade_skipped_total = 3;
  cp.observers = {{1.5, -2.5}, {0.0, 0.0}, {1e6, 3.25}};
  cp.observer_views = {{-0.0, true, -3.141592653589793}, {12.5, false, 0.0}, {1e300, true, 5e-324}};
  cp.client_observers = {{-0.0, 5e-324}, {123456.75, -1e300}};
  cp.client_observer_views = {{2.5, true, -0.0}, {-1.0, false, 0.0}};
  core::SpawnPipelineState& sp = cp.spawn;
  sp.next_handle = 0x8000'0000'0000'0005ull;
  sp.counters.requested = UINT64_MAX;
  for (std::size_t k = 0; k < core::kSpawnStateCount; ++k)
    sp.counters.per_state_total[k] = 1000 + k;
  sp.counters.deferred_by_cap = 1;
  sp.counters.deferred_by_capacity = 2;
  sp.counters.deferred_by_zone = UINT32_MAX;
  sp.counters.displaced_total = UINT64_MAX - 3;
  sp.live = {handle_state(1, core::SpawnState::Queued, core::SpawnFailure::None, {}, {0, 0},
                          core::kAnyZone, core::kAnyLane, core::PriorityClass::Background, 0),
             handle_state(2, core::SpawnState::Registered, core::SpawnFailure::None, {7, 3},
                          {UINT32_MAX, 77}, 2, 0, core::PriorityClass::Story, UINT64_MAX - 200, 3)};
  sp.recent = {
      handle_state(UINT64_MAX - 1, core::SpawnState::Failed, core::SpawnFailure::EntityGone,
                   {UINT32_MAX, UINT32_MAX}, {9, UINT32_MAX}, INT32_MAX, 4,
                   core::PriorityClass::Community, 5, UINT32_MAX - 7),
      handle_state(4, core::SpawnState::TimedOut, core::SpawnFailure::WorldReplaced, {}, {1, 1}, 0,
                   core::kAnyLane, core::PriorityClass::Quest, 6),
      handle_state(5, core::SpawnState::Canceled, core::SpawnFailure::Displaced, {}, {2, 1}, 0,
                   core::kAnyLane, core::PriorityClass::Background, 7)};
  cp.orphans = {{{3, 2}, 4, 1, -0.0, UINT32_MAX, UINT64_MAX},
                {{9, 1}, 255, UINT32_MAX, 17.25, 12, 40}};
  cp.retiring_fifo = {{9, 1}, {3, 2}, {UINT32_MAX, 0}};
  cp.population.settings = {3, 5, 500, UINT32_MAX};
  cp.population.handoffs = {{1, 0, 2}, {UINT32_MAX, 2, 1}};
  cp.population.interval_origin_us = 123'456'789'012ull;
  for (std::uint32_t k = 0; k < 3; ++k) {
    core::ZoneStatus& z = cp.population.zones[k];
    z.handoffs_started = 10 + k;
    z.handoffs_accepted = 20 + k;
    z.handoffs_returned = UINT32_MAX - k;
    z.retiring = 40 + k;
  }
  REQUIRE_FALSE(cp.population.residents.active.empty());
  cp.population.residents.active[0] = core::ResidentStore::kRetiring;
  core::LifecycleOp despawn;
  despawn.kind = core::LifecycleOp::Kind::Despawn;
  despawn.id = {5, 1};
  core::LifecycleOp spawn;
  spawn.spawn = {"market", "", 0, 100, {"market.loop", "x.market.office"}};
  cp.inbox = {
      {{1, 1},
       core::SpawnPedestrian{"office", "office.loop", 3, 9, {"office.loop", "office.loop"}}},
      {{1, 2}, core::CancelSpawn{UINT64_MAX}},
      {{0, 0},
       core::SetClientObservers{{{-5.5, 1e300, -0.0, true, -3.0}, {0.0, 0.0, 0.0, false, 0.0}}}},
      {{2, 2}, core::SetLifecycle{1, 1, 100, 0}},
      {{0, 0}, core::LifecycleBatch{{spawn, despawn}}},
      {{3, 9}, core::SetObservers{{{1.0, 2.0, -0.0, true, 0.5}}}}};
  return cp;
}

// Every schema-2 field of `a` and `b` is identical (doubles bit for bit).
void check_pipeline_fields_equal(const core::WorldCheckpoint& a, const core::WorldCheckpoint& b) {
  CHECK(a.pedestrians.priority == b.pedestrians.priority);
  CHECK(a.pedestrians.origin == b.pedestrians.origin);
  CHECK(a.pedestrians.route == b.pedestrians.route);
  CHECK(a.routes == b.routes);
  CHECK(a.counters.faded_total == b.counters.faded_total);
  CHECK(a.counters.fade_skipped_total == b.counters.fade_skipped_total);
  REQUIRE(a.observer_views.size() == b.observer_views.size());
  for (std::size_t k = 0; k < a.observer_views.size(); ++k) {
    INFO("observer_views[" << k << "]");
    CHECK(same_bits(a.observer_views[k].z_m, b.observer_views[k].z_m));
    CHECK(a.observer_views[k].has_heading == b.observer_views[k].has_heading);
    CHECK(same_bits(a.observer_views[k].heading_rad, b.observer_views[k].heading_rad));
  }
  REQUIRE(a.client_observers.size() == b.client_observers.size());
  REQUIRE(a.client_observer_views.size() == b.client_observer_views.size());
  for (std::size_t k = 0; k < a.client_observers.size(); ++k) {
    INFO("client_observers[" << k << "]");
    CHECK(same_bits(a.client_observers[k].x_m, b.client_observers[k].x_m));
    CHECK(same_bits(a.client_observers[k].y_m, b.client_observers[k].y_m));
    CHECK(same_bits(a.client_observer_views[k].z_m, b.client_observer_views[k].z_m));
    CHECK(a.client_observer_views[k].has_heading == b.client_observer_views[k].has_heading);
    CHECK(
        same_bits(a.client_observer_views[k].heading_rad, b.client_observer_views[k].heading_rad));
  }
  CHECK(a.spawn == b.spawn);
  REQUIRE(a.orphans.size() == b.orphans.size());
  for (std::size_t k = 0; k < a.orphans.size(); ++k) {
    INFO("orphans[" << k << "]");
    CHECK(a.orphans[k].id == b.orphans[k].id);
    CHECK(a.orphans[k].reason == b.orphans[k].reason);
    CHECK(a.orphans[k].lane == b.orphans[k].lane);
    CHECK(same_bits(a.orphans[k].s_m, b.orphans[k].s_m));
    CHECK(a.orphans[k].resident == b.orphans[k].resident);
    CHECK(a.orphans[k].release_step == b.orphans[k].release_step);
  }
  CHECK(a.retiring_fifo == b.retiring_fifo);
  CHECK(a.population.settings == b.population.settings);
  CHECK(a.population.handoffs == b.population.handoffs);
  CHECK(a.population.interval_origin_us == b.population.interval_origin_us);
  CHECK(a.population.zones == b.population.zones);
  CHECK(a.population.residents.active == b.population.residents.active);
  REQUIRE(a.inbox.size() == b.inbox.size());
  for (std::size_t k = 0; k < a.inbox.size(); ++k) {
    INFO("inbox[" << k << "]");
    CHECK(a.inbox[k].origin == b.inbox[k].origin);
    CHECK(std::string(core::command_name(a.inbox[k].command)) ==
          core::command_name(b.inbox[k].command));
    CHECK(persist::command_args_json(a.inbox[k].command) ==
          persist::command_args_json(b.inbox[k].command));
  }
}

// Runs `sql` on the file directly (as a person with the sqlite3 shell would).
void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* msg = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
  INFO(sql << ": " << (msg ? msg : ""));
  sqlite3_free(msg);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

std::string read_error(const std::string& path, const std::string& name) {
  persist::SnapshotStore store;
  if (auto e = persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store);
      !e.ok()) {
    return e.to_string();
  }
  persist::LoadedCheckpoint lc;
  const persist::StoreError e = store.read_checkpoint(name, lc);
  return e.ok() ? "" : e.to_string();
}

}  // namespace

TEST_CASE("every population-pipeline field of a checkpoint round-trips exactly through SQLite") {
  const core::WorldCheckpoint cp = extreme_checkpoint();
  TempDir dir;
  auto store = open_store(dir.file("pipeline.db"));
  const auto we = store.write_checkpoint("x", "checkpoint", cp, "{}", 0);
  INFO(we.to_string());
  REQUIRE(we.ok());
  persist::LoadedCheckpoint lc;
  const auto re = store.read_checkpoint("x", lc);
  INFO(re.to_string());
  REQUIRE(re.ok());
  CHECK(lc.info.schema_version == persist::kSchemaVersion);
  check_pipeline_fields_equal(cp, lc.checkpoint);

  SECTION("empty collections stay empty (no observer views means default views)") {
    core::WorldCheckpoint empty = cp;
    empty.observer_views.clear();
    empty.spawn = {};
    empty.orphans.clear();
    empty.retiring_fifo.clear();
    empty.population.handoffs.clear();
    empty.routes = {};
    std::fill(empty.pedestrians.route.begin(), empty.pedestrians.route.end(), core::kNoRoute);
    REQUIRE(store.write_checkpoint("empty", "checkpoint", empty, "{}", 0).ok());
    persist::LoadedCheckpoint lc2;
    REQUIRE(store.read_checkpoint("empty", lc2).ok());
    check_pipeline_fields_equal(empty, lc2.checkpoint);
  }
  SECTION("observer views that are not one per observer are refused when written") {
    core::WorldCheckpoint bad = cp;
    bad.observer_views.pop_back();
    const auto e = store.write_checkpoint("bad", "checkpoint", bad, "{}", 0);
    CHECK(e.table == "observer_views");
    CHECK(e.message.find("one per observer") != std::string::npos);
    std::vector<persist::SnapshotInfo> infos;
    REQUIRE(store.list(infos).ok());
    CHECK(infos.size() == 1);  // nothing of "bad" was committed
  }
}

TEST_CASE("the population pipeline is readable with the sqlite3 shell") {
  const core::WorldCheckpoint cp = extreme_checkpoint();
  TempDir dir;
  const std::string path = dir.file("readable.db");
  {
    auto store = open_store(path);
    REQUIRE(store.write_checkpoint("x", "checkpoint", cp, "{}", 0).ok());
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  auto scalar = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    std::string v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
  };
  CHECK(scalar("SELECT group_concat(handle || ':' || state, ' ') FROM spawn_handles WHERE list = "
               "'live'") == "1:0 2:2");
  CHECK(scalar("SELECT count(*) FROM spawn_handles WHERE list = 'recent'") == "3");
  CHECK(scalar("SELECT zone || ',' || lane FROM spawn_handles WHERE handle = 1") ==
        "-1,4294967295");
  CHECK(scalar("SELECT group_concat(id_index || '.' || id_generation, ' ') FROM retiring_fifo") ==
        "9.1 3.2 4294967295.0");
  CHECK(scalar("SELECT group_concat(resident || ':' || from_zone || '>' || to_zone, ' ') FROM "
               "zone_handoffs") == "1:0>2 4294967295:2>1");
  CHECK(scalar("SELECT growth_quota || ',' || recycle_quota || ',' || interval_ms FROM "
               "lifecycle_settings") == "3,5,500");
  CHECK(scalar("SELECT has_heading FROM observer_views WHERE observer_index = 1") == "0");
  CHECK(scalar("SELECT s_m FROM orphans WHERE position = 1") == "17.25");
  CHECK(scalar("SELECT group_concat(kind, ' ') FROM pending_commands") ==
        "spawn_pedestrian cancel_spawn set_client_observers set_lifecycle lifecycle_batch "
        "set_observers");
  CHECK(scalar("SELECT schema_version FROM snapshots") == "13");
  CHECK(
      scalar(
          "SELECT group_concat(observer_index || ':' || has_heading, ' ') FROM client_observers") ==
      "0:1 1:0");
  CHECK(scalar("SELECT group_concat(slot || ':' || offset || '+' || count || '>' || target, ' ') "
               "FROM route_slots") == "0:0+3>3 1:0+0>0 2:3+2>0 3:5+2>1 4:4294967295+0>0");
  CHECK(scalar("SELECT group_concat(lane, ' ') FROM route_lanes") ==
        "0 1 2 4294967295 7 3 2147483648");
  CHECK(scalar("SELECT group_concat(slot, ' ') FROM route_free_slots") == "4 1");
  CHECK(scalar("SELECT group_concat(handle || ':' || route, ' ') FROM spawn_handles WHERE list = "
               "'live'") == "1:4294967295 2:3");
  CHECK(scalar("SELECT hex(substr(route, 1, 8)) FROM pedestrian_columns") == "02000000FEFFFFFF");
  CHECK(
      scalar("SELECT args FROM pending_commands WHERE seq = 0") ==
      R"({"lane":"office.loop","priority":3,"route":["office.loop","office.loop"],"timeout_ms":9,"zone":"office"})");
  sqlite3_close(db);
}

TEST_CASE("a save keeps saveable residents with their zones and the lifecycle settings") {
  const core::Scenario block = largeblock();
  auto w = std::move(core::World::create(block, 6).world);
  for (int k = 0; k < 20; ++k) w->step();
  core::SaveState save = w->capture_save();
  REQUIRE(save.saveable_ids.size() == 24);  // market_vendors
  save.lifecycle = {4, 1, 500, 9};
  save.saveable_zones[0] = "office";  // zone ownership moved, as a handoff would
  // ...and not walking there yet (an active resident's zone must be its saved one).
  std::erase_if(save.active_residents, [&](const core::SaveState::ActiveResident& a) {
    return a.id == save.saveable_ids[0] || a.id == save.saveable_ids[1];
  });
  save.saveable_deceased[1] = 1;  // killed (schema 11): a load keeps it deceased
  TempDir dir;
  auto store = open_store(dir.file("save.db"));
  REQUIRE(store.write_save("s", save, "{}", 0).ok());
  persist::LoadedSave ls;
  const auto e = store.read_save("s", ls);
  INFO(e.to_string());
  REQUIRE(e.ok());
  CHECK(ls.info.schema_version == 13);
  persist::complete_schema1_save(ls, block);  // a current save is left alone
  CHECK(ls.save.saveable_ids == save.saveable_ids);
  CHECK(ls.save.saveable_zones == save.saveable_zones);
  CHECK(ls.save.saveable_deceased == save.saveable_deceased);
  CHECK(ls.save.lifecycle == save.lifecycle);

  auto r = core::World::load_save(block, ls.save);
  if (!r.errors.empty()) FAIL(r.errors[0].path << ": " << r.errors[0].message);
  CHECK(r.world->population().settings() == save.lifecycle);
  const std::int32_t resident = r.world->population().resident_of(save.saveable_ids[0]);
  REQUIRE(resident >= 0);
  CHECK(
      block.zones[r.world->population().residents().zone[static_cast<std::size_t>(resident)]].id ==
      "office");
  const std::int32_t dead = r.world->population().resident_of(save.saveable_ids[1]);
  REQUIRE(dead >= 0);
  CHECK(r.world->population().residents().active[static_cast<std::size_t>(dead)] ==
        core::ResidentStore::kDeceased);

  SECTION("saveable ids and zones that are not parallel are refused when written") {
    save.saveable_zones.pop_back();
    const auto we = store.write_save("bad", save, "{}", 0);
    CHECK(we.table == "save_residents");
    CHECK(we.field == "zone_id");
  }
}

TEST_CASE("bad rows in the population-pipeline tables are refused, naming table, row and field") {
  TempDir dir;
  const std::string path = dir.file("bad.db");
  {
    auto store = open_store(path);
    REQUIRE(store.write_checkpoint("x", "checkpoint", extreme_checkpoint(), "{}", 0).ok());
    core::SaveState save;
    save.scenario_id = "s";
    save.step_us = 100000;
    save.saveable_ids = {{1, 1}, {2, 1}};
    save.saveable_zones = {"market", "office"};
    REQUIRE(store.write_save("s", save, "{}", 0).ok());
  }
  REQUIRE(read_error(path, "x").empty());
  struct Case {
    const char* sql;
    const char* table;
    const char* row;  // a part of the row label
    const char* field;
    const char* message;
  };
  const Case cases[] = {
      {"UPDATE spawn_handles SET state = 9 WHERE handle = 2", "spawn_handles",
       "list='live' position=1", "state", "9 is out of range [0, 8]"},
      {"UPDATE spawn_handles SET failure = 5 WHERE list = 'recent' AND position = 0",
       "spawn_handles", "list='recent' position=0", "failure", "out of range [0, 4]"},
      {"UPDATE spawn_handles SET priority = 4 WHERE handle = 1", "spawn_handles", "position=0",
       "priority", "out of range [0, 3]"},
      {"UPDATE spawn_handles SET zone = -2 WHERE handle = 1", "spawn_handles", "position=0", "zone",
       "out of range"},
      {"UPDATE spawn_handles SET lane = 4294967296 WHERE handle = 1", "spawn_handles", "position=0",
       "lane", "out of range"},
      {"UPDATE spawn_handles SET entity_generation = 'x' WHERE handle = 2", "spawn_handles",
       "position=1", "entity_generation", "expected an integer"},
      {"UPDATE spawn_handles SET position = 3 WHERE handle = 2", "spawn_handles",
       "list='live' position=3", "position", "not contiguous"},
      {"UPDATE spawn_pipeline SET per_state_total = '[1,2,3]'", "spawn_pipeline",
       "snapshot_id=", "per_state_total", "9 counts"},
      {"UPDATE spawn_pipeline SET deferred_by_zone = -1", "spawn_pipeline",
       "snapshot_id=", "deferred_by_zone", "out of range"},
      {"DELETE FROM spawn_pipeline", "spawn_pipeline", "snapshot_id=", "", "missing"},
      {"UPDATE orphans SET s_m = 'far' WHERE position = 0", "orphans", "position=0", "s_m",
       "expected a number"},
      {"UPDATE client_observers SET y_m = 'north' WHERE observer_index = 1", "client_observers",
       "observer_index=1", "y_m", "expected a number"},
      {"UPDATE client_observers SET observer_index = 5 WHERE observer_index = 1",
       "client_observers", "observer_index=5", "observer_index", "not contiguous"},
      {"UPDATE orphans SET reason = 256 WHERE position = 1", "orphans", "position=1", "reason",
       "out of range"},
      {"UPDATE orphans SET id_generation = -1 WHERE position = 1", "orphans", "position=1",
       "id_generation", "out of range"},
      {"DELETE FROM orphans WHERE position = 0", "orphans", "position=1", "position",
       "not contiguous from 0"},
      {"UPDATE retiring_fifo SET position = 7 WHERE position = 2", "retiring_fifo", "position=7",
       "position", "not contiguous"},
      {"UPDATE retiring_fifo SET id_index = 4294967296 WHERE position = 0", "retiring_fifo",
       "position=0", "id_index", "out of range"},
      {"DELETE FROM observer_views WHERE observer_index = 2", "observer_views",
       "snapshot_id=", "observer_index", "2 rows for 3 observers"},
      {"UPDATE observer_views SET heading_rad = x'00' WHERE observer_index = 1", "observer_views",
       "observer_index=1", "heading_rad", "expected a number"},
      {"UPDATE zone_handoffs SET to_zone = -1 WHERE position = 1", "zone_handoffs", "position=1",
       "to_zone", "out of range"},
      {"DELETE FROM lifecycle_settings", "lifecycle_settings", "snapshot_id=", "", "missing"},
      {"UPDATE lifecycle_settings SET interval_ms = 4294967296", "lifecycle_settings",
       "snapshot_id=", "interval_ms", "out of range"},
      {"UPDATE zones SET retiring = -3 WHERE zone_index = 2", "zones", "zone_index=2", "retiring",
       "out of range"},
      {"UPDATE world_state SET faded_total = 1.5", "world_state", "snapshot_id=", "faded_total",
       "expected an integer"},
      {"UPDATE pedestrian_columns SET priority = substr(priority, 2)", "pedestrian_columns",
       "snapshot_id=", "priority", "blob size"},
      {"UPDATE pedestrian_columns SET origin = x''", "pedestrian_columns", "snapshot_id=", "origin",
       "blob size"},
      {"UPDATE pedestrian_columns SET route = substr(route, 5)", "pedestrian_columns",
       "snapshot_id=", "route", "blob size"},
      {"UPDATE spawn_handles SET route = 4294967296 WHERE handle = 2", "spawn_handles",
       "list='live' position=1", "route", "out of range"},
      {"UPDATE spawn_handles SET route = 'none' WHERE handle = 1", "spawn_handles", "position=0",
       "route", "expected an integer"},
      {"UPDATE route_slots SET target = 3 WHERE slot = 2", "route_slots", "slot=2", "target",
       "3 is out of range [0, 2]"},
      {"UPDATE route_slots SET target = 1 WHERE slot = 1", "route_slots", "slot=1", "target",
       "1 is out of range [0, 0]"},
      {"UPDATE route_slots SET offset = 6 WHERE slot = 3", "route_slots", "slot=3", "offset",
       "6 is out of range [0, 5]"},
      {"UPDATE route_slots SET count = 8 WHERE slot = 0", "route_slots", "slot=0", "count",
       "8 is out of range [0, 7]"},
      {"UPDATE route_slots SET offset = -1 WHERE slot = 4", "route_slots", "slot=4", "offset",
       "out of range"},
      {"DELETE FROM route_lanes WHERE position = 6", "route_slots", "slot=3", "offset",
       "5 is out of range [0, 4]"},
      {"DELETE FROM route_slots WHERE slot = 0", "route_slots", "slot=1", "slot",
       "not contiguous from 0"},
      {"UPDATE route_lanes SET lane = 4294967296 WHERE position = 4", "route_lanes", "position=4",
       "lane", "out of range"},
      {"UPDATE route_lanes SET lane = 2.5 WHERE position = 0", "route_lanes", "position=0", "lane",
       "expected an integer"},
      {"UPDATE route_free_slots SET slot = 'one' WHERE position = 1", "route_free_slots",
       "position=1", "slot", "expected an integer"},
      {"UPDATE route_free_slots SET position = 2 WHERE position = 1", "route_free_slots",
       "position=2", "position", "not contiguous"},
      {"UPDATE snapshots SET schema_version = 14", "snapshots", "name='x'", "schema_version",
       "out of range [1, 13]"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.sql) {
      exec_sql(path, c.sql);
      persist::SnapshotStore store;
      REQUIRE(persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store).ok());
      persist::LoadedCheckpoint lc;
      const persist::StoreError e = store.read_checkpoint("x", lc);
      INFO(e.to_string());
      CHECK(e.table == c.table);
      CHECK(e.row.find(c.row) != std::string::npos);
      CHECK(e.field == c.field);
      CHECK(e.message.find(c.message) != std::string::npos);
    }
  }
  SECTION("a missing observer height is refused by SQLite itself") {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "UPDATE observer_views SET z_m = NULL", nullptr, nullptr, nullptr) ==
          SQLITE_CONSTRAINT);
    sqlite3_close(db);
  }
  auto save_error = [&] {
    persist::SnapshotStore store;
    REQUIRE(persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store).ok());
    persist::LoadedSave ls;
    return store.read_save("s", ls);
  };
  SECTION("save_residents") {
    exec_sql(path, "UPDATE save_residents SET id_index = -5 WHERE position = 1");
    const persist::StoreError e = save_error();
    CHECK(e.table == "save_residents");
    CHECK(e.row == "name='s' position=1");
    CHECK(e.field == "id_index");
  }
  SECTION("a save without its lifecycle settings") {
    exec_sql(path,
             "DELETE FROM lifecycle_settings WHERE snapshot_id = (SELECT id FROM snapshots WHERE "
             "name = 's')");
    const persist::StoreError e = save_error();
    CHECK(e.table == "lifecycle_settings");
    CHECK(e.message.find("missing") != std::string::npos);
  }
}

namespace {

// The large block after a spawn request and two despawns near the observer:
// live spawn handles and fading orphans in the checkpoint.
std::unique_ptr<core::World> block_with_pipeline(const core::Scenario& block) {
  auto w = std::move(core::World::create(block, 8).world);
  for (int k = 0; k < 30; ++k) w->step();
  REQUIRE(w->pedestrians().size() >= 2);
  REQUIRE(w->submit({{1, 1}, core::SpawnPedestrian{"market", "", 1, 0, {}}}) ==
          core::SubmitStatus::Queued);
  REQUIRE(w->submit({{1, 2}, core::SpawnPedestrian{"office", "", 2, 0, {}}}) ==
          core::SubmitStatus::Queued);
  // Observers on the despawned pedestrians, so they fade instead of vanishing.
  const core::EntityId a = w->pedestrians().id[0], b = w->pedestrians().id[1];
  std::vector<core::ObserverPoint> at;
  for (const core::EntityId id : {a, b}) {
    const core::EntityReport r = w->describe(id);
    at.push_back({r.pose.x_m, r.pose.y_m});
  }
  REQUIRE(w->submit({{1, 3}, core::SetObservers{at}}) == core::SubmitStatus::Queued);
  w->step();
  REQUIRE(w->submit({{1, 4}, core::DespawnEntity{a}}) == core::SubmitStatus::Queued);
  REQUIRE(w->submit({{1, 5}, core::DespawnEntity{b}}) == core::SubmitStatus::Queued);
  w->step();
  return w;
}

}  // namespace

TEST_CASE(
    "restore refuses population-pipeline rows that break the world's rules (orphan order, live "
    "handle state)") {
  const core::Scenario block = largeblock();
  auto w = block_with_pipeline(block);
  const core::WorldCheckpoint good = w->capture();
  REQUIRE(good.orphans.size() == 2);
  REQUIRE_FALSE(good.spawn.live.empty());
  TempDir dir;
  const std::string path = dir.file("semantic.db");
  {
    auto store = open_store(path);
    REQUIRE(store.write_checkpoint("good", "checkpoint", good, "{}", 0).ok());
  }
  auto restore_path = [&]() -> std::string {
    persist::SnapshotStore store;
    REQUIRE(persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store).ok());
    persist::LoadedCheckpoint lc;
    if (auto e = store.read_checkpoint("good", lc); !e.ok()) return "store: " + e.to_string();
    auto r = core::World::restore(block, lc.checkpoint);
    return r.errors.empty() ? "" : r.errors[0].path + ": " + r.errors[0].message;
  };
  REQUIRE(restore_path().empty());

  SECTION("orphans not sorted by id") {
    exec_sql(path,
             "UPDATE orphans SET position = 9 WHERE position = 0; UPDATE orphans SET position = 0 "
             "WHERE position = 1; "
             "UPDATE orphans SET position = 1 WHERE position = 9;");
    CHECK(restore_path().starts_with("orphans[1].id: not sorted"));
  }
  SECTION("a live spawn handle in a terminal state") {
    exec_sql(path, "UPDATE spawn_handles SET state = 5 WHERE list = 'live' AND position = 0");
    CHECK(restore_path().starts_with("spawn.live[0].state"));
  }
  SECTION("a retiring FIFO entry that is not an orphan") {
    exec_sql(path, "UPDATE retiring_fifo SET id_generation = id_generation + 1 WHERE position = 0");
    CHECK(restore_path().starts_with("retiring_fifo[0]"));
  }
}

TEST_CASE(
    "routes round-trip through SQLite, and bad route rows are refused naming table, row and "
    "field") {
  const core::Scenario block = largeblock();
  auto w = std::move(core::World::create(block, 8).world);
  for (int k = 0; k < 10; ++k) w->step();
  // A walker on a route, two canceled routed spawns (one slot freed, the
  // other reused), and a routed spawn still waiting when the checkpoint is taken.
  REQUIRE(w->submit({{1, 1}, core::SpawnPedestrian{"", "", 1, 0, kBlockRoute}}) ==
          core::SubmitStatus::Queued);
  REQUIRE(w->submit({{1, 2}, core::SpawnPedestrian{"", "", 1, 0, {"office.loop"}}}) ==
          core::SubmitStatus::Queued);
  REQUIRE(w->submit({{1, 3}, core::SpawnPedestrian{"", "", 1, 0, {"market.loop"}}}) ==
          core::SubmitStatus::Queued);
  w->step();
  REQUIRE(w->submit({{1, 4}, core::CancelSpawn{2}}) == core::SubmitStatus::Queued);
  REQUIRE(w->submit({{1, 5}, core::CancelSpawn{3}}) == core::SubmitStatus::Queued);
  for (int k = 0; k < 5; ++k) w->step();
  REQUIRE(w->submit(
              {{1, 6},
               core::SpawnPedestrian{"", "", 0, 0, {"facilities.loop", "x.facilities.market"}}}) ==
          core::SubmitStatus::Queued);
  w->step();
  const core::WorldCheckpoint good = w->capture();
  INFO("route lanes " << good.routes.lanes.size() << ", slots " << good.routes.count.size()
                      << ", free " << good.routes.free_slots.size());
  REQUIRE(good.routes.count.size() == 3);
  REQUIRE(good.routes.free_slots.size() == 1);
  REQUIRE(std::count(good.pedestrians.route.begin(), good.pedestrians.route.end(), core::kNoRoute) +
              1 ==
          static_cast<std::ptrdiff_t>(good.pedestrians.route.size()));
  REQUIRE(std::any_of(good.spawn.live.begin(), good.spawn.live.end(),
                      [](const core::SpawnHandleState& h) { return h.route != core::kNoRoute; }));
  const std::string scenario_json = "{\"id\":\"largeblock\"}";
  TempDir dir;
  const std::string path = dir.file("routes.db");
  {
    auto store = open_store(path);
    REQUIRE(store.write_checkpoint("good", "checkpoint", good, scenario_json, 0).ok());
  }
  auto read = [&](persist::LoadedCheckpoint& lc) {
    persist::SnapshotStore store;
    REQUIRE(persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store).ok());
    return store.read_checkpoint("good", lc);
  };
  // Restores through the persistence worker, which names the table a bad
  // value was read from; "" when the restore succeeds.
  auto worker_restore = [&]() -> std::string {
    std::unique_ptr<persist::PersistWorker> worker;
    REQUIRE(persist::PersistWorker::start(path, block, scenario_json, {}, worker).ok());
    const persist::JobStatus job = worker->submit_restore("good", {});
    worker->drain();
    const auto done = worker->query(job.job_id);
    REQUIRE(done);
    return done->state == persist::JobState::Failed ? done->message : "";
  };
  {
    persist::LoadedCheckpoint lc;
    const auto e = read(lc);
    INFO(e.to_string());
    REQUIRE(e.ok());
    CHECK(lc.checkpoint.routes == good.routes);
    CHECK(lc.checkpoint.pedestrians.route == good.pedestrians.route);
    CHECK(lc.checkpoint.spawn == good.spawn);
    auto r = core::World::restore(block, lc.checkpoint);
    if (!r.errors.empty()) FAIL(r.errors[0].path << ": " << r.errors[0].message);
    CHECK(r.world->digest() == w->digest());
    for (int k = 0; k < 20; ++k) {
      r.world->step();
      w->step();
    }
    CHECK(r.world->digest() == w->digest());
  }
  REQUIRE(worker_restore().empty());

  SECTION("a target beyond its route is refused by the store") {
    exec_sql(path, "UPDATE route_slots SET target = count + 1 WHERE slot = 0");
    persist::LoadedCheckpoint lc;
    const persist::StoreError e = read(lc);
    CHECK(e.table == "route_slots");
    CHECK(e.row.find("slot=0") != std::string::npos);
    CHECK(e.field == "target");
    CHECK(e.message.find("out of range") != std::string::npos);
    CHECK(worker_restore().find("table route_slots, row snapshot_id=1 slot=0, field target:") !=
          std::string::npos);
  }
  struct Case {
    const char* sql;
    const char* core_path;  // World::restore's error path
    const char* message;
  };
  // Structurally fine rows that break the world's rules: World::restore
  // refuses them and the worker names the table, row and field.
  const Case cases[] = {
      {"UPDATE route_lanes SET lane = 99 WHERE position = 1", "routes.lanes[1]", "unknown lane"},
      {"UPDATE route_free_slots SET slot = 0 WHERE position = 0", "routes.free_slots[0]",
       "not a free slot"},
      {"UPDATE spawn_handles SET route = 4294967295 WHERE list = 'live' AND route != 4294967295",
       "routes[", "held by nobody"},
      {"UPDATE spawn_handles SET route = 0 WHERE list = 'live' AND route != 4294967295",
       "spawn.live[", "is held twice"},
  };
  const char* expected_worker[] = {
      "table route_lanes, row name='good' position=1, field lane: unknown lane",
      "table route_free_slots, row name='good' position=0, field slot: not a free slot",
      "table route_slots, row name='good' slot=",
      "table spawn_handles, row name='good' list='live' position=",
  };
  for (std::size_t k = 0; k < std::size(cases); ++k) {
    const Case& c = cases[k];
    DYNAMIC_SECTION(c.sql) {
      exec_sql(path, c.sql);
      persist::LoadedCheckpoint lc;
      const auto e = read(lc);
      INFO(e.to_string());
      REQUIRE(e.ok());
      auto r = core::World::restore(block, lc.checkpoint);
      REQUIRE_FALSE(r.world);
      INFO(r.errors[0].path << ": " << r.errors[0].message);
      CHECK(r.errors[0].path.starts_with(c.core_path));
      CHECK(r.errors[0].message.find(c.message) != std::string::npos);
      const std::string text = worker_restore();
      INFO(text);
      CHECK(text.find(expected_worker[k]) != std::string::npos);
      CHECK(text.find(c.message) != std::string::npos);
    }
  }
}

TEST_CASE("completeness guard on the large block through SQLite with the population pipeline") {
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) +
                                                     "/configs/largeblock.city.json");
  REQUIRE(loaded.ok());
  const core::Scenario block = *loaded.scenario;
  // Ids for the commands that name entities, found by running the same
  // history once: two pedestrians to despawn.
  std::vector<bustle::test::ScriptedCommand> script = {
      {2, core::SetHour{11.5}},
      {2,
       core::SetTimeScale{
           600}},  // a step is 60 game seconds: 12:00 (migrations, handoffs) comes at step ~32
      {5, core::SetObservers{{{80.0, 60.0, 1.5, true, 0.5}, {20.0, 20.0}}}},
      {8, core::SpawnPedestrian{"market", "", 0, 0, {}}},
      {8, core::SpawnPedestrian{"", "office.loop", 2, 1500, {}}},
      {8, core::SpawnPedestrian{"facilities", "", 3, 0, {}}},
      {8, core::SpawnPedestrian{"", "", 1, 0, kBlockRoute}},  // handle 4: a walker on a route
      {8,
       core::SpawnPedestrian{"", "", 1, 0, {"office.loop"}}},  // handle 5: canceled, its slot freed
      {9, core::CancelSpawn{3}},
      {9, core::CancelSpawn{5}},
      {12, core::SpawnPedestrian{"", "", 0, 0, {"facilities.loop"}}},  // reuses the freed slot
      // Client observers (schema 3): joined at 14, changed at 33 (below).
      {14, core::SetClientObservers{{{40.0, -12.5, 3.0, true, 1.25}}}},
      {20, core::SetLifecycle{3, 3, 500, 6}},
  };
  core::EntityId a{2, 1}, b{3, 1};
  {
    auto w = std::move(core::World::create(block, 11).world);
    std::uint32_t request = 0;
    while (w->step_index() < 24) {
      bustle::test::submit_due(*w, script, request);
      w->step();
    }
    REQUIRE(w->pedestrians().size() >= 2);
    a = w->pedestrians().id[0];
    b = w->pedestrians().id[w->pedestrians().size() - 1];
  }
  core::LifecycleOp spawn_op;
  spawn_op.spawn = {"office", "", 1, 0, {"office.loop", "x.office.facilities"}};
  core::LifecycleOp despawn_op;
  despawn_op.kind = core::LifecycleOp::Kind::Despawn;
  despawn_op.id = a;
  script.push_back(
      {33, core::SetClientObservers{{{-7.0, 9.0, 0.0, false, 0.0}, {1.0, 2.0, -0.0, false, 0.0}}}});
  script.push_back({25, core::LifecycleBatch{{spawn_op, despawn_op}}});
  script.push_back({30, core::DespawnEntity{b}});
  TempDir dir;
  auto store = open_store(dir.file("pipeline-guard.db"));
  struct {
    std::size_t live = 0, recent = 0, orphans = 0, handoffs = 0, views = 0, inbox = 0,
                handoff_counts = 0, settings = 0;
    std::size_t walker_routes = 0, handle_routes = 0, free_route_slots = 0, routed_commands = 0;
    std::size_t client_observers = 0;
  } seen;
  bustle::test::check_checkpoint_completeness(
      block, 11, script, 120, {0, 5, 8, 9, 10, 14, 15, 21, 25, 26, 30, 31, 33, 40, 90},
      through_sqlite(store, "p", loaded.text,
                     [&](const core::WorldCheckpoint& cp, const core::WorldCheckpoint& back) {
                       // Beyond the digest chain: every schema-2 field came back as captured
                       // (spawn counters and recent handles, for one, need not feed the digest).
                       check_pipeline_fields_equal(cp, back);
                       seen.live += cp.spawn.live.size();
                       seen.recent += cp.spawn.recent.size();
                       seen.orphans += cp.orphans.size();
                       seen.handoffs += cp.population.handoffs.size();
                       seen.views += cp.observer_views.size();
                       seen.client_observers += cp.client_observers.size();
                       seen.inbox += cp.inbox.size();
                       seen.walker_routes +=
                           std::count_if(cp.pedestrians.route.begin(), cp.pedestrians.route.end(),
                                         [](std::uint32_t r) { return r != core::kNoRoute; });
                       for (const core::SpawnHandleState& h : cp.spawn.live)
                         seen.handle_routes += h.route != core::kNoRoute;
                       seen.free_route_slots += cp.routes.free_slots.size();
                       for (const core::CommandEnvelope& env : cp.inbox) {
                         const auto* sp = std::get_if<core::SpawnPedestrian>(&env.command);
                         const auto* batch = std::get_if<core::LifecycleBatch>(&env.command);
                         seen.routed_commands += (sp != nullptr && !sp->route.empty()) ||
                                                 (batch != nullptr && !batch->ops.empty() &&
                                                  !batch->ops[0].spawn.route.empty());
                       }
                       for (const core::ZoneStatus& z : cp.population.zones)
                         seen.handoff_counts += z.handoffs_started + z.retiring;
                       seen.settings +=
                           cp.population.settings !=
                           core::LifecycleSettings{block.population.growth_quota,
                                                   block.population.recycle_quota,
                                                   block.population.lifecycle_interval_ms,
                                                   block.population.migration_budget};
                     }));
  // The checkpoints above held every kind of schema-2 state at least once.
  INFO("live " << seen.live << ", recent " << seen.recent << ", orphans " << seen.orphans
               << ", handoffs " << seen.handoffs << ", views " << seen.views << ", inbox "
               << seen.inbox << ", zone counts " << seen.handoff_counts << ", settings "
               << seen.settings << ", routes held by walkers " << seen.walker_routes
               << ", by handles " << seen.handle_routes << ", free route slots "
               << seen.free_route_slots << ", routed commands pending " << seen.routed_commands);
  CHECK(seen.live > 0);
  CHECK(seen.recent > 0);
  CHECK(seen.orphans > 0);
  CHECK(seen.handoffs > 0);
  CHECK(seen.views > 0);
  CHECK(seen.client_observers > 0);
  CHECK(seen.inbox > 0);
  CHECK(seen.handoff_counts > 0);
  CHECK(seen.settings > 0);
  CHECK(seen.walker_routes > 0);
  CHECK(seen.handle_routes > 0);
  CHECK(seen.free_route_slots > 0);
  CHECK(seen.routed_commands > 0);
}

TEST_CASE("lane closures round-trip through SQLite and the restored world continues alike") {
  const core::Scenario block = largeblock();
  auto w = std::move(core::World::create(block, 3).world);
  for (int k = 0; k < 40; ++k) w->step();
  std::uint32_t rid = 0;
  for (const char* lane : {"market.loop", "x.market.office"}) {
    REQUIRE(w->submit({core::CommandOrigin{1, ++rid},
                       core::SetLaneClosed{lane, UINT32_MAX, true}}) == core::SubmitStatus::Queued);
  }
  for (int k = 0; k < 300 && w->lane_waiters().empty(); ++k) w->step();
  REQUIRE_FALSE(w->lane_waiters().empty());
  TempDir dir;
  const std::string path = dir.file("lanes.db");
  auto store = open_store(path);
  REQUIRE(store.write_checkpoint("c", "checkpoint", w->capture(), "{}", 0).ok());
  persist::LoadedCheckpoint lc;
  const auto re = store.read_checkpoint("c", lc);
  INFO(re.to_string());
  REQUIRE(re.ok());
  CHECK(lc.checkpoint.closed_lanes == w->closed_lanes());
  CHECK(lc.checkpoint.lane_waiters == w->lane_waiters());
  CHECK(lc.checkpoint.lane_closure == w->lane_closure_counters());
  auto r = core::World::restore(block, lc.checkpoint);
  REQUIRE(r.world);
  for (int k = 0; k < 20; ++k) {
    w->step();
    r.world->step();
    REQUIRE(r.world->digest() == w->digest());
  }
}

namespace {

// The corridor with a garage mouth of 16, 16 dispatches per step, no
// cooldown and 40 requests due before step 1: a batch fills the mouth in the
// first step, which then drains one vehicle per clearance, competing with
// the loop's turnarounds (capacity 18).
core::Scenario mouth_corridor() {
  auto loaded = bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) +
                                                     "/configs/corridor.city.json");
  REQUIRE(loaded.ok());
  core::Scenario s = *loaded.scenario;
  s.vehicle_plan.requests.clear();
  core::GarageSpec& g = s.garages[0];
  g.queue_depth = 40;
  g.dispatch_per_step_max = 16;
  g.cooldown_frames = 0;
  g.mouth_capacity = 16;
  return s;
}

std::vector<bustle::test::ScriptedCommand> mouth_requests() {
  std::vector<bustle::test::ScriptedCommand> script;
  for (int r = 0; r < 40; ++r)
    script.push_back({0, core::GarageRequest{"g0", "m" + std::to_string(r), "sedan", "lane0", r}});
  return script;
}

bool same_mouth(const core::GarageState& a, const core::GarageState& b) {
  return std::equal(a.mouth.begin(), a.mouth.end(), b.mouth.begin(), b.mouth.end(),
                    [](const core::MouthVehicle& x, const core::MouthVehicle& y) {
                      return x.id == y.id && x.ordinal == y.ordinal && x.prototype == y.prototype &&
                             x.request_id == y.request_id;
                    });
}

}  // namespace

TEST_CASE("completeness guard through SQLite with vehicles waiting in a garage mouth") {
  const core::Scenario corridor = mouth_corridor();
  TempDir dir;
  auto store = open_store(dir.file("mouth.db"));
  std::size_t with_mouth = 0;
  const RoundTripCheck check = [&](const core::WorldCheckpoint& sent,
                                   const core::WorldCheckpoint& back) {
    REQUIRE(back.vehicles.garages.size() == 1);
    CHECK(same_mouth(back.vehicles.garages[0], sent.vehicles.garages[0]));
    with_mouth += sent.vehicles.garages[0].mouth.empty() ? 0 : 1;
  };
  bustle::test::check_checkpoint_completeness(corridor, 4, mouth_requests(), 160,
                                              {0, 1, 2, 3, 9, 40, 100},
                                              through_sqlite(store, "m", "{}", check));
  CHECK(with_mouth >= 5);  // steps 1, 2, 3, 9 and 40 hold vehicles in the mouth
}

TEST_CASE("a bad garage_mouth row is refused, naming the table, row and field") {
  const core::Scenario corridor = mouth_corridor();
  auto w = std::move(core::World::create(corridor, 4).world);
  std::uint32_t request = 0;
  for (const auto& c : mouth_requests())
    REQUIRE(w->submit({{1, ++request}, c.command}) == core::SubmitStatus::Queued);
  for (int k = 0; k < 3; ++k) w->step();
  REQUIRE(w->vehicles().garages()[0].mouth.size() == 16);
  TempDir dir;
  const std::string path = dir.file("mouth.db");
  {
    auto store = open_store(path);
    REQUIRE(store.write_checkpoint("x", "checkpoint", w->capture(), "{}", 0).ok());
  }
  const auto read = [&](persist::LoadedCheckpoint& lc) {
    persist::SnapshotStore store;
    REQUIRE(persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store).ok());
    return store.read_checkpoint("x", lc);
  };
  SECTION("the file as written restores to the same digest") {
    persist::LoadedCheckpoint lc;
    REQUIRE(read(lc).ok());
    CHECK(same_mouth(lc.checkpoint.vehicles.garages[0], w->vehicles().garages()[0]));
    auto r = core::World::restore(corridor, lc.checkpoint);
    if (!r.errors.empty()) FAIL(r.errors[0].path << ": " << r.errors[0].message);
    CHECK(r.world->digest() == w->digest());
  }
  struct Case {
    const char* sql;
    const char* row;
    const char* field;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"UPDATE garage_mouth SET position = 20 WHERE position = 3",
       "snapshot_id=1 garage_index=0 position=4", "position", "not contiguous"},
      {"UPDATE garage_mouth SET id_index = -1 WHERE position = 2",
       "snapshot_id=1 garage_index=0 position=2", "id_index", "out of range"},
      {"UPDATE garage_mouth SET id_generation = 0 WHERE position = 5",
       "snapshot_id=1 garage_index=0 position=5", "id_generation", "null entity"},
      {"UPDATE garage_mouth SET garage_index = 1 WHERE position = 15", "snapshot_id=1",
       "garage_index", "unknown garage"},
      {"UPDATE garage_mouth SET prototype = 'sedan' WHERE position = 1",
       "snapshot_id=1 garage_index=0 position=1", "prototype", "expected an integer"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.sql) {
      exec_sql(path, c.sql);
      persist::LoadedCheckpoint lc;
      const persist::StoreError e = read(lc);
      INFO(e.to_string());
      CHECK(e.table == "garage_mouth");
      CHECK(e.row == c.row);
      CHECK(e.field == c.field);
      CHECK(e.message.find(c.message) != std::string::npos);
    }
  }
  SECTION("a row that reads but breaks the state is refused by restore, naming its path") {
    exec_sql(path, "UPDATE garage_mouth SET prototype = 3 WHERE position = 4");
    persist::LoadedCheckpoint lc;
    REQUIRE(read(lc).ok());
    auto r = core::World::restore(corridor, lc.checkpoint);
    REQUIRE_FALSE(r.world);
    CHECK(r.errors[0].path == "garages[0].mouth[4].prototype");
  }
}
