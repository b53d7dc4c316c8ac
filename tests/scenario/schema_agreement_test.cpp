// The scenario loader (server/scenario) and schema/scenario.schema.json must
// describe the same fields: a field the schema documents but the loader
// refuses, or one the loader reads but the schema omits, fails here.
//
// The loader is asked, not parsed: for every object the schema describes
// (following $ref, properties and array items), a copy of the default city is
// given that object (created when the city lacks it) with one extra field,
// and the loader's "unknown field (allowed here: a, b, ...)" error at that
// path lists exactly what it accepts there. That list must equal the schema's
// "properties". Likewise, the fields the loader calls required in an empty
// object must be the schema's "required". Because every object the loader
// reads is a field of an object it reads, a field added to either side alone
// shows up at its parent.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bustle/scenario/scenario_loader.hpp"
#include "loader_test_support.hpp"

using nlohmann::json;

namespace {

constexpr const char* kProbe = "bustle_schema_probe";

using bustle::scenario::test::read_json;

// One object the schema describes: where the loader names it ("lanes[0]"),
// where it sits in a document, and its schema node ($ref resolved).
struct ObjectSite {
  std::string loader_path;
  json::json_pointer pointer;
  json schema;
};

const json& resolve(const json& root, const json& node) {
  if (!node.contains("$ref")) return node;
  const std::string ref = node["$ref"].get<std::string>();
  REQUIRE(ref.rfind("#/", 0) == 0);
  return root.at(json::json_pointer(ref.substr(1)));
}

void collect_sites(const json& root, const json& node_or_ref, const std::string& loader_path,
                   const json::json_pointer& pointer, std::vector<ObjectSite>& out) {
  const json& node = resolve(root, node_or_ref);
  if (node.contains("properties")) {
    out.push_back({loader_path, pointer, node});
    for (const auto& [key, child] : node["properties"].items()) {
      collect_sites(root, child, loader_path.empty() ? key : loader_path + "." + key, pointer / key,
                    out);
    }
  }
  if (node.contains("items") && node["items"].is_object()) {
    collect_sites(root, node["items"], loader_path + "[0]", pointer / 0, out);
  }
}

// Makes `pointer` name an object in `doc`, creating what is missing on the way
// (an object, or an array holding one object where the next step is [0]).
void ensure_object(json& doc, const json::json_pointer& pointer) {
  json::json_pointer at;
  std::vector<std::string> steps;
  for (json::json_pointer p = pointer; !p.empty(); p = p.parent_pointer())
    steps.push_back(p.back());
  std::reverse(steps.begin(), steps.end());
  for (const std::string& step : steps) {
    json& parent = doc[at];
    const bool index = !step.empty() && std::all_of(step.begin(), step.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) != 0;
    });
    if (index) {
      if (!parent.is_array()) parent = json::array();
      while (parent.size() <= std::stoul(step)) parent.push_back(json::object());
    } else if (!parent.contains(step)) {
      parent[step] = json::object();
    }
    at /= step;
  }
  if (!doc[pointer].is_object()) doc[pointer] = json::object();
}

std::set<std::string> schema_fields(const json& node, const char* member) {
  std::set<std::string> fields;
  if (!node.contains(member)) return fields;
  if (node[member].is_object()) {
    for (const auto& [key, value] : node[member].items()) fields.insert(key);
  } else {
    for (const auto& key : node[member]) fields.insert(key.get<std::string>());
  }
  return fields;
}

std::string listed(const std::set<std::string>& fields) {
  std::string out;
  for (const std::string& f : fields) out += (out.empty() ? "" : ", ") + f;
  return out.empty() ? "(none)" : out;
}

// What the loader accepts at `site`: the list in its unknown-field error for
// a probe field placed there. Empty optional: the loader said nothing there.
std::optional<std::set<std::string>> loader_fields(const json& city, const ObjectSite& site) {
  json doc = city;
  ensure_object(doc, site.pointer);
  doc[site.pointer][kProbe] = 0;
  const auto result = bustle::scenario::load_scenario_text(doc.dump(), "probe.json");
  const std::string probe_path =
      site.loader_path.empty() ? kProbe : site.loader_path + "." + kProbe;
  const std::string prefix = "unknown field (allowed here: ";
  for (const auto& e : result.errors) {
    if (e.path != probe_path || e.message.rfind(prefix, 0) != 0) continue;
    std::set<std::string> fields;
    std::string list = e.message.substr(prefix.size());
    if (!list.empty() && list.back() == ')') list.pop_back();
    std::istringstream in(list);
    for (std::string field; std::getline(in, field, ',');) {
      field.erase(0, field.find_first_not_of(' '));
      if (!field.empty()) fields.insert(field);
    }
    return fields;
  }
  return std::nullopt;
}

// The fields the loader calls required when `site` is an empty object.
std::set<std::string> loader_required(const json& city, const ObjectSite& site) {
  json doc = city;
  ensure_object(doc, site.pointer);
  doc[site.pointer] = json::object();
  const auto result = bustle::scenario::load_scenario_text(doc.dump(), "probe.json");
  const std::string parent = site.loader_path.empty() ? "" : site.loader_path + ".";
  std::set<std::string> fields;
  for (const auto& e : result.errors) {
    if (e.message != "is required" || e.path.rfind(parent, 0) != 0) continue;
    const std::string field = e.path.substr(parent.size());
    if (field.find_first_of(".[") == std::string::npos) fields.insert(field);
  }
  return fields;
}

std::vector<ObjectSite> schema_sites(const json& schema) {
  std::vector<ObjectSite> sites;
  collect_sites(schema, schema, "", json::json_pointer(), sites);
  return sites;
}

}  // namespace

TEST_CASE("the scenario loader accepts exactly the fields the scenario schema documents") {
  const json schema = read_json(std::string(BUSTLE_SOURCE_DIR) + "/schema/scenario.schema.json");
  const json city = read_json(std::string(BUSTLE_SOURCE_DIR) + "/configs/default.city.json");
  const std::vector<ObjectSite> sites = schema_sites(schema);
  // The root, pedestrians, lanes[0], garages[0], ...: every object of the
  // schema is visited (a walk that found few would prove little).
  REQUIRE(sites.size() >= 20);
  std::string disagreements;
  for (const ObjectSite& site : sites) {
    const std::string where = site.loader_path.empty() ? "(root)" : site.loader_path;
    const std::set<std::string> documented = schema_fields(site.schema, "properties");
    const auto accepted = loader_fields(city, site);
    if (!accepted) {
      disagreements += where + ": the schema describes an object here, the loader reads none\n";
      continue;
    }
    if (*accepted != documented) {
      std::set<std::string> only_schema, only_loader;
      std::set_difference(documented.begin(), documented.end(), accepted->begin(), accepted->end(),
                          std::inserter(only_schema, only_schema.end()));
      std::set_difference(accepted->begin(), accepted->end(), documented.begin(), documented.end(),
                          std::inserter(only_loader, only_loader.end()));
      disagreements += where + ": only in the schema: " + listed(only_schema) +
                       "; only in the loader: " + listed(only_loader) + "\n";
    }
  }
  INFO(disagreements);
  CHECK(disagreements.empty());
}

TEST_CASE("the scenario loader requires exactly the fields the scenario schema requires") {
  const json schema = read_json(std::string(BUSTLE_SOURCE_DIR) + "/schema/scenario.schema.json");
  const json city = read_json(std::string(BUSTLE_SOURCE_DIR) + "/configs/default.city.json");
  std::string disagreements;
  for (const ObjectSite& site : schema_sites(schema)) {
    const std::set<std::string> documented = schema_fields(site.schema, "required");
    const std::set<std::string> required = loader_required(city, site);
    if (required != documented) {
      disagreements += (site.loader_path.empty() ? "(root)" : site.loader_path) +
                       ": schema requires " + listed(documented) + "; loader requires " +
                       listed(required) + "\n";
    }
  }
  INFO(disagreements);
  CHECK(disagreements.empty());
}
