// Vehicle and population commands: builders (round-trip through the server's
// verifier) and decoders (CommandResult garages/signals/vehicle/zones, the new
// Stats fields, Welcome geometry, Delta signal phases, the mirror's phases),
// and the spawn pipeline: spawn/lifecycle builders, CommandResult spawn/batch
// fields, EntityInfo, PopulationInfo, SpawnStatus, Welcome chains, Delta dots
// and retiring, the mirror's retiring marks and dots.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "bustle/client/entity_mirror.hpp"
#include "bustle/client/messages.hpp"
#include "bustle/client/replies.hpp"
#include "bustle/proto/framing.hpp"
#include "support/sdk_frames.hpp"

namespace c = bustle::client;
namespace t = bustle::test;
namespace wire = bustle::wire;

namespace {

const wire::Command* vp_command_of(const c::Frame& frame, std::uint32_t request_id) {
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

const wire::ServerFrame* vp_verified(const std::vector<std::uint8_t>& payload) {
  std::string error;
  const auto* root = bustle::proto::verify_server_frame(payload, error);
  INFO(error);
  REQUIRE(root != nullptr);
  return root;
}

c::LifecycleBatchCmd spawn_batch(std::size_t n) {
  c::LifecycleBatchCmd b;
  for (std::size_t i = 0; i < n; ++i)
    b.ops.push_back(c::LifecycleOpSpec::spawn_op({"market", "", {}, 0}));
  return b;
}

}  // namespace

TEST_CASE("Vehicle commands round-trip with their arguments", "[messages][vehicles]") {
  const c::Frame req_frame =
      c::build_command(1, c::GarageRequestCmd{"g0", "r99", "sedan", "lane0", 42});
  const auto* req = vp_command_of(req_frame, 1)->body_as_GarageRequest();
  REQUIRE(req != nullptr);
  CHECK(req->garage()->str() == "g0");
  CHECK(req->request_id()->str() == "r99");
  CHECK(req->prototype()->str() == "sedan");
  CHECK(req->lane()->str() == "lane0");
  CHECK(req->priority() == 42);

  c::GarageRequestCmd defaults;
  CHECK(defaults.priority == 10);  // the schema's default
  const c::Frame neg_frame = c::build_command(2, c::GarageRequestCmd{"g", "r", "p", "l", -3});
  CHECK(vp_command_of(neg_frame, 2)->body_as_GarageRequest()->priority() == -3);

  const c::Frame cancel_frame = c::build_command(3, c::CancelGarageRequestCmd{"g0", "r05"});
  const auto* cancel = vp_command_of(cancel_frame, 3)->body_as_CancelGarageRequest();
  REQUIRE(cancel != nullptr);
  CHECK(cancel->garage()->str() == "g0");
  CHECK(cancel->request_id()->str() == "r05");

  const c::Frame strat_frame =
      c::build_command(4, c::SetVehicleStrategyCmd{{9, 2}, wire::VehicleStrategy::Parked});
  const auto* strat = vp_command_of(strat_frame, 4)->body_as_SetVehicleStrategy();
  REQUIRE(strat != nullptr);
  CHECK(strat->id()->index() == 9);
  CHECK(strat->id()->generation() == 2);
  CHECK(strat->strategy() == wire::VehicleStrategy::Parked);

  const c::Frame obs_frame =
      c::build_command(5, c::SetObserversCmd{{{25.0f, 25.0f}, {-1.5f, 300.25f}}});
  const auto* obs = vp_command_of(obs_frame, 5)->body_as_SetObservers();
  REQUIRE(obs != nullptr);
  REQUIRE(obs->points() != nullptr);
  REQUIRE(obs->points()->size() == 2);
  CHECK(obs->points()->Get(0)->x() == 25.0f);
  CHECK(obs->points()->Get(1)->x() == -1.5f);
  CHECK(obs->points()->Get(1)->y() == 300.25f);

  // No points: an empty vector (the server clears every observer).
  const c::Frame clear_frame = c::build_command(6, c::SetObserversCmd{});
  const auto* clear = vp_command_of(clear_frame, 6)->body_as_SetObservers();
  REQUIRE(clear != nullptr);
  CHECK((clear->points() == nullptr || clear->points()->size() == 0));

  // Far too many points are cut so the frame still fits (the server refuses > 64).
  c::SetObserversCmd many;
  many.points.assign(c::kMaxObserverPoints + 10, c::ObserverPoint{1.0f, 2.0f});
  const c::Frame many_frame = c::build_command(7, many);
  CHECK(vp_command_of(many_frame, 7)->body_as_SetObservers()->points()->size() ==
        c::kMaxObserverPoints);

  CHECK(vp_command_of(c::build_command(8, c::QueryGaragesCmd{}), 8)->body_as_QueryGarages() !=
        nullptr);
  CHECK(vp_command_of(c::build_command(9, c::QuerySignalsCmd{}), 9)->body_as_QuerySignals() !=
        nullptr);
  const c::Frame qv_frame = c::build_command(10, c::QueryVehicleCmd{{3, 1}});
  const auto* qv = vp_command_of(qv_frame, 10)->body_as_QueryVehicle();
  REQUIRE(qv != nullptr);
  CHECK(qv->id()->index() == 3);
  CHECK(qv->id()->generation() == 1);
}

TEST_CASE("Population commands round-trip with their arguments", "[messages][population]") {
  const c::Frame hour_frame = c::build_command(1, c::SetHourCmd{12.5});
  const auto* hour = vp_command_of(hour_frame, 1)->body_as_SetHour();
  REQUIRE(hour != nullptr);
  CHECK(hour->hour() == 12.5);
  // Out-of-range values are sent as given: the server judges them.
  CHECK(vp_command_of(c::build_command(2, c::SetHourCmd{25.0}), 2)->body_as_SetHour()->hour() ==
        25.0);

  const c::Frame scale_frame = c::build_command(3, c::SetTimeScaleCmd{60});
  const auto* scale = vp_command_of(scale_frame, 3)->body_as_SetTimeScale();
  REQUIRE(scale != nullptr);
  CHECK(scale->scale() == 60);

  CHECK(vp_command_of(c::build_command(4, c::QueryZonesCmd{}), 4)->body_as_QueryZones() != nullptr);
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
  CHECK(std::string(c::command_name(c::ForceFullCmd{})) == "force_full");
  CHECK(std::string(c::command_name(c::SpawnPedestrianCmd{})) == "spawn_pedestrian");
  CHECK(std::string(c::command_name(c::CancelSpawnCmd{})) == "cancel_spawn");
  CHECK(std::string(c::command_name(c::ReportAttachedCmd{})) == "report_attached");
  CHECK(std::string(c::command_name(c::SetLifecycleCmd{})) == "set_lifecycle");
  CHECK(std::string(c::command_name(c::LifecycleBatchCmd{})) == "lifecycle_batch");
  CHECK(std::string(c::command_name(c::QueryEntityCmd{})) == "query_entity");
  CHECK(std::string(c::command_name(c::QueryPopulationCmd{})) == "query_population");
  CHECK(std::string(c::command_name(c::QuerySpawnCmd{})) == "query_spawn");

  for (const c::CommandSpec& world :
       {c::CommandSpec{c::SetPedestrianTargetCmd{}}, c::CommandSpec{c::DespawnEntityCmd{}},
        c::CommandSpec{c::GarageRequestCmd{}}, c::CommandSpec{c::CancelGarageRequestCmd{}},
        c::CommandSpec{c::SetVehicleStrategyCmd{}}, c::CommandSpec{c::SetObserversCmd{}},
        c::CommandSpec{c::SetHourCmd{}}, c::CommandSpec{c::SetTimeScaleCmd{}},
        c::CommandSpec{c::ForceFullCmd{}}, c::CommandSpec{c::SpawnPedestrianCmd{}},
        c::CommandSpec{c::CancelSpawnCmd{}}, c::CommandSpec{c::SetLifecycleCmd{}},
        c::CommandSpec{c::LifecycleBatchCmd{}}}) {
    INFO(c::command_name(world));
    CHECK(c::is_world_command(world));
  }
  for (const c::CommandSpec& other :
       {c::CommandSpec{c::PauseCmd{}}, c::CommandSpec{c::StepCmd{}},
        c::CommandSpec{c::QueryStatsCmd{}}, c::CommandSpec{c::QueryGaragesCmd{}},
        c::CommandSpec{c::QuerySignalsCmd{}}, c::CommandSpec{c::QueryVehicleCmd{}},
        c::CommandSpec{c::QueryZonesCmd{}}, c::CommandSpec{c::CheckpointCmd{}},
        c::CommandSpec{c::QueryEntityCmd{}}, c::CommandSpec{c::QueryPopulationCmd{}},
        c::CommandSpec{c::QuerySpawnCmd{}},
        // The representation axis, answered at once: not a world command.
        c::CommandSpec{c::ReportAttachedCmd{}}}) {
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
  const auto garage =
      wire::CreateGarageInfoDirect(fbb, "g0", &queued_off, 16, 15, 18, 130, 16,
                                   wire::DispatchGate::Cooldown, &gates, 2, 1, 3, 4, 5, 18, 18);
  const std::vector<flatbuffers::Offset<wire::GarageInfo>> garages = {garage};
  const auto signal =
      wire::CreateSignalInfoDirect(fbb, "s1", 1, wire::SignalPhase::Yield, 1500000, 7);
  const std::vector<flatbuffers::Offset<wire::SignalInfo>> signals = {signal};
  const auto zone = wire::CreateZoneInfoDirect(fbb, "market", 24, 20, 52, 2, 1, 2, 1, 14, 3, 40, 12,
                                               30, 4, 5, 6, 7, 8, 9);
  const std::vector<flatbuffers::Offset<wire::ZoneInfo>> zones = {zone};
  const wire::EntityId vid(12, 1);
  const wire::EntityId leader(13, 2);
  const auto vehicle = wire::CreateVehicleInfoDirect(
      fbb, &vid, "vehicle.g0.000003", "g0", "r03", "sedan", 2, 2, 12.5, 0.25, 37.5, 50.0, 7.75,
      wire::VehicleStrategyState::Parked, wire::ControlPolicy::Parked,
      wire::PolicyReason::ParkedStrategy, wire::SimTier::Simulated, &leader, 321, true, false);
  const auto result = wire::CreateCommandResultDirect(fbb, 77, wire::CommandStatus::Accepted,
                                                      wire::RejectReason::None, "", 99, 0, 0,
                                                      nullptr, &garages, &signals, vehicle, &zones);
  const auto payload = t::finish_server(fbb, wire::ServerMessage::CommandResult, result.Union());
  const auto* r = vp_verified(payload)->message_as_CommandResult();
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
  CHECK(z.migrated_in == 4);
  CHECK(z.deferred_by_migration == 5);
  CHECK(z.handoffs_started == 6);
  CHECK(z.handoffs_accepted == 7);
  CHECK(z.handoffs_returned == 8);
  CHECK(z.retiring == 9);

  REQUIRE(reply.vehicle.has_value());
  const c::VehicleReport& v = *reply.vehicle;
  CHECK(v.entity() == c::EntityId{12, 1});
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
  CHECK(v.leader_entity() == c::EntityId{13, 2});
  CHECK(v.steps_advanced == 321);
  CHECK(v.awaiting_turnaround);
  CHECK_FALSE(v.despawn_requested);
}

TEST_CASE("Empty lists stay present and absent fields stay absent", "[decode][vehicles]") {
  flatbuffers::FlatBufferBuilder fbb;
  const std::vector<flatbuffers::Offset<wire::GarageInfo>> none;
  const auto result = wire::CreateCommandResultDirect(fbb, 1, wire::CommandStatus::Rejected,
                                                      wire::RejectReason::Duplicate, "dup", 5, 0, 0,
                                                      nullptr, &none);
  const auto payload = t::finish_server(fbb, wire::ServerMessage::CommandResult, result.Union());
  const c::CommandReply reply =
      c::to_command_reply(*vp_verified(payload)->message_as_CommandResult());
  CHECK_FALSE(reply.accepted());
  CHECK(reply.reason == wire::RejectReason::Duplicate);
  REQUIRE(reply.garages.has_value());
  CHECK(reply.garages->empty());
  CHECK_FALSE(reply.signals.has_value());
  CHECK_FALSE(reply.zones.has_value());
  CHECK_FALSE(reply.vehicle.has_value());
}

namespace {

// A CommandResult carrying `stats`, decoded as the SDK does.
c::CommandReply stats_reply(flatbuffers::FlatBufferBuilder& fbb,
                            flatbuffers::Offset<wire::Stats> stats) {
  wire::CommandResultBuilder rb(fbb);
  rb.add_request_id(3);
  rb.add_stats(stats);
  const auto result = rb.Finish();
  const auto payload = t::finish_server(fbb, wire::ServerMessage::CommandResult, result.Union());
  return c::to_command_reply(*vp_verified(payload)->message_as_CommandResult());
}

}  // namespace

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
  const c::CommandReply reply = stats_reply(fbb, b.Finish());
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

TEST_CASE("Stats decode the lease, spawn-stage and client-observer totals", "[decode][leases]") {
  flatbuffers::FlatBufferBuilder fbb;
  const std::uint32_t by_reason[5] = {4, 0, 2, 0, 1};
  const auto reasons = fbb.CreateVector(by_reason, 5);
  wire::StatsBuilder b(fbb);
  b.add_leases_assigned(11);
  b.add_leases_unassigned(7);
  b.add_leases_unassigned_past_grace(7);
  b.add_leases_past_grace_by_reason(reasons);
  b.add_leases_released_total(3);
  b.add_leases_preserved_total(5);
  b.add_lease_reports_total(9);
  b.add_spawn_awaiting_representation(2);
  b.add_spawn_attached_total(6);
  b.add_spawn_ready_total(4);
  b.add_client_observers(256);
  b.add_client_observers_dropped(12);
  const c::CommandReply reply = stats_reply(fbb, b.Finish());
  REQUIRE(reply.stats.has_value());
  const c::StatsInfo& s = *reply.stats;
  CHECK(s.leases_assigned == 11);
  CHECK(s.leases_unassigned == 7);
  CHECK(s.leases_unassigned_past_grace == 7);
  CHECK(s.leases_past_grace_by_reason == std::vector<std::uint32_t>{4, 0, 2, 0, 1});
  CHECK(s.leases_released_total == 3);
  CHECK(s.leases_preserved_total == 5);
  CHECK(s.lease_reports_total == 9);
  CHECK(s.spawn_awaiting_representation == 2);
  CHECK(s.spawn_attached_total == 6);
  CHECK(s.spawn_ready_total == 4);
  CHECK(s.client_observers == 256);
  CHECK(s.client_observers_dropped == 12);
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
  const auto* w = vp_verified(payload)->message_as_Welcome();
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

  // Delta signals: the decoded Delta and the mirror's phase table.
  auto delta_with = [](std::uint64_t step, bool baseline,
                       const std::vector<wire::SignalPhaseState>& phases) {
    t::DeltaSpec d;
    d.step = step;
    d.baseline = baseline;
    d.signals = phases;
    return t::decoded(d);
  };
  const c::Delta delta1 = delta_with(1, true,
                                     {wire::SignalPhaseState(0, wire::SignalPhase::Closed),
                                      wire::SignalPhaseState(2, wire::SignalPhase::Yield)});
  REQUIRE(delta1.signals.size() == 2);
  CHECK(delta1.signals[0].index == 0);
  CHECK(delta1.signals[0].phase == wire::SignalPhase::Closed);
  CHECK(delta1.signals[1].index == 2);
  CHECK(delta1.signals[1].phase == wire::SignalPhase::Yield);

  c::EntityMirror mirror;
  CHECK(mirror.signal_phases().empty());
  mirror.apply(delta1);
  REQUIRE(mirror.signal_phases().size() == 3);
  CHECK(mirror.signal_phases()[0] == wire::SignalPhase::Closed);
  CHECK(mirror.signal_phases()[1] == wire::SignalPhase::Open);  // never named
  CHECK(mirror.signal_phases()[2] == wire::SignalPhase::Yield);
  mirror.apply(delta_with(2, false, {wire::SignalPhaseState(0, wire::SignalPhase::Open)}));
  CHECK(mirror.signal_phases()[0] == wire::SignalPhase::Open);
  CHECK(mirror.signal_phases()[2] == wire::SignalPhase::Yield);  // kept

  // A Delta without signals decodes to none.
  CHECK(t::decoded(t::DeltaSpec{}).signals.empty());
}

TEST_CASE("Spawn pipeline commands round-trip with their arguments", "[messages][population]") {
  const c::Frame spawn_frame =
      c::build_command(1, c::SpawnPedestrianCmd{"market", "sw2", wire::PriorityClass::Story, 2500});
  const auto* spawn = vp_command_of(spawn_frame, 1)->body_as_SpawnPedestrian();
  REQUIRE(spawn != nullptr);
  CHECK(spawn->zone()->str() == "market");
  CHECK(spawn->lane()->str() == "sw2");
  CHECK(spawn->priority() == wire::PriorityClass::Story);
  CHECK(spawn->timeout_ms() == 2500);

  // Empty zone and lane are not sent at all ("any").
  const c::Frame any_frame = c::build_command(2, c::SpawnPedestrianCmd{});
  const auto* any = vp_command_of(any_frame, 2)->body_as_SpawnPedestrian();
  REQUIRE(any != nullptr);
  CHECK(any->zone() == nullptr);
  CHECK(any->lane() == nullptr);
  CHECK(any->priority() == wire::PriorityClass::Quest);

  const c::Frame cancel_frame = c::build_command(3, c::CancelSpawnCmd{99});
  CHECK(vp_command_of(cancel_frame, 3)->body_as_CancelSpawn()->handle() == 99);

  const c::Frame attached_frame = c::build_command(4, c::ReportAttachedCmd{{5, 6}});
  const auto* attached = vp_command_of(attached_frame, 4)->body_as_ReportAttached();
  REQUIRE(attached != nullptr);
  CHECK(attached->id()->index() == 5);
  CHECK(attached->id()->generation() == 6);

  const c::Frame life_frame = c::build_command(5, c::SetLifecycleCmd{1, 3, 500, 8});
  const auto* life = vp_command_of(life_frame, 5)->body_as_SetLifecycle();
  REQUIRE(life != nullptr);
  CHECK(life->growth_quota() == 1);
  CHECK(life->recycle_quota() == 3);
  CHECK(life->interval_ms() == 500);
  CHECK(life->migration_budget() == 8);

  const c::Frame ff_frame = c::build_command(6, c::ForceFullCmd{{7, 1}, false});
  const auto* ff = vp_command_of(ff_frame, 6)->body_as_ForceFull();
  REQUIRE(ff != nullptr);
  CHECK(ff->id()->index() == 7);
  CHECK_FALSE(ff->on());

  const c::Frame qe_frame = c::build_command(7, c::QueryEntityCmd{{9, 2}});
  CHECK(vp_command_of(qe_frame, 7)->body_as_QueryEntity()->id()->index() == 9);
  const c::Frame qp_frame = c::build_command(8, c::QueryPopulationCmd{});
  CHECK(vp_command_of(qp_frame, 8)->body_as_QueryPopulation() != nullptr);
  const c::Frame qs_frame = c::build_command(9, c::QuerySpawnCmd{12});
  CHECK(vp_command_of(qs_frame, 9)->body_as_QuerySpawn()->handle() == 12);

  // A route is sent in order, lane ids as given; an empty route not at all.
  CHECK(any->route() == nullptr);
  c::SpawnPedestrianCmd routed{"market", "", wire::PriorityClass::Quest, 0};
  routed.route = {"market.loop", "x.market.office", "office.loop"};
  const c::Frame route_frame = c::build_command(11, routed);
  const auto* walk = vp_command_of(route_frame, 11)->body_as_SpawnPedestrian();
  REQUIRE(walk != nullptr);
  REQUIRE(walk->route() != nullptr);
  REQUIRE(walk->route()->size() == 3);
  CHECK(walk->route()->Get(0)->str() == "market.loop");
  CHECK(walk->route()->Get(2)->str() == "office.loop");
  CHECK(walk->lane() == nullptr);

  // An unknown priority is sent as given: the server judges it.
  const c::Frame bad_frame =
      c::build_command(10, c::SpawnPedestrianCmd{"", "", static_cast<wire::PriorityClass>(9), 0});
  CHECK(static_cast<int>(vp_command_of(bad_frame, 10)->body_as_SpawnPedestrian()->priority()) == 9);
}

TEST_CASE("LifecycleBatch keeps op order and caps what it sends", "[messages][population]") {
  c::LifecycleBatchCmd b;
  b.ops.push_back(c::LifecycleOpSpec::spawn_op({"z", "", wire::PriorityClass::Community, 0}));
  b.ops.push_back(c::LifecycleOpSpec::despawn_op({3, 4}));
  const c::Frame frame = c::build_command(1, b);
  const auto* batch = vp_command_of(frame, 1)->body_as_LifecycleBatch();
  REQUIRE(batch != nullptr);
  REQUIRE(batch->ops()->size() == 2);
  CHECK(batch->ops()->Get(0)->kind() == wire::LifecycleOpKind::Spawn);
  CHECK(batch->ops()->Get(0)->spawn()->zone()->str() == "z");
  CHECK(batch->ops()->Get(0)->spawn()->priority() == wire::PriorityClass::Community);
  CHECK(batch->ops()->Get(0)->id() == nullptr);
  CHECK(batch->ops()->Get(1)->kind() == wire::LifecycleOpKind::Despawn);
  CHECK(batch->ops()->Get(1)->spawn() == nullptr);
  CHECK(batch->ops()->Get(1)->id()->index() == 3);

  // 257 ops are sent (the server answers InvalidArgument); beyond
  // kMaxLifecycleOps the builder stops so the frame still verifies.
  const c::Frame over = c::build_command(2, spawn_batch(257));
  CHECK(vp_command_of(over, 2)->body_as_LifecycleBatch()->ops()->size() == 257);
  const c::Frame huge = c::build_command(3, spawn_batch(c::kMaxLifecycleOps + 50));
  CHECK(vp_command_of(huge, 3)->body_as_LifecycleBatch()->ops()->size() == c::kMaxLifecycleOps);

  // A Spawn op carries its route.
  c::SpawnPedestrianCmd routed{"", "", wire::PriorityClass::Quest, 0};
  routed.route = {"x.facilities.market", "market.loop"};
  const c::Frame with_route =
      c::build_command(4, c::LifecycleBatchCmd{{c::LifecycleOpSpec::spawn_op(routed)}});
  const auto* op = vp_command_of(with_route, 4)->body_as_LifecycleBatch()->ops()->Get(0);
  REQUIRE(op->spawn()->route() != nullptr);
  REQUIRE(op->spawn()->route()->size() == 2);
  CHECK(op->spawn()->route()->Get(1)->str() == "market.loop");
}

TEST_CASE("SpawnPedestrian routes are capped so the frame always fits", "[messages][population]") {
  // 257 lanes are sent (the server answers InvalidArgument); beyond
  // kMaxRouteLanes the builder stops, and each lane id is truncated to
  // kMaxRouteLaneBytes, so even the largest route verifies under the cap.
  c::SpawnPedestrianCmd over{"", "", wire::PriorityClass::Quest, 0};
  over.route.assign(257, "market.loop");
  const c::Frame over_frame = c::build_command(1, over);
  CHECK(vp_command_of(over_frame, 1)->body_as_SpawnPedestrian()->route()->size() == 257);

  c::SpawnPedestrianCmd huge{std::string(c::kMaxCommandStringBytes + 10, 'z'),
                             std::string(c::kMaxCommandStringBytes + 10, 'l'),
                             wire::PriorityClass::Quest, 0};
  huge.route.assign(c::kMaxRouteLanes + 40, std::string(c::kMaxRouteLaneBytes + 500, 'r'));
  const c::Frame huge_frame = c::build_command(2, huge);
  CHECK(huge_frame.size() <= bustle::proto::kClientFrameMaxBytes);
  const auto* route = vp_command_of(huge_frame, 2)->body_as_SpawnPedestrian()->route();
  REQUIRE(route != nullptr);
  CHECK(route->size() == c::kMaxRouteLanes);
  CHECK(route->Get(0)->size() == c::kMaxRouteLaneBytes);
}

TEST_CASE("SetObservers sends views only when given", "[messages][population]") {
  const c::Frame plain = c::build_command(1, c::SetObserversCmd{{{1.0f, 2.0f}}});
  CHECK(vp_command_of(plain, 1)->body_as_SetObservers()->views() == nullptr);

  c::SetObserversCmd with_views{{{1.0f, 2.0f}, {3.0f, 4.0f}},
                                {{5.0, true, 1.25}, {0.0, false, 0.0}}};
  const c::Frame framed = c::build_command(2, with_views);
  const auto* obs = vp_command_of(framed, 2)->body_as_SetObservers();
  REQUIRE(obs->views() != nullptr);
  REQUIRE(obs->views()->size() == 2);
  CHECK(obs->views()->Get(0)->z_m() == 5.0);
  CHECK(obs->views()->Get(0)->has_heading());
  CHECK(obs->views()->Get(0)->heading_rad() == 1.25);
  CHECK_FALSE(obs->views()->Get(1)->has_heading());

  // A mismatch is sent as given (the server rejects it); the view count is
  // capped so the frame always verifies.
  c::SetObserversCmd many;
  many.points.resize(2);
  many.views.resize(c::kMaxObserverViews + 10);
  const c::Frame many_frame = c::build_command(3, many);
  CHECK(vp_command_of(many_frame, 3)->body_as_SetObservers()->views()->size() ==
        c::kMaxObserverViews);
}

TEST_CASE("CommandReply decodes spawn, batch, entity and population answers",
          "[decode][population]") {
  flatbuffers::FlatBufferBuilder fbb;
  const auto spawn =
      t::spawn_status(fbb, {7, wire::SpawnState::Attached, false, wire::EntityId(3, 1), "market"});
  const auto info = wire::CreateEntityInfoDirect(
      fbb, nullptr, false, wire::EntityKind::Pedestrian, wire::LifecycleState::Gone,
      wire::SimTier::Coarse, wire::RepresentationHint::None, wire::PriorityClass::Background,
      wire::PedestrianOrigin::Spawned, false, false, nullptr, "office");
  std::vector<flatbuffers::Offset<wire::CommunityInfo>> communities{
      wire::CreateCommunityInfoDirect(fbb, "vendors", 24, 12, "market", 10, 14, true)};
  const std::vector<std::uint32_t> live{1, 0, 2};
  const std::vector<std::uint64_t> reasons{0, 0, 0, 0, 5};
  const auto communities_vec = fbb.CreateVector(communities);
  const auto live_vec = fbb.CreateVector(live);
  const auto reasons_vec = fbb.CreateVector(reasons);
  const auto quality = fbb.CreateString("low");
  wire::PopulationInfoBuilder p(fbb);
  p.add_spawn_displaced_total(3);
  p.add_quality(quality);
  p.add_attached_in_use(16);
  p.add_attached_limit(16);
  p.add_unattached_in_use(5);
  p.add_unattached_limit(32);
  p.add_no_slot_total(2);
  p.add_hour(12.5);
  p.add_communities(communities_vec);
  p.add_spawn_live(live_vec);
  p.add_despawned_by_reason(reasons_vec);
  p.add_ledger_deficit(3.5);
  p.add_spawned(4);
  const auto population = p.Finish();
  const std::vector<std::uint64_t> handles{11, 12};
  const auto handles_vec = fbb.CreateVector(handles);
  const wire::EntityId entity(9, 9);
  wire::CommandResultBuilder rb(fbb);
  rb.add_request_id(4);
  rb.add_status(wire::CommandStatus::Rejected);
  rb.add_reason(wire::RejectReason::UnknownEntity);
  rb.add_handle(7);
  rb.add_entity(&entity);
  rb.add_batch(wire::BatchStatus::Committed);
  rb.add_handles(handles_vec);
  rb.add_entity_info(info);
  rb.add_population(population);
  rb.add_spawn(spawn);
  const auto payload =
      t::finish_server(fbb, wire::ServerMessage::CommandResult, rb.Finish().Union());

  const c::CommandReply r = c::to_command_reply(*vp_verified(payload)->message_as_CommandResult());
  CHECK(r.reason == wire::RejectReason::UnknownEntity);
  CHECK(r.handle == 7);
  REQUIRE(r.entity.has_value());
  CHECK(*r.entity == c::EntityId{9, 9});
  CHECK(r.batch == wire::BatchStatus::Committed);
  CHECK(r.handles == std::vector<std::uint64_t>{11, 12});
  REQUIRE(r.spawn.has_value());
  CHECK(r.spawn->handle == 7);
  CHECK(r.spawn->state == wire::SpawnState::Attached);
  CHECK(r.spawn->entity_id() == c::EntityId{3, 1});
  CHECK(r.spawn->zone == "market");
  CHECK(r.spawn->lane == c::SpawnStatusInfo::kNoLane);
  CHECK_FALSE(r.spawn->succeeded());
  REQUIRE(r.entity_info.has_value());
  CHECK_FALSE(r.entity_info->alive);
  CHECK(r.entity_info->lifecycle == wire::LifecycleState::Gone);
  CHECK(r.entity_info->origin == wire::PedestrianOrigin::Spawned);
  CHECK(r.entity_info->priority == wire::PriorityClass::Background);
  CHECK(r.entity_info->community.empty());
  CHECK(r.entity_info->zone == "office");
  CHECK(r.entity_info->lane == -1);
  REQUIRE(r.population.has_value());
  CHECK(r.population->hour == 12.5);
  CHECK(r.population->spawned == 4);
  CHECK(r.population->ledger_deficit == 3.5);
  CHECK(r.population->spawn_live == live);
  CHECK(r.population->spawn_displaced_total == 3);  // spawn pressure (issue 12)
  CHECK(r.population->quality == "low");
  CHECK(r.population->attached_in_use == 16);
  CHECK(r.population->unattached_limit == 32);
  CHECK(r.population->no_slot_total == 2);
  CHECK(r.population->despawned_by_reason == reasons);
  CHECK(r.population->tiers.empty());
  REQUIRE(r.population->communities.size() == 1);
  CHECK(r.population->communities[0]->id == "vendors");
  CHECK(r.population->communities[0]->zone == "market");
  CHECK(r.population->communities[0]->dormant == 14);
  CHECK(r.population->communities[0]->saveable);

  // An answer without these parts leaves them empty.
  const auto plain = t::command_result_payload(5);
  const c::CommandReply none = c::to_command_reply(*vp_verified(plain)->message_as_CommandResult());
  CHECK(none.handle == 0);
  CHECK_FALSE(none.entity.has_value());
  CHECK(none.batch == wire::BatchStatus::None);
  CHECK(none.handles.empty());
  CHECK_FALSE(none.entity_info.has_value());
  CHECK_FALSE(none.population.has_value());
  CHECK_FALSE(none.spawn.has_value());
}

TEST_CASE("Delta dots and retiring decode, and the mirror keeps them",
          "[decode][mirror][population]") {
  t::DeltaSpec base;
  base.step = 10;
  base.baseline = true;
  base.entered = {t::enter(1, 1, 0, 0), t::enter(2, 1, 0, 1000)};
  base.with_dots = true;
  base.dots = {wire::ChainDots(0, 3), wire::ChainDots(2, 7)};
  base.retiring = {wire::EntityId(2, 1)};
  const c::Delta d0 = t::decoded(base);
  REQUIRE(d0.dots.has_value());
  REQUIRE(d0.dots->size() == 2);
  CHECK((*d0.dots)[1].chain == 2);
  CHECK((*d0.dots)[1].count == 7);
  CHECK(d0.retiring == std::vector<c::EntityId>{{2, 1}});

  struct Listener : c::MirrorListener {
    std::vector<c::EntityId> retiring;
    void on_retiring(const c::EntityView& v) override { retiring.push_back(v.id); }
  } listener;
  c::EntityMirror mirror;
  const c::ApplySummary s0 = mirror.apply(d0, &listener);
  CHECK(s0.retiring == 1);
  CHECK(s0.dots);
  CHECK(listener.retiring == std::vector<c::EntityId>{{2, 1}});
  CHECK(mirror.find({2, 1})->retiring);
  CHECK_FALSE(mirror.find({1, 1})->retiring);
  CHECK(mirror.has_dots());
  CHECK(mirror.dots_step() == 10);
  CHECK(mirror.chain_dots() == std::vector<std::uint16_t>{3, 0, 7});

  // No dots this step: the last ones stay. A repeated or unknown retiring id
  // is counted, not an error.
  t::DeltaSpec next;
  next.step = 11;
  next.retiring = {wire::EntityId(2, 1), wire::EntityId(5, 1)};
  const c::ApplySummary s1 = mirror.apply(t::decoded(next), &listener);
  CHECK(s1.retiring == 0);
  CHECK(s1.unknown_retiring == 1);
  CHECK_FALSE(s1.dots);
  CHECK(mirror.chain_dots() == std::vector<std::uint16_t>{3, 0, 7});
  CHECK(listener.retiring.size() == 1);

  // New dots replace the old ones entirely; the retiring entity leaves.
  t::DeltaSpec later;
  later.step = 20;
  later.left = {wire::EntityId(2, 1)};
  later.with_dots = true;
  later.dots = {wire::ChainDots(1, 65535)};
  mirror.apply(t::decoded(later));
  CHECK(mirror.find({2, 1}) == nullptr);
  CHECK(mirror.chain_dots() == std::vector<std::uint16_t>{0, 65535, 0});
  CHECK(mirror.dots_step() == 20);

  // A baseline without dots clears them (they belonged to another world).
  t::DeltaSpec rebase;
  rebase.step = 3;
  rebase.baseline = true;
  mirror.apply(t::decoded(rebase));
  CHECK_FALSE(mirror.has_dots());
  CHECK(mirror.chain_dots().empty());
  CHECK(mirror.counters().retiring == 1);
  CHECK(mirror.counters().unknown_retiring == 1);
  CHECK(mirror.counters().dots == 2);
}

TEST_CASE("lane chains decode from Welcome", "[decode][population]") {
  flatbuffers::FlatBufferBuilder fbb;
  const std::vector<std::uint32_t> lanes{4, 5, 6};
  const auto chain = wire::CreateLaneChainInfoDirect(fbb, &lanes, true, false, 42.5f);
  fbb.Finish(chain);
  const c::LaneChain lc =
      c::to_lane_chain(*flatbuffers::GetRoot<wire::LaneChainInfo>(fbb.GetBufferPointer()));
  CHECK(lc.lanes == lanes);
  CHECK(lc.cyclic);
  CHECK_FALSE(lc.pedestrian);
  CHECK(lc.length_m == 42.5f);
}
