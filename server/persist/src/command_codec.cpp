// World commands to and from their (kind, JSON arguments) text form
// (command_codec.hpp), as pending_commands and recordings store them: every
// field checked on the way back in, unknown kinds refused.
#include "bustle/persist/command_codec.hpp"

#include <limits>
#include <nlohmann/json.hpp>

namespace bustle::persist {
namespace {

using nlohmann::json;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

json id_json(core::EntityId id) {
  return json::array({id.index, id.generation});
}

bool get_u32(const json& j, const char* key, std::uint32_t& out, std::string& error) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned() || it->get<std::uint64_t>() > UINT32_MAX) {
    error = std::string(key) + ": expected an unsigned 32-bit integer";
    return false;
  }
  out = it->get<std::uint32_t>();
  return true;
}

bool get_string(const json& j, const char* key, std::string& out, std::string& error) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    error = std::string(key) + ": expected a string";
    return false;
  }
  out = it->get<std::string>();
  return true;
}

bool get_u64(const json& j, const char* key, std::uint64_t& out, std::string& error) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) {
    error = std::string(key) + ": expected an unsigned 64-bit integer";
    return false;
  }
  out = it->get<std::uint64_t>();
  return true;
}

bool get_u8(const json& j, const char* key, std::uint8_t& out, std::string& error) {
  std::uint32_t v = 0;
  if (!get_u32(j, key, v, error)) return false;
  if (v > UINT8_MAX) {
    error = std::string(key) + ": out of range (0..255)";
    return false;
  }
  out = static_cast<std::uint8_t>(v);
  return true;
}

bool get_id(const json& j, const char* key, core::EntityId& out, std::string& error) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number_unsigned() ||
      !(*it)[1].is_number_unsigned() || (*it)[0].get<std::uint64_t>() > UINT32_MAX ||
      (*it)[1].get<std::uint64_t>() > UINT32_MAX) {
    error = std::string(key) + ": expected [index, generation]";
    return false;
  }
  out = core::EntityId{(*it)[0].get<std::uint32_t>(), (*it)[1].get<std::uint32_t>()};
  return true;
}

// The route (lane ids) is written only when there is one, so a spawn recorded
// before routes existed and a spawn without one encode alike.
json spawn_json(const core::SpawnPedestrian& c) {
  json j{
      {"zone", c.zone}, {"lane", c.lane}, {"priority", c.priority}, {"timeout_ms", c.timeout_ms}};
  if (!c.route.empty()) j["route"] = c.route;
  return j;
}

// An optional array of strings; absent means empty.
bool get_strings(const json& j, const char* key, std::vector<std::string>& out,
                 std::string& error) {
  auto it = j.find(key);
  if (it == j.end()) return true;
  if (!it->is_array()) {
    error = std::string(key) + ": expected an array of strings";
    return false;
  }
  for (std::size_t k = 0; k < it->size(); ++k) {
    if (!(*it)[k].is_string()) {
      error = std::string(key) + "[" + std::to_string(k) + "]: expected a string";
      return false;
    }
    out.push_back((*it)[k].get<std::string>());
  }
  return true;
}

bool get_spawn(const json& j, core::SpawnPedestrian& c, std::string& error) {
  return get_string(j, "zone", c.zone, error) && get_string(j, "lane", c.lane, error) &&
         get_u8(j, "priority", c.priority, error) &&
         get_u32(j, "timeout_ms", c.timeout_ms, error) && get_strings(j, "route", c.route, error);
}

// An observer point: [x, y] (recorded before observer views existed) or
// [x, y, z, has_heading, heading_rad].
bool get_point(const json& p, core::ObserverPoint& out) {
  if (!p.is_array() || (p.size() != 2 && p.size() != 5) || !p[0].is_number() || !p[1].is_number())
    return false;
  out = core::ObserverPoint{p[0].get<double>(), p[1].get<double>()};
  if (p.size() == 2) return true;
  if (!p[2].is_number() || !p[3].is_boolean() || !p[4].is_number()) return false;
  out.z_m = p[2].get<double>();
  out.has_heading = p[3].get<bool>();
  out.heading_rad = p[4].get<double>();
  return true;
}

bool get_points(const json& j, std::vector<core::ObserverPoint>& out, std::string& error) {
  auto it = j.find("points");
  const char* expected =
      "points: expected an array of [x, y] or [x, y, z, has_heading, heading_rad]";
  if (it == j.end() || !it->is_array()) {
    error = expected;
    return false;
  }
  for (const json& p : *it) {
    if (!get_point(p, out.emplace_back())) {
      error = expected;
      return false;
    }
  }
  return true;
}

json points_json(const std::vector<core::ObserverPoint>& points) {
  json pts = json::array();
  for (const auto& p : points)
    pts.push_back(json::array({p.x_m, p.y_m, p.z_m, p.has_heading, p.heading_rad}));
  return pts;
}

// A lifecycle batch operation: {"kind": "spawn", "spawn": {...}} or
// {"kind": "despawn", "id": [index, generation]}. The field the kind does not
// use is written only when it is not its default, so decoding gives back
// exactly the operation that was encoded.
json op_json(const core::LifecycleOp& op) {
  const bool spawn = op.kind == core::LifecycleOp::Kind::Spawn;
  json j{{"kind", spawn ? "spawn" : "despawn"}};
  const json default_spawn = spawn_json(core::SpawnPedestrian{});
  const json s = spawn_json(op.spawn);
  if (spawn || s != default_spawn) j["spawn"] = s;
  if (!spawn || op.id != core::EntityId{}) j["id"] = id_json(op.id);
  return j;
}

bool get_op(const json& j, core::LifecycleOp& op, std::string& error) {
  auto kind = j.find("kind");
  if (!j.is_object() || kind == j.end() || !kind->is_string() ||
      (*kind != "spawn" && *kind != "despawn")) {
    error = "kind: expected \"spawn\" or \"despawn\"";
    return false;
  }
  op.kind = *kind == "spawn" ? core::LifecycleOp::Kind::Spawn : core::LifecycleOp::Kind::Despawn;
  const bool spawn = op.kind == core::LifecycleOp::Kind::Spawn;
  if (spawn || j.contains("spawn")) {
    auto it = j.find("spawn");
    if (it == j.end() || !it->is_object()) {
      error = "spawn: expected an object";
      return false;
    }
    if (!get_spawn(*it, op.spawn, error)) {
      error = "spawn." + error;
      return false;
    }
  }
  if (!spawn || j.contains("id")) return get_id(j, "id", op.id, error);
  return true;
}

// Border arrivals (a district server's neighbour, command.hpp): one row per
// pedestrian, [index, generation, lane, time_left_s, hops] (doubles are
// written in their shortest exact form, so a recording replays bit for bit).
json border_arrivals_json(const core::BorderArrivals& c) {
  json rows = json::array();
  for (const core::BorderPedestrian& p : c.pedestrians)
    rows.push_back(json::array({p.id.index, p.id.generation, p.lane, p.time_left_s, p.hops}));
  json j{{"from_district", c.from_district}, {"sent_step", c.sent_step}, {"pedestrians", rows}};
  if (!c.returned.empty()) {  // ids going home: written only when there are some
    json ids = json::array();
    for (const core::EntityId id : c.returned) ids.push_back(id_json(id));
    j["returned"] = ids;
  }
  // Vehicles (vehicles/borders.cpp), each list written only when not empty.
  if (!c.vehicles.empty()) {
    json vs = json::array();
    for (const core::BorderVehicle& v : c.vehicles) {
      vs.push_back(
          json::array({v.id.index, v.id.generation, v.garage, v.ordinal, v.prototype, v.route_index,
                       v.lane, v.s_m, v.speed_mps, v.strategy, v.control_policy, v.reason,
                       v.sim_tier, v.leader.index, v.leader.generation, v.steps_advanced,
                       v.last_advance_step, v.waiting_since, v.request_id}));
    }
    j["vehicles"] = vs;
  }
  if (!c.ghosts.empty()) {
    json gs = json::array();
    for (const core::VehicleGhost& g : c.ghosts)
      gs.push_back(
          json::array({g.id.index, g.id.generation, g.garage, g.route_index, g.lane, g.s_m}));
    j["ghosts"] = gs;
  }
  if (!c.returned_vehicles.empty()) {
    json rs = json::array();
    for (const core::ReturnedVehicle& r : c.returned_vehicles)
      rs.push_back(json::array({r.id.index, r.id.generation, r.garage}));
    j["returned_vehicles"] = rs;
  }
  if (!c.crossings.empty()) j["crossings"] = c.crossings;
  return j;
}

// One row of a border list: unsigned integers of at most `max`, doubles and
// strings at the positions given; false when the row does not have them.
struct RowReader {
  const json& row;
  bool ok;
  RowReader(const json& r, std::size_t size) : row(r), ok(r.is_array() && r.size() == size) {}
  // Sets `out` from row[k] when `fits` says the cell holds such a value.
  template <class T, class Fits>
  RowReader& take(std::size_t k, T& out, Fits fits) {
    ok = ok && fits(row[k]);
    if (ok) out = row[k].template get<T>();
    return *this;
  }
  template <class T>
  RowReader& u(std::size_t k, T& out) {
    return take(k, out, [](const json& c) {
      return c.is_number_unsigned() && c.get<std::uint64_t>() <= std::numeric_limits<T>::max();
    });
  }
  RowReader& f(std::size_t k, double& out) {
    return take(k, out, [](const json& c) { return c.is_number(); });
  }
  RowReader& str(std::size_t k, std::string& out) {
    return take(k, out, [](const json& c) { return c.is_string(); });
  }
};

// Reads the optional list `key` of `j`, each row through `read`.
template <class T, class F>
bool get_border_rows(const json& j, const char* key, const char* shape, std::vector<T>& out, F read,
                     std::string& error) {
  const auto it = j.find(key);
  if (it == j.end()) return true;
  if (!it->is_array()) {
    error = std::string(key) + ": expected an array of " + shape;
    return false;
  }
  for (std::size_t k = 0; k < it->size(); ++k) {
    if (!read((*it)[k], out.emplace_back())) {
      error = std::string(key) + "[" + std::to_string(k) + "]: expected " + shape;
      return false;
    }
  }
  return true;
}

bool get_border_vehicle(const json& row, core::BorderVehicle& v) {
  return RowReader(row, 19)
      .u(0, v.id.index)
      .u(1, v.id.generation)
      .u(2, v.garage)
      .u(3, v.ordinal)
      .u(4, v.prototype)
      .u(5, v.route_index)
      .u(6, v.lane)
      .f(7, v.s_m)
      .f(8, v.speed_mps)
      .u(9, v.strategy)
      .u(10, v.control_policy)
      .u(11, v.reason)
      .u(12, v.sim_tier)
      .u(13, v.leader.index)
      .u(14, v.leader.generation)
      .u(15, v.steps_advanced)
      .u(16, v.last_advance_step)
      .u(17, v.waiting_since)
      .str(18, v.request_id)
      .ok;
}

bool get_vehicle_ghost(const json& row, core::VehicleGhost& g) {
  return RowReader(row, 6)
      .u(0, g.id.index)
      .u(1, g.id.generation)
      .u(2, g.garage)
      .u(3, g.route_index)
      .u(4, g.lane)
      .f(5, g.s_m)
      .ok;
}

bool get_returned_vehicle(const json& row, core::ReturnedVehicle& r) {
  return RowReader(row, 3).u(0, r.id.index).u(1, r.id.generation).u(2, r.garage).ok;
}

bool get_border_pedestrian(const json& row, core::BorderPedestrian& p) {
  const auto u32 = [&](std::size_t k, std::uint32_t& out) {
    if (!row[k].is_number_unsigned() || row[k].get<std::uint64_t>() > UINT32_MAX) return false;
    out = row[k].get<std::uint32_t>();
    return true;
  };
  if (!row.is_array() || row.size() != 5 || !row[3].is_number()) return false;
  p.time_left_s = row[3].get<double>();
  return u32(0, p.id.index) && u32(1, p.id.generation) && u32(2, p.lane) && u32(4, p.hops);
}

std::optional<core::WorldCommand> decode_border_arrivals(const json& j, std::string& error) {
  core::BorderArrivals c;
  if (!get_u32(j, "from_district", c.from_district, error) ||
      !get_u64(j, "sent_step", c.sent_step, error)) {
    return std::nullopt;
  }
  auto it = j.find("pedestrians");
  if (it == j.end() || !it->is_array()) {
    error = "pedestrians: expected an array";
    return std::nullopt;
  }
  for (std::size_t k = 0; k < it->size(); ++k) {
    if (!get_border_pedestrian((*it)[k], c.pedestrians.emplace_back())) {
      error = "pedestrians[" + std::to_string(k) +
              "]: expected [index, generation, lane, time_left_s, hops]";
      return std::nullopt;
    }
  }
  if (auto back = j.find("returned"); back != j.end()) {
    if (!back->is_array()) {
      error = "returned: expected an array of [index, generation]";
      return std::nullopt;
    }
    for (std::size_t k = 0; k < back->size(); ++k) {
      const json one{{"id", (*back)[k]}};
      if (!get_id(one, "id", c.returned.emplace_back(), error)) {
        error = "returned[" + std::to_string(k) + "]: expected [index, generation]";
        return std::nullopt;
      }
    }
  }
  if (!get_border_rows(j, "vehicles",
                       "[index, generation, garage, ordinal, prototype, route_index, lane, s_m, "
                       "speed_mps, strategy, control_policy, reason, sim_tier, leader_index, "
                       "leader_generation, steps_advanced, last_advance_step, waiting_since, "
                       "request_id]",
                       c.vehicles, get_border_vehicle, error) ||
      !get_border_rows(j, "ghosts", "[index, generation, garage, route_index, lane, s_m]", c.ghosts,
                       get_vehicle_ghost, error) ||
      !get_border_rows(j, "returned_vehicles", "[index, generation, garage]", c.returned_vehicles,
                       get_returned_vehicle, error) ||
      !get_border_rows(
          j, "crossings", "a lane index", c.crossings,
          [](const json& v, std::uint32_t& lane) {
            if (!v.is_number_unsigned() || v.get<std::uint64_t>() > UINT32_MAX) return false;
            lane = v.get<std::uint32_t>();
            return true;
          },
          error)) {
    return std::nullopt;
  }
  return c;
}

}  // namespace

std::string command_args_json(const core::WorldCommand& command) {
  json j =
      std::visit(Overloaded{[](const core::SetPedestrianTarget& c) {
                              return json{{"count", c.count}};
                            },
                            [](const core::DespawnEntity& c) {
                              return json{{"id", id_json(c.id)}};
                            },
                            [](const core::GarageRequest& c) {
                              return json{{"garage", c.garage},
                                          {"request_id", c.request_id},
                                          {"prototype", c.prototype},
                                          {"lane", c.lane},
                                          {"priority", c.priority}};
                            },
                            [](const core::CancelGarageRequest& c) {
                              return json{{"garage", c.garage}, {"request_id", c.request_id}};
                            },
                            [](const core::SetVehicleStrategy& c) {
                              return json{{"id", id_json(c.id)}, {"strategy", c.strategy}};
                            },
                            [](const core::SetObservers& c) {
                              json o{{"points", points_json(c.points)}};
                              if (!c.follow.is_null()) o["follow"] = id_json(c.follow);
                              return o;
                            },
                            [](const core::SetClientObservers& c) {
                              return json{{"points", points_json(c.points)}};
                            },
                            [](const core::SetHour& c) {
                              return json{{"hour", c.hour}};
                            },
                            [](const core::SetTimeScale& c) {
                              return json{{"scale", c.scale}};
                            },
                            [](const core::ForceFull& c) {
                              return json{{"id", id_json(c.id)}, {"on", c.on}};
                            },
                            [](const core::SetAdmissionMask& c) {
                              return json{{"id", id_json(c.id)}, {"masked", c.masked}};
                            },
                            [](const core::SetPreventionLevel& c) {
                              return json{{"level", c.level}};
                            },
                            [](const core::KillPedestrian& c) {
                              return json{{"id", id_json(c.id)}};
                            },
                            [](const core::SetLaneClosed& c) {
                              // close_lane / open_lane (the kind holds the flag)
                              return json{{"lane", c.lane}, {"lane_index", c.lane_index}};
                            },
                            [](const core::SpawnPedestrian& c) { return spawn_json(c); },
                            [](const core::CancelSpawn& c) {
                              return json{{"handle", c.handle}};
                            },
                            [](const core::SetLifecycle& c) {
                              return json{{"growth_quota", c.growth_quota},
                                          {"recycle_quota", c.recycle_quota},
                                          {"interval_ms", c.interval_ms},
                                          {"migration_budget", c.migration_budget}};
                            },
                            [](const core::BorderArrivals& c) { return border_arrivals_json(c); },
                            [](const core::LifecycleBatch& c) {
                              json ops = json::array();
                              for (const core::LifecycleOp& op : c.ops) ops.push_back(op_json(op));
                              return json{{"ops", ops}};
                            }},
                 command);
  return j.dump();
}

namespace {

bool is_small_command(const std::string& kind) {
  return kind == "force_full" || kind == "set_admission_mask" || kind == "kill_pedestrian" ||
         kind == "set_prevention_level" || kind == "close_lane" || kind == "open_lane" ||
         kind == "set_hour" || kind == "set_time_scale";
}

// The commands that name one entity and one flag: force_full {id, on} and
// set_admission_mask {id, masked}; and the prevention commands,
// kill_pedestrian {id} and set_prevention_level {level}; close_lane and
// open_lane {lane, lane_index}; set_hour {hour} and set_time_scale {scale}.
std::optional<core::WorldCommand> decode_small_command(const std::string& kind, const json& j,
                                                       std::string& error) {
  if (kind == "set_hour") {
    auto it = j.find("hour");
    if (it == j.end() || !it->is_number()) {
      error = "hour: expected a number";
      return std::nullopt;
    }
    return core::SetHour{it->get<double>()};
  }
  if (kind == "set_time_scale") {
    core::SetTimeScale c;
    if (!get_u32(j, "scale", c.scale, error)) return std::nullopt;
    return c;
  }
  if (kind == "close_lane" || kind == "open_lane") {
    core::SetLaneClosed c;
    c.closed = kind == "close_lane";
    if (!get_string(j, "lane", c.lane, error) || !get_u32(j, "lane_index", c.lane_index, error))
      return std::nullopt;
    return c;
  }
  if (kind == "set_prevention_level") {
    core::SetPreventionLevel c;
    if (!get_u32(j, "level", c.level, error)) return std::nullopt;
    return c;
  }
  const std::string flag = kind == "force_full" ? "on" : "masked";
  core::EntityId id;
  if (!get_id(j, "id", id, error)) return std::nullopt;
  if (kind == "kill_pedestrian") return core::KillPedestrian{id};
  auto it = j.find(flag);
  if (it == j.end() || !it->is_boolean()) {
    error = flag + ": expected a boolean";
    return std::nullopt;
  }
  if (kind == "force_full") return core::ForceFull{id, it->get<bool>()};
  return core::SetAdmissionMask{id, it->get<bool>()};
}

// The codec's helpers report the first bad field through `error` (each
// `get_*` names its key); decode_command turns it into the Status.
std::optional<core::WorldCommand> decode_fields(const std::string& kind,
                                                const std::string& args_json, std::string& error) {
  const json j = json::parse(args_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    error = "args: not a JSON object";
    return std::nullopt;
  }
  if (kind == "set_pedestrian_target") {
    core::SetPedestrianTarget c;
    if (!get_u32(j, "count", c.count, error)) return std::nullopt;
    return c;
  }
  if (kind == "despawn_entity") {
    core::DespawnEntity c;
    if (!get_id(j, "id", c.id, error)) return std::nullopt;
    return c;
  }
  if (kind == "garage_request") {
    core::GarageRequest c;
    if (!get_string(j, "garage", c.garage, error) ||
        !get_string(j, "request_id", c.request_id, error) ||
        !get_string(j, "prototype", c.prototype, error) || !get_string(j, "lane", c.lane, error)) {
      return std::nullopt;
    }
    auto it = j.find("priority");
    if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < INT32_MIN ||
        it->get<std::int64_t>() > INT32_MAX) {
      error = "priority: expected a 32-bit integer";
      return std::nullopt;
    }
    c.priority = it->get<std::int32_t>();
    return c;
  }
  if (kind == "cancel_garage_request") {
    core::CancelGarageRequest c;
    if (!get_string(j, "garage", c.garage, error) ||
        !get_string(j, "request_id", c.request_id, error)) {
      return std::nullopt;
    }
    return c;
  }
  if (kind == "set_vehicle_strategy") {
    core::SetVehicleStrategy c;
    std::uint32_t s = 0;
    if (!get_id(j, "id", c.id, error) || !get_u32(j, "strategy", s, error)) return std::nullopt;
    if (s > 255) {
      error = "strategy: out of range";
      return std::nullopt;
    }
    c.strategy = static_cast<std::uint8_t>(s);
    return c;
  }
  if (kind == "set_observers") {
    core::SetObservers c;
    if (!get_points(j, c.points, error)) return std::nullopt;
    if (j.contains("follow") && !get_id(j, "follow", c.follow, error)) return std::nullopt;
    return c;
  }
  if (kind == "set_client_observers") {
    core::SetClientObservers c;
    if (!get_points(j, c.points, error)) return std::nullopt;
    return c;
  }
  if (is_small_command(kind)) return decode_small_command(kind, j, error);
  if (kind == "spawn_pedestrian") {
    core::SpawnPedestrian c;
    if (!get_spawn(j, c, error)) return std::nullopt;
    return c;
  }
  if (kind == "border_arrivals") return decode_border_arrivals(j, error);
  if (kind == "cancel_spawn") {
    core::CancelSpawn c;
    if (!get_u64(j, "handle", c.handle, error)) return std::nullopt;
    return c;
  }
  if (kind == "report_attached") {
    // Refused, not ignored: ReportAttached stopped being a world command when
    // the representation stages left the simulation (spawn_pipeline.hpp). A
    // recording (or checkpoint inbox) holding one was made by an older build
    // whose spawn handles went through Attached inside the digest, so it
    // cannot be re-simulated bit for bit; saying so beats a divergence later.
    error =
        "kind: report_attached is no longer a world command (spawn representation stages left the "
        "simulation); this was recorded by an older build and cannot be re-simulated exactly";
    return std::nullopt;
  }
  if (kind == "set_lifecycle") {
    core::SetLifecycle c;
    if (!get_u32(j, "growth_quota", c.growth_quota, error) ||
        !get_u32(j, "recycle_quota", c.recycle_quota, error) ||
        !get_u32(j, "interval_ms", c.interval_ms, error) ||
        !get_u32(j, "migration_budget", c.migration_budget, error)) {
      return std::nullopt;
    }
    return c;
  }
  if (kind == "lifecycle_batch") {
    core::LifecycleBatch c;
    auto it = j.find("ops");
    if (it == j.end() || !it->is_array()) {
      error = "ops: expected an array";
      return std::nullopt;
    }
    for (std::size_t k = 0; k < it->size(); ++k) {
      if (!get_op((*it)[k], c.ops.emplace_back(), error)) {
        error = "ops[" + std::to_string(k) + "]." + error;
        return std::nullopt;
      }
    }
    return c;
  }
  error = "kind: unknown command kind '" + kind + "'";
  return std::nullopt;
}

}  // namespace

core::StatusOr<core::WorldCommand> decode_command(const std::string& kind,
                                                  const std::string& args_json) {
  std::string error;
  std::optional<core::WorldCommand> decoded = decode_fields(kind, args_json, error);
  if (!decoded) return core::Status::data_loss(error.empty() ? "args: not decodable" : error);
  return std::move(*decoded);
}

}  // namespace bustle::persist
