// The population's digest, capture and restore (with restore's checks of
// the handoffs and migration records).
#include <cassert>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bustle/core/column_copies.hpp"
#include "bustle/core/digest.hpp"
#include "bustle/core/population.hpp"
#include "internal.hpp"

namespace bustle::core {

void PopulationSystem::digest_into(Digest& d) const {
  // Resident rows as a maintained sum of position-bound row hashes (O(1) here).
  d.tag(30).u64(day_us_).u32(time_scale_).u64(last_interval_).u32(residents_.size()).u64(row_sum_);
  d.u32(settings_.growth_quota).u32(settings_.recycle_quota).u32(settings_.interval_ms);
  d.u32(settings_.migration_budget).u64(interval_origin_us_).u64(handoffs_.size());
  for (const ZoneHandoff& h : handoffs_) d.u32(h.resident).u32(h.from).u32(h.to);
  d.tag(31);
  for (const ZoneStatus& z : zones_) {
    d.u32(z.target)
        .u32(z.active)
        .u32(z.dormant)
        .u32(z.pending_spawn)
        .u32(z.pending_recycle)
        .u32(z.activated);
    d.u32(z.recycled).u32(z.deferred_by_quota).u32(z.rejected_by_capacity).u32(z.migrated_in);
    d.u32(z.deferred_by_migration).u64(z.activated_total).u64(z.recycled_total);
    d.u32(z.handoffs_started).u32(z.handoffs_accepted).u32(z.handoffs_returned).u32(z.retiring);
  }
  d.tag(32);
  for (const WorkPointState& w : work_points_) {
    for (const std::int32_t o : w.occupant) d.u64(static_cast<std::uint64_t>(o));
    d.u64(w.waiting.size());
    for (const std::uint32_t q : w.waiting) d.u32(q);
  }
}

void PopulationSystem::capture_into(PopulationCheckpoint& cp, ColumnCopies& copies,
                                    std::uint64_t held_epoch) const {
  static_assert(sizeof(ResidentStore) == 7 * sizeof(std::vector<std::uint32_t>),
                "a new resident column must be captured here");
  // Copy-assignment keeps the destination's capacity (strings and nested
  // vectors included), so a recycled checkpoint allocates nothing here.
  // Of the resident rows only those refresh()ed since the epoch the
  // destination holds (resident_rows_written_).
  const RowWriteStamps& written = resident_rows_written_;
  copies.add_written(cp.residents.id, residents_.id, written, held_epoch);
  copies.add_written(cp.residents.community, residents_.community, written, held_epoch);
  copies.add_written(cp.residents.profession, residents_.profession, written, held_epoch);
  copies.add_written(cp.residents.zone, residents_.zone, written, held_epoch);
  copies.add_written(cp.residents.active, residents_.active, written, held_epoch);
  copies.add_written(cp.residents.work_point, residents_.work_point, written, held_epoch);
  copies.add_written(cp.residents.work_slot, residents_.work_slot, written, held_epoch);
  cp.zone_ids.resize(scenario_->zones.size());
  for (std::size_t z = 0; z < scenario_->zones.size(); ++z) cp.zone_ids[z] = scenario_->zones[z].id;
  cp.zones = zones_;
  cp.work_points = work_points_;
  cp.day_us = day_us_;
  cp.time_scale = time_scale_;
  cp.last_interval = last_interval_;
  cp.settings = settings_;
  cp.handoffs = handoffs_;
  cp.migrations = migrations_;
  cp.interval_origin_us = interval_origin_us_;
}

// Part of restore(): the handoffs in flight and the migration records.
void PopulationSystem::check_handoffs_and_migrations(
    const PopulationCheckpoint& cp,
    const std::function<void(std::string, std::string)>& fail) const {
  const ResidentStore& r = cp.residents;
  for (std::size_t k = 0; k < cp.handoffs.size(); ++k) {
    const ZoneHandoff& h = cp.handoffs[k];
    const std::string row = "handoffs[" + std::to_string(k) + "]";
    if (h.resident >= r.id.size()) {
      fail(row + ".resident", "unknown resident");
      continue;
    }
    if (k > 0 && cp.handoffs[k - 1].resident >= h.resident)
      fail(row + ".resident", "must be sorted and unique");
    if (h.from >= scenario_->zones.size() || h.to >= scenario_->zones.size() || h.from == h.to) {
      fail(row + ".to", "zones must be known and differ");
    } else if (r.active[h.resident] != ResidentStore::kActive || r.zone[h.resident] != h.from) {
      fail(row + ".from", "the resident is not active in its source zone");
    }
  }
  for (std::size_t k = 0; k < cp.migrations.size(); ++k) {
    const ResidentMigration& m = cp.migrations[k];
    const std::string row = "migrations[" + std::to_string(k) + "]";
    if (m.resident >= cp.residents.id.size()) fail(row + ".resident", "unknown resident");
    if (k > 0 && cp.migrations[k - 1].resident >= m.resident)
      fail(row + ".resident", "must be sorted and unique");
    if (m.count < 1)
      fail(row + ".count", "must be at least 1 (residents that never migrated have no entry)");
    if (m.last_portal >= scenario_->zones.size()) fail(row + ".last_portal", "unknown zone");
  }
}

std::vector<std::pair<std::string, std::string>> PopulationSystem::restore(
    const PopulationCheckpoint& cp, const EntityRegistry& registry) {
  std::vector<std::pair<std::string, std::string>> errors;
  auto fail = [&](std::string p, std::string m) {
    if (errors.size() < 32) errors.emplace_back(std::move(p), std::move(m));
  };
  const ResidentStore& r = cp.residents;
  const std::size_t n = r.id.size();
  if (r.community.size() != n || r.profession.size() != n || r.zone.size() != n ||
      r.active.size() != n || r.work_point.size() != n || r.work_slot.size() != n) {
    fail("residents", "column lengths differ");
    return errors;
  }
  if (n != community_first_.back()) {
    fail("residents", std::to_string(n) + " identities, the scenario's communities have " +
                          std::to_string(community_first_.back()));
  }
  if (cp.zones.size() != scenario_->zones.size())
    fail("zones", "zone count differs from the scenario");
  if (cp.work_points.size() != scenario_->work_points.size())
    fail("work_points", "work-point count differs");
  if (cp.day_us >= kDayUs) fail("day_us", "time of day must be in [0, 24) h");
  if (cp.time_scale < 1 || cp.time_scale > 3600) fail("time_scale", "must be in [1, 3600]");
  if (Status why = validate_lifecycle_settings(cp.settings); !why.ok())
    fail("settings", why.message());
  if (!errors.empty()) return errors;
  std::vector<std::int32_t> by_entity(resident_by_entity_.size(), ResidentStore::kNone);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string row = "residents[" + std::to_string(i) + "]";
    if (!registry.is_alive(r.id[i])) {
      fail(row + ".id", "identity is not alive in the registry");
      continue;
    }
    if (by_entity[r.id[i].index] != ResidentStore::kNone) {
      fail(row + ".id", "duplicate identity");
      continue;
    }
    by_entity[r.id[i].index] = static_cast<std::int32_t>(i);
    if (r.community[i] >= scenario_->communities.size()) {
      fail(row + ".community", "unknown community");
      continue;
    }
    // Identities are laid out community by community, base_population each.
    if (i >= community_first_.back() || i < community_first_[r.community[i]] ||
        i >= community_first_[r.community[i] + 1]) {
      fail(row + ".community",
           "does not match the scenario's community sizes (each community has base_population "
           "identities, in order)");
      continue;
    }
    if (r.profession[i] >= scenario_->communities[r.community[i]].professions.size())
      fail(row + ".profession", "unknown");
    if (r.zone[i] >= scenario_->zones.size()) fail(row + ".zone", "unknown zone");
    if (r.active[i] > ResidentStore::kDeceased)
      fail(row + ".active", "must be 0 (dormant), 1 (active), 2 (retiring) or 3 (deceased)");
    if (r.work_point[i] != ResidentStore::kNone &&
        (r.work_point[i] < 0 ||
         static_cast<std::size_t>(r.work_point[i]) >= cp.work_points.size())) {
      fail(row + ".work_point", "unknown work-point");
    }
  }
  for (std::size_t w = 0; w < cp.work_points.size(); ++w) {
    const WorkPointState& st = cp.work_points[w];
    if (st.occupant.size() != scenario_->work_points[w].slots)
      fail("work_points[" + std::to_string(w) + "]", "slot count differs");
    for (std::size_t s = 0; s < st.occupant.size(); ++s) {
      const std::int32_t o = st.occupant[s];
      if (o == ResidentStore::kNone) continue;
      if (o < 0 || static_cast<std::size_t>(o) >= n ||
          r.work_point[static_cast<std::size_t>(o)] != static_cast<std::int32_t>(w) ||
          r.work_slot[static_cast<std::size_t>(o)] != static_cast<std::int32_t>(s)) {
        fail("work_points[" + std::to_string(w) + "].occupant[" + std::to_string(s) + "]",
             "does not match the resident's slot (slots must be uniquely occupied)");
      }
    }
  }
  check_handoffs_and_migrations(cp, fail);
  if (!errors.empty()) return errors;
  residents_ = r;
  migrations_ = cp.migrations;  // before rebuild_indexes: the row hashes read it
  resident_by_entity_ = std::move(by_entity);
  zones_ = cp.zones;
  work_points_ = cp.work_points;
  day_us_ = cp.day_us;
  time_scale_ = cp.time_scale;
  last_interval_ = cp.last_interval;
  settings_ = cp.settings;
  handoffs_ = cp.handoffs;
  interval_origin_us_ = cp.interval_origin_us;
  rebuild_indexes();
  return errors;
}

}  // namespace bustle::core
