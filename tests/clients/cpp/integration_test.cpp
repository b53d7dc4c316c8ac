// Integration: the real bustle-server process over a real loopback socket.
// Each case starts its own server (--port 0), reads the port from its stdout
// line, and stops it with SIGTERM (bounded wait) at the end.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <map>

#include "bustle/client/client.hpp"
#include "bustle/client/entity_mirror.hpp"
#include "support/process.hpp"
#include "support/server_fixture.hpp"
#include "support/stream_checks.hpp"

#ifndef BUSTLE_SERVER_PATH
#error "BUSTLE_SERVER_PATH must name the bustle-server executable"
#endif

namespace c = bustle::client;
namespace t = bustle::test;
namespace wire = bustle::wire;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<t::ServerUnderTest> start_server(const std::vector<std::string>& args) {
  return t::start_or_fail(BUSTLE_SERVER_PATH, args);
}

// SIGTERM must end the server with exit code 0 within a bound.
void stop_server(t::ServerUnderTest& server) {
  const t::ExitInfo e = server.process.terminate(5000ms);
  INFO("server " << e.describe() << "; stderr tail:\n" << t::file_tail(server.stderr_path));
  CHECK(e.exited);
  CHECK(e.exit_code == 0);
  CHECK_FALSE(e.timed_out);
}

c::ClientOptions client_options(const t::ServerUnderTest& server,
                                wire::Role role = wire::Role::Viewer) {
  c::ClientOptions o;
  o.host = server.host;
  o.port = server.port;
  o.role = role;
  o.client_name = "integration-test";
  return o;
}

// Raw connection for protocol-error cases: sends `frames`, expects an Error
// frame with `code` (after a Welcome if the frames start with a valid Hello),
// then EOF.
void expect_error_then_close(const t::ServerUnderTest& server,
                             const std::vector<std::vector<std::uint8_t>>& frames,
                             wire::ErrorCode code) {
  c::Connection conn;
  REQUIRE(conn.connect(server.host, server.port, 2000ms).ok());
  for (const auto& f : frames) REQUIRE(conn.send(f, 2000ms).ok());
  auto r = conn.read_frame(5000ms);
  // A Hello that was accepted is answered with Welcome before the bad frame.
  if (r.status == c::ReceiveStatus::Frame && r.frame->message_as_Welcome() != nullptr) {
    r = conn.read_frame(5000ms);
  }
  INFO(c::to_string(r.status) << ": " << r.message);
  REQUIRE(r.status == c::ReceiveStatus::Frame);
  const auto* err = r.frame->message_as_Error();
  INFO("got " << wire::EnumNameServerMessage(r.frame->message_type()));
  REQUIRE(err != nullptr);
  CHECK(err->code() == code);
  const auto end = conn.read_frame(5000ms);
  CHECK(end.status == c::ReceiveStatus::Eof);
}

}  // namespace

TEST_CASE("Viewer handshakes, subscribes, mirrors moving entities and queries stats",
          "[integration]") {
  auto server = start_server({"--clock", "fast"});
  {
    c::Client client(client_options(*server));
    const auto welcome = client.connect();
    INFO(welcome.message);
    REQUIRE(welcome.ok());
    CHECK(welcome.value.protocol_version == bustle::proto::kProtocolVersion);
    CHECK(welcome.value.role == wire::Role::Viewer);
    CHECK(welcome.value.clock_mode == wire::ClockMode::Fast);
    CHECK(welcome.value.step_us > 0);
    REQUIRE_FALSE(welcome.value.lanes.empty());
    CHECK_FALSE(welcome.value.archetypes.empty());
    for (const c::LaneGeometry& lane : welcome.value.lanes) {
      CHECK(lane.points.size() >= 2);
      CHECK(lane.length_mm == bustle::proto::to_mm(lane.length_m));
    }
    const auto sub = client.subscribe();  // no observers: the whole city, default budgets
    INFO(sub.message);
    REQUIRE(sub.ok());
    CHECK(sub.value.accepted());

    c::EntityMirror mirror;
    mirror.set_strict(true);
    mirror.set_world(welcome.value);
    // id -> (step first seen, pose then): an entity moves when its
    // reconstructed pose at a later step differs.
    std::map<std::uint64_t, std::pair<std::uint64_t, c::EntityPose>> first_seen;
    auto key = [](const c::EntityView& v) {
      return (std::uint64_t{v.id.generation} << 32) | v.id.index;
    };
    bool moved = false;
    std::uint64_t deltas = 0;
    std::uint64_t prev_step = 0;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while ((deltas < 10 || !moved) && std::chrono::steady_clock::now() < deadline) {
      const auto d = client.next_delta(3000ms);
      INFO(c::to_string(d.status) << ": " << d.message);
      REQUIRE(d.ok());
      const c::Delta& delta = d.value;
      if (deltas == 0) {
        CHECK(delta.baseline);  // the first Delta after Subscribe
      } else {
        CHECK_FALSE(delta.baseline);
        REQUIRE(delta.step > prev_step);  // strictly increasing
      }
      prev_step = delta.step;
      ++deltas;
      const auto summary = mirror.apply(delta);
      INFO(summary.error);
      CHECK(summary.ok());
      for (const c::EnteredEntity& e : delta.entered) {
        CHECK(e.archetype < welcome.value.archetypes.size());
        CHECK(e.representation != c::RepresentationHint::None);  // a None entity is not sent
      }
      mirror.for_each([&](const c::EntityView& v) {
        const auto pose = mirror.pose(v, delta.step);
        REQUIRE(pose.has_value());
        const auto [it, inserted] = first_seen.emplace(key(v), std::make_pair(delta.step, *pose));
        if (!inserted && it->second.first < delta.step &&
            (it->second.second.x_m != pose->x_m || it->second.second.y_m != pose->y_m)) {
          moved = true;
        }
      });
    }
    INFO("deltas " << deltas << ", entities " << mirror.size() << ", last step "
                   << mirror.last_step());
    CHECK(deltas >= 10);
    CHECK(mirror.size() > 0);
    CHECK(moved);
    t::check_hints(mirror, mirror.last_step());

    const auto stats = client.command(c::QueryStatsCmd{}, 5000ms);
    INFO(stats.message);
    REQUIRE(stats.ok());
    CHECK(stats.value.request_id == client.last_request_id());
    CHECK(stats.value.accepted());
    REQUIRE(stats.value.stats.has_value());
    const c::StatsInfo& s = *stats.value.stats;
    CHECK(s.step >= prev_step);
    CHECK(s.clock_mode == wire::ClockMode::Fast);
    CHECK(s.step_us == welcome.value.step_us);
    CHECK_FALSE(s.paused);
    CHECK(s.clients >= 1);
    CHECK(s.pedestrians > 0);
    CHECK(s.pedestrians <= s.entity_capacity);
    CHECK(s.spawned_total >= s.pedestrians);
    CHECK(client.stray_results() == 0);

    // Deltas that arrived while waiting are still delivered, in order.
    const auto after = client.next_delta(3000ms);
    REQUIRE(after.ok());
    CHECK(after.value.step > prev_step);
  }
  stop_server(*server);
}

TEST_CASE("Budgets bound what a whole-city subscriber receives and the rest is truncated",
          "[integration][v2]") {
  auto server = start_server({"--clock", "manual"});
  {
    c::Client op(client_options(*server, wire::Role::Operator));
    const auto welcome = op.connect();
    REQUIRE(welcome.ok());
    // Let the population appear first.
    const auto stepped = op.command(c::StepCmd{100}, 5000ms);
    REQUIRE(stepped.ok());
    REQUIRE(stepped.value.accepted());
    const auto stats = op.command(c::QueryStatsCmd{}, 5000ms);
    REQUIRE(stats.ok());
    REQUIRE(stats.value.stats.has_value());
    const std::uint32_t population = stats.value.stats->pedestrians + stats.value.stats->vehicles;
    INFO("population " << population);
    REQUIRE(population > 5);

    c::SubscribeParams params;
    params.budgets = c::RepresentationBudgets{2, 3, 0};
    const auto sub = op.subscribe(params, 5000ms);
    INFO(sub.message);
    REQUIRE(sub.ok());
    c::EntityMirror mirror;
    mirror.set_strict(true);
    mirror.set_world(welcome.value);
    const c::Delta base = t::next_applied(op, mirror);
    REQUIRE(base.baseline);
    CHECK(mirror.size() <= 5);
    CHECK(mirror.size() > 0);
    // Everything else in the (whole-city) interest is left out and counted.
    CHECK(base.interest_truncated + mirror.size() == population);
    t::check_hints(mirror, mirror.last_step(), *params.budgets);
    // Over a few steps the budgets keep holding.
    REQUIRE(op.command(c::StepCmd{20}, 5000ms).ok());
    while (mirror.last_step() < base.step + 20) {
      const c::Delta d = t::next_applied(op, mirror);
      t::check_hints(mirror, d.step, *params.budgets);
    }
  }
  stop_server(*server);
}

TEST_CASE("An observer limits the stream to its area and a bad radius is rejected",
          "[integration][v2]") {
  auto server = start_server({"--clock", "manual"});
  {
    c::Client op(client_options(*server, wire::Role::Operator));
    const auto welcome = op.connect();
    REQUIRE(welcome.ok());
    REQUIRE(op.command(c::StepCmd{100}, 5000ms).ok());

    c::SubscribeParams bad;
    bad.observers = {c::InterestObserver{0.0, 0.0, 0.0, std::nullopt, 0.0}};
    const auto rejected = op.subscribe(bad, 5000ms);
    CHECK(rejected.status == c::ClientStatus::Rejected);
    CHECK(rejected.value.reason == wire::RejectReason::InvalidArgument);
    CHECK(rejected.value.message.find("observers[0].radius_m") != std::string::npos);
    CHECK(op.connected());

    // Whole city first, to find where entities are.
    REQUIRE(op.subscribe().ok());
    c::EntityMirror city;
    city.set_world(welcome.value);
    const auto base = op.next_delta(5000ms);
    REQUIRE(base.ok());
    REQUIRE(city.apply(base.value).ok());
    REQUIRE(city.size() > 1);
    c::EntityPose centre;
    city.for_each([&](const c::EntityView& v) {
      if (v.slot.value == 0) centre = *city.pose(v, base.value.step);
    });

    // Then only 30 m around one of them (a new Subscribe replaces the stream).
    constexpr double kRadius = 30.0;
    c::SubscribeParams near;
    near.observers = {c::InterestObserver{centre.x_m, centre.y_m, 0.0, std::nullopt, kRadius}};
    near.motion_tolerance_mm = 0;
    const auto sub = op.subscribe(near, 5000ms);
    INFO(sub.message);
    REQUIRE(sub.ok());
    c::EntityMirror local;
    local.set_strict(true);
    local.set_world(welcome.value);
    bool based = false;
    std::uint64_t target = 0;
    REQUIRE(op.command(c::StepCmd{30}, 5000ms).ok());
    while (!based || local.last_step() < target) {
      const auto d = op.next_delta(5000ms);
      INFO(d.message);
      REQUIRE(d.ok());
      if (!based && !d.value.baseline) continue;  // the old stream's last Deltas
      if (!based) target = d.value.step + 30;
      based = true;
      const auto summary = local.apply(d.value);
      INFO(summary.error);
      REQUIRE(summary.ok());
      // Entered within the radius; kept until 1.1 x radius (hysteresis).
      local.for_each([&](const c::EntityView& v) {
        const auto p = local.pose(v, d.value.step);
        REQUIRE(p.has_value());
        const double dist = std::hypot(p->x_m - centre.x_m, p->y_m - centre.y_m);
        INFO("entity " << v.id.index << " at " << dist << " m");
        CHECK(dist <= 1.1 * kRadius + 0.01);
      });
    }
    CHECK(local.size() > 0);
    CHECK(local.size() < city.size());

    // UpdateInterest moves the area without a new baseline: everything here leaves.
    c::UpdateInterestParams away;
    away.observers = {c::InterestObserver{-90000.0, -90000.0, 0.0, std::nullopt, 1.0}};
    const auto moved = op.update_interest(away, 5000ms);
    INFO(moved.message);
    REQUIRE(moved.ok());
    const std::uint64_t from = local.last_step();
    REQUIRE(op.command(c::StepCmd{3}, 5000ms).ok());
    while (local.last_step() < from + 3) CHECK_FALSE(t::next_applied(op, local).baseline);
    CHECK(local.size() == 0);
    CHECK(local.counters().left > 0);

    // Without a subscription UpdateInterest is rejected.
    c::Client other(client_options(*server));
    REQUIRE(other.connect().ok());
    const auto lonely = other.update_interest(away, 5000ms);
    CHECK(lonely.status == c::ClientStatus::Rejected);
    CHECK(other.connected());
  }
  stop_server(*server);
}

TEST_CASE("Roles: a viewer may only query, an operator may pause and resume", "[integration]") {
  auto server = start_server({"--clock", "fast"});
  {
    c::Client viewer(client_options(*server));
    REQUIRE(viewer.connect().ok());
    const auto pause = viewer.command(c::PauseCmd{}, 5000ms);
    INFO(pause.message);
    REQUIRE(pause.ok());
    CHECK_FALSE(pause.value.accepted());
    CHECK(pause.value.reason == wire::RejectReason::NotAuthorized);

    c::Client op(client_options(*server, wire::Role::Operator));
    const auto welcome = op.connect();
    REQUIRE(welcome.ok());
    CHECK(welcome.value.role == wire::Role::Operator);  // no server token configured

    const auto paused = op.command(c::PauseCmd{}, 5000ms);
    INFO(paused.message);
    REQUIRE(paused.ok());
    CHECK(paused.value.accepted());
    const auto stats1 = op.command(c::QueryStatsCmd{}, 5000ms);
    REQUIRE(stats1.ok());
    REQUIRE(stats1.value.stats.has_value());
    CHECK(stats1.value.stats->paused);
    // Step is only valid in manual clock mode.
    const auto step = op.command(c::StepCmd{1}, 5000ms);
    REQUIRE(step.ok());
    CHECK_FALSE(step.value.accepted());
    CHECK(step.value.reason == wire::RejectReason::WrongClockMode);

    const auto resumed = op.command(c::ResumeCmd{}, 5000ms);
    REQUIRE(resumed.ok());
    CHECK(resumed.value.accepted());
    const auto stats2 = op.command(c::QueryStatsCmd{}, 5000ms);
    REQUIRE(stats2.ok());
    REQUIRE(stats2.value.stats.has_value());
    CHECK_FALSE(stats2.value.stats->paused);
  }
  stop_server(*server);
}

TEST_CASE("Manual clock advances only on Step", "[integration]") {
  auto server = start_server({"--clock", "manual"});
  {
    c::Client op(client_options(*server, wire::Role::Operator));
    const auto welcome = op.connect();
    REQUIRE(welcome.ok());
    CHECK(welcome.value.clock_mode == wire::ClockMode::Manual);
    REQUIRE(op.subscribe().ok());
    const auto base = op.next_delta(5000ms);
    INFO(base.message);
    REQUIRE(base.ok());
    CHECK(base.value.baseline);
    const std::uint64_t start_step = base.value.step;
    // Nothing moves on its own.
    CHECK(op.next_delta(300ms).status == c::ClientStatus::Timeout);

    const auto step = op.command(c::StepCmd{5}, 5000ms);
    INFO(step.message);
    REQUIRE(step.ok());
    CHECK(step.value.accepted());
    std::uint64_t last = start_step;
    while (last < start_step + 5) {
      const auto d = op.next_delta(5000ms);
      INFO(d.message);
      REQUIRE(d.ok());
      REQUIRE(d.value.step > last);
      last = d.value.step;
    }
    CHECK(last == start_step + 5);
    CHECK(op.next_delta(300ms).status == c::ClientStatus::Timeout);
    const auto stats = op.command(c::QueryStatsCmd{}, 5000ms);
    REQUIRE(stats.ok());
    REQUIRE(stats.value.stats.has_value());
    CHECK(stats.value.stats->step == start_step + 5);
  }
  stop_server(*server);
}

TEST_CASE("DespawnEntity removes a mirrored entity, then the id is unknown", "[integration]") {
  auto server = start_server({"--clock", "manual"});
  {
    c::Client op(client_options(*server, wire::Role::Operator));
    REQUIRE(op.connect().ok());
    REQUIRE(op.subscribe().ok());
    c::EntityMirror mirror;
    mirror.set_strict(true);
    mirror.set_world(op.welcome());
    REQUIRE(t::next_applied(op, mirror).baseline);

    // Advances the manual clock by `n` and applies Deltas up to the new step.
    auto step_and_sync = [&](std::uint32_t n) {
      const std::uint64_t target = mirror.last_step() + n;
      const auto step = op.command(c::StepCmd{n}, 5000ms);
      INFO(step.message);
      REQUIRE(step.ok());
      REQUIRE(step.value.accepted());
      while (mirror.last_step() < target) t::next_applied(op, mirror);
      CHECK(mirror.last_step() == target);
    };

    // Pedestrians spawn over the first steps.
    for (int i = 0; i < 20 && mirror.size() == 0; ++i) step_and_sync(10);
    REQUIRE(mirror.size() > 0);
    c::EntityId victim;
    bool picked = false;
    mirror.for_each([&](const c::EntityView& v) {
      if (!picked) victim = v.id;
      picked = true;
    });
    REQUIRE(mirror.find(victim) != nullptr);

    // World commands apply (and are answered) at the start of the next step,
    // which under a manual clock only comes with a Step.
    const auto despawn = op.send_command(c::DespawnEntityCmd{victim});
    REQUIRE(despawn.ok());
    const std::uint64_t before = mirror.last_step();
    step_and_sync(1);
    const auto result = op.wait_result(despawn.value, 5000ms);
    INFO(result.message);
    REQUIRE(result.ok());
    CHECK(result.value.accepted());
    CHECK(result.value.applied_step == before + 1);
    // Allow a few more steps in case leaving takes a retiring phase.
    for (int i = 0; i < 10 && mirror.find(victim) != nullptr; ++i) step_and_sync(1);
    CHECK(mirror.find(victim) == nullptr);
    CHECK(mirror.counters().left >= 1);

    // The same id again is now unknown (its generation is retired).
    const auto again = op.send_command(c::DespawnEntityCmd{victim});
    REQUIRE(again.ok());
    step_and_sync(1);
    const auto rejected = op.wait_result(again.value, 5000ms);
    REQUIRE(rejected.ok());
    CHECK_FALSE(rejected.value.accepted());
    CHECK(rejected.value.reason == wire::RejectReason::UnknownEntity);
  }
  stop_server(*server);
}

TEST_CASE("Protocol errors get an Error frame, then the connection closes", "[integration]") {
  auto server = start_server({"--clock", "fast"});
  SECTION("wrong protocol version") {
    c::HelloParams hello;
    hello.protocol_version = static_cast<std::uint16_t>(bustle::proto::kProtocolVersion + 1);
    expect_error_then_close(*server, {c::build_hello(hello)},
                            wire::ErrorCode::ProtocolVersionMismatch);
  }
  SECTION("a command before Hello") {
    expect_error_then_close(*server, {c::build_command(1, c::QueryStatsCmd{})},
                            wire::ErrorCode::HandshakeRequired);
  }
  SECTION("garbage after Hello") {
    std::vector<std::uint8_t> garbage = {16, 0, 0, 0};
    for (int i = 0; i < 16; ++i) garbage.push_back(0xee);
    expect_error_then_close(*server, {c::build_hello({}), garbage},
                            wire::ErrorCode::MalformedFrame);
  }
  SECTION("a length prefix over the client frame cap") {
    const std::uint32_t n = bustle::proto::kClientFrameMaxBytes + 1;
    const std::vector<std::uint8_t> prefix = {
        static_cast<std::uint8_t>(n), static_cast<std::uint8_t>(n >> 8),
        static_cast<std::uint8_t>(n >> 16), static_cast<std::uint8_t>(n >> 24)};
    expect_error_then_close(*server, {c::build_hello({}), prefix}, wire::ErrorCode::FrameTooLarge);
  }
  // The server survives all of that and still serves a new client.
  c::Client client(client_options(*server));
  REQUIRE(client.connect().ok());
  client.close();
  stop_server(*server);
}
