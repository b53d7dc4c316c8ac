// The SQLite snapshot store: named checkpoints and saves in one file, plus the
// tables a session recording uses (schema/migrations/*.sql, DESIGN §5).
//
// Opening a file applies the numbered migrations in one transaction, turns on
// WAL, and checks the magic and schema version, so a foreign or newer file is
// refused with a message naming it. Every write is one transaction: a crash at
// any point leaves the previous snapshots intact. Reads run PRAGMA quick_check
// and decode every blob with size checks; errors name file, table, row, field.
//
// Not thread-safe: one store per thread (the persistence worker owns its own).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bustle/core/checkpoint.hpp"
#include "bustle/persist/sqlite.hpp"

namespace bustle::persist {

inline constexpr const char* kMagic = "bustle";
inline constexpr int kSchemaVersion = 3;
// Read-only opening (which cannot migrate) also accepts files of this schema
// or later: migration 0003 only added a table (client_observers), which reads
// as empty for them.
inline constexpr int kReadOnlyMinSchemaVersion = 2;

enum class FileKind { Snapshots, Recording };
const char* to_string(FileKind k);

struct StoreError {
  std::string file;
  std::string table;    // may be empty (file-level errors)
  std::string row;      // e.g. "name='nightly'" or "pedestrians[12]"
  std::string field;
  std::string message;
  int sql_code = 0;     // SQLite result code when SQLite reported it (SQLITE_FULL=13, ...)

  bool ok() const { return message.empty(); }
  std::string to_string() const;
};

struct SnapshotInfo {
  std::int64_t id = 0;
  std::string name;
  std::string kind;  // checkpoint | save | keyframe
  std::string scenario_id;
  std::uint64_t step = 0;
  std::uint64_t sim_time_us = 0;
  std::uint64_t digest = 0;
  std::uint32_t pedestrians = 0;
  std::int64_t created_unix_ms = 0;
  int schema_version = kSchemaVersion;  // schema the snapshot was written with
};

struct LoadedCheckpoint {
  SnapshotInfo info;
  std::string scenario_json;
  core::WorldCheckpoint checkpoint;
};

struct LoadedSave {
  SnapshotInfo info;
  std::string scenario_json;
  core::SaveState save;
};

// A save written with schema version 1 predates runtime lifecycle settings and
// saveable residents: the world it came from ran with the scenario's settings.
// Sets save.lifecycle from `scenario` for such a save (saveable_ids and
// saveable_zones stay empty); leaves a current save untouched.
void complete_schema1_save(LoadedSave& ls, const core::Scenario& scenario);

class SnapshotStore {
 public:
  // Opens (creating and migrating when `create`) and validates the file.
  // read_only: never writes (no migration, no journal change), for verifying
  // files on read-only media; a schema older than kReadOnlyMinSchemaVersion
  // is then an error.
  static StoreError open(const std::string& path, FileKind kind, bool create, SnapshotStore& out,
                         bool read_only = false);

  // Writes (or atomically replaces) a snapshot called `name`. kind is
  // "checkpoint" or "keyframe". Returns the new snapshot id in *id_out.
  StoreError write_checkpoint(const std::string& name, const std::string& kind,
                              const core::WorldCheckpoint& cp, const std::string& scenario_json,
                              std::int64_t created_unix_ms, std::int64_t* id_out = nullptr);
  // The same, inside a transaction the caller owns (the recorder batches a
  // keyframe with the ticks around it).
  StoreError write_checkpoint_in_transaction(const std::string& name, const std::string& kind,
                                             const core::WorldCheckpoint& cp, const std::string& scenario_json,
                                             std::int64_t created_unix_ms, std::int64_t* id_out);
  StoreError write_save(const std::string& name, const core::SaveState& save,
                        const std::string& scenario_json, std::int64_t created_unix_ms);

  // Reads and structurally validates; semantic validation is World::restore.
  // Each read first runs PRAGMA quick_check over the whole file, unless the
  // caller already checked a file opened read-only (see below).
  StoreError read_checkpoint(const std::string& name, LoadedCheckpoint& out);
  StoreError read_checkpoint_by_id(std::int64_t id, LoadedCheckpoint& out);
  StoreError read_save(const std::string& name, LoadedSave& out);

  StoreError list(std::vector<SnapshotInfo>& out, bool include_keyframes = false);
  // found=false when no snapshot has that name (not an error).
  StoreError remove(const std::string& name, bool& found);

  Database& db() { return db_; }
  const std::string& path() const { return path_; }

  // For a file opened read-only whose quick_check the caller has already run
  // (RecordingReader at open): checkpoint reads skip their own whole-file
  // check, which a replay seeking many keyframes would otherwise repeat.
  void skip_quick_check_on_read() { quick_check_on_read_ = false; }

  // Test hook: caps the file at `pages` pages (PRAGMA max_page_count), so the
  // next write that needs more fails with SQLITE_FULL exactly like a full disk.
  StoreError set_max_page_count(std::int64_t pages);

 private:
  bool quick_check_on_read_ = true;
  StoreError error(std::string table, std::string row, std::string field, std::string message,
                   int code = 0) const;
  StoreError sql_error(const SqlError& e, std::string table, std::string row = {}) const;
  StoreError read_info(Statement& st, SnapshotInfo& info) const;
  // Deletes any snapshot called `name` (its rows cascade) and inserts the
  // summary row of the new one; id receives its snapshot id.
  StoreError replace_snapshot_row(const std::string& name, const std::string& kind, const std::string& scenario_id,
                                  const std::string& scenario_json, std::uint64_t step, std::uint32_t step_us,
                                  std::uint64_t seed, std::uint64_t digest, std::size_t entities,
                                  std::int64_t created_unix_ms, std::int64_t& id);
  StoreError write_vehicles(std::int64_t id, const core::VehicleCheckpoint& v);
  StoreError read_vehicles(std::int64_t id, const std::string& row, core::VehicleCheckpoint& v);
  StoreError write_population(std::int64_t id, const core::PopulationCheckpoint& p);
  // Steps to the one row of a per-snapshot table (missing: an error).
  StoreError one_row(const char* table, const std::string& columns, std::int64_t id, const std::string& row,
                     Statement& st);
  // Steps to the one row of a per-snapshot column table; n = its count column.
  StoreError column_row(const char* table, std::int64_t id, const std::string& row, Statement& st, std::size_t& n);
  StoreError read_population(std::int64_t id, const std::string& row, core::PopulationCheckpoint& p);
  // Reads the rows of a per-snapshot list table (optionally narrowed by
  // `filter`, an SQL condition) ordered by `key`, which must run 0, 1, 2, ...;
  // the callback reads one row (column 0 is the key, `columns` follow) and
  // gets its label, e.g. "snapshot_id=3 position=2", for its errors.
  using RowCallback = std::function<StoreError(const Statement&, const std::string&)>;
  StoreError read_rows(const char* table, const char* key, const std::string& columns, const std::string& filter,
                       std::int64_t id, const std::string& row, const RowCallback& read_row);
  StoreError write_lifecycle(std::int64_t id, const core::LifecycleSettings& s);
  StoreError read_lifecycle(std::int64_t id, const std::string& row, core::LifecycleSettings& s);
  // Schema 2: spawn pipeline, orphan set, retiring FIFO, observer views.
  StoreError write_pipeline(std::int64_t id, const core::WorldCheckpoint& cp);
  StoreError read_pipeline(std::int64_t id, const std::string& row, core::WorldCheckpoint& cp);
  // Schema 2: the shared route buffer (route_slots, route_lanes, route_free_slots).
  StoreError write_routes(std::int64_t id, const core::RouteTableState& r);
  StoreError read_routes(std::int64_t id, const std::string& row, core::RouteTableState& r);
  // A per-snapshot list of u32 values: (snapshot_id, position, value).
  StoreError write_u32_rows(const char* table, std::int64_t id, const std::vector<std::uint32_t>& values);
  StoreError read_u32_rows(const char* table, const char* column, std::int64_t id, const std::string& row,
                           std::vector<std::uint32_t>& out);
  StoreError write_save_residents(std::int64_t id, const core::SaveState& save);
  StoreError read_save_residents(std::int64_t id, const std::string& row, core::SaveState& save);

  Database db_;
  std::string path_;
  FileKind kind_ = FileKind::Snapshots;
  int file_version_ = kSchemaVersion;  // the file's schema (older only when opened read-only)
};

// server_version recorded in every snapshot row.
void set_server_version(std::string version);

}  // namespace bustle::persist
