// Phase 8 of World::step(): representation requests for registered spawns.
#include "bustle/core/world.hpp"

namespace bustle::core {

// RepresentationRequested ends the core's part of the handle (see
// spawn_pipeline.hpp): it moves to recent at once, and the representation
// stages (Attached, ReadyForGameplay) are tracked outside the simulation.
void World::phase_representation_requests() {
  bool ended = false;
  for (SpawnHandleState& h : spawn_.live) {
    if (h.state == SpawnState::Registered && h.state_step < step_index_) {
      set_spawn_state(h, SpawnState::RepresentationRequested);
      ended = true;
    }
  }
  if (ended) retire_terminal_spawns();
}

}  // namespace bustle::core
