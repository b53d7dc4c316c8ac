// Saves (persistent facts only, not a checkpoint): capture_save, and
// load_save, which builds a fresh world from the scenario, checks the save
// against it and places the saved active set again.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"
#include "restore_failures.hpp"

namespace bustle::core {

SaveState World::capture_save() const {  // NOLINT
  SaveState s{scenario_.id,
              scenario_.step_us,
              seed_,
              step_index_,
              pedestrian_target_,
              population_.day_us(),
              population_.time_scale(),
              {},
              {},
              {},
              {},
              population_.settings(),
              {},
              false,
              {}};
  for (const GarageState& g : vehicles_.garages())
    s.garage_vehicle_ordinals.push_back(g.next_vehicle_ordinal);
  const ResidentStore& rs = population_.residents();
  for (std::uint32_t i = 0; i < rs.size(); ++i) {
    if (!scenario_.communities[rs.community[i]].saveable) continue;
    s.saveable_ids.push_back(rs.id[i]);
    s.saveable_zones.push_back(scenario_.zones[rs.zone[i]].id);
    s.saveable_deceased.push_back(rs.active[i] == ResidentStore::kDeceased ? 1 : 0);
  }
  for (std::uint32_t i = 0; i < rs.size(); ++i) {
    if (rs.active[i] != ResidentStore::kActive) continue;  // dormant, or retiring (fading out)
    const std::uint32_t slot = pedestrians_.dense_of[rs.id[i].index];
    if (slot == PedestrianStore::kNoSlot) continue;
    s.active_residents.push_back({rs.id[i], scenario_.zones[rs.zone[i]].id,
                                  lanes_.lane(pedestrians_.lane[slot]).id, pedestrians_.s_m[slot]});
  }
  s.has_observers = true;
  for (std::size_t k = 0; k < observers_.size(); ++k) {
    const ObserverView& v = observer_views_[k];
    s.observers.push_back(
        {observers_[k].x_m, observers_[k].y_m, v.z_m, v.has_heading, v.heading_rad});
  }
  return s;
}

// The load's one reconciling step: the saved active set placed again, each
// resident on its saved lane position in its saved zone. Checked completely
// before anything is placed.
std::vector<RestoreError> World::place_saved_active_set(const SaveState& save) {
  std::vector<RestoreError> errors;
  const ResidentStore& rs = population_.residents();
  std::map<std::uint64_t, std::uint32_t> resident_of;
  for (std::uint32_t i = 0; i < rs.size(); ++i) resident_of.emplace(rs.id[i].packed(), i);
  std::vector<std::uint32_t> resident(save.active_residents.size()),
      zone(save.active_residents.size());
  std::vector<LaneIndex> lane(save.active_residents.size());
  std::vector<std::uint32_t> per_zone(scenario_.zones.size(), 0);
  std::vector<std::uint8_t> seen(rs.size(), 0);
  for (std::size_t k = 0; k < save.active_residents.size() && errors.size() < kMaxReportedErrors;
       ++k) {
    const SaveState::ActiveResident& a = save.active_residents[k];
    const std::string row = "active_residents[" + std::to_string(k) + "]";
    const auto r = resident_of.find(a.id.packed());
    if (r == resident_of.end()) {
      errors.push_back({row + ".id", id_text(a.id) + " is not a resident of this scenario"});
      continue;
    }
    if (seen[r->second]++ != 0) {
      errors.push_back({row + ".id", id_text(a.id) + " is listed twice"});
      continue;
    }
    if (rs.active[r->second] == ResidentStore::kDeceased) {
      errors.push_back({row + ".id", id_text(a.id) + " is deceased in this save"});
      continue;
    }
    resident[k] = r->second;
    zone[k] = UINT32_MAX;
    for (std::uint32_t z = 0; z < scenario_.zones.size(); ++z) {
      if (scenario_.zones[z].id == a.zone) zone[k] = z;
    }
    if (zone[k] == UINT32_MAX) {
      errors.push_back({row + ".zone", "unknown zone '" + a.zone + "'"});
      continue;
    }
    const std::uint32_t community = rs.community[r->second];
    if (scenario_.communities[community].saveable && rs.zone[r->second] != zone[k]) {
      errors.push_back({row + ".zone", "'" + a.zone +
                                           "', but the saved zone of saveable resident " +
                                           id_text(a.id) + " is '" +
                                           scenario_.zones[rs.zone[r->second]].id + "'"});
      continue;
    }
    if (++per_zone[zone[k]] > scenario_.zones[zone[k]].capacity) {
      errors.push_back({row + ".zone", "zone '" + a.zone + "' would hold more than its capacity " +
                                           std::to_string(scenario_.zones[zone[k]].capacity)});
      continue;
    }
    // Anywhere a pedestrian walks: residents cross to other zones' lanes.
    const auto walkable =
        std::find_if(lanes_.lanes().begin(), lanes_.lanes().end(),
                     [&](const auto& l) { return l.id == a.lane && l.kind != LaneKind::Road; });
    if (walkable == lanes_.lanes().end()) {
      errors.push_back(
          {row + ".lane", "'" + a.lane + "' is not a sidewalk or crossing of this scenario"});
      continue;
    }
    lane[k] = static_cast<LaneIndex>(walkable - lanes_.lanes().begin());
    if (!(a.s_m >= 0.0 && a.s_m <= lanes_.lane(lane[k]).length_m)) {
      errors.push_back({row + ".s_m", "must be in [0, lane length " +
                                          std::to_string(lanes_.lane(lane[k]).length_m) + "]"});
    }
  }
  if (!errors.empty()) return errors;
  for (std::size_t k = 0; k < save.active_residents.size(); ++k) {
    if (rs.zone[resident[k]] != zone[k]) population_.assign_zone(resident[k], zone[k]);
    push_pedestrian(rs.id[resident[k]], lane[k], save.active_residents[k].s_m, resident[k],
                    PriorityClass::Community, PedestrianOrigin::Resident);
    population_.on_activated(resident[k]);
  }
  return errors;
}

namespace {

// A save's own fields against the scenario (before any world is built).
std::vector<RestoreError> check_save(const Scenario& scenario, const SaveState& save) {
  std::vector<RestoreError> errors;
  for (ScenarioError& e : validate_scenario(scenario))
    errors.push_back({"scenario." + e.path, e.message});
  if (!errors.empty()) return errors;
  if (save.scenario_id != scenario.id) {
    errors.push_back({"scenario_id",
                      "save is of scenario '" + save.scenario_id + "', not '" + scenario.id + "'"});
  }
  if (save.step_us != scenario.step_us) {
    errors.push_back({"step_us", "save steps " + std::to_string(save.step_us) + " us, scenario " +
                                     std::to_string(scenario.step_us) + " us"});
  }
  if (save.pedestrian_target > scenario.entity_capacity) {
    errors.push_back({"pedestrian_target", std::to_string(save.pedestrian_target) +
                                               " exceeds entity_capacity " +
                                               std::to_string(scenario.entity_capacity)});
  }
  if (save.day_us >= 86'400'000'000ull)
    errors.push_back({"day_us", "time of day must be in [0, 24) h"});
  if (save.time_scale < 1 || save.time_scale > 3600)
    errors.push_back({"time_scale", "must be in [1, 3600]"});
  if (save.garage_vehicle_ordinals.size() != scenario.garages.size()) {
    errors.push_back(
        {"garage_vehicle_ordinals", std::to_string(save.garage_vehicle_ordinals.size()) +
                                        " garages saved, scenario has " +
                                        std::to_string(scenario.garages.size())});
  }
  if (Status why = validate_lifecycle_settings(save.lifecycle); !why.ok()) {
    errors.push_back({"lifecycle", why.message()});
  }
  if (save.saveable_ids.size() != save.saveable_zones.size()) {
    errors.push_back({"saveable_zones", "one zone per saveable identity is required"});
  }
  if (!save.saveable_deceased.empty() &&
      save.saveable_deceased.size() != save.saveable_ids.size()) {
    errors.push_back({"saveable_deceased", "one flag per saveable identity, or none"});
  }
  for (std::size_t k = 0; k < save.saveable_deceased.size(); ++k) {
    if (save.saveable_deceased[k] > 1)
      errors.push_back({"saveable[" + std::to_string(k) + "].deceased", "must be 0 or 1"});
  }
  return errors;
}

}  // namespace

World::RestoreResult World::load_save(const Scenario& scenario, const SaveState& save,
                                      LogSink* log) {
  RestoreResult result;
  result.errors = check_save(scenario, save);
  if (!result.errors.empty()) return result;
  std::unique_ptr<World> w(new World(scenario, save.seed, log));
  // Saveable residents: identities are recreated in the same order, so each
  // saved id must be the fresh world's id of a saveable resident; its zone
  // ownership is restored. A save without any (written before saves carried
  // them, schema 1) means fresh identities in their home zones.
  if (!save.saveable_ids.empty()) {
    const ResidentStore& rs = w->population_.residents();
    std::size_t k = 0;
    for (std::uint32_t i = 0; i < rs.size() && result.errors.size() < kMaxReportedErrors; ++i) {
      if (!scenario.communities[rs.community[i]].saveable) continue;
      const std::string row = "saveable[" + std::to_string(k) + "]";
      if (k >= save.saveable_ids.size()) {
        result.errors.push_back({row, "the scenario has more saveable residents than the save"});
        break;
      }
      if (!(save.saveable_ids[k] == rs.id[i])) {
        result.errors.push_back({row + ".id", "saved " + id_text(save.saveable_ids[k]) +
                                                  " but the scenario's resident is " +
                                                  id_text(rs.id[i])});
      }
      std::uint32_t zone = UINT32_MAX;
      for (std::uint32_t z = 0; z < scenario.zones.size(); ++z) {
        if (scenario.zones[z].id == save.saveable_zones[k]) zone = z;
      }
      if (zone == UINT32_MAX) {
        result.errors.push_back({row + ".zone", "unknown zone '" + save.saveable_zones[k] + "'"});
      } else {
        w->population_.assign_zone(i, zone);
      }
      if (k < save.saveable_deceased.size() && save.saveable_deceased[k] != 0)
        w->population_.load_deceased(i);
      ++k;
    }
    if (result.errors.empty() && k != save.saveable_ids.size()) {
      result.errors.push_back({"saveable", std::to_string(save.saveable_ids.size()) +
                                               " saved identities, the scenario has " +
                                               std::to_string(k) + " saveable residents"});
    }
    if (!result.errors.empty()) return result;
  }
  w->population_.set_settings(save.lifecycle, save.step_index * scenario.step_us);
  w->step_index_ = save.step_index;
  w->population_.set_day_us(save.day_us);
  w->population_.set_time_scale(save.time_scale);
  for (std::uint32_t g = 0; g < save.garage_vehicle_ordinals.size(); ++g) {
    w->vehicles_.set_next_vehicle_ordinal(g, save.garage_vehicle_ordinals[g]);
  }
  w->rng_.reseed(mix64(save.seed) ^ mix64(save.step_index + 0x5A7E));
  w->pedestrian_target_ = save.pedestrian_target;
  if (save.has_observers) {
    CommandResult ignored;
    if (save.observers.size() > 64 ||
        !w->set_observer_points(save.observers, w->observers_, w->observer_views_, ignored)) {
      result.errors.push_back(
          {"observers", "at most 64 observers, with finite coordinates, height and heading"});
      return result;
    }
  }
  result.errors = w->place_saved_active_set(save);
  if (!result.errors.empty()) return result;
  w->population_.refresh_zone_counts();
  w->digest_ = w->compute_digest();
  result.world = std::move(w);
  return result;
}

}  // namespace bustle::core
