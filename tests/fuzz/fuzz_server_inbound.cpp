// Fuzz target: everything the server does with a client's bytes before the
// sim thread sees them (server/net/src/server.cpp, Session::on_read and
// handle_payload): length-prefix reassembly (proto::FrameDecoder with the
// client frame cap), the FlatBuffers Verifier with the client limits
// (proto::verify_client_frame), the message dispatch, and command parsing
// (net::parse_command) for both roles.
//
// The input is the raw TCP stream of one connection. It is fed to the decoder
// twice: once whole, and once in chunks of 1..16 bytes (sizes taken from the
// stream itself), because the session receives whatever read_some returns.
// Both passes must see the same frames. Unlike a session, this target does not
// stop at the first bad frame's Error: it keeps going only while the decoder
// is usable, exactly like the session's read loop, and it parses every
// verified frame whatever the handshake phase, so every message type is
// reached from any position in the stream.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "bustle/net/command_parser.hpp"
#include "bustle/proto/framing.hpp"
#include "bustle/proto/wire.hpp"

namespace {

using bustle::proto::DecodeStatus;
namespace wire = bustle::wire;

// What the session reads from one verified frame, reduced to a number so the
// two passes can be compared.
std::uint64_t handle_payload(std::span<const std::uint8_t> payload) {
  std::string error;
  const wire::ClientFrame* frame = bustle::proto::verify_client_frame(payload, error);
  if (frame == nullptr) {
    if (error.empty()) std::abort();  // a rejection must say why
    return 1;
  }
  std::uint64_t seen = 2 + static_cast<std::uint64_t>(frame->message_type());
  switch (frame->message_type()) {
    case wire::ClientMessage::Hello: {
      const wire::Hello* hello = frame->message_as_Hello();
      if (hello == nullptr) return seen;
      seen += hello->protocol_version();
      if (hello->token() != nullptr) seen += hello->token()->str().size();
      if (hello->client_name() != nullptr) seen += hello->client_name()->str().size();
      seen += static_cast<std::uint64_t>(hello->role());
      return seen;
    }
    case wire::ClientMessage::Subscribe: {
      const wire::Subscribe* sub = frame->message_as_Subscribe();
      if (sub == nullptr || sub->kinds() == nullptr) return seen;
      for (const auto k : *sub->kinds()) seen += 1u << (static_cast<std::uint32_t>(k) & 31u);
      return seen;
    }
    case wire::ClientMessage::Command: {
      const wire::Command* cmd = frame->message_as_Command();
      if (cmd == nullptr) return seen;
      for (const bustle::net::Role role :
           {bustle::net::Role::Viewer, bustle::net::Role::Operator}) {
        const bustle::net::ParsedCommand parsed = bustle::net::parse_command(*cmd, role);
        // A rejection always names its reason; an acceptance never carries one.
        if (!parsed.ok() && parsed.message.empty()) std::abort();
        seen = seen * 31 + static_cast<std::uint64_t>(parsed.reason) + parsed.message.size();
      }
      (void)bustle::net::allowed_for_viewer(cmd->body_type());
      return seen;
    }
    default:
      return seen;
  }
}

// Runs the session's read loop over `data` delivered in chunks; returns one
// value per frame or terminal status.
std::vector<std::uint64_t> read_stream(std::span<const std::uint8_t> data, bool chunked) {
  bustle::proto::FrameDecoder decoder(bustle::proto::kClientFrameMaxBytes);
  std::vector<std::uint64_t> seen;
  std::size_t at = 0;
  bool usable = true;
  while (at < data.size() && usable) {
    std::size_t n = data.size() - at;
    if (chunked) n = std::min<std::size_t>(n, 1 + (data[at] & 15u));
    decoder.feed(data.subspan(at, n));
    at += n;
    std::span<const std::uint8_t> payload;
    for (;;) {
      const DecodeStatus st = decoder.next(payload);
      if (st == DecodeStatus::NeedMore) break;
      if (st != DecodeStatus::Frame) {
        // FrameTooLarge / EmptyFrame: the session closes the connection.
        if (decoder.next(payload) != st) std::abort();  // sticky
        seen.push_back(1000 + static_cast<std::uint64_t>(st));
        usable = false;
        break;
      }
      if (payload.empty() || payload.size() > bustle::proto::kClientFrameMaxBytes) std::abort();
      seen.push_back(handle_payload(payload));
    }
  }
  return seen;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  if (read_stream(bytes, false) != read_stream(bytes, true)) std::abort();
  return 0;
}
