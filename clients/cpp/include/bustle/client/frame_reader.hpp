// FrameReader: turns the byte stream a server sends into verified ServerFrames.
//
// It wraps proto::FrameDecoder (length-prefix reassembly with a cap checked
// before any frame is buffered) and runs proto::verify_server_frame on every
// payload before handing it out, so no caller ever reads an unverified field.
// Transport-agnostic: feed it bytes from a socket, a file or a test vector.
//
// Invariants:
//   1. A frame handed out has passed the FlatBuffers Verifier with the server
//      limits (depth, table count, size <= the cap).
//   2. After any error the reader stays in that error (sticky); the stream is
//      not resynchronisable, so the connection must be closed.
//   3. Bytes are consumed only by next(); feed() never drops input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "bustle/proto/framing.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::client {

enum class ReadStatus : std::uint8_t {
  NeedMore,       // no complete frame buffered yet; feed more bytes
  Frame,          // `frame` and `payload` hold one verified frame
  FrameTooLarge,  // a length prefix exceeded the cap (sticky)
  EmptyFrame,     // a length prefix of 0 (sticky)
  Malformed,      // a complete payload failed verification (sticky)
};

const char* to_string(ReadStatus s);

// True for the statuses after which the stream is unusable.
constexpr bool is_error(ReadStatus s) {
  return s == ReadStatus::FrameTooLarge || s == ReadStatus::EmptyFrame ||
         s == ReadStatus::Malformed;
}

struct ReadResult {
  ReadStatus status = ReadStatus::NeedMore;
  // On Frame: the verified root and the payload it lives in (without the
  // length prefix). Both view the reader's buffer and stay valid until the
  // next call to feed() or next(); copy `payload` to keep the frame.
  const bustle::wire::ServerFrame* frame = nullptr;
  std::span<const std::uint8_t> payload;
  // On an error: a sentence naming what failed (empty otherwise).
  std::string error;
};

class FrameReader {
 public:
  // [Limit: 1 <= max_frame_bytes <= proto::kServerFrameMaxBytes is the
  //  intended range; the default is the protocol's server-frame cap (64 MiB).]
  explicit FrameReader(std::uint32_t max_frame_bytes = bustle::proto::kServerFrameMaxBytes);

  // Appends bytes. Invalidates the views of the last ReadResult. After an
  // error the bytes are ignored.
  void feed(std::span<const std::uint8_t> bytes);

  // Returns the next complete, verified frame, NeedMore, or the sticky error.
  ReadResult next();

  bool failed() const { return is_error(error_status_); }
  std::size_t buffered_bytes() const { return decoder_.buffered_bytes(); }
  std::uint32_t max_frame_bytes() const { return max_frame_bytes_; }
  std::uint64_t frames_total() const { return frames_total_; }

 private:
  std::uint32_t max_frame_bytes_;
  bustle::proto::FrameDecoder decoder_;
  ReadStatus error_status_ = ReadStatus::NeedMore;
  std::string error_message_;
  std::uint64_t frames_total_ = 0;
};

}  // namespace bustle::client
