// The bounded hand-off from the network thread to the sim thread, and the
// wake-up of a sim thread waiting for work (command_queue.hpp).
#include "bustle/net/command_queue.hpp"

namespace bustle::net {

bool CommandQueue::try_push(InboundCommand cmd) {
  {
    std::lock_guard lock(mu_);
    if (closed_ || items_.size() >= capacity_) return false;
    items_.push_back(std::move(cmd));
  }
  cv_.notify_one();
  return true;
}

bool CommandQueue::push_internal(InboundCommand cmd) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    items_.push_back(std::move(cmd));
  }
  cv_.notify_one();
  return true;
}

std::optional<InboundCommand> CommandQueue::try_pop() {
  std::lock_guard lock(mu_);
  if (items_.empty()) return std::nullopt;
  InboundCommand c = std::move(items_.front());
  items_.pop_front();
  return c;
}

bool CommandQueue::wait_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, deadline, [&] { return closed_ || notified_ || !items_.empty(); });
  notified_ = false;
  return !items_.empty();
}

void CommandQueue::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return closed_ || notified_ || !items_.empty(); });
  notified_ = false;
}

void CommandQueue::notify() {
  {
    std::lock_guard lock(mu_);
    notified_ = true;
  }
  cv_.notify_all();
}

void CommandQueue::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool CommandQueue::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

std::size_t CommandQueue::size() const {
  std::lock_guard lock(mu_);
  return items_.size();
}

}  // namespace bustle::net
