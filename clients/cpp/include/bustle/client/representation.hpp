// RepresentationLayer: ties the stream to the screen, per frame. It owns the
// EntityMirror, one PoseTrack per slot, the ServerClock, and routes every
// entity to the backend installed for its representation hint (Actor,
// Instanced, Marker; None: not drawn). It is the single caller of every
// RenderBackend method and the source of the client's lease reports.
//
// Per received Delta, apply():
//   1. the mirror applies it (entered / left / hint changes reach the layer);
//   2. the clock observes (Delta.sim_time_us, local receive time);
//   3. every live entity gets one pose sample at Delta.sim_time_us from the
//      mirror's lane-relative prediction (mirror.pose()), so an entity between
//      corrections still gets a sample per frame; its backend's
//      extract_update() sees the state.
// Per rendered frame, render() / render_at():
//   1. render time = estimated server time - interpolation delay (render_at
//      takes it directly), never earlier than the previous frame's, except
//      once after a Delta earlier than the last one (a restore or load
//      started a new timeline: clock and render time start again there);
//   2. activations that are not complete are retried (at most
//      activation_retries_per_frame per frame, oldest first);
//   3. begin_frame(), apply_interpolation(slot, render time, sampled pose)
//      for every slot a backend draws, end_frame(), per installed backend.
//
// Slot states (drawn: the backend that shows it; pending: the backend asked
// to show it that is not active yet; drawn != pending):
//   entered -----------------------> pending = route(hint)   (activate())
//   pending active ----------------> drawn = pending         (the old drawn one
//                                                             is deactivated only
//                                                             now: no gap)
//   hint changed ------------------> pending = route(new hint); drawn kept
//   hint None / no backend --------> everything deactivated
//   left / baseline reset ---------> everything deactivated, track reset
// route(hint) is the hint's backend or, with fallback_to_coarser, the next
// coarser installed one (Actor -> Instanced -> Marker) that has not refused
// this entity; a refusal moves on down the chain at once. With
// cover_while_pending, an entity nothing draws while its pending backend is
// not active (an actor still spawning or not ready) is drawn meanwhile by the
// first coarser backend that activates at once (drawn = cover, pending = the
// actor): the cover goes when the actor is active, as in any move.
// A backend swap (set_backend) moves every slot of the old backend: activate
// in the new one, then deactivate in the old; a slot the new backend cannot
// activate at once is deactivated in the old anyway (the old backend is
// fully released when set_backend returns, so the caller may destroy it).
//
// Leases (client.fbs LeaseReport): after every change a slot's lease is
//   Assigned(hint)      the hinted backend draws it
//   Preserved(old hint) the hinted backend is pending, the old one still draws
//   Unassigned(reason)  nothing draws it yet (PoolAtCap, Loading, ...; Other
//                       when no backend is installed for the hint)
//   Released            the hint is None and nothing is drawn
// and is queued once per change; take_leases() hands out batches of at most
// kLeaseEntriesMax for Client::report_leases() / build_lease_report().
//
// Not thread-safe: one thread drives the layer (an engine's game thread).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "bustle/client/backend.hpp"
#include "bustle/client/entity_mirror.hpp"
#include "bustle/client/interpolation.hpp"
#include "bustle/client/lease.hpp"
#include "bustle/client/log.hpp"
#include "bustle/client/server_clock.hpp"
#include "bustle/client/stream.hpp"

namespace bustle::client {

struct RepresentationConfig {
  InterpolationConfig interpolation = {};
  ServerClockConfig clock = {};
  std::uint32_t max_entities = EntityMirror::kDefaultMaxEntities;
  std::uint32_t activation_retries_per_frame = 1024;  // bound of render() step 2 [Limit: >= 1]
  // A hint without a backend, or whose backend refuses the entity, is drawn
  // by the next coarser installed backend (Actor -> Instanced -> Marker).
  bool fallback_to_coarser = true;
  // While the backend that should draw an entity is pending (an actor that
  // spawns or is not ready) and nothing draws it, the first coarser backend
  // that draws at once stands in until the pending one is active.
  bool cover_while_pending = true;
};

enum class InstallStatus : std::uint8_t {
  Installed,  // the backend draws the hint from now on
  Refused,    // initialize() returned false (or the hint is None); the previous backend stays
};

struct RepresentationCounters {
  std::uint64_t deltas = 0;
  std::uint64_t frames = 0;
  std::uint64_t samples = 0;      // pose samples pushed
  std::uint64_t activations = 0;  // activate() calls, first attempts
  std::uint64_t activation_retries = 0;
  std::uint64_t deactivations = 0;
  std::uint64_t moves = 0;  // completed moves between backends
  std::uint64_t leases_queued = 0;
  std::uint64_t updates_skipped = 0;  // extract_update() returned false
  std::uint64_t refused_installs = 0;
  std::uint64_t covers = 0;   // a coarser backend stood in for a pending one
  std::uint64_t rewinds = 0;  // Deltas that went back in server time (restore, load)
};

// Where one slot stands (for HUDs, tests, tools).
struct SlotRepresentation {
  RepresentationHint hint = RepresentationHint::None;  // the server's hint
  RepresentationHint drawn_as =
      RepresentationHint::None;  // the backend that draws it (None: nothing)
  bool pending = false;          // an activation not complete yet
  Lease lease;                   // as last queued
};

// Told when what draws an entity changes: an engine's "entity represented"
// and "entity released" events. drawn_as None: nothing draws it any more
// (it left, its hint is None, or every backend refused it).
class RepresentationObserver {
 public:
  virtual ~RepresentationObserver() = default;
  virtual void on_drawn(EntityId id, SlotId slot, RepresentationHint drawn_as) = 0;
};

class RepresentationLayer {
 public:
  // `log` (may be null) must outlive the layer.
  explicit RepresentationLayer(RepresentationConfig config = {}, LogSink* log = nullptr);
  // Deactivates every instance and deinitializes every installed backend,
  // so backends still installed must be alive here (declare them, or the
  // engine objects owning them, before the layer).
  ~RepresentationLayer();
  RepresentationLayer(const RepresentationLayer&) = delete;
  RepresentationLayer& operator=(const RepresentationLayer&) = delete;

  // The Welcome's geometry (lanes, step length); poses need it.
  void set_world(const WelcomeInfo& welcome);

  // Installs `backend` for `hint` (Actor, Instanced or Marker), or removes the
  // hint's backend (nullptr). The same backend may serve several hints; it is
  // initialized once, when first installed, and deinitialized when no hint
  // uses it any more. `backend` must outlive its installation. Refused
  // (nothing changes) when initialize() fails or `hint` is None.
  InstallStatus set_backend(RepresentationHint hint, RenderBackend* backend);
  RenderBackend* backend(RepresentationHint hint) const;
  // `observer` (may be null) must outlive the layer or be unset first.
  void set_observer(RepresentationObserver* observer) { observer_ = observer; }

  // Applies one decoded Delta received at `local_receive_us` (the caller's
  // monotonic clock, same as render()).
  ApplySummary apply(const Delta& delta, std::int64_t local_receive_us);

  // Renders at the estimated server time at `local_now_us` minus the delay
  // (render_delay_us()); nothing before the first Delta.
  void render(std::int64_t local_now_us);
  // The delay render() uses: the configured interpolation delay, but at
  // least 1.5 server steps (Welcome.step_us) once set_world() told them.
  std::int64_t render_delay_us() const;
  // Renders at an explicit render time (tests, tools, a manual clock).
  void render_at(std::int64_t render_time_us);

  // Takes up to `max` queued leases (oldest change first; one per slot).
  // [Limit: max <= kLeaseEntriesMax is what one report may carry]
  std::vector<Lease> take_leases(std::size_t max = kLeaseEntriesMax);
  std::size_t queued_leases() const { return lease_queue_.size(); }

  // The interpolated pose of a slot at `render_time_us` (nullopt: not live).
  std::optional<Sampled<RenderPose>> sample(SlotId slot, std::int64_t render_time_us) const;
  std::optional<SlotRepresentation> slot(SlotId slot) const;
  // The render time of the last frame (nullopt before the first).
  std::optional<std::int64_t> last_render_time_us() const;

  const EntityMirror& mirror() const { return mirror_; }
  // The corpses the last apply() made known, in Delta order: those that
  // entered already dead (a baseline, a late join, entering the interest)
  // and those that died while received (a Corpse change). Each entity at
  // most once per life here; EntityState::corpse carries the flag after.
  const std::vector<EntityId>& corpses_learned() const { return corpses_learned_; }
  const ServerClock& clock() const { return clock_; }
  const RepresentationConfig& config() const { return config_; }
  const RepresentationCounters& counters() const { return counters_; }
  // Bytes the layer keeps per slot (slot record + pose ring), for budgets.
  std::size_t bytes_per_slot() const;

 private:
  class Listener;
  struct SlotRecord;
  static std::size_t hint_index(RepresentationHint hint);
  RenderBackend* route(RepresentationHint hint) const;
  RepresentationHint hint_of(const RenderBackend* backend) const;
  EntityState state_of(const EntityView& view, const SlotRecord& record) const;
  // Routes the slot (reconcile_routes), then tells the observer.
  void reconcile(std::uint32_t slot);
  void reconcile_routes(std::uint32_t slot);
  void notify(std::uint32_t slot);
  enum class Attempt : std::uint8_t { Done, Waiting, Refused };
  // Calls activate() on the slot's pending backend: Done (active, moved),
  // Waiting (still pending) or Refused (released; pending cleared).
  Attempt try_activate(std::uint32_t slot, bool retry);
  void mark_refused(SlotRecord& r, const RenderBackend* backend) const;
  // The level (hint_index) of the backend that should draw the slot.
  std::optional<std::size_t> target_level(const SlotRecord& r) const;
  // Lets a coarser backend stand in while the pending one is not active.
  void cover(std::uint32_t slot);
  void add_pending(std::uint32_t slot);
  void finish_move(std::uint32_t slot);
  void release(std::uint32_t slot);
  void set_lease(std::uint32_t slot, const Lease& lease);
  void ensure_slot(std::uint32_t slot);

  RepresentationConfig config_;
  LogSink* log_ = nullptr;
  EntityMirror mirror_;
  std::vector<EntityId> corpses_learned_;  // by the last apply()
  ServerClock clock_;
  std::array<RenderBackend*, 3> backends_{};  // by hint: Actor, Instanced, Marker
  std::vector<SlotRecord> slots_;             // by SlotId::value
  std::vector<std::uint32_t> pending_;        // slots with an activation to retry
  std::vector<std::uint32_t> lease_queue_;    // slots whose lease changed
  std::unique_ptr<Listener> listener_;
  RepresentationObserver* observer_ = nullptr;
  std::optional<std::int64_t> last_render_time_us_;
  std::int64_t last_sample_time_us_ = 0;
  std::int64_t step_us_ = 0;  // Welcome.step_us (0 before set_world)
  RepresentationCounters counters_;
};

}  // namespace bustle::client
