// StreamSession (session.hpp) driven through a fake of the SDK's own
// SessionGlue, which counts what an engine would make (backends, pooled
// actors, instance components) and records every message and event:
// reconnects keep backends, never leak components, never send UpdateInterest
// or leases before Subscribe on a connection (also when a Disconnected event
// was lost), and a new archetype table rebuilds the backends after
// releasing the old ones. Deltas and Welcomes are built like a server's.
#include "bustle/client/session.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <set>

#include "bustle/client/actor_pool.hpp"
#include "bustle/client/headless_backend.hpp"
#include "support/sdk_frames.hpp"

namespace c = bustle::client;
using H = c::RepresentationHint;
namespace t = bustle::test;
namespace wire = bustle::wire;

namespace {

constexpr std::uint32_t kStepUs = 100'000;

c::WelcomeInfo welcome(std::vector<std::string> archetypes) {
  return t::one_lane_world(kStepUs, std::move(archetypes));
}

c::Delta delta(std::uint64_t n, bool baseline, std::vector<wire::EntityEnter> entered = {}) {
  t::DeltaSpec d;
  d.step = n;
  d.sim_time_us = n * kStepUs;
  d.baseline = baseline;
  d.entered = std::move(entered);
  return t::decoded(d);
}

wire::EntityEnter walker(std::uint32_t index, H hint, std::uint16_t archetype) {
  return t::enter(index, 1, 0, 1000 * index, 1000, wire::EntityKind::Pedestrian, archetype,
                  wire::SimTier::Full, static_cast<wire::RepresentationHint>(hint));
}

// An instanced backend as an engine makes it: one instance component per
// archetype mesh, made on first use and kept for the backend's lifetime;
// the glue destroys them with the backend. `live` counts components alive.
class ComponentBackend final : public c::RenderBackend {
 public:
  explicit ComponentBackend(int& live, int& made) : live_(live), made_(made) {}
  std::string_view name() const override { return "components"; }
  c::ActivationResult activate(c::SlotId slot, c::EntityId, std::uint16_t archetype, H,
                               const c::EntityState&) override {
    if (components_.insert(archetype).second) {
      ++live_;
      ++made_;
    }
    active_.insert(slot.value);
    return c::ActivationResult::active();
  }
  void deactivate(c::SlotId slot, c::EntityId) override { active_.erase(slot.value); }
  void apply_interpolation(c::SlotId, std::int64_t, const c::RenderPose&) override {}
  bool is_instance_active(c::SlotId slot) const override { return active_.count(slot.value) != 0; }
  void destroy_components() {
    live_ -= static_cast<int>(components_.size());
    components_.clear();
  }
  std::size_t active() const { return active_.size(); }

 private:
  int& live_;
  int& made_;
  std::set<std::uint16_t> components_;
  std::set<std::uint32_t> active_;
};

struct FakeGlue final : c::SessionGlue {
  std::optional<c::InterestObserver> camera;
  std::vector<c::SessionMessage> sent;
  std::vector<c::SessionEvent> events;
  int live_components = 0;
  int components_made = 0;
  int backends_made = 0;
  int backends_destroyed = 0;
  std::uint32_t actors_at_destroy = 0;  // actors the factory still had undestroyed then
  c::HeadlessActorFactory factory;      // outlives every pool (one per engine world)
  std::unique_ptr<c::ActorPoolBackend> pool;
  std::unique_ptr<ComponentBackend> instances;

  std::optional<c::InterestObserver> observer() override { return camera; }
  void send(c::SessionMessage kind, c::Frame frame) override {
    REQUIRE(frame.size() > 4);
    sent.push_back(kind);
  }
  void make_backends(c::RepresentationLayer& layer, const c::WelcomeInfo&) override {
    REQUIRE(pool == nullptr);
    ++backends_made;
    pool =
        std::make_unique<c::ActorPoolBackend>(factory, c::ActorPoolConfig{.default_pool_size = 2});
    instances = std::make_unique<ComponentBackend>(live_components, components_made);
    layer.set_backend(H::Actor, pool.get());
    layer.set_backend(H::Instanced, instances.get());
  }
  void destroy_backends() override {
    ++backends_destroyed;
    // Already uninstalled and deinitialized: the pool destroyed its actors.
    actors_at_destroy =
        static_cast<std::uint32_t>(std::count_if(factory.actors().begin(), factory.actors().end(),
                                                 [](const auto& a) { return !a.destroyed; }));
    instances->destroy_components();
    pool.reset();
    instances.reset();
  }
  void on_event(const c::SessionEvent& event) override { events.push_back(event); }
  std::size_t count(c::SessionEventKind kind) const {
    return static_cast<std::size_t>(
        std::count_if(events.begin(), events.end(), [&](const auto& e) { return e.kind == kind; }));
  }
};

// One connection's life: welcome, ticks until subscribed, a stale Delta, the
// baseline, frames with a moving camera. Returns the messages it sent.
std::vector<c::SessionMessage> stream_once(c::StreamSession& session, FakeGlue& glue,
                                           const c::WelcomeInfo& w, std::int64_t& now_us) {
  const std::size_t first = glue.sent.size();
  session.on_welcome(w);
  session.tick(now_us += 16'000);
  CHECK(session.state() == c::SessionState::Subscribed);
  CHECK_FALSE(session.on_delta(delta(40, false), now_us).has_value());  // before its baseline
  REQUIRE(session
              .on_delta(delta(41, true,
                              {walker(1, H::Actor, 0), walker(2, H::Actor, 0),
                               walker(3, H::Instanced, 1)}),
                        now_us)
              .has_value());
  CHECK(session.state() == c::SessionState::Streaming);
  for (int frame = 0; frame < 40; ++frame) {
    glue.camera->x_m += 1.0;  // 1 m per frame: interest updates are due
    session.on_delta(delta(42 + static_cast<std::uint64_t>(frame), false), now_us);
    session.tick(now_us += 100'000);
  }
  return {glue.sent.begin() + static_cast<std::ptrdiff_t>(first), glue.sent.end()};
}

void check_subscribe_first(const std::vector<c::SessionMessage>& sent) {
  REQUIRE_FALSE(sent.empty());
  CHECK(sent.front() == c::SessionMessage::Subscribe);
  CHECK(std::count(sent.begin(), sent.end(), c::SessionMessage::Subscribe) == 1);
  CHECK(std::count(sent.begin(), sent.end(), c::SessionMessage::UpdateInterest) > 0);
  CHECK(std::count(sent.begin(), sent.end(), c::SessionMessage::LeaseReport) > 0);
}

}  // namespace

TEST_CASE("Reconnects to the same world keep backends, actors and components; Subscribe is first",
          "[session]") {
  FakeGlue glue;
  glue.camera = c::InterestObserver{};
  std::int64_t now_us = 1'000'000;
  const c::WelcomeInfo w = welcome({"pedestrian", "pedestrian.harbour"});
  std::uint32_t actors_after_first = 0;
  {
    c::StreamSession session({}, glue);
    for (int connection = 0; connection < 5; ++connection) {
      INFO("connection " << connection);
      session.on_connecting();
      // Nothing goes out before this connection's Welcome, however the camera moves.
      const std::size_t before = glue.sent.size();
      for (int frame = 0; frame < 5; ++frame) {
        glue.camera->x_m += 10.0;
        session.tick(now_us += 300'000);
      }
      CHECK(glue.sent.size() == before);
      check_subscribe_first(stream_once(session, glue, w, now_us));
      if (connection == 0)
        actors_after_first = static_cast<std::uint32_t>(glue.factory.actors().size());
      // Connection 2 is replaced by Connect() without a Disconnected event
      // (lost); the others end normally.
      if (connection != 2) session.on_disconnected("server closed the connection");
    }
    CHECK(glue.backends_made == 1);
    CHECK(session.counters().backend_builds == 1);
    CHECK(glue.live_components == 1);  // one per mesh in use, not one per Welcome
    CHECK(glue.components_made == 1);
    // No actor spawned again: the pool's actors were parked and reused.
    CHECK(glue.factory.actors().size() == actors_after_first);
    CHECK(session.counters().deltas_dropped == 5);
    CHECK(glue.count(c::SessionEventKind::Connected) == 5);
    CHECK(glue.count(c::SessionEventKind::Disconnected) == 4);
    // Each baseline released and re-represented the three entities.
    CHECK(glue.count(c::SessionEventKind::EntityRepresented) == 15);
    CHECK(glue.count(c::SessionEventKind::EntityReleased) == 12);
  }
  // The session's end releases everything: components, actors, backends.
  CHECK(glue.backends_destroyed == 1);
  CHECK(glue.live_components == 0);
  CHECK(glue.actors_at_destroy == 0);
}

TEST_CASE("A Welcome with another archetype table rebuilds the backends after releasing the old",
          "[session]") {
  FakeGlue glue;
  glue.camera = c::InterestObserver{};
  std::int64_t now_us = 0;
  c::StreamSession session({}, glue);
  check_subscribe_first(stream_once(session, glue, welcome({"pedestrian", "vehicle"}), now_us));
  CHECK(glue.live_components == 1);
  session.on_disconnected("restart");
  session.on_connecting();
  check_subscribe_first(stream_once(session, glue, welcome({"vehicle", "pedestrian"}), now_us));
  CHECK(glue.backends_made == 2);
  CHECK(glue.backends_destroyed == 1);
  CHECK(glue.actors_at_destroy == 0);  // the old pool's actors were destroyed first
  CHECK(glue.live_components == 1);    // the old components went with their backend
}

TEST_CASE("Subscribe waits for a camera and is sent again after a rejection", "[session]") {
  FakeGlue glue;
  c::StreamSession session({}, glue);
  session.tick(0);  // before any Welcome: nothing
  session.on_welcome(welcome({"pedestrian"}));
  session.tick(10'000);
  CHECK(glue.sent.empty());  // no camera: never subscribe to the whole city
  CHECK(session.state() == c::SessionState::Welcomed);
  glue.camera = c::InterestObserver{};
  session.tick(20'000);
  REQUIRE(glue.sent.size() == 1);
  c::CommandReply rejected;
  rejected.request_id = 1;
  rejected.status = wire::CommandStatus::Rejected;
  session.on_reply(rejected);
  CHECK(session.state() == c::SessionState::Welcomed);
  session.tick(30'000);
  CHECK(glue.sent ==
        std::vector<c::SessionMessage>{c::SessionMessage::Subscribe, c::SessionMessage::Subscribe});
}

TEST_CASE("Dedicated servers neither connect nor draw", "[session]") {
  CHECK(c::should_connect(c::NetMode::Standalone));
  CHECK(c::should_connect(c::NetMode::Client));
  CHECK(c::should_connect(c::NetMode::ListenServer));
  CHECK_FALSE(c::should_connect(c::NetMode::DedicatedServer));
}
