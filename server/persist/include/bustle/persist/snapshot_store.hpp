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
inline constexpr int kSchemaVersion = 13;  // the last migration (0013: vehicles across borders)
// Read-only opening (which cannot migrate) also accepts files of this schema
// or later: migration 0003 only added a table (client_observers), which reads
// as empty for them.
inline constexpr int kReadOnlyMinSchemaVersion = 2;
// Page cache cap per open store (PRAGMA cache_size), in MiB.
inline constexpr int kCacheMiB = 64;

enum class FileKind { Snapshots, Recording };
const char* to_string(FileKind k);

struct StoreError {
  std::string file;
  std::string table;  // may be empty (file-level errors)
  std::string row;    // e.g. "name='nightly'" or "pedestrians[12]"
  std::string field;
  std::string message;
  int sql_code = 0;  // SQLite result code when SQLite reported it (SQLITE_FULL=13, ...)

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
                                             const core::WorldCheckpoint& cp,
                                             const std::string& scenario_json,
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

  // Turns off SQLite's automatic WAL checkpoint for this connection. That
  // checkpoint runs inside whichever commit pushes the WAL past 1000 pages:
  // it copies the whole WAL into the file and fsyncs both, so one commit in
  // every few paid for several (the tail of issue 13's commit times). With
  // it off the owner must call checkpoint_wal() after its writes, or the WAL
  // grows without bound. The persistence worker does (after reporting the
  // job), and so does bustle-bench snapshot.
  StoreError defer_wal_checkpoints();
  // PRAGMA wal_checkpoint(PASSIVE): copies committed WAL frames into the
  // file without waiting for readers; the next commit then reuses the WAL
  // from its start. Committed data is safe either way: this only bounds the WAL.
  StoreError checkpoint_wal();

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
  // Where read_info also puts the snapshot row's scenario, seed and step
  // length (all null: only the SnapshotInfo).
  struct InfoExtra {
    std::string* scenario_json;
    std::uint64_t* seed;
    std::uint32_t* step_us;
  };
  StoreError read_info(Statement& st, SnapshotInfo& info, InfoExtra extra = {}) const;
  // The snapshots row of a checkpoint or keyframe, checked for kind and schema.
  StoreError read_checkpoint_summary(std::int64_t id, LoadedCheckpoint& lc);
  // Deletes any snapshot called `name` (its rows cascade) and inserts the
  // summary row of the new one; id receives its snapshot id. The state's
  // tables are written by the per-subsystem files in src/store/.
  StoreError replace_snapshot_row(const std::string& name, const std::string& kind,
                                  const std::string& scenario_id, const std::string& scenario_json,
                                  std::uint64_t step, std::uint32_t step_us, std::uint64_t seed,
                                  std::uint64_t digest, std::size_t entities,
                                  std::int64_t created_unix_ms, std::int64_t& id);

  Database db_;
  std::string path_;
  FileKind kind_ = FileKind::Snapshots;
  int file_version_ = kSchemaVersion;  // the file's schema (older only when opened read-only)
};

// server_version recorded in every snapshot row.
void set_server_version(std::string version);

}  // namespace bustle::persist
