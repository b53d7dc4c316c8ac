// Framing and verification (framing.hpp): the length-prefixed frame decoder
// with its size cap, frame encoding with payloads aligned for FlatBuffers, and
// the tightened Verifier runs every payload passes before a field is read.
#include "bustle/proto/framing.hpp"

#include <cassert>
#include <cstdint>
#include <cstring>

namespace bustle::proto {
namespace {

std::uint32_t read_le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) |
         (std::uint32_t{p[3]} << 24);
}

template <class Root>
const Root* verify_root(std::span<const std::uint8_t> payload, const char* identifier,
                        flatbuffers::uoffset_t max_depth, flatbuffers::uoffset_t max_tables,
                        std::string& error) {
  if (payload.size() < 8) {
    error = "frame of " + std::to_string(payload.size()) + " bytes is too short for a FlatBuffer";
    return nullptr;
  }
  if (!flatbuffers::BufferHasIdentifier(payload.data(), identifier)) {
    error = std::string("file identifier is not \"") + identifier + "\"";
    return nullptr;
  }
  flatbuffers::Verifier verifier(payload.data(), payload.size(), max_depth, max_tables);
  if (!verifier.VerifyBuffer<Root>(identifier)) {
    error = "FlatBuffers verification failed (bad offsets, alignment, depth or table count)";
    return nullptr;
  }
  const Root* root = flatbuffers::GetRoot<Root>(payload.data());
  // The Verifier accepts a union type whose table is absent (an absent table
  // is valid for it); every reader casts the table by its type, so a frame
  // naming a message it does not carry is malformed. (Found by fuzzing.)
  if (static_cast<int>(root->message_type()) != 0 && root->message() == nullptr) {
    error = "message type " + std::to_string(static_cast<int>(root->message_type())) +
            " without its message table";
    return nullptr;
  }
  return root;
}

}  // namespace

void append_frame(std::vector<std::uint8_t>& out, std::span<const std::uint8_t> payload) {
  assert(payload.size() <= UINT32_MAX);
  const auto n = static_cast<std::uint32_t>(payload.size());
  const std::uint8_t prefix[4] = {static_cast<std::uint8_t>(n), static_cast<std::uint8_t>(n >> 8),
                                  static_cast<std::uint8_t>(n >> 16),
                                  static_cast<std::uint8_t>(n >> 24)};
  out.insert(out.end(), prefix, prefix + 4);
  out.insert(out.end(), payload.begin(), payload.end());
}

std::vector<std::uint8_t> make_frame(const flatbuffers::FlatBufferBuilder& fbb) {
  std::vector<std::uint8_t> out;
  out.reserve(kLengthPrefixBytes + fbb.GetSize());
  append_frame(out, {fbb.GetBufferPointer(), fbb.GetSize()});
  return out;
}

const char* to_string(DecodeStatus s) {
  switch (s) {
    case DecodeStatus::NeedMore:
      return "need_more";
    case DecodeStatus::Frame:
      return "frame";
    case DecodeStatus::FrameTooLarge:
      return "frame_too_large";
    case DecodeStatus::EmptyFrame:
      return "empty_frame";
  }
  return "?";
}

void FrameDecoder::feed(std::span<const std::uint8_t> bytes) {
  if (error_ != DecodeStatus::NeedMore) return;
  // Compact lazily: drop consumed bytes before growing the buffer.
  if (consumed_ > 0) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(consumed_));
    consumed_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

DecodeStatus FrameDecoder::next(std::span<const std::uint8_t>& payload) {
  if (error_ != DecodeStatus::NeedMore) return error_;
  const std::size_t avail = buffer_.size() - consumed_;
  if (avail < kLengthPrefixBytes) return DecodeStatus::NeedMore;
  const std::uint32_t n = read_le32(buffer_.data() + consumed_);
  declared_ = n;
  if (n == 0) return error_ = DecodeStatus::EmptyFrame;
  if (n > max_frame_bytes_) return error_ = DecodeStatus::FrameTooLarge;
  if (avail < kLengthPrefixBytes + n) return DecodeStatus::NeedMore;
  const std::uint8_t* start = buffer_.data() + consumed_ + kLengthPrefixBytes;
  if (reinterpret_cast<std::uintptr_t>(start) % kPayloadAlignment != 0) {
    aligned_.assign(start, start + n);
    start = aligned_.data();
  }
  assert(reinterpret_cast<std::uintptr_t>(start) % kPayloadAlignment == 0);
  payload = {start, n};
  consumed_ += kLengthPrefixBytes + n;
  return DecodeStatus::Frame;
}

const bustle::wire::ClientFrame* verify_client_frame(std::span<const std::uint8_t> payload,
                                                     std::string& error) {
  return verify_root<bustle::wire::ClientFrame>(payload, bustle::wire::ClientFrameIdentifier(),
                                                kClientMaxDepth, kClientMaxTables, error);
}

const bustle::wire::ServerFrame* verify_server_frame(std::span<const std::uint8_t> payload,
                                                     std::string& error) {
  return verify_root<bustle::wire::ServerFrame>(payload, bustle::wire::ServerFrameIdentifier(),
                                                kServerMaxDepth, kServerMaxTables, error);
}

}  // namespace bustle::proto
