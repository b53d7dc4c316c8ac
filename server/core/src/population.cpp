// The PopulationSystem (population.hpp): communities, zones, resident
// identities (kept while dormant), the time of day and the zone lifecycle;
// World::step() runs it in phase 2 (advance_clock, lifecycle).
//
// Sections, in file order: lifecycle settings; construction and identity
// creation; resident rows (row hash, indexes, active state, zone moves); the
// clock and settings; community look-ups; handoffs (migration); lifecycle
// (schedule coordinator, migration, zone quotas); activation callbacks and
// work points; digest, invariants, capture and restore.
#include "bustle/core/population.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>

#include "bustle/core/column_copies.hpp"
#include "bustle/core/digest.hpp"

namespace bustle::core {
namespace {
constexpr std::uint64_t kDayUs = 86'400'000'000ull;
}  // namespace

std::string validate_lifecycle_settings(const LifecycleSettings& s) {
  if (s.interval_ms < 1 || s.interval_ms > 3'600'000) return "interval_ms must be in [1, 3600000]";
  if (s.growth_quota > 1'000'000) return "growth_quota must be at most 1000000";
  if (s.recycle_quota > 1'000'000) return "recycle_quota must be at most 1000000";
  if (s.migration_budget > 1'000'000) return "migration_budget must be at most 1000000";
  return {};
}

PopulationSystem::PopulationSystem(const Scenario& scenario) : scenario_(&scenario) {
  zones_.resize(scenario.zones.size());
  for (const WorkPointSpec& wp : scenario.work_points) {
    WorkPointState st;
    st.occupant.assign(wp.slots, ResidentStore::kNone);
    work_points_.push_back(std::move(st));
  }
  std::map<std::string, std::uint32_t> zone_index;
  for (std::uint32_t z = 0; z < scenario.zones.size(); ++z)
    zone_index.emplace(scenario.zones[z].id, z);
  std::map<std::string, std::int32_t> wp_index;
  for (std::size_t w = 0; w < scenario.work_points.size(); ++w) {
    wp_index.emplace(scenario.work_points[w].id, static_cast<std::int32_t>(w));
  }
  std::uint32_t first = 0;
  for (const CommunitySpec& cs : scenario.communities) {
    std::vector<std::uint32_t> zones;
    std::vector<std::int32_t> wps;
    for (const ScheduleEntry& e : cs.schedule) {
      zones.push_back(zone_index.at(e.zone));
      auto w = wp_index.find(e.work_point);
      wps.push_back(e.work_point.empty() || w == wp_index.end() ? ResidentStore::kNone : w->second);
    }
    entry_zone_.push_back(std::move(zones));
    entry_work_point_.push_back(std::move(wps));
    community_first_.push_back(first);
    first += cs.base_population;
  }
  community_first_.push_back(first);
  day_us_ =
      static_cast<std::uint64_t>(std::llround(scenario.population.start_hour * 3.6e9)) % kDayUs;
  time_scale_ = scenario.population.time_scale;
  settings_ = {scenario.population.growth_quota, scenario.population.recycle_quota,
               scenario.population.lifecycle_interval_ms, scenario.population.migration_budget};
  resident_by_entity_.assign(scenario.entity_capacity, ResidentStore::kNone);
}

bool PopulationSystem::create_identities(EntityRegistry& registry) {
  std::map<std::string, std::uint32_t> zone_index;
  for (std::uint32_t z = 0; z < scenario_->zones.size(); ++z)
    zone_index.emplace(scenario_->zones[z].id, z);
  for (std::uint32_t c = 0; c < scenario_->communities.size(); ++c) {
    const CommunitySpec& cs = scenario_->communities[c];
    const std::uint32_t home = zone_index.at(cs.home_zone);
    for (std::uint32_t m = 0; m < cs.base_population; ++m) {
      const AllocateResult a = registry.allocate();
      if (a.status != AllocateStatus::Allocated) return false;
      resident_by_entity_[a.id.index] = static_cast<std::int32_t>(residents_.size());
      residents_.id.push_back(a.id);
      residents_.community.push_back(c);
      residents_.profession.push_back(m % static_cast<std::uint32_t>(cs.professions.size()));
      residents_.zone.push_back(home);
      residents_.active.push_back(ResidentStore::kDormant);
      residents_.work_point.push_back(ResidentStore::kNone);
      residents_.work_slot.push_back(ResidentStore::kNone);
    }
  }
  for (std::uint32_t i = 0; i < residents_.size(); ++i) ++zones_[residents_.zone[i]].dormant;
  rebuild_indexes();
  return true;
}

std::uint64_t PopulationSystem::row_hash(std::uint32_t i) const {
  Digest e;
  e.u64(residents_.id[i].packed())
      .u32(residents_.community[i])
      .u32(residents_.profession[i])
      .u32(residents_.zone[i])
      .u32(residents_.active[i]);
  e.u64(static_cast<std::uint64_t>(residents_.work_point[i]))
      .u64(static_cast<std::uint64_t>(residents_.work_slot[i]));
  // A term only for residents that migrated, so the digest of a city whose
  // residents stay home is what it was before migrations were recorded.
  if (const ResidentMigration* m = migration_of(i); m != nullptr)
    e.u32(m->count).u32(m->last_portal);
  return e.value() *
         (2 * static_cast<std::uint64_t>(i) + 1);  // position-bound: rows are ordered by index
}

void PopulationSystem::refresh(std::uint32_t i) {
  // Every write to a resident row ends here (the digest needs it), so this
  // is also where the row is marked for the next checkpoint capture.
  resident_rows_written_.mark(i);
  row_sum_ -= row_hash_[i];
  row_hash_[i] = row_hash(i);
  row_sum_ += row_hash_[i];
}

void PopulationSystem::rebuild_indexes() {
  const std::size_t nz = zones_.size();
  row_hash_.assign(residents_.size(), 0);
  row_sum_ = 0;
  resident_rows_written_.reserve(residents_.size());  // every row (re)written
  active_cz_.assign(scenario_->communities.size() * nz, 0);
  active_list_.clear();
  active_total_ = retiring_total_ = deceased_total_ = 0;
  for (std::uint32_t i = 0; i < residents_.size(); ++i) {
    row_hash_[i] = row_hash(i);
    row_sum_ += row_hash_[i];
    deceased_total_ += residents_.active[i] == ResidentStore::kDeceased;
    if (residents_.active[i] == ResidentStore::kDormant ||
        residents_.active[i] == ResidentStore::kDeceased)
      continue;
    ++active_cz_[residents_.community[i] * nz + residents_.zone[i]];
    active_list_.push_back(i);  // ascending: i grows
    ++active_total_;
    retiring_total_ += residents_.active[i] == ResidentStore::kRetiring;
  }
}

void PopulationSystem::set_active(std::uint32_t i, std::uint8_t value) {
  const std::uint8_t was = residents_.active[i];
  if (was == value) return;
  const std::size_t cell = residents_.community[i] * zones_.size() + residents_.zone[i];
  ZoneStatus& zs = zones_[residents_.zone[i]];
  // Active and retiring members count as active; deceased ones nowhere.
  const auto counts_active = [](std::uint8_t v) {
    return v == ResidentStore::kActive || v == ResidentStore::kRetiring;
  };
  if (was == ResidentStore::kDormant) {
    assert(zs.dormant > 0);  // invariant 2: the recount check_invariants() reads
    --zs.dormant;
  }
  if (value == ResidentStore::kDormant) ++zs.dormant;
  if (!counts_active(was) && counts_active(value)) {
    ++active_cz_[cell];
    ++active_total_;
    // Kept sorted (EntityId order): activations are bounded by the quotas,
    // so an insert per activation is cheaper than sorting every interval.
    active_list_.insert(std::lower_bound(active_list_.begin(), active_list_.end(), i), i);
  } else if (counts_active(was) && !counts_active(value)) {
    assert(active_cz_[cell] > 0 && active_total_ > 0);
    --active_cz_[cell];
    --active_total_;
    active_list_.erase(std::lower_bound(active_list_.begin(), active_list_.end(), i));
  }
  if (was == ResidentStore::kRetiring) {
    --retiring_total_;
    --zs.retiring;
  }
  if (value == ResidentStore::kRetiring) {
    ++retiring_total_;
    ++zs.retiring;
  }
  deceased_total_ += (value == ResidentStore::kDeceased) - (was == ResidentStore::kDeceased);
  residents_.active[i] = value;
  refresh(i);
}

void PopulationSystem::move_zone(std::uint32_t i, std::uint32_t z) {
  const std::size_t nz = zones_.size();
  if (residents_.active[i] != ResidentStore::kDormant) {
    --active_cz_[residents_.community[i] * nz + residents_.zone[i]];
    ++active_cz_[residents_.community[i] * nz + z];
  } else {
    --zones_[residents_.zone[i]].dormant;
    ++zones_[z].dormant;
  }
  record_migration(i, residents_.zone[i]);
  residents_.zone[i] = z;
  refresh(i);
}

namespace {
// The first record at or after `resident` (the records are sorted by resident).
template <class It>
It migration_at(It first, It last, std::uint32_t resident) {
  return std::lower_bound(first, last, resident, [](const ResidentMigration& m, std::uint32_t r) {
    return m.resident < r;
  });
}
}  // namespace

void PopulationSystem::record_migration(std::uint32_t i, std::uint32_t from_zone) {
  const auto at = migration_at(migrations_.begin(), migrations_.end(), i);
  if (at != migrations_.end() && at->resident == i) {
    ++at->count;
    at->last_portal = from_zone;
  } else {
    // An insert per first migration: bounded by the migration budget per
    // interval, like the activations' inserts into active_list_.
    migrations_.insert(at, {i, 1, from_zone});
  }
}

const ResidentMigration* PopulationSystem::migration_of(std::uint32_t resident) const {
  if (migrations_.empty()) return nullptr;
  const auto at = migration_at(migrations_.cbegin(), migrations_.cend(), resident);
  return at != migrations_.end() && at->resident == resident ? &*at : nullptr;
}

bool PopulationSystem::advance_clock(std::uint64_t sim_time_us, std::uint32_t step_us) {
  day_us_ = (day_us_ + std::uint64_t{step_us} * time_scale_) % kDayUs;
  if (scenario_->communities.empty()) return false;
  // Interval numbers start at 1 so the first step (and the first step after
  // a settings change) runs the coordinator.
  const std::uint64_t since =
      sim_time_us >= interval_origin_us_ ? sim_time_us - interval_origin_us_ : 0;
  const std::uint64_t interval = since / (std::uint64_t{settings_.interval_ms} * 1000) + 1;
  if (interval == last_interval_) return false;
  last_interval_ = interval;
  return true;
}

void PopulationSystem::set_settings(const LifecycleSettings& s, std::uint64_t sim_time_us) {
  if (s.interval_ms != settings_.interval_ms) {
    interval_origin_us_ = sim_time_us;
    last_interval_ = 0;
  }
  settings_ = s;
}

void PopulationSystem::set_hour(double hour) {
  day_us_ = static_cast<std::uint64_t>(std::llround(std::clamp(hour, 0.0, 24.0) * 3.6e9)) % kDayUs;
}

std::int32_t PopulationSystem::resident_of(EntityId id) const {
  if (id.index >= resident_by_entity_.size()) return ResidentStore::kNone;
  const std::int32_t r = resident_by_entity_[id.index];
  return r != ResidentStore::kNone && residents_.id[static_cast<std::size_t>(r)] == id
             ? r
             : ResidentStore::kNone;
}

namespace {
std::uint32_t room_left(std::uint32_t capacity, std::uint32_t active) {
  return capacity > active ? capacity - active : 0;
}
}  // namespace

int PopulationSystem::entry_index(std::uint32_t community) const {
  return schedule_entry_at(scenario_->communities[community].schedule, hour());
}

std::uint32_t PopulationSystem::community_target(std::uint32_t c) const {
  const CommunitySpec& cs = scenario_->communities[c];
  const int e = entry_index(c);
  if (e < 0) return 0;
  const double want = std::round(static_cast<double>(cs.base_population) *
                                 cs.schedule[static_cast<std::size_t>(e)].density);
  return static_cast<std::uint32_t>(std::clamp(want, 0.0, static_cast<double>(cs.base_population)));
}

std::int64_t PopulationSystem::community_zone(std::uint32_t c) const {
  const int e = entry_index(c);
  return e < 0 ? -1 : static_cast<std::int64_t>(entry_zone_[c][static_cast<std::size_t>(e)]);
}

std::span<const std::uint32_t> PopulationSystem::active_members(std::uint32_t c) const {
  const auto lo = std::lower_bound(active_list_.begin(), active_list_.end(), community_first_[c]);
  const auto hi = std::lower_bound(lo, active_list_.end(), community_first_[c + 1]);
  return {lo, hi};
}

bool PopulationSystem::in_handoff(std::uint32_t resident) const {
  auto it = std::lower_bound(handoffs_.begin(), handoffs_.end(), resident,
                             [](const ZoneHandoff& h, std::uint32_t r) { return h.resident < r; });
  return it != handoffs_.end() && it->resident == resident;
}

void PopulationSystem::resolve_handoffs(const std::vector<std::int64_t>& desired_zone,
                                        std::vector<std::uint32_t>& moved) {
  // Second phase of the handoffs offered last interval: the target accepts if
  // it still wants the member, has room and an open lane to place it on;
  // otherwise the member stays home. (A zone whose every lane is closed
  // takes nobody in, as its growth waits: World::move_resident would have
  // had only a closed lane to put the member on.)
  for (const ZoneHandoff& h : handoffs_) {
    const std::uint32_t i = h.resident;
    std::uint32_t active_to = 0;
    for (std::size_t c = 0; c < scenario_->communities.size(); ++c)
      active_to += active_cz_[c * zones_.size() + h.to];
    const bool still_wanted =
        desired_zone[residents_.community[i]] == static_cast<std::int64_t>(h.to);
    const bool target_closed = h.to < zone_closed_.size() && zone_closed_[h.to] != 0;
    if (residents_.active[i] == ResidentStore::kActive && residents_.zone[i] == h.from &&
        still_wanted && active_to < scenario_->zones[h.to].capacity && !target_closed) {
      move_zone(i, h.to);
      release_work_point(i);
      residents_.work_point[i] = ResidentStore::kNone;
      refresh(i);
      moved.push_back(i);
      ++zones_[h.to].handoffs_accepted;
    } else {
      ++zones_[h.to].handoffs_returned;
    }
  }
  handoffs_.clear();
}

void PopulationSystem::start_handoffs(const std::vector<std::int64_t>& desired_zone,
                                      const std::vector<std::uint32_t>& desired_n,
                                      std::uint32_t& migrations_left) {
  const std::size_t nz = zones_.size();
  for (std::uint32_t z = 0; z < nz && migrations_left > 0; ++z) {
    for (std::uint32_t c = 0; c < scenario_->communities.size() && migrations_left > 0; ++c) {
      if (desired_zone[c] != static_cast<std::int64_t>(z)) continue;
      const std::uint32_t have = active_cz_[c * nz + z];
      if (have >= desired_n[c]) continue;
      std::uint32_t need = desired_n[c] - have;
      // active_list_ is in resident (= EntityId) order, and a community's
      // residents are contiguous: its active members are one range of it.
      for (const std::uint32_t i : active_members(c)) {
        if (need == 0 || migrations_left == 0) break;
        if (residents_.community[i] != c || residents_.zone[i] == z ||
            residents_.active[i] != ResidentStore::kActive)
          continue;
        handoffs_.push_back({i, residents_.zone[i], z});
        ++zones_[z].handoffs_started;
        --need;
        --migrations_left;
      }
    }
  }
  std::sort(handoffs_.begin(), handoffs_.end(),
            [](const ZoneHandoff& a, const ZoneHandoff& b) { return a.resident < b.resident; });
}

void PopulationSystem::lifecycle(const std::function<double(std::uint32_t)>& distance_m,
                                 std::vector<std::uint32_t>& activate,
                                 std::vector<std::uint32_t>& deactivate,
                                 std::vector<std::uint32_t>& moved) {
  const std::size_t nz = zones_.size();
  const std::size_t nc = scenario_->communities.size();
  // Scratch members, not locals: the coordinator runs every interval and
  // the step allocates nothing after warm-up.
  std::vector<std::int64_t>& desired_zone = desired_zone_;
  std::vector<std::uint32_t>& desired_n = desired_n_;
  std::vector<std::int32_t>& desired_wp = desired_wp_;
  desired_zone.assign(nc, -1);
  desired_n.assign(nc, 0);
  desired_wp.assign(nc, ResidentStore::kNone);
  for (std::uint32_t c = 0; c < nc; ++c) {
    const int e = entry_index(c);
    if (e < 0) continue;
    desired_zone[c] = entry_zone_[c][static_cast<std::size_t>(e)];
    desired_n[c] = community_target(c);
    desired_wp[c] = entry_work_point_[c][static_cast<std::size_t>(e)];
  }
  for (ZoneStatus& st : zones_) {
    st.activated = st.recycled = st.deferred_by_quota = st.rejected_by_capacity = 0;
    st.migrated_in = st.deferred_by_migration = 0;
    st.handoffs_started = st.handoffs_accepted = st.handoffs_returned = 0;
  }
  // Only active residents are visited (in EntityId order); dormant records
  // are touched only when chosen.

  // Phase 2, after the clock: migration of active members (two-phase handoff).
  resolve_handoffs(desired_zone, moved);
  // Work-points follow the schedule for residents already active.
  for (const std::uint32_t i : active_list_) {
    if (residents_.active[i] != ResidentStore::kActive) continue;
    const std::int32_t want =
        static_cast<std::int64_t>(residents_.zone[i]) == desired_zone[residents_.community[i]]
            ? desired_wp[residents_.community[i]]
            : ResidentStore::kNone;
    if (want != residents_.work_point[i]) {
      release_work_point(i);
      residents_.work_point[i] = want;
      claim_work_point(i);
      refresh(i);
    }
  }
  std::uint32_t migrations_left = settings_.migration_budget;
  start_handoffs(desired_zone, desired_n, migrations_left);
  std::vector<std::uint32_t>& pending_in = pending_in_;
  std::vector<std::uint32_t>& pending_out = pending_out_;
  pending_in.assign(nc * nz, 0);
  pending_out.assign(nc * nz, 0);
  for (const ZoneHandoff& h : handoffs_) {
    ++pending_in[residents_.community[h.resident] * nz + h.to];
    ++pending_out[residents_.community[h.resident] * nz + h.from];
  }

  // Phase 2, last: zone lifecycle.
  for (std::uint32_t z = 0; z < nz; ++z) {
    ZoneStatus& st = zones_[z];
    st.target = 0;
    std::uint32_t active_z = 0;
    for (std::uint32_t c = 0; c < nc; ++c) {
      if (desired_zone[c] == static_cast<std::int64_t>(z)) st.target += desired_n[c];
      active_z += active_cz_[c * nz + z];
    }
    // 1. Recycle: per community, its excess in this zone (members leaving by
    //    handoff excepted), farthest first; retiring members are already going.
    // Farthest first, ties by EntityId; distances are asked for candidates only.
    auto farthest_first = [&](const std::pair<double, std::uint32_t>& a,
                              const std::pair<double, std::uint32_t>& b) {
      if (a.first != b.first) return a.first > b.first;
      return residents_.id[a.second] < residents_.id[b.second];
    };
    auto& recyc = scratch_a_;
    recyc.clear();
    std::uint32_t excess_total = 0;
    for (std::uint32_t c = 0; c < nc; ++c) {
      const std::uint32_t want = desired_zone[c] == static_cast<std::int64_t>(z) ? desired_n[c] : 0;
      const std::uint32_t have = active_cz_[c * nz + z] - pending_out[c * nz + z];
      if (have <= want) continue;
      auto& mine = scratch_b_;
      mine.clear();
      for (const std::uint32_t i : active_members(c)) {
        if (residents_.zone[i] == z && residents_.active[i] == ResidentStore::kActive &&
            !in_handoff(i)) {
          mine.emplace_back(distance_m(i), i);
        }
      }
      const std::uint32_t excess =
          std::min<std::uint32_t>(have - want, static_cast<std::uint32_t>(mine.size()));
      excess_total += excess;
      std::partial_sort(mine.begin(), mine.begin() + excess, mine.end(), farthest_first);
      recyc.insert(recyc.end(), mine.begin(), mine.begin() + excess);
    }
    std::sort(recyc.begin(), recyc.end(), farthest_first);
    const std::uint32_t recycle =
        std::min<std::uint32_t>(settings_.recycle_quota, static_cast<std::uint32_t>(recyc.size()));
    for (std::uint32_t k = 0; k < recycle; ++k) deactivate.push_back(recyc[k].second);
    st.recycled = recycle;
    st.recycled_total += recycle;
    std::uint32_t deferred = excess_total - recycle;

    // 2. Grow: dormant members of communities short in this zone (handoffs on
    //    their way here count as arriving).
    std::vector<std::uint32_t>& cand = grow_;
    cand.clear();
    std::uint32_t need_total = 0;
    for (std::uint32_t c = 0; c < nc; ++c) {
      if (desired_zone[c] != static_cast<std::int64_t>(z)) continue;
      const std::uint32_t have = active_cz_[c * nz + z] + pending_in[c * nz + z];
      if (have >= desired_n[c]) continue;
      const std::uint32_t need = desired_n[c] - have;
      need_total += need;
      // A community has one desired zone, so its dormant members are
      // candidates of this zone only (no record can be chosen twice).
      // Members already assigned to this zone first (plain reactivation), then
      // the others (a dormant record migrating here); residents are stored in
      // EntityId order, so a scan in index order breaks ties by id and can
      // stop as soon as enough are found.
      const std::size_t before = cand.size();
      for (int pass = 0; pass < 2 && cand.size() - before < need; ++pass) {
        for (std::uint32_t i = community_first_[c];
             i < community_first_[c + 1] && cand.size() - before < need; ++i) {
          if (residents_.active[i] != ResidentStore::kDormant ||
              (residents_.zone[i] == z) != (pass == 0))
            continue;
          cand.push_back(i);
        }
      }
    }
    std::sort(cand.begin(), cand.end(), [&](std::uint32_t a, std::uint32_t b) {
      const bool ah = residents_.zone[a] == z;
      const bool bh = residents_.zone[b] == z;
      if (ah != bh) return ah;
      return residents_.id[a] < residents_.id[b];
    });
    // Capacity rejects only what would not fit once every member on its way
    // out (excess, handoffs, fades) has left; what waits for them is deferred
    // (seed 001: a deferral reported as a failure makes callers overshoot).
    std::uint32_t leaving = st.retiring;  // retiring members are never in a handoff
    for (std::uint32_t c = 0; c < nc; ++c) leaving += pending_out[c * nz + z];
    const std::uint32_t capacity = scenario_->zones[z].capacity;
    const std::uint32_t room = room_left(capacity, active_z - recycle);
    const std::uint32_t room_final = room_left(capacity, active_z - excess_total - leaving);
    if (need_total > room_final) st.rejected_by_capacity = need_total - room_final;
    const std::uint32_t allowed = std::min(need_total, room);
    deferred += std::min(need_total, room_final) - allowed;  // waits for the recycle quota
    const std::uint32_t want = std::min(growth_quota_in(z), allowed);
    std::uint32_t grow = 0;
    std::uint32_t held_by_migration = 0;
    for (std::size_t k = 0; k < cand.size() && grow + held_by_migration < want; ++k) {
      const std::uint32_t i = cand[k];
      if (residents_.zone[i] != z) {
        if (migrations_left == 0) {
          ++held_by_migration;  // stays in its source zone for now
          continue;
        }
        --migrations_left;
        move_zone(i, z);  // handoff of a dormant record: identity unchanged
        ++st.migrated_in;
      }
      activate.push_back(i);
      ++grow;
    }
    st.activated = grow;
    st.activated_total += grow;
    // Places the quota gave whose record could not move: deferred by migration.
    st.deferred_by_migration = held_by_migration;
    deferred += allowed - grow - held_by_migration;
    st.deferred_by_quota = deferred;
    st.active = active_z - recycle + grow;
    // Gross per community, like deferred_by_quota: one community's excess
    // never hides another's shortfall in the same zone.
    st.pending_spawn = need_total - grow;
    st.pending_recycle = excess_total - recycle;
  }
}

void PopulationSystem::refresh_zone_counts() {
  const std::size_t nz = zones_.size();
  for (std::size_t z = 0; z < nz; ++z) {
    std::uint32_t n = 0;
    for (std::size_t c = 0; c < scenario_->communities.size(); ++c) n += active_cz_[c * nz + z];
    zones_[z].active = n;
  }
}

void PopulationSystem::on_activated(std::uint32_t i) {
  assert(residents_.active[i] == ResidentStore::kDormant);
  set_active(i, ResidentStore::kActive);
  // The schedule decides the work-point; claim it now.
  const std::uint32_t c = residents_.community[i];
  const int e = entry_index(c);
  residents_.work_point[i] = ResidentStore::kNone;
  if (e >= 0 && entry_zone_[c][static_cast<std::size_t>(e)] == residents_.zone[i]) {
    residents_.work_point[i] = entry_work_point_[c][static_cast<std::size_t>(e)];
  }
  claim_work_point(i);
  refresh(i);
}

void PopulationSystem::on_retiring(std::uint32_t i) {
  if (residents_.active[i] != ResidentStore::kActive) return;
  // A fading member gives its work-point up at once (the slot is not held by a ghost).
  release_work_point(i);
  residents_.work_point[i] = ResidentStore::kNone;
  set_active(i, ResidentStore::kRetiring);
  auto it = std::lower_bound(handoffs_.begin(), handoffs_.end(), i,
                             [](const ZoneHandoff& h, std::uint32_t r) { return h.resident < r; });
  if (it != handoffs_.end() && it->resident == i) handoffs_.erase(it);  // nothing left to hand over
}

void PopulationSystem::on_died(std::uint32_t i) {
  assert(residents_.active[i] == ResidentStore::kActive);  // only a walking member is killed
  on_deactivated(i);  // work-point and handoff let go, as a member that leaves
  set_active(i, ResidentStore::kDeceased);
}

// Invariant 2's last part: every member is active, dormant or deceased, and
// the deceased count agrees with a recount.
std::string PopulationSystem::check_member_total(std::uint32_t active_total,
                                                 std::uint32_t dormant_total) const {
  std::uint32_t deceased_total = 0;
  for (const std::uint8_t a : residents_.active) deceased_total += a == ResidentStore::kDeceased;
  if (deceased_total != deceased_total_)
    return "invariant 2: " + std::to_string(deceased_total_) + " deceased counted, " +
           std::to_string(deceased_total) + " members are";
  if (active_total + dormant_total + deceased_total != residents_.size()) {
    return "invariant 2: active " + std::to_string(active_total) + " + dormant " +
           std::to_string(dormant_total) + " + deceased " + std::to_string(deceased_total) +
           " != identities " + std::to_string(residents_.size());
  }
  return {};
}

void PopulationSystem::load_deceased(std::uint32_t i) {
  assert(residents_.active[i] == ResidentStore::kDormant);  // a fresh world's member
  set_active(i, ResidentStore::kDeceased);
}

void PopulationSystem::on_deactivated(std::uint32_t i) {
  // A dormant member has nothing to let go; a deceased one let go when it died.
  if (residents_.active[i] == ResidentStore::kDormant ||
      residents_.active[i] == ResidentStore::kDeceased)
    return;
  release_work_point(i);
  residents_.work_point[i] = ResidentStore::kNone;
  auto it = std::lower_bound(handoffs_.begin(), handoffs_.end(), i,
                             [](const ZoneHandoff& h, std::uint32_t r) { return h.resident < r; });
  if (it != handoffs_.end() && it->resident == i) handoffs_.erase(it);
  set_active(i, ResidentStore::kDormant);
}

void PopulationSystem::claim_work_point(std::uint32_t i) {
  residents_.work_slot[i] = ResidentStore::kNone;
  if (residents_.work_point[i] == ResidentStore::kNone) return;
  WorkPointState& wp = work_points_[static_cast<std::size_t>(residents_.work_point[i])];
  for (std::size_t s = 0; s < wp.occupant.size(); ++s) {
    if (wp.occupant[s] == ResidentStore::kNone) {
      wp.occupant[s] = static_cast<std::int32_t>(i);
      residents_.work_slot[i] = static_cast<std::int32_t>(s);
      return;
    }
  }
  assert(residents_.active[i] == ResidentStore::kActive);  // invariant 4: only active members wait
  wp.waiting.push_back(i);                                 // full: wait in FIFO order
}

void PopulationSystem::release_work_point(std::uint32_t i) {
  if (residents_.work_point[i] == ResidentStore::kNone) return;
  WorkPointState& wp = work_points_[static_cast<std::size_t>(residents_.work_point[i])];
  if (residents_.work_slot[i] == ResidentStore::kNone) {
    wp.waiting.erase(std::remove(wp.waiting.begin(), wp.waiting.end(), i), wp.waiting.end());
    return;
  }
  const auto slot = static_cast<std::size_t>(residents_.work_slot[i]);
  // Invariant 4 where it is read back: the slot names the resident claim_work_point() put there.
  assert(wp.occupant[slot] == static_cast<std::int32_t>(i));
  wp.occupant[slot] = ResidentStore::kNone;
  residents_.work_slot[i] = ResidentStore::kNone;
  if (!wp.waiting.empty()) {  // the head of the queue takes the freed slot
    const std::uint32_t next = wp.waiting.front();
    wp.waiting.erase(wp.waiting.begin());
    wp.occupant[slot] = static_cast<std::int32_t>(next);
    residents_.work_slot[next] = static_cast<std::int32_t>(slot);
    refresh(next);
  }
}

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

std::string PopulationSystem::check_invariants(const EntityRegistry& registry) const {
  const std::string area = "population: ";
  const std::uint32_t n = residents_.size();
  const std::size_t nz = zones_.size();
  auto resident = [&](std::uint32_t i) {
    return "resident " + std::to_string(i) + " (" + id_text(residents_.id[i]) + ")";
  };
  if (residents_.community.size() != n || residents_.profession.size() != n ||
      residents_.zone.size() != n || residents_.active.size() != n ||
      residents_.work_point.size() != n || residents_.work_slot.size() != n ||
      row_hash_.size() != n) {
    return area + "column lengths differ";
  }
  std::vector<std::uint32_t> active_cz(active_cz_.size(), 0), dormant(nz, 0), active(nz, 0),
      retiring(nz, 0);
  std::uint32_t active_total = 0, retiring_total = 0;
  std::uint64_t row_sum = 0;
  std::size_t listed = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    // 1. Identities.
    if (!registry.is_alive(residents_.id[i]))
      return area + "invariant 1: " + resident(i) + " is not alive in the registry";
    if (resident_of(residents_.id[i]) != static_cast<std::int32_t>(i)) {
      return area + "invariant 1: " + resident(i) + " maps back to resident " +
             std::to_string(resident_of(residents_.id[i]));
    }
    if (residents_.active[i] > ResidentStore::kDeceased)
      return area + "invariant 1: " + resident(i) + " has lifecycle " +
             std::to_string(residents_.active[i]);
    if (residents_.zone[i] >= nz)
      return area + resident(i) + " is in unknown zone " + std::to_string(residents_.zone[i]);
    row_sum += row_hash(i);
    if (residents_.active[i] == ResidentStore::kDormant) {
      ++dormant[residents_.zone[i]];
    } else if (residents_.active[i] != ResidentStore::kDeceased) {
      ++active[residents_.zone[i]];
      ++active_cz[residents_.community[i] * nz + residents_.zone[i]];
      ++active_total;
      if (residents_.active[i] == ResidentStore::kRetiring) {
        ++retiring[residents_.zone[i]];
        ++retiring_total;
      }
      if (listed >= active_list_.size() || active_list_[listed] != i) {
        return area + "invariant 2: " + resident(i) +
               " is active but not next in the sorted active list";
      }
      ++listed;
    }
    // 4. Work-points: the resident's side.
    if (residents_.work_point[i] != ResidentStore::kNone) {
      if (residents_.active[i] != ResidentStore::kActive)
        return area + "invariant 4: " + resident(i) +
               " is not active but holds or awaits a work-point";
      if (residents_.work_point[i] < 0 ||
          static_cast<std::size_t>(residents_.work_point[i]) >= work_points_.size()) {
        return area + "invariant 4: " + resident(i) + " names unknown work-point " +
               std::to_string(residents_.work_point[i]);
      }
      const WorkPointState& wp = work_points_[static_cast<std::size_t>(residents_.work_point[i])];
      if (residents_.work_slot[i] != ResidentStore::kNone) {
        const auto slot = static_cast<std::size_t>(residents_.work_slot[i]);
        if (slot >= wp.occupant.size() || wp.occupant[slot] != static_cast<std::int32_t>(i)) {
          return area + "invariant 4: " + resident(i) + " holds slot " + std::to_string(slot) +
                 " of work-point " + std::to_string(residents_.work_point[i]) +
                 ", which does not name it";
        }
      } else if (std::count(wp.waiting.begin(), wp.waiting.end(), i) != 1) {
        return area + "invariant 5: " + resident(i) + " awaits work-point " +
               std::to_string(residents_.work_point[i]) + " but is not in its FIFO exactly once";
      }
    } else if (residents_.work_slot[i] != ResidentStore::kNone) {
      return area + "invariant 4: " + resident(i) + " holds slot " +
             std::to_string(residents_.work_slot[i]) + " of no work-point";
    }
  }
  if (listed != active_list_.size())
    return area + "invariant 2: the active list holds dormant residents";
  if (row_sum != row_sum_) return area + "incremental row digest differs from a recount";
  // 2. Counts; 3. capacity.
  std::uint32_t dormant_total = 0;
  for (std::size_t z = 0; z < nz; ++z) {
    const std::string zone = "zone " + scenario_->zones[z].id;
    if (zones_[z].dormant != dormant[z]) {
      return area + "invariant 2: " + zone + " counts " + std::to_string(zones_[z].dormant) +
             " dormant, " + std::to_string(dormant[z]) + " members are";
    }
    if (zones_[z].retiring != retiring[z]) {
      return area + "invariant 2: " + zone + " counts " + std::to_string(zones_[z].retiring) +
             " retiring, " + std::to_string(retiring[z]) + " members are";
    }
    if (active[z] > scenario_->zones[z].capacity) {
      return area + "invariant 3: " + zone + " has " + std::to_string(active[z]) +
             " active members, capacity " + std::to_string(scenario_->zones[z].capacity);
    }
    dormant_total += dormant[z];
  }
  for (std::size_t cell = 0; cell < active_cz.size(); ++cell) {
    if (active_cz[cell] != active_cz_[cell]) {
      return area + "invariant 2: community " + scenario_->communities[cell / nz].id + " in zone " +
             scenario_->zones[cell % nz].id + " counts " + std::to_string(active_cz_[cell]) +
             " active, " + std::to_string(active_cz[cell]) + " members are";
    }
  }
  if (active_total != active_total_ || retiring_total != retiring_total_) {
    return area + "invariant 2: totals count " + std::to_string(active_total_) + " active / " +
           std::to_string(retiring_total_) + " retiring, the residents hold " +
           std::to_string(active_total) + " / " + std::to_string(retiring_total);
  }
  if (std::string why = check_member_total(active_total, dormant_total); !why.empty())
    return area + why;
  // 4, 5. Work-points: the slots' side and the FIFOs.
  for (std::size_t w = 0; w < work_points_.size(); ++w) {
    const WorkPointState& wp = work_points_[w];
    const std::string point = "work-point " + scenario_->work_points[w].id;
    bool full = true;
    for (std::size_t slot = 0; slot < wp.occupant.size(); ++slot) {
      const std::int32_t o = wp.occupant[slot];
      if (o == ResidentStore::kNone) {
        full = false;
        continue;
      }
      if (o < 0 || static_cast<std::uint32_t>(o) >= n ||
          residents_.work_point[static_cast<std::size_t>(o)] != static_cast<std::int32_t>(w) ||
          residents_.work_slot[static_cast<std::size_t>(o)] != static_cast<std::int32_t>(slot)) {
        return area + "invariant 4: " + point + " slot " + std::to_string(slot) +
               " holds resident " + std::to_string(o) + ", which does not hold that slot";
      }
    }
    if (!wp.waiting.empty() && !full)
      return area + "invariant 5: " + point + " has a free slot and a waiting resident";
    for (const std::uint32_t q : wp.waiting) {
      if (q >= n || residents_.work_point[q] != static_cast<std::int32_t>(w) ||
          residents_.work_slot[q] != ResidentStore::kNone) {
        return area + "invariant 5: " + point + " FIFO holds resident " + std::to_string(q) +
               ", which does not await it";
      }
    }
  }
  // 6. Handoffs.
  for (std::size_t k = 0; k < handoffs_.size(); ++k) {
    const ZoneHandoff& h = handoffs_[k];
    if (k > 0 && !(handoffs_[k - 1].resident < h.resident))
      return area + "invariant 6: handoffs are not sorted by resident";
    if (h.resident >= n || residents_.active[h.resident] != ResidentStore::kActive ||
        residents_.zone[h.resident] != h.from || h.to >= nz) {
      return area + "invariant 6: handoff of resident " + std::to_string(h.resident) +
             " from zone " + std::to_string(h.from) + ": it is not active there";
    }
  }
  return {};
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
  if (std::string why = validate_lifecycle_settings(cp.settings); !why.empty())
    fail("settings", why);
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
