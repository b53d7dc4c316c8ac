// Integration: vehicle and population commands against the real bustle-server
// with the corridor and large-block scenarios, manual clock (world commands
// are answered at the next step: send, Step, then wait for the result): the
// spawn pipeline with its SpawnUpdates, entity/population/spawn queries, role
// checks and bad input, distant dots and retiring entities in the stream.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "bustle/client/client.hpp"
#include "bustle/client/entity_mirror.hpp"
#include "support/process.hpp"
#include "support/server_fixture.hpp"

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

const std::string kVehiclesCorridor = std::string(BUSTLE_REPO_DIR) + "/configs/corridor.city.json";
const std::string kVehiclesLargeBlock =
    std::string(BUSTLE_REPO_DIR) + "/configs/largeblock.city.json";

std::unique_ptr<t::ServerUnderTest> start_vehicles_server(const std::vector<std::string>& args) {
  return t::start_or_fail(BUSTLE_SERVER_PATH, args);
}

c::ClientOptions vehicles_client_options(const t::ServerUnderTest& server, wire::Role role) {
  c::ClientOptions o;
  o.host = server.host;
  o.port = server.port;
  o.role = role;
  o.client_name = "vehicles-integration-test";
  return o;
}

// Sends a world command, then one Step (from `stepper`, an operator, when the
// sender may not step), and returns the command's result.
c::CommandReply apply_with_step(c::Client& client, const c::CommandSpec& spec,
                                c::Client* stepper = nullptr) {
  const auto sent = client.send_command(spec);
  INFO(sent.message);
  REQUIRE(sent.ok());
  const auto step = (stepper != nullptr ? *stepper : client).command(c::StepCmd{1}, 5000ms);
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

// The first vehicle in a fresh baseline Delta (subscribed to vehicles only),
// with its label and archetype.
struct FirstVehicle {
  c::EntityId id;
  std::string label;
  std::uint16_t archetype = 0;
};
FirstVehicle first_vehicle(c::Client& client) {
  c::SubscribeParams params;
  params.kinds = {c::EntityKind::Vehicle};
  const auto sub = client.subscribe(params, 5000ms);
  INFO(sub.message);
  REQUIRE(sub.ok());
  for (int i = 0; i < 50; ++i) {
    const auto d = client.next_delta(5000ms);
    INFO(d.message);
    REQUIRE(d.ok());
    const c::Delta& delta = d.value;
    if (!delta.baseline) continue;  // Deltas of earlier steps may come first
    REQUIRE_FALSE(delta.entered.empty());
    const c::EnteredEntity& e = delta.entered.front();
    CHECK(e.kind == c::EntityKind::Vehicle);
    FirstVehicle v{e.id, {}, e.archetype};
    for (const c::EntityLabel& l : delta.labels) {
      if (l.index == e.id.index) v.label = l.label;
    }
    return v;
  }
  FAIL("no baseline Delta");
  return {};
}

}  // namespace

TEST_CASE("Corridor: Welcome geometry plus garage signal and vehicle queries after stepping",
          "[integration][vehicles]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kVehiclesCorridor});
  c::Client client(vehicles_client_options(*server, wire::Role::Operator));
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
  // The queue with its EnqueueOrdinals and the dispatched request-id set, as fields.
  CHECK(g.dispatched_ids.size() == g.dispatched);
  CHECK(std::is_sorted(g.dispatched_ids.begin(), g.dispatched_ids.end()));
  CHECK(std::find(g.dispatched_ids.begin(), g.dispatched_ids.end(), "r00") !=
        g.dispatched_ids.end());
  CHECK(g.next_enqueue_ordinal == g.plan_injected);  // every planned request was accepted
  REQUIRE(g.queue.size() == g.queued.size());
  CHECK(!g.queue.empty());
  for (std::size_t k = 0; k < g.queue.size(); ++k) {
    CHECK(g.queue[k]->request_id == g.queued[k]);
    CHECK(g.queue[k]->prototype == "sedan");
    CHECK(g.queue[k]->enqueue_ordinal < g.next_enqueue_ordinal);
    if (k > 0) CHECK(g.queue[k - 1]->enqueue_ordinal < g.queue[k]->enqueue_ordinal);  // all p10
  }

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

  const FirstVehicle first = first_vehicle(client);
  const c::EntityId vid = first.id;
  const auto vehicle = query(client, c::QueryVehicleCmd{vid});
  CHECK(vehicle.accepted());
  REQUIRE(vehicle.vehicle.has_value());
  const c::VehicleReport& v = *vehicle.vehicle;
  CHECK(v.entity() == vid);
  // The stream names it like the query does, and says what it looks like.
  CHECK(first.label == v.vehicle_id);
  REQUIRE(first.archetype < welcome.value.archetypes.size());
  CHECK(welcome.value.archetypes[first.archetype] == "vehicle.sedan");
  CHECK(v.garage == "g0");
  CHECK(v.vehicle_id.rfind("vehicle.g0.", 0) == 0);
  CHECK(v.prototype == "sedan");
  CHECK(v.request_id.rfind("r", 0) == 0);
  CHECK(v.lane < 4);
  CHECK(v.alpha >= 0.0);
  CHECK(v.alpha <= 1.0);
  CHECK(v.steps_advanced > 0);

  // A Delta carries the signal phases that changed since the previous one
  // (a 4 s / 2 s / 4 s cycle: a change within 50 steps).
  step(client, 50);
  bool saw_signals = false;
  for (int i = 0; i < 60 && !saw_signals; ++i) {
    const auto d = client.next_delta(3000ms);
    REQUIRE(d.ok());
    const auto& phases = d.value.signals;
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
  auto server = start_vehicles_server({"--clock", "manual", "--config", kVehiclesCorridor});
  c::Client client(vehicles_client_options(*server, wire::Role::Operator));
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

  const c::EntityId vid = first_vehicle(client).id;
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
  auto server = start_vehicles_server({"--clock", "manual", "--config", kVehiclesLargeBlock});
  c::Client viewer(vehicles_client_options(*server, wire::Role::Viewer));
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

  c::Client op(vehicles_client_options(*server, wire::Role::Operator));
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

TEST_CASE("a spawn handle reports every stage to its requester and a viewer's actor makes it ready",
          "[integration][population]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kVehiclesLargeBlock});
  c::Client op(vehicles_client_options(*server, wire::Role::Operator));
  REQUIRE(op.connect().ok());
  c::Client viewer(vehicles_client_options(*server, wire::Role::Viewer));
  REQUIRE(viewer.connect().ok());

  const c::CommandReply spawned =
      apply_with_step(op, c::SpawnPedestrianCmd{"market", "", wire::PriorityClass::Story, 0});
  INFO(spawned.message);
  REQUIRE(spawned.accepted());
  const std::uint64_t handle = spawned.handle;
  REQUIRE(handle != 0);

  step(op, 4);
  const auto requested = op.wait_spawn(handle, wire::SpawnState::RepresentationRequested, 5000ms);
  INFO(requested.message);
  REQUIRE(requested.ok());
  const c::SpawnStatusInfo& last = requested.value.back();
  REQUIRE(last.state == wire::SpawnState::RepresentationRequested);
  CHECK(last.zone == "market");
  CHECK(last.priority == wire::PriorityClass::Story);
  // States arrive in pipeline order, each once.
  for (std::size_t i = 1; i < requested.value.size(); ++i) {
    CHECK(static_cast<int>(requested.value[i - 1].state) <
          static_cast<int>(requested.value[i].state));
  }
  const c::EntityId entity = last.entity_id();
  REQUIRE(entity.generation != 0);

  // Viewers hold the actors, so they may report one; it is the representation
  // axis, answered at once without a step.
  const auto attached = viewer.command(c::ReportAttachedCmd{entity}, 5000ms);
  INFO(attached.message);
  REQUIRE(attached.ok());
  CHECK(attached.value.accepted());
  step(op, 2);
  const auto ready = op.wait_spawn(handle, wire::SpawnState::ReadyForGameplay, 5000ms);
  INFO(ready.message);
  REQUIRE(ready.ok());
  CHECK(ready.value.back().state == wire::SpawnState::ReadyForGameplay);
  CHECK(ready.value.back().terminal);
  CHECK(ready.value.back().succeeded());
  // Only the requester gets SpawnUpdates.
  CHECK(viewer.buffered_spawn_updates() == 0);

  const c::CommandReply spawn = query(viewer, c::QuerySpawnCmd{handle});
  CHECK(spawn.accepted());
  REQUIRE(spawn.spawn.has_value());
  CHECK(spawn.spawn->state == wire::SpawnState::ReadyForGameplay);
  CHECK(spawn.spawn->entity_id() == entity);

  const c::CommandReply info = query(viewer, c::QueryEntityCmd{entity});
  CHECK(info.accepted());
  REQUIRE(info.entity_info.has_value());
  CHECK(info.entity_info->alive);
  CHECK(info.entity_info->entity_id() == entity);
  CHECK(info.entity_info->lifecycle == wire::LifecycleState::Active);
  CHECK(info.entity_info->origin == wire::PedestrianOrigin::Spawned);
  CHECK(info.entity_info->zone == "market");
  CHECK(info.entity_info->spawn_handle == handle);
  CHECK(info.entity_info->lane >= 0);

  const c::CommandReply pop = query(viewer, c::QueryPopulationCmd{});
  CHECK(pop.accepted());
  REQUIRE(pop.population.has_value());
  CHECK(pop.population->communities.size() == 3);
  CHECK(pop.population->spawned >= 1);
  CHECK(pop.population->spawn_requested >= 1);
  CHECK(pop.population->spawn_live.size() == 9);
  CHECK(pop.population->tiers.size() == 3);
  CHECK(pop.population->despawned_by_reason.size() == 11);
  CHECK(pop.population->interval_ms == 250);
  for (const auto& community : pop.population->communities) {
    const c::CommunityReport& cr = *community;
    CHECK(cr.active + cr.dormant == cr.base_population);
  }
}

TEST_CASE("a routed spawn starts on its first lane and bad routes are rejected naming the entry",
          "[integration][population]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kVehiclesLargeBlock});
  c::Client op(vehicles_client_options(*server, wire::Role::Operator));
  REQUIRE(op.connect().ok());

  // Crossing into the market, then the market loop (its successor).
  c::SpawnPedestrianCmd routed{"", "", wire::PriorityClass::Quest, 0};
  routed.route = {"x.facilities.market", "market.loop"};
  const c::CommandReply spawned = apply_with_step(op, routed);
  INFO(spawned.message);
  REQUIRE(spawned.accepted());
  step(op, 3);
  const auto registered = op.wait_spawn(spawned.handle, wire::SpawnState::Registered, 5000ms);
  INFO(registered.message);
  REQUIRE(registered.ok());
  const c::SpawnStatusInfo& at = registered.value.back();
  REQUIRE(at.lane != c::SpawnStatusInfo::kNoLane);  // route[0] is the requested lane

  // The same lane asked for directly resolves to the same index.
  const c::CommandReply direct = apply_with_step(
      op, c::SpawnPedestrianCmd{"", "x.facilities.market", wire::PriorityClass::Quest, 0});
  REQUIRE(direct.accepted());
  const c::CommandReply direct_status = query(op, c::QuerySpawnCmd{direct.handle});
  REQUIRE(direct_status.spawn.has_value());
  CHECK(direct_status.spawn->lane == at.lane);

  const c::CommandReply info = query(op, c::QueryEntityCmd{at.entity_id()});
  REQUIRE(info.entity_info.has_value());
  CHECK(info.entity_info->lane == static_cast<std::int32_t>(at.lane));
  CHECK(info.entity_info->s_m < 5.0);  // from the beginning of the lane

  // The core judges succession (at the next step) ...
  c::SpawnPedestrianCmd broken{"", "", wire::PriorityClass::Quest, 0};
  broken.route = {"market.loop", "office.loop"};
  const c::CommandReply rejected = apply_with_step(op, broken);
  CHECK(rejected.reason == wire::RejectReason::InvalidArgument);
  CHECK(rejected.message == "route[1]: 'office.loop' does not follow 'market.loop'");
  CHECK(rejected.handle == 0);

  // ... the server's parser the length, at once.
  c::SpawnPedestrianCmd long_walk{"", "", wire::PriorityClass::Quest, 0};
  long_walk.route.assign(257, "market.loop");
  const c::CommandReply too_long = query(op, long_walk);
  CHECK(too_long.reason == wire::RejectReason::InvalidArgument);
  CHECK(too_long.message == "route: 257 lanes, at most 256 per spawn");
  CHECK(op.connected());
}

TEST_CASE("viewers cannot change the population and bad input is answered, not fatal",
          "[integration][population]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kVehiclesLargeBlock});
  c::Client op(vehicles_client_options(*server, wire::Role::Operator));
  REQUIRE(op.connect().ok());
  c::Client viewer(vehicles_client_options(*server, wire::Role::Viewer));
  REQUIRE(viewer.connect().ok());

  for (const c::CommandSpec& spec :
       {c::CommandSpec{c::SpawnPedestrianCmd{}}, c::CommandSpec{c::CancelSpawnCmd{1}},
        c::CommandSpec{c::SetLifecycleCmd{}}, c::CommandSpec{c::LifecycleBatchCmd{}}}) {
    const c::CommandReply r = query(viewer, spec);
    CHECK(r.reason == wire::RejectReason::NotAuthorized);
    CHECK_THAT(r.message, Catch::EndsWith("requires the operator role"));
  }

  // Rejected by the server's parser at once: no step needed.
  const c::CommandReply views = query(op, c::SetObserversCmd{{{1.0f, 1.0f}, {2.0f, 2.0f}}, {{}}});
  CHECK(views.reason == wire::RejectReason::InvalidArgument);
  CHECK(views.message == "views: 1 entries for 2 points (send one view per point, or no views)");

  c::LifecycleBatchCmd big;
  big.ops.assign(257, c::LifecycleOpSpec::spawn_op({}));
  const c::CommandReply batch = query(op, big);
  CHECK(batch.reason == wire::RejectReason::InvalidArgument);
  CHECK_THAT(batch.message, Catch::Contains("at most 256"));

  const c::CommandReply prio =
      query(op, c::SpawnPedestrianCmd{"market", "", static_cast<wire::PriorityClass>(7), 0});
  CHECK(prio.reason == wire::RejectReason::InvalidArgument);
  CHECK_THAT(prio.message, Catch::StartsWith("priority: unknown PriorityClass value 7"));

  const c::CommandReply no_spawn = query(viewer, c::QuerySpawnCmd{424242});
  CHECK(no_spawn.reason == wire::RejectReason::NotFound);
  CHECK_FALSE(no_spawn.spawn.has_value());

  const c::CommandReply gone = query(viewer, c::QueryEntityCmd{{60000, 7}});
  CHECK(gone.reason == wire::RejectReason::UnknownEntity);
  REQUIRE(gone.entity_info.has_value());
  CHECK(gone.entity_info->lifecycle == wire::LifecycleState::Gone);
  CHECK_FALSE(gone.entity_info->alive);

  // A valid batch still goes through: nothing above broke the connections.
  c::LifecycleBatchCmd two;
  two.ops.assign(2, c::LifecycleOpSpec::spawn_op({"office", "", wire::PriorityClass::Quest, 0}));
  const c::CommandReply ok = apply_with_step(op, two);
  INFO(ok.message);
  CHECK(ok.accepted());
  CHECK(ok.batch == wire::BatchStatus::Committed);
  CHECK(ok.handles.size() == 2);
  CHECK(op.connected());
  CHECK(viewer.connected());
}

TEST_CASE("Welcome names the lane chains and the stream carries dots and retiring entities",
          "[integration][population]") {
  auto server = start_vehicles_server({"--clock", "manual", "--config", kVehiclesLargeBlock});
  c::Client op(vehicles_client_options(*server, wire::Role::Operator));
  REQUIRE(op.connect().ok());
  const c::WelcomeInfo& w = op.welcome();
  REQUIRE_FALSE(w.chains.empty());
  REQUIRE(w.dots_every_steps == 10);  // the scenario default
  for (const c::LaneChain& chain : w.chains) {
    CHECK_FALSE(chain.lanes.empty());
    for (std::uint32_t lane : chain.lanes) CHECK(lane < w.lanes.size());
  }

  REQUIRE(op.subscribe().ok());
  c::EntityMirror mirror;
  mirror.set_strict(true);
  mirror.set_world(w);
  std::optional<std::uint64_t> last_step;
  // Dots arrive with the first Delta at or after each dot step (a Delta that
  // coalesces several steps carries them if any of those was a dot step).
  auto read_until = [&](std::uint64_t target) {
    while (!last_step || *last_step < target) {
      const auto d = op.next_delta(5000ms);
      INFO(d.message);
      REQUIRE(d.ok());
      const c::Delta& delta = d.value;
      const bool dots = delta.dots.has_value();
      if (delta.baseline) {
        CHECK(dots);  // the latest dots of this world (step 0 is a dot step)
      } else {
        REQUIRE(last_step.has_value());
        const std::uint64_t n = w.dots_every_steps;
        const bool dot_step_between = delta.step / n > *last_step / n;
        CHECK(dots == dot_step_between);
      }
      if (dots) CHECK(delta.dots->size() == w.chains.size());
      const auto summary = mirror.apply(delta);
      INFO(summary.error);
      CHECK(summary.ok());
      last_step = delta.step;
    }
  };
  read_until(0);
  step(op, 1);
  read_until(1);
  step(op, 25);  // the network thread may coalesce some of these steps
  read_until(26);
  for (int i = 0; i < 15; ++i) {
    step(op, 1);
    read_until(*last_step + 1);
  }

  // A visible pedestrian (an observer right on it) fades before it leaves. A
  // spawned one, not a resident: a resident's identity goes dormant after the
  // fade and may come back with the same id at the next lifecycle interval.
  const c::CommandReply spawned =
      apply_with_step(op, c::SpawnPedestrianCmd{"market", "", wire::PriorityClass::Quest, 0});
  REQUIRE(spawned.accepted());
  step(op, 3);
  const auto registered = op.wait_spawn(spawned.handle, wire::SpawnState::Registered, 5000ms);
  INFO(registered.message);
  REQUIRE(registered.ok());
  read_until(*last_step + 4);
  const c::EntityView* found = mirror.find(registered.value.back().entity_id());
  REQUIRE(found != nullptr);
  const c::EntityView target_view = *found;
  const c::EntityView* target = &target_view;
  const auto at = mirror.pose(*found, *last_step);
  REQUIRE(at.has_value());
  apply_with_step(op,
                  c::SetObserversCmd{{{static_cast<float>(at->x_m), static_cast<float>(at->y_m)}}});
  step(op, 8);  // tiers settle (transition budget)
  read_until(*last_step + 9);
  const c::CommandReply before = query(op, c::QueryEntityCmd{target->id});
  REQUIRE(before.entity_info.has_value());
  REQUIRE(before.entity_info->tier != wire::SimTier::Coarse);

  const c::CommandReply despawn = apply_with_step(op, c::DespawnEntityCmd{target->id});
  INFO(despawn.message);
  REQUIRE(despawn.accepted());
  read_until(*last_step + 1);
  const c::EntityView* fading = mirror.find(target->id);
  REQUIRE(fading != nullptr);
  CHECK(fading->retiring);
  // Standing still while it fades: no prediction moves it.
  CHECK(fading->anchor.speed_mmps == 0);
  const auto still = mirror.pose(*fading, *last_step);
  REQUIRE(still.has_value());
  CHECK(mirror.pose(*fading, *last_step + 50)->s_mm == still->s_mm);
  const c::CommandReply during = query(op, c::QueryEntityCmd{target->id});
  REQUIRE(during.entity_info.has_value());
  CHECK(during.entity_info->lifecycle == wire::LifecycleState::Retiring);

  int steps = 0;
  while (mirror.find(target->id) != nullptr) {
    REQUIRE(++steps <= 30);
    step(op, 1);
    read_until(*last_step + 1);
  }
  CHECK(mirror.counters().retiring >= 1);
}
