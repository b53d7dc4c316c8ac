// The app layer's core::PhaseExecutor: a small pool of worker threads that
// run a step phase's parts together with the calling (sim) thread. The core
// decides what a part is and merges the parts in order, so any thread count
// gives the same digest (core/phase_executor.hpp); this class only decides
// which thread runs which part.
//
// Which thread: the caller claims parts from the front (0, 1, 2, ...), the
// workers from the back (last, last - 1, ...), until the two ends meet.
// Every phase of a step cuts its rows into the same parts, so with two
// threads each keeps roughly the same rows from phase to phase and step to
// step, and finds them in its own core's cache (with first come, first
// served claims, a part's rows moved between the two cores' caches about
// every other phase; on a fast stretch of a 2-core VM `perf` counted
// 20-30 % more samples for the same work that way). A late thread still
// costs nothing: the other end takes its share.
//
// A pool of N threads starts N - 1 workers; the caller of run() is the Nth.
// After a batch a worker polls for the next one for spin_window (a step's
// phases follow each other within a fraction of a millisecond, and waking
// a sleeping thread costs about 0.1 ms on a virtual machine), then sleeps
// (a futex wait on the batch number), so an idle server costs nothing.
// prepare() wakes sleeping workers ahead of a step (World::step calls it;
// the server's fixed-step loop calls it shortly before each tick). One
// run() or prepare() at a time (the sim thread's).
//
// run() never waits for a worker that has not started a part: the caller
// claims parts itself from the same counter and then waits only for parts
// that a worker has claimed and not finished. On a machine where a worker
// can be descheduled for milliseconds (two shared cores), a sleeping or
// late worker costs the step nothing; it finds the batch drained and sleeps
// again.
//
// Invariants:
//   1. Each part of a batch is claimed exactly once: a claim is a CAS on one
//      word holding (batch << 32 | back << 16 | front), the unclaimed parts
//      being [front, back), so a worker that woke for an older batch can
//      never claim a part of a newer one. A run() of more than
//      kMaxBatchParts parts runs as several batches, one after the other.
//   2. A batch's function, context, part count and offset are written
//      before its claim word is published (release) and rewritten only after
//      every part of it has finished, so whoever claims a part of batch b
//      reads batch b's function and offset.
//   3. run() returns only when finished parts == parts (acquire), which also
//      publishes the parts' writes to the caller.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "bustle/core/phase_executor.hpp"

namespace bustle::app {

class ThreadPhaseExecutor final : public core::PhaseExecutor {
 public:
  // threads in [1, kMaxThreads]; 1 runs everything on the caller.
  static constexpr std::chrono::microseconds kDefaultSpinWindow{1000};
  explicit ThreadPhaseExecutor(std::uint32_t threads,
                               std::chrono::microseconds spin_window = kDefaultSpinWindow);
  ~ThreadPhaseExecutor() override;
  ThreadPhaseExecutor(const ThreadPhaseExecutor&) = delete;
  ThreadPhaseExecutor& operator=(const ThreadPhaseExecutor&) = delete;

  void run(std::uint32_t parts, PartFn fn, void* context) override;
  // Wakes sleeping workers; they poll for spin_window (a batch number with
  // no parts: they find nothing to claim).
  void prepare() override;
  std::uint32_t threads() const override { return static_cast<std::uint32_t>(workers_.size()) + 1; }

  static constexpr std::uint32_t kMaxThreads = 64;

 private:
  void worker_loop();
  // Claims and runs parts of `batch` from its front (the caller) or its
  // back (a worker) until none is left (or a newer batch replaced it).
  void drain_parts(std::uint32_t batch, bool from_front);
  // Parts [offset, offset + parts) as one batch; parts <= kMaxBatchParts.
  void run_batch(std::uint32_t offset, std::uint32_t parts, PartFn fn, void* context);
  // The most parts one claim word holds (16 bits each for front and back).
  static constexpr std::uint32_t kMaxBatchParts = 0xFFFF;

  std::chrono::microseconds spin_window_;
  std::vector<std::thread> workers_;
  // The batch number workers wait on (0: none yet); moves on once per run().
  std::atomic<std::uint32_t> batch_{0};
  std::atomic<bool> stop_{false};
  // (batch << 32) | (back << 16) | front: that batch's unclaimed parts are
  // [front, back), counted from offset_.
  std::atomic<std::uint64_t> claim_{0};
  std::atomic<std::uint32_t> finished_parts_{0};
  // The current batch (invariant 2); atomics only so that a late worker's
  // read of a newer batch's values is not a data race (it cannot act on it:
  // its claim fails).
  std::atomic<PartFn> fn_{nullptr};
  std::atomic<void*> context_{nullptr};
  std::atomic<std::uint32_t> parts_{0};
  std::atomic<std::uint32_t> offset_{0};  // the batch's first part in run()'s numbering
};

}  // namespace bustle::app
