// Framing and verification for the Bustle wire protocol.
//
// A frame is a 4-byte little-endian payload length followed by the payload,
// one FlatBuffer with a file identifier ("BCL1" client->server, "BSV1"
// server->client). The decoder enforces a frame cap before buffering a frame,
// and every payload passes the FlatBuffers Verifier with tightened depth and
// table limits before any field is read. Transport-agnostic: no sockets here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "bustle/proto/wire.hpp"

namespace bustle::proto {

inline constexpr std::size_t kLengthPrefixBytes = 4;
// Inbound to the server: clients send small frames (hello, commands).
inline constexpr std::uint32_t kClientFrameMaxBytes = 1u << 20;  // 1 MiB
// Inbound to clients: a baseline Delta of a large city can be big.
inline constexpr std::uint32_t kServerFrameMaxBytes = 64u << 20;  // 64 MiB

// Verifier limits. Client frames are shallow and small; server frames carry a
// table per lane in Welcome, so allow more tables there. The largest client
// frames are a LifecycleBatch (frame, command, batch, then one op table and
// one SpawnPedestrian table per op: 515 tables for the 256 ops allowed) and
// SetObservers with views (one table per view): 1024 leaves room for a batch
// of up to ~500 ops to be parsed and answered InvalidArgument ("at most 256")
// instead of closing the connection as malformed.
inline constexpr flatbuffers::uoffset_t kClientMaxDepth = 8;
inline constexpr flatbuffers::uoffset_t kClientMaxTables = 1024;
inline constexpr flatbuffers::uoffset_t kServerMaxDepth = 8;
inline constexpr flatbuffers::uoffset_t kServerMaxTables = 1u << 20;

// Appends one frame (prefix + payload) to out.
void append_frame(std::vector<std::uint8_t>& out, std::span<const std::uint8_t> payload);
// One frame from a finished builder.
std::vector<std::uint8_t> make_frame(const flatbuffers::FlatBufferBuilder& fbb);

enum class DecodeStatus : std::uint8_t {
  NeedMore,       // no complete frame buffered yet
  Frame,          // `payload` holds one complete frame
  FrameTooLarge,  // declared length exceeds the cap; the stream is unusable
  EmptyFrame,     // declared length 0; the stream is unusable
};

const char* to_string(DecodeStatus s);

// FlatBuffers reads scalars in place, and its Verifier checks alignment only
// relative to the start of the buffer, so a payload must start at an address
// aligned for the widest scalar in the schemas (uint64 step, digest).
inline constexpr std::size_t kPayloadAlignment = 8;

// Reassembles frames from a byte stream. After an error status the decoder
// stays in that error; the connection must be closed.
class FrameDecoder {
 public:
  explicit FrameDecoder(std::uint32_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  void feed(std::span<const std::uint8_t> bytes);
  // On Frame, `payload` views the frame, aligned to kPayloadAlignment (a
  // frame behind a 4-byte prefix, or behind a frame of odd length, is copied
  // to an aligned buffer first); it stays valid until the next call to feed()
  // or next().
  DecodeStatus next(std::span<const std::uint8_t>& payload);

  std::size_t buffered_bytes() const { return buffer_.size() - consumed_; }
  std::uint32_t declared_length() const { return declared_; }

 private:
  std::uint32_t max_frame_bytes_;
  std::vector<std::uint8_t> buffer_;
  // Holds the current frame when its place in buffer_ is misaligned;
  // std::allocator storage is aligned for every scalar type.
  std::vector<std::uint8_t> aligned_;
  std::size_t consumed_ = 0;
  std::uint32_t declared_ = 0;
  DecodeStatus error_ = DecodeStatus::NeedMore;
};

// Verifies a payload and returns the root, or nullptr with `error` set to a
// message that names what failed (identifier, structure). A root that is
// returned carries the message table its message_type() names (or type NONE).
const bustle::wire::ClientFrame* verify_client_frame(std::span<const std::uint8_t> payload,
                                                     std::string& error);
const bustle::wire::ServerFrame* verify_server_frame(std::span<const std::uint8_t> payload,
                                                     std::string& error);

// The Verifier checks that a vector's length field is 4-byte aligned, not that
// its elements are aligned for their type: in a verified buffer a [ulong]
// vector may start at 4 mod 8, and iterating it loads uint64s from misaligned
// addresses (found by fuzzing). Copy scalar vectors with this instead.
template <class T>
std::vector<T> copy_scalar_vector(const flatbuffers::Vector<T>* v) {
  static_assert(std::is_arithmetic_v<T>, "scalar vectors only");
  std::vector<T> out;
  if (v == nullptr || v->size() == 0) return out;
  out.resize(v->size());
  std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
  for (T& x : out) x = flatbuffers::EndianScalar(x);
  return out;
}

// The same for vectors of structs whose alignment exceeds the vector's
// 4-byte length field (Vec2d, 8 bytes): elements are copied bytewise into
// aligned storage before any field is read (found by fuzzing). Structs are
// little-endian on the wire, like every supported host.
template <class T>
std::vector<T> copy_struct_vector(const flatbuffers::Vector<const T*>* v) {
  static_assert(std::is_trivially_copyable_v<T>, "FlatBuffers structs only");
  std::vector<T> out;
  if (v == nullptr || v->size() == 0) return out;
  out.resize(v->size());
  std::memcpy(static_cast<void*>(out.data()), v->Data(), out.size() * sizeof(T));
  return out;
}

}  // namespace bustle::proto
