#include "bustle/core/entity_id.hpp"

#include <cassert>

namespace bustle::core {

EntityRegistry::EntityRegistry(std::uint32_t capacity)
    : generation_(capacity, 1), alive_(capacity, 0), free_ring_(capacity), free_count_(capacity) {
  assert(capacity >= 1);
  for (std::uint32_t i = 0; i < capacity; ++i) free_ring_[i] = i;
}

AllocateResult EntityRegistry::allocate() {
  if (free_count_ == 0) return {AllocateStatus::CapacityExhausted, {}};
  const std::uint32_t index = free_ring_[free_head_];
  free_head_ = (free_head_ + 1) % capacity();
  --free_count_;
  assert(alive_[index] == 0);
  alive_[index] = 1;
  ++alive_count_;
  return {AllocateStatus::Allocated, EntityId{index, generation_[index]}};
}

ReleaseStatus EntityRegistry::release(EntityId id) {
  if (id.index >= capacity()) return ReleaseStatus::OutOfRange;
  if (!is_alive(id)) return ReleaseStatus::StaleHandle;
  alive_[id.index] = 0;
  --alive_count_;
  // Skip 0 on wrap-around so the null handle is never issued (invariant 1).
  generation_[id.index] = generation_[id.index] == UINT32_MAX ? 1 : generation_[id.index] + 1;
  const std::uint32_t tail = (free_head_ + free_count_) % capacity();
  free_ring_[tail] = id.index;
  ++free_count_;
  assert(free_count_ + alive_count_ == capacity());
  return ReleaseStatus::Released;
}

bool EntityRegistry::is_alive(EntityId id) const {
  return id.index < capacity() && alive_[id.index] != 0 && generation_[id.index] == id.generation &&
         id.generation != 0;
}

void EntityRegistry::for_each_free(const std::function<void(std::uint32_t)>& fn) const {
  for (std::uint32_t k = 0; k < free_count_; ++k) fn(free_ring_[(free_head_ + k) % capacity()]);
}

}  // namespace bustle::core
