// EntityMirror: the client's copy of the entities a server streams, rebuilt
// from Deltas, keyed by EntityId and addressed by stable local SlotIds.
//
// Invariants:
//   1. At most one live entry per EntityId index; its generation is the one
//      most recently entered for that index.
//   2. A live entry's SlotId does not change while it lives; a slot returns to
//      the free list only when its entity leaves (or is replaced, or the mirror
//      is reset), and the free list is LIFO.
//   3. Every applied Delta is counted; anything that does not fit the mirror
//      (update or leave of an unknown id, a duplicate enter, a full mirror) is
//      counted, never a crash or an assert.
//
// Transitions (all in apply()):
//   absent --entered--> live          (slot taken from the free list)
//   live   --updated--> live          (same slot, state overwritten)
//   live   --left-----> absent        (slot freed)
//   live   --entered with same index, other generation--> replaced: the old
//          entry leaves (slot freed, counted as `replaced`), the new one enters
//   any    --baseline Delta--> every entry removed, then the baseline's entered
//          (a baseline may carry any step, also one lower than the last: after
//          a restore or load the server's world goes back in time; it is a
//          reset, never counted in steps_not_increasing)
//
// Order inside one Delta: baseline reset, then left, then entered, then
// updated, then retiring, so an index that is released and reused within one
// step resolves to the new entity, and an entity that enters already fading
// (a baseline, a late join) is marked at once.
//
// Retiring (Delta.retiring): the entity began fading out; it stays live, at
// its last pose with speed 0, until a later Delta lists it in `left`. The mark
// is never cleared while it lives (the server sends left + entered if the
// same id ever comes back).
//
// Distant dots (Delta.dots): anonymous counts per lane chain, kept as of the
// last Delta that carried them; a baseline clears them first.
//
// States are stored dequantized: metres, radians in [0, 2*pi) counter-clockwise
// from +x, metres per second.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "bustle/client/ids.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::client {

struct EntityView {
  EntityId id;
  SlotId slot;
  bustle::wire::EntityKind kind = bustle::wire::EntityKind::Pedestrian;
  double x_m = 0.0;
  double y_m = 0.0;
  double heading_rad = 0.0;  // [0, 2*pi), 0 = +x, counter-clockwise
  double speed_mps = 0.0;
  std::uint64_t entered_step = 0;  // step of the Delta that entered it
  std::uint64_t last_step = 0;     // step of the last Delta that wrote its state
  bool retiring = false;           // fading out (Delta.retiring); leaves later
};

// Dequantization of the wire's EntityState, exposed for tests and tools.
double heading_q_to_rad(std::uint16_t heading_q);
void write_state(EntityView& view, const bustle::wire::EntityState& state, std::uint64_t step);

struct MirrorCounters {
  std::uint64_t deltas = 0;
  std::uint64_t baselines = 0;
  std::uint64_t entered = 0;
  std::uint64_t updated = 0;
  std::uint64_t left = 0;
  std::uint64_t replaced = 0;              // entered with a known index, other generation
  std::uint64_t duplicate_enters = 0;      // entered with an id already live (state overwritten)
  std::uint64_t unknown_updates = 0;       // updated id not live (or stale generation)
  std::uint64_t unknown_lefts = 0;         // left id not live (or stale generation)
  std::uint64_t rejected_full = 0;         // entered while the mirror was at capacity
  std::uint64_t steps_not_increasing = 0;  // non-baseline Delta whose step <= the last one
  std::uint64_t retiring = 0;              // entities marked retiring
  std::uint64_t unknown_retiring = 0;      // retiring id not live (or stale generation)
  std::uint64_t dots = 0;                  // Deltas that carried dots
};

// What one apply() did; the same categories as MirrorCounters.
struct ApplySummary {
  std::uint32_t entered = 0;
  std::uint32_t updated = 0;
  std::uint32_t left = 0;
  std::uint32_t replaced = 0;
  std::uint32_t duplicate_enters = 0;
  std::uint32_t unknown_updates = 0;
  std::uint32_t unknown_lefts = 0;
  std::uint32_t rejected_full = 0;
  std::uint32_t retiring = 0;
  std::uint32_t unknown_retiring = 0;
  bool baseline = false;
  bool step_not_increasing = false;
  bool dots = false;  // this Delta carried dots
};

// Optional hooks for a rendering backend (activate / update / deactivate).
// Called synchronously from apply(); must not call back into the mirror's
// mutating functions. Default implementations do nothing.
class MirrorListener {
 public:
  virtual ~MirrorListener() = default;
  virtual void on_reset() {}
  virtual void on_entered(const EntityView& /*view*/) {}
  virtual void on_updated(const EntityView& /*view*/) {}
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

  // Applies one verified Delta. `listener` may be null.
  ApplySummary apply(const bustle::wire::Delta& delta, MirrorListener* listener = nullptr);

  // Removes every entry and frees every slot (counters are kept).
  void clear();

  // nullptr if `id` is not live (including a stale generation).
  const EntityView* find(EntityId id) const;
  // nullptr if the slot is free or out of range.
  const EntityView* at(SlotId slot) const;

  std::size_t size() const { return by_index_.size(); }
  // Number of slots ever allocated (live + free); bounds every SlotId.
  std::size_t slot_count() const { return slots_.size(); }
  std::uint32_t max_entities() const { return max_entities_; }

  bool has_step() const { return counters_.deltas > 0; }
  std::uint64_t last_step() const { return last_step_; }
  std::uint64_t last_sim_time_us() const { return last_sim_time_us_; }
  std::uint64_t last_digest() const { return last_digest_; }
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
  void remove_slot(std::uint32_t slot, MirrorListener* listener);
  // Returns false (and counts) when the mirror is full.
  bool insert(const bustle::wire::EntityState& state, std::uint64_t step, MirrorListener* listener,
              ApplySummary& summary);

  std::uint32_t max_entities_;
  std::vector<EntityView> slots_;
  std::vector<std::uint8_t> live_;
  std::vector<std::uint32_t> free_slots_;                      // LIFO
  std::unordered_map<std::uint32_t, std::uint32_t> by_index_;  // EntityId.index -> slot
  MirrorCounters counters_;
  std::uint64_t last_step_ = 0;
  std::uint64_t last_sim_time_us_ = 0;
  std::uint64_t last_digest_ = 0;
  std::vector<bustle::wire::SignalPhase> signal_phases_;
  std::vector<std::uint16_t> chain_dots_;
  bool has_dots_ = false;
  std::uint64_t dots_step_ = 0;
};

}  // namespace bustle::client
