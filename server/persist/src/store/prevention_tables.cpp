// Prevention's tables (migration 0007): the one prevention row (level,
// handles, per-level counts, corpse counters), the live response units and
// the corpses. Nothing is written while prevention is unused, and a file
// without the row reads as unused, so older checkpoints restore as before.
#include <array>

#include "tables.hpp"

namespace bustle::persist::store {
namespace {

const TableColumns kPrevention{
    "prevention",
    {"snapshot_id", "level", "next_handle", "deferred_last_step", "level_queued", "level_spawned",
     "level_canceled", "level_despawned", "level_lost", "level_capped", "corpses_killed",
     "corpses_soft_deleted", "corpses_force_deleted", "corpses_pressure_deleted",
     "cleanup_passes"}};
const TableColumns kPreventionUnits{"prevention_units",
                                    {"snapshot_id", "position", "handle", "level", "state",
                                     "id_index", "id_generation", "state_step"}};
const TableColumns kCorpses{"corpses",
                            {"snapshot_id", "position", "id_index", "id_generation", "death_step"}};

using LevelCounts = std::array<std::uint64_t, core::kMaxPreventionLevels>;
using Member = std::uint64_t core::PreventionLevelCounts::*;
constexpr std::pair<const char*, Member> kLevelColumns[] = {
    {"level_queued", &core::PreventionLevelCounts::queued},
    {"level_spawned", &core::PreventionLevelCounts::spawned},
    {"level_canceled", &core::PreventionLevelCounts::canceled},
    {"level_despawned", &core::PreventionLevelCounts::despawned},
    {"level_lost", &core::PreventionLevelCounts::lost},
    {"level_capped", &core::PreventionLevelCounts::capped}};

StoreError write_units_and_corpses(Tables& t, std::int64_t id, const core::PreventionState& p) {
  const std::string row = snapshot_row(id);
  Insert u;
  if (StoreError e = t.prepare(kPreventionUnits, u); !e.ok()) return e;
  for (std::size_t k = 0; k < p.units.size(); ++k) {
    const core::ResponseUnit& unit = p.units[k];
    u.i64("snapshot_id", id).i64("position", static_cast<std::int64_t>(k));
    u.u64("handle", unit.handle).i64("level", unit.level);
    u.i64("state", static_cast<std::int64_t>(unit.state));
    u.i64("id_index", unit.entity.index).i64("id_generation", unit.entity.generation);
    u.u64("state_step", unit.state_step);
    if (StoreError e = t.run(u, kPreventionUnits, row + " position=" + std::to_string(k)); !e.ok())
      return e;
  }
  Insert c;
  if (StoreError e = t.prepare(kCorpses, c); !e.ok()) return e;
  for (std::size_t k = 0; k < p.corpses.size(); ++k) {
    c.i64("snapshot_id", id).i64("position", static_cast<std::int64_t>(k));
    c.i64("id_index", p.corpses[k].id.index).i64("id_generation", p.corpses[k].id.generation);
    c.u64("death_step", p.corpses[k].death_step);
    if (StoreError e = t.run(c, kCorpses, row + " position=" + std::to_string(k)); !e.ok())
      return e;
  }
  return {};
}

void read_counts_row(RowReader& rr, core::PreventionState& p) {
  p.level = rr.u32("level");
  p.next_handle = rr.u64("next_handle");
  p.deferred_last_step = rr.u32("deferred_last_step");
  for (const auto& [column, member] : kLevelColumns) {
    LevelCounts counts{};
    if (!decode_counts(rr.text(column), counts)) {
      rr.fail(column,
              "expected a JSON array of " + std::to_string(core::kMaxPreventionLevels) + " counts");
      continue;
    }
    for (std::size_t l = 0; l < counts.size(); ++l) p.per_level[l].*member = counts[l];
  }
  p.corpse.killed = rr.u64("corpses_killed");
  p.corpse.soft_deleted = rr.u64("corpses_soft_deleted");
  p.corpse.force_deleted = rr.u64("corpses_force_deleted");
  p.corpse.pressure_deleted = rr.u64("corpses_pressure_deleted");
  p.corpse.cleanup_passes = rr.u64("cleanup_passes");
}

}  // namespace

std::vector<const TableColumns*> prevention_tables() {
  return {&kPrevention, &kPreventionUnits, &kCorpses};
}

StoreError write_prevention(Tables& t, std::int64_t id, const core::PreventionState& p) {
  if (p.unused()) return {};
  Insert ins;
  if (StoreError e = t.prepare(kPrevention, ins); !e.ok()) return e;
  ins.i64("snapshot_id", id).i64("level", p.level).u64("next_handle", p.next_handle);
  ins.i64("deferred_last_step", p.deferred_last_step);
  for (const auto& [column, member] : kLevelColumns) {
    LevelCounts counts{};
    for (std::size_t l = 0; l < counts.size(); ++l) counts[l] = p.per_level[l].*member;
    ins.text(column, encode_counts(counts));
  }
  ins.u64("corpses_killed", p.corpse.killed).u64("corpses_soft_deleted", p.corpse.soft_deleted);
  ins.u64("corpses_force_deleted", p.corpse.force_deleted);
  ins.u64("corpses_pressure_deleted", p.corpse.pressure_deleted);
  ins.u64("cleanup_passes", p.corpse.cleanup_passes);
  if (StoreError e = t.run(ins, kPrevention, snapshot_row(id)); !e.ok()) return e;
  return write_units_and_corpses(t, id, p);
}

StoreError read_prevention(Tables& t, std::int64_t id, core::PreventionState& p) {
  if (t.file_version() < 7) return {};  // no tables: prevention unused
  const std::string row = snapshot_row(id);
  bool present = false;
  if (StoreError e = t.each_row(kPrevention, "snapshot_id", id, row,
                                [&](RowReader& rr, const Statement&) -> StoreError {
                                  present = true;
                                  read_counts_row(rr, p);
                                  if (!rr.ok()) return t.row_error(kPrevention, row, rr);
                                  return {};
                                });
      !e.ok())
    return e;
  if (!present) return {};
  if (StoreError e =
          t.read_rows(kPreventionUnits, "position", "", id, row,
                      [&](RowReader& rr, const std::string&) {
                        core::ResponseUnit u;
                        u.handle = rr.u64("handle");
                        u.level = rr.u32("level");
                        u.state = static_cast<core::ResponseUnitState>(rr.u8(
                            "state", static_cast<std::int64_t>(core::ResponseUnitState::Retiring)));
                        const std::uint32_t index = rr.u32("id_index");
                        u.entity = {index, rr.u32("id_generation")};
                        u.state_step = rr.u64("state_step");
                        p.units.push_back(u);
                      });
      !e.ok())
    return e;
  return t.read_rows(kCorpses, "position", "", id, row, [&](RowReader& rr, const std::string&) {
    const std::uint32_t index = rr.u32("id_index");
    const core::EntityId corpse{index, rr.u32("id_generation")};
    p.corpses.push_back({corpse, rr.u64("death_step")});
  });
}

}  // namespace bustle::persist::store
