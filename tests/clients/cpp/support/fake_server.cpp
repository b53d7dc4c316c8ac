// The scripted one-connection TCP server of fake_server.hpp, for transport
// tests: every read has a deadline, so its thread always ends.
#include "fake_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace bustle::test {
namespace {

using Clock = std::chrono::steady_clock;

int bind_loopback(std::uint16_t& port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.sin_port);
  return fd;
}

int poll_ms(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return 0;
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}

}  // namespace

bool FakePeer::read_exact(std::uint8_t* out, std::size_t n, Clock::time_point deadline) {
  std::size_t got = 0;
  while (got < n) {
    if (poll_ms(fd_, POLLIN, deadline) <= 0) return false;
    const ssize_t r = ::read(fd_, out + got, n - got);
    if (r <= 0) return false;
    got += static_cast<std::size_t>(r);
  }
  return true;
}

std::optional<std::vector<std::uint8_t>> FakePeer::read_frame(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::uint8_t prefix[4];
  if (!read_exact(prefix, 4, deadline)) return std::nullopt;
  const std::uint32_t n = std::uint32_t{prefix[0]} | (std::uint32_t{prefix[1]} << 8) |
                          (std::uint32_t{prefix[2]} << 16) | (std::uint32_t{prefix[3]} << 24);
  if (n > (1u << 20)) return std::nullopt;
  std::vector<std::uint8_t> payload(n);
  if (!read_exact(payload.data(), n, deadline)) return std::nullopt;
  return payload;
}

bool FakePeer::wait_for_eof(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (poll_ms(fd_, POLLIN, deadline) <= 0) return false;
    std::uint8_t buf[256];
    const ssize_t r = ::read(fd_, buf, sizeof buf);
    if (r == 0) return true;
    if (r < 0) return errno == ECONNRESET;
  }
}

bool FakePeer::write(std::span<const std::uint8_t> bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t r = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    sent += static_cast<std::size_t>(r);
  }
  return true;
}

void FakePeer::close_now() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

FakeServer::FakeServer(Script script) {
  listen_fd_ = bind_loopback(port_);
  if (listen_fd_ < 0 || listen(listen_fd_, 4) != 0) {
    failures_.push_back(std::string("fake server cannot listen: ") + std::strerror(errno));
    return;
  }
  thread_ = std::thread([this, script = std::move(script)] {
    if (poll_ms(listen_fd_, POLLIN, Clock::now() + std::chrono::seconds(5)) <= 0) {
      fail("fake server: no client connected within 5 s");
      return;
    }
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      fail(std::string("fake server: accept failed: ") + std::strerror(errno));
      return;
    }
    FakePeer peer(fd);
    script(peer, *this);
    peer.close_now();
  });
}

FakeServer::~FakeServer() {
  join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

void FakeServer::fail(std::string what) {
  std::lock_guard<std::mutex> lock(mutex_);
  failures_.push_back(std::move(what));
}

std::vector<std::string> FakeServer::join() {
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  return failures_;
}

std::uint16_t closed_port() {
  std::uint16_t port = 0;
  const int fd = bind_loopback(port);
  if (fd >= 0) close(fd);
  return port;
}

}  // namespace bustle::test
