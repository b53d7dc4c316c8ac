// Completeness guard: proves that a checkpoint holds the whole authoritative
// state. For a scenario and a command script it runs the world uninterrupted
// and, for each k, runs to step k, captures a checkpoint (optionally sending
// it through a transport such as a SQLite round-trip), restores it into a new
// world and continues; every later digest must equal the uninterrupted run.
// State added to the World without a checkpoint field makes this fail.
#pragma once

#include <catch2/catch.hpp>
#include <functional>
#include <vector>

#include "bustle/core/world.hpp"

namespace bustle::test {

struct ScriptedCommand {
  std::uint64_t before_step;  // submitted when step_index() == before_step, before stepping
  core::WorldCommand command;
};

using CheckpointTransport = std::function<core::WorldCheckpoint(const core::WorldCheckpoint&)>;

inline void submit_due(core::World& w, const std::vector<ScriptedCommand>& script,
                       std::uint32_t& request) {
  for (const ScriptedCommand& c : script) {
    if (c.before_step == w.step_index()) {
      REQUIRE(w.submit(core::CommandEnvelope{core::CommandOrigin{1, ++request}, c.command}) ==
              core::SubmitStatus::Queued);
    }
  }
}

// Returns the digest after every step 1..steps.
inline std::vector<std::uint64_t> digest_chain(const core::Scenario& scenario, std::uint64_t seed,
                                               const std::vector<ScriptedCommand>& script,
                                               std::uint64_t steps) {
  auto created = core::World::create(scenario, seed);
  REQUIRE(created.world);
  core::World& w = *created.world;
  std::vector<std::uint64_t> chain;
  std::uint32_t request = 0;
  while (w.step_index() < steps) {
    submit_due(w, script, request);
    w.step();
    chain.push_back(w.digest());
  }
  return chain;
}

inline void check_checkpoint_completeness(const core::Scenario& scenario, std::uint64_t seed,
                                          const std::vector<ScriptedCommand>& script,
                                          std::uint64_t steps, const std::vector<std::uint64_t>& ks,
                                          const CheckpointTransport& transport = {}) {
  const std::vector<std::uint64_t> expected = digest_chain(scenario, seed, script, steps);
  for (const std::uint64_t k : ks) {
    INFO("checkpoint at step " << k);
    auto created = core::World::create(scenario, seed);
    REQUIRE(created.world);
    core::World& w = *created.world;
    std::uint32_t request = 0;
    while (w.step_index() < k) {
      submit_due(w, script, request);
      w.step();
    }
    // Commands due before step k+1 are submitted *before* the capture, so the
    // checkpoint must carry a non-empty inbox whenever the script has them.
    submit_due(w, script, request);
    core::WorldCheckpoint cp = w.capture();
    if (transport) cp = transport(cp);
    auto restored = core::World::restore(scenario, cp);
    if (!restored.errors.empty())
      FAIL(restored.errors[0].path << ": " << restored.errors[0].message);
    REQUIRE(restored.world);
    core::World& r = *restored.world;
    REQUIRE(r.step_index() == k);
    // The restored world already holds the commands; continue with the rest.
    std::uint32_t request2 = request;
    while (r.step_index() < steps) {
      r.step();
      REQUIRE(r.digest() == expected[r.step_index() - 1]);
      if (r.step_index() < steps) submit_due(r, script, request2);
    }
  }
}

}  // namespace bustle::test
