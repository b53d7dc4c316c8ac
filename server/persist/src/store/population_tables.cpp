// The population's tables: resident identities (bulk columns), zone status,
// work points, the lifecycle settings and the zone handoffs in flight.
#include "tables.hpp"

namespace bustle::persist::store {
namespace {

const TableColumns kResidentColumns{
    "resident_columns",
    {"snapshot_id", "count", "id_index", "id_generation", "community", "profession", "zone",
     "active", "work_point", "work_slot"}};

// Schema 10: sparse, only residents that ever migrated (ResidentMigration).
const TableColumns kResidentMigrations{
    "resident_migrations", {"snapshot_id", "count", "resident", "migrations", "last_portal"}};

const TableColumns kZones{"zones",
                          {"snapshot_id",
                           "zone_index",
                           "zone_id",
                           "target",
                           "active",
                           "dormant",
                           "pending_spawn",
                           "pending_recycle",
                           "activated",
                           "recycled",
                           "deferred_by_quota",
                           "rejected_by_capacity",
                           "migrated_in",
                           "deferred_by_migration",
                           "activated_total",
                           "recycled_total",
                           "handoffs_started",
                           "handoffs_accepted",
                           "handoffs_returned",
                           "retiring"}};

const TableColumns kWorkPoints{"work_points",
                               {"snapshot_id", "work_point_index", "occupants", "waiting"}};

const TableColumns kLifecycleSettings{
    "lifecycle_settings",
    {"snapshot_id", "growth_quota", "recycle_quota", "interval_ms", "migration_budget"}};

const TableColumns kZoneHandoffs{"zone_handoffs",
                                 {"snapshot_id", "position", "resident", "from_zone", "to_zone"}};

// The u32 counters of a zones row, by column (activated_total and
// recycled_total are u64 and bound apart).
template <class Z>
auto zone_counters(Z& s) {
  using Field = decltype(&s.target);
  return std::array<std::pair<const char*, Field>, 15>{
      {{"target", &s.target},
       {"active", &s.active},
       {"dormant", &s.dormant},
       {"pending_spawn", &s.pending_spawn},
       {"pending_recycle", &s.pending_recycle},
       {"activated", &s.activated},
       {"recycled", &s.recycled},
       {"deferred_by_quota", &s.deferred_by_quota},
       {"rejected_by_capacity", &s.rejected_by_capacity},
       {"migrated_in", &s.migrated_in},
       {"deferred_by_migration", &s.deferred_by_migration},
       {"handoffs_started", &s.handoffs_started},
       {"handoffs_accepted", &s.handoffs_accepted},
       {"handoffs_returned", &s.handoffs_returned},
       {"retiring", &s.retiring}}};
}

StoreError write_residents(Tables& t, std::int64_t id, const core::ResidentStore& r) {
  assert(all_sized(r.id.size(), r.community, r.profession, r.zone, r.active, r.work_point,
                   r.work_slot));
  const IdBlobs ids(r.id);
  Insert rc;
  if (StoreError e = t.prepare(kResidentColumns, rc); !e.ok()) return e;
  rc.i64("snapshot_id", id).i64("count", static_cast<std::int64_t>(r.id.size()));
  rc.blob("id_index", ids.index)
      .blob("id_generation", ids.generation)
      .blob("community", r.community)
      .blob("profession", r.profession);
  rc.blob("zone", r.zone)
      .blob("active", r.active)
      .blob("work_point", r.work_point)
      .blob("work_slot", r.work_slot);
  return t.run(rc, kResidentColumns, snapshot_row(id));
}

StoreError read_residents(Tables& t, std::int64_t id, core::ResidentStore& r) {
  const std::string row = snapshot_row(id);
  Statement st;
  std::size_t n = 0;
  if (StoreError e = t.blob_row(kResidentColumns, id, row, st, n); !e.ok()) return e;
  RowReader rr(st, kResidentColumns);
  rr.ids("id_index", "id_generation", n, r.id);
  rr.blob("community", n, r.community);
  rr.blob("profession", n, r.profession);
  rr.blob("zone", n, r.zone);
  rr.blob("active", n, r.active);
  rr.blob("work_point", n, r.work_point);
  rr.blob("work_slot", n, r.work_slot);
  if (!rr.ok()) return t.row_error(kResidentColumns, row, rr);
  assert(
      all_sized(n, r.id, r.community, r.profession, r.zone, r.active, r.work_point, r.work_slot));
  return {};
}

StoreError write_migrations(Tables& t, std::int64_t id,
                            const std::vector<core::ResidentMigration>& m) {
  std::vector<std::uint32_t> resident(m.size()), count(m.size()), portal(m.size());
  for (std::size_t k = 0; k < m.size(); ++k) {
    resident[k] = m[k].resident;
    count[k] = m[k].count;
    portal[k] = m[k].last_portal;
  }
  Insert st;
  if (StoreError e = t.prepare(kResidentMigrations, st); !e.ok()) return e;
  st.i64("snapshot_id", id).i64("count", static_cast<std::int64_t>(m.size()));
  st.blob("resident", resident).blob("migrations", count).blob("last_portal", portal);
  return t.run(st, kResidentMigrations, snapshot_row(id));
}

StoreError read_migrations(Tables& t, std::int64_t id, std::vector<core::ResidentMigration>& m) {
  if (t.file_version() < 10) return {};  // no table before: nobody migrated
  // A snapshot written before the file was migrated to 10 has no row: nobody
  // migrated. Otherwise one row of bulk columns.
  const std::string row = snapshot_row(id);
  return t.each_row(kResidentMigrations, "snapshot_id", id, row,
                    [&](RowReader& rr, const Statement&) -> StoreError {
                      const std::int64_t count = rr.integer("count", 0, 1 << 24);
                      if (!rr.ok())
                        return t.error("resident_migrations", row, "count", "out of range");
                      const auto n = static_cast<std::size_t>(count);
                      std::vector<std::uint32_t> resident, migrations, portal;
                      rr.blob("resident", n, resident);
                      rr.blob("migrations", n, migrations);
                      rr.blob("last_portal", n, portal);
                      if (!rr.ok()) return t.row_error(kResidentMigrations, row, rr);
                      m.resize(n);
                      for (std::size_t k = 0; k < n; ++k)
                        m[k] = {resident[k], migrations[k], portal[k]};
                      return {};
                    });
}

StoreError write_zones(Tables& t, std::int64_t id, const core::PopulationCheckpoint& p) {
  Insert z;
  if (StoreError e = t.prepare(kZones, z); !e.ok()) return e;
  for (std::size_t k = 0; k < p.zones.size(); ++k) {
    const core::ZoneStatus& s = p.zones[k];
    z.i64("snapshot_id", id).i64("zone_index", static_cast<std::int64_t>(k));
    z.text("zone_id", k < p.zone_ids.size() ? p.zone_ids[k] : std::string());
    for (const auto& [column, field] : zone_counters(s)) z.i64(column, *field);
    z.u64("activated_total", s.activated_total).u64("recycled_total", s.recycled_total);
    if (StoreError e = t.run(z, kZones, snapshot_row(id)); !e.ok()) return e;
  }
  return {};
}

StoreError read_zones(Tables& t, std::int64_t id, core::PopulationCheckpoint& p) {
  return t.read_rows(kZones, "zone_index", "", id, snapshot_row(id),
                     [&](RowReader& rr, const std::string&) {
                       core::ZoneStatus s;
                       p.zone_ids.push_back(rr.text("zone_id"));
                       for (const auto& [column, field] : zone_counters(s)) *field = rr.u32(column);
                       s.activated_total = rr.u64("activated_total");
                       s.recycled_total = rr.u64("recycled_total");
                       p.zones.push_back(s);
                     });
}

StoreError write_work_points(Tables& t, std::int64_t id,
                             const std::vector<core::WorkPointState>& points) {
  Insert w;
  if (StoreError e = t.prepare(kWorkPoints, w); !e.ok()) return e;
  for (std::size_t k = 0; k < points.size(); ++k) {
    w.i64("snapshot_id", id).i64("work_point_index", static_cast<std::int64_t>(k));
    w.text("occupants", encode_ints(points[k].occupant))
        .text("waiting", encode_ints(points[k].waiting));
    if (StoreError e = t.run(w, kWorkPoints, snapshot_row(id)); !e.ok()) return e;
  }
  return {};
}

StoreError read_work_points(Tables& t, std::int64_t id, std::vector<core::WorkPointState>& points) {
  return t.read_rows(kWorkPoints, "work_point_index", "", id, snapshot_row(id),
                     [&](RowReader& rr, const std::string&) {
                       core::WorkPointState st;
                       if (!decode_ints(rr.text("occupants"), st.occupant) ||
                           !decode_ints(rr.text("waiting"), st.waiting)) {
                         rr.fail("occupants", "expected JSON arrays of resident indices");
                       }
                       points.push_back(std::move(st));
                     });
}

StoreError write_handoffs(Tables& t, std::int64_t id,
                          const std::vector<core::ZoneHandoff>& handoffs) {
  Insert h;
  if (StoreError e = t.prepare(kZoneHandoffs, h); !e.ok()) return e;
  for (std::size_t k = 0; k < handoffs.size(); ++k) {
    const core::ZoneHandoff& ho = handoffs[k];
    h.i64("snapshot_id", id)
        .i64("position", static_cast<std::int64_t>(k))
        .i64("resident", ho.resident);
    h.i64("from_zone", ho.from).i64("to_zone", ho.to);
    if (StoreError e = t.run(h, kZoneHandoffs, snapshot_row(id) + " position=" + std::to_string(k));
        !e.ok())
      return e;
  }
  return {};
}

}  // namespace

std::vector<const TableColumns*> population_tables() {
  return {&kResidentColumns,   &kZones,        &kWorkPoints,
          &kLifecycleSettings, &kZoneHandoffs, &kResidentMigrations};
}

StoreError write_population(Tables& t, std::int64_t id, const core::PopulationCheckpoint& p) {
  if (StoreError e = write_residents(t, id, p.residents); !e.ok()) return e;
  if (StoreError e = write_migrations(t, id, p.migrations); !e.ok()) return e;
  if (StoreError e = write_zones(t, id, p); !e.ok()) return e;
  if (StoreError e = write_work_points(t, id, p.work_points); !e.ok()) return e;
  if (StoreError e = write_lifecycle(t, id, p.settings); !e.ok()) return e;
  return write_handoffs(t, id, p.handoffs);
}

StoreError read_population(Tables& t, std::int64_t id, core::PopulationCheckpoint& p) {
  if (StoreError e = read_residents(t, id, p.residents); !e.ok()) return e;
  if (StoreError e = read_migrations(t, id, p.migrations); !e.ok()) return e;
  if (StoreError e = read_zones(t, id, p); !e.ok()) return e;
  if (StoreError e = read_work_points(t, id, p.work_points); !e.ok()) return e;
  if (StoreError e = read_lifecycle(t, id, snapshot_row(id), p.settings); !e.ok()) return e;
  return t.read_rows(
      kZoneHandoffs, "position", "", id, snapshot_row(id), [&](RowReader& rr, const std::string&) {
        p.handoffs.push_back({rr.u32("resident"), rr.u32("from_zone"), rr.u32("to_zone")});
      });
}

StoreError write_lifecycle(Tables& t, std::int64_t id, const core::LifecycleSettings& s) {
  Insert st;
  if (StoreError e = t.prepare(kLifecycleSettings, st); !e.ok()) return e;
  st.i64("snapshot_id", id)
      .i64("growth_quota", s.growth_quota)
      .i64("recycle_quota", s.recycle_quota);
  st.i64("interval_ms", s.interval_ms).i64("migration_budget", s.migration_budget);
  return t.run(st, kLifecycleSettings, snapshot_row(id));
}

StoreError read_lifecycle(Tables& t, std::int64_t id, const std::string& row,
                          core::LifecycleSettings& s) {
  Statement st;
  if (StoreError e = t.one_row(kLifecycleSettings, id, row, st); !e.ok()) return e;
  RowReader rr(st, kLifecycleSettings);
  s.growth_quota = rr.u32("growth_quota");
  s.recycle_quota = rr.u32("recycle_quota");
  s.interval_ms = rr.u32("interval_ms");
  s.migration_budget = rr.u32("migration_budget");
  if (!rr.ok()) return t.row_error(kLifecycleSettings, row, rr);
  return {};
}

}  // namespace bustle::persist::store
