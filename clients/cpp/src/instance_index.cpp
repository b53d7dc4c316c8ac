// Slot <-> instance index of an instanced backend, dense with
// swap-remove (instance_index.hpp).
#include "bustle/client/instance_index.hpp"

#include <cassert>

namespace bustle::client {

std::uint32_t DenseInstanceIndex::add(SlotId slot) {
  assert(slot.valid());
  if (slot.value >= indices_.size()) indices_.resize(std::size_t{slot.value} + 1, kNoIndex);
  std::uint32_t& index = indices_[slot.value];
  if (index != kNoIndex) return index;
  index = static_cast<std::uint32_t>(slots_.size());
  slots_.push_back(slot);
  return index;
}

std::optional<DenseInstanceIndex::Removal> DenseInstanceIndex::remove(SlotId slot) {
  const std::uint32_t index = index_of(slot);
  if (index == kNoIndex) return std::nullopt;
  Removal r;
  r.removed_index = index;
  r.last_index = static_cast<std::uint32_t>(slots_.size() - 1);
  if (index != r.last_index) {
    r.moved = slots_[r.last_index];
    slots_[index] = r.moved;
    indices_[r.moved.value] = index;
  }
  slots_.pop_back();
  indices_[slot.value] = kNoIndex;
  return r;
}

std::uint32_t DenseInstanceIndex::index_of(SlotId slot) const {
  if (!slot.valid() || slot.value >= indices_.size()) return kNoIndex;
  return indices_[slot.value];
}

SlotId DenseInstanceIndex::slot_at(std::uint32_t index) const {
  return index < slots_.size() ? slots_[index] : SlotId{};
}

void DenseInstanceIndex::clear() {
  slots_.clear();
  indices_.clear();
}

}  // namespace bustle::client
