#include "bustle/scenario/scenario_loader.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace bustle::scenario {
namespace {

using nlohmann::json;

const char* type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a non-integer number";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    default: return "an unsupported value";
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
  if (!r.expect_object(j, path, {"id", "kind", "points", "speed_mps_limit", "successors"})) return;
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

  const std::string pts_path = Reader::join(path, "points");
  if (auto it = j.find("points"); it == j.end()) {
    r.error(pts_path, "is required");
  } else if (!it->is_array()) {
    r.error(pts_path, std::string("must be an array of [x, y] pairs, got ") + type_name(*it));
  } else {
    for (std::size_t k = 0; k < it->size(); ++k) {
      const json& p = (*it)[k];
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) {
        r.error(Reader::index(pts_path, k), "must be an [x, y] pair of numbers (metres)");
        continue;
      }
      lane.points.push_back({p[0].get<double>(), p[1].get<double>()});
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

}  // namespace

std::string LoadError::to_string() const {
  return path.empty() ? source + ": " + message : source + ": " + path + ": " + message;
}

LoadResult load_scenario_text(std::string_view text, std::string_view source) {
  LoadResult result;
  result.text = std::string(text);
  const std::string src(source);
  json root;
  try {
    root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/true,
                       /*ignore_comments=*/false);
  } catch (const json::parse_error& e) {
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    const auto [line, col] = line_col(text, at);
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line..";
    // keep only the human part after the last ": ".
    if (auto pos = what.rfind(": "); pos != std::string::npos) what = what.substr(pos + 2);
    result.errors.push_back({src, "", "invalid JSON at line " + std::to_string(line) +
                                          ", column " + std::to_string(col) + ": " + what});
    return result;
  }

  Reader r(src);
  core::Scenario s;
  if (r.expect_object(root, "", {"$schema", "id", "name", "step_us", "entity_capacity",
                                 "command_inbox_capacity", "pedestrians", "lanes"})) {
    r.read_string(root, "", "id", s.id, true);
    r.read_string(root, "", "name", s.name);
    r.read_uint(root, "", "step_us", s.step_us);
    r.read_uint(root, "", "entity_capacity", s.entity_capacity);
    r.read_uint(root, "", "command_inbox_capacity", s.command_inbox_capacity);
    if (auto it = root.find("pedestrians"); it != root.end()) {
      if (r.expect_object(*it, "pedestrians", {"count", "spawn_per_step_max"})) {
        r.read_uint(*it, "pedestrians", "count", s.pedestrians.count);
        r.read_uint(*it, "pedestrians", "spawn_per_step_max", s.pedestrians.spawn_per_step_max);
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
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoadResult result;
    result.errors.push_back({path, "", std::string("cannot open scenario file: ") +
                                           std::strerror(errno)});
    return result;
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) {
    LoadResult result;
    result.errors.push_back({path, "", "read error"});
    return result;
  }
  return load_scenario_text(buf.str(), path);
}

std::string effective_scenario_text(const std::string& text, std::uint32_t step_us) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return text;
  const std::uint32_t current = doc.contains("step_us") && doc["step_us"].is_number_unsigned()
                                    ? doc["step_us"].get<std::uint32_t>()
                                    : core::Scenario{}.step_us;
  if (current == step_us) return text;
  doc["step_us"] = step_us;
  return doc.dump(2) + "\n";
}

LoadResult load_embedded_default() {
  return load_scenario_text(embedded_default_scenario_text(), "<embedded default>");
}

}  // namespace bustle::scenario
