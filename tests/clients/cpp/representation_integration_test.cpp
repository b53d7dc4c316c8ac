// Integration: the SDK representation layer against the real bustle-server
// (manual clock, one operator client that subscribes and steps). Headless
// backends stand in for an engine: the actor pool (headless factory) for
// Actor, headless backends for Instanced and Marker.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

// client.hpp first: with -Wshadow, ReadStatus::Frame declared after the
// Frame alias of messages.hpp is reported as shadowing it.
#include "bustle/client/actor_pool.hpp"
#include "bustle/client/client.hpp"
#include "bustle/client/headless_backend.hpp"
#include "bustle/client/representation.hpp"
#include "support/process.hpp"
#include "support/server_fixture.hpp"

#ifndef BUSTLE_SERVER_PATH
#error "BUSTLE_SERVER_PATH must name the bustle-server executable"
#endif

namespace c = bustle::client;
namespace t = bustle::test;
namespace wire = bustle::wire;
using H = c::RepresentationHint;
using namespace std::chrono_literals;

namespace {

const std::string kCorridor = std::string(BUSTLE_REPO_DIR) + "/configs/corridor.city.json";
const std::string kLargeBlock = std::string(BUSTLE_REPO_DIR) + "/configs/largeblock.city.json";

struct Session {
  std::unique_ptr<t::ServerUnderTest> server;
  std::unique_ptr<c::Client> client;
  c::WelcomeInfo welcome;
};

Session connect(const std::string& config, std::uint16_t motion_tolerance_mm,
                std::vector<c::InterestObserver> observers = {}) {
  Session s;
  s.server = t::start_or_fail(BUSTLE_SERVER_PATH, {"--clock", "manual", "--config", config,
                                                   "--client-commands-per-second", "100000"});
  c::ClientOptions o;
  o.host = s.server->host;
  o.port = s.server->port;
  o.role = wire::Role::Operator;
  o.client_name = "representation-integration-test";
  s.client = std::make_unique<c::Client>(o);
  const auto welcome = s.client->connect();
  INFO(welcome.message);
  REQUIRE(welcome.ok());
  s.welcome = welcome.value;
  c::SubscribeParams params;
  params.motion_tolerance_mm = motion_tolerance_mm;
  params.observers = std::move(observers);
  const auto sub = s.client->subscribe(params, 5000ms);
  INFO(sub.message);
  REQUIRE(sub.ok());
  return s;
}

// Steps once and applies every Delta up to that step to the layer.
c::Delta step_and_apply(c::Client& client, c::RepresentationLayer& layer,
                        std::uint64_t& last_step) {
  const auto r = client.command(c::StepCmd{1}, 5000ms);
  INFO(r.message);
  REQUIRE(r.ok());
  REQUIRE(r.value.accepted());
  const std::uint64_t want =
      r.value.applied_step > last_step ? r.value.applied_step : last_step + 1;
  for (;;) {
    auto d = client.next_delta(5000ms);
    INFO(d.message);
    REQUIRE(d.ok());
    const auto summary = layer.apply(d.value, static_cast<std::int64_t>(d.value.sim_time_us));
    INFO(summary.error);
    REQUIRE(summary.ok());
    last_step = d.value.step;
    if (d.value.step >= want) return std::move(d.value);
  }
}

void report(c::Client& client, c::RepresentationLayer& layer) {
  while (layer.queued_leases() > 0) {
    const std::vector<c::Lease> batch = layer.take_leases();
    if (batch.empty()) continue;
    const auto r = client.report_leases(batch, 5000ms);
    INFO(r.message);
    REQUIRE(r.ok());
  }
}

c::LeaseSummaryReport query_leases(c::Client& client) {
  const auto r = client.command(c::QueryLeasesCmd{}, 5000ms);
  INFO(r.message);
  REQUIRE(r.ok());
  REQUIRE(r.value.accepted());
  REQUIRE(r.value.leases.has_value());
  return *r.value.leases;
}

std::set<std::uint64_t> keys(const std::vector<c::EntityId>& ids) {
  std::set<std::uint64_t> out;
  for (const c::EntityId& id : ids) out.insert((std::uint64_t{id.generation} << 32) | id.index);
  return out;
}

}  // namespace

TEST_CASE(
    "Headless backends draw exactly the server's hinted set, and lease reports reach the server",
    "[integration][representation]") {
  // 1000 steps each of the large block and the corridor (100 ms steps: 100 s
  // of city); manual clock, one Step command per step.
  const auto [config, steps] =
      GENERATE(std::make_pair(kLargeBlock, 1000), std::make_pair(kCorridor, 1000));
  INFO(config);
  Session s = connect(config, 10);
  c::HeadlessActorFactory factory;
  c::ActorPoolBackend actors(factory);
  c::HeadlessBackend instances({.name = "instances", .record_events = false});
  c::HeadlessBackend markers({.name = "markers", .record_events = false});
  // Backends first: they must outlive their installation in the layer.
  c::RepresentationLayer layer;
  layer.set_world(s.welcome);
  REQUIRE(layer.set_backend(H::Actor, &actors) == c::InstallStatus::Installed);
  REQUIRE(layer.set_backend(H::Instanced, &instances) == c::InstallStatus::Installed);
  REQUIRE(layer.set_backend(H::Marker, &markers) == c::InstallStatus::Installed);

  std::uint64_t last_step = 0;
  step_and_apply(*s.client, layer, last_step);
  // Before any report the server counts every hinted entity as waiting.
  const c::LeaseSummaryReport before = query_leases(*s.client);
  CHECK(before.reports == 0);
  CHECK(before.waiting > 0);

  std::uint64_t reported_steps = 0;
  for (int k = 1; k < steps; ++k) {
    const c::Delta d = step_and_apply(*s.client, layer, last_step);
    layer.render_at(static_cast<std::int64_t>(d.sim_time_us) -
                    layer.config().interpolation.interpolation_delay_us);
    if (layer.queued_leases() > 0) ++reported_steps;
    report(*s.client, layer);
  }
  INFO("entities " << layer.mirror().size() << ", steps with lease changes " << reported_steps);
  REQUIRE(layer.mirror().size() > 0);

  std::vector<c::EntityId> hinted_actor, hinted_instanced, hinted_marker;
  layer.mirror().for_each([&](const c::EntityView& v) {
    if (v.representation == H::Actor) hinted_actor.push_back(v.id);
    if (v.representation == H::Instanced) hinted_instanced.push_back(v.id);
    if (v.representation == H::Marker) hinted_marker.push_back(v.id);
  });
  std::vector<c::EntityId> drawn_actor;
  for (const auto& a : factory.actors()) {
    if (a.shown) drawn_actor.push_back(a.id);
  }
  CHECK(keys(drawn_actor) == keys(hinted_actor));
  CHECK(keys(instances.active_ids()) == keys(hinted_instanced));
  CHECK(keys(markers.active_ids()) == keys(hinted_marker));
  INFO("moves between backends " << layer.counters().moves << ", activation retries "
                                 << layer.counters().activation_retries);

  // The server's lease counters: every hinted entity applied as hinted.
  const c::LeaseSummaryReport after = query_leases(*s.client);
  CHECK(after.reports > before.reports);
  CHECK(after.waiting == 0);
  CHECK(after.unknown_entries == 0);
  REQUIRE(after.requested.size() == 3);
  REQUIRE(after.applied.size() == 3);
  CHECK(after.requested[0] == hinted_actor.size());
  CHECK(after.requested[1] == hinted_instanced.size());
  CHECK(after.requested[2] == hinted_marker.size());
  CHECK(after.applied == after.requested);
  s.client->close();
}

TEST_CASE("Rendered poses stay within 1 cm of the server's pose at the interpolated time",
          "[integration][representation]") {
  // Exact poses per step (tolerance 0) so that the server's own pose is
  // known at every sample; between samples the server's motion is lane
  // arithmetic at constant speed.
  // An observer over the market block (radius covering the whole block) so
  // that nearby people are Full and the rest strided.
  Session s = connect(kLargeBlock, 0, {c::InterestObserver{30.0, 20.0, 2.0, std::nullopt, 400.0}});
  c::HeadlessBackend actors({.name = "actors", .record_events = false});
  c::HeadlessBackend instances({.name = "instances", .record_events = false});
  c::HeadlessBackend markers({.name = "markers", .record_events = false});
  // Backends first: they must outlive their installation in the layer.
  c::RepresentationLayer layer;
  layer.set_world(s.welcome);
  layer.set_backend(H::Actor, &actors);
  layer.set_backend(H::Instanced, &instances);
  layer.set_backend(H::Marker, &markers);
  const std::vector<bustle::proto::LanePolyline> lanes = c::lane_polylines(s.welcome);
  const auto step_us = static_cast<std::int64_t>(s.welcome.step_us);
  const auto pose_of = [&](std::uint32_t slot) -> const c::RenderPose* {
    for (const c::HeadlessBackend* b : {&actors, &instances, &markers}) {
      if (const c::RenderPose* p = b->frame_pose(c::SlotId{slot})) return p;
    }
    return nullptr;
  };

  std::uint64_t last_step = 0;
  step_and_apply(*s.client, layer, last_step);
  // Server truth (QueryEntity) of a few entities at the previous step.
  // (id, ((x, y), Full tier)) of a few entities.
  std::vector<std::pair<c::EntityId, std::pair<std::pair<double, double>, bool>>> truth_prev;
  std::map<std::uint64_t, c::EntityPose> pose_prev;  // id -> mirror pose at the previous step
  const auto key = [](const c::EntityId& id) {
    return (std::uint64_t{id.generation} << 32) | id.index;
  };
  double worst_sample_m = 0.0, worst_between_m = 0.0, worst_strided_excess_m = 0.0,
         worst_jump_excess_m = 0.0;
  std::uint64_t checked_samples = 0, checked_between = 0, checked_strided = 0, checked_jumps = 0;
  struct Drawn {
    std::uint32_t lane = 0;
    c::RenderPose pose;
    std::uint32_t speed_mmps = 0;       // the anchor's speed at this frame's step
    std::uint32_t speed_mmps_prev = 0;  // ... and at the step before
  };
  std::map<std::uint64_t, Drawn> drawn_prev;  // id -> what was drawn last frame
  for (int k = 0; k < 150; ++k) {
    const c::Delta d = step_and_apply(*s.client, layer, last_step);
    const auto now = static_cast<std::int64_t>(d.sim_time_us);
    // 1. One interpolation delay behind (exactly the previous sample): the
    //    rendered pose is where the server said the entity was then.
    layer.render_at(now - step_us);
    for (const auto& [id, truth] : truth_prev) {
      const auto& [xy, full] = truth;
      const c::EntityView* v = layer.mirror().find(id);
      const c::RenderPose* p = v != nullptr ? pose_of(v->slot.value) : nullptr;
      if (p == nullptr) continue;
      const double err = std::hypot(p->x_m - xy.first, p->y_m - xy.second);
      if (full) {
        worst_sample_m = std::max(worst_sample_m, err);
        ++checked_samples;
      } else {
        // A strided tier (Simulated every 2nd step, Coarse every 8th) is
        // advanced by the server in jumps that the stream smooths: within
        // the travel of the steps it skipped.
        const double skipped_m =
            static_cast<double>(v->anchor.speed_mmps) / 1e6 * static_cast<double>(step_us) * 7.0;
        worst_strided_excess_m = std::max(worst_strided_excess_m, err - skipped_m);
        ++checked_strided;
      }
    }
    // 2. Half a step later: between two samples. For entities in steady
    //    motion (same lane, speed and heading at both), the server's pose at
    //    that time is the lane point at the mean distance.
    layer.render_at(now - step_us / 2);
    std::map<std::uint64_t, c::EntityPose> pose_now;
    std::map<std::uint64_t, Drawn> drawn_now;
    layer.mirror().for_each([&](const c::EntityView& v) {
      const auto at_now = layer.mirror().pose(v, d.step);
      if (!at_now) return;
      pose_now[key(v.id)] = *at_now;
      // No jumps: consecutive frames (one step apart) move at most one
      // step's travel on the same lane, whatever the tier, at the fastest
      // speed of the samples the frames interpolate between (this step's and
      // the two before: rendering is one interpolation delay behind). One
      // that stops, at its work-point anchor say, is still drawn walking
      // into its stop after its anchor says 0.
      if (const c::RenderPose* drawn = pose_of(v.slot.value)) {
        const auto last = drawn_prev.find(key(v.id));
        if (last != drawn_prev.end() && last->second.lane == at_now->lane) {
          const double moved =
              std::hypot(drawn->x_m - last->second.pose.x_m, drawn->y_m - last->second.pose.y_m);
          const std::uint32_t speed_mmps = std::max(
              {v.anchor.speed_mmps, last->second.speed_mmps, last->second.speed_mmps_prev});
          const double allowed =
              static_cast<double>(speed_mmps) / 1e6 * static_cast<double>(step_us);
          worst_jump_excess_m = std::max(worst_jump_excess_m, moved - allowed);
          ++checked_jumps;
        }
        drawn_now[key(v.id)] = {at_now->lane, *drawn, v.anchor.speed_mmps,
                                last != drawn_prev.end() ? last->second.speed_mmps : 0u};
      }
      const auto prev = pose_prev.find(key(v.id));
      const c::RenderPose* p = pose_of(v.slot.value);
      if (prev == pose_prev.end() || p == nullptr || v.anchor.speed_mmps == 0) return;
      if (prev->second.lane != at_now->lane ||
          std::abs(prev->second.heading_rad - at_now->heading_rad) > 1e-9)
        return;
      if (at_now->s_mm <= prev->second.s_mm) return;
      const double s_mid_m =
          (static_cast<double>(prev->second.s_mm) + static_cast<double>(at_now->s_mm)) / 2000.0;
      const bustle::proto::LanePose truth =
          bustle::proto::sample_lane(lanes[at_now->lane], s_mid_m);
      worst_between_m =
          std::max(worst_between_m, std::hypot(p->x_m - truth.x_m, p->y_m - truth.y_m));
      ++checked_between;
    });
    pose_prev = std::move(pose_now);
    drawn_prev = std::move(drawn_now);
    // Truth for the next step's check: some entities' server poses now.
    truth_prev.clear();
    int queried = 0;
    layer.mirror().for_each([&](const c::EntityView& v) {
      // Every Full-tier entity (up to 8), and a rotating few of the others.
      const bool pick =
          v.sim_tier == c::SimTier::Full || (v.id.index % 7) == static_cast<std::uint32_t>(k % 7);
      if (queried >= 8 || !pick) return;
      ++queried;
      const auto r = s.client->command(c::QueryEntityCmd{v.id}, 5000ms);
      if (r.ok() && r.value.accepted() && r.value.entity_info && r.value.entity_info->lane >= 0) {
        const auto& info = *r.value.entity_info;
        truth_prev.push_back({v.id, {{info.x_m, info.y_m}, info.tier == wire::SimTier::Full}});
      }
    });
  }
  INFO("Full-tier samples checked "
       << checked_samples << " (worst " << worst_sample_m << " m), strided " << checked_strided
       << " (worst excess " << worst_strided_excess_m << " m), between samples " << checked_between
       << " (worst " << worst_between_m << " m), frame-to-frame " << checked_jumps
       << " (worst excess " << worst_jump_excess_m << " m)");
  CHECK(checked_samples > 50);
  CHECK(checked_between > 1000);
  CHECK(checked_jumps > 1000);
  CHECK(worst_sample_m <= 0.01);
  CHECK(worst_between_m <= 0.01);
  CHECK(worst_strided_excess_m <= 0.01);
  CHECK(worst_jump_excess_m <= 0.01);
  s.client->close();
}
