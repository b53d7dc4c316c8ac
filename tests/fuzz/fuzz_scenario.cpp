// Fuzz target: scenario JSON loading (server/scenario), the path bustle-server
// takes for --config and bustle-replay for a recording's scenario: strict
// typing, then core::validate_scenario. A scenario that loads must also build
// a World (World::create validates again and must agree) and survive a few
// steps, since that is what the server does next.
//
// The input is the JSON text. Worlds with an entity capacity above
// kWorldCapacityMax are loaded but not built: allocating 2^24 slots per input
// would make the target too slow to explore anything (the limit is the
// harness's, not the loader's).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"

namespace {
constexpr std::uint32_t kWorldCapacityMax = 1u << 16;
constexpr int kSteps = 3;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  bustle::scenario::LoadResult loaded =
      bustle::scenario::load_scenario_text(text, "fuzz.city.json");
  if (loaded.text != text) std::abort();  // the exact text is kept for snapshots
  if (!loaded.ok()) {
    if (loaded.scenario.has_value()) std::abort();
    for (const auto& e : loaded.errors) {
      if (e.message.empty() || e.to_string().rfind("fuzz.city.json: ", 0) != 0) std::abort();
    }
    return 0;
  }
  if (!loaded.scenario.has_value()) std::abort();
  const bustle::core::Scenario& scenario = *loaded.scenario;
  // Without a --rate override the text run is the text given (snapshots and
  // recordings compare it byte for byte).
  if (bustle::scenario::effective_scenario_text(loaded.text, scenario.step_us) != loaded.text)
    std::abort();
  if (scenario.entity_capacity > kWorldCapacityMax) return 0;
  bustle::core::World::CreateResult created = bustle::core::World::create(scenario, 1);
  // The loader ran validate_scenario already; create must not find more.
  if (!created.world || !created.errors.empty()) std::abort();
  for (int i = 0; i < kSteps; ++i) created.world->step();
  return 0;
}
