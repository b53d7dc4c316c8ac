// Test helpers: build server->client frames the way a server would, so SDK
// tests can feed exact byte sequences without a server.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bustle/proto/framing.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::test {

namespace wire = bustle::wire;

inline wire::EntityState state(std::uint32_t index, std::uint32_t generation, std::int32_t x_cm,
                               std::int32_t y_cm, std::uint16_t heading_q = 0,
                               std::uint16_t speed_cmps = 0,
                               wire::EntityKind kind = wire::EntityKind::Pedestrian) {
  return wire::EntityState(wire::EntityId(index, generation), x_cm, y_cm, heading_q, speed_cmps,
                           kind);
}

struct DeltaSpec {
  std::uint64_t step = 1;
  std::uint64_t sim_time_us = 0;
  std::uint64_t digest = 0;
  bool baseline = false;
  std::vector<wire::EntityState> entered;
  std::vector<wire::EntityState> updated;
  std::vector<wire::EntityId> left;
};

// Payload (no length prefix) of a ServerFrame.
inline std::vector<std::uint8_t> finish_server(flatbuffers::FlatBufferBuilder& fbb,
                                               wire::ServerMessage type,
                                               flatbuffers::Offset<void> message) {
  const auto root = wire::CreateServerFrame(fbb, type, message);
  wire::FinishServerFrameBuffer(fbb, root);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

inline std::vector<std::uint8_t> delta_payload(const DeltaSpec& d) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto entered = fbb.CreateVectorOfStructs(d.entered);
  const auto updated = fbb.CreateVectorOfStructs(d.updated);
  const auto left = fbb.CreateVectorOfStructs(d.left);
  const auto delta =
      wire::CreateDelta(fbb, d.step, d.sim_time_us, d.digest, d.baseline, entered, updated, left);
  return finish_server(fbb, wire::ServerMessage::Delta, delta.Union());
}

inline std::vector<std::uint8_t> welcome_payload(
    std::uint64_t current_step = 0, wire::Role role = wire::Role::Viewer,
    std::uint16_t protocol_version = bustle::proto::kProtocolVersion) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto w = wire::CreateWelcomeDirect(fbb, "test-server 0", protocol_version, 7, role, 100000,
                                           wire::ClockMode::Manual, "test", current_step, nullptr);
  return finish_server(fbb, wire::ServerMessage::Welcome, w.Union());
}

inline std::vector<std::uint8_t> error_payload(wire::ErrorCode code, const std::string& message) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto e = wire::CreateErrorDirect(fbb, code, message.c_str());
  return finish_server(fbb, wire::ServerMessage::Error, e.Union());
}

inline std::vector<std::uint8_t> command_result_payload(
    std::uint32_t request_id, wire::CommandStatus status = wire::CommandStatus::Accepted,
    wire::RejectReason reason = wire::RejectReason::None, std::uint64_t applied_step = 0,
    bool with_stats = false) {
  flatbuffers::FlatBufferBuilder fbb;
  flatbuffers::Offset<wire::Stats> stats = 0;
  if (with_stats) {
    stats = wire::CreateStats(fbb, applied_step, applied_step * 100000, 0xabcdefu, 100000,
                              wire::ClockMode::Manual, false, 12, 20, 1024, 1, 12, 0, 3, 1, 0);
  }
  const auto msg = fbb.CreateString("ok");
  const auto r =
      wire::CreateCommandResult(fbb, request_id, status, reason, msg, applied_step, stats);
  return finish_server(fbb, wire::ServerMessage::CommandResult, r.Union());
}

// Length prefix + payload.
inline std::vector<std::uint8_t> framed(std::span<const std::uint8_t> payload) {
  std::vector<std::uint8_t> out;
  bustle::proto::append_frame(out, payload);
  return out;
}

// Verified Delta view of a payload; the payload must outlive the pointer.
inline const wire::Delta* as_delta(const std::vector<std::uint8_t>& payload) {
  std::string error;
  const auto* root = bustle::proto::verify_server_frame(payload, error);
  return root == nullptr ? nullptr : root->message_as_Delta();
}

}  // namespace bustle::test
