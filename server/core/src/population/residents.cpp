// Resident identities and rows: creating the identities (kept while dormant),
// the row hash and derived indexes every change goes through (refresh,
// set_active, move_zone), look-ups, and the World's activation callbacks
// (activated, retiring, died, deactivated).
#include <algorithm>
#include <cassert>
#include <map>
#include <span>
#include <string>

#include "bustle/core/digest.hpp"
#include "bustle/core/population.hpp"

namespace bustle::core {

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

std::int32_t PopulationSystem::resident_of(EntityId id) const {
  if (id.index >= resident_by_entity_.size()) return ResidentStore::kNone;
  const std::int32_t r = resident_by_entity_[id.index];
  return r != ResidentStore::kNone && residents_.id[static_cast<std::size_t>(r)] == id
             ? r
             : ResidentStore::kNone;
}

std::span<const std::uint32_t> PopulationSystem::active_members(std::uint32_t c) const {
  const auto lo = std::lower_bound(active_list_.begin(), active_list_.end(), community_first_[c]);
  const auto hi = std::lower_bound(lo, active_list_.end(), community_first_[c + 1]);
  return {lo, hi};
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

}  // namespace bustle::core
