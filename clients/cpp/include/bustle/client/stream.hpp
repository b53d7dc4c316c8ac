// SDK types of the stream a subscribed client receives (protocol v2): the
// Welcome's geometry and one decoded Delta, owned, so that callers never
// read generated FlatBuffers types for them. Transport-agnostic.
//
// Decoding is total: every verified Delta either decodes, or decode_delta()
// returns a sentence naming what is wrong (a malformed motion vector names
// its byte offset, an out-of-range enum names the entry); it never crashes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bustle/client/ids.hpp"
#include "bustle/proto/motion.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::client {

// Wire enums of the stream, as SDK types (same values as the schema).
enum class SimTier : std::uint8_t { Full = 0, Simulated = 1, Coarse = 2 };
enum class RepresentationHint : std::uint8_t { Actor = 0, Instanced = 1, Marker = 2, None = 3 };
enum class ControlPolicy : std::uint8_t {
  RouteFollow = 0,
  LaneFollow = 1,
  Yielding = 2,
  WaitingAtSignal = 3,
  Parked = 4,
  Manual = 5,
  DespawnPending = 6,
};
enum class EntityKind : std::uint8_t { Pedestrian = 0, Vehicle = 1 };
// Which axis an EntityChange names.
enum class EntityField : std::uint8_t { SimTier = 0, Representation = 1, Policy = 2, Corpse = 3 };

const char* to_string(EntityKind v);
const char* to_string(SimTier v);
const char* to_string(RepresentationHint v);
const char* to_string(ControlPolicy v);
const char* to_string(EntityField v);

// Welcome geometry. Lanes are named by their dense Welcome.lanes index.
struct LanePoint {
  double x_m = 0.0;
  double y_m = 0.0;
  friend constexpr bool operator==(const LanePoint&, const LanePoint&) = default;
};
struct LaneGeometry {
  std::uint32_t index = 0;
  std::string id;
  bustle::wire::LaneKind kind = bustle::wire::LaneKind::Sidewalk;
  std::vector<LanePoint> points;  // polyline, metres
  double length_m = 0.0;
  float speed_mps_limit = 0.0f;
  std::vector<std::uint32_t> successors;  // lane indices
  std::uint32_t length_mm = 0;            // where dead reckoning stops
  float elevation_m = 0.0f;               // an entity's z on this lane
};
// Garages, signals and lane chains of the Welcome are the generated object-API
// types (every schema field; UnPack). A chain's position in Welcome.chains is
// the chain id Delta.dots use.
using GarageGeometry = bustle::wire::GarageGeometryT;  // id, entrance_lane, route (lane indices)
using SignalGeometry = bustle::wire::SignalGeometryT;  // id, lane, stop_alpha, yield_alpha
using LaneChain =
    bustle::wire::LaneChainInfoT;  // lanes (travel order), cyclic, pedestrian, length_m

struct WelcomeInfo {
  std::string server_version;
  std::uint16_t protocol_version = 0;
  std::uint32_t session_id = 0;
  bustle::wire::Role role = bustle::wire::Role::Viewer;
  std::uint32_t step_us = 0;
  bustle::wire::ClockMode clock_mode = bustle::wire::ClockMode::Realtime;
  std::string scenario_id;
  std::uint64_t current_step = 0;
  std::vector<LaneGeometry> lanes;  // Welcome.lanes, by index (EntityEnter.lane, motion records)
  std::vector<GarageGeometry> garages;  // Welcome.garages, in the server's order
  std::vector<SignalGeometry> signals;  // Welcome.signals; Delta phases index this
  std::vector<LaneChain> chains;        // Welcome.chains; Delta.dots index this
  std::uint32_t dots_every_steps = 0;   // dot steps are multiples of this
  std::vector<std::string> archetypes;  // EntityEnter.archetype indexes this
};

LaneGeometry to_lane_geometry(const bustle::wire::LaneInfo& lane);
GarageGeometry to_garage_geometry(const bustle::wire::GarageGeometry& g);
SignalGeometry to_signal_geometry(const bustle::wire::SignalGeometry& g);
LaneChain to_lane_chain(const bustle::wire::LaneChainInfo& chain);
WelcomeInfo to_welcome_info(const bustle::wire::Welcome& welcome);

// The lane polylines prepared for sampling, one per Welcome lane, by index.
proto::LanePolyline lane_polyline(const LaneGeometry& lane);
std::vector<proto::LanePolyline> lane_polylines(const WelcomeInfo& welcome);

// One Delta.entered entry: its anchor is (lane, s_mm, speed_mmps) at Delta.step.
struct EnteredEntity {
  EntityId id;
  std::uint32_t lane = 0;  // Welcome.lanes index
  std::uint32_t s_mm = 0;
  std::uint32_t speed_mmps = 0;
  std::uint16_t archetype = 0;  // Welcome.archetypes index
  EntityKind kind = EntityKind::Pedestrian;
  SimTier sim_tier = SimTier::Full;
  RepresentationHint representation = RepresentationHint::Actor;
  ControlPolicy policy = ControlPolicy::RouteFollow;
  bool corpse = false;  // a corpse (KillPedestrian) lying where it died
  friend bool operator==(const EnteredEntity&, const EnteredEntity&) = default;
};
// Delta.labels: a name for an entity entered in the same Delta.
struct EntityLabel {
  std::uint32_t index = 0;  // EntityId.index
  std::string label;
  friend bool operator==(const EntityLabel&, const EntityLabel&) = default;
};
// Delta.changes: one axis of an entity already received changed. `value` is
// checked against its field's enum when decoded.
struct EntityChange {
  std::uint32_t index = 0;  // EntityId.index
  EntityField field = EntityField::SimTier;
  std::uint8_t value = 0;  // SimTier / RepresentationHint / ControlPolicy / 1 (Corpse)
  SimTier sim_tier() const { return static_cast<SimTier>(value); }
  bool corpse() const { return value != 0; }
  RepresentationHint representation() const { return static_cast<RepresentationHint>(value); }
  ControlPolicy policy() const { return static_cast<ControlPolicy>(value); }
  friend bool operator==(const EntityChange&, const EntityChange&) = default;
};
// One Delta.signals entry: the phase of Welcome.signals[index] after the step.
struct SignalPhaseEntry {
  std::uint16_t index = 0;
  bustle::wire::SignalPhase phase = bustle::wire::SignalPhase::Open;
  friend bool operator==(const SignalPhaseEntry&, const SignalPhaseEntry&) = default;
};
// One Delta.dots entry: anonymous density on Welcome.chains[chain].
struct ChainDotsEntry {
  std::uint32_t chain = 0;
  std::uint16_t count = 0;
  friend bool operator==(const ChainDotsEntry&, const ChainDotsEntry&) = default;
};

// One decoded Delta (see server.fbs Delta for the semantics).
struct Delta {
  std::uint64_t step = 0;
  std::uint64_t sim_time_us = 0;
  std::uint64_t digest = 0;
  bool baseline = false;
  std::vector<EnteredEntity> entered;
  std::vector<EntityLabel> labels;
  std::vector<proto::MotionRecord> motion;  // indices strictly increasing
  std::vector<EntityChange> changes;
  std::vector<EntityId> left;
  std::vector<SignalPhaseEntry> signals;
  // Present only on Deltas that carry dots (a dot step happened since the
  // previous Delta, or a baseline).
  std::optional<std::vector<ChainDotsEntry>> dots;
  std::vector<EntityId> retiring;
  std::uint32_t interest_truncated = 0;
  std::size_t motion_bytes = 0;  // size of the packed motion vector on the wire
};

// Decodes a verified Delta into `out` (overwritten). Returns "" or what is
// wrong ("motion[byte 7]: ...", "entered[2].sim_tier: 9 is not a valid SimTier").
std::string decode_delta(const bustle::wire::Delta& delta, Delta& out);

}  // namespace bustle::client
