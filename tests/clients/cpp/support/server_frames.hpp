// Test helpers: build server->client frames the way a server would, so SDK
// tests can feed exact byte sequences without a server.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bustle/proto/framing.hpp"
#include "bustle/proto/motion.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::test {

namespace wire = bustle::wire;

// One Delta.entered record: anchor (lane, s_mm, speed_mmps) at the Delta's step.
inline wire::EntityEnter enter(std::uint32_t index, std::uint32_t generation, std::uint32_t lane,
                               std::uint32_t s_mm, std::uint32_t speed_mmps = 0,
                               wire::EntityKind kind = wire::EntityKind::Pedestrian,
                               std::uint16_t archetype = 0,
                               wire::SimTier tier = wire::SimTier::Full,
                               wire::RepresentationHint rep = wire::RepresentationHint::Actor,
                               wire::ControlPolicy policy = wire::ControlPolicy::RouteFollow,
                               bool corpse = false) {
  return wire::EntityEnter(wire::EntityId(index, generation), lane, s_mm, speed_mmps, archetype,
                           kind, tier, rep, policy, corpse);
}

// A motion record keeping the anchor's lane, or moving it to `lane`.
inline bustle::proto::MotionRecord motion(std::uint32_t index, std::uint32_t s_mm,
                                          std::uint32_t speed_mmps,
                                          std::optional<std::uint32_t> lane = std::nullopt) {
  return bustle::proto::MotionRecord{index, lane.has_value(), lane.value_or(0), s_mm, speed_mmps};
}

struct DeltaSpec {
  std::uint64_t step = 1;
  std::uint64_t sim_time_us = 0;
  std::uint64_t digest = 0;
  bool baseline = false;
  std::vector<wire::EntityEnter> entered = {};
  std::vector<std::pair<std::uint32_t, std::string>> labels = {};
  std::vector<bustle::proto::MotionRecord> motion = {};        // packed with proto::MotionWriter
  std::optional<std::vector<std::uint8_t>> motion_bytes = {};  // sent instead of `motion` when set
  std::vector<wire::EntityChange> changes = {};
  std::vector<wire::EntityId> left = {};
  std::vector<wire::SignalPhaseState> signals = {};
  std::vector<wire::ChainDots> dots = {};  // sent only when `with_dots`
  bool with_dots = false;
  std::vector<wire::EntityId> retiring = {};
  std::uint32_t interest_truncated = 0;
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
  const auto entered = d.entered.empty() ? 0 : fbb.CreateVectorOfStructs(d.entered);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::EntityLabel>>> labels = 0;
  if (!d.labels.empty()) {
    std::vector<flatbuffers::Offset<wire::EntityLabel>> items;
    for (const auto& [index, label] : d.labels)
      items.push_back(wire::CreateEntityLabelDirect(fbb, index, label.c_str()));
    labels = fbb.CreateVector(items);
  }
  flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> motion = 0;
  if (d.motion_bytes) {
    motion = fbb.CreateVector(*d.motion_bytes);
  } else if (!d.motion.empty()) {
    bustle::proto::MotionWriter writer;
    for (const auto& r : d.motion) writer.add(r);
    motion = fbb.CreateVector(writer.bytes());
  }
  const auto changes = d.changes.empty() ? 0 : fbb.CreateVectorOfStructs(d.changes);
  const auto left = d.left.empty() ? 0 : fbb.CreateVectorOfStructs(d.left);
  const auto signals = d.signals.empty() ? 0 : fbb.CreateVectorOfStructs(d.signals);
  const auto dots = d.with_dots ? fbb.CreateVectorOfStructs(d.dots) : 0;
  const auto retiring = d.retiring.empty() ? 0 : fbb.CreateVectorOfStructs(d.retiring);
  const auto delta =
      wire::CreateDelta(fbb, d.step, d.sim_time_us, d.digest, d.baseline, entered, labels, motion,
                        changes, left, signals, dots, retiring, d.interest_truncated);
  return finish_server(fbb, wire::ServerMessage::Delta, delta.Union());
}

// One Welcome lane: a polyline (metres), its length in mm defaults to the
// rounded polyline length, as the server computes it.
struct LaneSpec {
  std::string id;
  std::vector<std::pair<double, double>> points;
  float elevation_m = 0.0f;
  wire::LaneKind kind = wire::LaneKind::Sidewalk;
  std::vector<std::uint32_t> successors = {};
  std::optional<std::uint32_t> length_mm = {};
};

struct WelcomeSpec {
  std::uint64_t current_step = 0;
  wire::Role role = wire::Role::Viewer;
  std::uint16_t protocol_version = bustle::proto::kProtocolVersion;
  std::uint32_t step_us = 100000;
  std::vector<LaneSpec> lanes = {};
  std::vector<std::string> archetypes = {};
};

inline std::vector<std::uint8_t> welcome_payload(const WelcomeSpec& w) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<wire::LaneInfo>> lanes;
  for (std::size_t i = 0; i < w.lanes.size(); ++i) {
    const LaneSpec& l = w.lanes[i];
    std::vector<wire::Vec2d> points;
    double length = 0.0;
    for (std::size_t k = 0; k < l.points.size(); ++k) {
      points.emplace_back(l.points[k].first, l.points[k].second);
      if (k > 0) {
        length += std::hypot(l.points[k].first - l.points[k - 1].first,
                             l.points[k].second - l.points[k - 1].second);
      }
    }
    const std::uint32_t length_mm = l.length_mm.value_or(bustle::proto::to_mm(length));
    lanes.push_back(wire::CreateLaneInfoDirect(fbb, static_cast<std::uint32_t>(i), l.id.c_str(),
                                               l.kind, &points, length, 1.5f, &l.successors,
                                               length_mm, l.elevation_m));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> archetypes;
  for (const std::string& a : w.archetypes) archetypes.push_back(fbb.CreateString(a));
  const auto welcome = wire::CreateWelcomeDirect(
      fbb, "test-server 0", w.protocol_version, 7, w.role, w.step_us, wire::ClockMode::Manual,
      "test", w.current_step, &lanes, nullptr, nullptr, nullptr, 0, &archetypes);
  return finish_server(fbb, wire::ServerMessage::Welcome, welcome.Union());
}

inline std::vector<std::uint8_t> welcome_payload(
    std::uint64_t current_step = 0, wire::Role role = wire::Role::Viewer,
    std::uint16_t protocol_version = bustle::proto::kProtocolVersion) {
  WelcomeSpec w;
  w.current_step = current_step;
  w.role = role;
  w.protocol_version = protocol_version;
  return welcome_payload(w);
}

struct SpawnSpec {
  std::uint64_t handle = 1;
  wire::SpawnState state = wire::SpawnState::Queued;
  bool terminal = false;
  wire::EntityId entity = wire::EntityId(0, 0);
  std::string zone;
};

inline flatbuffers::Offset<wire::SpawnStatus> spawn_status(flatbuffers::FlatBufferBuilder& fbb,
                                                           const SpawnSpec& s) {
  return wire::CreateSpawnStatusDirect(fbb, s.handle, s.state, wire::SpawnFailure::None, s.terminal,
                                       &s.entity, s.zone.empty() ? nullptr : s.zone.c_str());
}

inline std::vector<std::uint8_t> spawn_update_payload(const SpawnSpec& s) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto status = spawn_status(fbb, s);
  const auto u = wire::CreateSpawnUpdate(fbb, status);
  return finish_server(fbb, wire::ServerMessage::SpawnUpdate, u.Union());
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
                              wire::ClockMode::Manual, false, 12, 20, 1024, 1, 12, 0, 3, 1, 0, true,
                              false, 77);
  }
  const auto msg = fbb.CreateString("ok");
  const auto r =
      wire::CreateCommandResult(fbb, request_id, status, reason, msg, applied_step, stats);
  return finish_server(fbb, wire::ServerMessage::CommandResult, r.Union());
}

struct JobSpec {
  std::uint64_t job_id = 1;
  wire::JobKind kind = wire::JobKind::Checkpoint;
  wire::JobState state = wire::JobState::Queued;
  bool terminal = false;
  std::string name = "snap";
  std::uint64_t step = 0;
  std::string message;
};

inline flatbuffers::Offset<wire::JobStatus> job_status(flatbuffers::FlatBufferBuilder& fbb,
                                                       const JobSpec& j) {
  return wire::CreateJobStatusDirect(fbb, j.job_id, j.kind, j.state, j.terminal, j.name.c_str(),
                                     j.step, j.message.empty() ? nullptr : j.message.c_str());
}

inline std::vector<std::uint8_t> job_update_payload(const JobSpec& j) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto status = job_status(fbb, j);
  const auto u = wire::CreateJobUpdate(fbb, status);
  return finish_server(fbb, wire::ServerMessage::JobUpdate, u.Union());
}

struct SnapshotSpec {
  std::string name;
  std::string kind = "checkpoint";
  std::string scenario_id = "test";
  std::uint64_t step = 0;
  std::uint64_t sim_time_us = 0;
  std::uint64_t digest = 0;
  std::uint32_t pedestrians = 0;
  std::int64_t created_unix_ms = 0;
};

// A CommandResult as the server sends it for snapshot commands: with a job
// (checkpoint, restore, save, load, QueryJob) and/or a snapshot list.
struct ResultSpec {
  std::uint32_t request_id = 1;
  wire::CommandStatus status = wire::CommandStatus::Accepted;
  wire::RejectReason reason = wire::RejectReason::None;
  std::string message;
  std::uint64_t applied_step = 0;
  std::optional<JobSpec> job;
  std::optional<std::vector<SnapshotSpec>> snapshots;
};

inline std::vector<std::uint8_t> result_payload(const ResultSpec& r) {
  flatbuffers::FlatBufferBuilder fbb;
  flatbuffers::Offset<wire::JobStatus> job = 0;
  if (r.job) job = job_status(fbb, *r.job);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::SnapshotInfo>>> list = 0;
  if (r.snapshots) {
    std::vector<flatbuffers::Offset<wire::SnapshotInfo>> items;
    for (const SnapshotSpec& e : *r.snapshots) {
      items.push_back(wire::CreateSnapshotInfoDirect(fbb, e.name.c_str(), e.kind.c_str(),
                                                     e.scenario_id.c_str(), e.step, e.sim_time_us,
                                                     e.digest, e.pedestrians, e.created_unix_ms));
    }
    list = fbb.CreateVector(items);
  }
  const auto msg = r.message.empty() ? 0 : fbb.CreateString(r.message);
  const auto res = wire::CreateCommandResult(fbb, r.request_id, r.status, r.reason, msg,
                                             r.applied_step, 0, job, list);
  return finish_server(fbb, wire::ServerMessage::CommandResult, res.Union());
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

// The Subscribe / UpdateInterest in a client frame payload, or nullptr.
inline const wire::Subscribe* as_subscribe(const std::vector<std::uint8_t>& payload) {
  std::string error;
  const auto* root = bustle::proto::verify_client_frame(payload, error);
  return root == nullptr ? nullptr : root->message_as_Subscribe();
}
inline const wire::UpdateInterest* as_update_interest(const std::vector<std::uint8_t>& payload) {
  std::string error;
  const auto* root = bustle::proto::verify_client_frame(payload, error);
  return root == nullptr ? nullptr : root->message_as_UpdateInterest();
}

}  // namespace bustle::test
