#include "bustle/core/population.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>

#include "bustle/core/digest.hpp"

namespace bustle::core {
namespace {
constexpr std::uint64_t kDayUs = 86'400'000'000ull;
}  // namespace

PopulationSystem::PopulationSystem(const Scenario& scenario) : scenario_(&scenario) {
  zones_.resize(scenario.zones.size());
  for (const WorkPointSpec& wp : scenario.work_points) {
    WorkPointState st;
    st.occupant.assign(wp.slots, ResidentStore::kNone);
    work_points_.push_back(std::move(st));
  }
  std::map<std::string, std::uint32_t> zone_index;
  for (std::uint32_t z = 0; z < scenario.zones.size(); ++z) zone_index.emplace(scenario.zones[z].id, z);
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
  day_us_ = static_cast<std::uint64_t>(std::llround(scenario.population.start_hour * 3.6e9)) % kDayUs;
  time_scale_ = scenario.population.time_scale;
  resident_by_entity_.assign(scenario.entity_capacity, ResidentStore::kNone);
}

bool PopulationSystem::create_identities(EntityRegistry& registry) {
  std::map<std::string, std::uint32_t> zone_index;
  for (std::uint32_t z = 0; z < scenario_->zones.size(); ++z) zone_index.emplace(scenario_->zones[z].id, z);
  for (std::uint32_t c = 0; c < scenario_->communities.size(); ++c) {
    const CommunitySpec& cs = scenario_->communities[c];
    for (std::uint32_t m = 0; m < cs.base_population; ++m) {
      const AllocateResult a = registry.allocate();
      if (a.status != AllocateStatus::Allocated) return false;
      resident_by_entity_[a.id.index] = static_cast<std::int32_t>(r_.size());
      r_.id.push_back(a.id);
      r_.community.push_back(c);
      r_.profession.push_back(m % static_cast<std::uint32_t>(cs.professions.size()));
      r_.zone.push_back(zone_index.at(cs.home_zone));
      r_.active.push_back(0);
      r_.work_point.push_back(ResidentStore::kNone);
      r_.work_slot.push_back(ResidentStore::kNone);
    }
  }
  for (std::uint32_t i = 0; i < r_.size(); ++i) ++zones_[r_.zone[i]].dormant;
  return true;
}

bool PopulationSystem::advance_clock(std::uint64_t sim_time_us, std::uint32_t step_us) {
  day_us_ = (day_us_ + std::uint64_t{step_us} * time_scale_) % kDayUs;
  if (scenario_->communities.empty()) return false;
  // Interval numbers start at 1 so the first step runs the coordinator.
  const std::uint64_t interval = sim_time_us / (std::uint64_t{scenario_->population.lifecycle_interval_ms} * 1000) + 1;
  if (interval == last_interval_) return false;
  last_interval_ = interval;
  return true;
}

void PopulationSystem::set_hour(double hour) {
  day_us_ = static_cast<std::uint64_t>(std::llround(std::clamp(hour, 0.0, 24.0) * 3.6e9)) % kDayUs;
}

std::int32_t PopulationSystem::resident_of(EntityId id) const {
  if (id.index >= resident_by_entity_.size()) return ResidentStore::kNone;
  const std::int32_t r = resident_by_entity_[id.index];
  return r != ResidentStore::kNone && r_.id[static_cast<std::size_t>(r)] == id ? r : ResidentStore::kNone;
}

std::uint32_t PopulationSystem::active_count() const {
  std::uint32_t n = 0;
  for (const std::uint8_t a : r_.active) n += a;
  return n;
}

int PopulationSystem::entry_index(std::uint32_t community) const {
  return schedule_entry_at(scenario_->communities[community].schedule, hour());
}

void PopulationSystem::lifecycle(const std::vector<double>& distance_m, std::vector<std::uint32_t>& activate,
                                 std::vector<std::uint32_t>& deactivate) {
  const std::size_t nz = zones_.size();
  const std::size_t nc = scenario_->communities.size();
  std::vector<std::int64_t> desired_zone(nc, -1);
  std::vector<std::uint32_t> desired_n(nc, 0);
  std::vector<std::int32_t> desired_wp(nc, ResidentStore::kNone);
  for (std::uint32_t c = 0; c < nc; ++c) {
    const CommunitySpec& cs = scenario_->communities[c];
    const int e = entry_index(c);
    if (e < 0) continue;
    const ScheduleEntry& entry = cs.schedule[static_cast<std::size_t>(e)];
    desired_zone[c] = entry_zone_[c][static_cast<std::size_t>(e)];
    const double want = std::round(static_cast<double>(cs.base_population) * entry.density);
    desired_n[c] = static_cast<std::uint32_t>(std::clamp(want, 0.0, static_cast<double>(cs.base_population)));
    desired_wp[c] = entry_work_point_[c][static_cast<std::size_t>(e)];
  }
  std::vector<std::uint32_t> active_cz(nc * nz, 0), active_z(nz, 0), dormant_z(nz, 0);
  for (std::uint32_t i = 0; i < r_.size(); ++i) {
    if (r_.active[i]) {
      ++active_cz[r_.community[i] * nz + r_.zone[i]];
      ++active_z[r_.zone[i]];
    } else {
      ++dormant_z[r_.zone[i]];
    }
  }
  // Work-points follow the schedule for residents already active.
  for (std::uint32_t i = 0; i < r_.size(); ++i) {
    if (!r_.active[i]) continue;
    const std::int32_t want = static_cast<std::int64_t>(r_.zone[i]) == desired_zone[r_.community[i]]
                                  ? desired_wp[r_.community[i]]
                                  : ResidentStore::kNone;
    if (want != r_.work_point[i]) {
      release_work_point(i);
      r_.work_point[i] = want;
      claim_work_point(i);
    }
  }
  const auto& pop = scenario_->population;
  std::vector<std::uint8_t> chosen(r_.size(), 0);
  std::uint32_t migrations_left = pop.migration_budget;
  for (std::uint32_t z = 0; z < nz; ++z) {
    ZoneStatus& st = zones_[z];
    st.activated = st.recycled = st.deferred_by_quota = st.rejected_by_capacity = 0;
    st.migrated_in = st.deferred_by_migration = 0;
    st.target = 0;
    for (std::uint32_t c = 0; c < nc; ++c) {
      if (desired_zone[c] == static_cast<std::int64_t>(z)) st.target += desired_n[c];
    }
    // 1. Recycle: per community, its excess in this zone, farthest first.
    std::vector<std::uint32_t>& cand = scratch_a_;
    cand.clear();
    std::uint32_t excess_total = 0;
    for (std::uint32_t c = 0; c < nc; ++c) {
      const std::uint32_t want = desired_zone[c] == static_cast<std::int64_t>(z) ? desired_n[c] : 0;
      const std::uint32_t have = active_cz[c * nz + z];
      if (have <= want) continue;
      const std::uint32_t excess = have - want;
      excess_total += excess;
      std::vector<std::uint32_t>& mine = scratch_b_;
      mine.clear();
      for (std::uint32_t i = community_first_[c]; i < community_first_[c + 1]; ++i) {
        if (r_.active[i] && r_.zone[i] == z) mine.push_back(i);
      }
      auto farthest_first = [&](std::uint32_t a, std::uint32_t b) {
        if (distance_m[a] != distance_m[b]) return distance_m[a] > distance_m[b];
        return r_.id[a] < r_.id[b];
      };
      std::partial_sort(mine.begin(), mine.begin() + excess, mine.end(), farthest_first);
      cand.insert(cand.end(), mine.begin(), mine.begin() + excess);
    }
    std::sort(cand.begin(), cand.end(), [&](std::uint32_t a, std::uint32_t b) {
      if (distance_m[a] != distance_m[b]) return distance_m[a] > distance_m[b];
      return r_.id[a] < r_.id[b];
    });
    const std::uint32_t recycle = std::min<std::uint32_t>(pop.recycle_quota, static_cast<std::uint32_t>(cand.size()));
    for (std::uint32_t k = 0; k < recycle; ++k) {
      deactivate.push_back(cand[k]);
      chosen[cand[k]] = 1;
    }
    st.recycled = recycle;
    st.recycled_total += recycle;
    std::uint32_t deferred = excess_total - recycle;

    // 2. Grow: dormant members of communities short in this zone.
    cand.clear();
    std::uint32_t need_total = 0;
    for (std::uint32_t c = 0; c < nc; ++c) {
      if (desired_zone[c] != static_cast<std::int64_t>(z)) continue;
      const std::uint32_t have = active_cz[c * nz + z];
      if (have >= desired_n[c]) continue;
      const std::uint32_t need = desired_n[c] - have;
      need_total += need;
      std::vector<std::uint32_t>& mine = scratch_b_;
      mine.clear();
      for (std::uint32_t i = community_first_[c]; i < community_first_[c + 1]; ++i) {
        if (!r_.active[i] && !chosen[i]) mine.push_back(i);
      }
      // Members already assigned to this zone first (plain reactivation), then
      // the others (a dormant record migrating here), ties by EntityId.
      auto here_first = [&](std::uint32_t a, std::uint32_t b) {
        const bool ah = r_.zone[a] == z;
        const bool bh = r_.zone[b] == z;
        if (ah != bh) return ah;
        return r_.id[a] < r_.id[b];
      };
      const std::size_t take = std::min<std::size_t>(need, mine.size());
      std::partial_sort(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(take), mine.end(), here_first);
      cand.insert(cand.end(), mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(take));
    }
    std::sort(cand.begin(), cand.end(), [&](std::uint32_t a, std::uint32_t b) {
      const bool ah = r_.zone[a] == z;
      const bool bh = r_.zone[b] == z;
      if (ah != bh) return ah;
      return r_.id[a] < r_.id[b];
    });
    const std::uint32_t capacity = scenario_->zones[z].capacity;
    const std::uint32_t active_after_recycle = active_z[z] - recycle;
    const std::uint32_t room = capacity > active_after_recycle ? capacity - active_after_recycle : 0;
    if (need_total > room) st.rejected_by_capacity = need_total - room;
    const std::uint32_t allowed = std::min(need_total, room);
    const std::uint32_t want = std::min(pop.growth_quota, allowed);
    std::uint32_t grow = 0;
    for (std::size_t k = 0; k < cand.size() && grow < want; ++k) {
      const std::uint32_t i = cand[k];
      if (r_.zone[i] != z) {
        if (migrations_left == 0) {
          ++st.deferred_by_migration;  // stays in its source zone for now
          continue;
        }
        --migrations_left;
        --zones_[r_.zone[i]].dormant;
        ++zones_[z].dormant;
        r_.zone[i] = z;  // handoff of a dormant record: identity unchanged
        ++st.migrated_in;
      }
      activate.push_back(i);
      chosen[i] = 1;
      ++grow;
    }
    st.activated = grow;
    st.activated_total += grow;
    // What the quota (not the migration budget) held back.
    deferred += allowed - grow - std::min(allowed - grow, st.deferred_by_migration);
    st.deferred_by_quota = deferred;
    st.active = active_z[z] - recycle + grow;
    st.pending_spawn = st.target > st.active ? st.target - st.active : 0;
    st.pending_recycle = st.active > st.target ? st.active - st.target : 0;
  }
}

void PopulationSystem::on_activated(std::uint32_t i) {
  assert(!r_.active[i]);
  r_.active[i] = 1;
  --zones_[r_.zone[i]].dormant;
  // The schedule decides the work-point; claim it now.
  const std::uint32_t c = r_.community[i];
  const int e = entry_index(c);
  r_.work_point[i] = ResidentStore::kNone;
  if (e >= 0 && entry_zone_[c][static_cast<std::size_t>(e)] == r_.zone[i]) {
    r_.work_point[i] = entry_work_point_[c][static_cast<std::size_t>(e)];
  }
  claim_work_point(i);
}

void PopulationSystem::on_deactivated(std::uint32_t i) {
  if (!r_.active[i]) return;
  release_work_point(i);
  r_.work_point[i] = ResidentStore::kNone;
  r_.active[i] = 0;
  ++zones_[r_.zone[i]].dormant;
}

void PopulationSystem::claim_work_point(std::uint32_t i) {
  r_.work_slot[i] = ResidentStore::kNone;
  if (r_.work_point[i] == ResidentStore::kNone) return;
  WorkPointState& wp = work_points_[static_cast<std::size_t>(r_.work_point[i])];
  for (std::size_t s = 0; s < wp.occupant.size(); ++s) {
    if (wp.occupant[s] == ResidentStore::kNone) {
      wp.occupant[s] = static_cast<std::int32_t>(i);
      r_.work_slot[i] = static_cast<std::int32_t>(s);
      return;
    }
  }
  wp.waiting.push_back(i);  // full: wait in FIFO order
}

void PopulationSystem::release_work_point(std::uint32_t i) {
  if (r_.work_point[i] == ResidentStore::kNone) return;
  WorkPointState& wp = work_points_[static_cast<std::size_t>(r_.work_point[i])];
  if (r_.work_slot[i] == ResidentStore::kNone) {
    wp.waiting.erase(std::remove(wp.waiting.begin(), wp.waiting.end(), i), wp.waiting.end());
    return;
  }
  const auto slot = static_cast<std::size_t>(r_.work_slot[i]);
  wp.occupant[slot] = ResidentStore::kNone;
  r_.work_slot[i] = ResidentStore::kNone;
  if (!wp.waiting.empty()) {  // the head of the queue takes the freed slot
    const std::uint32_t next = wp.waiting.front();
    wp.waiting.erase(wp.waiting.begin());
    wp.occupant[slot] = static_cast<std::int32_t>(next);
    r_.work_slot[next] = static_cast<std::int32_t>(slot);
  }
}

void PopulationSystem::digest_into(Digest& d) const {
  d.tag(30).u64(day_us_).u32(time_scale_).u64(last_interval_).u32(r_.size());
  for (std::uint32_t i = 0; i < r_.size(); ++i) {
    d.u64(r_.id[i].packed()).u32(r_.community[i]).u32(r_.profession[i]).u32(r_.zone[i]).u32(r_.active[i]);
    d.u64(static_cast<std::uint64_t>(r_.work_point[i])).u64(static_cast<std::uint64_t>(r_.work_slot[i]));
  }
  d.tag(31);
  for (const ZoneStatus& z : zones_) {
    d.u32(z.target).u32(z.active).u32(z.dormant).u32(z.pending_spawn).u32(z.pending_recycle).u32(z.activated);
    d.u32(z.recycled).u32(z.deferred_by_quota).u32(z.rejected_by_capacity).u32(z.migrated_in);
    d.u32(z.deferred_by_migration).u64(z.activated_total).u64(z.recycled_total);
  }
  d.tag(32);
  for (const WorkPointState& w : work_points_) {
    for (const std::int32_t o : w.occupant) d.u64(static_cast<std::uint64_t>(o));
    d.u64(w.waiting.size());
    for (const std::uint32_t q : w.waiting) d.u32(q);
  }
}

PopulationCheckpoint PopulationSystem::capture() const {
  PopulationCheckpoint cp{r_, {}, zones_, work_points_, day_us_, time_scale_, last_interval_};
  for (const ZoneSpec& z : scenario_->zones) cp.zone_ids.push_back(z.id);
  return cp;
}

std::vector<std::pair<std::string, std::string>> PopulationSystem::restore(const PopulationCheckpoint& cp,
                                                                            const EntityRegistry& registry) {
  std::vector<std::pair<std::string, std::string>> errors;
  auto fail = [&](std::string p, std::string m) {
    if (errors.size() < 32) errors.emplace_back(std::move(p), std::move(m));
  };
  const ResidentStore& r = cp.residents;
  const std::size_t n = r.id.size();
  if (r.community.size() != n || r.profession.size() != n || r.zone.size() != n || r.active.size() != n ||
      r.work_point.size() != n || r.work_slot.size() != n) {
    fail("residents", "column lengths differ");
    return errors;
  }
  if (n != community_first_.back()) {
    fail("residents", std::to_string(n) + " identities, the scenario's communities have " +
                          std::to_string(community_first_.back()));
  }
  if (cp.zones.size() != scenario_->zones.size()) fail("zones", "zone count differs from the scenario");
  if (cp.work_points.size() != scenario_->work_points.size()) fail("work_points", "work-point count differs");
  if (cp.day_us >= kDayUs) fail("day_us", "time of day must be in [0, 24) h");
  if (cp.time_scale < 1 || cp.time_scale > 3600) fail("time_scale", "must be in [1, 3600]");
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
      fail(row + ".community", "does not match the scenario's community sizes (each community has base_population identities, in order)");
      continue;
    }
    if (r.profession[i] >= scenario_->communities[r.community[i]].professions.size()) fail(row + ".profession", "unknown");
    if (r.zone[i] >= scenario_->zones.size()) fail(row + ".zone", "unknown zone");
    if (r.active[i] > 1) fail(row + ".active", "must be 0 or 1");
    if (r.work_point[i] != ResidentStore::kNone &&
        (r.work_point[i] < 0 || static_cast<std::size_t>(r.work_point[i]) >= cp.work_points.size())) {
      fail(row + ".work_point", "unknown work-point");
    }
  }
  for (std::size_t w = 0; w < cp.work_points.size(); ++w) {
    const WorkPointState& st = cp.work_points[w];
    if (st.occupant.size() != scenario_->work_points[w].slots) fail("work_points[" + std::to_string(w) + "]", "slot count differs");
    for (std::size_t s = 0; s < st.occupant.size(); ++s) {
      const std::int32_t o = st.occupant[s];
      if (o == ResidentStore::kNone) continue;
      if (o < 0 || static_cast<std::size_t>(o) >= n || r.work_point[static_cast<std::size_t>(o)] != static_cast<std::int32_t>(w) ||
          r.work_slot[static_cast<std::size_t>(o)] != static_cast<std::int32_t>(s)) {
        fail("work_points[" + std::to_string(w) + "].occupant[" + std::to_string(s) + "]",
             "does not match the resident's slot (slots must be uniquely occupied)");
      }
    }
  }
  if (!errors.empty()) return errors;
  r_ = r;
  resident_by_entity_ = std::move(by_entity);
  zones_ = cp.zones;
  work_points_ = cp.work_points;
  day_us_ = cp.day_us;
  time_scale_ = cp.time_scale;
  last_interval_ = cp.last_interval;
  return errors;
}

}  // namespace bustle::core
