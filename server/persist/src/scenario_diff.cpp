// Why a snapshot's scenario is not the running one (scenario_diff.hpp): the
// first JSON field that differs, named with both values.
#include "bustle/persist/scenario_diff.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "bustle/core/scenario.hpp"

namespace bustle::persist {
namespace {

// Document order, so "first" means first in the file, not alphabetical.
using nlohmann::ordered_json;

constexpr std::size_t kValueTextMax = 48;

std::string value_text(const ordered_json* v) {
  if (v == nullptr) return "absent";
  std::string text = v->dump();
  if (text.size() > kValueTextMax) text = text.substr(0, kValueTextMax - 3) + "...";
  return text;
}

std::string both(const std::string& path, const ordered_json* snapshot,
                 const ordered_json* running) {
  return (path.empty() ? std::string("the document") : path) + " is " + value_text(snapshot) +
         " in the snapshot vs " + value_text(running) + " running";
}

// The first difference under `path`, or nothing when the values are equal.
std::optional<std::string> first_difference(const ordered_json& snapshot,
                                            const ordered_json& running, const std::string& path) {
  if (snapshot == running) return std::nullopt;  // ordered_json: also compares member order
  if (snapshot.is_object() && running.is_object()) {
    const auto field = [&](const std::string& key) {
      return path.empty() ? key : path + "." + key;
    };
    for (const auto& [key, value] : snapshot.items()) {
      const auto other = running.find(key);
      if (other == running.end()) return both(field(key), &value, nullptr);
      if (auto d = first_difference(value, *other, field(key))) return d;
    }
    for (const auto& [key, value] : running.items()) {
      if (!snapshot.contains(key)) return both(field(key), nullptr, &value);
    }
    return std::nullopt;  // the same members in another order
  }
  if (snapshot.is_array() && running.is_array()) {
    const std::size_t common = std::min(snapshot.size(), running.size());
    for (std::size_t k = 0; k < common; ++k) {
      if (auto d = first_difference(snapshot[k], running[k], path + "[" + std::to_string(k) + "]"))
        return d;
    }
    if (snapshot.size() == running.size()) return std::nullopt;
    return path + " has " + std::to_string(snapshot.size()) + " elements in the snapshot vs " +
           std::to_string(running.size()) + " running";
  }
  return both(path, &snapshot, &running);
}

// step_us as run: absent means the scenario default.
std::optional<std::uint64_t> step_us(const ordered_json& doc) {
  const auto it = doc.find("step_us");
  if (it == doc.end()) return core::Scenario{}.step_us;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  return std::nullopt;
}

}  // namespace

std::string describe_scenario_difference(const std::string& snapshot_json,
                                         const std::string& running_json) {
  const ordered_json snapshot =
      ordered_json::parse(snapshot_json, nullptr, /*allow_exceptions=*/false);
  const ordered_json running =
      ordered_json::parse(running_json, nullptr, /*allow_exceptions=*/false);
  if (snapshot.is_discarded()) return "the snapshot's scenario JSON does not parse";
  if (running.is_discarded()) return "the running scenario's JSON does not parse";
  if (snapshot.is_object() && running.is_object()) {
    const auto id = [](const ordered_json& doc) -> const ordered_json* {
      const auto it = doc.find("id");
      return it == doc.end() ? nullptr : &*it;
    };
    const ordered_json* snapshot_id = id(snapshot);
    const ordered_json* running_id = id(running);
    if ((snapshot_id == nullptr) != (running_id == nullptr) ||
        (snapshot_id != nullptr && *snapshot_id != *running_id)) {
      return "scenario id " + value_text(snapshot_id) + " in the snapshot vs " +
             value_text(running_id) + " running";
    }
    const auto snapshot_step = step_us(snapshot);
    const auto running_step = step_us(running);
    if (snapshot_step && running_step && *snapshot_step != *running_step) {
      return "step length " + std::to_string(*snapshot_step) + " us in the snapshot vs " +
             std::to_string(*running_step) +
             " us running (a different --rate, or step_us in the file)";
    }
  }
  // A step length equal to the default, written in one text and omitted in
  // the other, is no difference.
  ordered_json snapshot_norm = snapshot;
  ordered_json running_norm = running;
  for (ordered_json* doc : {&snapshot_norm, &running_norm}) {
    if (doc->is_object() && step_us(*doc) == core::Scenario{}.step_us) doc->erase("step_us");
  }
  if (auto d = first_difference(snapshot_norm, running_norm, "")) return *d;
  return "the scenario texts differ only in formatting";
}

}  // namespace bustle::persist
