// The entity registry (generation per slot, alive flags, free-slot FIFO) is
// stored in five columns of world_state's row; this file owns them.
#include "tables.hpp"

namespace bustle::persist::store {

void bind_registry(Insert& ws, const core::RegistryState& r) {
  ws.i64("registry_capacity", static_cast<std::int64_t>(r.generation.size()))
      .u64("registry_pop_seq", r.pop_seq);
  ws.blob("registry_generation", r.generation)
      .blob("registry_alive", r.alive)
      .blob("registry_free_fifo", r.free_fifo);
}

void read_registry(RowReader& ws, core::RegistryState& r) {
  const auto capacity = static_cast<std::size_t>(ws.integer("registry_capacity", 1, 1 << 24));
  r.pop_seq = ws.u64("registry_pop_seq");
  if (!ws.ok()) return;
  ws.blob("registry_generation", capacity, r.generation, "registry_capacity");
  ws.blob("registry_alive", capacity, r.alive, "registry_capacity");
  const std::size_t fifo_bytes = ws.bytes_size("registry_free_fifo");
  if (fifo_bytes % sizeof(std::uint32_t) != 0) {
    ws.fail("registry_free_fifo", "blob size is not a multiple of 4");
    return;
  }
  ws.blob("registry_free_fifo", fifo_bytes / sizeof(std::uint32_t), r.free_fifo);
}

}  // namespace bustle::persist::store
