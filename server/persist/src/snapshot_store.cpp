// The SQLite snapshot store (snapshot_store.hpp): opening and migrating a
// file, listing and removing snapshots, and one transaction per snapshot
// written; the tables themselves are in store/.
#include "bustle/persist/snapshot_store.hpp"

#include <sqlite3.h>

#include <mutex>

#include "migrations.hpp"
#include "store/tables.hpp"

namespace bustle::persist {
namespace {

std::mutex g_version_mu;
std::string g_server_version = "unknown";

std::string server_version() {
  std::lock_guard lock(g_version_mu);
  return g_server_version;
}

// The summary columns of snapshots every read starts from.
const store::TableColumns kSnapshots{
    "snapshots",
    {"id", "name", "kind", "scenario_id", "scenario_json", "step", "step_us", "sim_time_us", "seed",
     "digest", "pedestrians", "created_unix_ms", "server_version", "schema_version"}};

std::string info_sql(std::string_view where) {
  return "SELECT " + kSnapshots.list() + " FROM snapshots " + std::string(where);
}

// Applies the migrations after `version` in one transaction, and for a new
// file (version 0) writes its magic, kind and creator.
StoreError apply_migrations(store::Tables& t, std::int64_t version, FileKind kind) {
  Database& db = t.db();
  Transaction tx(db);
  if (!tx.begin_error().ok()) return t.sql_error(tx.begin_error(), "");
  for (const Migration& m : migrations()) {
    if (m.version <= version) continue;
    if (SqlError e = db.exec(m.sql, "migration " + std::to_string(m.version)); !e.ok())
      return t.sql_error(e, "");
  }
  if (version == 0) {
    SqlError e3;
    Statement ins = db.prepare("INSERT INTO meta(key, value) VALUES (?1, ?2)", e3);
    if (!e3.ok()) return t.sql_error(e3, "meta");
    for (auto [k, v] : {std::pair<std::string, std::string>{"magic", kMagic},
                        {"file_kind", to_string(kind)},
                        {"created_by", server_version()}}) {
      ins.reset();
      ins.bind_text(1, k).bind_text(2, v);
      if (SqlError e4 = ins.run(); !e4.ok()) return t.sql_error(e4, "meta");
    }
  }
  if (SqlError e = db.exec("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', '" +
                           std::to_string(kSchemaVersion) + "')");
      !e.ok()) {
    return t.sql_error(e, "meta");
  }
  if (SqlError e = db.exec("PRAGMA user_version=" + std::to_string(kSchemaVersion)); !e.ok())
    return t.sql_error(e, "");
  if (SqlError e = tx.commit(); !e.ok()) return t.sql_error(e, "");
  return {};
}

// The magic, schema version and file kind in meta, against the file and `kind`.
StoreError check_meta(store::Tables& t, int file_version, FileKind kind) {
  Database& db = t.db();
  SqlError e5;
  Statement meta = db.prepare(
      "SELECT key, value FROM meta WHERE key IN ('magic', 'file_kind', 'schema_version')", e5);
  if (!e5.ok()) return t.error("meta", "", "", "cannot read metadata: " + e5.message, e5.code);
  std::string magic, file_kind, schema_version;
  while (meta.step()) {
    const std::string k = meta.column_text(0);
    if (k == "magic") magic = meta.column_text(1);
    if (k == "file_kind") file_kind = meta.column_text(1);
    if (k == "schema_version") schema_version = meta.column_text(1);
  }
  if (!meta.error().ok()) return t.error("meta", "", "", meta.error().message, meta.error().code);
  if (magic != kMagic)
    return t.error("meta", "key='magic'", "value",
                   "wrong magic '" + magic + "' (not a Bustle file)");
  if (schema_version != std::to_string(file_version)) {
    return t.error("meta", "key='schema_version'", "value",
                   "schema version '" + schema_version + "' does not match PRAGMA user_version " +
                       std::to_string(file_version));
  }
  if (file_kind != to_string(kind)) {
    return t.error("meta", "key='file_kind'", "value",
                   "file is a " + file_kind + " file, expected a " + to_string(kind) + " file");
  }
  return {};
}

}  // namespace

namespace store {
std::vector<const TableColumns*> all_tables() {
  std::vector<const TableColumns*> out{&kSnapshots};
  for (const auto& part : {world_tables(), population_tables(), pipeline_tables(), vehicle_tables(),
                           save_tables(), prevention_tables()}) {
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}
}  // namespace store

void complete_schema1_save(LoadedSave& ls, const core::Scenario& scenario) {
  if (ls.info.schema_version >= 2) return;
  const core::PopulationSettings& p = scenario.population;
  ls.save.lifecycle = {p.growth_quota, p.recycle_quota, p.lifecycle_interval_ms,
                       p.migration_budget};
}

void set_server_version(std::string version) {
  std::lock_guard lock(g_version_mu);
  g_server_version = std::move(version);
}

const char* to_string(FileKind k) {
  return k == FileKind::Snapshots ? "snapshots" : "recording";
}

std::string StoreError::to_string() const {
  std::string s = file;
  if (!table.empty()) s += ": table " + table;
  if (!row.empty()) s += ", row " + row;
  if (!field.empty()) s += ", field " + field;
  return s + ": " + message;
}

StoreError SnapshotStore::error(std::string table, std::string row, std::string field,
                                std::string message, int code) const {
  return StoreError{path_, std::move(table), std::move(row), std::move(field), std::move(message),
                    code};
}

StoreError SnapshotStore::sql_error(const SqlError& e, std::string table, std::string row) const {
  return error(std::move(table), std::move(row), "", e.message, e.code);
}

StoreError SnapshotStore::open(const std::string& path, FileKind kind, bool create,
                               SnapshotStore& out, bool read_only) {
  SnapshotStore s;
  s.path_ = path;
  s.kind_ = kind;
  const Database::Mode mode = read_only ? Database::Mode::ReadOnly
                              : create  ? Database::Mode::ReadWriteCreate
                                        : Database::Mode::ReadWrite;
  if (SqlError e = Database::open(path, mode, s.db_); !e.ok()) {
    return StoreError{path, "", "", "", e.message, e.code};
  }
  // Reading the header is the first real I/O: a file that is not SQLite fails here.
  SqlError err;
  Statement uv = s.db_.prepare("PRAGMA user_version", err);
  if (!err.ok() || !uv.step()) {
    const SqlError& e = err.ok() ? uv.error() : err;
    return s.error("", "", "", "not a readable SQLite database: " + e.message, e.code);
  }
  const std::int64_t version = uv.column_i64(0);
  uv = Statement();
  if (version > kSchemaVersion) {
    return s.error("meta", "", "schema_version",
                   "file has schema version " + std::to_string(version) +
                       ", this build supports up to " + std::to_string(kSchemaVersion));
  }
  if (read_only && version < kReadOnlyMinSchemaVersion) {
    return s.error("meta", "", "schema_version",
                   "file has schema version " + std::to_string(version) +
                       "; opening read-only cannot migrate it to " +
                       std::to_string(kSchemaVersion));
  }
  s.file_version_ = read_only ? static_cast<int>(version) : kSchemaVersion;
  if (!read_only) {
    if (SqlError e = s.db_.exec("PRAGMA journal_mode=WAL", "enable WAL"); !e.ok())
      return s.sql_error(e, "");
    s.db_.exec("PRAGMA synchronous=NORMAL");
  }
  // Page cache up to kCacheMiB (grows only as used): the default 2 MiB is
  // smaller than one checkpoint at 100 000 agents, so a commit spilled dirty
  // pages into the WAL mid-transaction and a restore re-read pages evicted by
  // its own quick_check.
  s.db_.exec("PRAGMA cache_size=-" + std::to_string(kCacheMiB * 1024));
  s.db_.exec("PRAGMA foreign_keys=ON");

  if (version == 0) {
    // Empty file (just created) or a foreign SQLite file without our version.
    SqlError e2;
    Statement tables = s.db_.prepare("SELECT count(*) FROM sqlite_master", e2);
    if (!e2.ok() || !tables.step())
      return s.sql_error(e2.ok() ? tables.error() : e2, "sqlite_master");
    if (tables.column_i64(0) != 0) {
      return s.error("meta", "", "magic",
                     "not a Bustle file (tables present but no Bustle schema version)");
    }
    if (!create) return s.error("", "", "", "file is empty (no Bustle schema)");
  }
  store::Tables t(s.db_, path, s.file_version_);
  if (!read_only && version < kSchemaVersion) {
    if (StoreError e = apply_migrations(t, version, kind); !e.ok()) return e;
  }
  if (StoreError e = check_meta(t, s.file_version_, kind); !e.ok()) return e;
  out = std::move(s);
  return {};
}

StoreError SnapshotStore::defer_wal_checkpoints() {
  if (SqlError e = db_.exec("PRAGMA wal_autocheckpoint=0"); !e.ok()) return sql_error(e, "");
  return {};
}

StoreError SnapshotStore::checkpoint_wal() {
  if (SqlError e = db_.exec("PRAGMA wal_checkpoint(PASSIVE)", "WAL checkpoint"); !e.ok())
    return sql_error(e, "");
  return {};
}

StoreError SnapshotStore::set_max_page_count(std::int64_t pages) {
  if (SqlError e = db_.exec("PRAGMA max_page_count=" + std::to_string(pages)); !e.ok())
    return sql_error(e, "");
  return {};
}

StoreError SnapshotStore::write_checkpoint(const std::string& name, const std::string& kind,
                                           const core::WorldCheckpoint& cp,
                                           const std::string& scenario_json,
                                           std::int64_t created_unix_ms, std::int64_t* id_out) {
  Transaction tx(db_);
  if (!tx.begin_error().ok()) return sql_error(tx.begin_error(), "snapshots");
  std::int64_t id = 0;
  if (StoreError e =
          write_checkpoint_in_transaction(name, kind, cp, scenario_json, created_unix_ms, &id);
      !e.ok()) {
    return e;
  }
  if (SqlError e = tx.commit(); !e.ok()) return sql_error(e, "snapshots", "name='" + name + "'");
  if (id_out != nullptr) *id_out = id;
  return {};
}

StoreError SnapshotStore::replace_snapshot_row(const std::string& name, const std::string& kind,
                                               const std::string& scenario_id,
                                               const std::string& scenario_json, std::uint64_t step,
                                               std::uint32_t step_us, std::uint64_t seed,
                                               std::uint64_t digest, std::size_t entities,
                                               std::int64_t created_unix_ms, std::int64_t& id) {
  SqlError err;
  Statement del =
      db_.prepare("DELETE FROM snapshots WHERE name = ?1", err);  // cascades to its state rows
  if (!err.ok()) return sql_error(err, "snapshots");
  del.bind_text(1, name);
  if (SqlError e = del.run(); !e.ok()) return sql_error(e, "snapshots", "name='" + name + "'");
  // id is the row id SQLite assigns (NULL asks for the next one).
  store::Insert ins(db_, kSnapshots, err);
  if (!err.ok()) return sql_error(err, "snapshots");
  ins.text("name", name)
      .text("kind", kind)
      .text("scenario_id", scenario_id)
      .text("scenario_json", scenario_json);
  ins.u64("step", step)
      .i64("step_us", step_us)
      .u64("sim_time_us", step * step_us)
      .u64("seed", seed);
  ins.u64("digest", digest).i64("pedestrians", static_cast<std::int64_t>(entities));
  ins.i64("created_unix_ms", created_unix_ms).text("server_version", server_version());
  ins.i64("schema_version", kSchemaVersion).null("id");
  if (SqlError e = ins.run(); !e.ok()) return sql_error(e, "snapshots", "name='" + name + "'");
  id = db_.last_insert_rowid();
  return {};
}

StoreError SnapshotStore::write_checkpoint_in_transaction(
    const std::string& name, const std::string& kind, const core::WorldCheckpoint& cp,
    const std::string& scenario_json, std::int64_t created_unix_ms, std::int64_t* id_out) {
  std::int64_t id = 0;
  if (StoreError e =
          replace_snapshot_row(name, kind, cp.scenario_id, scenario_json, cp.step_index, cp.step_us,
                               cp.seed, cp.digest, cp.pedestrians.id.size(), created_unix_ms, id);
      !e.ok()) {
    return e;
  }
  store::Tables t(db_, path_, file_version_);
  if (StoreError e = store::write_world_state(t, id, cp); !e.ok()) return e;
  if (StoreError e = store::write_vehicles(t, id, cp.vehicles); !e.ok()) return e;
  if (StoreError e = store::write_population(t, id, cp.population); !e.ok()) return e;
  if (StoreError e = store::write_pipeline(t, id, cp); !e.ok()) return e;
  if (StoreError e = store::write_prevention(t, id, cp.prevention); !e.ok()) return e;
  if (StoreError e = store::write_routes(t, id, cp.routes); !e.ok()) return e;
  if (StoreError e = store::write_pedestrians(t, id, cp); !e.ok()) return e;
  if (StoreError e = store::write_pending_commands(t, id, cp.inbox); !e.ok()) return e;
  if (id_out != nullptr) *id_out = id;
  return {};
}

StoreError SnapshotStore::write_save(const std::string& name, const core::SaveState& save,
                                     const std::string& scenario_json,
                                     std::int64_t created_unix_ms) {
  Transaction tx(db_);
  if (!tx.begin_error().ok()) return sql_error(tx.begin_error(), "snapshots");
  std::int64_t id = 0;
  // A save has no digest (it is not a state the world can be in) and no entities.
  if (StoreError e =
          replace_snapshot_row(name, "save", save.scenario_id, scenario_json, save.step_index,
                               save.step_us, save.seed, 0, 0, created_unix_ms, id);
      !e.ok()) {
    return e;
  }
  store::Tables t(db_, path_, file_version_);
  if (StoreError e = store::write_save_tables(t, id, save); !e.ok()) return e;
  if (SqlError e = tx.commit(); !e.ok()) return sql_error(e, "snapshots", "name='" + name + "'");
  return {};
}

StoreError SnapshotStore::read_info(Statement& st, SnapshotInfo& info, InfoExtra extra) const {
  store::RowReader rr(st, kSnapshots);
  info.id = st.column_i64(kSnapshots.index("id"));
  info.name = rr.text("name");
  info.kind = rr.text("kind");
  info.scenario_id = rr.text("scenario_id");
  info.step = rr.u64("step");
  info.sim_time_us = rr.u64("sim_time_us");
  info.digest = rr.u64("digest");
  const std::string named = "name='" + info.name + "'";
  info.pedestrians = rr.u32("pedestrians");
  if (!rr.ok())
    return error("snapshots", named, rr.field(),
                 rr.field() == "pedestrians" ? "count out of range" : rr.message());
  info.created_unix_ms = st.column_i64(kSnapshots.index("created_unix_ms"));
  info.schema_version = static_cast<int>(rr.integer("schema_version", 1, kSchemaVersion));
  if (extra.scenario_json != nullptr) {
    *extra.scenario_json = rr.text("scenario_json");
    *extra.seed = rr.u64("seed");
    const std::int64_t step_us = rr.integer("step_us", 1, UINT32_MAX);
    if (rr.ok())
      *extra.step_us = static_cast<std::uint32_t>(step_us);
    else if (rr.field() == "step_us")
      return error("snapshots", named, "step_us", "out of range");
  }
  if (!rr.ok()) return error("snapshots", named, rr.field(), rr.message());
  return {};
}

StoreError SnapshotStore::read_checkpoint(const std::string& name, LoadedCheckpoint& out) {
  SqlError err;
  Statement st = db_.prepare("SELECT id FROM snapshots WHERE name = ?1", err);
  if (!err.ok()) return sql_error(err, "snapshots");
  st.bind_text(1, name);
  if (!st.step()) {
    if (!st.error().ok()) return sql_error(st.error(), "snapshots", "name='" + name + "'");
    return error("snapshots", "name='" + name + "'", "", "no snapshot with this name");
  }
  return read_checkpoint_by_id(st.column_i64(0), out);
}

StoreError SnapshotStore::read_checkpoint_summary(std::int64_t id, LoadedCheckpoint& lc) {
  const std::string row = "snapshot_id=" + std::to_string(id);
  SqlError err;
  Statement st = db_.prepare(info_sql("WHERE id = ?1"), err);
  if (!err.ok()) return sql_error(err, "snapshots");
  st.bind_i64(1, id);
  if (!st.step()) {
    if (!st.error().ok()) return sql_error(st.error(), "snapshots", row);
    return error("snapshots", row, "", "no snapshot with this id");
  }
  core::WorldCheckpoint& cp = lc.checkpoint;
  if (StoreError e = read_info(st, lc.info, {&lc.scenario_json, &cp.seed, &cp.step_us}); !e.ok())
    return e;
  const std::string named = "name='" + lc.info.name + "'";
  if (lc.info.kind != "checkpoint" && lc.info.kind != "keyframe") {
    return error("snapshots", named, "kind",
                 "is a " + lc.info.kind + ", not a checkpoint (use load for saves)");
  }
  if (lc.info.schema_version < 2) {
    return error("snapshots", named, "schema_version",
                 "checkpoint written with schema version " +
                     std::to_string(lc.info.schema_version) +
                     ", before the population pipeline (spawn handles, orphans, zone handoffs, "
                     "lifecycle settings): "
                     "it cannot be restored exactly; take a new checkpoint (saves still load)");
  }
  cp.scenario_id = lc.info.scenario_id;
  cp.step_index = lc.info.step;
  cp.digest = lc.info.digest;
  return {};
}

StoreError SnapshotStore::read_checkpoint_by_id(std::int64_t id, LoadedCheckpoint& out) {
  if (SqlError e = quick_check_on_read_ ? db_.quick_check() : SqlError{}; !e.ok()) {
    return error("", "", "", "file failed PRAGMA quick_check: " + e.message, e.code);
  }
  LoadedCheckpoint lc;
  if (StoreError e = read_checkpoint_summary(id, lc); !e.ok()) return e;
  core::WorldCheckpoint& cp = lc.checkpoint;
  store::Tables t(db_, path_, file_version_);
  if (StoreError e = store::read_world_state(t, id, cp); !e.ok()) return e;
  if (StoreError e = store::read_vehicles(t, id, cp.vehicles); !e.ok()) return e;
  if (StoreError e = store::read_population(t, id, cp.population); !e.ok()) return e;
  if (StoreError e = store::read_pipeline(t, id, cp); !e.ok()) return e;
  if (StoreError e = store::read_prevention(t, id, cp.prevention); !e.ok()) return e;
  if (StoreError e = store::read_routes(t, id, cp.routes); !e.ok()) return e;
  if (StoreError e = store::read_pedestrians(t, id, lc.info.pedestrians, cp); !e.ok()) return e;
  if (StoreError e = store::read_pending_commands(t, id, cp.inbox); !e.ok()) return e;
  out = std::move(lc);
  return {};
}

StoreError SnapshotStore::read_save(const std::string& name, LoadedSave& out) {
  if (SqlError e = db_.quick_check(); !e.ok()) {
    return error("", "", "", "file failed PRAGMA quick_check: " + e.message, e.code);
  }
  SqlError err;
  Statement st = db_.prepare(info_sql("WHERE name = ?1"), err);
  if (!err.ok()) return sql_error(err, "snapshots");
  st.bind_text(1, name);
  const std::string named = "name='" + name + "'";
  if (!st.step()) {
    if (!st.error().ok()) return sql_error(st.error(), "snapshots", named);
    return error("snapshots", named, "", "no snapshot with this name");
  }
  LoadedSave ls;
  if (StoreError e = read_info(st, ls.info, {&ls.scenario_json, &ls.save.seed, &ls.save.step_us});
      !e.ok())
    return e;
  if (ls.info.kind != "save")
    return error("snapshots", named, "kind", "is a " + ls.info.kind + ", not a save (use restore)");
  ls.save.scenario_id = ls.info.scenario_id;
  ls.save.step_index = ls.info.step;
  store::Tables t(db_, path_, file_version_);
  if (StoreError e = store::read_save_state(t, ls.info.id, named, ls.save); !e.ok()) return e;
  if (StoreError e = store::read_save_lists(t, ls.info.id, ls.info.schema_version, named, ls.save);
      !e.ok())
    return e;
  out = std::move(ls);
  return {};
}

StoreError SnapshotStore::list(std::vector<SnapshotInfo>& out, bool include_keyframes) {
  SqlError err;
  Statement st = db_.prepare(
      info_sql(include_keyframes ? "ORDER BY id" : "WHERE kind != 'keyframe' ORDER BY id"), err);
  if (!err.ok()) return sql_error(err, "snapshots");
  out.clear();
  while (st.step()) {
    SnapshotInfo info;
    if (StoreError e = read_info(st, info); !e.ok()) return e;
    out.push_back(std::move(info));
  }
  if (!st.error().ok()) return sql_error(st.error(), "snapshots");
  return {};
}

StoreError SnapshotStore::remove(const std::string& name, bool& found) {
  SqlError err;
  Statement st = db_.prepare("DELETE FROM snapshots WHERE name = ?1", err);
  if (!err.ok()) return sql_error(err, "snapshots");
  st.bind_text(1, name);
  if (SqlError e = st.run(); !e.ok()) return sql_error(e, "snapshots", "name='" + name + "'");
  found = sqlite3_changes(db_.handle()) > 0;
  return {};
}

}  // namespace bustle::persist
