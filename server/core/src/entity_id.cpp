#include "bustle/core/entity_id.hpp"

#include <cassert>

#include "bustle/core/prng.hpp"

namespace bustle::core {
namespace {

std::uint64_t slot_term(std::uint32_t index, std::uint32_t generation, bool alive) {
  return mix64((std::uint64_t{index} << 32 | generation) ^ (alive ? 0xA11FEull << 40 : 0));
}

std::uint64_t fifo_term(std::uint64_t seq, std::uint32_t index) {
  return mix64(mix64(seq ^ 0xF1F0000000000000ull) + index);
}

}  // namespace

EntityRegistry::EntityRegistry(std::uint32_t capacity)
    : generation_(capacity, 1), alive_(capacity, 0), free_ring_(capacity), free_count_(capacity) {
  assert(capacity >= 1);
  for (std::uint32_t i = 0; i < capacity; ++i) {
    free_ring_[i] = i;
    digest_sum_ += slot_term(i, 1, false) + fifo_term(i, i);
  }
}

std::uint64_t EntityRegistry::recompute_state_digest() const {
  std::uint64_t sum = 0;
  for (std::uint32_t i = 0; i < capacity(); ++i) sum += slot_term(i, generation_[i], alive_[i] != 0);
  for (std::uint32_t k = 0; k < free_count_; ++k) {
    sum += fifo_term(pop_seq_ + k, free_ring_[(free_head_ + k) % capacity()]);
  }
  return sum;
}

AllocateResult EntityRegistry::allocate() {
  if (free_count_ == 0) return {AllocateStatus::CapacityExhausted, {}};
  const std::uint32_t index = free_ring_[free_head_];
  digest_sum_ -= fifo_term(pop_seq_, index);
  ++pop_seq_;
  free_head_ = (free_head_ + 1) % capacity();
  --free_count_;
  assert(alive_[index] == 0);
  digest_sum_ += slot_term(index, generation_[index], true) - slot_term(index, generation_[index], false);
  alive_[index] = 1;
  ++alive_count_;
  return {AllocateStatus::Allocated, EntityId{index, generation_[index]}};
}

ReleaseStatus EntityRegistry::release(EntityId id) {
  if (id.index >= capacity()) return ReleaseStatus::OutOfRange;
  if (!is_alive(id)) return ReleaseStatus::StaleHandle;
  alive_[id.index] = 0;
  --alive_count_;
  digest_sum_ -= slot_term(id.index, generation_[id.index], true);
  // Skip 0 on wrap-around so the null handle is never issued (invariant 1).
  generation_[id.index] = generation_[id.index] == UINT32_MAX ? 1 : generation_[id.index] + 1;
  digest_sum_ += slot_term(id.index, generation_[id.index], false);
  const std::uint32_t tail = (free_head_ + free_count_) % capacity();
  free_ring_[tail] = id.index;
  digest_sum_ += fifo_term(pop_seq_ + free_count_, id.index);
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
