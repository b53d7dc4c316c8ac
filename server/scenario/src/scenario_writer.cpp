// core::Scenario to scenario JSON (scenario_writer.hpp). The document is
// built as an nlohmann::ordered_json (keys in insertion order, which is the
// schema's), then printed by print() below rather than by
// nlohmann's dump: dump() writes every array element on its own line and
// formats doubles its own way, and the text must show doubles in their
// shortest round-trip form and points as [x, y] on one line.
#include "bustle/scenario/scenario_writer.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace bustle::scenario {
namespace {

using Doc = nlohmann::ordered_json;

constexpr std::size_t kColumnsMax = 100;

// An object under construction: required fields always, optional ones only
// when they differ from the value the loader gives them when absent (the
// default-constructed spec's, passed in, so no default is written twice).
class Fields {
 public:
  Fields& put(const char* key, Doc value) {
    doc_[key] = std::move(value);
    return *this;
  }
  // Doubles compare by their bits: -0.0 is not the default 0.0.
  Fields& number(const char* key, double value, double absent) {
    if (std::bit_cast<std::uint64_t>(value) != std::bit_cast<std::uint64_t>(absent))
      doc_[key] = value;
    return *this;
  }
  // Integers and strings.
  template <class T>
  Fields& scalar(const char* key, const T& value, const T& absent) {
    if (value != absent) doc_[key] = value;
    return *this;
  }
  Fields& text(const char* key, const std::string& value) {
    if (!value.empty()) doc_[key] = value;
    return *this;
  }
  Fields& ids(const char* key, const std::vector<std::string>& value) {
    if (!value.empty()) doc_[key] = value;
    return *this;
  }
  // Put when not empty (an optional object or array).
  Fields& nested(const char* key, Doc value) {
    if (!value.empty()) doc_[key] = std::move(value);
    return *this;
  }
  Doc take() { return std::move(doc_); }

 private:
  Doc doc_ = Doc::object();
};

Doc point_json(const core::Vec2& p) {
  return Doc::array({p.x_m, p.y_m});
}

template <class T, class Fn>
Doc array_of(const std::vector<T>& items, Fn&& fn) {
  Doc out = Doc::array();
  for (const T& item : items) out.push_back(fn(item));
  return out;
}

const char* lane_kind_name(core::LaneKind kind) {
  switch (kind) {
    case core::LaneKind::Crossing:
      return "crossing";
    case core::LaneKind::Road:
      return "road";
    case core::LaneKind::Sidewalk:
      break;
  }
  return "sidewalk";
}

const char* phase_name(core::SchedulePhase phase) {
  switch (phase) {
    case core::SchedulePhase::CommuteToWork:
      return "CommuteToWork";
    case core::SchedulePhase::Work:
      return "Work";
    case core::SchedulePhase::Leisure:
      return "Leisure";
    case core::SchedulePhase::CommuteHome:
      return "CommuteHome";
    case core::SchedulePhase::Home:
      break;
  }
  return "Home";
}

Doc lane_json(const core::LaneSpec& l) {
  const core::LaneSpec absent{};
  return Fields()
      .put("id", l.id)
      .put("kind", lane_kind_name(l.kind))
      .put("points", array_of(l.points, point_json))
      .put("speed_mps_limit", l.speed_mps_limit)
      .put("successors", l.successors)
      .number("elevation_m", l.elevation_m, absent.elevation_m)
      .take();
}

Doc pedestrians_json(const core::PedestrianSpec& p) {
  const core::PedestrianSpec absent{};
  return Fields()
      .scalar("count", p.count, absent.count)
      .scalar("spawn_per_step_max", p.spawn_per_step_max, absent.spawn_per_step_max)
      .number("fragment_length_m", p.fragment_length_m, absent.fragment_length_m)
      .scalar("dots_every_steps", p.dots_every_steps, absent.dots_every_steps)
      .take();
}

Doc garage_json(const core::GarageSpec& g) {
  const core::GarageSpec absent{};
  Fields f;
  f.put("id", g.id).put("lane", g.lane).put("route", g.route);
  if (g.route_end != absent.route_end) f.put("route_end", "garage");
  return f.put("prototypes", g.prototypes)
      .scalar("capacity", g.capacity, absent.capacity)
      .scalar("queue_depth", g.queue_depth, absent.queue_depth)
      .scalar("dispatch_per_step_max", g.dispatch_per_step_max, absent.dispatch_per_step_max)
      .scalar("cooldown_frames", g.cooldown_frames, absent.cooldown_frames)
      .number("entrance_clear_m", g.entrance_clear_m, absent.entrance_clear_m)
      .scalar("mouth_capacity", g.mouth_capacity, absent.mouth_capacity)
      .scalar("vehicle_id_format", g.vehicle_id_format, absent.vehicle_id_format)
      .take();
}

Doc signal_json(const core::SignalSpec& s) {
  const core::SignalSpec absent{};
  return Fields()
      .put("id", s.id)
      .put("lane", s.lane)
      .number("stop_alpha", s.stop_alpha, absent.stop_alpha)
      .number("yield_alpha", s.yield_alpha, absent.yield_alpha)
      .scalar("open_ms", s.open_ms, absent.open_ms)
      .scalar("yield_ms", s.yield_ms, absent.yield_ms)
      .scalar("closed_ms", s.closed_ms, absent.closed_ms)
      .scalar("offset_ms", s.offset_ms, absent.offset_ms)
      .take();
}

Doc vehicle_plan_json(const core::VehiclePlanSpec& plan) {
  const core::VehiclePlanSpec absent{};
  const core::PlannedRequest absent_request{};
  return Fields()
      .scalar("batch_size", plan.batch_size, absent.batch_size)
      .scalar("batch_interval_steps", plan.batch_interval_steps, absent.batch_interval_steps)
      .nested("requests", array_of(plan.requests,
                                   [&](const core::PlannedRequest& r) {
                                     return Fields()
                                         .put("request_id", r.request_id)
                                         .put("garage", r.garage)
                                         .put("prototype", r.prototype)
                                         .put("lane", r.lane)
                                         .scalar("priority", r.priority, absent_request.priority)
                                         .take();
                                   }))
      .take();
}

Doc vehicle_rules_json(const core::VehicleRules& v) {
  const core::VehicleRules absent{};
  return Fields()
      .number("headway_block_m", v.headway_block_m, absent.headway_block_m)
      .number("headway_caution_m", v.headway_caution_m, absent.headway_caution_m)
      .number("yield_multiplier", v.yield_multiplier, absent.yield_multiplier)
      .number("pedestrian_hazard_m", v.pedestrian_hazard_m, absent.pedestrian_hazard_m)
      .take();
}

Doc importance_json(const core::ImportanceSpec& imp) {
  static constexpr const char* kClassNames[core::kPriorityClassCount] = {"story", "quest",
                                                                         "community", "background"};
  const core::ImportanceSpec absent{};
  Fields classes;
  for (std::size_t k = 0; k < core::kPriorityClassCount; ++k)
    classes.number(kClassNames[k], imp.class_weight[k], absent.class_weight[k]);
  const core::AreaOfInterest absent_area{};
  return Fields()
      .nested("class_weight", classes.take())
      .number("pedestrian_weight", imp.pedestrian_weight, absent.pedestrian_weight)
      .number("vehicle_weight", imp.vehicle_weight, absent.vehicle_weight)
      .number("height_weight", imp.height_weight, absent.height_weight)
      .number("behind_factor", imp.behind_factor, absent.behind_factor)
      .nested("areas", array_of(imp.areas,
                                [&](const core::AreaOfInterest& a) {
                                  return Fields()
                                      .put("id", a.id)
                                      .put("center", point_json(a.center))
                                      .number("radius_m", a.radius_m, absent_area.radius_m)
                                      .number("weight", a.weight, absent_area.weight)
                                      .take();
                                }))
      .take();
}

Doc tiers_json(const core::TierSpec& t) {
  const core::TierSpec absent{};
  return Fields()
      .number("full_enter_m", t.full_enter_m, absent.full_enter_m)
      .number("full_exit_m", t.full_exit_m, absent.full_exit_m)
      .number("simulated_enter_m", t.simulated_enter_m, absent.simulated_enter_m)
      .number("simulated_exit_m", t.simulated_exit_m, absent.simulated_exit_m)
      .scalar("full_cap", t.full_cap, absent.full_cap)
      .scalar("simulated_cap", t.simulated_cap, absent.simulated_cap)
      .scalar("transitions_per_step", t.transitions_per_step, absent.transitions_per_step)
      .scalar("pedestrian_resolve_every_steps", t.pedestrian_resolve_every_steps,
              absent.pedestrian_resolve_every_steps)
      .scalar("vehicle_resolve_every_steps", t.vehicle_resolve_every_steps,
              absent.vehicle_resolve_every_steps)
      .scalar("hard_full_cap", t.hard_full_cap, absent.hard_full_cap)
      .nested("importance", importance_json(t.importance))
      .take();
}

Doc zone_json(const core::ZoneSpec& z) {
  const core::ZoneSpec absent{};
  return Fields()
      .put("id", z.id)
      .put("lanes", z.lanes)
      .scalar("capacity", z.capacity, absent.capacity)
      .take();
}

Doc schedule_entry_json(const core::ScheduleEntry& e) {
  const core::ScheduleEntry absent{};
  return Fields()
      .put("start_hour", e.start_hour)
      .put("end_hour", e.end_hour)
      .put("phase", phase_name(e.phase))
      .text("activity", e.activity)
      .put("zone", e.zone)
      .text("work_point", e.work_point)
      .number("density", e.density, absent.density)
      .take();
}

Doc community_json(const core::CommunitySpec& c) {
  Fields f;
  f.put("id", c.id).put("base_population", c.base_population).put("professions", c.professions);
  if (c.saveable) f.put("saveable", true);
  return f.put("home_zone", c.home_zone)
      .put("schedule", array_of(c.schedule, schedule_entry_json))
      .take();
}

Doc work_point_json(const core::WorkPointSpec& w) {
  const core::WorkPointSpec absent{};
  Fields f;
  f.put("id", w.id)
      .put("zone", w.zone)
      .put("profession", w.profession)
      .scalar("slots", w.slots, absent.slots);
  if (w.has_anchor) {
    f.put("anchor",
          Fields()
              .put("lane", w.anchor.lane)
              .put("s_m", w.anchor.s_m)
              .number("slot_spacing_m", w.anchor.slot_spacing_m, absent.anchor.slot_spacing_m)
              .take());
  }
  return f.take();
}

Doc population_json(const core::PopulationSettings& p) {
  const core::PopulationSettings absent{};
  return Fields()
      .number("start_hour", p.start_hour, absent.start_hour)
      .scalar("time_scale", p.time_scale, absent.time_scale)
      .scalar("lifecycle_interval_ms", p.lifecycle_interval_ms, absent.lifecycle_interval_ms)
      .scalar("growth_quota", p.growth_quota, absent.growth_quota)
      .scalar("recycle_quota", p.recycle_quota, absent.recycle_quota)
      .scalar("migration_budget", p.migration_budget, absent.migration_budget)
      .take();
}

Doc spawn_json(const core::SpawnSettings& s) {
  const core::SpawnSettings absent{};
  return Fields()
      .scalar("per_step_cap", s.per_step_cap, absent.per_step_cap)
      .scalar("queue_depth", s.queue_depth, absent.queue_depth)
      .scalar("timeout_ms", s.timeout_ms, absent.timeout_ms)
      .take();
}

Doc despawn_json(const core::DespawnSettings& d) {
  const core::DespawnSettings absent{};
  return Fields()
      .scalar("fade_ms", d.fade_ms, absent.fade_ms)
      .number("out_of_range_m", d.out_of_range_m, absent.out_of_range_m)
      .scalar("stuck_ms", d.stuck_ms, absent.stuck_ms)
      .take();
}

Doc prevention_json(const core::PreventionSpec& p) {
  const core::PreventionSpec absent{};
  return Fields()
      .nested("units_per_level", Doc(p.units_per_level))
      .scalar("spawn_per_step", p.spawn_per_step, absent.spawn_per_step)
      .scalar("max_units", p.max_units, absent.max_units)
      .number("ring_min_m", p.ring_min_m, absent.ring_min_m)
      .number("ring_max_m", p.ring_max_m, absent.ring_max_m)
      .scalar("cleanup_every_steps", p.cleanup_every_steps, absent.cleanup_every_steps)
      .number("corpse_keep_m", p.corpse_keep_m, absent.corpse_keep_m)
      .number("corpse_force_m", p.corpse_force_m, absent.corpse_force_m)
      .scalar("corpse_pressure_count", p.corpse_pressure_count, absent.corpse_pressure_count)
      .scalar("pressure_entities", p.pressure_entities, absent.pressure_entities)
      .take();
}

Doc district_json(const core::DistrictSpec& d) {
  return Fields()
      .put("id", d.id)
      .ids("lanes", d.lanes)
      .ids("zones", d.zones)
      .ids("work_points", d.work_points)
      .ids("garages", d.garages)
      .ids("signals", d.signals)
      .ids("border_lanes", d.border_lanes)
      .take();
}

// The whole document, top-level keys in the loader's order.
Doc scenario_json(const core::Scenario& s) {
  const core::Scenario absent{};
  Fields f;
  f.put("id", s.id)
      .text("name", s.name)
      .put("step_us", s.step_us)
      .put("entity_capacity", s.entity_capacity)
      .put("command_inbox_capacity", s.command_inbox_capacity)
      .nested("pedestrians", pedestrians_json(s.pedestrians))
      .put("lanes", array_of(s.lanes, lane_json))
      .nested("garages", array_of(s.garages, garage_json))
      .nested("signals", array_of(s.signals, signal_json))
      .nested("vehicle_plan", vehicle_plan_json(s.vehicle_plan))
      .nested("vehicle_rules", vehicle_rules_json(s.vehicle_rules))
      .nested("tiers", tiers_json(s.tiers))
      .nested("observers", array_of(s.observers, point_json));
  if (s.observer_follow != absent.observer_follow) f.put("observer_follow", "first_vehicle");
  f.nested("zones", array_of(s.zones, zone_json))
      .nested("work_points", array_of(s.work_points, work_point_json))
      .nested("communities", array_of(s.communities, community_json))
      .nested("population", population_json(s.population))
      .nested("spawn", spawn_json(s.spawn))
      .nested("despawn", despawn_json(s.despawn))
      .nested("prevention", prevention_json(s.prevention))
      .nested("districts", array_of(s.districts, district_json));
  // A district world's scenario (a district server's recording) names its district.
  if (s.own_district >= 0 && static_cast<std::size_t>(s.own_district) < s.districts.size())
    f.put("own_district", s.districts[static_cast<std::size_t>(s.own_district)].id);
  return f.take();
}

// --- printing -------------------------------------------------------------

std::string string_text(const std::string& s) {
  return Doc(s).dump(-1, ' ', /*ensure_ascii=*/false, Doc::error_handler_t::replace);
}

// The shortest text that reads back as the same double, with a '.' or an
// exponent so that it reads as a number_float (and -0.0 keeps its sign).
std::string double_text(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string out(buf, ec == std::errc() ? end : buf);
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

std::string scalar_text(const Doc& v) {
  switch (v.type()) {
    case Doc::value_t::string:
      return string_text(v.get_ref<const std::string&>());
    case Doc::value_t::number_float:
      return double_text(v.get<double>());
    case Doc::value_t::number_unsigned:
      return std::to_string(v.get<std::uint64_t>());
    case Doc::value_t::number_integer:
      return std::to_string(v.get<std::int64_t>());
    case Doc::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    default:
      return "null";
  }
}

bool scalar_or_flat_array(const Doc& v) {
  if (!v.is_array()) return !v.is_object();
  return std::none_of(v.begin(), v.end(), [](const Doc& e) { return e.is_structured(); });
}

// May stand on one line: a scalar, or an array or object whose elements are
// scalars or arrays of scalars (a lane's points, an id list, a request).
bool may_inline(const Doc& v) {
  return !v.is_structured() || std::all_of(v.begin(), v.end(), scalar_or_flat_array);
}

std::string inline_text(const Doc& v) {
  if (!v.is_structured()) return scalar_text(v);
  std::string out(v.is_array() ? "[" : "{");
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    out += first ? "" : ", ";
    first = false;
    if (v.is_object()) out += string_text(it.key()) + ": ";
    out += inline_text(it.value());
  }
  return out + (v.is_array() ? "]" : "}");
}

// Appends `v`, which starts after `used` columns of a line indented by
// `indent`; containers that do not fit (or hold objects) get one line per
// element, indented two more.
void print(const Doc& v, std::size_t indent, std::size_t used, std::string& out) {
  if (may_inline(v)) {
    std::string text = inline_text(v);
    if (!v.is_structured() || v.empty() || used + text.size() + 1 <= kColumnsMax) {
      out += text;
      return;
    }
  }
  const std::string pad(indent + 2, ' ');
  out += v.is_array() ? "[\n" : "{\n";
  for (auto it = v.begin(); it != v.end(); ++it) {
    out += pad;
    std::size_t at = pad.size();
    if (v.is_object()) {
      const std::string key = string_text(it.key()) + ": ";
      out += key;
      at += key.size();
    }
    print(it.value(), indent + 2, at, out);
    out += std::next(it) == v.end() ? "\n" : ",\n";
  }
  out += std::string(indent, ' ') + (v.is_array() ? "]" : "}");
}

}  // namespace

std::string write_scenario_json(const core::Scenario& scenario) {
  std::string out;
  print(scenario_json(scenario), 0, 0, out);
  return out + "\n";
}

}  // namespace bustle::scenario
