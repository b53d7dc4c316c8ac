// The seam through which the application lends the core threads for a step
// phase (DESIGN §2: the core owns no threads). The core cuts a phase's work
// into parts fixed by the data alone — contiguous row ranges of
// kRowsPerPart rows, never a function of the thread count — lets the
// executor run the parts in any order and on any threads, and then merges
// the parts' outputs in part order. So a phase's outcome, and the digest,
// are the same bytes for every executor: the inline one below (the default)
// and the app layer's thread pool (bustle::app::ThreadPhaseExecutor) with
// any number of threads.
//
// Invariants a parallel phase keeps (checked by tests/core/parallel_phases_test):
//   1. A part writes only its own rows and its own output buffer.
//   2. Shared state is read-only while parts run; what would mutate it
//      (despawn requests, route releases) is queued per part and applied
//      after, in part order, which is the sequential order.
//   3. Sums that enter the digest are wrapping 64-bit additions, so the
//      per-part partial sums add up to the sequential sum.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>

namespace bustle::core {

class PhaseExecutor {
 public:
  using PartFn = void (*)(void* context, std::uint32_t part);

  virtual ~PhaseExecutor() = default;
  // Calls fn(context, p) exactly once for every p in [0, parts), possibly
  // concurrently, and returns when every call has returned. Not reentrant:
  // fn must not call run() again.
  virtual void run(std::uint32_t parts, PartFn fn, void* context) = 0;
  // Threads that may run parts at once (1 for the inline executor).
  virtual std::uint32_t threads() const = 0;
  // A hint that run() calls are near (World::step calls it as a step
  // begins): an executor whose threads sleep may wake them now, so the
  // first phase does not wait for their wake-up. No effect on any result.
  virtual void prepare() {}
};

// Runs the parts one after the other on the calling thread.
class InlineExecutor final : public PhaseExecutor {
 public:
  void run(std::uint32_t parts, PartFn fn, void* context) override {
    for (std::uint32_t p = 0; p < parts; ++p) fn(context, p);
  }
  std::uint32_t threads() const override { return 1; }
};

// Rows per part of a parallel phase: large enough that a part's work
// (movement of 8 k pedestrians ≈ 0.05 ms) dwarfs the cost of handing it to
// a thread (a claim on one atomic word), small enough that a 100 k city has
// 13 parts, which 2–4 threads share within one part of each other.
inline constexpr std::uint32_t kRowsPerPart = 8192;

inline constexpr std::uint32_t parts_for_rows(std::uint32_t rows) {
  return (rows + kRowsPerPart - 1) / kRowsPerPart;
}

// run() with a callable: f(part) for every part.
template <class F>
void run_parts(PhaseExecutor& executor, std::uint32_t parts, F&& f) {
  using Callable = std::remove_reference_t<F>;
  void* context = const_cast<void*>(static_cast<const void*>(std::addressof(f)));
  executor.run(
      parts, [](void* c, std::uint32_t part) { (*static_cast<Callable*>(c))(part); }, context);
}

}  // namespace bustle::core
