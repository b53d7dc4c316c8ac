// Integration: vehicle and population commands against the real bustle-server
// with the corridor and large-block scenarios, manual clock (world commands
// are answered at the next step: send, Step, then wait for the result).
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "bustle/client/client.hpp"
#include "bustle/client/entity_mirror.hpp"
#include "support/process.hpp"

#ifndef BUSTLE_SERVER_PATH
#error "BUSTLE_SERVER_PATH must name the bustle-server executable"
#endif
#ifndef BUSTLE_REPO_DIR
#error "BUSTLE_REPO_DIR must name the source tree (for configs/)"
#endif

namespace c = bustle::client;
namespace t = bustle::test;
namespace wire = bustle::wire;
using namespace std::chrono_literals;

namespace {

const std::string kCorridor = std::string(BUSTLE_REPO_DIR) + "/configs/corridor.city.json";
const std::string kLargeBlock = std::string(BUSTLE_REPO_DIR) + "/configs/largeblock.city.json";

std::unique_ptr<t::ServerUnderTest> start(const std::vector<std::string>& args) {
  std::string error;
  auto server = t::start_server(BUSTLE_SERVER_PATH, args, error);
  INFO(error);
  REQUIRE(server != nullptr);
  return server;
}

c::ClientOptions options(const t::ServerUnderTest& server, wire::Role role) {
  c::ClientOptions o;
  o.host = server.host;
  o.port = server.port;
  o.role = role;
  o.client_name = "vehicles-integration-test";
  return o;
}

// Sends a world command, then one Step, and returns the command's result.
c::CommandReply apply_with_step(c::Client& client, const c::CommandSpec& spec) {
  const auto sent = client.send_command(spec);
  INFO(sent.message);
  REQUIRE(sent.ok());
  const auto step = client.command(c::StepCmd{1}, 5000ms);
  INFO(step.message);
  REQUIRE(step.ok());
  REQUIRE(step.value.accepted());
  const auto r = client.wait_result(sent.value, 5000ms);
  INFO(r.message);
  REQUIRE(r.ok());
  return r.value;
}

void step(c::Client& client, std::uint32_t n) {
  const auto r = client.command(c::StepCmd{n}, 10000ms);
  INFO(r.message);
  REQUIRE(r.ok());
  REQUIRE(r.value.accepted());
}

c::CommandReply query(c::Client& client, const c::CommandSpec& spec) {
  const auto r = client.command(spec, 5000ms);
  INFO(r.message);
  REQUIRE(r.ok());
  return r.value;
}

// The first vehicle in a fresh baseline Delta (subscribed to vehicles only).
c::EntityId first_vehicle(c::Client& client) {
  const wire::EntityKind kinds[] = {wire::EntityKind::Vehicle};
  REQUIRE(client.subscribe(kinds).ok());
  for (int i = 0; i < 50; ++i) {
    const auto d = client.next_delta(5000ms);
    INFO(d.message);
    REQUIRE(d.ok());
    const wire::Delta* delta = d.value.delta();
    if (!delta->baseline()) continue;  // Deltas of earlier steps may come first
    REQUIRE(delta->entered() != nullptr);
    REQUIRE(delta->entered()->size() > 0);
    const auto* s = delta->entered()->Get(0);
    CHECK(s->kind() == wire::EntityKind::Vehicle);
    return c::EntityId::from_wire(s->id());
  }
  FAIL("no baseline Delta");
  return {};
}

}  // namespace

TEST_CASE("Corridor: Welcome geometry plus garage signal and vehicle queries after stepping",
          "[integration][vehicles]") {
  auto server = start({"--clock", "manual", "--config", kCorridor});
  c::Client client(options(*server, wire::Role::Operator));
  const auto welcome = client.connect();
  INFO(welcome.message);
  REQUIRE(welcome.ok());
  REQUIRE(welcome.value.garages.size() == 1);
  CHECK(welcome.value.garages[0].id == "g0");
  CHECK(welcome.value.garages[0].entrance_lane == 0);
  CHECK(welcome.value.garages[0].route.size() == 4);
  REQUIRE(welcome.value.signals.size() == 1);
  CHECK(welcome.value.signals[0].id == "s1");
  CHECK(welcome.value.signals[0].lane == 1);
  CHECK(welcome.value.signals[0].stop_alpha == Approx(0.82));
  CHECK(welcome.value.signals[0].yield_alpha == Approx(0.35));

  step(client, 40);

  const auto garages = query(client, c::QueryGaragesCmd{});
  CHECK(garages.accepted());
  REQUIRE(garages.garages.has_value());
  REQUIRE(garages.garages->size() == 1);
  const c::GarageReport& g = garages.garages->front();
  CHECK(g.id == "g0");
  CHECK(g.capacity == 18);
  CHECK(g.dispatched >= 1);
  CHECK(g.managed >= 1);
  CHECK(g.plan_total == 18);
  CHECK(g.plan_injected > 0);
  CHECK(g.gate_steps.size() == 6);  // one count per DispatchGate value

  const auto signals = query(client, c::QuerySignalsCmd{});
  CHECK(signals.accepted());
  REQUIRE(signals.signals.has_value());
  REQUIRE(signals.signals->size() == 1);
  CHECK(signals.signals->front().id == "s1");
  CHECK(signals.signals->front().lane == 1);

  const auto stats = query(client, c::QueryStatsCmd{});
  REQUIRE(stats.stats.has_value());
  CHECK(stats.stats->vehicles == g.managed);
  CHECK(stats.stats->vehicles_full + stats.stats->vehicles_simulated +
            stats.stats->vehicles_coarse ==
        stats.stats->vehicles);

  const c::EntityId vid = first_vehicle(client);
  const auto vehicle = query(client, c::QueryVehicleCmd{vid});
  CHECK(vehicle.accepted());
  REQUIRE(vehicle.vehicle.has_value());
  const c::VehicleReport& v = *vehicle.vehicle;
  CHECK(v.id == vid);
  CHECK(v.garage == "g0");
  CHECK(v.vehicle_id.rfind("vehicle.g0.", 0) == 0);
  CHECK(v.prototype == "sedan");
  CHECK(v.request_id.rfind("r", 0) == 0);
  CHECK(v.lane < 4);
  CHECK(v.alpha >= 0.0);
  CHECK(v.alpha <= 1.0);
  CHECK(v.steps_advanced > 0);

  // A Delta carries every signal's phase.
  step(client, 1);
  bool saw_signals = false;
  for (int i = 0; i < 5 && !saw_signals; ++i) {
    const auto d = client.next_delta(3000ms);
    REQUIRE(d.ok());
    const auto phases = c::signal_phases(*d.value.delta());
    if (phases.empty()) continue;
    CHECK(phases.size() == 1);
    CHECK(phases[0].index == 0);
    saw_signals = true;
  }
  CHECK(saw_signals);

  // Not a vehicle (and not alive): rejected, answered at once.
  const auto none = query(client, c::QueryVehicleCmd{{1000, 77}});
  CHECK_FALSE(none.accepted());
  CHECK(none.reason == wire::RejectReason::UnknownEntity);
  CHECK_FALSE(none.vehicle.has_value());
}

TEST_CASE("Corridor: garage request accepted once and duplicate rejected then strategy parked",
          "[integration][vehicles]") {
  auto server = start({"--clock", "manual", "--config", kCorridor});
  c::Client client(options(*server, wire::Role::Operator));
  REQUIRE(client.connect().ok());
  step(client, 20);

  const auto first = apply_with_step(client, c::GarageRequestCmd{"g0", "x1", "sedan", "lane0", 5});
  INFO(first.message);
  CHECK(first.accepted());
  CHECK(first.message.find("enqueue ordinal") != std::string::npos);

  const auto dup = apply_with_step(client, c::GarageRequestCmd{"g0", "x1", "sedan", "lane0", 5});
  CHECK_FALSE(dup.accepted());
  CHECK(dup.reason == wire::RejectReason::Duplicate);

  const auto bad_lane =
      apply_with_step(client, c::GarageRequestCmd{"g0", "x2", "sedan", "lane2", 5});
  CHECK_FALSE(bad_lane.accepted());
  CHECK(bad_lane.reason == wire::RejectReason::InvalidArgument);

  const auto garages = query(client, c::QueryGaragesCmd{});
  REQUIRE(garages.garages.has_value());
  CHECK(garages.garages->front().rejected_duplicate >= 1);
  CHECK(garages.garages->front().rejected_invalid >= 1);

  // Cancel something never queued: NotFound.
  const auto cancel = apply_with_step(client, c::CancelGarageRequestCmd{"g0", "nope"});
  CHECK_FALSE(cancel.accepted());
  CHECK(cancel.reason == wire::RejectReason::NotFound);

  const c::EntityId vid = first_vehicle(client);
  const auto parked =
      apply_with_step(client, c::SetVehicleStrategyCmd{vid, wire::VehicleStrategy::Parked});
  INFO(parked.message);
  CHECK(parked.accepted());
  step(client, 2);
  const auto vehicle = query(client, c::QueryVehicleCmd{vid});
  REQUIRE(vehicle.vehicle.has_value());
  CHECK(vehicle.vehicle->strategy == wire::VehicleStrategyState::Parked);
  CHECK(vehicle.vehicle->policy == wire::ControlPolicy::Parked);
  CHECK(vehicle.vehicle->speed_mps == 0.0);

  const auto observers = apply_with_step(client, c::SetObserversCmd{{{25.0f, 25.0f}}});
  CHECK(observers.accepted());
}

TEST_CASE("Large block: QueryZones as viewer then hour 12 sets zone targets",
          "[integration][population]") {
  auto server = start({"--clock", "manual", "--config", kLargeBlock});
  c::Client viewer(options(*server, wire::Role::Viewer));
  REQUIRE(viewer.connect().ok());
  // A query: answered without a step, for any role.
  const auto before = query(viewer, c::QueryZonesCmd{});
  INFO(before.message);
  CHECK(before.accepted());
  REQUIRE(before.zones.has_value());
  REQUIRE(before.zones->size() == 3);
  CHECK(before.zones->at(0).id == "market");
  CHECK(before.zones->at(0).capacity == 48);

  // World commands need the operator role.
  const auto refused = viewer.command(c::SetHourCmd{12.0}, 5000ms);
  REQUIRE(refused.ok());
  CHECK(refused.value.reason == wire::RejectReason::NotAuthorized);

  c::Client op(options(*server, wire::Role::Operator));
  REQUIRE(op.connect().ok());
  const auto hour = apply_with_step(op, c::SetHourCmd{12.0});
  INFO(hour.message);
  CHECK(hour.accepted());
  const auto bad_hour = apply_with_step(op, c::SetHourCmd{24.0});
  CHECK(bad_hour.reason == wire::RejectReason::InvalidArgument);
  const auto scale = apply_with_step(op, c::SetTimeScaleCmd{1});
  CHECK(scale.accepted());
  step(op, 10);  // several 250 ms lifecycle intervals

  const auto stats = query(op, c::QueryStatsCmd{});
  REQUIRE(stats.stats.has_value());
  CHECK(stats.stats->hour >= 12.0);
  CHECK(stats.stats->hour < 12.1);
  CHECK(stats.stats->time_scale == 1);
  CHECK(stats.stats->residents == 72);
  CHECK(stats.stats->residents_active <= stats.stats->residents);

  const auto zones = query(viewer, c::QueryZonesCmd{});
  REQUIRE(zones.zones.has_value());
  REQUIRE(zones.zones->size() == 3);
  std::uint32_t targets = 0;
  std::uint32_t active = 0;
  for (const c::ZoneReport& z : *zones.zones) {
    INFO(z.id << " target " << z.target << " active " << z.active);
    CHECK(z.target <= z.capacity);
    targets += z.target;
    active += z.active;
  }
  CHECK(targets > 0);
  CHECK(active > 0);
  CHECK(active == stats.stats->residents_active);
}
