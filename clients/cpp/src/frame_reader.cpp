// Bytes from the server into verified ServerFrames, with the size cap and
// the first bad frame reported (frame_reader.hpp).
#include "bustle/client/frame_reader.hpp"

#include <cassert>

namespace bustle::client {

const char* to_string(ReadStatus s) {
  switch (s) {
    case ReadStatus::NeedMore:
      return "need_more";
    case ReadStatus::Frame:
      return "frame";
    case ReadStatus::FrameTooLarge:
      return "frame_too_large";
    case ReadStatus::EmptyFrame:
      return "empty_frame";
    case ReadStatus::Malformed:
      return "malformed";
  }
  return "?";
}

FrameReader::FrameReader(std::uint32_t max_frame_bytes)
    : max_frame_bytes_(max_frame_bytes), decoder_(max_frame_bytes) {
  assert(max_frame_bytes > 0);
}

void FrameReader::feed(std::span<const std::uint8_t> bytes) {
  if (failed()) return;
  decoder_.feed(bytes);
}

ReadResult FrameReader::next() {
  ReadResult result;
  if (failed()) {
    result.status = error_status_;
    result.error = error_message_;
    return result;
  }
  std::span<const std::uint8_t> payload;
  switch (decoder_.next(payload)) {
    case bustle::proto::DecodeStatus::NeedMore:
      result.status = ReadStatus::NeedMore;
      return result;
    case bustle::proto::DecodeStatus::FrameTooLarge:
      error_status_ = ReadStatus::FrameTooLarge;
      error_message_ = "server frame declares " + std::to_string(decoder_.declared_length()) +
                       " bytes, over the cap of " + std::to_string(max_frame_bytes_) + " bytes";
      break;
    case bustle::proto::DecodeStatus::EmptyFrame:
      error_status_ = ReadStatus::EmptyFrame;
      error_message_ = "server frame declares a length of 0 bytes";
      break;
    case bustle::proto::DecodeStatus::Frame: {
      std::string why;
      const auto* root = bustle::proto::verify_server_frame(payload, why);
      if (root != nullptr) {
        ++frames_total_;
        result.status = ReadStatus::Frame;
        result.frame = root;
        result.payload = payload;
        return result;
      }
      error_status_ = ReadStatus::Malformed;
      error_message_ = "server frame of " + std::to_string(payload.size()) +
                       " bytes failed verification: " + why;
      break;
    }
  }
  assert(failed());
  result.status = error_status_;
  result.error = error_message_;
  return result;
}

}  // namespace bustle::client
