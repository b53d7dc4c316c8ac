// The zone lifecycle, phase 2 at each lifecycle interval: the coordinator
// (lifecycle) and per zone its recycle of excess members and its growth
// from dormant ones within capacity, quotas and the migration budget.
#include <algorithm>
#include <cassert>
#include <functional>
#include <utility>
#include <vector>

#include "bustle/core/population.hpp"

namespace bustle::core {

namespace {
std::uint32_t room_left(std::uint32_t capacity, std::uint32_t active) {
  return capacity > active ? capacity - active : 0;
}
}  // namespace

void PopulationSystem::lifecycle(const std::function<double(std::uint32_t)>& distance_m,
                                 std::vector<std::uint32_t>& activate,
                                 std::vector<std::uint32_t>& deactivate,
                                 std::vector<std::uint32_t>& moved) {
  plan_schedule();
  const std::size_t nc = scenario_->communities.size();
  assert(desired_zone_.size() == nc);
  assert(desired_n_.size() == nc);
  assert(active_cz_.size() == nc * zones_.size());
  [[maybe_unused]] const std::size_t deactivating_before = deactivate.size();
  // Only active residents are visited (in EntityId order); dormant records
  // are touched only when chosen.

  // Phase 2, after the clock: migration of active members (two-phase handoff).
  resolve_handoffs(desired_zone_, moved);
  follow_work_points();
  std::uint32_t migrations_left = settings_.migration_budget;
  start_handoffs(desired_zone_, desired_n_, migrations_left);
  count_pending_handoffs();

  // Phase 2, last: zone lifecycle.
  for (std::uint32_t z = 0; z < zones_.size(); ++z) {
    ZoneStatus& st = zones_[z];
    st.target = 0;
    std::uint32_t active_z = 0;
    for (std::uint32_t c = 0; c < scenario_->communities.size(); ++c) {
      if (desired_zone_[c] == static_cast<std::int64_t>(z)) st.target += desired_n_[c];
      active_z += active_cz_[c * zones_.size() + z];
    }
    std::uint32_t excess_total = 0;
    const std::uint32_t recycle = recycle_zone(z, distance_m, deactivate, excess_total);
    grow_zone(z, active_z, recycle, excess_total, migrations_left, activate);
  }
  // Within the interval's budgets.
  assert(migrations_left <= settings_.migration_budget);
  assert(deactivate.size() - deactivating_before <=
         std::size_t{settings_.recycle_quota} * zones_.size());
}

std::uint32_t PopulationSystem::recycle_zone(std::uint32_t z,
                                             const std::function<double(std::uint32_t)>& distance_m,
                                             std::vector<std::uint32_t>& deactivate,
                                             std::uint32_t& excess_total) {
  const std::size_t nz = zones_.size();
  const std::size_t nc = scenario_->communities.size();
  assert(z < nz);
  assert(excess_total == 0);
  ZoneStatus& st = zones_[z];
  // Per community, its excess in this zone (members leaving by handoff
  // excepted), farthest first; retiring members are already going.
  // Farthest first, ties by EntityId; distances are asked for candidates only.
  auto farthest_first = [&](const std::pair<double, std::uint32_t>& a,
                            const std::pair<double, std::uint32_t>& b) {
    if (a.first != b.first) return a.first > b.first;
    return residents_.id[a.second] < residents_.id[b.second];
  };
  auto& recyc = scratch_a_;
  recyc.clear();
  for (std::uint32_t c = 0; c < nc; ++c) {
    const std::uint32_t want = desired_zone_[c] == static_cast<std::int64_t>(z) ? desired_n_[c] : 0;
    const std::uint32_t have = active_cz_[c * nz + z] - pending_out_[c * nz + z];
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
  assert(recyc.size() == excess_total);  // each community's excess, once
  const std::uint32_t recycle =
      std::min<std::uint32_t>(settings_.recycle_quota, static_cast<std::uint32_t>(recyc.size()));
  for (std::uint32_t k = 0; k < recycle; ++k) deactivate.push_back(recyc[k].second);
  st.recycled = recycle;
  st.recycled_total += recycle;
  return recycle;
}

void PopulationSystem::grow_candidates(std::uint32_t z, std::uint32_t& need_total) {
  const std::size_t nz = zones_.size();
  std::vector<std::uint32_t>& cand = grow_;
  cand.clear();
  for (std::uint32_t c = 0; c < scenario_->communities.size(); ++c) {
    if (desired_zone_[c] != static_cast<std::int64_t>(z)) continue;
    const std::uint32_t have = active_cz_[c * nz + z] + pending_in_[c * nz + z];
    if (have >= desired_n_[c]) continue;
    const std::uint32_t need = desired_n_[c] - have;
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
}

void PopulationSystem::grow_zone(std::uint32_t z, std::uint32_t active_z, std::uint32_t recycle,
                                 std::uint32_t excess_total, std::uint32_t& migrations_left,
                                 std::vector<std::uint32_t>& activate) {
  assert(z < zones_.size());
  assert(recycle <= excess_total);
  assert(recycle <= active_z);
  ZoneStatus& st = zones_[z];
  std::uint32_t deferred = excess_total - recycle;
  // Dormant members of communities short in this zone (handoffs on their
  // way here count as arriving).
  std::uint32_t need_total = 0;
  grow_candidates(z, need_total);
  const std::vector<std::uint32_t>& cand = grow_;
  // Capacity rejects only what would not fit once every member on its way
  // out (excess, handoffs, fades) has left; what waits for them is deferred
  // (seed 001: a deferral reported as a failure makes callers overshoot).
  std::uint32_t leaving = st.retiring;  // retiring members are never in a handoff
  for (std::uint32_t c = 0; c < scenario_->communities.size(); ++c)
    leaving += pending_out_[c * zones_.size() + z];
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
  // Growth within the quota and the room; what it could not place is counted.
  assert(grow + held_by_migration <= want);
  assert(want <= allowed);
  st.activated = grow;
  st.activated_total += grow;
  // Places the quota gave whose record could not move: deferred by migration.
  st.deferred_by_migration = held_by_migration;
  deferred += allowed - grow - held_by_migration;
  st.deferred_by_quota = deferred;
  st.active = active_z - recycle + grow;
  // Gross per community, like deferred_by_quota: one community's excess
  // never hides another's shortfall in the same zone.
  assert(grow <= need_total);
  st.pending_spawn = need_total - grow;
  st.pending_recycle = excess_total - recycle;
}

void PopulationSystem::refresh_zone_counts() {
  const std::size_t nz = zones_.size();
  for (std::size_t z = 0; z < nz; ++z) {
    std::uint32_t n = 0;
    for (std::size_t c = 0; c < scenario_->communities.size(); ++c) n += active_cz_[c * nz + z];
    zones_[z].active = n;
  }
}

}  // namespace bustle::core
