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
// Attached and unattached budgets (seed: two entity budgets; limits from the
// quality table, quality.hpp): an attached slot is held by a spawned entity
// from Attached until it stops walking (ReadyForGameplay keeps it). A lease
// for a RepresentationRequested handle when every attached slot is taken puts
// the handle in an unattached slot: still RepresentationRequested, its
// representation constructed on the client, waiting; after each step the
// unattached handles take freed attached slots in the order they arrived.
// When both budgets are full the lease fails the handle:
//   RepresentationRequested --(lease, no attached or unattached slot)-->
//       Failed(NoRepresentationSlot)   (the entity keeps walking)
// A ReportAttached shorthand obeys the same budgets.
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
    std::uint64_t failed_total = 0;   // Failed(EntityGone) on this axis
    std::uint64_t no_slot_total = 0;  // Failed(NoRepresentationSlot): both budgets full
  };
  struct Budgets {
    std::uint32_t attached_in_use = 0;
    std::uint32_t attached_limit = 0;
    std::uint32_t unattached_in_use = 0;
    std::uint32_t unattached_limit = 0;
  };
  enum class Attach : std::uint8_t {
    Attached,
    Unattached,  // waits in an unattached slot for an attached one
    NoSlot,      // both budgets full: the handle Failed(NoRepresentationSlot)
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
  // entities that still walk. Attached slots are given back (clients
  // re-report their leases).
  void reset(const core::World& world);

  // The limits (quality.hpp); set before the first step.
  void set_budgets(std::uint32_t attached_limit, std::uint32_t unattached_limit);
  Budgets budgets() const;

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
  // A lease for a RepresentationRequested handle: Attached, Unattached or NoSlot.
  Attach take_slot(core::SpawnHandleState& h, std::uint64_t step,
                   std::vector<core::SpawnHandleState>* changed);

  std::vector<core::SpawnHandleState> live_;  // RepresentationRequested or Attached, by handle
  std::vector<core::SpawnHandleState>
      recent_;                        // terminal here, last core::kSpawnHistory, oldest first
  std::vector<core::EntityId> held_;  // leases seen while the handle was Registered
  std::vector<core::EntityId> attached_slots_;  // entities holding an attached slot
  std::vector<core::EntityId> unattached_;      // leased, waiting for a slot; arrival order
  std::uint32_t attached_limit_ = 256;
  std::uint32_t unattached_limit_ = 512;
  Counters counters_;
};

}  // namespace bustle::app
