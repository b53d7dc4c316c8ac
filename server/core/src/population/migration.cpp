// Migration between zones: the two-phase handoffs of active members
// (started one interval, resolved the next) and the per-resident migration
// records.
#include <algorithm>
#include <cassert>
#include <vector>

#include "bustle/core/population.hpp"

namespace bustle::core {

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
  [[maybe_unused]] const std::size_t moved_before = moved.size();
  for (const ZoneHandoff& h : handoffs_) {
    const std::uint32_t i = h.resident;
    assert(i < residents_.size());
    assert(h.to < zones_.size());
    assert(h.from != h.to);
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
  assert(moved.size() - moved_before <= handoffs_.size());  // each handoff at most once
  handoffs_.clear();
}

void PopulationSystem::start_handoffs(const std::vector<std::int64_t>& desired_zone,
                                      const std::vector<std::uint32_t>& desired_n,
                                      std::uint32_t& migrations_left) {
  const std::size_t nz = zones_.size();
  assert(desired_zone.size() == scenario_->communities.size());
  assert(desired_n.size() == scenario_->communities.size());
  assert(handoffs_.empty());  // resolve_handoffs took last interval's
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
  // One handoff per resident (read back by in_handoff's binary search).
  assert(std::adjacent_find(handoffs_.begin(), handoffs_.end(),
                            [](const ZoneHandoff& a, const ZoneHandoff& b) {
                              return a.resident >= b.resident;
                            }) == handoffs_.end());
}

void PopulationSystem::count_pending_handoffs() {
  const std::size_t nz = zones_.size();
  const std::size_t nc = scenario_->communities.size();
  pending_in_.assign(nc * nz, 0);
  pending_out_.assign(nc * nz, 0);
  for (const ZoneHandoff& h : handoffs_) {
    ++pending_in_[residents_.community[h.resident] * nz + h.to];
    ++pending_out_[residents_.community[h.resident] * nz + h.from];
  }
}

}  // namespace bustle::core
