#include "bustle/app/thread_phase_executor.hpp"

#include <stdexcept>
#include <string>

namespace bustle::app {

ThreadPhaseExecutor::ThreadPhaseExecutor(std::uint32_t threads) {
  if (threads < 1 || threads > kMaxThreads) {
    throw std::invalid_argument("phase executor: threads must be in [1, " +
                                std::to_string(kMaxThreads) + "], got " + std::to_string(threads));
  }
  workers_.reserve(threads - 1);
  for (std::uint32_t t = 1; t < threads; ++t) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPhaseExecutor::~ThreadPhaseExecutor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPhaseExecutor::drain_parts() {
  for (;;) {
    const std::uint32_t p = next_part_.fetch_add(1, std::memory_order_relaxed);
    if (p >= parts_) return;
    fn_(context_, p);
  }
}

void ThreadPhaseExecutor::run(std::uint32_t parts, PartFn fn, void* context) {
  if (parts == 0) return;
  if (workers_.empty() || parts == 1) {
    for (std::uint32_t p = 0; p < parts; ++p) fn(context, p);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = fn;
    context_ = context;
    parts_ = parts;
    next_part_.store(0, std::memory_order_relaxed);
    busy_workers_ = static_cast<std::uint32_t>(workers_.size());
    ++batch_;
  }
  wake_.notify_all();
  drain_parts();
  // The parts are all claimed; wait until the workers finished theirs (the
  // mutex also publishes their writes to this thread).
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return busy_workers_ == 0; });
}

void ThreadPhaseExecutor::worker_loop() {
  std::uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || batch_ != seen; });
    if (stop_) return;
    seen = batch_;
    lock.unlock();
    drain_parts();
    lock.lock();
    if (--busy_workers_ == 0) done_.notify_one();
  }
}

}  // namespace bustle::app
