#include "bustle/core/entity_id.hpp"

#include <algorithm>
#include <cassert>

#include "bustle/core/column_copies.hpp"
#include "bustle/core/prng.hpp"

namespace bustle::core {
namespace {

std::uint64_t slot_term(std::uint32_t index, std::uint32_t generation, bool alive) {
  return mix64((std::uint64_t{index} << 32 | generation) ^ (alive ? 0xA11FEull << 40 : 0));
}

// An away slot (invariant 5) hashes apart from a free one; a whole-city
// registry has none, so its digest is what it always was.
std::uint64_t away_term(std::uint32_t index, std::uint32_t generation) {
  return mix64((std::uint64_t{index} << 32 | generation) ^ (0xA3A7ull << 40));
}

std::uint64_t state_term(std::uint32_t index, std::uint32_t generation, std::uint8_t state) {
  return state == 2 ? away_term(index, generation) : slot_term(index, generation, state == 1);
}

std::uint64_t fifo_term(std::uint64_t seq, std::uint32_t index) {
  return mix64(mix64(seq ^ 0xF1F0000000000000ull) + index);
}

}  // namespace

std::string id_text(EntityId id) {
  return std::to_string(id.index) + ":" + std::to_string(id.generation);
}

EntityRegistry::EntityRegistry(std::uint32_t capacity)
    : generation_(capacity, 1), alive_(capacity, 0), free_ring_(capacity), free_count_(capacity) {
  assert(capacity >= 1);
  slots_written_.reserve(capacity);
  for (std::uint32_t i = 0; i < capacity; ++i) {
    free_ring_[i] = i;
    digest_sum_ += slot_term(i, 1, false) + fifo_term(i, i);
  }
}

EntityRegistry::EntityRegistry(std::uint32_t capacity, std::uint32_t first, std::uint32_t end)
    : generation_(capacity, 1),
      alive_(capacity, kAway),
      free_ring_(capacity),
      free_count_(end - first),
      away_count_(capacity - (end - first)) {
  assert(first <= end && end <= capacity);
  slots_written_.reserve(capacity);
  for (std::uint32_t i = first; i < end; ++i) {
    alive_[i] = kFree;
    free_ring_[i - first] = i;
  }
  digest_sum_ = recompute_state_digest();
}

std::uint64_t EntityRegistry::recompute_state_digest() const {
  std::uint64_t sum = 0;
  for (std::uint32_t i = 0; i < capacity(); ++i) sum += state_term(i, generation_[i], alive_[i]);
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
  // Read back what release() wrote (invariants 1 and 3): a queued slot is free
  // and its generation was never 0.
  assert(alive_[index] == kFree);
  assert(generation_[index] != 0);
  digest_sum_ +=
      slot_term(index, generation_[index], true) - slot_term(index, generation_[index], false);
  alive_[index] = kAlive;
  slots_written_.mark(index);
  ++alive_count_;
  assert(free_count_ + alive_count_ + away_count_ == capacity());
  return {AllocateStatus::Allocated, EntityId{index, generation_[index]}};
}

// A live slot goes away (invariant 5), with `generation` from now on.
void EntityRegistry::go_away(EntityId id, std::uint32_t generation) {
  assert(is_alive(id));
  digest_sum_ += away_term(id.index, generation) - slot_term(id.index, id.generation, true);
  generation_[id.index] = generation;
  alive_[id.index] = kAway;
  slots_written_.mark(id.index);
  --alive_count_;
  ++away_count_;
}

// An away slot comes back alive or free with the id's generation; false,
// changing nothing, unless it is away.
bool EntityRegistry::come_back(EntityId id, std::uint8_t state) {
  if (id.index >= capacity() || id.generation == 0 || alive_[id.index] != kAway) return false;
  digest_sum_ += slot_term(id.index, id.generation, state == kAlive) -
                 away_term(id.index, generation_[id.index]);
  generation_[id.index] = id.generation;
  alive_[id.index] = state;
  slots_written_.mark(id.index);
  alive_count_ += state == kAlive;
  --away_count_;
  return true;
}

// A free slot joins the back of the FIFO (invariant 3).
void EntityRegistry::enqueue_free(std::uint32_t index) {
  assert(alive_[index] == kFree);
  free_ring_[(free_head_ + free_count_) % capacity()] = index;
  digest_sum_ += fifo_term(pop_seq_ + free_count_, index);
  ++free_count_;
}

bool EntityRegistry::depart(EntityId id) {
  if (!is_alive(id)) return false;
  go_away(id, id.generation);
  return true;
}

std::uint32_t EntityRegistry::release_away(EntityId id) {
  if (!is_alive(id)) return 0;
  const std::uint32_t next = next_generation(id.generation);
  go_away(id, next);
  return next;
}

bool EntityRegistry::take_home(EntityId id) {
  if (!come_back(id, kFree)) return false;
  enqueue_free(id.index);
  return true;
}

bool EntityRegistry::adopt(EntityId id) {
  return come_back(id, kAlive);
}

ReleaseStatus EntityRegistry::release(EntityId id) {
  if (id.index >= capacity()) return ReleaseStatus::OutOfRange;
  if (!is_alive(id)) return ReleaseStatus::StaleHandle;
  alive_[id.index] = kFree;
  slots_written_.mark(id.index);
  --alive_count_;
  digest_sum_ -= slot_term(id.index, generation_[id.index], true);
  generation_[id.index] = next_generation(generation_[id.index]);
  assert(generation_[id.index] != 0);
  digest_sum_ += slot_term(id.index, generation_[id.index], false);
  enqueue_free(id.index);
  assert(free_count_ + alive_count_ + away_count_ == capacity());
  return ReleaseStatus::Released;
}

bool EntityRegistry::is_alive(EntityId id) const {
  return id.index < capacity() && alive_[id.index] == kAlive &&
         generation_[id.index] == id.generation && id.generation != 0;
}

Status EntityRegistry::check_invariants() const {
  const std::uint32_t cap = capacity();
  if (alive_.size() != cap || free_ring_.size() != cap)
    return Status::internal("registry: column lengths differ from the capacity");
  std::uint32_t alive = 0, away = 0;
  for (std::uint32_t i = 0; i < cap; ++i) {
    if (generation_[i] == 0)
      return Status::internal("registry: invariant 1: slot " + std::to_string(i) +
                              " has generation 0");
    if (alive_[i] > kAway)
      return Status::internal("registry: slot " + std::to_string(i) + " liveness " +
                              std::to_string(alive_[i]));
    alive += alive_[i] == kAlive;
    away += alive_[i] == kAway;
  }
  if (alive != alive_count_ || away != away_count_) {
    return Status::internal("registry: alive_count " + std::to_string(alive_count_) +
                            ", away_count " + std::to_string(away_count_) + " but " +
                            std::to_string(alive) + " slots are alive, " + std::to_string(away) +
                            " away");
  }
  if (alive_count_ + free_count_ + away_count_ != cap) {
    return Status::internal("registry: invariant 5: " + std::to_string(alive_count_) + " alive + " +
                            std::to_string(free_count_) + " free + " + std::to_string(away_count_) +
                            " away != capacity " + std::to_string(cap));
  }
  // Every free slot is queued exactly once, and no live one is.
  std::vector<std::uint8_t> queued(cap, 0);
  for (std::uint32_t k = 0; k < free_count_; ++k) {
    const std::uint32_t i = free_ring_[(free_head_ + k) % cap];
    if (i >= cap)
      return Status::internal("registry: invariant 3: free FIFO holds index " + std::to_string(i) +
                              " out of range");
    if (alive_[i] != kFree)
      return Status::internal("registry: invariant 3: free FIFO holds " +
                              std::string(alive_[i] == kAlive ? "live" : "away") + " index " +
                              std::to_string(i));
    if (queued[i] != 0)
      return Status::internal("registry: invariant 3: free FIFO holds index " + std::to_string(i) +
                              " twice");
    queued[i] = 1;
  }
  if (digest_sum_ != recompute_state_digest())
    return Status::internal("registry: incremental state digest differs from a recount");
  return {};
}

void EntityRegistry::for_each_free(const std::function<void(std::uint32_t)>& fn) const {
  for (std::uint32_t k = 0; k < free_count_; ++k) fn(free_ring_[(free_head_ + k) % capacity()]);
}

}  // namespace bustle::core

namespace bustle::core {

void EntityRegistry::export_state(std::vector<std::uint32_t>& generation,
                                  std::vector<std::uint8_t>& alive,
                                  std::vector<std::uint32_t>& free_fifo, std::uint64_t& pop_seq,
                                  ColumnCopies& copies, std::uint64_t held_epoch) const {
  copies.add_written(generation, generation_, slots_written_, held_epoch);
  copies.add_written(alive, alive_, slots_written_, held_epoch);
  free_fifo.resize(free_count_);
  // The FIFO from the ring's head: up to the ring's end, then from its start.
  assert(free_head_ < capacity() || free_count_ == 0);
  const std::uint32_t head = free_head_;
  const std::uint32_t to_end = std::min(free_count_, capacity() - head);
  copies.add(free_fifo.data(), free_ring_.data() + head, to_end);
  copies.add(free_fifo.data() + to_end, free_ring_.data(), free_count_ - to_end);
  pop_seq = pop_seq_;
}

Status EntityRegistry::import_state(const std::vector<std::uint32_t>& generation,
                                    const std::vector<std::uint8_t>& alive,
                                    const std::vector<std::uint32_t>& free_fifo,
                                    std::uint64_t pop_seq) {
  const std::uint32_t cap = capacity();
  if (generation.size() != cap) {
    return Status::data_loss("generation: has " + std::to_string(generation.size()) +
                             " slots, capacity is " + std::to_string(cap));
  }
  if (alive.size() != cap) {
    return Status::data_loss("alive: has " + std::to_string(alive.size()) + " slots, capacity is " +
                             std::to_string(cap));
  }
  std::uint32_t alive_count = 0, away_count = 0;
  for (std::uint32_t i = 0; i < cap; ++i) {
    if (generation[i] == 0)
      return Status::data_loss("generation[" + std::to_string(i) + "]: must be >= 1");
    if (alive[i] > kAway)
      return Status::data_loss("alive[" + std::to_string(i) + "]: must be 0, 1 or 2 (away)");
    alive_count += alive[i] == kAlive;
    away_count += alive[i] == kAway;
  }
  if (alive_count + away_count + free_fifo.size() != cap) {
    return Status::data_loss(
        "free_fifo: has " + std::to_string(free_fifo.size()) + " entries, expected " +
        std::to_string(cap - alive_count - away_count) + " (capacity minus alive and away slots)");
  }
  std::vector<std::uint8_t> seen(cap, 0);
  for (std::size_t k = 0; k < free_fifo.size(); ++k) {
    const std::uint32_t i = free_fifo[k];
    const std::string where = "free_fifo[" + std::to_string(k) + "]";
    if (i >= cap) return Status::data_loss(where + ": slot " + std::to_string(i) + " out of range");
    if (alive[i] != kFree)
      return Status::data_loss(where + ": slot " + std::to_string(i) + " is alive or away");
    if (seen[i] != 0)
      return Status::data_loss(where + ": slot " + std::to_string(i) + " appears twice");
    seen[i] = 1;
  }
  generation_ = generation;
  alive_ = alive;
  slots_written_.mark_all();
  for (std::uint32_t k = 0; k < free_fifo.size(); ++k) free_ring_[k] = free_fifo[k];
  free_head_ = 0;
  free_count_ = static_cast<std::uint32_t>(free_fifo.size());
  alive_count_ = alive_count;
  away_count_ = away_count;
  pop_seq_ = pop_seq;
  digest_sum_ = recompute_state_digest();
  return {};
}

}  // namespace bustle::core
