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

json id_json(core::EntityId id) { return json::array({id.index, id.generation}); }

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

bool get_id(const json& j, const char* key, core::EntityId& out, std::string& error) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number_unsigned() ||
      !(*it)[1].is_number_unsigned()) {
    error = std::string(key) + ": expected [index, generation]";
    return false;
  }
  out = core::EntityId{(*it)[0].get<std::uint32_t>(), (*it)[1].get<std::uint32_t>()};
  return true;
}

}  // namespace

std::string command_args_json(const core::WorldCommand& command) {
  json j = std::visit(
      Overloaded{
          [](const core::SetPedestrianTarget& c) { return json{{"count", c.count}}; },
          [](const core::DespawnEntity& c) { return json{{"id", id_json(c.id)}}; },
          [](const core::GarageRequest& c) {
            return json{{"garage", c.garage}, {"request_id", c.request_id}, {"prototype", c.prototype},
                        {"lane", c.lane}, {"priority", c.priority}};
          },
          [](const core::CancelGarageRequest& c) { return json{{"garage", c.garage}, {"request_id", c.request_id}}; },
          [](const core::SetVehicleStrategy& c) { return json{{"id", id_json(c.id)}, {"strategy", c.strategy}}; },
          [](const core::SetObservers& c) {
            json pts = json::array();
            for (const auto& p : c.points) pts.push_back(json::array({p.x_m, p.y_m}));
            return json{{"points", pts}};
          },
          [](const core::SetHour& c) { return json{{"hour", c.hour}}; },
          [](const core::SetTimeScale& c) { return json{{"scale", c.scale}}; },
          [](const core::ForceFull& c) { return json{{"id", id_json(c.id)}, {"on", c.on}}; }},
      command);
  return j.dump();
}

std::optional<core::WorldCommand> decode_command(const std::string& kind, const std::string& args_json,
                                                 std::string& error) {
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
    if (!get_string(j, "garage", c.garage, error) || !get_string(j, "request_id", c.request_id, error) ||
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
    if (!get_string(j, "garage", c.garage, error) || !get_string(j, "request_id", c.request_id, error)) {
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
    auto it = j.find("points");
    if (it == j.end() || !it->is_array()) {
      error = "points: expected an array of [x, y]";
      return std::nullopt;
    }
    for (const json& p : *it) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) {
        error = "points: expected an array of [x, y]";
        return std::nullopt;
      }
      c.points.push_back({p[0].get<double>(), p[1].get<double>()});
    }
    return c;
  }
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
  if (kind == "force_full") {
    core::ForceFull c;
    if (!get_id(j, "id", c.id, error)) return std::nullopt;
    auto it = j.find("on");
    if (it == j.end() || !it->is_boolean()) {
      error = "on: expected a boolean";
      return std::nullopt;
    }
    c.on = it->get<bool>();
    return c;
  }
  error = "kind: unknown command kind '" + kind + "'";
  return std::nullopt;
}

}  // namespace bustle::persist
