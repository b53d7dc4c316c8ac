// SimDriver, the sim thread, driven through its command queue with a real
// net::Server that never listens (no socket): in manual mode steps run only
// on Step commands and the result is the digest of the same world stepped
// directly; in fast mode Pause and Resume stop and restart the steps; in
// realtime mode steps follow the wall clock and a pause is not caught up. Progress
// is read from the thread-safe telemetry counter, never from the world while
// the driver runs.
#include "sim_driver.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "../core/invariant_probe.hpp"
#include "bustle/core/world.hpp"
#include "bustle/net/command_queue.hpp"
#include "bustle/net/server.hpp"
#include "bustle/ops/telemetry.hpp"
#include "bustle/scenario/scenario_loader.hpp"

using namespace bustle;
using namespace std::chrono_literals;

namespace {

core::Scenario default_city() {
  auto loaded = scenario::load_embedded_default();
  REQUIRE(loaded.ok());
  return std::move(*loaded.scenario);
}

net::InboundCommand control(net::ControlCommand::Kind kind, std::uint32_t steps = 0) {
  net::InboundCommand cmd;
  cmd.session_id = 1;
  cmd.request_id = 1;
  cmd.role = net::Role::Operator;
  net::ControlCommand ctl;
  ctl.kind = kind;
  ctl.step_count = steps;
  cmd.body = ctl;
  return cmd;
}

// Waits (bounded) until `done` holds; false on timeout.
template <class F>
bool eventually(F done, std::chrono::milliseconds limit = 10s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A driver over the default city on its own thread; stops and joins on exit.
struct RunningDriver {
  core::Scenario scenario = default_city();
  net::CommandQueue commands{64};
  std::unique_ptr<net::Server> server;
  std::unique_ptr<app::SimDriver> driver;
  ops::SimTelemetry telemetry{{}};
  std::atomic<bool> stop{false};
  std::thread thread;

  RunningDriver(net::ClockMode clock, std::uint64_t seed) {
    auto world = std::move(core::World::create(scenario, seed).world);
    REQUIRE(world);
    net::ServerOptions options;
    options.port = 0;
    server = std::make_unique<net::Server>(options, net::make_welcome_info(*world, "test", clock),
                                           commands);
    app::SimDriverOptions driver_options;
    driver_options.clock = clock;
    driver = std::make_unique<app::SimDriver>(std::move(world), *server, commands, driver_options);
    driver->attach_telemetry(&telemetry);
    thread = std::thread([this] { driver->run(stop); });
  }
  void finish() {
    if (!thread.joinable()) return;
    stop.store(true);
    commands.close();
    thread.join();
  }
  ~RunningDriver() { finish(); }
  // Sends Pause and waits until the step count holds still over `still`;
  // returns the count it stopped at.
  std::uint64_t pause(std::chrono::milliseconds still) {
    REQUIRE(commands.try_push(control(net::ControlCommand::Kind::Pause)));
    std::uint64_t paused_at = 0;
    REQUIRE(eventually([&] {
      const std::uint64_t before = telemetry.steps();
      std::this_thread::sleep_for(still);
      paused_at = telemetry.steps();
      return paused_at == before;
    }));
    return paused_at;
  }
};

}  // namespace

TEST_CASE(
    "manual clock: steps run only on Step commands and give the digest of the world stepped "
    "directly") {
  RunningDriver d(net::ClockMode::Manual, 42);
  std::this_thread::sleep_for(100ms);
  CHECK(d.telemetry.steps() == 0);  // nothing runs without a command
  REQUIRE(d.commands.try_push(control(net::ControlCommand::Kind::Step, 5)));
  REQUIRE(d.commands.try_push(control(net::ControlCommand::Kind::Step, 2)));
  REQUIRE(eventually([&] { return d.telemetry.steps() == 7; }));
  std::this_thread::sleep_for(300ms);
  CHECK(d.telemetry.steps() == 7);  // and no more
  d.finish();

  auto direct = std::move(core::World::create(d.scenario, 42).world);
  for (int k = 0; k < 7; ++k) direct->step();
  CHECK(d.driver->world().step_index() == 7);
  CHECK(d.driver->world().digest() == direct->digest());
  CHECK(d.driver->dropped_steps() == 0);
}

TEST_CASE("fast clock: Pause stops the steps and Resume restarts them") {
  RunningDriver d(net::ClockMode::Fast, 7);
  REQUIRE(eventually([&] { return d.telemetry.steps() >= 20; }));
  const std::uint64_t paused_at = d.pause(250ms);  // holds still over a quarter second
  std::this_thread::sleep_for(200ms);
  CHECK(d.telemetry.steps() == paused_at);
  REQUIRE(d.commands.try_push(control(net::ControlCommand::Kind::Resume)));
  REQUIRE(eventually([&] { return d.telemetry.steps() > paused_at + 10; }));
  d.finish();
  CHECK(d.driver->world().step_index() >= paused_at + 10);
}

TEST_CASE("realtime clock: steps follow the wall clock and a pause is not caught up") {
  RunningDriver d(net::ClockMode::Realtime, 3);
  const double step_s = static_cast<double>(d.scenario.step_us) / 1e6;
  REQUIRE(eventually([&] { return d.telemetry.steps() >= 2; }));
  // Paced: over ~1.5 s the count follows elapsed / step_us, never ahead of
  // it (a fast loop would run thousands) and not far behind (the default
  // city's step costs well under a millisecond, even on a loaded machine).
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t s0 = d.telemetry.steps();
  std::this_thread::sleep_for(1500ms);
  const std::uint64_t s1 = d.telemetry.steps();
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double expected = elapsed_s / step_s;
  CHECK(static_cast<double>(s1 - s0) <= expected + 2.0);
  CHECK(static_cast<double>(s1 - s0) >= expected * 0.5);

  // Paused for a second: resuming resynchronises the clock, so the ten steps
  // that "fell due" while paused are not run in a burst (catch-up would run
  // up to catchup_steps_max per wake).
  const std::uint64_t paused_at = d.pause(300ms);
  std::this_thread::sleep_for(1000ms);
  REQUIRE(d.telemetry.steps() == paused_at);
  const auto resumed = std::chrono::steady_clock::now();
  REQUIRE(d.commands.try_push(control(net::ControlCommand::Kind::Resume)));
  std::this_thread::sleep_for(250ms);
  const std::uint64_t after = d.telemetry.steps();
  // Measured, not assumed: on a loaded machine this thread may wake late,
  // and the steps due by then are the bound (plus the one at resume and one
  // of rounding). A catch-up burst would be about ten more.
  const double since_resume_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - resumed).count();
  CHECK(static_cast<double>(after - paused_at) <= since_resume_s / step_s + 2.0);
  REQUIRE(eventually([&] { return d.telemetry.steps() > after; }));  // and it goes on
  d.finish();
  CHECK(d.driver->dropped_steps() == 0);
}

TEST_CASE("a broken invariant is an Internal status naming the step and the place") {
  auto world = std::move(core::World::create(default_city(), 7).world);
  REQUIRE(world);
  for (int k = 0; k < 5; ++k) world->step();
  CHECK(app::check_world_invariants(*world).ok());
  REQUIRE(world->pedestrians().size() > 0);
  core::EntityRegistry& reg = core::InvariantProbe::registry(*world);
  const std::uint32_t live = world->pedestrians().id[0].index;
  core::InvariantProbe::free_ring(reg)[core::InvariantProbe::free_head(reg)] = live;
  const core::Status broken = app::check_world_invariants(*world);
  CHECK(broken.code() == core::StatusCode::Internal);
  CHECK(broken.message() ==
        "invariant broken after step 5: registry: invariant 3: free FIFO holds live index " +
            std::to_string(live));
}
