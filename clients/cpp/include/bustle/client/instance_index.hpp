// DenseInstanceIndex: the slot <-> instance-index bookkeeping of an
// instanced backend (an engine's instanced-mesh component, a GPU instance
// buffer). Instances live in a dense array [0, size()); a slot holds at most
// one index. Removal is swap-remove: the last instance moves into the freed
// index, so the engine only ever deletes its last instance, whatever its own
// removal semantics are (shifting or swapping), and no other index changes.
//
// Invariants:
//   1. index_of(slot_at(i)) == i for every i < size(), and slot_at(index_of(s))
//      == s for every slot s that holds an index.
//   2. add() gives index size() (before the call); remove() keeps the
//      indices of every slot except the one that was last, which takes the
//      freed index.
//   3. add() for a slot that holds an index returns its index (a retry);
//      remove() for a slot that holds none changes nothing (nullopt).
//
// Engine side, per removal r: write the transform of instance r.last_index
// into r.removed_index when r.moved is valid, then delete instance
// r.last_index (or, batched: after a frame's removals set the instance count
// to size() and rewrite the moved indices).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "bustle/client/ids.hpp"

namespace bustle::client {

class DenseInstanceIndex {
 public:
  static constexpr std::uint32_t kNoIndex = std::numeric_limits<std::uint32_t>::max();

  struct Removal {
    std::uint32_t removed_index = 0;  // the index the removed slot held
    std::uint32_t last_index = 0;     // the last index before the removal (deleted now)
    SlotId moved;  // the slot moved from last_index to removed_index; invalid when
                   // the removed slot was the last one
  };

  // The dense index of `slot`: a new one (== size() before the call) or,
  // when the slot holds one already, that one. [Limit: slot.valid()]
  std::uint32_t add(SlotId slot);
  // Frees the slot's index (swap-remove). nullopt when it holds none.
  std::optional<Removal> remove(SlotId slot);

  // kNoIndex when the slot holds none.
  std::uint32_t index_of(SlotId slot) const;
  // An invalid SlotId when index >= size().
  SlotId slot_at(std::uint32_t index) const;
  bool contains(SlotId slot) const { return index_of(slot) != kNoIndex; }

  std::size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }
  void clear();

 private:
  std::vector<SlotId> slots_;           // by dense index
  std::vector<std::uint32_t> indices_;  // by SlotId::value (kNoIndex: none)
};

}  // namespace bustle::client
