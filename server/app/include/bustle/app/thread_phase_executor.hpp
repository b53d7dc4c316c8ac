// The app layer's core::PhaseExecutor: a small pool of worker threads that
// run a step phase's parts together with the calling (sim) thread. The core
// decides what a part is and merges the parts in order, so any thread count
// gives the same digest (core/phase_executor.hpp); this class only decides
// which thread runs which part (first come, first served).
//
// A pool of N threads starts N - 1 workers; the caller of run() is the Nth.
// Between phases the workers sleep on a condition variable, so an idle
// server costs nothing. One run() at a time (the sim thread's).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "bustle/core/phase_executor.hpp"

namespace bustle::app {

class ThreadPhaseExecutor final : public core::PhaseExecutor {
 public:
  // threads in [1, kMaxThreads]; 1 runs everything on the caller.
  explicit ThreadPhaseExecutor(std::uint32_t threads);
  ~ThreadPhaseExecutor() override;
  ThreadPhaseExecutor(const ThreadPhaseExecutor&) = delete;
  ThreadPhaseExecutor& operator=(const ThreadPhaseExecutor&) = delete;

  void run(std::uint32_t parts, PartFn fn, void* context) override;
  std::uint32_t threads() const override { return static_cast<std::uint32_t>(workers_.size()) + 1; }

  static constexpr std::uint32_t kMaxThreads = 64;

 private:
  void worker_loop();
  // Claims and runs parts of the current batch until none is left.
  void drain_parts();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;    // workers: a new batch, or stop
  std::condition_variable done_;    // run(): every worker left the batch
  std::uint64_t batch_ = 0;         // generation, guarded by mutex_
  std::uint32_t busy_workers_ = 0;  // workers inside the current batch
  bool stop_ = false;
  // The current batch (written under mutex_ before batch_ moves on).
  PartFn fn_ = nullptr;
  void* context_ = nullptr;
  std::uint32_t parts_ = 0;
  std::atomic<std::uint32_t> next_part_{0};
};

}  // namespace bustle::app
