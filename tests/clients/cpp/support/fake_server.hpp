// A scripted one-connection TCP server on 127.0.0.1 for transport tests: it
// accepts one client (waiting at most 5 s) and runs a script on a thread.
// Every read in the script has a deadline, so the thread always ends.
// Scripts must not use Catch assertions (not thread-safe): they call fail(),
// and the test checks failures() after join().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace bustle::test {

class FakePeer {
 public:
  explicit FakePeer(int fd) : fd_(fd) {}
  // One client frame payload (prefix stripped), or nullopt on EOF/timeout.
  std::optional<std::vector<std::uint8_t>> read_frame(std::chrono::milliseconds timeout);
  // Waits until the client closes (read returns 0) or the timeout; true on EOF.
  bool wait_for_eof(std::chrono::milliseconds timeout);
  bool write(std::span<const std::uint8_t> bytes);
  void close_now();

 private:
  bool read_exact(std::uint8_t* out, std::size_t n, std::chrono::steady_clock::time_point deadline);
  int fd_;
};

class FakeServer {
 public:
  using Script = std::function<void(FakePeer&, FakeServer&)>;
  explicit FakeServer(Script script);
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  std::uint16_t port() const { return port_; }
  void fail(std::string what);
  // Waits for the script to end; returns every fail() message.
  std::vector<std::string> join();

 private:
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> failures_;
};

// A port on 127.0.0.1 that nobody listens on (bound, then closed).
std::uint16_t closed_port();

}  // namespace bustle::test
