// Spawn pipeline (DESIGN §3, lifecycle axis): a spawn request becomes a
// handle whose state moves through graded stages and ends in exactly one
// terminal state. Accepted is not completed; deferred is not failed.
//
// A handle advances at most one stage per step, so every stage is observable
// (SpawnEvent / SpawnUpdate on the wire, including Queued):
//   Queued --(phase 4 of a later step, within spawn.per_step_cap, most important first)-->
//   IdentityCreated IdentityCreated --(next step's phase 4; zone has room)--> Registered (walks,
//   visible in deltas) Registered --(next step's phase 8)--> RepresentationRequested   (clients are
//   asked for a representation)
// The core's part of a handle ends there: RepresentationRequested is the
// core's terminal success (is_core_terminal), the handle moves to `recent`
// in the same phase 8, and nothing a client does can change the simulation
// or its digest afterwards. The two stages that follow belong to the
// representation axis and live outside the core (server/app
// representation_stages.hpp), per handle, never in the digest and never in a
// checkpoint:
//   RepresentationRequested --(any client's lease for the entity is Assigned or
//       Preserved with a representation, or a ReportAttached shorthand from
//       any role)--> Attached
//   Attached --(the next step, entity still walking)--> ReadyForGameplay   (success; terminal)
//   RepresentationRequested / Attached --(entity left first)--> Failed(EntityGone)
// After a restore or load those stages restart from RepresentationRequested
// for handles whose entity still walks: clients re-receive baselines and
// re-report their leases.
//
// Importance order (spawn pressure): phase 4 creates identities for Queued
// handles most important first, by SpawnRank (below): the effective distance
// (importance.hpp, the function tiers use, with the request's priority class)
// of the requested place to the observers, then the priority class, then the
// handle. The place is the lane's midpoint; for a zone without a lane, the
// zone lane whose midpoint is nearest in effective distance; a request for
// any sidewalk has no place and ranks after every placed one (infinite
// distance), as every request does with no observers. The rank is computed
// from the state when it is needed (nothing is cached), so a restored world
// orders identically.
//
// Displacement: a SpawnPedestrian that finds spawn.queue_depth live handles
// displaces the weakest Queued handle (largest SpawnRank) when it ranks
// strictly before it: that handle becomes Canceled with failure Displaced
// (counted in SpawnCounters::displaced_total) and the new request is
// accepted. A request that ranks after every Queued handle (or finds none
// Queued) is refused with QueueFull as before. LifecycleBatch never
// displaces (a batch is accepted whole or refused).
//
// Terminal failures: Canceled (CancelSpawn, or DespawnEntity of an identity
// not yet registered: the id goes back instead of being created and then
// deleted; failure Displaced when a more important request took its place),
// TimedOut (still Queued/IdentityCreated after spawn.timeout_ms;
// capacity or zone room never came), Failed(reason) (a dependency became
// invalid between stages, e.g. the entity left before it was ready).
// Dependencies (registry capacity, zone room, the entity itself) are
// re-validated each time a stage completes. What waits is counted as
// deferred, never as failed.
//
// Invariants (World::check_invariants):
//   1. live is sorted by handle, without repeats; every handle, live or
//      recent, is below next_handle and appears once.
//   2. live holds states before RepresentationRequested only (Queued,
//      IdentityCreated, Registered), recent core-terminal states only
//      (RepresentationRequested, Failed, Canceled, TimedOut; at most
//      kSpawnHistory); failure is set when the state is Failed, and
//      otherwise None except Displaced on Canceled; the
//      core never counts an entry into Attached or ReadyForGameplay.
//   3. Exactly one core-terminal state per handle: requested = next_handle - 1
//      = live handles + entries into core-terminal states.
//   4. Entity consistency: Queued has no entity; IdentityCreated holds a live
//      id that is on no lane; Registered has an entity, which is a walking
//      pedestrian of origin Spawned, and no route of its own (the walker
//      holds it).
//
// Transitions (World, world_spawn.cpp): accept_spawn creates Queued (asserts
// 1 where it is written); set_spawn_state performs every other transition and
// asserts the handle was not core-terminal (2, 3); retire_terminal_spawns
// moves core-terminal handles to recent and asserts what it read is
// core-terminal.
#pragma once

#include <cstdint>
#include <vector>

#include "bustle/core/command.hpp"
#include "bustle/core/entity_id.hpp"
#include "bustle/core/route_table.hpp"
#include "bustle/core/scenario.hpp"

namespace bustle::core {

enum class SpawnState : std::uint8_t {
  Queued = 0,
  IdentityCreated = 1,
  Registered = 2,
  RepresentationRequested = 3,
  Attached = 4,
  ReadyForGameplay = 5,
  Failed = 6,
  Canceled = 7,
  TimedOut = 8,
};
inline constexpr std::size_t kSpawnStateCount = 9;
const char* to_string(SpawnState s);
// The handle's end, on every axis (what SpawnStatus.terminal says on the wire).
constexpr bool is_terminal(SpawnState s) {
  return s >= SpawnState::ReadyForGameplay;
}
// The end of the core's part of a handle: RepresentationRequested (success;
// the representation stages follow outside the core) or a terminal failure.
constexpr bool is_core_terminal(SpawnState s) {
  return s == SpawnState::RepresentationRequested || s >= SpawnState::Failed;
}

enum class SpawnFailure : std::uint8_t {
  None = 0,
  EntityGone = 1,     // the entity was despawned before it became ready
  WorldReplaced = 2,  // reserved for restore/load (handles of the old world)
  Displaced = 3,      // Canceled: a more important request took its queue slot
  // Failed on the representation axis only (server/app representation_stages):
  // the attached and unattached budgets were both full. The core never sets it.
  NoRepresentationSlot = 4,
};
inline constexpr SpawnFailure kSpawnFailureLast = SpawnFailure::NoRepresentationSlot;
// The reasons a handle in state s may carry (invariant 2).
constexpr bool spawn_failure_fits(SpawnState s, SpawnFailure f) {
  if (s == SpawnState::Failed) return f != SpawnFailure::None && f != SpawnFailure::Displaced;
  return f == SpawnFailure::None || (s == SpawnState::Canceled && f == SpawnFailure::Displaced);
}
const char* to_string(SpawnFailure f);

inline constexpr std::int32_t kAnyZone = -1;
inline constexpr std::uint32_t kAnyLane = UINT32_MAX;

struct SpawnHandleState {
  std::uint64_t handle = 0;  // 1, 2, ... in request order; never reused
  SpawnState state = SpawnState::Queued;
  SpawnFailure failure = SpawnFailure::None;
  EntityId entity;                // null until IdentityCreated
  CommandOrigin origin;           // who asked (updates go to that client)
  std::int32_t zone = kAnyZone;   // zone index, or any sidewalk
  std::uint32_t lane = kAnyLane;  // lane index, or any lane of the zone
  PriorityClass priority = PriorityClass::Quest;
  std::uint64_t requested_step = 0;
  std::uint64_t deadline_step = 0;  // TimedOut when still waiting after it
  std::uint64_t state_step = 0;     // step of the last state change
  std::uint32_t route = kNoRoute;   // slot in the shared route table, held until the walker leaves
  friend bool operator==(const SpawnHandleState&, const SpawnHandleState&) = default;
};

// One state change, collected during the step and emitted after it.
struct SpawnEvent {
  std::uint64_t handle = 0;
  SpawnState state = SpawnState::Queued;
  SpawnFailure failure = SpawnFailure::None;
  EntityId entity;
  CommandOrigin origin;
};

struct SpawnCounters {
  std::uint64_t requested = 0;
  std::uint64_t per_state_total[kSpawnStateCount] = {};  // entries into each state
  std::uint32_t deferred_by_cap = 0;       // last step: Queued held back by per_step_cap
  std::uint32_t deferred_by_capacity = 0;  // last step: registry full
  std::uint32_t deferred_by_zone = 0;      // last step: zone at capacity
  std::uint64_t displaced_total = 0;       // Queued handles Canceled(Displaced) under pressure
  friend bool operator==(const SpawnCounters&, const SpawnCounters&) = default;
};

// Plain state of the pipeline; the World drives the transitions because they
// touch the registry and the pedestrian arrays.
struct SpawnPipelineState {
  std::vector<SpawnHandleState> live;    // non-terminal, sorted by handle
  std::vector<SpawnHandleState> recent;  // the last kSpawnHistory terminal handles, oldest first
  std::uint64_t next_handle = 1;
  SpawnCounters counters;
  friend bool operator==(const SpawnPipelineState&, const SpawnPipelineState&) = default;
};
inline constexpr std::size_t kSpawnHistory = 256;

// Importance of a Queued handle (the order of phase 4 and of displacement):
// smaller ranks first. Handles are unique, so the order is total.
struct SpawnRank {
  double effective_distance_m = 0.0;
  std::uint8_t priority = 0;
  std::uint64_t handle = 0;
  std::uint32_t live_index = 0;  // position in SpawnPipelineState::live (not compared)
  friend bool operator<(const SpawnRank& a, const SpawnRank& b) {
    if (a.effective_distance_m != b.effective_distance_m)
      return a.effective_distance_m < b.effective_distance_m;
    if (a.priority != b.priority) return a.priority < b.priority;
    return a.handle < b.handle;
  }
};

}  // namespace bustle::core
