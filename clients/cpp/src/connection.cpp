// The blocking Asio transport: connect, send and receive whole frames, each
// with a timeout and a status saying what went wrong (connection.hpp).
#include "bustle/client/connection.hpp"

#include <asio.hpp>
#include <cassert>
#include <vector>

namespace bustle::client {

using Clock = std::chrono::steady_clock;
using asio::ip::tcp;

const char* to_string(ConnectStatus s) {
  switch (s) {
    case ConnectStatus::Connected:
      return "connected";
    case ConnectStatus::ResolveFailed:
      return "resolve_failed";
    case ConnectStatus::Refused:
      return "refused";
    case ConnectStatus::Timeout:
      return "timeout";
    case ConnectStatus::Error:
      return "error";
  }
  return "?";
}

const char* to_string(SendStatus s) {
  switch (s) {
    case SendStatus::Sent:
      return "sent";
    case SendStatus::NotConnected:
      return "not_connected";
    case SendStatus::Timeout:
      return "timeout";
    case SendStatus::Error:
      return "error";
  }
  return "?";
}

const char* to_string(ReceiveStatus s) {
  switch (s) {
    case ReceiveStatus::Frame:
      return "frame";
    case ReceiveStatus::Timeout:
      return "timeout";
    case ReceiveStatus::Eof:
      return "eof";
    case ReceiveStatus::NotConnected:
      return "not_connected";
    case ReceiveStatus::FrameTooLarge:
      return "frame_too_large";
    case ReceiveStatus::EmptyFrame:
      return "empty_frame";
    case ReceiveStatus::Malformed:
      return "malformed";
    case ReceiveStatus::Error:
      return "error";
  }
  return "?";
}

struct Connection::Impl {
  // One read syscall fills at most this much; frames larger than this are
  // reassembled by the FrameReader.
  static constexpr std::size_t kReadChunkBytes = 64 * 1024;

  asio::io_context io;
  tcp::socket socket{io};
  FrameReader reader;
  std::vector<std::uint8_t> chunk = std::vector<std::uint8_t>(kReadChunkBytes);
  bool eof = false;
  std::string peer;
  std::uint64_t bytes_received = 0;
  std::uint64_t bytes_sent = 0;

  // Runs handlers until `done` or the deadline. On the deadline, `cancel`
  // aborts the pending operation and the loop drains until its handler ran,
  // so the handler's captured locals are never used after we return. The
  // caller looks at the handler's error code: a success that raced the
  // deadline is still a success.
  template <class Cancel>
  void run_until(const bool& done, Clock::time_point deadline, Cancel cancel) {
    io.restart();
    while (!done) {
      const auto now = Clock::now();
      if (now >= deadline) break;
      io.run_one_for(deadline - now);
      if (io.stopped() && !done) io.restart();
    }
    if (done) return;
    cancel();
    io.restart();
    while (!done) io.run_one();
  }

  void close() {
    asio::error_code ignored;
    if (socket.is_open()) {
      socket.shutdown(tcp::socket::shutdown_both, ignored);
      socket.close(ignored);
    }
  }
};

Connection::Connection() : impl_(std::make_unique<Impl>()) {}
Connection::~Connection() {
  if (impl_) impl_->close();
}
Connection::Connection(Connection&&) noexcept = default;
Connection& Connection::operator=(Connection&&) noexcept = default;

ConnectResult Connection::connect(const std::string& host, std::uint16_t port,
                                  std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  s.close();
  s.reader = FrameReader();
  s.eof = false;
  s.peer.clear();
  const auto deadline = Clock::now() + timeout;

  tcp::resolver resolver(s.io);
  bool resolved = false;
  asio::error_code resolve_ec;
  tcp::resolver::results_type endpoints;
  resolver.async_resolve(host, std::to_string(port),
                         [&](const asio::error_code& ec, tcp::resolver::results_type r) {
                           resolve_ec = ec;
                           endpoints = std::move(r);
                           resolved = true;
                         });
  s.run_until(resolved, deadline, [&] { resolver.cancel(); });
  const std::string where = host + ":" + std::to_string(port);
  if (resolve_ec == asio::error::operation_aborted) {
    return {ConnectStatus::Timeout, "resolving " + where + " timed out"};
  }
  if (resolve_ec || endpoints.empty()) {
    return {ConnectStatus::ResolveFailed,
            "cannot resolve " + where + ": " +
                (resolve_ec ? resolve_ec.message() : std::string("no addresses"))};
  }

  bool connected = false;
  asio::error_code connect_ec;
  tcp::endpoint endpoint;
  asio::async_connect(s.socket, endpoints,
                      [&](const asio::error_code& ec, const tcp::endpoint& ep) {
                        connect_ec = ec;
                        endpoint = ep;
                        connected = true;
                      });
  s.run_until(connected, deadline, [&] {
    asio::error_code ignored;
    s.socket.cancel(ignored);
  });
  if (connect_ec) {
    s.close();
    if (connect_ec == asio::error::operation_aborted) {
      return {ConnectStatus::Timeout, "connecting to " + where + " timed out after " +
                                          std::to_string(timeout.count()) + " ms"};
    }
    if (connect_ec == asio::error::connection_refused) {
      return {ConnectStatus::Refused, "cannot connect to " + where + ": connection refused"};
    }
    return {ConnectStatus::Error, "cannot connect to " + where + ": " + connect_ec.message()};
  }
  asio::error_code ignored;
  s.socket.set_option(tcp::no_delay(true), ignored);
  s.peer = endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  assert(s.socket.is_open());
  return {ConnectStatus::Connected, "connected to " + s.peer};
}

SendResult Connection::send(std::span<const std::uint8_t> frame,
                            std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  if (!s.socket.is_open()) return {SendStatus::NotConnected, "not connected"};
  assert(!frame.empty());
  bool done = false;
  asio::error_code write_ec;
  std::size_t written = 0;
  asio::async_write(s.socket, asio::buffer(frame.data(), frame.size()),
                    [&](const asio::error_code& ec, std::size_t n) {
                      write_ec = ec;
                      written = n;
                      done = true;
                    });
  s.run_until(done, Clock::now() + timeout, [&] {
    asio::error_code ignored;
    s.socket.cancel(ignored);
  });
  s.bytes_sent += written;
  if (!write_ec) {
    assert(written == frame.size());
    return {SendStatus::Sent, {}};
  }
  // A partial write leaves the peer mid-frame: the stream cannot continue.
  s.close();
  if (write_ec == asio::error::operation_aborted) {
    return {SendStatus::Timeout, "sending " + std::to_string(frame.size()) + " bytes timed out (" +
                                     std::to_string(written) + " written); connection closed"};
  }
  return {SendStatus::Error, "send failed: " + write_ec.message() + "; connection closed"};
}

ReceiveResult Connection::read_frame(std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  const auto deadline = Clock::now() + timeout;
  ReceiveResult result;
  for (;;) {
    // Frames already buffered come first, even after EOF.
    ReadResult r = s.reader.next();
    switch (r.status) {
      case ReadStatus::Frame:
        result.status = ReceiveStatus::Frame;
        result.frame = r.frame;
        result.payload = r.payload;
        return result;
      case ReadStatus::FrameTooLarge:
        result.status = ReceiveStatus::FrameTooLarge;
        break;
      case ReadStatus::EmptyFrame:
        result.status = ReceiveStatus::EmptyFrame;
        break;
      case ReadStatus::Malformed:
        result.status = ReceiveStatus::Malformed;
        break;
      case ReadStatus::NeedMore:
        break;
    }
    if (r.status != ReadStatus::NeedMore) {
      s.close();
      result.message = r.error + "; connection closed";
      return result;
    }
    if (s.eof) {
      s.close();
      result.status = ReceiveStatus::Eof;
      result.message = s.reader.buffered_bytes() == 0
                           ? "server closed the connection"
                           : "server closed the connection in the middle of a frame (" +
                                 std::to_string(s.reader.buffered_bytes()) + " bytes buffered)";
      return result;
    }
    if (!s.socket.is_open()) {
      result.status = ReceiveStatus::NotConnected;
      result.message = "not connected";
      return result;
    }

    bool done = false;
    asio::error_code read_ec;
    std::size_t n = 0;
    s.socket.async_read_some(asio::buffer(s.chunk),
                             [&](const asio::error_code& ec, std::size_t got) {
                               read_ec = ec;
                               n = got;
                               done = true;
                             });
    s.run_until(done, deadline, [&] {
      asio::error_code ignored;
      s.socket.cancel(ignored);
    });
    if (n > 0) {
      s.bytes_received += n;
      s.reader.feed(std::span<const std::uint8_t>(s.chunk.data(), n));
    }
    if (!read_ec) continue;
    if (read_ec == asio::error::eof) {
      s.eof = true;
      continue;  // hand out complete frames first, then report Eof
    }
    if (read_ec == asio::error::operation_aborted) {
      // The deadline passed; a frame may have completed with the last bytes.
      ReadResult late = s.reader.next();
      if (late.status == ReadStatus::Frame) {
        result.status = ReceiveStatus::Frame;
        result.frame = late.frame;
        result.payload = late.payload;
        return result;
      }
      if (late.status != ReadStatus::NeedMore) continue;  // reported by the loop head
      result.status = ReceiveStatus::Timeout;
      result.message = "no complete frame within " + std::to_string(timeout.count()) + " ms";
      return result;
    }
    s.close();
    result.status = ReceiveStatus::Error;
    result.message = "receive failed: " + read_ec.message() + "; connection closed";
    return result;
  }
}

void Connection::close() {
  impl_->close();
}
bool Connection::is_open() const {
  return impl_->socket.is_open();
}
const std::string& Connection::peer() const {
  return impl_->peer;
}
std::uint64_t Connection::bytes_received() const {
  return impl_->bytes_received;
}
std::uint64_t Connection::bytes_sent() const {
  return impl_->bytes_sent;
}

}  // namespace bustle::client
