// A save's tables: save_state (target, time of day, garage ordinals), the
// saveable residents' zones, and (schema 4) the active set and observers.
// The lifecycle settings row is population_tables.cpp's.
#include "tables.hpp"

namespace bustle::persist::store {
namespace {

const TableColumns kSaveState{
    "save_state", {"snapshot_id", "pedestrian_target", "day_us", "time_scale", "garage_ordinals"}};
const TableColumns kSaveResidents{
    "save_residents",
    {"snapshot_id", "position", "id_index", "id_generation", "zone_id", "deceased"}};  // 0011
// A file read without migrating (read-only) from before schema 11: no deaths.
const TableColumns kSaveResidentsBefore11{
    "save_residents", {"snapshot_id", "position", "id_index", "id_generation", "zone_id"}};
const TableColumns kSaveActiveResidents{
    "save_active_residents",
    {"snapshot_id", "position", "id_index", "id_generation", "zone_id", "lane_id", "s_m"}};

core::EntityId read_id(RowReader& rr) {
  const std::uint32_t index = rr.u32("id_index");
  return {index, rr.u32("id_generation")};
}

StoreError write_save_residents(Tables& t, std::int64_t id, const core::SaveState& save) {
  const std::string row = snapshot_row(id);
  if (save.saveable_zones.size() != save.saveable_ids.size()) {
    return t.error("save_residents", row, "zone_id",
                   std::to_string(save.saveable_zones.size()) + " zones for " +
                       std::to_string(save.saveable_ids.size()) +
                       " saveable residents (must be parallel)");
  }
  Insert st;
  if (StoreError e = t.prepare(kSaveResidents, st); !e.ok()) return e;
  for (std::size_t k = 0; k < save.saveable_ids.size(); ++k) {
    st.i64("snapshot_id", id).i64("position", static_cast<std::int64_t>(k));
    st.i64("id_index", save.saveable_ids[k].index)
        .i64("id_generation", save.saveable_ids[k].generation);
    st.text("zone_id", save.saveable_zones[k]);
    st.i64("deceased", k < save.saveable_deceased.size() ? save.saveable_deceased[k] : 0);
    if (StoreError e = t.run(st, kSaveResidents, row + " position=" + std::to_string(k)); !e.ok())
      return e;
  }
  Insert ar;
  if (StoreError e = t.prepare(kSaveActiveResidents, ar); !e.ok()) return e;
  for (std::size_t k = 0; k < save.active_residents.size(); ++k) {
    const core::SaveState::ActiveResident& a = save.active_residents[k];
    ar.i64("snapshot_id", id).i64("position", static_cast<std::int64_t>(k));
    ar.i64("id_index", a.id.index).i64("id_generation", a.id.generation);
    ar.text("zone_id", a.zone).text("lane_id", a.lane).f64("s_m", a.s_m);
    if (StoreError e = t.run(ar, kSaveActiveResidents, row + " position=" + std::to_string(k));
        !e.ok())
      return e;
  }
  return write_observer_rows(t, kSaveObservers, id, save.observers);
}

// Schema 4: the saved active set and observers (see 0004_save_active_set.sql).
StoreError read_save_active_set(Tables& t, std::int64_t id, const std::string& row,
                                core::SaveState& save) {
  if (StoreError e = t.read_rows(kSaveActiveResidents, "position", "", id, row,
                                 [&](RowReader& rr, const std::string&) {
                                   core::SaveState::ActiveResident a;
                                   a.id = read_id(rr);
                                   a.zone = rr.text("zone_id");
                                   a.lane = rr.text("lane_id");
                                   a.s_m = rr.f64("s_m");
                                   save.active_residents.push_back(std::move(a));
                                 });
      !e.ok()) {
    return e;
  }
  save.has_observers = true;
  return read_observer_rows(t, kSaveObservers, id, row,
                            [&](const core::ObserverPoint& o) { save.observers.push_back(o); });
}

}  // namespace

const TableColumns kSaveObservers{
    "save_observers",
    {"snapshot_id", "observer_index", "x_m", "y_m", "z_m", "has_heading", "heading_rad"}};

std::vector<const TableColumns*> save_tables() {
  return {&kSaveState, &kSaveResidents, &kSaveActiveResidents, &kSaveObservers};
}

StoreError write_save_tables(Tables& t, std::int64_t id, const core::SaveState& save) {
  Insert ss;
  if (StoreError e = t.prepare(kSaveState, ss); !e.ok()) return e;
  ss.i64("snapshot_id", id)
      .i64("pedestrian_target", save.pedestrian_target)
      .u64("day_us", save.day_us);
  ss.i64("time_scale", save.time_scale)
      .text("garage_ordinals", encode_ints(save.garage_vehicle_ordinals));
  if (StoreError e = t.run(ss, kSaveState, snapshot_row(id)); !e.ok()) return e;
  if (StoreError e = write_lifecycle(t, id, save.lifecycle); !e.ok()) return e;
  return write_save_residents(t, id, save);
}

StoreError read_save_state(Tables& t, std::int64_t id, const std::string& named,
                           core::SaveState& save) {
  Statement st;
  if (StoreError e = t.one_row(kSaveState, id, named, st, "missing (save incomplete)"); !e.ok())
    return e;
  RowReader rr(st, kSaveState);
  save.pedestrian_target = rr.u32("pedestrian_target");
  save.day_us = rr.u64("day_us");
  save.time_scale = static_cast<std::uint32_t>(rr.integer("time_scale", 1, 3600));
  if (rr.ok() && !decode_ints(rr.text("garage_ordinals"), save.garage_vehicle_ordinals)) {
    rr.fail("garage_ordinals", "expected a JSON array of unsigned integers");
  }
  if (!rr.ok()) return t.row_error(kSaveState, named, rr);
  return {};
}

StoreError read_save_lists(Tables& t, std::int64_t id, int schema_version, const std::string& named,
                           core::SaveState& save) {
  // Version-1 saves have neither (complete_schema1_save fills the settings).
  if (schema_version < 2) return {};
  if (StoreError e = read_lifecycle(t, id, named, save.lifecycle); !e.ok()) return e;
  const bool has_deceased = t.file_version() >= 11;
  if (StoreError e = t.read_rows(
          has_deceased ? kSaveResidents : kSaveResidentsBefore11, "position", "", id, named,
          [&](RowReader& rr, const std::string&) {
            save.saveable_ids.push_back(read_id(rr));
            save.saveable_zones.push_back(rr.text("zone_id"));
            save.saveable_deceased.push_back(
                has_deceased ? static_cast<std::uint8_t>(rr.integer("deceased", 0, 1)) : 0);
          });
      !e.ok()) {
    return e;
  }
  if (schema_version < 4) return {};
  return read_save_active_set(t, id, named, save);
}

}  // namespace bustle::persist::store
