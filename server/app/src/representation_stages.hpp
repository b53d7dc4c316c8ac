// The representation stages of spawn handles (spawn_pipeline.hpp), on the
// representation axis: Attached and ReadyForGameplay, derived from client
// leases (or the ReportAttached shorthand), kept here beside the sim thread
// and never in the World, its digest or a checkpoint.
//
// The core's part of a handle ends at RepresentationRequested. From there,
// per handle (sim thread, between steps):
//   RepresentationRequested --(attach: any client's lease for the entity is
//       Assigned / Preserved with a representation, or ReportAttached)--> Attached
//   Attached --(after the next step, entity still walking)--> ReadyForGameplay
//   either --(after a step in which the entity stopped walking)--> Failed(EntityGone)
// A lease that arrives while the handle is still Registered (a client may
// draw the entity as soon as it walks) is remembered and attaches the handle
// when it reaches RepresentationRequested.
//
// After a restore or load, reset() starts over from the new world: handles
// whose core part ended at RepresentationRequested and whose entity still
// walks wait again; clients get a baseline and re-report their leases.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "bustle/core/world.hpp"

namespace bustle::app {

class RepresentationStages {
 public:
  struct Counters {
    std::uint64_t attached_total = 0;
    std::uint64_t ready_total = 0;
    std::uint64_t failed_total = 0;  // Failed(EntityGone) on this axis
  };
  enum class Attach : std::uint8_t {
    Attached,
    AlreadyAttached,
    Remembered,
    NotRequested,
    NoHandle
  };

  // After each step: advances waiting handles and takes the handles the step
  // ended at RepresentationRequested. Appends every state change to `changed`.
  void after_step(const core::World& world, std::vector<core::SpawnHandleState>& changed);

  // A client holds a representation of `id` (lease) or says so
  // (ReportAttached, `remember` false). On Attached, `changed` gets the handle.
  Attach attach(const core::World& world, core::EntityId id, bool remember,
                core::SpawnHandleState* changed);

  // A new world (restore / load): forget everything, wait again for the
  // entities that still walk.
  void reset(const core::World& world);

  // The handle on this axis (waiting or recently ended), if it reached
  // RepresentationRequested; nullopt otherwise (the core has it).
  std::optional<core::SpawnHandleState> find(std::uint64_t handle) const;
  // The waiting handle of an entity, if any.
  const core::SpawnHandleState* waiting_for(core::EntityId id) const;
  // Entities whose lease would move a handle (Registered in the core, or
  // waiting here), sorted by packed id: PublishedFrame.awaiting_representation.
  void awaiting(const core::World& world, std::vector<core::EntityId>& out) const;

  const std::vector<core::SpawnHandleState>& waiting() const { return live_; }
  const Counters& counters() const { return counters_; }

 private:
  void set(core::SpawnHandleState& h, core::SpawnState s, std::uint64_t step,
           std::vector<core::SpawnHandleState>* changed,
           core::SpawnFailure f = core::SpawnFailure::None);

  std::vector<core::SpawnHandleState> live_;  // RepresentationRequested or Attached, by handle
  std::vector<core::SpawnHandleState>
      recent_;                        // terminal here, last core::kSpawnHistory, oldest first
  std::vector<core::EntityId> held_;  // leases seen while the handle was Registered
  Counters counters_;
};

}  // namespace bustle::app
