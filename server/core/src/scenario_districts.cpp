// The district map's rules (validate_districts, scenario.hpp): a city split
// across servers must give every lane, zone, work point, garage and signal
// exactly one owner, keep each thing in the district of what it stands on,
// and name as border lanes exactly the lanes that lead into another district.
// Errors name the JSON path and the district, in a fixed order (std::map and
// vectors: no hashing decides it).
#include <array>
#include <map>
#include <string>
#include <vector>

#include "bustle/core/scenario.hpp"

namespace bustle::core {
namespace {

constexpr int kNoDistrict = -1;

// One kind of owned thing: its ids (first use of each; duplicates are
// validate_scenario's to report) and, per thing, the district that claims it.
struct Owned {
  const char* field;  // in a district and at the top level: "lanes", "zones", ...
  const char* noun;   // in messages
  std::vector<std::string> DistrictSpec::*listed;
  std::map<std::string, std::size_t> index;
  std::vector<int> owner;

  template <class Specs>
  Owned(const char* f, const char* n, std::vector<std::string> DistrictSpec::*l, const Specs& specs)
      : field(f), noun(n), listed(l) {
    for (std::size_t i = 0; i < specs.size(); ++i) index.emplace(specs[i].id, i);
    owner.assign(specs.size(), kNoDistrict);
  }
  int owner_of(const std::string& id) const {
    const auto it = index.find(id);
    return it == index.end() ? kNoDistrict : owner[it->second];
  }
};

std::string district_path(std::size_t d) {
  return "districts[" + std::to_string(d) + "]";
}

class DistrictRules {
 public:
  explicit DistrictRules(const Scenario& s)
      : s_(s),
        lanes_("lanes", "lane", &DistrictSpec::lanes, s.lanes),
        zones_("zones", "zone", &DistrictSpec::zones, s.zones),
        work_points_("work_points", "work point", &DistrictSpec::work_points, s.work_points),
        garages_("garages", "garage", &DistrictSpec::garages, s.garages),
        signals_("signals", "signal", &DistrictSpec::signals, s.signals),
        kinds_{&lanes_, &zones_, &work_points_, &garages_, &signals_} {}

  DistrictRules(const DistrictRules&) = delete;  // kinds_ points into this object
  DistrictRules& operator=(const DistrictRules&) = delete;

  std::vector<ScenarioError> run() {
    if (s_.districts.size() > kDistrictsMax) {
      fail("districts", "at most " + std::to_string(kDistrictsMax) + " districts, got " +
                            std::to_string(s_.districts.size()));
      return std::move(errors_);
    }
    for (std::size_t d = 0; d < s_.districts.size(); ++d) claim(d);
    for (const Owned* kind : kinds_) unowned(*kind);
    same_district();
    for (std::size_t d = 0; d < s_.districts.size(); ++d) border_lanes(d);
    return std::move(errors_);
  }

 private:
  void fail(std::string path, std::string message) {
    errors_.push_back({std::move(path), std::move(message)});
  }
  std::string name(int d) const {
    return "'" + s_.districts[static_cast<std::size_t>(d)].id + "' (" +
           district_path(static_cast<std::size_t>(d)) + ")";
  }

  // District d's id, and everything it lists: known, and not claimed before.
  void claim(std::size_t d) {
    const DistrictSpec& ds = s_.districts[d];
    const std::string p = district_path(d);
    if (ds.id.empty()) {
      fail(p + ".id", "must be a non-empty string");
    } else if (auto [it, inserted] = ids_.emplace(ds.id, d); !inserted) {
      fail(p + ".id", "duplicate district id '" + ds.id + "' (first used by " +
                          district_path(it->second) + ")");
    }
    for (Owned* kind : kinds_) {
      const std::vector<std::string>& ids = ds.*(kind->listed);
      for (std::size_t k = 0; k < ids.size(); ++k) {
        const std::string path = p + "." + kind->field + "[" + std::to_string(k) + "]";
        const auto it = kind->index.find(ids[k]);
        if (it == kind->index.end()) {
          fail(path, "unknown " + std::string(kind->noun) + " id '" + ids[k] + "'");
        } else if (kind->owner[it->second] != kNoDistrict) {
          fail(path, std::string(kind->noun) + " '" + ids[k] + "' is already in district " +
                         name(kind->owner[it->second]));
        } else {
          kind->owner[it->second] = static_cast<int>(d);
        }
      }
    }
  }

  void unowned(const Owned& kind) {
    for (const auto& [id, i] : kind.index) {
      if (kind.owner[i] == kNoDistrict) {
        fail(std::string(kind.field) + "[" + std::to_string(i) + "]",
             std::string(kind.noun) + " '" + id + "' belongs to no district");
      }
    }
  }

  // `what` (owned by `owner`) stands on `on` of `kind`: both in one district.
  void check_same(int owner, const Owned& kind, const std::string& on, const std::string& path,
                  const char* what) {
    const int other = kind.owner_of(on);
    if (owner == kNoDistrict || other == kNoDistrict || owner == other) return;
    fail(path, std::string(kind.noun) + " '" + on + "' is in district " + name(other) +
                   ", not in the " + what + "'s district " + name(owner));
  }

  void same_district() {
    for (std::size_t z = 0; z < s_.zones.size(); ++z) {
      const int owner = zones_.owner[z];
      for (std::size_t k = 0; k < s_.zones[z].lanes.size(); ++k) {
        check_same(owner, lanes_, s_.zones[z].lanes[k],
                   "zones[" + std::to_string(z) + "].lanes[" + std::to_string(k) + "]", "zone");
      }
    }
    for (std::size_t w = 0; w < s_.work_points.size(); ++w) {
      const WorkPointSpec& wp = s_.work_points[w];
      const std::string p = "work_points[" + std::to_string(w) + "]";
      check_same(work_points_.owner[w], zones_, wp.zone, p + ".zone", "work point");
      if (wp.has_anchor)
        check_same(work_points_.owner[w], lanes_, wp.anchor.lane, p + ".anchor.lane", "work point");
    }
    for (std::size_t g = 0; g < s_.garages.size(); ++g) {
      check_same(garages_.owner[g], lanes_, s_.garages[g].lane,
                 "garages[" + std::to_string(g) + "].lane", "garage");
    }
    for (std::size_t k = 0; k < s_.signals.size(); ++k) {
      check_same(signals_.owner[k], lanes_, s_.signals[k].lane,
                 "signals[" + std::to_string(k) + "].lane", "signal");
    }
  }

  // The first successor of lane i owned by another district, or nullptr.
  const std::string* crossing(std::size_t i) const {
    for (const std::string& next : s_.lanes[i].successors) {
      const int other = lanes_.owner_of(next);
      if (other != kNoDistrict && other != lanes_.owner[i]) return &next;
    }
    return nullptr;
  }

  void border_lanes(std::size_t d) {
    const DistrictSpec& ds = s_.districts[d];
    const std::string p = district_path(d) + ".border_lanes";
    std::map<std::string, std::size_t> listed_at;
    for (std::size_t k = 0; k < ds.border_lanes.size(); ++k) {
      const std::string& id = ds.border_lanes[k];
      const std::string path = p + "[" + std::to_string(k) + "]";
      const auto it = lanes_.index.find(id);
      if (it == lanes_.index.end()) {
        fail(path, "unknown lane id '" + id + "'");
      } else if (!listed_at.emplace(id, k).second) {
        fail(path, "lane '" + id + "' is listed twice");
      } else if (lanes_.owner[it->second] != static_cast<int>(d)) {
        fail(path, "lane '" + id + "' is not one of this district's lanes");
      } else if (crossing(it->second) == nullptr) {
        fail(path, "lane '" + id + "' leads into no other district");
      }
    }
    for (std::size_t i = 0; i < s_.lanes.size(); ++i) {
      if (lanes_.owner[i] != static_cast<int>(d) || listed_at.count(s_.lanes[i].id) != 0) continue;
      if (const std::string* next = crossing(i)) {
        fail(p, "must list lane '" + s_.lanes[i].id + "': it leads to lane '" + *next +
                    "' of district " + name(lanes_.owner_of(*next)));
      }
    }
  }

  const Scenario& s_;
  Owned lanes_, zones_, work_points_, garages_, signals_;
  std::array<Owned*, 5> kinds_;
  std::map<std::string, std::size_t> ids_;
  std::vector<ScenarioError> errors_;
};

}  // namespace

namespace {

// What a district world (Scenario::own_district) can run so far: background
// pedestrians and garage vehicles cross borders; residents (zones, work
// points) do not yet, so a city with them is refused rather than run with
// entities that would be doubled or stranded at a border. A looping route
// must end in its garage's district: the turnaround onto the entrance (the
// loop's seam) is decided where the garage's queue and mouth are.
void district_world_rules(const Scenario& s, std::vector<ScenarioError>& errors) {
  if (s.own_district < 0) return;
  if (static_cast<std::size_t>(s.own_district) >= s.districts.size()) {
    errors.push_back({"own_district", "district " + std::to_string(s.own_district) +
                                          " is not in the district map (" +
                                          std::to_string(s.districts.size()) + " districts)"});
    return;
  }
  const auto unsupported = [&](const char* field, std::size_t count, const char* what) {
    if (count == 0) return;
    errors.push_back({field, std::string("a district server does not run ") + what +
                                 " yet (only background pedestrians cross borders); remove the " +
                                 std::to_string(count) + " entries or run the whole city"});
  };
  unsupported("zones", s.zones.size(), "zones and their residents");
  unsupported("work_points", s.work_points.size(), "work points");
  std::map<std::string, std::size_t> lane_owner;
  for (std::size_t k = 0; k < s.districts.size(); ++k) {
    for (const std::string& l : s.districts[k].lanes) lane_owner[l] = k;
  }
  for (std::size_t g = 0; g < s.garages.size(); ++g) {
    const GarageSpec& spec = s.garages[g];
    if (spec.route_end != RouteEnd::Loop || spec.route.empty()) continue;
    const auto entrance = lane_owner.find(spec.lane), last = lane_owner.find(spec.route.back());
    if (entrance == lane_owner.end() || last == lane_owner.end() ||
        entrance->second == last->second)
      continue;
    errors.push_back({"garages[" + std::to_string(g) + "].route",
                      "the loop ends on lane '" + spec.route.back() + "' of district '" +
                          s.districts[last->second].id + "', its garage '" + spec.id +
                          "' is in district '" + s.districts[entrance->second].id +
                          "': a district server needs a loop to end in its garage's district"});
  }
}

}  // namespace

std::vector<ScenarioError> validate_districts(const Scenario& s) {
  if (s.districts.empty()) {
    if (s.own_district >= 0)
      return {{"own_district", "the scenario has no district map (\"districts\")"}};
    return {};
  }
  std::vector<ScenarioError> errors = DistrictRules(s).run();
  if (errors.empty()) district_world_rules(s, errors);
  return errors;
}

}  // namespace bustle::core
