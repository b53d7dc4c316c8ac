// A file written by schema version 1 (migration 0001 only) is migrated to the
// current schema when opened: its snapshots stay listed, its saves load, its
// checkpoints are refused with a message, and new snapshots round-trip.
#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bustle/core/world.hpp"
#include "bustle/persist/snapshot_store.hpp"

using namespace bustle;
namespace fs = std::filesystem;

namespace {

std::string migration_temp_path(const std::string& name) {
  const fs::path p =
      fs::temp_directory_path() / ("bustle-migrate-" + std::to_string(::getpid()) + "-" + name);
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(p.string() + suffix);
  return p.string();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void exec(sqlite3* db, const std::string& sql) {
  char* msg = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
  INFO(sql.substr(0, 200) << ": " << (msg ? msg : ""));
  sqlite3_free(msg);
  REQUIRE(rc == SQLITE_OK);
}

// Undoes what migrations 0005 onwards added, so a file can be turned back
// into an older version; one list, so a new migration is added once.
void drop_migrations_after_0004(sqlite3* db) {
  exec(db, "DROP TABLE observer_follow");  // 0005's table
  exec(db, "DROP TABLE admission_mask");   // 0006's table
  exec(db, "DROP TABLE prevention");       // 0007's tables
  exec(db, "DROP TABLE prevention_units");
  exec(db, "DROP TABLE corpses");
  exec(db, "DROP TABLE closed_lanes");  // 0008's tables
  exec(db, "DROP TABLE lane_waiters");
  exec(db, "DROP TABLE lane_closure_counters");
  exec(db, "ALTER TABLE spawn_pipeline DROP COLUMN displaced_total");  // 0009's column
  exec(db, "DROP TABLE resident_migrations");                          // 0010's table
  exec(db, "ALTER TABLE pedestrian_columns DROP COLUMN catch_up");     // 0011's columns
  exec(db, "ALTER TABLE save_residents DROP COLUMN deceased");
  exec(db, "DROP TABLE garage_mouth");               // 0012's table
  exec(db, "ALTER TABLE garages DROP COLUMN away");  // 0013's columns
  for (const char* c :
       {"ghost_count", "ghost_id_index", "ghost_id_generation", "ghost_garage", "ghost_route_index",
        "ghost_lane", "ghost_s_m", "ghost_crossing_count", "ghost_crossings"})
    exec(db, std::string("ALTER TABLE vehicle_columns DROP COLUMN ") + c);
}

std::string scalar(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  const unsigned char* text = sqlite3_column_text(st, 0);
  std::string v = text ? reinterpret_cast<const char*>(text) : "NULL";
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

// What a version-1 build left behind: migration 0001, its metadata, a save
// and a checkpoint (the checkpoint's state rows do not matter: it is refused
// before they are read).
void write_version1_file(const std::string& path, const std::string& extra_sql = "") {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  exec(db, "BEGIN");
  exec(db, read_text(std::string(BUSTLE_SOURCE_DIR) + "/schema/migrations/0001_initial.sql"));
  exec(db,
       "INSERT INTO meta VALUES ('magic', 'bustle'), ('file_kind', 'snapshots'), ('created_by', "
       "'0.1.0'), "
       "('schema_version', '1');"
       "INSERT INTO snapshots(id, name, kind, scenario_id, scenario_json, step, step_us, "
       "sim_time_us, seed, digest, "
       "pedestrians, created_unix_ms, server_version) VALUES "
       "(1, 'old-save', 'save', 'test.migrate', '{}', 40, 100000, 4000000, 5, 0, 0, 1, '0.1.0'),"
       "(2, 'old-checkpoint', 'checkpoint', 'test.migrate', '{}', 40, 100000, 4000000, 5, 99, 0, "
       "2, '0.1.0');"
       "INSERT INTO save_state VALUES (1, 12, 25200000000, 2, '[]');");
  exec(db, extra_sql);
  exec(db, "COMMIT");
  exec(db, "PRAGMA user_version=1");
  sqlite3_close(db);
}

core::Scenario migration_city() {
  core::Scenario s;
  s.id = "test.migrate";
  s.lanes = {{"a", core::LaneKind::Sidewalk, {{0, 0}, {30, 0}, {30, 20}}, 1.4, {"b"}},
             {"b", core::LaneKind::Sidewalk, {{30, 20}, {0, 0}}, 1.4, {"a"}}};
  s.pedestrians.count = 20;
  s.entity_capacity = 64;
  // Not the defaults, so a test can tell where a version-1 save's settings came from.
  s.population.growth_quota = 5;
  s.population.recycle_quota = 3;
  s.population.lifecycle_interval_ms = 500;
  s.population.migration_budget = 2;
  return s;
}

}  // namespace

TEST_CASE("a version-1 file is migrated to the current schema when opened") {
  REQUIRE(persist::kSchemaVersion == 13);
  const std::string path = migration_temp_path("v1.db");
  write_version1_file(path);
  REQUIRE(scalar(path, "PRAGMA user_version") == "1");
  {
    persist::SnapshotStore store;
    const auto e = persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store);
    INFO(e.to_string());
    REQUIRE(e.ok());
  }
  CHECK(scalar(path, "PRAGMA user_version") == "13");
  CHECK(scalar(path, "SELECT value FROM meta WHERE key = 'schema_version'") == "13");
  CHECK(scalar(path, "SELECT value FROM meta WHERE key = 'created_by'") == "0.1.0");  // kept
  for (const char* table : {"lifecycle_settings",
                            "zone_handoffs",
                            "observer_views",
                            "spawn_pipeline",
                            "spawn_handles",
                            "orphans",
                            "retiring_fifo",
                            "save_residents",
                            "route_slots",
                            "route_lanes",
                            "route_free_slots",
                            "client_observers",
                            "save_active_residents",
                            "save_observers",
                            "observer_follow",
                            "admission_mask",
                            "prevention",
                            "prevention_units",
                            "corpses",
                            "closed_lanes",
                            "lane_waiters",
                            "lane_closure_counters",
                            "resident_migrations",
                            "garage_mouth"}) {
    INFO(table);
    CHECK(scalar(path, std::string(
                           "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '") +
                           table + "'") == "1");
  }
  CHECK(scalar(path, "SELECT group_concat(schema_version) FROM snapshots") == "1,1");
  CHECK(scalar(path,
               "SELECT count(*) FROM pragma_table_info('zones') WHERE name IN "
               "('handoffs_started', 'handoffs_accepted', 'handoffs_returned', 'retiring')") ==
        "4");
  CHECK(scalar(path,
               "SELECT count(*) FROM pragma_table_info('pedestrian_columns') WHERE name IN "
               "('priority', 'origin', 'route')") == "3");
  CHECK(scalar(path,
               "SELECT count(*) FROM pragma_table_info('spawn_handles') WHERE name = 'route'") ==
        "1");
  CHECK(scalar(path,
               "SELECT count(*) FROM pragma_table_info('spawn_pipeline') WHERE name = "
               "'displaced_total'") == "1");  // migration 0009

  persist::SnapshotStore store;
  REQUIRE(persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store)
              .ok());  // idempotent
  REQUIRE(store.db().integrity_check().ok());

  SECTION("old snapshots stay listed, with the schema they were written with") {
    std::vector<persist::SnapshotInfo> infos;
    REQUIRE(store.list(infos).ok());
    REQUIRE(infos.size() == 2);
    CHECK(infos[0].name == "old-save");
    CHECK(infos[0].schema_version == 1);
    CHECK(infos[1].schema_version == 1);
    bool found = false;
    REQUIRE(store.remove("old-checkpoint", found).ok());
    CHECK(found);
  }
  SECTION("a version-1 checkpoint is refused with a message naming the schema version") {
    persist::LoadedCheckpoint lc;
    const auto e = store.read_checkpoint("old-checkpoint", lc);
    CHECK(e.table == "snapshots");
    CHECK(e.row == "name='old-checkpoint'");
    CHECK(e.field == "schema_version");
    CHECK(e.message.find("schema version 1") != std::string::npos);
  }
  SECTION(
      "a version-1 save loads with the scenario's lifecycle settings and no saveable residents") {
    persist::LoadedSave ls;
    const auto e = store.read_save("old-save", ls);
    INFO(e.to_string());
    REQUIRE(e.ok());
    CHECK(ls.info.schema_version == 1);
    CHECK(ls.save.saveable_ids.empty());
    CHECK(ls.save.saveable_zones.empty());
    CHECK(ls.save.pedestrian_target == 12);
    CHECK(ls.save.day_us == 25'200'000'000ull);
    persist::complete_schema1_save(ls, migration_city());
    CHECK(ls.save.lifecycle == core::LifecycleSettings{5, 3, 500, 2});
    auto r = core::World::load_save(migration_city(), ls.save);
    if (!r.errors.empty()) FAIL(r.errors[0].path << ": " << r.errors[0].message);
    CHECK(r.world->step_index() == 40);
    CHECK(r.world->population().settings() == ls.save.lifecycle);
  }
  SECTION("new snapshots in a migrated file round-trip and restore") {
    auto w = std::move(core::World::create(migration_city(), 5).world);
    for (int k = 0; k < 20; ++k) w->step();
    // A walker on a route: the route column added to pedestrian_columns by
    // ALTER TABLE holds it like the columns of a new file.
    REQUIRE(w->submit({{1, 1}, core::SpawnPedestrian{"", "", 1, 0, {"a", "b", "a"}}}) ==
            core::SubmitStatus::Queued);
    for (int k = 0; k < 5; ++k) w->step();
    REQUIRE(w->routes().live() == 1);
    REQUIRE(store.write_checkpoint("new", "checkpoint", w->capture(), "{}", 0).ok());
    REQUIRE(store.write_save("new-save", w->capture_save(), "{}", 0).ok());
    persist::LoadedCheckpoint lc;
    REQUIRE(store.read_checkpoint("new", lc).ok());
    CHECK(lc.info.schema_version == 13);
    auto r = core::World::restore(migration_city(), lc.checkpoint);
    if (!r.errors.empty()) FAIL(r.errors[0].path << ": " << r.errors[0].message);
    CHECK(r.world->digest() == w->digest());
    CHECK(r.world->routes().state() == w->routes().state());
    persist::LoadedSave ls;
    REQUIRE(store.read_save("new-save", ls).ok());
    CHECK(ls.save.lifecycle == w->population().settings());
  }
  store = persist::SnapshotStore();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
}

// A version-2 file is a version-3 file without migration 0003 (the
// client_observers table): built here by writing with this build and taking
// 0003 back out, as a version-2 build would have left it.
TEST_CASE("a version-2 checkpoint restores after migration 0003, with no client observers") {
  const std::string path = migration_temp_path("v2.db");
  auto w = std::move(core::World::create(migration_city(), 9).world);
  for (int k = 0; k < 15; ++k) w->step();
  {
    persist::SnapshotStore store;
    REQUIRE(persist::SnapshotStore::open(path, persist::FileKind::Snapshots, true, store).ok());
    REQUIRE(store.write_checkpoint("v2", "checkpoint", w->capture(), "{}", 0).ok());
  }
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    exec(db, "DROP TABLE client_observers");
    exec(db, "DROP TABLE save_active_residents");  // 0004's tables: a version-2 file has none
    exec(db, "DROP TABLE save_observers");
    drop_migrations_after_0004(db);
    exec(db, "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
    exec(db, "UPDATE snapshots SET schema_version = 2");
    exec(db, "PRAGMA user_version=2");
    sqlite3_close(db);
  }
  REQUIRE(scalar(path, "PRAGMA user_version") == "2");
  {
    // Read-only (bustle-replay): not migrated, and still readable, because
    // 0003 only added a table.
    persist::SnapshotStore ro;
    const auto oe = persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, ro,
                                                 /*read_only=*/true);
    INFO(oe.to_string());
    REQUIRE(oe.ok());
    persist::LoadedCheckpoint lc;
    const auto re = ro.read_checkpoint("v2", lc);
    INFO(re.to_string());
    REQUIRE(re.ok());
    CHECK(lc.checkpoint.client_observers.empty());
    auto r = core::World::restore(migration_city(), lc.checkpoint);
    if (!r.errors.empty()) FAIL(r.errors[0].path << ": " << r.errors[0].message);
    CHECK(r.world->digest() == w->digest());
  }
  REQUIRE(scalar(path, "PRAGMA user_version") == "2");
  persist::SnapshotStore store;
  const auto e = persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store);
  INFO(e.to_string());
  REQUIRE(e.ok());
  CHECK(scalar(path, "PRAGMA user_version") == "13");
  persist::LoadedCheckpoint lc;
  const auto re = store.read_checkpoint("v2", lc);
  INFO(re.to_string());
  REQUIRE(re.ok());
  CHECK(lc.info.schema_version == 2);
  CHECK(lc.checkpoint.client_observers.empty());
  auto r = core::World::restore(migration_city(), lc.checkpoint);
  if (!r.errors.empty()) FAIL(r.errors[0].path << ": " << r.errors[0].message);
  // An empty client-observer set adds nothing to the digest: the stored one holds.
  CHECK(r.world->digest() == w->digest());
  w->step();
  r.world->step();
  CHECK(r.world->digest() == w->digest());
  store = persist::SnapshotStore();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
}

TEST_CASE(
    "a version-1 file is not migrated read-only, and a failing migration leaves it at version 1") {
  SECTION("read-only") {
    const std::string path = migration_temp_path("ro.db");
    write_version1_file(path);
    persist::SnapshotStore store;
    const auto e = persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store,
                                                /*read_only=*/true);
    CHECK(e.field == "schema_version");
    CHECK(e.message.find("cannot migrate") != std::string::npos);
    CHECK(scalar(path, "PRAGMA user_version") == "1");
    fs::remove(path);
  }
  SECTION("a migration that fails halfway is rolled back as a whole") {
    // A table 0002 wants to create already exists: the migration fails after
    // its ALTER TABLE statements ran; none of them may survive.
    const std::string path = migration_temp_path("clash.db");
    write_version1_file(path, "CREATE TABLE orphans (x INTEGER);");
    persist::SnapshotStore store;
    const auto e = persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store);
    CHECK_FALSE(e.ok());
    CHECK(e.message.find("migration 2") != std::string::npos);
    store = persist::SnapshotStore();
    CHECK(scalar(path, "PRAGMA user_version") == "1");
    CHECK(scalar(path, "SELECT value FROM meta WHERE key = 'schema_version'") == "1");
    CHECK(
        scalar(
            path,
            "SELECT count(*) FROM pragma_table_info('snapshots') WHERE name = 'schema_version'") ==
        "0");
    CHECK(scalar(path, "SELECT count(*) FROM sqlite_master WHERE name = 'spawn_handles'") == "0");
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  }
}

// A version-3 file is a current file without migration 0004 (the save's
// active set and observers): built the same way. Its save loads after the
// migration with no active set (the lifecycle regrows it) and the scenario's
// observers, its checkpoint restores to the same digest, and read-only
// opening (which cannot migrate) reads both too.
TEST_CASE("a version-3 save and checkpoint load after migration 0004, with no saved active set") {
  const std::string path = migration_temp_path("v3.db");
  auto w = std::move(core::World::create(migration_city(), 11).world);
  for (int k = 0; k < 12; ++k) w->step();
  core::SaveState save = w->capture_save();
  save.active_residents.push_back({{1, 1}, "z", "a", 1.5});  // dropped with 0004's tables below
  {
    persist::SnapshotStore store;
    REQUIRE(persist::SnapshotStore::open(path, persist::FileKind::Snapshots, true, store).ok());
    REQUIRE(store.write_checkpoint("cp3", "checkpoint", w->capture(), "{}", 0).ok());
    REQUIRE(store.write_save("save3", save, "{}", 0).ok());
  }
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    exec(db, "DROP TABLE save_active_residents");
    exec(db, "DROP TABLE save_observers");
    drop_migrations_after_0004(db);
    exec(db, "UPDATE meta SET value = '3' WHERE key = 'schema_version'");
    exec(db, "UPDATE snapshots SET schema_version = 3");
    exec(db, "PRAGMA user_version=3");
    sqlite3_close(db);
  }
  const auto check_file = [&](persist::SnapshotStore& store) {
    persist::LoadedSave ls;
    const auto se = store.read_save("save3", ls);
    INFO(se.to_string());
    REQUIRE(se.ok());
    CHECK(ls.info.schema_version == 3);
    CHECK(ls.save.active_residents.empty());
    CHECK_FALSE(ls.save.has_observers);
    CHECK(ls.save.lifecycle == save.lifecycle);
    CHECK(ls.save.saveable_ids == save.saveable_ids);
    CHECK(ls.save.garage_vehicle_ordinals == save.garage_vehicle_ordinals);
    persist::LoadedCheckpoint lc;
    const auto ce = store.read_checkpoint("cp3", lc);
    INFO(ce.to_string());
    REQUIRE(ce.ok());
    auto r = core::World::restore(migration_city(), lc.checkpoint);
    if (!r.errors.empty()) FAIL(r.errors[0].path << ": " << r.errors[0].message);
    CHECK(r.world->digest() == w->digest());
  };
  {
    persist::SnapshotStore ro;
    const auto oe = persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, ro,
                                                 /*read_only=*/true);
    INFO(oe.to_string());
    REQUIRE(oe.ok());
    check_file(ro);
  }
  REQUIRE(scalar(path, "PRAGMA user_version") == "3");
  persist::SnapshotStore store;
  const auto e = persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store);
  INFO(e.to_string());
  REQUIRE(e.ok());
  CHECK(scalar(path, "PRAGMA user_version") == "13");
  check_file(store);
  store = persist::SnapshotStore();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
}
