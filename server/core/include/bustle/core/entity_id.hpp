// Identity axis: generation-checked entity handles and their allocator.
//
// An EntityId names one entity for its whole life. It is never an array index
// into simulation storage; it is an (index, generation) pair where the index
// addresses a slot in the EntityRegistry and the generation tells apart the
// successive entities that reuse that slot.
//
// Invariants:
//   1. generation 0 is never issued, so EntityId{} (0, 0) is the null handle.
//   2. A slot's generation increases by one on every release; a handle whose
//      generation differs from its slot's is stale and is_alive() is false.
//   3. Free slots form a FIFO: released slots go to the back, allocation takes
//      from the front. Fresh slots are queued in index order at creation, so a
//      slot is reused as late as possible (a stale handle stays detectably
//      stale for as long as the capacity allows).
//   4. Capacity is fixed at creation; allocation never allocates memory.
//   5. A district's registry (a city split across servers, issue 34) owns
//      part of the city's slots: every slot is alive, free (queued) or away
//      (alive or free in another district's registry). The city's slots
//      start split in ranges; an entity that crosses a border departs here
//      (away, generation kept) and is adopted there with its id unchanged,
//      and an id released in a district joins that district's FIFO. So
//      across the city each slot is alive or free in exactly one registry,
//      and alive + free + away == capacity here. A whole-city registry has
//      no away slot.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bustle/core/row_write_stamps.hpp"
#include "bustle/core/status.hpp"

namespace bustle::core {

struct EntityId {
  std::uint32_t index = 0;
  std::uint32_t generation = 0;

  constexpr bool is_null() const { return generation == 0; }
  friend constexpr bool operator==(EntityId, EntityId) = default;
  // Canonical order for tie-breaking: by index, then generation.
  friend constexpr bool operator<(EntityId a, EntityId b) {
    return a.index != b.index ? a.index < b.index : a.generation < b.generation;
  }
  constexpr std::uint64_t packed() const {
    return (std::uint64_t{generation} << 32) | std::uint64_t{index};
  }
};

// "index:generation", the form every message uses to name an entity.
std::string id_text(EntityId id);

enum class AllocateStatus : std::uint8_t { Allocated, CapacityExhausted };

class ColumnCopies;  // column_copies.hpp

struct AllocateResult {
  AllocateStatus status = AllocateStatus::CapacityExhausted;
  EntityId id{};
};

enum class ReleaseStatus : std::uint8_t { Released, StaleHandle, OutOfRange };

class EntityRegistry {
 public:
  // [Limit: capacity >= 1]
  explicit EntityRegistry(std::uint32_t capacity);
  // A district's registry: slots [first, end) are queued in index order, the
  // others start away (invariant 5). [Precondition: first <= end <= capacity]
  EntityRegistry(std::uint32_t capacity, std::uint32_t first, std::uint32_t end);

  AllocateResult allocate();
  ReleaseStatus release(EntityId id);
  bool is_alive(EntityId id) const;

  // Border crossings (invariant 5): a live id leaves this registry (its slot
  // goes away, generation kept), or an away slot takes the arriving id.
  // False, changing nothing, when the slot is not in that state.
  bool depart(EntityId id);
  bool adopt(EntityId id);
  // Ids go home (invariant 5): an id of another district's range released
  // here goes away with its next generation, which this returns (0: not
  // alive, nothing changed); its home district queues it again with
  // take_home (false, nothing changed, unless the slot is away).
  std::uint32_t release_away(EntityId id);
  bool take_home(EntityId id);
  bool slot_away(std::uint32_t index) const { return alive_[index] == kAway; }

  std::uint32_t capacity() const { return static_cast<std::uint32_t>(generation_.size()); }
  std::uint32_t alive_count() const { return alive_count_; }
  std::uint32_t free_count() const { return free_count_; }
  std::uint32_t away_count() const { return away_count_; }

  // The generation currently stored for a slot (for canonical encoding).
  std::uint32_t generation_of(std::uint32_t index) const { return generation_[index]; }
  bool slot_alive(std::uint32_t index) const { return alive_[index] == kAlive; }

  // Visits the free FIFO front to back; used by checkpoints.
  void for_each_free(const std::function<void(std::uint32_t)>& fn) const;

  // Canonical digest of the registry state (generations, liveness, FIFO order
  // and position), maintained incrementally so reading it is O(1): a sum over
  // slots of hash(index, generation, alive) plus a sum over queued free slots
  // of hash(queue sequence number, index). Equal states give equal values
  // whatever the history. recompute_state_digest() is the O(capacity)
  // reference the tests compare it against.
  std::uint64_t state_digest() const { return digest_sum_; }
  std::uint64_t recompute_state_digest() const;

  // Checks invariants 1 and 3 and the counts over every slot (O(capacity)):
  // Ok when they hold, else Internal with the first violation as "registry: ...".
  Status check_invariants() const;

  // Raw state for checkpoints. `alive` holds per slot 0 (free), 1 (alive)
  // or 2 (away, invariant 5). export_state() sizes the vectors and queues
  // their copies on `copies` (the caller runs them; the free ring as at most
  // two contiguous pieces); import_state() replaces
  // this registry's state after checking every invariant above, and returns Ok
  // or DataLoss with the first violation (as "field[i]: message").
  // `held_epoch` is the capture epoch the destination columns hold (0: none):
  // of generation and alive only the slots allocated or released since are
  // copied (slots_written()); the free FIFO is copied whole (its front moves
  // with every allocation, so each entry shifts).
  void export_state(std::vector<std::uint32_t>& generation, std::vector<std::uint8_t>& alive,
                    std::vector<std::uint32_t>& free_fifo, std::uint64_t& pop_seq,
                    ColumnCopies& copies, std::uint64_t held_epoch = 0) const;
  // Per chunk of slots, the capture epoch of its last allocate/release/import.
  const RowWriteStamps& slots_written() const { return slots_written_; }
  Status import_state(const std::vector<std::uint32_t>& generation,
                      const std::vector<std::uint8_t>& alive,
                      const std::vector<std::uint32_t>& free_fifo, std::uint64_t pop_seq);

 private:
  friend struct InvariantProbe;  // tests only: corrupts state to prove check_invariants() catches
                                 // it
  static constexpr std::uint8_t kFree = 0, kAlive = 1, kAway = 2;
  // The generation after `g`, skipping 0 on wrap-around so the null handle
  // is never issued (invariant 1).
  static constexpr std::uint32_t next_generation(std::uint32_t g) {
    return g == UINT32_MAX ? 1 : g + 1;
  }
  void go_away(EntityId id, std::uint32_t generation);
  bool come_back(EntityId id, std::uint8_t state);
  void enqueue_free(std::uint32_t index);
  std::vector<std::uint32_t> generation_;
  std::vector<std::uint8_t> alive_;       // kFree, kAlive or kAway per slot
  std::vector<std::uint32_t> free_ring_;  // ring buffer of free slot indices
  std::uint32_t free_head_ = 0;
  std::uint32_t free_count_ = 0;
  std::uint32_t alive_count_ = 0;
  std::uint32_t away_count_ = 0;
  std::uint64_t pop_seq_ = 0;  // sequence number of the FIFO front
  std::uint64_t digest_sum_ = 0;
  RowWriteStamps slots_written_;  // generation_ and alive_ rows (not state)
};

}  // namespace bustle::core
