#include "bustle/persist/snapshot_store.hpp"

#include <sqlite3.h>

#include <bit>
#include <cstring>
#include <limits>
#include <mutex>

#include "bustle/persist/command_codec.hpp"
#include "migrations.hpp"

#include <nlohmann/json.hpp>

namespace bustle::persist {
namespace {

static_assert(std::endian::native == std::endian::little,
              "blob columns are little-endian; add byte swapping for big-endian hosts");

std::mutex g_version_mu;
std::string g_server_version = "unknown";

std::string server_version() {
  std::lock_guard lock(g_version_mu);
  return g_server_version;
}

template <class T>
std::span<const std::uint8_t> as_bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(T)};
}

// Decodes a blob of fixed-size elements; false if the size is not count * sizeof(T).
template <class T>
bool decode(const std::vector<std::uint8_t>& blob, std::size_t count, std::vector<T>& out) {
  if (blob.size() != count * sizeof(T)) return false;
  out.resize(count);
  if (count > 0) std::memcpy(out.data(), blob.data(), blob.size());
  return true;
}

using nlohmann::json;

std::string vehicle_stats_json(const core::VehicleCheckpoint& v) {
  json j;
  j["tiers"] = json::array({v.last_tiers.per_tier[0], v.last_tiers.per_tier[1], v.last_tiers.per_tier[2]});
  j["promoted"] = v.last_tiers.promoted;
  j["demoted"] = v.last_tiers.demoted;
  j["deferred"] = v.last_tiers.deferred;
  j["forced"] = v.last_tiers.forced;
  j["forced_overflow"] = v.last_tiers.forced_overflow;
  j["moving"] = v.last_step.moving;
  j["turnarounds"] = v.last_step.turnarounds;
  j["dispatched"] = v.last_step.dispatched;
  json pol = json::array();
  for (const std::uint32_t c : v.last_step.per_policy) pol.push_back(c);
  j["policy"] = pol;
  return j.dump();
}

bool parse_vehicle_stats(const std::string& text, core::VehicleCheckpoint& v) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  try {
    const auto tiers = j.at("tiers").get<std::vector<std::uint32_t>>();
    const auto pol = j.at("policy").get<std::vector<std::uint32_t>>();
    if (tiers.size() != core::kSimTierCount || pol.size() != core::kControlPolicyCount) return false;
    for (std::size_t k = 0; k < tiers.size(); ++k) v.last_tiers.per_tier[k] = tiers[k];
    for (std::size_t k = 0; k < pol.size(); ++k) v.last_step.per_policy[k] = pol[k];
    v.last_tiers.promoted = j.at("promoted").get<std::uint32_t>();
    v.last_tiers.demoted = j.at("demoted").get<std::uint32_t>();
    v.last_tiers.deferred = j.at("deferred").get<std::uint32_t>();
    v.last_tiers.forced = j.at("forced").get<std::uint32_t>();
    v.last_tiers.forced_overflow = j.at("forced_overflow").get<std::uint32_t>();
    v.last_step.moving = j.at("moving").get<std::uint32_t>();
    v.last_step.turnarounds = j.at("turnarounds").get<std::uint32_t>();
    v.last_step.dispatched = j.at("dispatched").get<std::uint32_t>();
  } catch (const json::exception&) {
    return false;
  }
  return true;
}

template <class T>
std::vector<T> column_of(const std::vector<core::EntityId>& ids, std::uint32_t core::EntityId::*field) {
  std::vector<T> out(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) out[i] = ids[i].*field;
  return out;
}

// Reads the columns of one row with type and range checks, remembering the
// first bad field so the caller can name it in its error.
class RowReader {
 public:
  explicit RowReader(const Statement& st) : st_(st) {}

  std::int64_t integer(int col, const char* field, std::int64_t lo, std::int64_t hi) {
    const std::int64_t v = st_.column_i64(col);
    if (st_.column_type(col) != SQLITE_INTEGER) {
      fail(field, "expected an integer");
    } else if (v < lo || v > hi) {
      fail(field, std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return v;
  }
  std::uint8_t u8(int col, const char* field, std::int64_t hi = UINT8_MAX) {
    return static_cast<std::uint8_t>(integer(col, field, 0, hi));
  }
  std::uint32_t u32(int col, const char* field) { return static_cast<std::uint32_t>(integer(col, field, 0, UINT32_MAX)); }
  std::int32_t i32(int col, const char* field, std::int64_t lo = INT32_MIN) {
    return static_cast<std::int32_t>(integer(col, field, lo, INT32_MAX));
  }
  // Unsigned 64-bit values are stored as their signed bit pattern: any integer is valid.
  std::uint64_t u64(int col, const char* field) {
    return static_cast<std::uint64_t>(integer(col, field, INT64_MIN, INT64_MAX));
  }
  core::EntityId id(int index_col, const char* index_field, const char* generation_field) {
    const std::uint32_t index = u32(index_col, index_field);
    return {index, u32(index_col + 1, generation_field)};
  }
  double f64(int col, const char* field) {
    const int type = st_.column_type(col);
    if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) fail(field, "expected a number");
    return st_.column_double(col);
  }

  bool ok() const { return field_ == nullptr; }
  const char* field() const { return field_; }
  const std::string& message() const { return message_; }

 private:
  void fail(const char* field, std::string message) {
    if (field_ != nullptr) return;
    field_ = field;
    message_ = std::move(message);
  }
  const Statement& st_;
  const char* field_ = nullptr;
  std::string message_;
};

// A JSON array of exactly `n` unsigned counts, or false.
template <class T>
bool parse_counts(const std::string& text, std::size_t n, T* out) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_array() || j.size() != n) return false;
  for (std::size_t k = 0; k < n; ++k) {
    if (!j[k].is_number_unsigned() || j[k].get<std::uint64_t>() > std::numeric_limits<T>::max()) return false;
    out[k] = j[k].get<T>();
  }
  return true;
}

}  // namespace

void complete_schema1_save(LoadedSave& ls, const core::Scenario& scenario) {
  if (ls.info.schema_version >= 2) return;
  const core::PopulationSettings& p = scenario.population;
  ls.save.lifecycle = {p.growth_quota, p.recycle_quota, p.lifecycle_interval_ms, p.migration_budget};
}

void set_server_version(std::string version) {
  std::lock_guard lock(g_version_mu);
  g_server_version = std::move(version);
}

const char* to_string(FileKind k) { return k == FileKind::Snapshots ? "snapshots" : "recording"; }

std::string StoreError::to_string() const {
  std::string s = file;
  if (!table.empty()) s += ": table " + table;
  if (!row.empty()) s += ", row " + row;
  if (!field.empty()) s += ", field " + field;
  return s + ": " + message;
}

StoreError SnapshotStore::error(std::string table, std::string row, std::string field, std::string message,
                                int code) const {
  return StoreError{path_, std::move(table), std::move(row), std::move(field), std::move(message), code};
}

StoreError SnapshotStore::sql_error(const SqlError& e, std::string table, std::string row) const {
  return error(std::move(table), std::move(row), "", e.message, e.code);
}

StoreError SnapshotStore::open(const std::string& path, FileKind kind, bool create, SnapshotStore& out,
                               bool read_only) {
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
                   "file has schema version " + std::to_string(version) + ", this build supports up to " +
                       std::to_string(kSchemaVersion));
  }
  if (read_only && version < kReadOnlyMinSchemaVersion) {
    return s.error("meta", "", "schema_version",
                   "file has schema version " + std::to_string(version) + "; opening read-only cannot migrate it to " +
                       std::to_string(kSchemaVersion));
  }
  s.file_version_ = read_only ? static_cast<int>(version) : kSchemaVersion;
  if (!read_only) {
    if (SqlError e = s.db_.exec("PRAGMA journal_mode=WAL", "enable WAL"); !e.ok()) return s.sql_error(e, "");
    s.db_.exec("PRAGMA synchronous=NORMAL");
  }
  s.db_.exec("PRAGMA foreign_keys=ON");

  if (version == 0) {
    // Empty file (just created) or a foreign SQLite file without our version.
    SqlError e2;
    Statement tables = s.db_.prepare("SELECT count(*) FROM sqlite_master", e2);
    if (!e2.ok() || !tables.step()) return s.sql_error(e2.ok() ? tables.error() : e2, "sqlite_master");
    if (tables.column_i64(0) != 0) {
      return s.error("meta", "", "magic", "not a Bustle file (tables present but no Bustle schema version)");
    }
    if (!create) return s.error("", "", "", "file is empty (no Bustle schema)");
  }
  if (!read_only && version < kSchemaVersion) {
    Transaction tx(s.db_);
    if (!tx.begin_error().ok()) return s.sql_error(tx.begin_error(), "");
    for (const Migration& m : migrations()) {
      if (m.version <= version) continue;
      if (SqlError e = s.db_.exec(m.sql, "migration " + std::to_string(m.version)); !e.ok()) return s.sql_error(e, "");
    }
    if (version == 0) {
      SqlError e3;
      Statement ins = s.db_.prepare("INSERT INTO meta(key, value) VALUES (?1, ?2)", e3);
      if (!e3.ok()) return s.sql_error(e3, "meta");
      for (auto [k, v] : {std::pair<std::string, std::string>{"magic", kMagic},
                          {"file_kind", to_string(kind)},
                          {"created_by", server_version()}}) {
        ins.reset();
        ins.bind_text(1, k).bind_text(2, v);
        if (SqlError e4 = ins.run(); !e4.ok()) return s.sql_error(e4, "meta");
      }
    }
    if (SqlError e = s.db_.exec("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', '" +
                                std::to_string(kSchemaVersion) + "')");
        !e.ok()) {
      return s.sql_error(e, "meta");
    }
    if (SqlError e = s.db_.exec("PRAGMA user_version=" + std::to_string(kSchemaVersion)); !e.ok()) return s.sql_error(e, "");
    if (SqlError e = tx.commit(); !e.ok()) return s.sql_error(e, "");
  }

  // Magic and kind.
  SqlError e5;
  Statement meta = s.db_.prepare("SELECT key, value FROM meta WHERE key IN ('magic', 'file_kind', 'schema_version')", e5);
  if (!e5.ok()) return s.error("meta", "", "", "cannot read metadata: " + e5.message, e5.code);
  std::string magic, file_kind, schema_version;
  while (meta.step()) {
    const std::string k = meta.column_text(0);
    if (k == "magic") magic = meta.column_text(1);
    if (k == "file_kind") file_kind = meta.column_text(1);
    if (k == "schema_version") schema_version = meta.column_text(1);
  }
  if (!meta.error().ok()) return s.error("meta", "", "", meta.error().message, meta.error().code);
  if (magic != kMagic) return s.error("meta", "key='magic'", "value", "wrong magic '" + magic + "' (not a Bustle file)");
  if (schema_version != std::to_string(s.file_version_)) {
    return s.error("meta", "key='schema_version'", "value",
                   "schema version '" + schema_version + "' does not match PRAGMA user_version " +
                       std::to_string(s.file_version_));
  }
  if (file_kind != to_string(kind)) {
    return s.error("meta", "key='file_kind'", "value",
                   "file is a " + file_kind + " file, expected a " + to_string(kind) + " file");
  }
  out = std::move(s);
  return {};
}

StoreError SnapshotStore::set_max_page_count(std::int64_t pages) {
  if (SqlError e = db_.exec("PRAGMA max_page_count=" + std::to_string(pages)); !e.ok()) return sql_error(e, "");
  return {};
}

StoreError SnapshotStore::write_checkpoint(const std::string& name, const std::string& kind,
                                           const core::WorldCheckpoint& cp, const std::string& scenario_json,
                                           std::int64_t created_unix_ms, std::int64_t* id_out) {
  Transaction tx(db_);
  if (!tx.begin_error().ok()) return sql_error(tx.begin_error(), "snapshots");
  std::int64_t id = 0;
  if (StoreError e = write_checkpoint_in_transaction(name, kind, cp, scenario_json, created_unix_ms, &id); !e.ok()) {
    return e;
  }
  if (SqlError e = tx.commit(); !e.ok()) return sql_error(e, "snapshots", "name='" + name + "'");
  if (id_out != nullptr) *id_out = id;
  return {};
}

StoreError SnapshotStore::replace_snapshot_row(const std::string& name, const std::string& kind,
                                               const std::string& scenario_id, const std::string& scenario_json,
                                               std::uint64_t step, std::uint32_t step_us, std::uint64_t seed,
                                               std::uint64_t digest, std::size_t entities,
                                               std::int64_t created_unix_ms, std::int64_t& id) {
  SqlError err;
  Statement del = db_.prepare("DELETE FROM snapshots WHERE name = ?1", err);  // cascades to its state rows
  if (!err.ok()) return sql_error(err, "snapshots");
  del.bind_text(1, name);
  if (SqlError e = del.run(); !e.ok()) return sql_error(e, "snapshots", "name='" + name + "'");
  Statement ins = db_.prepare(
      "INSERT INTO snapshots(name, kind, scenario_id, scenario_json, step, step_us, sim_time_us, seed, digest, "
      "pedestrians, created_unix_ms, server_version, schema_version) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
      err);
  if (!err.ok()) return sql_error(err, "snapshots");
  ins.bind_text(1, name).bind_text(2, kind).bind_text(3, scenario_id).bind_text(4, scenario_json);
  ins.bind_u64(5, step).bind_i64(6, step_us).bind_u64(7, step * step_us).bind_u64(8, seed).bind_u64(9, digest);
  ins.bind_i64(10, static_cast<std::int64_t>(entities)).bind_i64(11, created_unix_ms).bind_text(12, server_version());
  ins.bind_i64(13, kSchemaVersion);
  if (SqlError e = ins.run(); !e.ok()) return sql_error(e, "snapshots", "name='" + name + "'");
  id = db_.last_insert_rowid();
  return {};
}

StoreError SnapshotStore::write_checkpoint_in_transaction(const std::string& name, const std::string& kind,
                                                          const core::WorldCheckpoint& cp,
                                                          const std::string& scenario_json,
                                                          std::int64_t created_unix_ms, std::int64_t* id_out) {
  SqlError err;
  std::int64_t id = 0;
  if (StoreError e = replace_snapshot_row(name, kind, cp.scenario_id, scenario_json, cp.step_index, cp.step_us,
                                          cp.seed, cp.digest, cp.pedestrians.id.size(), created_unix_ms, id);
      !e.ok()) {
    return e;
  }

  std::string by_reason = "[";
  for (std::size_t r = 0; r < cp.counters.despawned_by_reason.size(); ++r) {
    by_reason += (r ? "," : "") + std::to_string(cp.counters.despawned_by_reason[r]);
  }
  by_reason += "]";
  Statement ws = db_.prepare(
      "INSERT INTO world_state VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
      "?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31)",
      err);
  if (!err.ok()) return sql_error(err, "world_state");
  ws.bind_i64(1, id);
  for (int k = 0; k < 4; ++k) ws.bind_u64(2 + k, cp.rng_state[static_cast<std::size_t>(k)]);
  ws.bind_u64(6, cp.route_salt).bind_i64(7, cp.pedestrian_target);
  ws.bind_u64(8, cp.counters.spawned_total).bind_u64(9, cp.counters.despawned_total).bind_text(10, by_reason);
  ws.bind_u64(11, cp.counters.spawn_failed_capacity).bind_u64(12, cp.counters.commands_accepted);
  ws.bind_u64(13, cp.counters.commands_rejected);
  ws.bind_i64(14, static_cast<std::int64_t>(cp.registry.generation.size())).bind_u64(15, cp.registry.pop_seq);
  ws.bind_blob(16, as_bytes(cp.registry.generation)).bind_blob(17, as_bytes(cp.registry.alive));
  ws.bind_blob(18, as_bytes(cp.registry.free_fifo));
  ws.bind_u64(19, cp.vehicles.plan.cursor).bind_u64(20, cp.vehicles.plan.accepted).bind_u64(21, cp.vehicles.plan.rejected);
  json observers = json::array();
  for (const core::Vec2& o : cp.observers) observers.push_back(json::array({o.x_m, o.y_m}));
  const std::string observers_text = observers.dump();
  const std::string stats_text = vehicle_stats_json(cp.vehicles);
  ws.bind_text(22, observers_text).bind_u64(23, cp.population.day_us).bind_i64(24, cp.population.time_scale);
  json forced = json::array();
  for (const core::EntityId f : cp.forced_full) forced.push_back(json::array({f.index, f.generation}));
  const std::string forced_text = forced.dump();
  ws.bind_u64(25, cp.population.last_interval).bind_text(26, forced_text).bind_u64(27, cp.force_full_refused);
  ws.bind_text(28, stats_text);
  ws.bind_u64(29, cp.counters.faded_total).bind_u64(30, cp.counters.fade_skipped_total);
  ws.bind_u64(31, cp.population.interval_origin_us);
  if (SqlError e = ws.run(); !e.ok()) return sql_error(e, "world_state", "snapshot_id=" + std::to_string(id));
  if (StoreError e = write_vehicles(id, cp.vehicles); !e.ok()) return e;
  if (StoreError e = write_population(id, cp.population); !e.ok()) return e;
  if (StoreError e = write_pipeline(id, cp); !e.ok()) return e;
  if (StoreError e = write_routes(id, cp.routes); !e.ok()) return e;

  const std::size_t n = cp.pedestrians.id.size();
  std::vector<std::uint32_t> idx(n), gen(n);
  for (std::size_t i = 0; i < n; ++i) {
    idx[i] = cp.pedestrians.id[i].index;
    gen[i] = cp.pedestrians.id[i].generation;
  }
  Statement pc = db_.prepare(
      "INSERT INTO pedestrian_columns VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)", err);
  if (!err.ok()) return sql_error(err, "pedestrian_columns");
  pc.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(n)).bind_blob(3, as_bytes(idx)).bind_blob(4, as_bytes(gen));
  pc.bind_blob(5, as_bytes(cp.pedestrians.lane)).bind_blob(6, as_bytes(cp.pedestrians.s_m));
  pc.bind_blob(7, as_bytes(cp.pedestrians.hops)).bind_blob(8, as_bytes(cp.pedestrians.resident));
  const core::TierCounts& pt = cp.pedestrian_tiers;
  const std::string tier_stats =
      json::array({pt.per_tier[0], pt.per_tier[1], pt.per_tier[2], pt.promoted, pt.demoted, pt.deferred, pt.forced,
                   pt.forced_overflow})
          .dump();
  pc.bind_blob(9, as_bytes(cp.pedestrians.tier)).bind_text(10, tier_stats);
  pc.bind_blob(11, as_bytes(cp.pedestrians.priority)).bind_blob(12, as_bytes(cp.pedestrians.origin));
  pc.bind_blob(13, as_bytes(cp.pedestrians.route));
  if (SqlError e = pc.run(); !e.ok()) return sql_error(e, "pedestrian_columns", "snapshot_id=" + std::to_string(id));

  Statement cmd = db_.prepare("INSERT INTO pending_commands VALUES (?1, ?2, ?3, ?4, ?5, ?6)", err);
  if (!err.ok()) return sql_error(err, "pending_commands");
  for (std::size_t k = 0; k < cp.inbox.size(); ++k) {
    const core::CommandEnvelope& env = cp.inbox[k];
    cmd.reset();
    const std::string args = command_args_json(env.command);
    cmd.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(k)).bind_i64(3, env.origin.client_id);
    cmd.bind_i64(4, env.origin.request_id).bind_text(5, core::command_name(env.command)).bind_text(6, args);
    if (SqlError e = cmd.run(); !e.ok()) return sql_error(e, "pending_commands", "seq=" + std::to_string(k));
  }
  if (id_out != nullptr) *id_out = id;
  return {};
}

StoreError SnapshotStore::write_save(const std::string& name, const core::SaveState& save,
                                     const std::string& scenario_json, std::int64_t created_unix_ms) {
  Transaction tx(db_);
  if (!tx.begin_error().ok()) return sql_error(tx.begin_error(), "snapshots");
  SqlError err;
  std::int64_t id = 0;
  // A save has no digest (it is not a state the world can be in) and no entities.
  if (StoreError e = replace_snapshot_row(name, "save", save.scenario_id, scenario_json, save.step_index, save.step_us,
                                          save.seed, 0, 0, created_unix_ms, id);
      !e.ok()) {
    return e;
  }
  Statement ss = db_.prepare("INSERT INTO save_state VALUES (?1, ?2, ?3, ?4, ?5)", err);
  if (!err.ok()) return sql_error(err, "save_state");
  const std::string ordinals = json(save.garage_vehicle_ordinals).dump();
  ss.bind_i64(1, id).bind_i64(2, save.pedestrian_target).bind_u64(3, save.day_us).bind_i64(4, save.time_scale);
  ss.bind_text(5, ordinals);
  if (SqlError e = ss.run(); !e.ok()) return sql_error(e, "save_state", "snapshot_id=" + std::to_string(id));
  if (StoreError e = write_lifecycle(id, save.lifecycle); !e.ok()) return e;
  if (StoreError e = write_save_residents(id, save); !e.ok()) return e;
  if (SqlError e = tx.commit(); !e.ok()) return sql_error(e, "snapshots", "name='" + name + "'");
  return {};
}

StoreError SnapshotStore::write_vehicles(std::int64_t id, const core::VehicleCheckpoint& v) {
  SqlError err;
  const std::string row = "snapshot_id=" + std::to_string(id);
  const core::VehicleStore& st = v.store;
  const auto idx = column_of<std::uint32_t>(st.id, &core::EntityId::index);
  const auto gen = column_of<std::uint32_t>(st.id, &core::EntityId::generation);
  const auto lidx = column_of<std::uint32_t>(st.leader, &core::EntityId::index);
  const auto lgen = column_of<std::uint32_t>(st.leader, &core::EntityId::generation);
  const std::string request_ids = json(st.request_id).dump();
  Statement vc = db_.prepare(
      "INSERT INTO vehicle_columns VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
      "?18, ?19, ?20, ?21, ?22)",
      err);
  if (!err.ok()) return sql_error(err, "vehicle_columns");
  vc.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(st.id.size()));
  vc.bind_blob(3, as_bytes(idx)).bind_blob(4, as_bytes(gen)).bind_blob(5, as_bytes(st.garage));
  vc.bind_blob(6, as_bytes(st.ordinal)).bind_blob(7, as_bytes(st.prototype)).bind_blob(8, as_bytes(st.route_index));
  vc.bind_blob(9, as_bytes(st.lane)).bind_blob(10, as_bytes(st.s_m)).bind_blob(11, as_bytes(st.speed_mps));
  vc.bind_blob(12, as_bytes(st.strategy)).bind_blob(13, as_bytes(st.policy)).bind_blob(14, as_bytes(st.reason));
  vc.bind_blob(15, as_bytes(st.tier)).bind_blob(16, as_bytes(lidx)).bind_blob(17, as_bytes(lgen));
  vc.bind_blob(18, as_bytes(st.steps_advanced)).bind_blob(19, as_bytes(st.waiting_since));
  vc.bind_blob(20, as_bytes(st.despawn_requested)).bind_text(21, request_ids);
  vc.bind_blob(22, as_bytes(st.last_advance_step));  // column added by migration 0002
  if (SqlError e = vc.run(); !e.ok()) return sql_error(e, "vehicle_columns", row);

  Statement g = db_.prepare(
      "INSERT INTO garages VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)", err);
  if (!err.ok()) return sql_error(err, "garages");
  Statement q = db_.prepare("INSERT INTO garage_queue VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", err);
  if (!err.ok()) return sql_error(err, "garage_queue");
  Statement d = db_.prepare("INSERT INTO garage_dispatched VALUES (?1, ?2, ?3)", err);
  if (!err.ok()) return sql_error(err, "garage_dispatched");
  for (std::size_t gi = 0; gi < v.garages.size(); ++gi) {
    const core::GarageState& gs = v.garages[gi];
    const std::string gate_steps = json(std::vector<std::uint64_t>(gs.gate_steps.begin(), gs.gate_steps.end())).dump();
    const std::string garage_id = gi < v.garage_ids.size() ? v.garage_ids[gi] : std::string();
    g.reset();
    g.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(gi)).bind_text(3, garage_id);
    g.bind_u64(4, gs.frame_index).bind_i64(5, gs.has_dispatched ? 1 : 0).bind_u64(6, gs.last_dispatch_frame);
    g.bind_u64(7, gs.next_enqueue_ordinal).bind_u64(8, gs.next_vehicle_ordinal).bind_u64(9, gs.turnarounds);
    g.bind_i64(10, static_cast<std::int64_t>(gs.last_gate)).bind_text(11, gate_steps);
    g.bind_u64(12, gs.rejected_invalid).bind_u64(13, gs.rejected_duplicate).bind_u64(14, gs.rejected_queue_full);
    g.bind_u64(15, gs.canceled);
    if (SqlError e = g.run(); !e.ok()) return sql_error(e, "garages", row + " garage_index=" + std::to_string(gi));
    for (std::size_t k = 0; k < gs.queue.size(); ++k) {
      const core::QueuedRequest& r = gs.queue[k];
      q.reset();
      q.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(gi)).bind_i64(3, static_cast<std::int64_t>(k));
      q.bind_text(4, r.request_id).bind_i64(5, r.prototype).bind_i64(6, r.priority).bind_u64(7, r.enqueue_ordinal);
      if (SqlError e = q.run(); !e.ok()) return sql_error(e, "garage_queue", row);
    }
    for (const std::string& r : gs.dispatched) {
      d.reset();
      d.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(gi)).bind_text(3, r);
      if (SqlError e = d.run(); !e.ok()) return sql_error(e, "garage_dispatched", row);
    }
  }
  Statement sg = db_.prepare("INSERT INTO signals VALUES (?1, ?2, ?3, ?4, ?5, ?6)", err);
  if (!err.ok()) return sql_error(err, "signals");
  for (std::size_t si = 0; si < v.signals.size(); ++si) {
    const core::SignalState& ss = v.signals[si];
    sg.reset();
    const std::string signal_id = si < v.signal_ids.size() ? v.signal_ids[si] : std::string();
    sg.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(si)).bind_text(3, signal_id);
    sg.bind_i64(4, static_cast<std::int64_t>(ss.phase)).bind_u64(5, ss.phase_elapsed_us).bind_u64(6, ss.cycles);
    if (SqlError e = sg.run(); !e.ok()) return sql_error(e, "signals", row);
  }
  return {};
}

StoreError SnapshotStore::one_row(const char* table, const std::string& columns, std::int64_t id,
                                  const std::string& row, Statement& st) {
  SqlError err;
  st = db_.prepare("SELECT " + columns + " FROM " + table + " WHERE snapshot_id = ?1", err);
  if (!err.ok()) return sql_error(err, table);
  st.bind_i64(1, id);
  if (!st.step()) {
    if (!st.error().ok()) return sql_error(st.error(), table, row);
    return error(table, row, "", "missing (snapshot incomplete)");
  }
  return {};
}

StoreError SnapshotStore::column_row(const char* table, std::int64_t id, const std::string& row, Statement& st,
                                     std::size_t& n) {
  if (StoreError e = one_row(table, "*", id, row, st); !e.ok()) return e;
  const std::int64_t count = st.column_i64(1);
  if (count < 0 || count > (1 << 24)) return error(table, row, "count", "out of range");
  n = static_cast<std::size_t>(count);
  return {};
}

StoreError SnapshotStore::read_vehicles(std::int64_t id, const std::string& row, core::VehicleCheckpoint& v) {
  SqlError err;
  Statement vc;
  std::size_t n = 0;
  if (StoreError e = column_row("vehicle_columns", id, row, vc, n); !e.ok()) return e;
  core::VehicleStore& st = v.store;
  std::vector<std::uint32_t> idx, gen, lidx, lgen;
  struct Col {
    const char* name;
    bool ok;
  };
  const Col cols[] = {
      {"id_index", decode(vc.column_blob(2), n, idx)},
      {"id_generation", decode(vc.column_blob(3), n, gen)},
      {"garage", decode(vc.column_blob(4), n, st.garage)},
      {"ordinal", decode(vc.column_blob(5), n, st.ordinal)},
      {"prototype", decode(vc.column_blob(6), n, st.prototype)},
      {"route_index", decode(vc.column_blob(7), n, st.route_index)},
      {"lane", decode(vc.column_blob(8), n, st.lane)},
      {"s_m", decode(vc.column_blob(9), n, st.s_m)},
      {"speed_mps", decode(vc.column_blob(10), n, st.speed_mps)},
      {"strategy", decode(vc.column_blob(11), n, st.strategy)},
      {"policy", decode(vc.column_blob(12), n, st.policy)},
      {"reason", decode(vc.column_blob(13), n, st.reason)},
      {"tier", decode(vc.column_blob(14), n, st.tier)},
      {"leader_index", decode(vc.column_blob(15), n, lidx)},
      {"leader_generation", decode(vc.column_blob(16), n, lgen)},
      {"steps_advanced", decode(vc.column_blob(17), n, st.steps_advanced)},
      {"waiting_since", decode(vc.column_blob(18), n, st.waiting_since)},
      {"despawn_requested", decode(vc.column_blob(19), n, st.despawn_requested)},
      {"last_advance_step", decode(vc.column_blob(21), n, st.last_advance_step)},
  };
  for (const Col& c : cols) {
    if (!c.ok) return error("vehicle_columns", row, c.name, "blob size does not match count");
  }
  const json rid = json::parse(vc.column_text(20), nullptr, false);
  if (!rid.is_array() || rid.size() != n) return error("vehicle_columns", row, "request_ids", "expected a JSON array of count strings");
  for (const json& r : rid) {
    if (!r.is_string()) return error("vehicle_columns", row, "request_ids", "expected strings");
    st.request_id.push_back(r.get<std::string>());
  }
  st.id.resize(n);
  st.leader.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    st.id[i] = {idx[i], gen[i]};
    st.leader[i] = {lidx[i], lgen[i]};
  }

  Statement g = db_.prepare("SELECT * FROM garages WHERE snapshot_id = ?1 ORDER BY garage_index", err);
  if (!err.ok()) return sql_error(err, "garages");
  g.bind_i64(1, id);
  while (g.step()) {
    const std::string grow = row + " garage_index=" + std::to_string(g.column_i64(1));
    if (g.column_i64(1) != static_cast<std::int64_t>(v.garages.size())) return error("garages", grow, "garage_index", "not contiguous from 0");
    core::GarageState gs;
    v.garage_ids.push_back(g.column_text(2));
    gs.frame_index = g.column_u64(3);
    gs.has_dispatched = g.column_i64(4) != 0;
    gs.last_dispatch_frame = g.column_u64(5);
    gs.next_enqueue_ordinal = g.column_u64(6);
    gs.next_vehicle_ordinal = g.column_u64(7);
    gs.turnarounds = g.column_u64(8);
    const std::int64_t gate = g.column_i64(9);
    if (gate < 0 || gate >= static_cast<std::int64_t>(core::kDispatchGateCount)) return error("garages", grow, "last_gate", "unknown gate");
    gs.last_gate = static_cast<core::DispatchGate>(gate);
    const json steps = json::parse(g.column_text(10), nullptr, false);
    if (!steps.is_array() || steps.size() != core::kDispatchGateCount) return error("garages", grow, "gate_steps", "expected a JSON array of 6 counts");
    for (std::size_t k = 0; k < core::kDispatchGateCount; ++k) {
      if (!steps[k].is_number_unsigned()) return error("garages", grow, "gate_steps", "expected counts");
      gs.gate_steps[k] = steps[k].get<std::uint64_t>();
    }
    gs.rejected_invalid = g.column_u64(11);
    gs.rejected_duplicate = g.column_u64(12);
    gs.rejected_queue_full = g.column_u64(13);
    gs.canceled = g.column_u64(14);
    v.garages.push_back(std::move(gs));
  }
  if (!g.error().ok()) return sql_error(g.error(), "garages", row);
  Statement q = db_.prepare(
      "SELECT garage_index, position, request_id, prototype, priority, enqueue_ordinal FROM garage_queue "
      "WHERE snapshot_id = ?1 ORDER BY garage_index, position",
      err);
  if (!err.ok()) return sql_error(err, "garage_queue");
  q.bind_i64(1, id);
  while (q.step()) {
    const std::int64_t gi = q.column_i64(0);
    const std::string qrow = row + " garage_index=" + std::to_string(gi) + " position=" + std::to_string(q.column_i64(1));
    if (gi < 0 || gi >= static_cast<std::int64_t>(v.garages.size())) return error("garage_queue", qrow, "garage_index", "unknown garage");
    auto& queue = v.garages[static_cast<std::size_t>(gi)].queue;
    if (q.column_i64(1) != static_cast<std::int64_t>(queue.size())) return error("garage_queue", qrow, "position", "not contiguous");
    const std::int64_t pri = q.column_i64(4);
    if (pri < INT32_MIN || pri > INT32_MAX) return error("garage_queue", qrow, "priority", "out of range");
    queue.push_back({q.column_text(2), static_cast<std::uint32_t>(q.column_i64(3)), static_cast<std::int32_t>(pri),
                     q.column_u64(5)});
  }
  if (!q.error().ok()) return sql_error(q.error(), "garage_queue", row);
  Statement d = db_.prepare(
      "SELECT garage_index, request_id FROM garage_dispatched WHERE snapshot_id = ?1 ORDER BY garage_index, request_id",
      err);
  if (!err.ok()) return sql_error(err, "garage_dispatched");
  d.bind_i64(1, id);
  while (d.step()) {
    const std::int64_t gi = d.column_i64(0);
    if (gi < 0 || gi >= static_cast<std::int64_t>(v.garages.size())) {
      return error("garage_dispatched", row, "garage_index", "unknown garage");
    }
    v.garages[static_cast<std::size_t>(gi)].dispatched.push_back(d.column_text(1));
  }
  if (!d.error().ok()) return sql_error(d.error(), "garage_dispatched", row);
  Statement sg = db_.prepare(
      "SELECT signal_index, signal_id, phase, phase_elapsed_us, cycles FROM signals WHERE snapshot_id = ?1 ORDER BY signal_index",
      err);
  if (!err.ok()) return sql_error(err, "signals");
  sg.bind_i64(1, id);
  while (sg.step()) {
    const std::string srow = row + " signal_index=" + std::to_string(sg.column_i64(0));
    if (sg.column_i64(0) != static_cast<std::int64_t>(v.signals.size())) return error("signals", srow, "signal_index", "not contiguous from 0");
    const std::int64_t phase = sg.column_i64(2);
    if (phase < 0 || phase > 2) return error("signals", srow, "phase", "must be 0 (open), 1 (yield) or 2 (closed)");
    v.signal_ids.push_back(sg.column_text(1));
    v.signals.push_back({static_cast<core::SignalPhase>(phase), sg.column_u64(3), sg.column_u64(4)});
  }
  if (!sg.error().ok()) return sql_error(sg.error(), "signals", row);
  return {};
}

StoreError SnapshotStore::write_population(std::int64_t id, const core::PopulationCheckpoint& p) {
  SqlError err;
  const std::string row = "snapshot_id=" + std::to_string(id);
  const core::ResidentStore& r = p.residents;
  const auto idx = column_of<std::uint32_t>(r.id, &core::EntityId::index);
  const auto gen = column_of<std::uint32_t>(r.id, &core::EntityId::generation);
  Statement rc = db_.prepare("INSERT INTO resident_columns VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)", err);
  if (!err.ok()) return sql_error(err, "resident_columns");
  rc.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(r.id.size())).bind_blob(3, as_bytes(idx));
  rc.bind_blob(4, as_bytes(gen)).bind_blob(5, as_bytes(r.community)).bind_blob(6, as_bytes(r.profession));
  rc.bind_blob(7, as_bytes(r.zone)).bind_blob(8, as_bytes(r.active)).bind_blob(9, as_bytes(r.work_point));
  rc.bind_blob(10, as_bytes(r.work_slot));
  if (SqlError e = rc.run(); !e.ok()) return sql_error(e, "resident_columns", row);
  Statement z = db_.prepare(
      "INSERT INTO zones VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
      "?19, ?20)",
      err);
  if (!err.ok()) return sql_error(err, "zones");
  for (std::size_t k = 0; k < p.zones.size(); ++k) {
    const core::ZoneStatus& s = p.zones[k];
    const std::string zone_id = k < p.zone_ids.size() ? p.zone_ids[k] : std::string();
    z.reset();
    z.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(k)).bind_text(3, zone_id).bind_i64(4, s.target);
    z.bind_i64(5, s.active).bind_i64(6, s.dormant).bind_i64(7, s.pending_spawn).bind_i64(8, s.pending_recycle);
    z.bind_i64(9, s.activated).bind_i64(10, s.recycled).bind_i64(11, s.deferred_by_quota);
    z.bind_i64(12, s.rejected_by_capacity).bind_i64(13, s.migrated_in).bind_i64(14, s.deferred_by_migration);
    z.bind_u64(15, s.activated_total).bind_u64(16, s.recycled_total).bind_i64(17, s.handoffs_started);
    z.bind_i64(18, s.handoffs_accepted).bind_i64(19, s.handoffs_returned).bind_i64(20, s.retiring);
    if (SqlError e = z.run(); !e.ok()) return sql_error(e, "zones", row);
  }
  Statement w = db_.prepare("INSERT INTO work_points VALUES (?1, ?2, ?3, ?4)", err);
  if (!err.ok()) return sql_error(err, "work_points");
  for (std::size_t k = 0; k < p.work_points.size(); ++k) {
    const std::string occ = json(p.work_points[k].occupant).dump();
    const std::string wait = json(p.work_points[k].waiting).dump();
    w.reset();
    w.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(k)).bind_text(3, occ).bind_text(4, wait);
    if (SqlError e = w.run(); !e.ok()) return sql_error(e, "work_points", row);
  }
  if (StoreError e = write_lifecycle(id, p.settings); !e.ok()) return e;
  Statement h = db_.prepare("INSERT INTO zone_handoffs VALUES (?1, ?2, ?3, ?4, ?5)", err);
  if (!err.ok()) return sql_error(err, "zone_handoffs");
  for (std::size_t k = 0; k < p.handoffs.size(); ++k) {
    const core::ZoneHandoff& ho = p.handoffs[k];
    h.reset();
    h.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(k)).bind_i64(3, ho.resident).bind_i64(4, ho.from);
    h.bind_i64(5, ho.to);
    if (SqlError e = h.run(); !e.ok()) return sql_error(e, "zone_handoffs", row + " position=" + std::to_string(k));
  }
  return {};
}

StoreError SnapshotStore::read_population(std::int64_t id, const std::string& row, core::PopulationCheckpoint& p) {
  SqlError err;
  Statement rc;
  std::size_t n = 0;
  if (StoreError e = column_row("resident_columns", id, row, rc, n); !e.ok()) return e;
  core::ResidentStore& r = p.residents;
  std::vector<std::uint32_t> idx, gen;
  struct Col {
    const char* name;
    bool ok;
  };
  const Col cols[] = {
      {"id_index", decode(rc.column_blob(2), n, idx)},        {"id_generation", decode(rc.column_blob(3), n, gen)},
      {"community", decode(rc.column_blob(4), n, r.community)}, {"profession", decode(rc.column_blob(5), n, r.profession)},
      {"zone", decode(rc.column_blob(6), n, r.zone)},           {"active", decode(rc.column_blob(7), n, r.active)},
      {"work_point", decode(rc.column_blob(8), n, r.work_point)}, {"work_slot", decode(rc.column_blob(9), n, r.work_slot)},
  };
  for (const Col& c : cols) {
    if (!c.ok) return error("resident_columns", row, c.name, "blob size does not match count");
  }
  r.id.resize(n);
  for (std::size_t i = 0; i < n; ++i) r.id[i] = {idx[i], gen[i]};
  Statement z = db_.prepare("SELECT * FROM zones WHERE snapshot_id = ?1 ORDER BY zone_index", err);
  if (!err.ok()) return sql_error(err, "zones");
  z.bind_i64(1, id);
  while (z.step()) {
    const std::string zrow = row + " zone_index=" + std::to_string(z.column_i64(1));
    if (z.column_i64(1) != static_cast<std::int64_t>(p.zones.size())) return error("zones", zrow, "zone_index", "not contiguous from 0");
    core::ZoneStatus s;
    p.zone_ids.push_back(z.column_text(2));
    RowReader rr(z);
    s.target = rr.u32(3, "target");
    s.active = rr.u32(4, "active");
    s.dormant = rr.u32(5, "dormant");
    s.pending_spawn = rr.u32(6, "pending_spawn");
    s.pending_recycle = rr.u32(7, "pending_recycle");
    s.activated = rr.u32(8, "activated");
    s.recycled = rr.u32(9, "recycled");
    s.deferred_by_quota = rr.u32(10, "deferred_by_quota");
    s.rejected_by_capacity = rr.u32(11, "rejected_by_capacity");
    s.migrated_in = rr.u32(12, "migrated_in");
    s.deferred_by_migration = rr.u32(13, "deferred_by_migration");
    s.activated_total = rr.u64(14, "activated_total");
    s.recycled_total = rr.u64(15, "recycled_total");
    s.handoffs_started = rr.u32(16, "handoffs_started");
    s.handoffs_accepted = rr.u32(17, "handoffs_accepted");
    s.handoffs_returned = rr.u32(18, "handoffs_returned");
    s.retiring = rr.u32(19, "retiring");
    if (!rr.ok()) return error("zones", zrow, rr.field(), rr.message());
    p.zones.push_back(s);
  }
  if (!z.error().ok()) return sql_error(z.error(), "zones", row);
  Statement w = db_.prepare("SELECT work_point_index, occupants, waiting FROM work_points WHERE snapshot_id = ?1 ORDER BY work_point_index", err);
  if (!err.ok()) return sql_error(err, "work_points");
  w.bind_i64(1, id);
  while (w.step()) {
    const std::string wrow = row + " work_point_index=" + std::to_string(w.column_i64(0));
    if (w.column_i64(0) != static_cast<std::int64_t>(p.work_points.size())) return error("work_points", wrow, "work_point_index", "not contiguous from 0");
    core::WorkPointState st;
    try {
      st.occupant = json::parse(w.column_text(1)).get<std::vector<std::int32_t>>();
      st.waiting = json::parse(w.column_text(2)).get<std::vector<std::uint32_t>>();
    } catch (const json::exception&) {
      return error("work_points", wrow, "occupants", "expected JSON arrays of resident indices");
    }
    p.work_points.push_back(std::move(st));
  }
  if (!w.error().ok()) return sql_error(w.error(), "work_points", row);
  if (StoreError e = read_lifecycle(id, row, p.settings); !e.ok()) return e;
  return read_rows("zone_handoffs", "position", "resident, from_zone, to_zone", "", id, row,
                   [&](const Statement& st, const std::string& hrow) -> StoreError {
                     RowReader rr(st);
                     const core::ZoneHandoff h{rr.u32(1, "resident"), rr.u32(2, "from_zone"), rr.u32(3, "to_zone")};
                     if (!rr.ok()) return error("zone_handoffs", hrow, rr.field(), rr.message());
                     p.handoffs.push_back(h);
                     return {};
                   });
}

StoreError SnapshotStore::read_rows(const char* table, const char* key, const std::string& columns,
                                    const std::string& filter, std::int64_t id, const std::string& row,
                                    const RowCallback& read_row) {
  SqlError err;
  Statement st = db_.prepare(std::string("SELECT ") + key + ", " + columns + " FROM " + table +
                                 " WHERE snapshot_id = ?1" + (filter.empty() ? "" : " AND " + filter) +
                                 " ORDER BY " + key,
                             err);
  if (!err.ok()) return sql_error(err, table);
  st.bind_i64(1, id);
  const std::string prefix = row + (filter.empty() ? "" : " " + filter) + " " + key + "=";
  for (std::int64_t expected = 0; st.step(); ++expected) {
    const std::string label = prefix + std::to_string(st.column_i64(0));
    if (st.column_i64(0) != expected) return error(table, label, key, "not contiguous from 0");
    if (StoreError e = read_row(st, label); !e.ok()) return e;
  }
  if (!st.error().ok()) return sql_error(st.error(), table, row);
  return {};
}

StoreError SnapshotStore::write_lifecycle(std::int64_t id, const core::LifecycleSettings& s) {
  SqlError err;
  Statement st = db_.prepare("INSERT INTO lifecycle_settings VALUES (?1, ?2, ?3, ?4, ?5)", err);
  if (!err.ok()) return sql_error(err, "lifecycle_settings");
  st.bind_i64(1, id).bind_i64(2, s.growth_quota).bind_i64(3, s.recycle_quota).bind_i64(4, s.interval_ms);
  st.bind_i64(5, s.migration_budget);
  if (SqlError e = st.run(); !e.ok()) return sql_error(e, "lifecycle_settings", "snapshot_id=" + std::to_string(id));
  return {};
}

StoreError SnapshotStore::read_lifecycle(std::int64_t id, const std::string& row, core::LifecycleSettings& s) {
  Statement st;
  if (StoreError e = one_row("lifecycle_settings", "growth_quota, recycle_quota, interval_ms, migration_budget", id, row, st);
      !e.ok()) {
    return e;
  }
  RowReader rr(st);
  s.growth_quota = rr.u32(0, "growth_quota");
  s.recycle_quota = rr.u32(1, "recycle_quota");
  s.interval_ms = rr.u32(2, "interval_ms");
  s.migration_budget = rr.u32(3, "migration_budget");
  if (!rr.ok()) return error("lifecycle_settings", row, rr.field(), rr.message());
  return {};
}

namespace {
constexpr const char* kHandleLists[] = {"live", "recent"};  // spawn_handles.list
}  // namespace

StoreError SnapshotStore::write_pipeline(std::int64_t id, const core::WorldCheckpoint& cp) {
  SqlError err;
  const std::string row = "snapshot_id=" + std::to_string(id);
  if (!cp.observer_views.empty() && cp.observer_views.size() != cp.observers.size()) {
    return error("observer_views", row, "observer_index",
                 std::to_string(cp.observer_views.size()) + " views for " + std::to_string(cp.observers.size()) +
                     " observers (none, or one per observer)");
  }
  Statement ov = db_.prepare("INSERT INTO observer_views VALUES (?1, ?2, ?3, ?4, ?5)", err);
  if (!err.ok()) return sql_error(err, "observer_views");
  for (std::size_t k = 0; k < cp.observer_views.size(); ++k) {
    const core::ObserverView& v = cp.observer_views[k];
    ov.reset();
    ov.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(k)).bind_double(3, v.z_m);
    ov.bind_i64(4, v.has_heading ? 1 : 0).bind_double(5, v.heading_rad);
    if (SqlError e = ov.run(); !e.ok()) return sql_error(e, "observer_views", row + " observer_index=" + std::to_string(k));
  }
  // Client observers (migration 0003).
  if (cp.client_observer_views.size() != cp.client_observers.size()) {
    return error("client_observers", row, "observer_index",
                 std::to_string(cp.client_observer_views.size()) + " views for " +
                     std::to_string(cp.client_observers.size()) + " client observers (one per observer)");
  }
  Statement co = db_.prepare("INSERT INTO client_observers VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", err);
  if (!err.ok()) return sql_error(err, "client_observers");
  for (std::size_t k = 0; k < cp.client_observers.size(); ++k) {
    const core::ObserverView& v = cp.client_observer_views[k];
    co.reset();
    co.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(k)).bind_double(3, cp.client_observers[k].x_m);
    co.bind_double(4, cp.client_observers[k].y_m).bind_double(5, v.z_m).bind_i64(6, v.has_heading ? 1 : 0);
    co.bind_double(7, v.heading_rad);
    if (SqlError e = co.run(); !e.ok()) {
      return sql_error(e, "client_observers", row + " observer_index=" + std::to_string(k));
    }
  }

  const core::SpawnPipelineState& sp = cp.spawn;
  Statement ps = db_.prepare("INSERT INTO spawn_pipeline VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", err);
  if (!err.ok()) return sql_error(err, "spawn_pipeline");
  const std::string per_state =
      json(std::vector<std::uint64_t>(std::begin(sp.counters.per_state_total), std::end(sp.counters.per_state_total)))
          .dump();
  ps.bind_i64(1, id).bind_u64(2, sp.next_handle).bind_u64(3, sp.counters.requested).bind_text(4, per_state);
  ps.bind_i64(5, sp.counters.deferred_by_cap).bind_i64(6, sp.counters.deferred_by_capacity);
  ps.bind_i64(7, sp.counters.deferred_by_zone);
  if (SqlError e = ps.run(); !e.ok()) return sql_error(e, "spawn_pipeline", row);
  Statement sh = db_.prepare(
      "INSERT INTO spawn_handles VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
      err);
  if (!err.ok()) return sql_error(err, "spawn_handles");
  const std::vector<core::SpawnHandleState>* lists[] = {&sp.live, &sp.recent};
  for (std::size_t l = 0; l < 2; ++l) {
    const auto& list = *lists[l];
    for (std::size_t k = 0; k < list.size(); ++k) {
      const core::SpawnHandleState& h = list[k];
      sh.reset();
      sh.bind_i64(1, id).bind_text(2, kHandleLists[l]).bind_i64(3, static_cast<std::int64_t>(k)).bind_u64(4, h.handle);
      sh.bind_i64(5, static_cast<std::int64_t>(h.state)).bind_i64(6, static_cast<std::int64_t>(h.failure));
      sh.bind_i64(7, h.entity.index).bind_i64(8, h.entity.generation).bind_i64(9, h.origin.client_id);
      sh.bind_i64(10, h.origin.request_id).bind_i64(11, h.zone).bind_i64(12, h.lane);
      sh.bind_i64(13, static_cast<std::int64_t>(h.priority)).bind_u64(14, h.requested_step);
      sh.bind_u64(15, h.deadline_step).bind_u64(16, h.state_step).bind_i64(17, h.route);
      if (SqlError e = sh.run(); !e.ok()) {
        return sql_error(e, "spawn_handles", row + " list='" + kHandleLists[l] + "' position=" + std::to_string(k));
      }
    }
  }

  Statement op = db_.prepare("INSERT INTO orphans VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", err);
  if (!err.ok()) return sql_error(err, "orphans");
  for (std::size_t k = 0; k < cp.orphans.size(); ++k) {
    const core::OrphanState& o = cp.orphans[k];
    op.reset();
    op.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(k)).bind_i64(3, o.id.index).bind_i64(4, o.id.generation);
    op.bind_i64(5, o.reason).bind_i64(6, o.lane).bind_double(7, o.s_m).bind_i64(8, o.resident);
    op.bind_u64(9, o.release_step);
    if (SqlError e = op.run(); !e.ok()) return sql_error(e, "orphans", row + " position=" + std::to_string(k));
  }
  Statement rf = db_.prepare("INSERT INTO retiring_fifo VALUES (?1, ?2, ?3, ?4)", err);
  if (!err.ok()) return sql_error(err, "retiring_fifo");
  for (std::size_t k = 0; k < cp.retiring_fifo.size(); ++k) {
    rf.reset();
    rf.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(k)).bind_i64(3, cp.retiring_fifo[k].index);
    rf.bind_i64(4, cp.retiring_fifo[k].generation);
    if (SqlError e = rf.run(); !e.ok()) return sql_error(e, "retiring_fifo", row + " position=" + std::to_string(k));
  }
  return {};
}

StoreError SnapshotStore::read_pipeline(std::int64_t id, const std::string& row, core::WorldCheckpoint& cp) {
  if (StoreError e = read_rows("observer_views", "observer_index", "z_m, has_heading, heading_rad", "", id, row,
                               [&](const Statement& st, const std::string& vrow) -> StoreError {
                                 RowReader rr(st);
                                 core::ObserverView v;
                                 v.z_m = rr.f64(1, "z_m");
                                 v.has_heading = rr.integer(2, "has_heading", 0, 1) != 0;
                                 v.heading_rad = rr.f64(3, "heading_rad");
                                 if (!rr.ok()) return error("observer_views", vrow, rr.field(), rr.message());
                                 cp.observer_views.push_back(v);
                                 return {};
                               });
      !e.ok()) {
    return e;
  }
  if (!cp.observer_views.empty() && cp.observer_views.size() != cp.observers.size()) {
    return error("observer_views", row, "observer_index",
                 std::to_string(cp.observer_views.size()) + " rows for " + std::to_string(cp.observers.size()) +
                     " observers in world_state.observers (none, or one per observer)");
  }
  // A checkpoint written before schema 3 has no rows here: an empty set (and
  // a schema-2 file opened read-only has no such table).
  if (file_version_ >= 3) {
    if (StoreError e = read_rows("client_observers", "observer_index", "x_m, y_m, z_m, has_heading, heading_rad", "", id,
                                 row,
                                 [&](const Statement& st, const std::string& vrow) -> StoreError {
                                   RowReader rr(st);
                                   core::Vec2 o;
                                   core::ObserverView v;
                                   o.x_m = rr.f64(1, "x_m");
                                   o.y_m = rr.f64(2, "y_m");
                                   v.z_m = rr.f64(3, "z_m");
                                   v.has_heading = rr.integer(4, "has_heading", 0, 1) != 0;
                                   v.heading_rad = rr.f64(5, "heading_rad");
                                   if (!rr.ok()) return error("client_observers", vrow, rr.field(), rr.message());
                                   cp.client_observers.push_back(o);
                                   cp.client_observer_views.push_back(v);
                                   return {};
                                 });
        !e.ok()) {
      return e;
    }
  }

  core::SpawnPipelineState& sp = cp.spawn;
  Statement ps;
  if (StoreError e = one_row("spawn_pipeline",
                             "next_handle, requested, per_state_total, deferred_by_cap, deferred_by_capacity, "
                             "deferred_by_zone",
                             id, row, ps);
      !e.ok()) {
    return e;
  }
  {
    RowReader rr(ps);
    sp.next_handle = rr.u64(0, "next_handle");
    sp.counters.requested = rr.u64(1, "requested");
    sp.counters.deferred_by_cap = rr.u32(3, "deferred_by_cap");
    sp.counters.deferred_by_capacity = rr.u32(4, "deferred_by_capacity");
    sp.counters.deferred_by_zone = rr.u32(5, "deferred_by_zone");
    if (!rr.ok()) return error("spawn_pipeline", row, rr.field(), rr.message());
    if (!parse_counts(ps.column_text(2), core::kSpawnStateCount, sp.counters.per_state_total)) {
      return error("spawn_pipeline", row, "per_state_total",
                   "expected a JSON array of " + std::to_string(core::kSpawnStateCount) + " counts");
    }
  }
  std::vector<core::SpawnHandleState>* lists[] = {&sp.live, &sp.recent};
  for (std::size_t l = 0; l < 2; ++l) {
    auto& list = *lists[l];
    const StoreError e = read_rows(
        "spawn_handles", "position",
        "handle, state, failure, entity_index, entity_generation, client_id, request_id, zone, lane, priority, "
        "requested_step, deadline_step, state_step, route",
        std::string("list='") + kHandleLists[l] + "'", id, row,
        [&](const Statement& st, const std::string& hrow) -> StoreError {
          RowReader rr(st);
          core::SpawnHandleState h;
          h.handle = rr.u64(1, "handle");
          h.state = static_cast<core::SpawnState>(rr.u8(2, "state", core::kSpawnStateCount - 1));
          h.failure = static_cast<core::SpawnFailure>(
              rr.u8(3, "failure", static_cast<std::int64_t>(core::SpawnFailure::WorldReplaced)));
          h.entity = rr.id(4, "entity_index", "entity_generation");
          h.origin.client_id = rr.u32(6, "client_id");
          h.origin.request_id = rr.u32(7, "request_id");
          h.zone = rr.i32(8, "zone", core::kAnyZone);
          h.lane = rr.u32(9, "lane");
          h.priority = static_cast<core::PriorityClass>(rr.u8(10, "priority", core::kPriorityClassCount - 1));
          h.requested_step = rr.u64(11, "requested_step");
          h.deadline_step = rr.u64(12, "deadline_step");
          h.state_step = rr.u64(13, "state_step");
          h.route = rr.u32(14, "route");
          if (!rr.ok()) return error("spawn_handles", hrow, rr.field(), rr.message());
          list.push_back(h);
          return {};
        });
    if (!e.ok()) return e;
  }

  if (StoreError e = read_rows("orphans", "position", "id_index, id_generation, reason, lane, s_m, resident, release_step",
                               "", id, row,
                               [&](const Statement& st, const std::string& orow) -> StoreError {
                                 RowReader rr(st);
                                 core::OrphanState o;
                                 o.id = rr.id(1, "id_index", "id_generation");
                                 o.reason = rr.u8(3, "reason");
                                 o.lane = rr.u32(4, "lane");
                                 o.s_m = rr.f64(5, "s_m");
                                 o.resident = rr.u32(6, "resident");
                                 o.release_step = rr.u64(7, "release_step");
                                 if (!rr.ok()) return error("orphans", orow, rr.field(), rr.message());
                                 cp.orphans.push_back(o);
                                 return {};
                               });
      !e.ok()) {
    return e;
  }
  return read_rows("retiring_fifo", "position", "id_index, id_generation", "", id, row,
                   [&](const Statement& st, const std::string& frow) -> StoreError {
                     RowReader rr(st);
                     const core::EntityId e = rr.id(1, "id_index", "id_generation");
                     if (!rr.ok()) return error("retiring_fifo", frow, rr.field(), rr.message());
                     cp.retiring_fifo.push_back(e);
                     return {};
                   });
}

StoreError SnapshotStore::write_u32_rows(const char* table, std::int64_t id, const std::vector<std::uint32_t>& values) {
  SqlError err;
  Statement st = db_.prepare(std::string("INSERT INTO ") + table + " VALUES (?1, ?2, ?3)", err);
  if (!err.ok()) return sql_error(err, table);
  for (std::size_t k = 0; k < values.size(); ++k) {
    st.reset();
    st.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(k)).bind_i64(3, values[k]);
    if (SqlError e = st.run(); !e.ok()) {
      return sql_error(e, table, "snapshot_id=" + std::to_string(id) + " position=" + std::to_string(k));
    }
  }
  return {};
}

StoreError SnapshotStore::read_u32_rows(const char* table, const char* column, std::int64_t id, const std::string& row,
                                        std::vector<std::uint32_t>& out) {
  const auto read_value = [&](const Statement& st, const std::string& vrow) -> StoreError {
    RowReader rr(st);
    const std::uint32_t v = rr.u32(1, column);
    if (!rr.ok()) return error(table, vrow, rr.field(), rr.message());
    out.push_back(v);
    return {};
  };
  return read_rows(table, "position", column, "", id, row, read_value);
}

StoreError SnapshotStore::write_routes(std::int64_t id, const core::RouteTableState& r) {
  SqlError err;
  const std::string row = "snapshot_id=" + std::to_string(id);
  if (r.offset.size() != r.count.size() || r.target.size() != r.count.size()) {
    return error("route_slots", row, "slot",
                 "offset, count and target have " + std::to_string(r.offset.size()) + ", " +
                     std::to_string(r.count.size()) + " and " + std::to_string(r.target.size()) +
                     " entries (one of each per slot)");
  }
  Statement rs = db_.prepare("INSERT INTO route_slots VALUES (?1, ?2, ?3, ?4, ?5)", err);
  if (!err.ok()) return sql_error(err, "route_slots");
  for (std::size_t k = 0; k < r.count.size(); ++k) {
    rs.reset();
    rs.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(k)).bind_i64(3, r.offset[k]).bind_i64(4, r.count[k]);
    rs.bind_i64(5, r.target[k]);
    if (SqlError e = rs.run(); !e.ok()) return sql_error(e, "route_slots", row + " slot=" + std::to_string(k));
  }
  if (StoreError e = write_u32_rows("route_lanes", id, r.lanes); !e.ok()) return e;
  return write_u32_rows("route_free_slots", id, r.free_slots);
}

StoreError SnapshotStore::read_routes(std::int64_t id, const std::string& row, core::RouteTableState& r) {
  // The buffer first: a live route must lie inside it. Free slots and lane
  // indices are checked by World::restore (RouteTable::validate).
  if (StoreError e = read_u32_rows("route_lanes", "lane", id, row, r.lanes); !e.ok()) return e;
  const auto buffer = static_cast<std::int64_t>(r.lanes.size());
  const auto read_slot = [&](const Statement& st, const std::string& srow) -> StoreError {
    RowReader rr(st);
    const std::int64_t count = rr.integer(2, "count", 0, buffer);
    // A live route lies inside the buffer; a free slot (count 0) may keep any offset.
    const std::int64_t offset = rr.integer(1, "offset", 0, count > 0 ? buffer - count : UINT32_MAX);
    const std::int64_t target = rr.integer(3, "target", 0, count);
    if (!rr.ok()) return error("route_slots", srow, rr.field(), rr.message());
    r.offset.push_back(static_cast<std::uint32_t>(offset));
    r.count.push_back(static_cast<std::uint32_t>(count));
    r.target.push_back(static_cast<std::uint32_t>(target));
    return {};
  };
  if (StoreError e = read_rows("route_slots", "slot", "offset, count, target", "", id, row, read_slot); !e.ok()) {
    return e;
  }
  return read_u32_rows("route_free_slots", "slot", id, row, r.free_slots);
}

StoreError SnapshotStore::write_save_residents(std::int64_t id, const core::SaveState& save) {
  SqlError err;
  const std::string row = "snapshot_id=" + std::to_string(id);
  if (save.saveable_zones.size() != save.saveable_ids.size()) {
    return error("save_residents", row, "zone_id",
                 std::to_string(save.saveable_zones.size()) + " zones for " + std::to_string(save.saveable_ids.size()) +
                     " saveable residents (must be parallel)");
  }
  Statement st = db_.prepare("INSERT INTO save_residents VALUES (?1, ?2, ?3, ?4, ?5)", err);
  if (!err.ok()) return sql_error(err, "save_residents");
  for (std::size_t k = 0; k < save.saveable_ids.size(); ++k) {
    st.reset();
    st.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(k)).bind_i64(3, save.saveable_ids[k].index);
    st.bind_i64(4, save.saveable_ids[k].generation).bind_text(5, save.saveable_zones[k]);
    if (SqlError e = st.run(); !e.ok()) return sql_error(e, "save_residents", row + " position=" + std::to_string(k));
  }
  return {};
}

StoreError SnapshotStore::read_save_residents(std::int64_t id, const std::string& row, core::SaveState& save) {
  return read_rows("save_residents", "position", "id_index, id_generation, zone_id", "", id, row,
                   [&](const Statement& st, const std::string& rrow) -> StoreError {
                     RowReader rr(st);
                     const core::EntityId e = rr.id(1, "id_index", "id_generation");
                     if (!rr.ok()) return error("save_residents", rrow, rr.field(), rr.message());
                     save.saveable_ids.push_back(e);
                     save.saveable_zones.push_back(st.column_text(3));
                     return {};
                   });
}

namespace {
constexpr const char* kInfoColumns =
    "id, name, kind, scenario_id, step, sim_time_us, digest, pedestrians, created_unix_ms, scenario_json, seed, step_us, "
    "schema_version";
}

StoreError SnapshotStore::read_info(Statement& st, SnapshotInfo& info) const {
  info.id = st.column_i64(0);
  info.name = st.column_text(1);
  info.kind = st.column_text(2);
  info.scenario_id = st.column_text(3);
  info.step = st.column_u64(4);
  info.sim_time_us = st.column_u64(5);
  info.digest = st.column_u64(6);
  const std::int64_t peds = st.column_i64(7);
  if (peds < 0 || peds > UINT32_MAX) {
    return error("snapshots", "name='" + info.name + "'", "pedestrians", "count out of range");
  }
  info.pedestrians = static_cast<std::uint32_t>(peds);
  info.created_unix_ms = st.column_i64(8);
  const std::int64_t version = st.column_i64(12);
  if (version < 1 || version > kSchemaVersion) {
    return error("snapshots", "name='" + info.name + "'", "schema_version",
                 std::to_string(version) + " is out of range [1, " + std::to_string(kSchemaVersion) + "]");
  }
  info.schema_version = static_cast<int>(version);
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

StoreError SnapshotStore::read_checkpoint_by_id(std::int64_t id, LoadedCheckpoint& out) {
  if (SqlError e = quick_check_on_read_ ? db_.quick_check() : SqlError{}; !e.ok()) {
    return error("", "", "", "file failed PRAGMA quick_check: " + e.message, e.code);
  }
  SqlError err;
  const std::string row = "snapshot_id=" + std::to_string(id);
  Statement st = db_.prepare(std::string("SELECT ") + kInfoColumns + " FROM snapshots WHERE id = ?1", err);
  if (!err.ok()) return sql_error(err, "snapshots");
  st.bind_i64(1, id);
  if (!st.step()) {
    if (!st.error().ok()) return sql_error(st.error(), "snapshots", row);
    return error("snapshots", row, "", "no snapshot with this id");
  }
  LoadedCheckpoint lc;
  if (StoreError e = read_info(st, lc.info); !e.ok()) return e;
  const std::string named = "name='" + lc.info.name + "'";
  if (lc.info.kind != "checkpoint" && lc.info.kind != "keyframe") {
    return error("snapshots", named, "kind", "is a " + lc.info.kind + ", not a checkpoint (use load for saves)");
  }
  if (lc.info.schema_version < 2) {
    return error("snapshots", named, "schema_version",
                 "checkpoint written with schema version " + std::to_string(lc.info.schema_version) +
                     ", before the population pipeline (spawn handles, orphans, zone handoffs, lifecycle settings): "
                     "it cannot be restored exactly; take a new checkpoint (saves still load)");
  }
  lc.scenario_json = st.column_text(9);
  core::WorldCheckpoint& cp = lc.checkpoint;
  cp.scenario_id = lc.info.scenario_id;
  cp.seed = st.column_u64(10);
  cp.step_index = lc.info.step;
  const std::int64_t step_us = st.column_i64(11);
  if (step_us <= 0 || step_us > UINT32_MAX) return error("snapshots", named, "step_us", "out of range");
  cp.step_us = static_cast<std::uint32_t>(step_us);
  cp.digest = lc.info.digest;

  Statement ws = db_.prepare("SELECT * FROM world_state WHERE snapshot_id = ?1", err);
  if (!err.ok()) return sql_error(err, "world_state");
  ws.bind_i64(1, id);
  if (!ws.step()) {
    if (!ws.error().ok()) return sql_error(ws.error(), "world_state", row);
    return error("world_state", row, "", "missing (checkpoint incomplete)");
  }
  for (int k = 0; k < 4; ++k) cp.rng_state[static_cast<std::size_t>(k)] = ws.column_u64(1 + k);
  cp.route_salt = ws.column_u64(5);
  const std::int64_t target = ws.column_i64(6);
  if (target < 0 || target > UINT32_MAX) return error("world_state", row, "pedestrian_target", "out of range");
  cp.pedestrian_target = static_cast<std::uint32_t>(target);
  cp.counters.spawned_total = ws.column_u64(7);
  cp.counters.despawned_total = ws.column_u64(8);
  {
    const std::string t = ws.column_text(9);
    const json j = json::parse(t, nullptr, false);
    bool ok = j.is_array() && j.size() == cp.counters.despawned_by_reason.size();
    for (std::size_t k = 0; ok && k < j.size(); ++k) {
      ok = j[k].is_number_unsigned();
      if (ok) cp.counters.despawned_by_reason[k] = j[k].get<std::uint64_t>();
    }
    if (!ok) {
      return error("world_state", row, "despawned_by_reason",
                   "expected a JSON array of " + std::to_string(cp.counters.despawned_by_reason.size()) +
                       " counts, got '" + t + "'");
    }
  }
  cp.counters.spawn_failed_capacity = ws.column_u64(10);
  cp.counters.commands_accepted = ws.column_u64(11);
  cp.counters.commands_rejected = ws.column_u64(12);
  const std::int64_t capacity = ws.column_i64(13);
  if (capacity <= 0 || capacity > (1 << 24)) return error("world_state", row, "registry_capacity", "out of range");
  cp.registry.pop_seq = ws.column_u64(14);
  const auto cap = static_cast<std::size_t>(capacity);
  if (!decode(ws.column_blob(15), cap, cp.registry.generation)) {
    return error("world_state", row, "registry_generation", "blob size does not match registry_capacity");
  }
  if (!decode(ws.column_blob(16), cap, cp.registry.alive)) {
    return error("world_state", row, "registry_alive", "blob size does not match registry_capacity");
  }
  {
    const auto fifo = ws.column_blob(17);
    if (fifo.size() % 4 != 0 || !decode(fifo, fifo.size() / 4, cp.registry.free_fifo)) {
      return error("world_state", row, "registry_free_fifo", "blob size is not a multiple of 4");
    }
  }
  cp.vehicles.plan.cursor = ws.column_u64(18);
  cp.vehicles.plan.accepted = ws.column_u64(19);
  cp.vehicles.plan.rejected = ws.column_u64(20);
  {
    const json obs = json::parse(ws.column_text(21), nullptr, false);
    if (!obs.is_array()) return error("world_state", row, "observers", "expected a JSON array of [x, y]");
    for (const json& o : obs) {
      if (!o.is_array() || o.size() != 2 || !o[0].is_number() || !o[1].is_number()) {
        return error("world_state", row, "observers", "expected a JSON array of [x, y]");
      }
      cp.observers.push_back({o[0].get<double>(), o[1].get<double>()});
    }
  }
  cp.population.day_us = ws.column_u64(22);
  const std::int64_t scale = ws.column_i64(23);
  if (scale < 0 || scale > UINT32_MAX) return error("world_state", row, "time_scale", "out of range");
  cp.population.time_scale = static_cast<std::uint32_t>(scale);
  cp.population.last_interval = ws.column_u64(24);
  {
    const json forced = json::parse(ws.column_text(25), nullptr, false);
    if (!forced.is_array()) return error("world_state", row, "forced_full", "expected a JSON array of [index, generation]");
    for (const json& f : forced) {
      if (!f.is_array() || f.size() != 2 || !f[0].is_number_unsigned() || !f[1].is_number_unsigned()) {
        return error("world_state", row, "forced_full", "expected a JSON array of [index, generation]");
      }
      cp.forced_full.push_back({f[0].get<std::uint32_t>(), f[1].get<std::uint32_t>()});
    }
  }
  cp.force_full_refused = ws.column_u64(26);
  if (!parse_vehicle_stats(ws.column_text(27), cp.vehicles)) {
    return error("world_state", row, "vehicle_step_stats", "malformed JSON");
  }
  {
    RowReader rr(ws);
    cp.counters.faded_total = rr.u64(28, "faded_total");
    cp.counters.fade_skipped_total = rr.u64(29, "fade_skipped_total");
    cp.population.interval_origin_us = rr.u64(30, "interval_origin_us");
    if (!rr.ok()) return error("world_state", row, rr.field(), rr.message());
  }
  if (StoreError e = read_vehicles(id, row, cp.vehicles); !e.ok()) return e;
  if (StoreError e = read_population(id, row, cp.population); !e.ok()) return e;
  if (StoreError e = read_pipeline(id, row, cp); !e.ok()) return e;
  if (StoreError e = read_routes(id, row, cp.routes); !e.ok()) return e;

  Statement pc = db_.prepare(
      "SELECT count, id_index, id_generation, lane, s_m, hops, resident, tier, tier_stats, priority, origin, route "
      "FROM pedestrian_columns WHERE snapshot_id = ?1",
      err);
  if (!err.ok()) return sql_error(err, "pedestrian_columns");
  pc.bind_i64(1, id);
  if (!pc.step()) {
    if (!pc.error().ok()) return sql_error(pc.error(), "pedestrian_columns", row);
    return error("pedestrian_columns", row, "", "missing (checkpoint incomplete)");
  }
  const std::int64_t count = pc.column_i64(0);
  if (count < 0 || count != static_cast<std::int64_t>(lc.info.pedestrians)) {
    return error("pedestrian_columns", row, "count",
                 std::to_string(count) + " does not match snapshots.pedestrians " + std::to_string(lc.info.pedestrians));
  }
  const auto n = static_cast<std::size_t>(count);
  std::vector<std::uint32_t> idx, gen;
  if (!decode(pc.column_blob(1), n, idx)) return error("pedestrian_columns", row, "id_index", "blob size does not match count");
  if (!decode(pc.column_blob(2), n, gen)) return error("pedestrian_columns", row, "id_generation", "blob size does not match count");
  if (!decode(pc.column_blob(3), n, cp.pedestrians.lane)) return error("pedestrian_columns", row, "lane", "blob size does not match count");
  if (!decode(pc.column_blob(4), n, cp.pedestrians.s_m)) return error("pedestrian_columns", row, "s_m", "blob size does not match count");
  if (!decode(pc.column_blob(5), n, cp.pedestrians.hops)) return error("pedestrian_columns", row, "hops", "blob size does not match count");
  if (!decode(pc.column_blob(6), n, cp.pedestrians.resident)) {
    return error("pedestrian_columns", row, "resident", "blob size does not match count");
  }
  if (!decode(pc.column_blob(7), n, cp.pedestrians.tier)) {
    return error("pedestrian_columns", row, "tier", "blob size does not match count");
  }
  if (!decode(pc.column_blob(9), n, cp.pedestrians.priority)) {
    return error("pedestrian_columns", row, "priority", "blob size does not match count");
  }
  if (!decode(pc.column_blob(10), n, cp.pedestrians.origin)) {
    return error("pedestrian_columns", row, "origin", "blob size does not match count");
  }
  if (!decode(pc.column_blob(11), n, cp.pedestrians.route)) {
    return error("pedestrian_columns", row, "route", "blob size does not match count");
  }
  {
    const json ts = json::parse(pc.column_text(8), nullptr, false);
    bool ok = ts.is_array() && ts.size() == 8;
    for (std::size_t k = 0; ok && k < 8; ++k) ok = ts[k].is_number_unsigned() && ts[k].get<std::uint64_t>() <= UINT32_MAX;
    if (!ok) return error("pedestrian_columns", row, "tier_stats", "expected a JSON array of 8 counts");
    core::TierCounts& pt = cp.pedestrian_tiers;
    for (std::size_t k = 0; k < 3; ++k) pt.per_tier[k] = ts[k].get<std::uint32_t>();
    pt.promoted = ts[3].get<std::uint32_t>();
    pt.demoted = ts[4].get<std::uint32_t>();
    pt.deferred = ts[5].get<std::uint32_t>();
    pt.forced = ts[6].get<std::uint32_t>();
    pt.forced_overflow = ts[7].get<std::uint32_t>();
  }
  cp.pedestrians.id.resize(n);
  for (std::size_t i = 0; i < n; ++i) cp.pedestrians.id[i] = core::EntityId{idx[i], gen[i]};

  Statement cmd = db_.prepare(
      "SELECT seq, client_id, request_id, kind, args FROM pending_commands WHERE snapshot_id = ?1 ORDER BY seq", err);
  if (!err.ok()) return sql_error(err, "pending_commands");
  cmd.bind_i64(1, id);
  std::int64_t expected_seq = 0;
  while (cmd.step()) {
    const std::string crow = row + " seq=" + std::to_string(cmd.column_i64(0));
    if (cmd.column_i64(0) != expected_seq++) return error("pending_commands", crow, "seq", "sequence has a gap");
    core::CommandEnvelope env;
    env.origin.client_id = static_cast<std::uint32_t>(cmd.column_i64(1));
    env.origin.request_id = static_cast<std::uint32_t>(cmd.column_i64(2));
    std::string why;
    auto decoded = decode_command(cmd.column_text(3), cmd.column_text(4), why);
    if (!decoded) return error("pending_commands", crow, why.substr(0, why.find(':')), why);
    env.command = std::move(*decoded);
    cp.inbox.push_back(std::move(env));
  }
  if (!cmd.error().ok()) return sql_error(cmd.error(), "pending_commands", row);
  out = std::move(lc);
  return {};
}

StoreError SnapshotStore::read_save(const std::string& name, LoadedSave& out) {
  if (SqlError e = db_.quick_check(); !e.ok()) {
    return error("", "", "", "file failed PRAGMA quick_check: " + e.message, e.code);
  }
  SqlError err;
  Statement st = db_.prepare(std::string("SELECT ") + kInfoColumns +
                                 ", s.pedestrian_target, s.day_us, s.time_scale, s.garage_ordinals "
                                 "FROM snapshots LEFT JOIN save_state s ON s.snapshot_id = snapshots.id "
                                 "WHERE snapshots.name = ?1",
                             err);
  if (!err.ok()) return sql_error(err, "snapshots");
  st.bind_text(1, name);
  const std::string named = "name='" + name + "'";
  if (!st.step()) {
    if (!st.error().ok()) return sql_error(st.error(), "snapshots", named);
    return error("snapshots", named, "", "no snapshot with this name");
  }
  LoadedSave ls;
  if (StoreError e = read_info(st, ls.info); !e.ok()) return e;
  if (ls.info.kind != "save") return error("snapshots", named, "kind", "is a " + ls.info.kind + ", not a save (use restore)");
  ls.scenario_json = st.column_text(9);
  ls.save.scenario_id = ls.info.scenario_id;
  ls.save.seed = st.column_u64(10);
  ls.save.step_index = ls.info.step;
  const std::int64_t step_us = st.column_i64(11);
  if (step_us <= 0 || step_us > UINT32_MAX) return error("snapshots", named, "step_us", "out of range");
  ls.save.step_us = static_cast<std::uint32_t>(step_us);
  if (st.column_is_null(13)) return error("save_state", named, "", "missing (save incomplete)");
  const std::int64_t target = st.column_i64(13);
  if (target < 0 || target > UINT32_MAX) return error("save_state", named, "pedestrian_target", "out of range");
  ls.save.pedestrian_target = static_cast<std::uint32_t>(target);
  ls.save.day_us = st.column_u64(14);
  const std::int64_t scale = st.column_i64(15);
  if (scale < 1 || scale > 3600) return error("save_state", named, "time_scale", "out of range");
  ls.save.time_scale = static_cast<std::uint32_t>(scale);
  const json ords = json::parse(st.column_text(16), nullptr, false);
  if (!ords.is_array()) return error("save_state", named, "garage_ordinals", "expected a JSON array");
  for (const json& o : ords) {
    if (!o.is_number_unsigned()) return error("save_state", named, "garage_ordinals", "expected unsigned integers");
    ls.save.garage_vehicle_ordinals.push_back(o.get<std::uint64_t>());
  }
  // Version-1 saves have neither (complete_schema1_save fills the settings).
  if (ls.info.schema_version >= 2) {
    if (StoreError e = read_lifecycle(ls.info.id, named, ls.save.lifecycle); !e.ok()) return e;
    if (StoreError e = read_save_residents(ls.info.id, named, ls.save); !e.ok()) return e;
  }
  out = std::move(ls);
  return {};
}

StoreError SnapshotStore::list(std::vector<SnapshotInfo>& out, bool include_keyframes) {
  SqlError err;
  Statement st = db_.prepare(std::string("SELECT ") + kInfoColumns + " FROM snapshots " +
                                 (include_keyframes ? "" : "WHERE kind != 'keyframe' ") + "ORDER BY id",
                             err);
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
