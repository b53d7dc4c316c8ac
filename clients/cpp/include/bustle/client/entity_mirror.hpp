// EntityMirror: the client's copy of the entities a server streams, rebuilt
// from decoded Deltas (stream.hpp), keyed by EntityId and addressed by stable
// local SlotIds.
//
// Invariants:
//   1. At most one live entry per EntityId index; its generation is the one
//      most recently entered for that index.
//   2. A live entry's SlotId does not change while it lives; a slot returns to
//      the free list only when its entity leaves (or is replaced, or the mirror
//      is reset), and the free list is LIFO.
//   3. Every applied Delta is counted; anything that does not fit the mirror
//      (a motion record, change, leave or retiring mark for an unknown entity,
//      a duplicate enter, a label for an index not entered, a full mirror) is
//      counted, never a crash or an assert. In strict mode the first such
//      problem of a Delta is also reported in ApplySummary::error (the rest of
//      the Delta is still applied); the caller should then treat the stream as
//      broken and subscribe again.
//
// Transitions (all in apply()):
//   absent --entered--> live          (slot taken from the free list; anchor set)
//   live   --motion---> live          (same slot, anchor replaced at Delta.step)
//   live   --changes--> live          (sim tier / representation / policy /
//                                      corpse: on_changed(view, Corpse), once)
//   live   --left-----> absent        (slot freed)
//   live   --entered with same index, other generation--> replaced: the old
//          entry leaves (slot freed, counted as `replaced`), the new one enters
//   any    --baseline Delta--> every entry removed, then the baseline's entered
//          (a baseline may carry any step, also one lower than the last: after
//          a restore or load the server's world goes back in time; it is a
//          reset, never counted in steps_not_increasing)
//
// Order inside one Delta: baseline reset, left, entered, labels, motion,
// changes, retiring, so an index that is released and reused within one step
// resolves to the new entity, and an entity that enters already fading (a
// baseline, a late join) is marked at once.
//
// Motion (server.fbs Delta): each entity holds a proto::MotionAnchor (lane,
// s_mm, speed_mmps, step). A motion record with lane code 0 keeps the
// anchor's lane. pose() places the entity at any step with
// proto::predict_s_mm and proto::sample_lane on the Welcome's lanes (set_world),
// z = the lane's elevation: the same arithmetic as the server.
//
// Retiring (Delta.retiring): the entity began fading out; it stays live until
// a later Delta lists it in `left`. The mark is never cleared while it lives.
// Its motion follows the records like any other entity's (the server sends a
// record when it stops).
//
// Distant dots (Delta.dots): anonymous counts per lane chain, kept as of the
// last Delta that carried them; a baseline clears them first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "bustle/client/ids.hpp"
#include "bustle/client/stream.hpp"
#include "bustle/proto/motion.hpp"

namespace bustle::client {

struct EntityView {
  EntityId id;
  SlotId slot;
  EntityKind kind = EntityKind::Pedestrian;
  std::uint16_t archetype = 0;  // Welcome.archetypes index
  std::string label;            // Delta.labels; empty when it has none
  SimTier sim_tier = SimTier::Full;
  RepresentationHint representation = RepresentationHint::Actor;
  ControlPolicy policy = ControlPolicy::RouteFollow;
  proto::MotionAnchor anchor;      // anchor.step: the Delta that set it
  std::uint64_t entered_step = 0;  // step of the Delta that entered it
  bool retiring = false;           // fading out (Delta.retiring); leaves later
  // A corpse (EntityEnter.corpse, or a Corpse change when it died while
  // received): it lies still where it died until it leaves. Never cleared
  // while it lives.
  bool corpse = false;
};

// Where an entity is at one step.
struct EntityPose {
  double x_m = 0.0;
  double y_m = 0.0;
  double z_m = 0.0;          // the lane's elevation
  double heading_rad = 0.0;  // the lane segment's direction, 0 = +x, counter-clockwise
  std::uint32_t lane = 0;
  std::uint32_t s_mm = 0;  // predicted distance along the lane
};

struct MirrorCounters {
  std::uint64_t deltas = 0;
  std::uint64_t baselines = 0;
  std::uint64_t entered = 0;
  std::uint64_t moved = 0;    // motion records applied
  std::uint64_t changed = 0;  // changes applied
  std::uint64_t left = 0;
  std::uint64_t replaced = 0;              // entered with a known index, other generation
  std::uint64_t duplicate_enters = 0;      // entered with an id already live (state overwritten)
  std::uint64_t unknown_motion = 0;        // motion record for an index not live
  std::uint64_t unknown_changes = 0;       // change for an index not live
  std::uint64_t unknown_labels = 0;        // label for an index not entered in that Delta
  std::uint64_t unknown_lefts = 0;         // left id not live (or stale generation)
  std::uint64_t unknown_lanes = 0;         // an anchor naming a lane the Welcome does not have
  std::uint64_t rejected_full = 0;         // entered while the mirror was at capacity
  std::uint64_t steps_not_increasing = 0;  // non-baseline Delta whose step <= the last one
  std::uint64_t retiring = 0;              // entities marked retiring
  std::uint64_t corpses = 0;               // entities that died while received (Corpse changes)
  std::uint64_t unknown_retiring = 0;      // retiring id not live (or stale generation)
  std::uint64_t dots = 0;                  // Deltas that carried dots
  std::uint64_t errors = 0;                // strict mode: Deltas with an error
};

// What one apply() did; the same categories as MirrorCounters.
struct ApplySummary {
  std::uint32_t entered = 0;
  std::uint32_t moved = 0;
  std::uint32_t changed = 0;
  std::uint32_t left = 0;
  std::uint32_t replaced = 0;
  std::uint32_t duplicate_enters = 0;
  std::uint32_t unknown_motion = 0;
  std::uint32_t unknown_changes = 0;
  std::uint32_t unknown_labels = 0;
  std::uint32_t unknown_lefts = 0;
  std::uint32_t unknown_lanes = 0;
  std::uint32_t rejected_full = 0;
  std::uint32_t retiring = 0;
  std::uint32_t unknown_retiring = 0;
  std::uint32_t corpses = 0;  // Corpse changes applied (died while received)
  bool baseline = false;
  bool step_not_increasing = false;
  bool dots = false;  // this Delta carried dots
  // Strict mode: the first problem of this Delta ("motion: index 7 is not
  // received"), empty when none.
  std::string error;
  bool ok() const { return error.empty(); }
};

// Optional hooks for a rendering backend (activate / update / deactivate).
// Called synchronously from apply(); must not call back into the mirror's
// mutating functions. Default implementations do nothing.
class MirrorListener {
 public:
  virtual ~MirrorListener() = default;
  virtual void on_reset() {}
  virtual void on_entered(const EntityView& /*view*/) {}
  // A motion record replaced the anchor (also a duplicate enter).
  virtual void on_moved(const EntityView& /*view*/) {}
  // One axis changed (view holds the new value). EntityField::Corpse: the
  // entity died while received (view.corpse is set), at most once per entity.
  virtual void on_changed(const EntityView& /*view*/, EntityField /*field*/) {}
  // `view` holds the last state; its slot is free again after the call.
  virtual void on_left(const EntityView& /*view*/) {}
  // The entity began fading out (view.retiring is set); it leaves later.
  virtual void on_retiring(const EntityView& /*view*/) {}
};

class EntityMirror {
 public:
  // Dots for chain indices at or above this are ignored (memory bound).
  static constexpr std::uint32_t kMaxDotChains = 1u << 20;
  // Default capacity: far more than one server's entity capacity.
  static constexpr std::uint32_t kDefaultMaxEntities = 1u << 22;

  // [Limit: max_entities >= 1; entered beyond it are counted as rejected_full]
  explicit EntityMirror(std::uint32_t max_entities = kDefaultMaxEntities);

  // Strict mode reports (ApplySummary::error) what non-strict mode only counts.
  void set_strict(bool strict) { strict_ = strict; }
  bool strict() const { return strict_; }

  // The geometry poses are derived from: the Welcome's lanes and step length.
  // Without it pose() returns nullopt. Keeps the entities.
  void set_world(const WelcomeInfo& welcome);
  void set_world(std::vector<proto::LanePolyline> lanes, std::uint32_t step_us);
  std::size_t lane_count() const { return lanes_.size(); }
  std::uint32_t step_us() const { return step_us_; }

  // Applies one decoded Delta. `listener` may be null.
  ApplySummary apply(const Delta& delta, MirrorListener* listener = nullptr);

  // Removes every entry and frees every slot (counters and the world are kept).
  void clear();

  // nullptr if `id` is not live (including a stale generation).
  const EntityView* find(EntityId id) const;
  // nullptr if the slot is free or out of range.
  const EntityView* at(SlotId slot) const;

  // The pose at `step` (normally >= the anchor's step; earlier steps give
  // the anchor's position). nullopt when the entity is not live or its lane
  // is not in the world.
  std::optional<EntityPose> pose(SlotId slot, std::uint64_t step) const;
  std::optional<EntityPose> pose(EntityId id, std::uint64_t step) const;
  std::optional<EntityPose> pose(const EntityView& view, std::uint64_t step) const;

  std::size_t size() const { return by_index_.size(); }
  // Number of slots ever allocated (live + free); bounds every SlotId.
  std::size_t slot_count() const { return slots_.size(); }
  std::uint32_t max_entities() const { return max_entities_; }

  bool has_step() const { return counters_.deltas > 0; }
  std::uint64_t last_step() const { return last_step_; }
  std::uint64_t last_sim_time_us() const { return last_sim_time_us_; }
  std::uint64_t last_digest() const { return last_digest_; }
  // Delta.interest_truncated of the last Delta.
  std::uint32_t interest_truncated() const { return interest_truncated_; }
  const MirrorCounters& counters() const { return counters_; }
  // Signal phases by Welcome.signals index, as of the last Delta that carried
  // them (each Delta carries every signal); empty before the first. Signals a
  // Delta does not name keep their last phase (Open if never named).
  const std::vector<bustle::wire::SignalPhase>& signal_phases() const { return signal_phases_; }
  // Dots per lane chain (Welcome.chains index) as of the last Delta that
  // carried them (chains it did not name: 0); empty before the first one and
  // after a baseline without dots. dots_step(): that Delta's step.
  const std::vector<std::uint16_t>& chain_dots() const { return chain_dots_; }
  bool has_dots() const { return has_dots_; }
  std::uint64_t dots_step() const { return dots_step_; }

  // Visits live entries in slot order (deterministic for a given history).
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (live_[i]) f(static_cast<const EntityView&>(slots_[i]));
    }
  }

 private:
  EntityView* live_by_index(std::uint32_t index);
  EntityView* live_by_id(EntityId id);
  void remove_slot(std::uint32_t slot, MirrorListener* listener);
  // Returns false (and counts) when the mirror is full.
  bool insert(const EnteredEntity& e, std::uint64_t step, MirrorListener* listener,
              ApplySummary& summary);
  void check_lane(std::uint32_t lane, ApplySummary& summary, const char* what);
  void problem(ApplySummary& summary, std::string what) const;
  // The parts of apply(), in the order a Delta must be applied: who left,
  // entered (and their labels); then motion, field changes and fades of
  // those held; then the city-wide parts (dots, signals); then the counters.
  void apply_membership(const Delta& delta, MirrorListener* listener, ApplySummary& summary);
  void apply_updates(const Delta& delta, MirrorListener* listener, ApplySummary& summary);
  void apply_city(const Delta& delta, ApplySummary& summary);
  void count(const ApplySummary& summary);

  std::uint32_t max_entities_;
  bool strict_ = false;
  std::vector<proto::LanePolyline> lanes_;
  std::uint32_t step_us_ = 0;
  std::vector<EntityView> slots_;
  std::vector<std::uint8_t> live_;
  std::vector<std::uint32_t> free_slots_;                      // LIFO
  std::unordered_map<std::uint32_t, std::uint32_t> by_index_;  // EntityId.index -> slot
  MirrorCounters counters_;
  std::uint64_t last_step_ = 0;
  std::uint64_t last_sim_time_us_ = 0;
  std::uint64_t last_digest_ = 0;
  std::uint32_t interest_truncated_ = 0;
  std::vector<bustle::wire::SignalPhase> signal_phases_;
  std::vector<std::uint16_t> chain_dots_;
  bool has_dots_ = false;
  std::uint64_t dots_step_ = 0;
};

}  // namespace bustle::client
