// The population's clock and schedules: the constructor resolves each
// community's schedule entries to zone and work-point indices once; the time
// of day and lifecycle intervals (advance_clock, settings, set_hour); which
// entry holds now and what it asks for (plan_schedule).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "bustle/core/population.hpp"
#include "internal.hpp"

namespace bustle::core {

Status validate_lifecycle_settings(const LifecycleSettings& s) {
  if (s.interval_ms < 1 || s.interval_ms > 3'600'000)
    return Status::invalid_argument("interval_ms must be in [1, 3600000]");
  if (s.growth_quota > 1'000'000)
    return Status::invalid_argument("growth_quota must be at most 1000000");
  if (s.recycle_quota > 1'000'000)
    return Status::invalid_argument("recycle_quota must be at most 1000000");
  if (s.migration_budget > 1'000'000)
    return Status::invalid_argument("migration_budget must be at most 1000000");
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

void PopulationSystem::plan_schedule() {
  const std::size_t nc = scenario_->communities.size();
  // Scratch members, not locals: the coordinator runs every interval and
  // the step allocates nothing after warm-up.
  desired_zone_.assign(nc, -1);
  desired_n_.assign(nc, 0);
  desired_wp_.assign(nc, ResidentStore::kNone);
  for (std::uint32_t c = 0; c < nc; ++c) {
    const int e = entry_index(c);
    if (e < 0) continue;
    desired_zone_[c] = entry_zone_[c][static_cast<std::size_t>(e)];
    desired_n_[c] = community_target(c);
    desired_wp_[c] = entry_work_point_[c][static_cast<std::size_t>(e)];
  }
  for (ZoneStatus& st : zones_) {
    st.activated = st.recycled = st.deferred_by_quota = st.rejected_by_capacity = 0;
    st.migrated_in = st.deferred_by_migration = 0;
    st.handoffs_started = st.handoffs_accepted = st.handoffs_returned = 0;
  }
}

}  // namespace bustle::core
