// Every client-to-server message as one complete frame ready to send
// (messages.hpp).
#include "bustle/client/messages.hpp"

#include <algorithm>
#include <cassert>

#include "bustle/proto/framing.hpp"

namespace bustle::client {
namespace {

namespace wire = bustle::wire;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

std::string_view clamp(std::string_view s, std::size_t max = kMaxHelloStringBytes) {
  return s.size() <= max ? s : s.substr(0, max);
}

flatbuffers::Offset<flatbuffers::String> name_string(flatbuffers::FlatBufferBuilder& fbb,
                                                     const std::string& name) {
  const std::string_view n = clamp(name, kMaxCommandStringBytes);
  return fbb.CreateString(n.data(), n.size());
}

Frame finish(flatbuffers::FlatBufferBuilder& fbb, wire::ClientMessage type,
             flatbuffers::Offset<void> message) {
  const auto root = wire::CreateClientFrame(fbb, type, message);
  wire::FinishClientFrameBuffer(fbb, root);
  Frame frame = bustle::proto::make_frame(fbb);
  assert(frame.size() > bustle::proto::kLengthPrefixBytes);
  assert(frame.size() <= bustle::proto::kClientFrameMaxBytes);
  return frame;
}

flatbuffers::Offset<wire::SpawnPedestrian> spawn_pedestrian(flatbuffers::FlatBufferBuilder& fbb,
                                                            const SpawnPedestrianCmd& c) {
  const auto zone = c.zone.empty() ? 0 : name_string(fbb, c.zone);
  const auto lane = c.lane.empty() ? 0 : name_string(fbb, c.lane);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> route = 0;
  if (!c.route.empty()) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> lanes;
    const std::size_t n = std::min(c.route.size(), kMaxRouteLanes);
    lanes.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::string_view id = clamp(c.route[i], kMaxRouteLaneBytes);
      lanes.push_back(fbb.CreateString(id.data(), id.size()));
    }
    route = fbb.CreateVector(lanes);
  }
  return wire::CreateSpawnPedestrian(fbb, zone, lane, c.priority, c.timeout_ms, route);
}

}  // namespace

Frame build_hello(const HelloParams& params) {
  flatbuffers::FlatBufferBuilder fbb(256);
  const std::string_view name = clamp(params.client_name);
  const std::string_view token = clamp(params.token);
  const auto name_off = fbb.CreateString(name.data(), name.size());
  flatbuffers::Offset<flatbuffers::String> token_off = 0;
  if (!token.empty()) token_off = fbb.CreateString(token.data(), token.size());
  const auto hello =
      wire::CreateHello(fbb, params.protocol_version, name_off, token_off, params.role);
  return finish(fbb, wire::ClientMessage::Hello, hello.Union());
}

namespace {

using ObserverList = flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::Observer>>>;

ObserverList observers(flatbuffers::FlatBufferBuilder& fbb,
                       const std::vector<InterestObserver>& list) {
  if (list.empty()) return 0;
  std::vector<flatbuffers::Offset<wire::Observer>> items;
  const std::size_t n = std::min(list.size(), kMaxInterestObservers);
  items.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const InterestObserver& o = list[i];
    items.push_back(wire::CreateObserver(fbb, o.x_m, o.y_m, o.z_m, o.heading_rad.has_value(),
                                         o.heading_rad.value_or(0.0), o.radius_m));
  }
  return fbb.CreateVector(items);
}

flatbuffers::Offset<wire::RepresentationBudgets> budgets(
    flatbuffers::FlatBufferBuilder& fbb, const std::optional<RepresentationBudgets>& b) {
  if (!b) return 0;
  return wire::CreateRepresentationBudgets(fbb, b->actors, b->instances, b->markers);
}

}  // namespace

Frame build_subscribe(std::uint32_t request_id, const SubscribeParams& params) {
  flatbuffers::FlatBufferBuilder fbb(128);
  flatbuffers::Offset<flatbuffers::Vector<wire::EntityKind>> kinds_off = 0;
  if (!params.kinds.empty()) {
    std::vector<wire::EntityKind> kinds;
    kinds.reserve(params.kinds.size());
    for (EntityKind k : params.kinds) kinds.push_back(static_cast<wire::EntityKind>(k));
    kinds_off = fbb.CreateVector(kinds);
  }
  const auto obs = observers(fbb, params.observers);
  const auto bud = budgets(fbb, params.budgets);
  const auto sub =
      wire::CreateSubscribe(fbb, request_id, kinds_off, obs, bud, params.motion_tolerance_mm);
  return finish(fbb, wire::ClientMessage::Subscribe, sub.Union());
}

Frame build_update_interest(std::uint32_t request_id, const UpdateInterestParams& params) {
  flatbuffers::FlatBufferBuilder fbb(128);
  const auto obs = observers(fbb, params.observers);
  const auto bud = budgets(fbb, params.budgets);
  const auto msg = wire::CreateUpdateInterest(fbb, request_id, obs, bud);
  return finish(fbb, wire::ClientMessage::UpdateInterest, msg.Union());
}

const char* to_string(LeaseState v) {
  return wire::EnumNameLeaseState(static_cast<wire::LeaseState>(v));
}
const char* to_string(UnassignedReason v) {
  return wire::EnumNameUnassignedReason(static_cast<wire::UnassignedReason>(v));
}

Frame build_lease_report(std::uint32_t request_id, std::span<const Lease> leases) {
  std::vector<wire::LeaseEntry> entries;
  entries.reserve(std::min(leases.size(), kLeaseEntriesMax));
  for (const Lease& l : leases.first(std::min(leases.size(), kLeaseEntriesMax))) {
    entries.emplace_back(
        wire::EntityId(l.id.index, l.id.generation), static_cast<wire::LeaseState>(l.state),
        static_cast<std::uint8_t>(l.representation), static_cast<wire::UnassignedReason>(l.reason));
  }
  flatbuffers::FlatBufferBuilder fbb(64 + 12 * entries.size());
  const auto msg = wire::CreateLeaseReport(fbb, request_id, fbb.CreateVectorOfStructs(entries));
  return finish(fbb, wire::ClientMessage::LeaseReport, msg.Union());
}

const char* command_name(const CommandSpec& command) {
  return std::visit(
      Overloaded{
          [](const PauseCmd&) { return "pause"; },
          [](const ResumeCmd&) { return "resume"; },
          [](const StepCmd&) { return "step"; },
          [](const QueryStatsCmd&) { return "query_stats"; },
          [](const SetPedestrianTargetCmd&) { return "set_pedestrian_target"; },
          [](const DespawnEntityCmd&) { return "despawn_entity"; },
          [](const CheckpointCmd&) { return "checkpoint"; },
          [](const RestoreCmd&) { return "restore"; },
          [](const SaveCmd&) { return "save"; },
          [](const LoadCmd&) { return "load"; },
          [](const ListSnapshotsCmd&) { return "list_snapshots"; },
          [](const DeleteSnapshotCmd&) { return "delete_snapshot"; },
          [](const QueryJobCmd&) { return "query_job"; },
          [](const GarageRequestCmd&) { return "garage_request"; },
          [](const CancelGarageRequestCmd&) { return "cancel_garage_request"; },
          [](const SetVehicleStrategyCmd&) { return "set_vehicle_strategy"; },
          [](const SetObserversCmd&) { return "set_observers"; },
          [](const QueryGaragesCmd&) { return "query_garages"; },
          [](const QuerySignalsCmd&) { return "query_signals"; },
          [](const QueryVehicleCmd&) { return "query_vehicle"; },
          [](const SetHourCmd&) { return "set_hour"; },
          [](const SetTimeScaleCmd&) { return "set_time_scale"; },
          [](const QueryZonesCmd&) { return "query_zones"; },
          [](const ForceFullCmd&) { return "force_full"; },
          [](const SpawnPedestrianCmd&) { return "spawn_pedestrian"; },
          [](const CancelSpawnCmd&) { return "cancel_spawn"; },
          [](const ReportAttachedCmd&) { return "report_attached"; },
          [](const SetLifecycleCmd&) { return "set_lifecycle"; },
          [](const LifecycleBatchCmd&) { return "lifecycle_batch"; },
          [](const QueryEntityCmd&) { return "query_entity"; },
          [](const QueryPopulationCmd&) { return "query_population"; },
          [](const QuerySpawnCmd&) { return "query_spawn"; },
          [](const QueryLeasesCmd&) { return "query_leases"; },
          [](const SetAdmissionMaskCmd&) { return "set_admission_mask"; },
          [](const SetPreventionLevelCmd&) { return "set_prevention_level"; },
          [](const KillPedestrianCmd&) { return "kill_pedestrian"; },
          [](const SetLaneClosedCmd& c) { return c.closed ? "close_lane" : "open_lane"; },
      },
      command);
}

bool is_world_command(const CommandSpec& command) {
  return std::holds_alternative<SetPedestrianTargetCmd>(command) ||
         std::holds_alternative<DespawnEntityCmd>(command) ||
         std::holds_alternative<GarageRequestCmd>(command) ||
         std::holds_alternative<CancelGarageRequestCmd>(command) ||
         std::holds_alternative<SetVehicleStrategyCmd>(command) ||
         std::holds_alternative<SetObserversCmd>(command) ||
         std::holds_alternative<SetHourCmd>(command) ||
         std::holds_alternative<SetTimeScaleCmd>(command) ||
         std::holds_alternative<ForceFullCmd>(command) ||
         std::holds_alternative<SpawnPedestrianCmd>(command) ||
         std::holds_alternative<CancelSpawnCmd>(command) ||
         std::holds_alternative<SetLifecycleCmd>(command) ||
         std::holds_alternative<LifecycleBatchCmd>(command) ||
         std::holds_alternative<SetAdmissionMaskCmd>(command) ||
         std::holds_alternative<SetPreventionLevelCmd>(command) ||
         std::holds_alternative<KillPedestrianCmd>(command) ||
         std::holds_alternative<SetLaneClosedCmd>(command);
}

namespace {

// The bodies of ForceFull, the admission mask, the lane closures and the
// spawn, population and representation commands; build_command builds the rest.
void population_body(flatbuffers::FlatBufferBuilder& fbb, const CommandSpec& command,
                     wire::CommandBody& body_type, flatbuffers::Offset<void>& body) {
  std::visit(Overloaded{
                 [&](const ForceFullCmd& c) {
                   body_type = wire::CommandBody::ForceFull;
                   const wire::EntityId id = c.id.to_wire();
                   body = wire::CreateForceFull(fbb, &id, c.on).Union();
                 },
                 [&](const SpawnPedestrianCmd& c) {
                   body_type = wire::CommandBody::SpawnPedestrian;
                   body = spawn_pedestrian(fbb, c).Union();
                 },
                 [&](const CancelSpawnCmd& c) {
                   body_type = wire::CommandBody::CancelSpawn;
                   body = wire::CreateCancelSpawn(fbb, c.handle).Union();
                 },
                 [&](const ReportAttachedCmd& c) {
                   body_type = wire::CommandBody::ReportAttached;
                   const wire::EntityId id = c.id.to_wire();
                   body = wire::CreateReportAttached(fbb, &id).Union();
                 },
                 [&](const SetLifecycleCmd& c) {
                   body_type = wire::CommandBody::SetLifecycle;
                   body = wire::CreateSetLifecycle(fbb, c.growth_quota, c.recycle_quota,
                                                   c.interval_ms, c.migration_budget)
                              .Union();
                 },
                 [&](const LifecycleBatchCmd& c) {
                   body_type = wire::CommandBody::LifecycleBatch;
                   std::vector<flatbuffers::Offset<wire::LifecycleOp>> ops;
                   const std::size_t n = std::min(c.ops.size(), kMaxLifecycleOps);
                   ops.reserve(n);
                   for (std::size_t i = 0; i < n; ++i) {
                     const LifecycleOpSpec& op = c.ops[i];
                     const bool spawn = op.kind == wire::LifecycleOpKind::Spawn;
                     const auto spawn_off = spawn ? spawn_pedestrian(fbb, op.spawn) : 0;
                     const wire::EntityId id = op.id.to_wire();
                     ops.push_back(
                         wire::CreateLifecycleOp(fbb, op.kind, spawn_off, spawn ? nullptr : &id));
                   }
                   body = wire::CreateLifecycleBatch(fbb, fbb.CreateVector(ops)).Union();
                 },
                 [&](const QueryEntityCmd& c) {
                   body_type = wire::CommandBody::QueryEntity;
                   const wire::EntityId id = c.id.to_wire();
                   body = wire::CreateQueryEntity(fbb, &id).Union();
                 },
                 [&](const QueryPopulationCmd&) {
                   body_type = wire::CommandBody::QueryPopulation;
                   body = wire::CreateQueryPopulation(fbb).Union();
                 },
                 [&](const QuerySpawnCmd& c) {
                   body_type = wire::CommandBody::QuerySpawn;
                   body = wire::CreateQuerySpawn(fbb, c.handle).Union();
                 },
                 [&](const QueryLeasesCmd&) {
                   body_type = wire::CommandBody::QueryLeases;
                   body = wire::CreateQueryLeases(fbb).Union();
                 },
                 [&](const SetAdmissionMaskCmd& c) {
                   body_type = wire::CommandBody::SetAdmissionMask;
                   const wire::EntityId id = c.id.to_wire();
                   body = wire::CreateSetAdmissionMask(fbb, &id, c.masked).Union();
                 },
                 [&](const SetPreventionLevelCmd& c) {
                   body_type = wire::CommandBody::SetPreventionLevel;
                   body = wire::CreateSetPreventionLevel(fbb, c.level).Union();
                 },
                 [&](const KillPedestrianCmd& c) {
                   body_type = wire::CommandBody::KillPedestrian;
                   const wire::EntityId id = c.id.to_wire();
                   body = wire::CreateKillPedestrian(fbb, &id).Union();
                 },
                 [&](const SetLaneClosedCmd& c) {
                   const auto lane = c.lane.empty() ? 0 : fbb.CreateString(c.lane);
                   body_type =
                       c.closed ? wire::CommandBody::CloseLane : wire::CommandBody::OpenLane;
                   body = c.closed ? wire::CreateCloseLane(fbb, lane, c.lane_index).Union()
                                   : wire::CreateOpenLane(fbb, lane, c.lane_index).Union();
                 },
                 [](const auto&) {},  // the other commands: build_command
             },
             command);
}

}  // namespace

Frame build_command(std::uint32_t request_id, const CommandSpec& command) {
  flatbuffers::FlatBufferBuilder fbb(64);
  wire::CommandBody body_type = wire::CommandBody::NONE;
  flatbuffers::Offset<void> body = 0;
  std::visit(
      Overloaded{
          [&](const PauseCmd&) {
            body_type = wire::CommandBody::Pause;
            body = wire::CreatePause(fbb).Union();
          },
          [&](const ResumeCmd&) {
            body_type = wire::CommandBody::Resume;
            body = wire::CreateResume(fbb).Union();
          },
          [&](const StepCmd& c) {
            body_type = wire::CommandBody::Step;
            body = wire::CreateStep(fbb, c.count).Union();
          },
          [&](const QueryStatsCmd& c) {
            body_type = wire::CommandBody::QueryStats;
            body = wire::CreateQueryStats(fbb, c.step_time_window).Union();
          },
          [&](const SetPedestrianTargetCmd& c) {
            body_type = wire::CommandBody::SetPedestrianTarget;
            body = wire::CreateSetPedestrianTarget(fbb, c.count).Union();
          },
          [&](const DespawnEntityCmd& c) {
            body_type = wire::CommandBody::DespawnEntity;
            const wire::EntityId id = c.id.to_wire();
            body = wire::CreateDespawnEntity(fbb, &id).Union();
          },
          [&](const CheckpointCmd& c) {
            body_type = wire::CommandBody::Checkpoint;
            body = wire::CreateCheckpoint(fbb, name_string(fbb, c.name)).Union();
          },
          [&](const RestoreCmd& c) {
            body_type = wire::CommandBody::Restore;
            body = wire::CreateRestore(fbb, name_string(fbb, c.name)).Union();
          },
          [&](const SaveCmd& c) {
            body_type = wire::CommandBody::Save;
            body = wire::CreateSave(fbb, name_string(fbb, c.name)).Union();
          },
          [&](const LoadCmd& c) {
            body_type = wire::CommandBody::Load;
            body = wire::CreateLoad(fbb, name_string(fbb, c.name)).Union();
          },
          [&](const ListSnapshotsCmd&) {
            body_type = wire::CommandBody::ListSnapshots;
            body = wire::CreateListSnapshots(fbb).Union();
          },
          [&](const DeleteSnapshotCmd& c) {
            body_type = wire::CommandBody::DeleteSnapshot;
            body = wire::CreateDeleteSnapshot(fbb, name_string(fbb, c.name)).Union();
          },
          [&](const QueryJobCmd& c) {
            body_type = wire::CommandBody::QueryJob;
            body = wire::CreateQueryJob(fbb, c.job_id).Union();
          },
          [&](const GarageRequestCmd& c) {
            body_type = wire::CommandBody::GarageRequest;
            const auto garage = name_string(fbb, c.garage);
            const auto request = name_string(fbb, c.request_id);
            const auto prototype = name_string(fbb, c.prototype);
            const auto lane = name_string(fbb, c.lane);
            body = wire::CreateGarageRequest(fbb, garage, request, prototype, lane, c.priority)
                       .Union();
          },
          [&](const CancelGarageRequestCmd& c) {
            body_type = wire::CommandBody::CancelGarageRequest;
            const auto garage = name_string(fbb, c.garage);
            const auto request = name_string(fbb, c.request_id);
            body = wire::CreateCancelGarageRequest(fbb, garage, request).Union();
          },
          [&](const SetVehicleStrategyCmd& c) {
            body_type = wire::CommandBody::SetVehicleStrategy;
            const wire::EntityId id = c.id.to_wire();
            body = wire::CreateSetVehicleStrategy(fbb, &id, c.strategy).Union();
          },
          [&](const SetObserversCmd& c) {
            body_type = wire::CommandBody::SetObservers;
            std::vector<wire::Vec2> points;
            const std::size_t n = std::min(c.points.size(), kMaxObserverPoints);
            points.reserve(n);
            for (std::size_t i = 0; i < n; ++i) {
              points.emplace_back(c.points[i].x_m, c.points[i].y_m);
            }
            const auto vec = fbb.CreateVectorOfStructs(points);
            flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::ObserverView>>>
                views = 0;
            if (!c.views.empty()) {
              std::vector<flatbuffers::Offset<wire::ObserverView>> items;
              const std::size_t m = std::min(c.views.size(), kMaxObserverViews);
              items.reserve(m);
              for (std::size_t i = 0; i < m; ++i) {
                const ObserverView& v = c.views[i];
                items.push_back(wire::CreateObserverView(fbb, v.z_m, v.has_heading, v.heading_rad));
              }
              views = fbb.CreateVector(items);
            }
            const wire::EntityId follow = c.follow.to_wire();
            body = wire::CreateSetObservers(fbb, vec, views,
                                            c.follow.generation != 0 ? &follow : nullptr)
                       .Union();
          },
          [&](const QueryGaragesCmd&) {
            body_type = wire::CommandBody::QueryGarages;
            body = wire::CreateQueryGarages(fbb).Union();
          },
          [&](const QuerySignalsCmd&) {
            body_type = wire::CommandBody::QuerySignals;
            body = wire::CreateQuerySignals(fbb).Union();
          },
          [&](const QueryVehicleCmd& c) {
            body_type = wire::CommandBody::QueryVehicle;
            const wire::EntityId id = c.id.to_wire();
            body = wire::CreateQueryVehicle(fbb, &id).Union();
          },
          [&](const SetHourCmd& c) {
            body_type = wire::CommandBody::SetHour;
            body = wire::CreateSetHour(fbb, c.hour).Union();
          },
          [&](const SetTimeScaleCmd& c) {
            body_type = wire::CommandBody::SetTimeScale;
            body = wire::CreateSetTimeScale(fbb, c.scale).Union();
          },
          [&](const QueryZonesCmd&) {
            body_type = wire::CommandBody::QueryZones;
            body = wire::CreateQueryZones(fbb).Union();
          },
          [&](const auto&) { population_body(fbb, command, body_type, body); },
      },
      command);
  assert(body_type != wire::CommandBody::NONE);
  const auto cmd = wire::CreateCommand(fbb, request_id, body_type, body);
  return finish(fbb, wire::ClientMessage::Command, cmd.Union());
}

std::span<const std::uint8_t> frame_payload(const Frame& frame) {
  assert(frame.size() >= bustle::proto::kLengthPrefixBytes);
  return std::span<const std::uint8_t>(frame).subspan(bustle::proto::kLengthPrefixBytes);
}

}  // namespace bustle::client
