#include "bustle/persist/snapshot_store.hpp"

#include <sqlite3.h>

#include <bit>
#include <cstring>
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

}  // namespace

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
  if (read_only && version != kSchemaVersion) {
    return s.error("meta", "", "schema_version",
                   "file has schema version " + std::to_string(version) + "; opening read-only cannot migrate it to " +
                       std::to_string(kSchemaVersion));
  }
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
  if (version < kSchemaVersion) {
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
  if (schema_version != std::to_string(kSchemaVersion)) {
    return s.error("meta", "key='schema_version'", "value",
                   "schema version '" + schema_version + "' does not match PRAGMA user_version " +
                       std::to_string(kSchemaVersion));
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
      "pedestrians, created_unix_ms, server_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
      err);
  if (!err.ok()) return sql_error(err, "snapshots");
  ins.bind_text(1, name).bind_text(2, kind).bind_text(3, scenario_id).bind_text(4, scenario_json);
  ins.bind_u64(5, step).bind_i64(6, step_us).bind_u64(7, step * step_us).bind_u64(8, seed).bind_u64(9, digest);
  ins.bind_i64(10, static_cast<std::int64_t>(entities)).bind_i64(11, created_unix_ms).bind_text(12, server_version());
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
      "?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)",
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
  if (SqlError e = ws.run(); !e.ok()) return sql_error(e, "world_state", "snapshot_id=" + std::to_string(id));
  if (StoreError e = write_vehicles(id, cp.vehicles); !e.ok()) return e;
  if (StoreError e = write_population(id, cp.population); !e.ok()) return e;

  const std::size_t n = cp.pedestrians.id.size();
  std::vector<std::uint32_t> idx(n), gen(n);
  for (std::size_t i = 0; i < n; ++i) {
    idx[i] = cp.pedestrians.id[i].index;
    gen[i] = cp.pedestrians.id[i].generation;
  }
  Statement pc = db_.prepare("INSERT INTO pedestrian_columns VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)", err);
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
      "?18, ?19, ?20, ?21)",
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

StoreError SnapshotStore::column_row(const char* table, std::int64_t id, const std::string& row, Statement& st,
                                     std::size_t& n) {
  SqlError err;
  st = db_.prepare(std::string("SELECT * FROM ") + table + " WHERE snapshot_id = ?1", err);
  if (!err.ok()) return sql_error(err, table);
  st.bind_i64(1, id);
  if (!st.step()) {
    if (!st.error().ok()) return sql_error(st.error(), table, row);
    return error(table, row, "", "missing (checkpoint incomplete)");
  }
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
      "INSERT INTO zones VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)", err);
  if (!err.ok()) return sql_error(err, "zones");
  for (std::size_t k = 0; k < p.zones.size(); ++k) {
    const core::ZoneStatus& s = p.zones[k];
    const std::string zone_id = k < p.zone_ids.size() ? p.zone_ids[k] : std::string();
    z.reset();
    z.bind_i64(1, id).bind_i64(2, static_cast<std::int64_t>(k)).bind_text(3, zone_id).bind_i64(4, s.target);
    z.bind_i64(5, s.active).bind_i64(6, s.dormant).bind_i64(7, s.pending_spawn).bind_i64(8, s.pending_recycle);
    z.bind_i64(9, s.activated).bind_i64(10, s.recycled).bind_i64(11, s.deferred_by_quota);
    z.bind_i64(12, s.rejected_by_capacity).bind_i64(13, s.migrated_in).bind_i64(14, s.deferred_by_migration);
    z.bind_u64(15, s.activated_total).bind_u64(16, s.recycled_total);
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
    auto u32 = [&](int col, std::uint32_t& out, const char* name) {
      const std::int64_t v = z.column_i64(col);
      if (v < 0 || v > UINT32_MAX) return false;
      out = static_cast<std::uint32_t>(v);
      (void)name;
      return true;
    };
    if (!u32(3, s.target, "target") || !u32(4, s.active, "active") || !u32(5, s.dormant, "dormant") ||
        !u32(6, s.pending_spawn, "pending_spawn") || !u32(7, s.pending_recycle, "pending_recycle") ||
        !u32(8, s.activated, "activated") || !u32(9, s.recycled, "recycled") ||
        !u32(10, s.deferred_by_quota, "deferred_by_quota") || !u32(11, s.rejected_by_capacity, "rejected_by_capacity") ||
        !u32(12, s.migrated_in, "migrated_in") || !u32(13, s.deferred_by_migration, "deferred_by_migration")) {
      return error("zones", zrow, "", "a count is out of range");
    }
    s.activated_total = z.column_u64(14);
    s.recycled_total = z.column_u64(15);
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
  return {};
}

namespace {
constexpr const char* kInfoColumns =
    "id, name, kind, scenario_id, step, sim_time_us, digest, pedestrians, created_unix_ms, scenario_json, seed, step_us";
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
  if (SqlError e = db_.quick_check(); !e.ok()) {
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
  if (StoreError e = read_vehicles(id, row, cp.vehicles); !e.ok()) return e;
  if (StoreError e = read_population(id, row, cp.population); !e.ok()) return e;

  Statement pc = db_.prepare(
      "SELECT count, id_index, id_generation, lane, s_m, hops, resident, tier, tier_stats FROM pedestrian_columns "
      "WHERE snapshot_id = ?1",
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
  if (st.column_is_null(12)) return error("save_state", named, "", "missing (save incomplete)");
  const std::int64_t target = st.column_i64(12);
  if (target < 0 || target > UINT32_MAX) return error("save_state", named, "pedestrian_target", "out of range");
  ls.save.pedestrian_target = static_cast<std::uint32_t>(target);
  ls.save.day_us = st.column_u64(13);
  const std::int64_t scale = st.column_i64(14);
  if (scale < 1 || scale > 3600) return error("save_state", named, "time_scale", "out of range");
  ls.save.time_scale = static_cast<std::uint32_t>(scale);
  const json ords = json::parse(st.column_text(15), nullptr, false);
  if (!ords.is_array()) return error("save_state", named, "garage_ordinals", "expected a JSON array");
  for (const json& o : ords) {
    if (!o.is_number_unsigned()) return error("save_state", named, "garage_ordinals", "expected unsigned integers");
    ls.save.garage_vehicle_ordinals.push_back(o.get<std::uint64_t>());
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
