// Connection: a blocking TCP transport to a Bustle server, for tools and tests.
//
// Every operation takes a timeout and returns a status enum with a message;
// none throws for I/O problems. Internally each call runs its own
// asio::io_context until the operation completes or the deadline passes, then
// cancels and drains the operation, so no handler outlives the call.
//
// Not thread-safe: one thread uses a Connection at a time. The engine plugin
// will use the transport-agnostic FrameReader with its own socket instead.
//
// Invariants:
//   1. Frames returned by read_frame() have passed proto::verify_server_frame.
//   2. After a protocol error (oversize, empty, malformed frame), a transport
//      error, a send timeout or EOF, the socket is closed and stays closed.
//   3. A read timeout keeps the connection open and keeps every byte received
//      so far; the next read_frame() continues where this one stopped.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "bustle/client/frame_reader.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::client {

enum class ConnectStatus : std::uint8_t {
  Connected,
  ResolveFailed,  // host name could not be resolved
  Refused,        // nobody listens on that address/port
  Timeout,        // no answer within the timeout
  Error,          // any other socket error (message says which)
};
const char* to_string(ConnectStatus s);

enum class SendStatus : std::uint8_t {
  Sent,          // every byte was handed to the kernel
  NotConnected,  // no open connection
  Timeout,       // not all bytes written in time; the connection was closed
  Error,         // socket error; the connection was closed
};
const char* to_string(SendStatus s);

enum class ReceiveStatus : std::uint8_t {
  Frame,          // one verified ServerFrame
  Timeout,        // no complete frame in time; the connection stays open
  Eof,            // the server closed the connection (after any complete frames)
  NotConnected,   // no open connection
  FrameTooLarge,  // a length prefix above the cap; the connection was closed
  EmptyFrame,     // a zero length prefix; the connection was closed
  Malformed,      // verification failed; the connection was closed
  Error,          // socket error; the connection was closed
};
const char* to_string(ReceiveStatus s);

struct ConnectResult {
  ConnectStatus status = ConnectStatus::Error;
  std::string message;
  bool ok() const { return status == ConnectStatus::Connected; }
};

struct SendResult {
  SendStatus status = SendStatus::NotConnected;
  std::string message;
  bool ok() const { return status == SendStatus::Sent; }
};

struct ReceiveResult {
  ReceiveStatus status = ReceiveStatus::NotConnected;
  // On Frame: views into the connection's buffer, valid until the next call
  // to read_frame(), connect() or close() on this Connection.
  const bustle::wire::ServerFrame* frame = nullptr;
  std::span<const std::uint8_t> payload;
  std::string message;
  bool ok() const { return status == ReceiveStatus::Frame; }
};

class Connection {
 public:
  Connection();
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Connection(Connection&&) noexcept;
  Connection& operator=(Connection&&) noexcept;

  // Resolves `host` (name or address) and connects to the first endpoint that
  // answers, all within `timeout`. Closes any previous connection first and
  // starts with an empty frame buffer. Sets TCP_NODELAY.
  ConnectResult connect(const std::string& host, std::uint16_t port,
                        std::chrono::milliseconds timeout);

  // Writes one complete frame (length prefix included, e.g. from messages.hpp).
  SendResult send(std::span<const std::uint8_t> frame, std::chrono::milliseconds timeout);

  // Returns the next verified frame: from bytes already buffered if a whole
  // frame is there, otherwise reading until one is complete or `timeout`
  // passes. A timeout of 0 only uses bytes already available.
  ReceiveResult read_frame(std::chrono::milliseconds timeout);

  void close();
  bool is_open() const;
  // "address:port" of the peer after a successful connect, else empty.
  const std::string& peer() const;
  std::uint64_t bytes_received() const;
  std::uint64_t bytes_sent() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bustle::client
