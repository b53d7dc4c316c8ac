// Scenario JSON to core::Scenario (scenario_loader.hpp): a strict reader that
// reports every structural problem with its JSON path (types, missing and
// unknown fields, as schema/scenario.schema.json documents them), then
// core::validate_scenario for the semantic rules.
#include "bustle/scenario/scenario_loader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

namespace bustle::scenario {
namespace {

using nlohmann::json;

const char* type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_float:
      return "a non-integer number";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    default:
      return "an unsupported value";
  }
}

// Walks one JSON document, collecting errors instead of throwing, so one run
// reports every structural problem in the file (types, missing and unknown
// fields). Semantic rules (references, ranges) run only on a structurally
// sound file, and report all of theirs.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  void error(const std::string& path, std::string message) {
    errors_.push_back({source_, path, std::move(message)});
  }
  std::vector<LoadError> take_errors() { return std::move(errors_); }

  static std::string join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }
  static std::string index(const std::string& parent, std::size_t i) {
    return parent + "[" + std::to_string(i) + "]";
  }

  bool expect_object(const json& j, const std::string& path,
                     std::initializer_list<const char*> allowed) {
    if (!j.is_object()) {
      error(path.empty() ? "(root)" : path, std::string("must be an object, got ") + type_name(j));
      return false;
    }
    for (const auto& [key, value] : j.items()) {
      bool known = false;
      for (const char* a : allowed) known |= key == a;
      if (!known) {
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        error(join(path, key), "unknown field (allowed here: " + list + ")");
      }
    }
    return true;
  }

  template <class T>
  void read_uint(const json& obj, const std::string& parent, const char* key, T& out,
                 bool required = false) {
    const std::string path = join(parent, key);
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) error(path, "is required");
      return;
    }
    if (!it->is_number_integer()) {
      error(path, std::string("must be a non-negative integer, got ") + type_name(*it));
      return;
    }
    if (it->is_number_unsigned()) {
      const auto v = it->get<std::uint64_t>();
      if (v > std::numeric_limits<T>::max()) {
        error(path, "is too large (max " + std::to_string(std::numeric_limits<T>::max()) + ")");
        return;
      }
      out = static_cast<T>(v);
      return;
    }
    error(path, "must be a non-negative integer, got " + std::to_string(it->get<std::int64_t>()));
  }

  void read_int32(const json& obj, const std::string& parent, const char* key, std::int32_t& out) {
    const std::string path = join(parent, key);
    auto it = obj.find(key);
    if (it == obj.end()) return;
    if (!it->is_number_integer()) {
      error(path, std::string("must be an integer, got ") + type_name(*it));
      return;
    }
    const auto v = it->get<std::int64_t>();
    if (v < INT32_MIN || v > INT32_MAX) {
      error(path, "is out of the 32-bit integer range");
      return;
    }
    out = static_cast<std::int32_t>(v);
  }

  void read_string_array(const json& obj, const std::string& parent, const char* key,
                         std::vector<std::string>& out, bool required = false) {
    const std::string path = join(parent, key);
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) error(path, "is required");
      return;
    }
    if (!it->is_array()) {
      error(path, std::string("must be an array of strings, got ") + type_name(*it));
      return;
    }
    for (std::size_t k = 0; k < it->size(); ++k) {
      if (!(*it)[k].is_string()) {
        error(index(path, k), "must be a string");
        continue;
      }
      out.push_back((*it)[k].get<std::string>());
    }
  }

  // Calls fn(object, path) when the optional object `key` is present and is an
  // object (its unknown fields already reported).
  template <class Fn>
  void optional_object(const json& obj, const std::string& parent, const char* key,
                       std::initializer_list<const char*> allowed, Fn&& fn) {
    const std::string path = join(parent, key);
    auto it = obj.find(key);
    if (it != obj.end() && expect_object(*it, path, allowed)) fn(*it, path);
  }

  // An [x, y] pair of numbers (metres); false (and an error) otherwise.
  bool point(const json& p, const std::string& path, core::Vec2& out) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) {
      error(path, "must be an [x, y] pair of numbers (metres)");
      return false;
    }
    out = {p[0].get<double>(), p[1].get<double>()};
    return true;
  }

  // Calls fn(element, path) for each element of an array of objects; an
  // absent array is an error only when `required` (as in the JSON schema).
  template <class Fn>
  void each_object(const json& obj, const std::string& parent, const char* key, Fn&& fn,
                   bool required = false) {
    const std::string path = join(parent, key);
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) error(path, "is required");
      return;
    }
    if (!it->is_array()) {
      error(path, std::string("must be an array, got ") + type_name(*it));
      return;
    }
    for (std::size_t k = 0; k < it->size(); ++k) fn((*it)[k], index(path, k));
  }

  void read_number(const json& obj, const std::string& parent, const char* key, double& out,
                   bool required = false) {
    const std::string path = join(parent, key);
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) error(path, "is required");
      return;
    }
    if (!it->is_number()) {
      error(path, std::string("must be a number, got ") + type_name(*it));
      return;
    }
    out = it->get<double>();
  }

  void read_string(const json& obj, const std::string& parent, const char* key, std::string& out,
                   bool required = false) {
    const std::string path = join(parent, key);
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) error(path, "is required");
      return;
    }
    if (!it->is_string()) {
      error(path, std::string("must be a string, got ") + type_name(*it));
      return;
    }
    out = it->get<std::string>();
  }

 private:
  std::string source_;
  std::vector<LoadError> errors_;
};

void read_lane(Reader& r, const json& j, const std::string& path, core::LaneSpec& lane) {
  if (!r.expect_object(j, path,
                       {"id", "kind", "points", "speed_mps_limit", "successors", "elevation_m"}))
    return;
  r.read_string(j, path, "id", lane.id, true);

  std::string kind;
  r.read_string(j, path, "kind", kind, true);
  if (kind == "sidewalk") {
    lane.kind = core::LaneKind::Sidewalk;
  } else if (kind == "crossing") {
    lane.kind = core::LaneKind::Crossing;
  } else if (kind == "road") {
    lane.kind = core::LaneKind::Road;
  } else if (j.contains("kind") && j["kind"].is_string()) {
    r.error(Reader::join(path, "kind"),
            "unknown lane kind '" + kind + "' (expected sidewalk, crossing or road)");
  }

  r.read_number(j, path, "speed_mps_limit", lane.speed_mps_limit, true);
  r.read_number(j, path, "elevation_m", lane.elevation_m);

  const std::string pts_path = Reader::join(path, "points");
  if (auto it = j.find("points"); it == j.end()) {
    r.error(pts_path, "is required");
  } else if (!it->is_array()) {
    r.error(pts_path, std::string("must be an array of [x, y] pairs, got ") + type_name(*it));
  } else {
    for (std::size_t k = 0; k < it->size(); ++k) {
      core::Vec2 p;
      if (r.point((*it)[k], Reader::index(pts_path, k), p)) lane.points.push_back(p);
    }
  }

  const std::string succ_path = Reader::join(path, "successors");
  if (auto it = j.find("successors"); it != j.end()) {
    if (!it->is_array()) {
      r.error(succ_path, std::string("must be an array of lane ids, got ") + type_name(*it));
    } else {
      for (std::size_t k = 0; k < it->size(); ++k) {
        if (!(*it)[k].is_string()) {
          r.error(Reader::index(succ_path, k), "must be a lane id string");
          continue;
        }
        lane.successors.push_back((*it)[k].get<std::string>());
      }
    }
  }
}

// tiers.importance: class and type weights, height and view-direction terms,
// areas of interest.
void read_importance(Reader& r, const json& j, const std::string& path, core::ImportanceSpec& imp) {
  static constexpr const char* kClassNames[core::kPriorityClassCount] = {"story", "quest",
                                                                         "community", "background"};
  r.optional_object(j, path, "class_weight", {"story", "quest", "community", "background"},
                    [&](const json& cw, const std::string& cp) {
                      for (std::size_t k = 0; k < core::kPriorityClassCount; ++k) {
                        r.read_number(cw, cp, kClassNames[k], imp.class_weight[k]);
                      }
                    });
  r.read_number(j, path, "pedestrian_weight", imp.pedestrian_weight);
  r.read_number(j, path, "vehicle_weight", imp.vehicle_weight);
  r.read_number(j, path, "height_weight", imp.height_weight);
  r.read_number(j, path, "behind_factor", imp.behind_factor);
  r.each_object(j, path, "areas", [&](const json& a, const std::string& ap) {
    core::AreaOfInterest area;
    if (r.expect_object(a, ap, {"id", "center", "radius_m", "weight"})) {
      r.read_string(a, ap, "id", area.id, true);
      if (auto c = a.find("center"); c == a.end()) {
        r.error(Reader::join(ap, "center"), "is required");
      } else {
        r.point(*c, Reader::join(ap, "center"), area.center);
      }
      r.read_number(a, ap, "radius_m", area.radius_m);
      r.read_number(a, ap, "weight", area.weight);
    }
    imp.areas.push_back(std::move(area));
  });
}

// One entry of "garages" at path `p`.
core::GarageSpec read_garage(Reader& r, const json& j, const std::string& p) {
  core::GarageSpec g;
  if (r.expect_object(j, p,
                      {"id", "lane", "route", "route_end", "prototypes", "capacity", "queue_depth",
                       "dispatch_per_step_max", "cooldown_frames", "entrance_clear_m",
                       "mouth_capacity", "vehicle_id_format"})) {
    r.read_string(j, p, "id", g.id, true);
    r.read_string(j, p, "lane", g.lane, true);
    r.read_string_array(j, p, "route", g.route, true);
    std::string end = "loop";
    r.read_string(j, p, "route_end", end);
    if (end == "loop") {
      g.route_end = core::RouteEnd::Loop;
    } else if (end == "garage") {
      g.route_end = core::RouteEnd::Garage;
    } else {
      r.error(Reader::join(p, "route_end"), "must be \"loop\" or \"garage\", got '" + end + "'");
    }
    r.read_string_array(j, p, "prototypes", g.prototypes, true);
    r.read_uint(j, p, "capacity", g.capacity);
    r.read_uint(j, p, "queue_depth", g.queue_depth);
    r.read_uint(j, p, "dispatch_per_step_max", g.dispatch_per_step_max);
    r.read_uint(j, p, "cooldown_frames", g.cooldown_frames);
    r.read_number(j, p, "entrance_clear_m", g.entrance_clear_m);
    r.read_uint(j, p, "mouth_capacity", g.mouth_capacity);
    r.read_string(j, p, "vehicle_id_format", g.vehicle_id_format);
  }
  return g;
}

void read_vehicles(Reader& r, const json& root, core::Scenario& s) {
  r.each_object(root, "", "garages", [&](const json& j, const std::string& p) {
    s.garages.push_back(read_garage(r, j, p));
  });
  r.each_object(root, "", "signals", [&](const json& j, const std::string& p) {
    core::SignalSpec sg;
    if (r.expect_object(j, p,
                        {"id", "lane", "stop_alpha", "yield_alpha", "open_ms", "yield_ms",
                         "closed_ms", "offset_ms"})) {
      r.read_string(j, p, "id", sg.id, true);
      r.read_string(j, p, "lane", sg.lane, true);
      r.read_number(j, p, "stop_alpha", sg.stop_alpha);
      r.read_number(j, p, "yield_alpha", sg.yield_alpha);
      r.read_uint(j, p, "open_ms", sg.open_ms);
      r.read_uint(j, p, "yield_ms", sg.yield_ms);
      r.read_uint(j, p, "closed_ms", sg.closed_ms);
      r.read_uint(j, p, "offset_ms", sg.offset_ms);
    }
    s.signals.push_back(std::move(sg));
  });
  if (auto it = root.find("vehicle_plan"); it != root.end()) {
    if (r.expect_object(*it, "vehicle_plan", {"batch_size", "batch_interval_steps", "requests"})) {
      r.read_uint(*it, "vehicle_plan", "batch_size", s.vehicle_plan.batch_size);
      r.read_uint(*it, "vehicle_plan", "batch_interval_steps", s.vehicle_plan.batch_interval_steps);
      r.each_object(*it, "vehicle_plan", "requests", [&](const json& j, const std::string& p) {
        core::PlannedRequest pr;
        if (r.expect_object(j, p, {"request_id", "garage", "prototype", "lane", "priority"})) {
          r.read_string(j, p, "request_id", pr.request_id, true);
          r.read_string(j, p, "garage", pr.garage, true);
          r.read_string(j, p, "prototype", pr.prototype, true);
          r.read_string(j, p, "lane", pr.lane, true);
          r.read_int32(j, p, "priority", pr.priority);
        }
        s.vehicle_plan.requests.push_back(std::move(pr));
      });
    }
  }
  if (auto it = root.find("vehicle_rules"); it != root.end()) {
    if (r.expect_object(
            *it, "vehicle_rules",
            {"headway_block_m", "headway_caution_m", "yield_multiplier", "pedestrian_hazard_m"})) {
      r.read_number(*it, "vehicle_rules", "headway_block_m", s.vehicle_rules.headway_block_m);
      r.read_number(*it, "vehicle_rules", "headway_caution_m", s.vehicle_rules.headway_caution_m);
      r.read_number(*it, "vehicle_rules", "yield_multiplier", s.vehicle_rules.yield_multiplier);
      r.read_number(*it, "vehicle_rules", "pedestrian_hazard_m",
                    s.vehicle_rules.pedestrian_hazard_m);
    }
  }
  if (auto it = root.find("tiers"); it != root.end()) {
    if (r.expect_object(
            *it, "tiers",
            {"full_enter_m", "full_exit_m", "simulated_enter_m", "simulated_exit_m", "full_cap",
             "simulated_cap", "transitions_per_step", "pedestrian_resolve_every_steps",
             "vehicle_resolve_every_steps", "hard_full_cap", "importance"})) {
      r.read_number(*it, "tiers", "full_enter_m", s.tiers.full_enter_m);
      r.read_number(*it, "tiers", "full_exit_m", s.tiers.full_exit_m);
      r.read_number(*it, "tiers", "simulated_enter_m", s.tiers.simulated_enter_m);
      r.read_number(*it, "tiers", "simulated_exit_m", s.tiers.simulated_exit_m);
      r.read_uint(*it, "tiers", "full_cap", s.tiers.full_cap);
      r.read_uint(*it, "tiers", "simulated_cap", s.tiers.simulated_cap);
      r.read_uint(*it, "tiers", "transitions_per_step", s.tiers.transitions_per_step);
      r.read_uint(*it, "tiers", "pedestrian_resolve_every_steps",
                  s.tiers.pedestrian_resolve_every_steps);
      r.read_uint(*it, "tiers", "vehicle_resolve_every_steps", s.tiers.vehicle_resolve_every_steps);
      r.read_uint(*it, "tiers", "hard_full_cap", s.tiers.hard_full_cap);
      r.optional_object(*it, "tiers", "importance",
                        {"class_weight", "pedestrian_weight", "vehicle_weight", "height_weight",
                         "behind_factor", "areas"},
                        [&](const json& j, const std::string& p) {
                          read_importance(r, j, p, s.tiers.importance);
                        });
    }
  }
  if (auto it = root.find("observers"); it != root.end()) {
    if (!it->is_array()) {
      r.error("observers", std::string("must be an array of [x, y] pairs, got ") + type_name(*it));
    } else {
      for (std::size_t k = 0; k < it->size(); ++k) {
        core::Vec2 p;
        if (r.point((*it)[k], Reader::index("observers", k), p)) s.observers.push_back(p);
      }
    }
  }
}

// "observer_follow": "none" (default) or "first_vehicle".
void read_observer_follow(Reader& r, const json& root, core::Scenario& s) {
  std::string follow;
  r.read_string(root, "", "observer_follow", follow);
  if (follow == "first_vehicle") {
    s.observer_follow = core::ObserverFollow::FirstVehicle;
  } else if (!follow.empty() && follow != "none") {
    r.error("observer_follow", "must be \"none\" or \"first_vehicle\", got '" + follow + "'");
  }
}

// The prevention block (response units by level, corpse cleanup).
void read_prevention(Reader& r, const json& root, core::Scenario& s) {
  core::PreventionSpec& pv = s.prevention;
  r.optional_object(root, "", "prevention",
                    {"units_per_level", "spawn_per_step", "max_units", "ring_min_m", "ring_max_m",
                     "cleanup_every_steps", "corpse_keep_m", "corpse_force_m",
                     "corpse_pressure_count", "pressure_entities"},
                    [&](const json& j, const std::string& p) {
                      if (auto it = j.find("units_per_level"); it != j.end()) {
                        if (!it->is_array()) {
                          r.error(p + ".units_per_level",
                                  std::string("must be an array of non-negative integers, got ") +
                                      type_name(*it));
                        } else {
                          for (std::size_t k = 0; k < it->size(); ++k) {
                            const json& v = (*it)[k];
                            if (!v.is_number_unsigned() || v.get<std::uint64_t>() > UINT32_MAX) {
                              r.error(p + ".units_per_level[" + std::to_string(k) + "]",
                                      "must be a non-negative 32-bit integer");
                              continue;
                            }
                            pv.units_per_level.push_back(v.get<std::uint32_t>());
                          }
                        }
                      }
                      r.read_uint(j, p, "spawn_per_step", pv.spawn_per_step);
                      r.read_uint(j, p, "max_units", pv.max_units);
                      r.read_number(j, p, "ring_min_m", pv.ring_min_m);
                      r.read_number(j, p, "ring_max_m", pv.ring_max_m);
                      r.read_uint(j, p, "cleanup_every_steps", pv.cleanup_every_steps);
                      r.read_number(j, p, "corpse_keep_m", pv.corpse_keep_m);
                      r.read_number(j, p, "corpse_force_m", pv.corpse_force_m);
                      r.read_uint(j, p, "corpse_pressure_count", pv.corpse_pressure_count);
                      r.read_uint(j, p, "pressure_entities", pv.pressure_entities);
                    });
}

// One work_points[] entry, with its optional anchor.
core::WorkPointSpec read_work_point(Reader& r, const json& j, const std::string& p) {
  core::WorkPointSpec w;
  if (r.expect_object(j, p, {"id", "zone", "profession", "slots", "anchor"})) {
    r.read_string(j, p, "id", w.id, true);
    r.read_string(j, p, "zone", w.zone, true);
    r.read_string(j, p, "profession", w.profession, true);
    r.read_uint(j, p, "slots", w.slots);
    r.optional_object(j, p, "anchor", {"lane", "s_m", "slot_spacing_m"},
                      [&](const json& a, const std::string& ap) {
                        w.has_anchor = true;
                        r.read_string(a, ap, "lane", w.anchor.lane, true);
                        r.read_number(a, ap, "s_m", w.anchor.s_m, true);
                        r.read_number(a, ap, "slot_spacing_m", w.anchor.slot_spacing_m);
                      });
  }
  return w;
}

// One entry of a community's schedule (communities[i].schedule[k]).
core::ScheduleEntry read_schedule_entry(Reader& r, const json& e, const std::string& ep) {
  core::ScheduleEntry entry;
  if (r.expect_object(
          e, ep,
          {"start_hour", "end_hour", "phase", "activity", "zone", "work_point", "density"})) {
    r.read_number(e, ep, "start_hour", entry.start_hour, true);
    r.read_number(e, ep, "end_hour", entry.end_hour, true);
    std::string phase;
    r.read_string(e, ep, "phase", phase, true);
    static const std::pair<const char*, core::SchedulePhase> kPhases[] = {
        {"Home", core::SchedulePhase::Home},
        {"CommuteToWork", core::SchedulePhase::CommuteToWork},
        {"Work", core::SchedulePhase::Work},
        {"Leisure", core::SchedulePhase::Leisure},
        {"CommuteHome", core::SchedulePhase::CommuteHome}};
    bool known = false;
    for (const auto& [name, value] : kPhases) {
      if (phase == name) {
        entry.phase = value;
        known = true;
      }
    }
    if (!known && e.contains("phase") && e["phase"].is_string()) {
      r.error(Reader::join(ep, "phase"),
              "unknown phase '" + phase +
                  "' (expected Home, CommuteToWork, Work, Leisure or CommuteHome)");
    }
    r.read_string(e, ep, "activity", entry.activity);
    r.read_string(e, ep, "zone", entry.zone, true);
    r.read_string(e, ep, "work_point", entry.work_point);
    r.read_number(e, ep, "density", entry.density);
  }
  return entry;
}

// "districts": what each district of a city split across servers owns, by
// id (core::validate_districts checks the map).
void read_districts(Reader& r, const json& root, core::Scenario& s) {
  r.each_object(root, "", "districts", [&](const json& j, const std::string& p) {
    core::DistrictSpec d;
    if (r.expect_object(
            j, p, {"id", "lanes", "zones", "work_points", "garages", "signals", "border_lanes"})) {
      r.read_string(j, p, "id", d.id, true);
      r.read_string_array(j, p, "lanes", d.lanes);
      r.read_string_array(j, p, "zones", d.zones);
      r.read_string_array(j, p, "work_points", d.work_points);
      r.read_string_array(j, p, "garages", d.garages);
      r.read_string_array(j, p, "signals", d.signals);
      r.read_string_array(j, p, "border_lanes", d.border_lanes);
    }
    s.districts.push_back(std::move(d));
  });
  // "own_district": the district this file runs as (a district server's
  // recording holds it; `bustle-server --district` sets it otherwise).
  std::string own;
  r.read_string(root, "", "own_district", own);
  if (own.empty()) return;
  for (std::size_t d = 0; d < s.districts.size(); ++d) {
    if (s.districts[d].id == own) s.own_district = static_cast<std::int32_t>(d);
  }
  if (s.own_district < 0) r.error("own_district", "unknown district '" + own + "'");
}

void read_population(Reader& r, const json& root, core::Scenario& s) {
  r.each_object(root, "", "zones", [&](const json& j, const std::string& p) {
    core::ZoneSpec z;
    if (r.expect_object(j, p, {"id", "lanes", "capacity"})) {
      r.read_string(j, p, "id", z.id, true);
      r.read_string_array(j, p, "lanes", z.lanes, true);
      r.read_uint(j, p, "capacity", z.capacity);
    }
    s.zones.push_back(std::move(z));
  });
  r.each_object(root, "", "work_points", [&](const json& j, const std::string& p) {
    s.work_points.push_back(read_work_point(r, j, p));
  });
  r.each_object(root, "", "communities", [&](const json& j, const std::string& p) {
    core::CommunitySpec c;
    if (r.expect_object(
            j, p, {"id", "base_population", "professions", "saveable", "home_zone", "schedule"})) {
      r.read_string(j, p, "id", c.id, true);
      r.read_uint(j, p, "base_population", c.base_population, true);
      r.read_string_array(j, p, "professions", c.professions, true);
      if (auto it = j.find("saveable"); it != j.end()) {
        if (it->is_boolean()) {
          c.saveable = it->get<bool>();
        } else {
          r.error(Reader::join(p, "saveable"),
                  std::string("must be a boolean, got ") + type_name(*it));
        }
      }
      r.read_string(j, p, "home_zone", c.home_zone, true);
      r.each_object(
          j, p, "schedule",
          [&](const json& e, const std::string& ep) {
            c.schedule.push_back(read_schedule_entry(r, e, ep));
          },
          /*required=*/true);
    }
    s.communities.push_back(std::move(c));
  });
  if (auto it = root.find("population"); it != root.end()) {
    if (r.expect_object(*it, "population",
                        {"start_hour", "time_scale", "lifecycle_interval_ms", "growth_quota",
                         "recycle_quota", "migration_budget"})) {
      r.read_number(*it, "population", "start_hour", s.population.start_hour);
      r.read_uint(*it, "population", "time_scale", s.population.time_scale);
      r.read_uint(*it, "population", "lifecycle_interval_ms", s.population.lifecycle_interval_ms);
      r.read_uint(*it, "population", "growth_quota", s.population.growth_quota);
      r.read_uint(*it, "population", "recycle_quota", s.population.recycle_quota);
      r.read_uint(*it, "population", "migration_budget", s.population.migration_budget);
    }
  }
  r.optional_object(root, "", "spawn", {"per_step_cap", "queue_depth", "timeout_ms"},
                    [&](const json& j, const std::string& p) {
                      r.read_uint(j, p, "per_step_cap", s.spawn.per_step_cap);
                      r.read_uint(j, p, "queue_depth", s.spawn.queue_depth);
                      r.read_uint(j, p, "timeout_ms", s.spawn.timeout_ms);
                    });
  r.optional_object(root, "", "despawn", {"fade_ms", "out_of_range_m", "stuck_ms"},
                    [&](const json& j, const std::string& p) {
                      r.read_uint(j, p, "fade_ms", s.despawn.fade_ms);
                      r.read_number(j, p, "out_of_range_m", s.despawn.out_of_range_m);
                      r.read_uint(j, p, "stuck_ms", s.despawn.stuck_ms);
                    });
  read_prevention(r, root, s);
}

// Finds where and why a document that json::parse refused fails, and the JSON
// path of the value being read there. nlohmann's exceptions carry no position
// for a number that overflows a double ("1e999", out_of_range.406), but the
// SAX interface reports every error with its byte offset, so this handler
// only tracks the path and records the first error.
class JsonFaultLocator final : public nlohmann::json_sax<json> {
 public:
  struct Fault {
    std::size_t byte = 0;  // 0-based offset where the offending token starts
    std::string path;      // JSON path of the value being read ("" at the root)
    std::string message;   // nlohmann's description, without its "[json.exception...]" tag
    bool number_overflow = false;
  };

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool key(string_t& k) override {
    frames_.back().key = k;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const json::exception& ex) override {
    fault_.number_overflow = ex.id == 406;
    // A syntax error's position is the byte just read (1-based); an overflowing
    // number is reported once the whole token is read.
    const std::size_t back = fault_.number_overflow ? last_token.size() : 1;
    fault_.byte = position >= back ? position - back : 0;
    fault_.path = path_of_next_value();
    fault_.message = ex.what();
    if (auto tag = fault_.message.find("] ");
        fault_.message.rfind("[json.exception.", 0) == 0 && tag != std::string::npos) {
      fault_.message = fault_.message.substr(tag + 2);
    }
    return false;
  }

  const Fault& fault() const { return fault_; }

 private:
  struct Frame {
    bool array = false;
    std::size_t next_index = 0;  // arrays: index of the next element
    std::string key;             // objects: the last key read
  };

  // Every value (scalar or container start) is the next element of its parent.
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().next_index;
    return true;
  }
  bool open(bool array) {
    value();
    frames_.push_back({array, 0, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }
  std::string path_of_next_value() const {
    std::string p;
    for (std::size_t k = 0; k < frames_.size(); ++k) {
      const Frame& f = frames_[k];
      const bool innermost = k + 1 == frames_.size();
      if (f.array) {
        // Enclosing arrays already counted the element being read.
        const std::size_t i = innermost ? f.next_index : f.next_index - 1;
        p += "[" + std::to_string(i) + "]";
      } else if (!f.key.empty()) {
        p += (p.empty() ? "" : ".") + f.key;
      }
    }
    return p;
  }

  std::vector<Frame> frames_;
  Fault fault_;
};

// Byte offset -> 1-based line and column, for syntax errors.
std::pair<std::size_t, std::size_t> line_col(std::string_view text, std::size_t byte) {
  std::size_t line = 1;
  std::size_t col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

// "invalid JSON at line L, column C: " for the byte at `at`.
std::string invalid_json_at(std::string_view text, std::size_t at) {
  const auto [line, col] = line_col(text, at);
  return "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(col) + ": ";
}

}  // namespace

std::string LoadError::to_string() const {
  return path.empty() ? source + ": " + message : source + ": " + path + ": " + message;
}

LoadResult load_scenario_text(std::string_view text, std::string_view source) {
  LoadResult result;
  result.text = std::string(text);
  const std::string src(source);
  // Without exceptions: nlohmann throws out_of_range (no position, no field)
  // for a number such as 1e999, and that must not end the server.
  json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false,
                          /*ignore_comments=*/false);
  if (root.is_discarded()) {
    JsonFaultLocator locator;
    json::sax_parse(text.begin(), text.end(), &locator);
    const JsonFaultLocator::Fault& f = locator.fault();
    std::string what = f.message;
    if (f.number_overflow) {
      what += " (beyond the range of a 64-bit float, about 1.8e308)";
    } else if (auto pos = what.rfind(": "); pos != std::string::npos) {
      // "parse error at line 3, column 13: syntax error ..." -> the part after
      // the last ": " (line and column are recomputed above).
      what = what.substr(pos + 2);
    }
    // A syntax error is about the file's structure and keeps an empty path; an
    // overflowing number names the field it was meant for.
    result.errors.push_back(
        {src, f.number_overflow ? f.path : "", invalid_json_at(text, f.byte) + what});
    return result;
  }

  Reader r(src);
  core::Scenario s;
  if (r.expect_object(root, "",
                      {"$schema",
                       "id",
                       "name",
                       "step_us",
                       "entity_capacity",
                       "command_inbox_capacity",
                       "pedestrians",
                       "lanes",
                       "garages",
                       "signals",
                       "vehicle_plan",
                       "vehicle_rules",
                       "tiers",
                       "observers",
                       "observer_follow",
                       "zones",
                       "communities",
                       "work_points",
                       "population",
                       "spawn",
                       "despawn",
                       "prevention",
                       "districts",
                       "own_district"})) {
    r.read_string(root, "", "id", s.id, true);
    r.read_string(root, "", "name", s.name);
    r.read_uint(root, "", "step_us", s.step_us);
    r.read_uint(root, "", "entity_capacity", s.entity_capacity);
    r.read_uint(root, "", "command_inbox_capacity", s.command_inbox_capacity);
    if (auto it = root.find("pedestrians"); it != root.end()) {
      if (r.expect_object(
              *it, "pedestrians",
              {"count", "spawn_per_step_max", "fragment_length_m", "dots_every_steps"})) {
        r.read_uint(*it, "pedestrians", "count", s.pedestrians.count);
        r.read_uint(*it, "pedestrians", "spawn_per_step_max", s.pedestrians.spawn_per_step_max);
        r.read_number(*it, "pedestrians", "fragment_length_m", s.pedestrians.fragment_length_m);
        r.read_uint(*it, "pedestrians", "dots_every_steps", s.pedestrians.dots_every_steps);
      }
    }
    if (auto it = root.find("lanes"); it == root.end()) {
      r.error("lanes", "is required");
    } else if (!it->is_array()) {
      r.error("lanes", std::string("must be an array, got ") + type_name(*it));
    } else {
      for (std::size_t i = 0; i < it->size(); ++i) {
        core::LaneSpec lane;
        read_lane(r, (*it)[i], Reader::index("lanes", i), lane);
        s.lanes.push_back(std::move(lane));
      }
    }
  }
  if (root.is_object()) {
    read_vehicles(r, root, s);
    read_observer_follow(r, root, s);
    read_population(r, root, s);
    read_districts(r, root, s);
  }
  result.errors = r.take_errors();
  if (!result.errors.empty()) return result;

  // Structure is sound; now the semantic rules shared with code-built scenarios.
  for (core::ScenarioError& e : core::validate_scenario(s)) {
    result.errors.push_back({src, std::move(e.path), std::move(e.message)});
  }
  if (result.errors.empty()) result.scenario = std::move(s);
  return result;
}

LoadResult load_scenario_file(const std::string& path) {
  const auto fail = [&](std::string message) {
    LoadResult result;
    result.errors.push_back({path, "", std::move(message)});
    return result;
  };
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
  if (!file) return fail(std::string("cannot open scenario file: ") + std::strerror(errno));
  // At most one byte more than the limit, so /dev/zero, a FIFO or a growing
  // file stops here instead of filling memory.
  std::string text;
  char chunk[64 * 1024];
  while (text.size() <= kScenarioFileBytesMax) {
    const std::size_t want = std::min(sizeof chunk, kScenarioFileBytesMax + 1 - text.size());
    const std::size_t got = std::fread(chunk, 1, want, file.get());
    text.append(chunk, got);
    if (got < want) break;
  }
  if (std::ferror(file.get())) return fail(std::string("read error: ") + std::strerror(errno));
  if (text.size() > kScenarioFileBytesMax) {
    return fail("scenario file is larger than the limit of " +
                std::to_string(kScenarioFileBytesMax) + " bytes (16 MiB)");
  }
  return load_scenario_text(text, path);
}

std::string effective_scenario_text(const std::string& text, std::uint32_t step_us,
                                    const std::string& own_district) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return text;
  const std::uint32_t current = doc.contains("step_us") && doc["step_us"].is_number_unsigned()
                                    ? doc["step_us"].get<std::uint32_t>()
                                    : core::Scenario{}.step_us;
  const bool same_district =
      own_district.empty() || (doc.contains("own_district") && doc["own_district"] == own_district);
  if (current == step_us && same_district) return text;
  doc["step_us"] = step_us;
  if (!own_district.empty()) doc["own_district"] = own_district;
  return doc.dump(2) + "\n";
}

LoadResult load_embedded_default() {
  return load_scenario_text(embedded_default_scenario_text(), "<embedded default>");
}

}  // namespace bustle::scenario
