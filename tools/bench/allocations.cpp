// Counts this process's heap allocations, so benches can report allocations
// per step (DESIGN §10: none after warm-up). Replacing the global operator
// new and delete: array and nothrow forms default to these two; aligned forms
// are not counted.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "bench_support.hpp"

namespace {
std::atomic<std::uint64_t> g_allocations{0};
}  // namespace

std::uint64_t bustle::bench::heap_allocations() {
  return g_allocations.load(std::memory_order_relaxed);
}

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// Not inlined: GCC's -Wmismatched-new-delete would otherwise pair the inlined
// free() with the builtin operator new at the call site.
[[gnu::noinline]] void operator delete(void* p) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
