// ThreadPhaseExecutor (thread_phase_executor.hpp): the worker threads that
// run a step phase's parts with the sim thread, claiming parts from opposite
// ends so each thread keeps the same rows (and cache) from phase to phase.
#include "bustle/app/thread_phase_executor.hpp"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>

namespace bustle::app {
namespace {

// A spin-wait hint to the core (the other hyperthread, or the hypervisor,
// gets the pipeline while we poll).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// run()'s wait for parts a worker still runs polls this often before it
// sleeps (a part takes a few tens of microseconds).
constexpr int kSpinsBeforeSleep = 2000;
// A worker reads the clock once per this many polls while it spins.
constexpr int kPollsPerClockRead = 64;

}  // namespace

ThreadPhaseExecutor::ThreadPhaseExecutor(std::uint32_t threads,
                                         std::chrono::microseconds spin_window)
    : spin_window_(spin_window) {
  if (threads < 1 || threads > kMaxThreads) {
    throw std::invalid_argument("phase executor: threads must be in [1, " +
                                std::to_string(kMaxThreads) + "], got " + std::to_string(threads));
  }
  workers_.reserve(threads - 1);
  for (std::uint32_t t = 1; t < threads; ++t) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPhaseExecutor::~ThreadPhaseExecutor() {
  stop_.store(true, std::memory_order_release);
  batch_.fetch_add(1, std::memory_order_release);
  batch_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPhaseExecutor::drain_parts(std::uint32_t batch, bool from_front) {
  const std::uint64_t tag = static_cast<std::uint64_t>(batch) << 32;
  std::uint64_t word = claim_.load(std::memory_order_acquire);
  for (;;) {
    if ((word & ~0xFFFF'FFFFull) != tag) return;  // a newer batch (invariant 1)
    const auto front = static_cast<std::uint32_t>(word & 0xFFFFu);
    const auto back = static_cast<std::uint32_t>((word >> 16) & 0xFFFFu);
    if (front >= back) return;  // every part of the batch is claimed
    const std::uint64_t next = from_front ? word + 1 : word - (std::uint64_t{1} << 16);
    if (!claim_.compare_exchange_weak(word, next, std::memory_order_acquire,
                                      std::memory_order_acquire)) {
      continue;  // `word` now holds the current value
    }
    const std::uint32_t part =
        offset_.load(std::memory_order_relaxed) + (from_front ? front : back - 1);
    fn_.load(std::memory_order_relaxed)(context_.load(std::memory_order_relaxed), part);
    const std::uint32_t finished = finished_parts_.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (finished == parts_.load(std::memory_order_relaxed)) finished_parts_.notify_one();
    word = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPhaseExecutor::run(std::uint32_t parts, PartFn fn, void* context) {
  if (parts == 0) return;
  if (workers_.empty() || parts == 1) {
    for (std::uint32_t p = 0; p < parts; ++p) fn(context, p);
    return;
  }
  for (std::uint32_t offset = 0; offset < parts; offset += kMaxBatchParts)
    run_batch(offset, std::min(parts - offset, kMaxBatchParts), fn, context);  // invariant 1
}

void ThreadPhaseExecutor::run_batch(std::uint32_t offset, std::uint32_t parts, PartFn fn,
                                    void* context) {
  const std::uint32_t batch = batch_.load(std::memory_order_relaxed) + 1;
  fn_.store(fn, std::memory_order_relaxed);
  context_.store(context, std::memory_order_relaxed);
  offset_.store(offset, std::memory_order_relaxed);
  parts_.store(parts, std::memory_order_relaxed);
  finished_parts_.store(0, std::memory_order_relaxed);
  claim_.store(static_cast<std::uint64_t>(batch) << 32 | std::uint64_t{parts} << 16,
               std::memory_order_release);  // front 0, back `parts`
  batch_.store(batch, std::memory_order_release);
  batch_.notify_all();
  drain_parts(batch, true);
  // Every part is claimed; wait only for those a worker is still running.
  std::uint32_t finished = finished_parts_.load(std::memory_order_acquire);
  for (int spin = 0; finished != parts && spin < kSpinsBeforeSleep; ++spin) {
    cpu_relax();
    finished = finished_parts_.load(std::memory_order_acquire);
  }
  while (finished != parts) {
    finished_parts_.wait(finished, std::memory_order_acquire);
    finished = finished_parts_.load(std::memory_order_acquire);
  }
  [[maybe_unused]] const std::uint64_t word = claim_.load(std::memory_order_relaxed);
  assert((word & 0xFFFFu) == ((word >> 16) & 0xFFFFu));  // the two ends met
}

void ThreadPhaseExecutor::prepare() {
  if (workers_.empty()) return;
  // A batch number of its own with no parts (claim_ still carries the last
  // batch's tag, so nothing can be claimed under it: invariant 1): sleeping
  // workers wake, find nothing, and poll for the next batch.
  batch_.fetch_add(1, std::memory_order_release);
  batch_.notify_all();
}

void ThreadPhaseExecutor::worker_loop() {
  using Clock = std::chrono::steady_clock;
  std::uint32_t seen = 0;
  for (;;) {
    std::uint32_t now = batch_.load(std::memory_order_acquire);
    const Clock::time_point spin_until = Clock::now() + spin_window_;
    for (int poll = 1; now == seen; ++poll) {
      cpu_relax();
      now = batch_.load(std::memory_order_acquire);
      if (poll % kPollsPerClockRead == 0 && Clock::now() >= spin_until) break;
    }
    while (now == seen) {
      batch_.wait(seen, std::memory_order_acquire);
      now = batch_.load(std::memory_order_acquire);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = now;
    drain_parts(now, false);
  }
}

}  // namespace bustle::app
