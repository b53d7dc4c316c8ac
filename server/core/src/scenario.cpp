// A Scenario's rules, checked before a World is built from it (validate_scenario:
// every failure named by its path, sections for lanes, vehicles, population,
// importance, lifecycle and prevention), and VehicleId formats.
#include "bustle/core/scenario.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "bustle/core/prevention.hpp"

namespace bustle::core {

// VehicleId formats (GarageSpec::vehicle_id_format) ------------------------

namespace {

// Calls on_text(literal) and on_field(name) in order; Ok, or InvalidArgument
// saying why the format is malformed.
template <class Text, class Field>
Status walk_vehicle_id_format(const std::string& format, Text on_text, Field on_field) {
  std::size_t k = 0;
  while (k < format.size()) {
    const std::size_t open = format.find_first_of("{}", k);
    if (open == std::string::npos) {
      on_text(format.substr(k));
      break;
    }
    if (format[open] == '}')
      return Status::invalid_argument("unmatched '}' at position " + std::to_string(open));
    on_text(format.substr(k, open - k));
    const std::size_t close = format.find('}', open);
    if (close == std::string::npos)
      return Status::invalid_argument("unclosed '{' at position " + std::to_string(open));
    on_field(format.substr(open + 1, close - open - 1));
    k = close + 1;
  }
  return {};
}

}  // namespace

Status check_vehicle_id_format(const std::string& format) {
  if (format.empty() || format.size() > 128)
    return Status::invalid_argument("must be 1 to 128 characters");
  int ordinals = 0;
  std::string bad_field;
  Status why = walk_vehicle_id_format(
      format, [](const std::string&) {},
      [&](const std::string& f) {
        if (f == "ordinal") {
          ++ordinals;
        } else if (f != "garage" && f != "scenario" && bad_field.empty()) {
          bad_field = f;
        }
      });
  if (!why.ok()) return why;
  if (!bad_field.empty())
    return Status::invalid_argument("unknown field {" + bad_field +
                                    "}; use {garage}, {scenario} or {ordinal}");
  if (ordinals != 1)
    return Status::invalid_argument(
        "must contain {ordinal} exactly once (VehicleIds must never repeat)");
  return {};
}

std::string format_vehicle_id(const std::string& format, const std::string& garage,
                              const std::string& scenario, std::uint64_t ordinal) {
  std::string out;
  // A format that does not walk was refused when the scenario loaded.
  static_cast<void>(walk_vehicle_id_format(
      format, [&](const std::string& t) { out += t; },
      [&](const std::string& f) {
        if (f == "garage") {
          out += garage;
        } else if (f == "scenario") {
          out += scenario;
        } else if (f == "ordinal") {
          std::string n = std::to_string(ordinal);
          if (n.size() < 6) n.insert(0, 6 - n.size(), '0');
          out += n;
        }
      }));
  return out;
}

std::pair<std::string, std::string> vehicle_id_affixes(const std::string& format,
                                                       const std::string& garage,
                                                       const std::string& scenario) {
  const std::size_t at = format.find("{ordinal}");
  return {format_vehicle_id(format.substr(0, at), garage, scenario, 0),
          format_vehicle_id(format.substr(at + 9), garage, scenario, 0)};
}

namespace {

std::string lane_path(std::size_t i) {
  return "lanes[" + std::to_string(i) + "]";
}

// Shortest round-trip text of a double ("1.7e+308", "12.5"): std::to_string
// would print a huge coordinate as 309 digits.
std::string number_text(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

// The extent as written in the schema and the docs ("100000", not "1e+05").
std::string extent_text() {
  return std::to_string(static_cast<std::int64_t>(kWorldExtentM));
}

// A scenario coordinate: non-finite values are reported for the point as a
// whole ("lanes[3].points[1]"), finite ones outside the world extent per axis
// ("lanes[3].points[1].x"), so the message can say which number is too far.
template <class Fail>
void check_coordinates(const Vec2& p, const std::string& path, Fail&& fail) {
  if (!std::isfinite(p.x_m) || !std::isfinite(p.y_m)) {
    fail(path, "coordinates must be finite");
    return;
  }
  const std::pair<double, const char*> axes[] = {{p.x_m, ".x"}, {p.y_m, ".y"}};
  for (const auto& [v, axis] : axes) {
    if (std::fabs(v) > kWorldExtentM) {
      fail(path + axis, "is " + number_text(v) + " m, outside the world extent [-" + extent_text() +
                            ", " + extent_text() + "] m");
    }
  }
}

double polyline_length(const std::vector<Vec2>& pts) {
  double total = 0.0;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    total += std::hypot(pts[i].x_m - pts[i - 1].x_m, pts[i].y_m - pts[i - 1].y_m);
  }
  return total;
}

// One garage's prototypes, limits (capacity, queue, per-step maximum, mouth),
// entrance clearance and VehicleId format; `p` is its path ("garages[i]").
template <class Fail>
void validate_garage_fields(const GarageSpec& gs, const std::string& p, const LaneSpec* entrance,
                            Fail&& fail) {
  if (gs.prototypes.empty()) fail(p + ".prototypes", "must list at least one prototype");
  for (std::size_t k = 0; k < gs.prototypes.size(); ++k) {
    if (gs.prototypes[k].empty())
      fail(p + ".prototypes[" + std::to_string(k) + "]", "must be non-empty");
    for (std::size_t j = 0; j < k; ++j) {
      if (gs.prototypes[j] == gs.prototypes[k]) {
        fail(p + ".prototypes[" + std::to_string(k) + "]",
             "duplicate prototype '" + gs.prototypes[k] + "'");
      }
    }
  }
  if (gs.capacity < 1) fail(p + ".capacity", "must be at least 1");
  if (gs.queue_depth < 1) fail(p + ".queue_depth", "must be at least 1");
  if (gs.dispatch_per_step_max < 1) fail(p + ".dispatch_per_step_max", "must be at least 1");
  if (gs.mouth_capacity > gs.capacity) {
    fail(p + ".mouth_capacity", "must be at most capacity (" + std::to_string(gs.capacity) +
                                    "): its vehicles count against it");
  }
  if (!(gs.entrance_clear_m >= 0.0) ||
      (entrance != nullptr && gs.entrance_clear_m > polyline_length(entrance->points))) {
    fail(p + ".entrance_clear_m", "must be in [0, entrance lane length]");
  }
  if (Status why = check_vehicle_id_format(gs.vehicle_id_format); !why.ok()) {
    fail(p + ".vehicle_id_format", why.message());
  }
}

// The road lane `id` names (at `path`), or nullptr after a failure.
template <class Fail>
const LaneSpec* road_lane(const Scenario& s, const std::map<std::string, std::size_t>& lane_index,
                          const std::string& path, const std::string& id, Fail&& fail) {
  auto it = lane_index.find(id);
  if (it == lane_index.end()) {
    fail(path, "unknown lane id '" + id + "'");
    return nullptr;
  }
  const LaneSpec& lane = s.lanes[it->second];
  if (lane.kind != LaneKind::Road) {
    fail(path, "lane '" + id + "' is not a road");
    return nullptr;
  }
  return &lane;
}

// Garages: ids, entrance lanes, routes along successors and their fields;
// fills `garage_index` (id -> index).
template <class Fail>
void validate_garages(const Scenario& s, const std::map<std::string, std::size_t>& lane_index,
                      std::map<std::string, std::size_t>& garage_index, Fail&& fail) {
  for (std::size_t g = 0; g < s.garages.size(); ++g) {
    const GarageSpec& gs = s.garages[g];
    const std::string p = "garages[" + std::to_string(g) + "]";
    if (gs.id.empty()) fail(p + ".id", "must be a non-empty string");
    if (!garage_index.emplace(gs.id, g).second)
      fail(p + ".id", "duplicate garage id '" + gs.id + "'");
    const LaneSpec* entrance = road_lane(s, lane_index, p + ".lane", gs.lane, fail);
    if (gs.route.empty()) {
      fail(p + ".route", "must list at least one lane");
    } else if (gs.route.front() != gs.lane) {
      fail(p + ".route[0]", "must be the entrance lane '" + gs.lane + "'");
    }
    for (std::size_t k = 0; k < gs.route.size(); ++k) {
      const std::string rp = p + ".route[" + std::to_string(k) + "]";
      if (road_lane(s, lane_index, rp, gs.route[k], fail) == nullptr || k == 0) continue;
      auto prev = lane_index.find(gs.route[k - 1]);
      if (prev == lane_index.end()) continue;
      const auto& succ = s.lanes[prev->second].successors;
      if (std::find(succ.begin(), succ.end(), gs.route[k]) == succ.end()) {
        fail(rp, "lane '" + gs.route[k] + "' is not a successor of '" + gs.route[k - 1] + "'");
      }
    }
    validate_garage_fields(gs, p, entrance, fail);
  }
}

template <class Fail>
void validate_vehicle_id_overlap(const Scenario& s, Fail&& fail) {
  // VehicleIds are unique across garages too: with A's ids reading
  // pA + digits + sA and B's pB + digits + sB, they can meet only when the
  // suffixes are equal and one prefix is the other followed by digits.
  for (std::size_t a = 0; a < s.garages.size(); ++a) {
    for (std::size_t b = 0; b < a; ++b) {
      if (!check_vehicle_id_format(s.garages[a].vehicle_id_format).ok() ||
          !check_vehicle_id_format(s.garages[b].vehicle_id_format).ok()) {
        continue;
      }
      const auto [pa, sa] =
          vehicle_id_affixes(s.garages[a].vehicle_id_format, s.garages[a].id, s.id);
      const auto [pb, sb] =
          vehicle_id_affixes(s.garages[b].vehicle_id_format, s.garages[b].id, s.id);
      const std::string& longer = pa.size() >= pb.size() ? pa : pb;
      const std::string& shorter = pa.size() >= pb.size() ? pb : pa;
      const bool digits_only =
          std::all_of(longer.begin() + static_cast<std::ptrdiff_t>(shorter.size()), longer.end(),
                      [](char c) { return c >= '0' && c <= '9'; });
      if (sa == sb && longer.compare(0, shorter.size(), shorter) == 0 && digits_only) {
        fail("garages[" + std::to_string(a) + "].vehicle_id_format",
             "can give the same VehicleIds as garages[" + std::to_string(b) + "] ('" +
                 format_vehicle_id(s.garages[a].vehicle_id_format, s.garages[a].id, s.id, 0) +
                 "'); add {garage} or other text");
      }
    }
  }
}

template <class Fail>
void validate_signals(const Scenario& s, const std::map<std::string, std::size_t>& lane_index,
                      Fail&& fail) {
  std::map<std::string, std::size_t> signal_index;
  for (std::size_t i = 0; i < s.signals.size(); ++i) {
    const SignalSpec& sg = s.signals[i];
    const std::string p = "signals[" + std::to_string(i) + "]";
    if (sg.id.empty()) fail(p + ".id", "must be a non-empty string");
    if (!signal_index.emplace(sg.id, i).second)
      fail(p + ".id", "duplicate signal id '" + sg.id + "'");
    road_lane(s, lane_index, p + ".lane", sg.lane, fail);
    if (!(sg.stop_alpha >= 0.0 && sg.stop_alpha <= 1.0))
      fail(p + ".stop_alpha", "must be in [0, 1]");
    if (!(sg.yield_alpha >= 0.0 && sg.yield_alpha <= sg.stop_alpha)) {
      fail(p + ".yield_alpha", "must be in [0, stop_alpha]");
    }
    if (sg.open_ms < 1) fail(p + ".open_ms", "must be at least 1");
    if (sg.yield_ms < 1) fail(p + ".yield_ms", "must be at least 1");
    if (sg.closed_ms < 1) fail(p + ".closed_ms", "must be at least 1");
    if (std::uint64_t{sg.offset_ms} >= std::uint64_t{sg.open_ms} + sg.yield_ms + sg.closed_ms) {
      fail(p + ".offset_ms", "must be shorter than one cycle");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (s.signals[j].lane == sg.lane)
        fail(p + ".lane", "lane '" + sg.lane + "' already has a signal");
    }
  }
}

template <class Fail>
void validate_vehicle_plan(const Scenario& s,
                           const std::map<std::string, std::size_t>& garage_index, Fail&& fail) {
  const VehiclePlanSpec& plan = s.vehicle_plan;
  if (plan.batch_size < 1) fail("vehicle_plan.batch_size", "must be at least 1");
  if (plan.batch_interval_steps < 1)
    fail("vehicle_plan.batch_interval_steps", "must be at least 1");
  std::map<std::pair<std::string, std::string>, std::size_t> seen_requests;
  for (std::size_t i = 0; i < plan.requests.size(); ++i) {
    const PlannedRequest& r = plan.requests[i];
    const std::string p = "vehicle_plan.requests[" + std::to_string(i) + "]";
    if (r.request_id.empty()) fail(p + ".request_id", "must be a non-empty string");
    if (!seen_requests.emplace(std::make_pair(r.garage, r.request_id), i).second) {
      fail(p + ".request_id",
           "duplicate request id '" + r.request_id + "' for garage '" + r.garage + "'");
    }
    auto g = garage_index.find(r.garage);
    if (g == garage_index.end()) {
      fail(p + ".garage", "unknown garage id '" + r.garage + "'");
      continue;
    }
    const GarageSpec& gs = s.garages[g->second];
    if (std::find(gs.prototypes.begin(), gs.prototypes.end(), r.prototype) == gs.prototypes.end()) {
      fail(p + ".prototype", "garage '" + gs.id + "' has no prototype '" + r.prototype + "'");
    }
    if (r.lane != gs.lane)
      fail(p + ".lane", "garage '" + gs.id + "' dispatches onto lane '" + gs.lane + "' only");
  }
}

// The vehicle rules' distances and the tier radii, caps and strides; the
// observers' coordinates.
template <class Fail>
void validate_rules_and_tiers(const Scenario& s, Fail&& fail) {
  const VehicleRules& vr = s.vehicle_rules;
  // JSON cannot spell an infinity (an overflowing number is a syntax error),
  // but scenarios built in code can: every distance here must be finite.
  if (!(vr.headway_block_m > 0.0 && std::isfinite(vr.headway_block_m))) {
    fail("vehicle_rules.headway_block_m", "must be positive and finite");
  }
  if (!(vr.headway_caution_m >= vr.headway_block_m)) {
    fail("vehicle_rules.headway_caution_m", "must be at least headway_block_m");
  } else if (!std::isfinite(vr.headway_caution_m)) {
    fail("vehicle_rules.headway_caution_m", "must be finite");
  }
  if (!(vr.yield_multiplier > 0.0 && vr.yield_multiplier <= 1.0)) {
    fail("vehicle_rules.yield_multiplier", "must be in (0, 1]");
  }
  if (!(vr.pedestrian_hazard_m >= 0.0 && std::isfinite(vr.pedestrian_hazard_m))) {
    fail("vehicle_rules.pedestrian_hazard_m", "must be non-negative and finite");
  }
  const TierSpec& t = s.tiers;
  const std::pair<double, const char*> radii[] = {{t.full_enter_m, "tiers.full_enter_m"},
                                                  {t.full_exit_m, "tiers.full_exit_m"},
                                                  {t.simulated_enter_m, "tiers.simulated_enter_m"},
                                                  {t.simulated_exit_m, "tiers.simulated_exit_m"}};
  for (const auto& [radius_m, path] : radii) {
    if (std::isinf(radius_m)) fail(path, "must be finite");
  }
  if (!(t.full_enter_m >= 0.0 && t.full_enter_m <= t.full_exit_m)) {
    fail("tiers.full_exit_m", "must be at least full_enter_m (hysteresis)");
  }
  if (!(t.simulated_enter_m >= t.full_enter_m && t.simulated_enter_m <= t.simulated_exit_m)) {
    fail("tiers.simulated_exit_m", "need full_enter_m <= simulated_enter_m <= simulated_exit_m");
  }
  if (t.transitions_per_step < 1) fail("tiers.transitions_per_step", "must be at least 1");
  if (t.hard_full_cap < 1) fail("tiers.hard_full_cap", "must be at least 1");
  if (t.pedestrian_resolve_every_steps < 1 || t.pedestrian_resolve_every_steps > 64) {
    fail("tiers.pedestrian_resolve_every_steps", "must be in [1, 64]");
  }
  if (t.vehicle_resolve_every_steps < 1 || t.vehicle_resolve_every_steps > 64) {
    fail("tiers.vehicle_resolve_every_steps", "must be in [1, 64]");
  }
  for (std::size_t i = 0; i < s.observers.size(); ++i) {
    check_coordinates(s.observers[i], "observers[" + std::to_string(i) + "]", fail);
  }
}

template <class Fail>
void validate_vehicles(const Scenario& s, const std::map<std::string, std::size_t>& lane_index,
                       Fail&& fail) {
  std::map<std::string, std::size_t> garage_index;
  validate_garages(s, lane_index, garage_index, fail);
  validate_vehicle_id_overlap(s, fail);
  validate_signals(s, lane_index, fail);
  validate_vehicle_plan(s, garage_index, fail);
  validate_rules_and_tiers(s, fail);
}

std::string hours(double h) {
  std::string s = std::to_string(h);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// A work-point's anchor (WorkPointAnchorSpec): a sidewalk of its zone, every
// slot on the lane.
template <class Fail>
void validate_anchor(const Scenario& s, const WorkPointSpec& wp,
                     const std::map<std::string, std::size_t>& lane_index, const ZoneSpec* zone,
                     const std::string& p, Fail&& fail) {
  const WorkPointAnchorSpec& a = wp.anchor;
  if (!(std::isfinite(a.s_m) && a.s_m >= 0.0)) fail(p + ".s_m", "must be finite and >= 0");
  if (!(std::isfinite(a.slot_spacing_m) && a.slot_spacing_m > 0.0 &&
        a.slot_spacing_m <= kLaneLengthMaxM)) {
    fail(p + ".slot_spacing_m", "must be finite and > 0 (slots stand apart)");
  }
  auto it = lane_index.find(a.lane);
  if (it == lane_index.end()) {
    fail(p + ".lane", "unknown lane '" + a.lane + "'");
    return;
  }
  const LaneSpec& lane = s.lanes[it->second];
  if (lane.kind != LaneKind::Sidewalk) {
    fail(p + ".lane", "lane '" + a.lane + "' is not a sidewalk");
  } else if (zone != nullptr &&
             std::find(zone->lanes.begin(), zone->lanes.end(), a.lane) == zone->lanes.end()) {
    fail(p + ".lane", "lane '" + a.lane + "' is not a lane of zone '" + zone->id + "'");
  }
  const double length_m = polyline_length(lane.points);
  if (std::isfinite(a.s_m) && a.s_m >= length_m) {
    fail(p + ".s_m", "beyond the end of lane '" + a.lane + "' (" + hours(length_m) + " m)");
  } else if (wp.slots >= 1 && std::isfinite(a.slot_spacing_m) &&
             !(wp.slot_s_m(wp.slots - 1) < length_m)) {
    fail(p + ".slot_spacing_m",
         "slot " + std::to_string(wp.slots - 1) + " at " + hours(wp.slot_s_m(wp.slots - 1)) +
             " m lies beyond the end of lane '" + a.lane + "' (" + hours(length_m) + " m)");
  }
}

template <class Fail>
void validate_anchors(const Scenario& s, const std::map<std::string, std::size_t>& lane_index,
                      Fail&& fail) {
  for (std::size_t w = 0; w < s.work_points.size(); ++w) {
    const WorkPointSpec& wp = s.work_points[w];
    if (!wp.has_anchor) continue;
    auto zone = std::find_if(s.zones.begin(), s.zones.end(),
                             [&](const ZoneSpec& z) { return z.id == wp.zone; });
    validate_anchor(s, wp, lane_index, zone == s.zones.end() ? nullptr : &*zone,
                    "work_points[" + std::to_string(w) + "].anchor", fail);
  }
}

template <class Fail>
void validate_zones(const Scenario& s, const std::map<std::string, std::size_t>& lane_index,
                    std::map<std::string, std::size_t>& zone_index, Fail&& fail) {
  for (std::size_t z = 0; z < s.zones.size(); ++z) {
    const ZoneSpec& zs = s.zones[z];
    const std::string p = "zones[" + std::to_string(z) + "]";
    if (zs.id.empty()) fail(p + ".id", "must be a non-empty string");
    if (!zone_index.emplace(zs.id, z).second) fail(p + ".id", "duplicate zone id '" + zs.id + "'");
    if (zs.lanes.empty()) fail(p + ".lanes", "must list at least one sidewalk lane");
    for (std::size_t k = 0; k < zs.lanes.size(); ++k) {
      auto it = lane_index.find(zs.lanes[k]);
      const std::string lp = p + ".lanes[" + std::to_string(k) + "]";
      if (it == lane_index.end()) {
        fail(lp, "unknown lane id '" + zs.lanes[k] + "'");
      } else if (s.lanes[it->second].kind != LaneKind::Sidewalk) {
        fail(lp, "lane '" + zs.lanes[k] + "' is not a sidewalk");
      }
    }
    if (zs.capacity < 1) fail(p + ".capacity", "must be at least 1");
  }
}

template <class Fail>
void validate_work_points(const Scenario& s, const std::map<std::string, std::size_t>& zone_index,
                          std::map<std::string, std::size_t>& wp_index, Fail&& fail) {
  for (std::size_t w = 0; w < s.work_points.size(); ++w) {
    const WorkPointSpec& wp = s.work_points[w];
    const std::string p = "work_points[" + std::to_string(w) + "]";
    if (wp.id.empty()) fail(p + ".id", "must be a non-empty string");
    if (!wp_index.emplace(wp.id, w).second)
      fail(p + ".id", "duplicate work-point id '" + wp.id + "'");
    if (!zone_index.count(wp.zone)) fail(p + ".zone", "unknown zone id '" + wp.zone + "'");
    if (wp.profession.empty()) fail(p + ".profession", "must be a non-empty string");
    if (wp.slots < 1) fail(p + ".slots", "must be at least 1");
  }
}

// One schedule entry of community `cs` (at path `ep`); false when its hours
// are out of range, so the cover cannot be checked.
template <class Fail>
bool validate_schedule_entry(const Scenario& s, const CommunitySpec& cs, const ScheduleEntry& e,
                             const std::string& ep,
                             const std::map<std::string, std::size_t>& zone_index,
                             const std::map<std::string, std::size_t>& wp_index, Fail&& fail) {
  bool ok = true;
  if (!(e.start_hour >= 0.0 && e.start_hour < 24.0)) {
    fail(ep + ".start_hour", "must be in [0, 24)");
    ok = false;
  }
  if (!(e.end_hour > 0.0 && e.end_hour <= 24.0)) {
    fail(ep + ".end_hour", "must be in (0, 24]");
    ok = false;
  }
  if (e.start_hour == e.end_hour) {
    fail(ep + ".end_hour", "equals start_hour (an empty interval)");
    ok = false;
  }
  if (!(e.density >= 0.0 && e.density <= 1.0)) fail(ep + ".density", "must be in [0, 1]");
  if (!zone_index.count(e.zone)) fail(ep + ".zone", "unknown zone id '" + e.zone + "'");
  if (!e.work_point.empty()) {
    auto w = wp_index.find(e.work_point);
    if (w == wp_index.end()) {
      fail(ep + ".work_point", "unknown work-point id '" + e.work_point + "'");
    } else {
      const WorkPointSpec& wp = s.work_points[w->second];
      if (wp.zone != e.zone)
        fail(ep + ".work_point",
             "work-point '" + wp.id + "' is in zone '" + wp.zone + "', not '" + e.zone + "'");
      if (std::find(cs.professions.begin(), cs.professions.end(), wp.profession) ==
          cs.professions.end()) {
        fail(ep + ".work_point", "work-point '" + wp.id + "' needs profession '" + wp.profession +
                                     "', which this community lacks");
      }
    }
  }
  return ok;
}

// A piece of a schedule entry within one day: [start, end) hours.
struct SchedulePiece {
  double start;
  double end;
  std::size_t entry;
};

// Exact cover of [0, 24) by the pieces (across-midnight entries already
// split): sorted by start, every start must equal the previous end (no
// sampling).
template <class Fail>
void validate_schedule_cover(std::vector<SchedulePiece>& pieces, const std::string& p,
                             Fail&& fail) {
  using Piece = SchedulePiece;
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) {
    return a.start != b.start ? a.start < b.start : a.entry < b.entry;
  });
  double covered = 0.0;
  std::size_t last_entry = pieces.front().entry;
  for (const Piece& pc : pieces) {
    if (pc.start > covered) {
      fail(p + ".schedule", "gap from " + hours(covered) + " h to " + hours(pc.start) +
                                " h (entry [" + std::to_string(pc.entry) + "] starts late)");
    } else if (pc.start < covered) {
      fail(p + ".schedule", "entries [" + std::to_string(last_entry) + "] and [" +
                                std::to_string(pc.entry) + "] overlap from " + hours(pc.start) +
                                " h to " + hours(std::min(covered, pc.end)) + " h");
    }
    if (pc.end > covered) {
      covered = pc.end;
      last_entry = pc.entry;
    }
  }
  if (covered < 24.0) fail(p + ".schedule", "gap from " + hours(covered) + " h to 24 h");
}

template <class Fail>
void validate_communities(const Scenario& s, const std::map<std::string, std::size_t>& zone_index,
                          const std::map<std::string, std::size_t>& wp_index, Fail&& fail) {
  std::uint64_t residents = 0;
  std::map<std::string, std::size_t> community_index;
  for (std::size_t c = 0; c < s.communities.size(); ++c) {
    const CommunitySpec& cs = s.communities[c];
    const std::string p = "communities[" + std::to_string(c) + "]";
    if (cs.id.empty()) fail(p + ".id", "must be a non-empty string");
    if (!community_index.emplace(cs.id, c).second)
      fail(p + ".id", "duplicate community id '" + cs.id + "'");
    residents += cs.base_population;
    if (cs.professions.empty()) fail(p + ".professions", "must list at least one profession");
    if (!zone_index.count(cs.home_zone))
      fail(p + ".home_zone", "unknown zone id '" + cs.home_zone + "'");
    if (cs.schedule.empty()) {
      fail(p + ".schedule", "must cover [0, 24) exactly once");
      continue;
    }
    std::vector<SchedulePiece> pieces;
    bool ranges_ok = true;
    for (std::size_t k = 0; k < cs.schedule.size(); ++k) {
      const ScheduleEntry& e = cs.schedule[k];
      const std::string ep = p + ".schedule[" + std::to_string(k) + "]";
      if (!validate_schedule_entry(s, cs, e, ep, zone_index, wp_index, fail)) ranges_ok = false;
      if (!ranges_ok) continue;
      if (e.start_hour < e.end_hour) {
        pieces.push_back({e.start_hour, e.end_hour, k});
      } else {
        pieces.push_back({e.start_hour, 24.0, k});
        pieces.push_back({0.0, e.end_hour, k});
      }
    }
    if (!ranges_ok) continue;
    validate_schedule_cover(pieces, p, fail);
  }
  if (residents > s.entity_capacity) {
    fail("communities", std::to_string(residents) + " identities exceed entity_capacity " +
                            std::to_string(s.entity_capacity));
  }
}

template <class Fail>
void validate_population(const Scenario& s, const std::map<std::string, std::size_t>& lane_index,
                         Fail&& fail) {
  std::map<std::string, std::size_t> zone_index;
  validate_zones(s, lane_index, zone_index, fail);
  std::map<std::string, std::size_t> wp_index;
  validate_work_points(s, zone_index, wp_index, fail);
  validate_communities(s, zone_index, wp_index, fail);
  const PopulationSettings& ps = s.population;
  if (!(ps.start_hour >= 0.0 && ps.start_hour < 24.0))
    fail("population.start_hour", "must be in [0, 24)");
  if (ps.time_scale < 1 || ps.time_scale > 3600)
    fail("population.time_scale", "must be in [1, 3600]");
  if (ps.lifecycle_interval_ms < 1) fail("population.lifecycle_interval_ms", "must be at least 1");
  if (ps.migration_budget > 1'000'000)
    fail("population.migration_budget", "must be at most 1000000");
}

// Limits of the importance, spawn and despawn settings (schema/scenario.schema.json).
constexpr double kElevationMaxM = 10'000.0;
constexpr double kFragmentLengthMinM = 1.0;
constexpr double kFragmentLengthMaxM = 10'000.0;
constexpr std::uint32_t kDotsEveryStepsMax = 600;
constexpr std::uint32_t kSpawnPerStepCapMax = 4096;
constexpr std::uint32_t kSpawnQueueDepthMax = 1u << 20;
constexpr std::uint32_t kSpawnTimeoutMsMax = 3'600'000;
constexpr std::uint32_t kFadeMsMax = 60'000;
constexpr double kWeightMin = 0.01;  // class and type weights
constexpr double kWeightMax = 100.0;
constexpr double kHeightWeightMax = 1000.0;
constexpr double kBehindFactorMax = 100.0;
constexpr double kAreaWeightMax = 100.0;

// False for NaN and, with finite bounds, for infinities.
bool within(double v, double lo, double hi) {
  return v >= lo && v <= hi;
}

template <class Fail>
void validate_importance(const ImportanceSpec& imp, Fail&& fail) {
  static constexpr const char* kClassNames[kPriorityClassCount] = {"story", "quest", "community",
                                                                   "background"};
  const std::string p = "tiers.importance";
  for (std::size_t k = 0; k < kPriorityClassCount; ++k) {
    const std::string cp = p + ".class_weight." + kClassNames[k];
    if (!within(imp.class_weight[k], kWeightMin, kWeightMax)) {
      fail(cp, "must be in [0.01, 100]");
    } else if (k > 0 && within(imp.class_weight[k - 1], kWeightMin, kWeightMax) &&
               imp.class_weight[k] > imp.class_weight[k - 1]) {
      fail(cp, std::string("must not exceed ") + kClassNames[k - 1] +
                   " (the order is story > quest > community > background)");
    }
  }
  if (!within(imp.pedestrian_weight, kWeightMin, kWeightMax))
    fail(p + ".pedestrian_weight", "must be in [0.01, 100]");
  if (!within(imp.vehicle_weight, kWeightMin, kWeightMax))
    fail(p + ".vehicle_weight", "must be in [0.01, 100]");
  if (!within(imp.height_weight, 0.0, kHeightWeightMax))
    fail(p + ".height_weight", "must be in [0, 1000]");
  if (!within(imp.behind_factor, 1.0, kBehindFactorMax))
    fail(p + ".behind_factor", "must be in [1, 100]");
  std::map<std::string, std::size_t> area_index;
  for (std::size_t i = 0; i < imp.areas.size(); ++i) {
    const AreaOfInterest& a = imp.areas[i];
    const std::string ap = p + ".areas[" + std::to_string(i) + "]";
    if (a.id.empty()) {
      fail(ap + ".id", "must be a non-empty string");
    } else if (auto [it, inserted] = area_index.emplace(a.id, i); !inserted) {
      fail(ap + ".id", "duplicate area id '" + a.id + "' (first used by " + p + ".areas[" +
                           std::to_string(it->second) + "])");
    }
    check_coordinates(a.center, ap + ".center", fail);
    if (!(std::isfinite(a.radius_m) && a.radius_m > 0.0))
      fail(ap + ".radius_m", "must be positive and finite");
    if (!within(a.weight, 1.0, kAreaWeightMax)) fail(ap + ".weight", "must be in [1, 100]");
  }
}

// Pedestrian ledger and dots, spawn pipeline, despawn phase.
template <class Fail>
void validate_lifecycle(const Scenario& s, Fail&& fail) {
  if (!within(s.pedestrians.fragment_length_m, kFragmentLengthMinM, kFragmentLengthMaxM)) {
    fail("pedestrians.fragment_length_m", "must be in [1, 10000] m");
  }
  if (s.pedestrians.dots_every_steps < 1 || s.pedestrians.dots_every_steps > kDotsEveryStepsMax) {
    fail("pedestrians.dots_every_steps", "must be in [1, 600]");
  }
  const SpawnSettings& sp = s.spawn;
  if (sp.per_step_cap < 1 || sp.per_step_cap > kSpawnPerStepCapMax)
    fail("spawn.per_step_cap", "must be in [1, 4096]");
  if (sp.queue_depth < 1 || sp.queue_depth > kSpawnQueueDepthMax) {
    fail("spawn.queue_depth", "must be in [1, " + std::to_string(kSpawnQueueDepthMax) + "]");
  }
  // At least one step: a handle must be able to survive the step it was queued in.
  const std::uint32_t step_ms = (s.step_us + 999) / 1000;
  if (sp.timeout_ms < step_ms || sp.timeout_ms > kSpawnTimeoutMsMax) {
    fail("spawn.timeout_ms", "must be in [" + std::to_string(step_ms) + ", " +
                                 std::to_string(kSpawnTimeoutMsMax) + "] (at least one step of " +
                                 std::to_string(s.step_us) + " us), got " +
                                 std::to_string(sp.timeout_ms));
  }
  if (s.despawn.fade_ms > kFadeMsMax) fail("despawn.fade_ms", "must be at most 60000");
  if (!(std::isfinite(s.despawn.out_of_range_m) && s.despawn.out_of_range_m >= 0.0)) {
    fail("despawn.out_of_range_m", "must be finite and non-negative (0 = off)");
  }
  if (s.despawn.stuck_ms > kSpawnTimeoutMsMax)
    fail("despawn.stuck_ms", "must be at most 3600000 (0 = off)");
}

// Response units and corpse cleanup (prevention.hpp).
template <class Fail>
void validate_prevention(const Scenario& s, Fail&& fail) {
  const PreventionSpec& p = s.prevention;
  if (p.units_per_level.size() > kMaxPreventionLevels)
    fail("prevention.units_per_level", "at most 8 levels");
  for (std::size_t k = 0; k < p.units_per_level.size(); ++k) {
    if (p.units_per_level[k] > p.max_units) {
      fail("prevention.units_per_level[" + std::to_string(k) + "]",
           "must be at most prevention.max_units (" + std::to_string(p.max_units) + ")");
    }
  }
  if (p.spawn_per_step < 1 || p.spawn_per_step > 256)
    fail("prevention.spawn_per_step", "must be in [1, 256]");
  if (p.max_units < 1 || p.max_units > 4096) fail("prevention.max_units", "must be in [1, 4096]");
  if (!within(p.ring_min_m, 0.0, kWorldExtentM))
    fail("prevention.ring_min_m", "must be finite and in [0, 100000]");
  if (!within(p.ring_max_m, 0.0, kWorldExtentM) || !(p.ring_max_m > p.ring_min_m))
    fail("prevention.ring_max_m", "must be finite, at most 100000 and above ring_min_m");
  if (p.cleanup_every_steps < 1 || p.cleanup_every_steps > 600)
    fail("prevention.cleanup_every_steps", "must be in [1, 600]");
  if (!within(p.corpse_keep_m, 0.0, 2 * kWorldExtentM))
    fail("prevention.corpse_keep_m", "must be finite and in [0, 200000]");
  if (!within(p.corpse_force_m, 0.0, 2 * kWorldExtentM) || p.corpse_force_m < p.corpse_keep_m)
    fail("prevention.corpse_force_m", "must be finite, at most 200000 and not below corpse_keep_m");
  if (p.corpse_pressure_count > kMaxCorpses)
    fail("prevention.corpse_pressure_count", "must be at most 4096");
  if (p.pressure_entities > s.entity_capacity)
    fail("prevention.pressure_entities", "must be at most entity_capacity (0 = entity_capacity)");
}

}  // namespace

int schedule_entry_at(const std::vector<ScheduleEntry>& schedule, double hour) {
  for (std::size_t k = 0; k < schedule.size(); ++k) {
    const ScheduleEntry& e = schedule[k];
    const bool in = e.start_hour < e.end_hour ? (hour >= e.start_hour && hour < e.end_hour)
                                              : (hour >= e.start_hour || hour < e.end_hour);
    if (in) return static_cast<int>(k);
  }
  return -1;
}

std::vector<ScenarioError> validate_scenario(const Scenario& s) {
  std::vector<ScenarioError> errors;
  auto fail = [&](std::string path, std::string msg) {
    errors.push_back({std::move(path), std::move(msg)});
  };

  if (s.id.empty()) fail("id", "must be a non-empty string");
  if (s.step_us < kStepUsMin || s.step_us > kStepUsMax) {
    fail("step_us", "must be in [" + std::to_string(kStepUsMin) + ", " +
                        std::to_string(kStepUsMax) + "], got " + std::to_string(s.step_us));
  }
  if (s.entity_capacity < 1 || s.entity_capacity > kEntityCapacityMax) {
    fail("entity_capacity", "must be in [1, " + std::to_string(kEntityCapacityMax) + "], got " +
                                std::to_string(s.entity_capacity));
  }
  if (s.command_inbox_capacity < 1 || s.command_inbox_capacity > kInboxCapacityMax) {
    fail("command_inbox_capacity", "must be in [1, " + std::to_string(kInboxCapacityMax) +
                                       "], got " + std::to_string(s.command_inbox_capacity));
  }
  if (s.lanes.empty()) fail("lanes", "must contain at least one lane");

  // std::map, not a hash map: error order must not depend on hashing.
  std::map<std::string, std::size_t> first_index;
  for (std::size_t i = 0; i < s.lanes.size(); ++i) {
    const LaneSpec& lane = s.lanes[i];
    const std::string p = lane_path(i);
    if (lane.id.empty()) {
      fail(p + ".id", "must be a non-empty string");
    } else if (auto [it, inserted] = first_index.emplace(lane.id, i); !inserted) {
      fail(p + ".id",
           "duplicate lane id '" + lane.id + "' (first used by " + lane_path(it->second) + ")");
    }
    if (lane.points.size() < 2) {
      fail(p + ".points", "must have at least 2 points, got " + std::to_string(lane.points.size()));
    } else {
      for (std::size_t k = 0; k < lane.points.size(); ++k) {
        check_coordinates(lane.points[k], p + ".points[" + std::to_string(k) + "]", fail);
      }
      const double len = polyline_length(lane.points);
      if (!(len >= kLaneLengthMinM)) {
        fail(p + ".points", "polyline length must be at least 0.01 m");
      } else if (!(len <= kLaneLengthMaxM)) {
        fail(p + ".points", "polyline length must be at most 100000 m");
      }
    }
    if (!(lane.speed_mps_limit > 0.0) || !(lane.speed_mps_limit <= kSpeedMpsMax)) {
      fail(p + ".speed_mps_limit", "must be in (0, 100] m/s");
    }
    if (!within(lane.elevation_m, -kElevationMaxM, kElevationMaxM)) {
      fail(p + ".elevation_m", "must be finite and within [-10000, 10000] m");
    }
  }
  for (std::size_t i = 0; i < s.lanes.size(); ++i) {
    const LaneSpec& lane = s.lanes[i];
    for (std::size_t k = 0; k < lane.successors.size(); ++k) {
      if (first_index.find(lane.successors[k]) == first_index.end()) {
        fail(lane_path(i) + ".successors[" + std::to_string(k) + "]",
             "unknown lane id '" + lane.successors[k] + "'");
      }
    }
  }

  if (s.pedestrians.count > 0) {
    bool any_sidewalk = false;
    for (const LaneSpec& lane : s.lanes) any_sidewalk |= lane.kind == LaneKind::Sidewalk;
    if (!any_sidewalk)
      fail("pedestrians.count", "is positive but the scenario has no sidewalk lane");
  }
  if (s.pedestrians.count > s.entity_capacity) {
    fail("pedestrians.count",
         "exceeds entity_capacity (" + std::to_string(s.entity_capacity) + ")");
  }
  if (s.pedestrians.spawn_per_step_max < 1) {
    fail("pedestrians.spawn_per_step_max", "must be at least 1");
  }
  validate_lifecycle(s, fail);
  validate_prevention(s, fail);
  validate_vehicles(s, first_index, fail);
  if (s.observer_follow == ObserverFollow::FirstVehicle && s.garages.empty()) {
    fail("observer_follow", "'first_vehicle' needs at least one garage (no vehicle would come)");
  }
  validate_importance(s.tiers.importance, fail);
  validate_population(s, first_index, fail);
  validate_anchors(s, first_index, fail);
  for (ScenarioError& e : validate_districts(s)) errors.push_back(std::move(e));
  return errors;
}

}  // namespace bustle::core
