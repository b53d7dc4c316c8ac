// Vehicle and population commands: builders (round-trip through the server's
// verifier) and decoders (CommandResult garages/signals/vehicle/zones, the new
// Stats fields, Welcome geometry, Delta signal phases, the mirror's phases).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "bustle/client/client.hpp"
#include "bustle/client/entity_mirror.hpp"
#include "bustle/client/messages.hpp"
#include "bustle/proto/framing.hpp"
#include "support/server_frames.hpp"

namespace c = bustle::client;
namespace t = bustle::test;
namespace wire = bustle::wire;

namespace {

const wire::Command* command_of(const c::Frame& frame, std::uint32_t request_id) {
  REQUIRE(frame.size() > 4);
  std::string error;
  const auto* root = bustle::proto::verify_client_frame(c::frame_payload(frame), error);
  INFO(error);
  REQUIRE(root != nullptr);
  const auto* cmd = root->message_as_Command();
  REQUIRE(cmd != nullptr);
  CHECK(cmd->request_id() == request_id);
  return cmd;
}

const wire::ServerFrame* verified(const std::vector<std::uint8_t>& payload) {
  std::string error;
  const auto* root = bustle::proto::verify_server_frame(payload, error);
  INFO(error);
  REQUIRE(root != nullptr);
  return root;
}

}  // namespace

TEST_CASE("Vehicle commands round-trip with their arguments", "[messages][vehicles]") {
  const c::Frame req_frame =
      c::build_command(1, c::GarageRequestCmd{"g0", "r99", "sedan", "lane0", 42});
  const auto* req = command_of(req_frame, 1)->body_as_GarageRequest();
  REQUIRE(req != nullptr);
  CHECK(req->garage()->str() == "g0");
  CHECK(req->request_id()->str() == "r99");
  CHECK(req->prototype()->str() == "sedan");
  CHECK(req->lane()->str() == "lane0");
  CHECK(req->priority() == 42);

  c::GarageRequestCmd defaults;
  CHECK(defaults.priority == 10);  // the schema's default
  const c::Frame neg_frame = c::build_command(2, c::GarageRequestCmd{"g", "r", "p", "l", -3});
  CHECK(command_of(neg_frame, 2)->body_as_GarageRequest()->priority() == -3);

  const c::Frame cancel_frame = c::build_command(3, c::CancelGarageRequestCmd{"g0", "r05"});
  const auto* cancel = command_of(cancel_frame, 3)->body_as_CancelGarageRequest();
  REQUIRE(cancel != nullptr);
  CHECK(cancel->garage()->str() == "g0");
  CHECK(cancel->request_id()->str() == "r05");

  const c::Frame strat_frame =
      c::build_command(4, c::SetVehicleStrategyCmd{{9, 2}, wire::VehicleStrategy::Parked});
  const auto* strat = command_of(strat_frame, 4)->body_as_SetVehicleStrategy();
  REQUIRE(strat != nullptr);
  CHECK(strat->id()->index() == 9);
  CHECK(strat->id()->generation() == 2);
  CHECK(strat->strategy() == wire::VehicleStrategy::Parked);

  const c::Frame obs_frame =
      c::build_command(5, c::SetObserversCmd{{{25.0f, 25.0f}, {-1.5f, 300.25f}}});
  const auto* obs = command_of(obs_frame, 5)->body_as_SetObservers();
  REQUIRE(obs != nullptr);
  REQUIRE(obs->points() != nullptr);
  REQUIRE(obs->points()->size() == 2);
  CHECK(obs->points()->Get(0)->x() == 25.0f);
  CHECK(obs->points()->Get(1)->x() == -1.5f);
  CHECK(obs->points()->Get(1)->y() == 300.25f);

  // No points: an empty vector (the server clears every observer).
  const c::Frame clear_frame = c::build_command(6, c::SetObserversCmd{});
  const auto* clear = command_of(clear_frame, 6)->body_as_SetObservers();
  REQUIRE(clear != nullptr);
  CHECK((clear->points() == nullptr || clear->points()->size() == 0));

  // Far too many points are cut so the frame still fits (the server refuses > 64).
  c::SetObserversCmd many;
  many.points.assign(c::kMaxObserverPoints + 10, c::ObserverPoint{1.0f, 2.0f});
  const c::Frame many_frame = c::build_command(7, many);
  CHECK(command_of(many_frame, 7)->body_as_SetObservers()->points()->size() ==
        c::kMaxObserverPoints);

  CHECK(command_of(c::build_command(8, c::QueryGaragesCmd{}), 8)->body_as_QueryGarages() !=
        nullptr);
  CHECK(command_of(c::build_command(9, c::QuerySignalsCmd{}), 9)->body_as_QuerySignals() !=
        nullptr);
  const c::Frame qv_frame = c::build_command(10, c::QueryVehicleCmd{{3, 1}});
  const auto* qv = command_of(qv_frame, 10)->body_as_QueryVehicle();
  REQUIRE(qv != nullptr);
  CHECK(qv->id()->index() == 3);
  CHECK(qv->id()->generation() == 1);
}

TEST_CASE("Population commands round-trip with their arguments", "[messages][population]") {
  const c::Frame hour_frame = c::build_command(1, c::SetHourCmd{12.5});
  const auto* hour = command_of(hour_frame, 1)->body_as_SetHour();
  REQUIRE(hour != nullptr);
  CHECK(hour->hour() == 12.5);
  // Out-of-range values are sent as given: the server judges them.
  CHECK(command_of(c::build_command(2, c::SetHourCmd{25.0}), 2)->body_as_SetHour()->hour() ==
        25.0);

  const c::Frame scale_frame = c::build_command(3, c::SetTimeScaleCmd{60});
  const auto* scale = command_of(scale_frame, 3)->body_as_SetTimeScale();
  REQUIRE(scale != nullptr);
  CHECK(scale->scale() == 60);

  CHECK(command_of(c::build_command(4, c::QueryZonesCmd{}), 4)->body_as_QueryZones() != nullptr);
}

TEST_CASE("command_name and is_world_command cover the new commands", "[messages][vehicles]") {
  CHECK(std::string(c::command_name(c::GarageRequestCmd{})) == "garage_request");
  CHECK(std::string(c::command_name(c::CancelGarageRequestCmd{})) == "cancel_garage_request");
  CHECK(std::string(c::command_name(c::SetVehicleStrategyCmd{})) == "set_vehicle_strategy");
  CHECK(std::string(c::command_name(c::SetObserversCmd{})) == "set_observers");
  CHECK(std::string(c::command_name(c::QueryGaragesCmd{})) == "query_garages");
  CHECK(std::string(c::command_name(c::QuerySignalsCmd{})) == "query_signals");
  CHECK(std::string(c::command_name(c::QueryVehicleCmd{})) == "query_vehicle");
  CHECK(std::string(c::command_name(c::SetHourCmd{})) == "set_hour");
  CHECK(std::string(c::command_name(c::SetTimeScaleCmd{})) == "set_time_scale");
  CHECK(std::string(c::command_name(c::QueryZonesCmd{})) == "query_zones");

  for (const c::CommandSpec& world :
       {c::CommandSpec{c::SetPedestrianTargetCmd{}}, c::CommandSpec{c::DespawnEntityCmd{}},
        c::CommandSpec{c::GarageRequestCmd{}}, c::CommandSpec{c::CancelGarageRequestCmd{}},
        c::CommandSpec{c::SetVehicleStrategyCmd{}}, c::CommandSpec{c::SetObserversCmd{}},
        c::CommandSpec{c::SetHourCmd{}}, c::CommandSpec{c::SetTimeScaleCmd{}}}) {
    INFO(c::command_name(world));
    CHECK(c::is_world_command(world));
  }
  for (const c::CommandSpec& other :
       {c::CommandSpec{c::PauseCmd{}}, c::CommandSpec{c::StepCmd{}},
        c::CommandSpec{c::QueryStatsCmd{}}, c::CommandSpec{c::QueryGaragesCmd{}},
        c::CommandSpec{c::QuerySignalsCmd{}}, c::CommandSpec{c::QueryVehicleCmd{}},
        c::CommandSpec{c::QueryZonesCmd{}}, c::CommandSpec{c::CheckpointCmd{}}}) {
    INFO(c::command_name(other));
    CHECK_FALSE(c::is_world_command(other));
  }
}

TEST_CASE("A CommandResult decodes garages and signals and zones and a vehicle",
          "[decode][vehicles][population]") {
  flatbuffers::FlatBufferBuilder fbb;
  const std::vector<std::string> queued = {"r16", "r17"};
  const std::vector<std::uint64_t> gates = {5, 1, 2, 3, 0, 4};
  std::vector<flatbuffers::Offset<flatbuffers::String>> queued_off;
  for (const auto& q : queued) queued_off.push_back(fbb.CreateString(q));
  const auto garage = wire::CreateGarageInfoDirect(
      fbb, "g0", &queued_off, 16, 15, 18, 130, 16, wire::DispatchGate::Cooldown, &gates, 2, 1, 3, 4,
      5, 18, 18);
  const std::vector<flatbuffers::Offset<wire::GarageInfo>> garages = {garage};
  const auto signal =
      wire::CreateSignalInfoDirect(fbb, "s1", 1, wire::SignalPhase::Yield, 1500000, 7);
  const std::vector<flatbuffers::Offset<wire::SignalInfo>> signals = {signal};
  const auto zone =
      wire::CreateZoneInfoDirect(fbb, "market", 24, 20, 52, 2, 1, 2, 1, 14, 3, 40, 12, 30);
  const std::vector<flatbuffers::Offset<wire::ZoneInfo>> zones = {zone};
  const wire::EntityId vid(12, 1);
  const wire::EntityId leader(13, 2);
  const auto vehicle = wire::CreateVehicleInfoDirect(
      fbb, &vid, "vehicle.g0.000003", "g0", "r03", "sedan", 2, 2, 12.5, 0.25, 37.5, 50.0, 7.75,
      wire::VehicleStrategyState::Parked, wire::ControlPolicy::Parked,
      wire::PolicyReason::ParkedStrategy, wire::SimTier::Simulated, &leader, 321, true, false);
  const auto result = wire::CreateCommandResultDirect(
      fbb, 77, wire::CommandStatus::Accepted, wire::RejectReason::None, "", 99, 0, 0, nullptr,
      &garages, &signals, vehicle, &zones);
  const auto payload = t::finish_server(fbb, wire::ServerMessage::CommandResult, result.Union());
  const auto* r = verified(payload)->message_as_CommandResult();
  REQUIRE(r != nullptr);
  const c::CommandReply reply = c::to_command_reply(*r);
  CHECK(reply.request_id == 77);
  CHECK(reply.applied_step == 99);
  CHECK_FALSE(reply.stats.has_value());
  CHECK_FALSE(reply.snapshots.has_value());

  REQUIRE(reply.garages.has_value());
  REQUIRE(reply.garages->size() == 1);
  const c::GarageReport& g = reply.garages->front();
  CHECK(g.id == "g0");
  CHECK(g.queued == queued);
  CHECK(g.dispatched == 16);
  CHECK(g.managed == 15);
  CHECK(g.capacity == 18);
  CHECK(g.frame_index == 130);
  CHECK(g.next_vehicle_ordinal == 16);
  CHECK(g.last_gate == wire::DispatchGate::Cooldown);
  CHECK(g.gate_steps == gates);
  CHECK(g.turnarounds == 2);
  CHECK(g.rejected_invalid == 1);
  CHECK(g.rejected_duplicate == 3);
  CHECK(g.rejected_queue_full == 4);
  CHECK(g.canceled == 5);
  CHECK(g.plan_total == 18);
  CHECK(g.plan_injected == 18);

  REQUIRE(reply.signals.has_value());
  REQUIRE(reply.signals->size() == 1);
  const c::SignalReport& s = reply.signals->front();
  CHECK(s.id == "s1");
  CHECK(s.lane == 1);
  CHECK(s.phase == wire::SignalPhase::Yield);
  CHECK(s.phase_elapsed_us == 1500000);
  CHECK(s.cycles == 7);

  REQUIRE(reply.zones.has_value());
  REQUIRE(reply.zones->size() == 1);
  const c::ZoneReport& z = reply.zones->front();
  CHECK(z.id == "market");
  CHECK(z.target == 24);
  CHECK(z.active == 20);
  CHECK(z.dormant == 52);
  CHECK(z.pending_spawn == 2);
  CHECK(z.pending_recycle == 1);
  CHECK(z.activated == 2);
  CHECK(z.recycled == 1);
  CHECK(z.deferred_by_quota == 14);
  CHECK(z.rejected_by_capacity == 3);
  CHECK(z.activated_total == 40);
  CHECK(z.recycled_total == 12);
  CHECK(z.capacity == 30);

  REQUIRE(reply.vehicle.has_value());
  const c::VehicleReport& v = *reply.vehicle;
  CHECK(v.id == c::EntityId{12, 1});
  CHECK(v.vehicle_id == "vehicle.g0.000003");
  CHECK(v.garage == "g0");
  CHECK(v.request_id == "r03");
  CHECK(v.prototype == "sedan");
  CHECK(v.route_index == 2);
  CHECK(v.lane == 2);
  CHECK(v.s_m == 12.5);
  CHECK(v.alpha == 0.25);
  CHECK(v.x_m == 37.5);
  CHECK(v.y_m == 50.0);
  CHECK(v.speed_mps == 7.75);
  CHECK(v.strategy == wire::VehicleStrategyState::Parked);
  CHECK(v.policy == wire::ControlPolicy::Parked);
  CHECK(v.reason == wire::PolicyReason::ParkedStrategy);
  CHECK(v.tier == wire::SimTier::Simulated);
  CHECK(v.has_leader());
  CHECK(v.leader == c::EntityId{13, 2});
  CHECK(v.steps_advanced == 321);
  CHECK(v.awaiting_turnaround);
  CHECK_FALSE(v.despawn_requested);
}

TEST_CASE("Empty lists stay present and absent fields stay absent", "[decode][vehicles]") {
  flatbuffers::FlatBufferBuilder fbb;
  const std::vector<flatbuffers::Offset<wire::GarageInfo>> none;
  const auto result = wire::CreateCommandResultDirect(
      fbb, 1, wire::CommandStatus::Rejected, wire::RejectReason::Duplicate, "dup", 5, 0, 0,
      nullptr, &none);
  const auto payload = t::finish_server(fbb, wire::ServerMessage::CommandResult, result.Union());
  const c::CommandReply reply =
      c::to_command_reply(*verified(payload)->message_as_CommandResult());
  CHECK_FALSE(reply.accepted());
  CHECK(reply.reason == wire::RejectReason::Duplicate);
  REQUIRE(reply.garages.has_value());
  CHECK(reply.garages->empty());
  CHECK_FALSE(reply.signals.has_value());
  CHECK_FALSE(reply.zones.has_value());
  CHECK_FALSE(reply.vehicle.has_value());
}

TEST_CASE("Stats decode the vehicle and population fields", "[decode][population]") {
  flatbuffers::FlatBufferBuilder fbb;
  wire::StatsBuilder b(fbb);
  b.add_step(10);
  b.add_vehicles(18);
  b.add_vehicles_full(4);
  b.add_vehicles_simulated(10);
  b.add_vehicles_coarse(4);
  b.add_vehicles_moving(12);
  b.add_vehicles_waiting(3);
  b.add_vehicles_yielding(2);
  b.add_tier_transitions_deferred(6);
  b.add_hour(12.25);
  b.add_time_scale(60);
  b.add_residents(72);
  b.add_residents_active(20);
  const auto stats = b.Finish();
  wire::CommandResultBuilder rb(fbb);
  rb.add_request_id(3);
  rb.add_stats(stats);
  const auto result = rb.Finish();
  const auto payload = t::finish_server(fbb, wire::ServerMessage::CommandResult, result.Union());
  const c::CommandReply reply =
      c::to_command_reply(*verified(payload)->message_as_CommandResult());
  REQUIRE(reply.stats.has_value());
  const c::StatsInfo& s = *reply.stats;
  CHECK(s.step == 10);
  CHECK(s.vehicles == 18);
  CHECK(s.vehicles_full == 4);
  CHECK(s.vehicles_simulated == 10);
  CHECK(s.vehicles_coarse == 4);
  CHECK(s.vehicles_moving == 12);
  CHECK(s.vehicles_waiting == 3);
  CHECK(s.vehicles_yielding == 2);
  CHECK(s.tier_transitions_deferred == 6);
  CHECK(s.hour == 12.25);
  CHECK(s.time_scale == 60);
  CHECK(s.residents == 72);
  CHECK(s.residents_active == 20);
}

TEST_CASE("Welcome geometry and Delta signal phases decode", "[decode][vehicles]") {
  flatbuffers::FlatBufferBuilder fbb;
  const std::vector<std::uint32_t> route = {0, 1, 2, 3};
  const std::vector<flatbuffers::Offset<wire::GarageGeometry>> garages = {
      wire::CreateGarageGeometryDirect(fbb, "g0", 0, &route)};
  const std::vector<flatbuffers::Offset<wire::SignalGeometry>> signals = {
      wire::CreateSignalGeometryDirect(fbb, "s1", 1, 0.82f, 0.35f)};
  const auto welcome = wire::CreateWelcomeDirect(
      fbb, "v", bustle::proto::kProtocolVersion, 1, wire::Role::Viewer, 100000,
      wire::ClockMode::Manual, "corridor", 0, nullptr, &garages, &signals);
  const auto payload = t::finish_server(fbb, wire::ServerMessage::Welcome, welcome.Union());
  const auto* w = verified(payload)->message_as_Welcome();
  REQUIRE(w != nullptr);
  REQUIRE(w->garages() != nullptr);
  const c::GarageGeometry g = c::to_garage_geometry(*w->garages()->Get(0));
  CHECK(g.id == "g0");
  CHECK(g.entrance_lane == 0);
  CHECK(g.route == route);
  const c::SignalGeometry s = c::to_signal_geometry(*w->signals()->Get(0));
  CHECK(s.id == "s1");
  CHECK(s.lane == 1);
  CHECK(s.stop_alpha == 0.82f);
  CHECK(s.yield_alpha == 0.35f);

  // Delta signals: the free decoder and the mirror's phase table.
  auto delta_with = [](std::uint64_t step, bool baseline,
                       const std::vector<wire::SignalPhaseState>& phases) {
    flatbuffers::FlatBufferBuilder b;
    const auto sig = b.CreateVectorOfStructs(phases);
    const auto d = wire::CreateDelta(b, step, 0, 0, baseline, 0, 0, 0, sig);
    return t::finish_server(b, wire::ServerMessage::Delta, d.Union());
  };
  const auto d1 = delta_with(1, true,
                             {wire::SignalPhaseState(0, wire::SignalPhase::Closed),
                              wire::SignalPhaseState(2, wire::SignalPhase::Yield)});
  const auto* delta1 = verified(d1)->message_as_Delta();
  REQUIRE(delta1 != nullptr);
  const auto phases = c::signal_phases(*delta1);
  REQUIRE(phases.size() == 2);
  CHECK(phases[0].index == 0);
  CHECK(phases[0].phase == wire::SignalPhase::Closed);
  CHECK(phases[1].index == 2);
  CHECK(phases[1].phase == wire::SignalPhase::Yield);

  c::EntityMirror mirror;
  CHECK(mirror.signal_phases().empty());
  mirror.apply(*delta1);
  REQUIRE(mirror.signal_phases().size() == 3);
  CHECK(mirror.signal_phases()[0] == wire::SignalPhase::Closed);
  CHECK(mirror.signal_phases()[1] == wire::SignalPhase::Open);  // never named
  CHECK(mirror.signal_phases()[2] == wire::SignalPhase::Yield);
  const auto d2 = delta_with(2, false, {wire::SignalPhaseState(0, wire::SignalPhase::Open)});
  mirror.apply(*verified(d2)->message_as_Delta());
  CHECK(mirror.signal_phases()[0] == wire::SignalPhase::Open);
  CHECK(mirror.signal_phases()[2] == wire::SignalPhase::Yield);  // kept

  // A Delta without signals decodes to none.
  const auto d3 = t::delta_payload(t::DeltaSpec{});
  CHECK(c::signal_phases(*verified(d3)->message_as_Delta()).empty());
}
