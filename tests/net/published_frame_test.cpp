// make_published_frame over a real World: orphans stay in the frame while they
// fade (retiring, at their last lane pose, speed 0) and dots come on dot
// steps only, one count per lane chain.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "bustle/net/published_frame.hpp"

using namespace bustle;
using core::LaneKind;

namespace {

// A sidewalk ring (one cyclic chain) beside a road; the observer sits in
// the middle of the ring.
core::Scenario ring() {
  core::Scenario s;
  s.id = "test.net-ring";
  s.lanes = {
      {"north", LaneKind::Sidewalk, {{0, 0}, {30, 0}, {30, 10}}, 1.4, {"south"}},
      {"south", LaneKind::Sidewalk, {{30, 10}, {0, 10}, {0, 0}}, 1.4, {"north"}},
      {"road", LaneKind::Road, {{15, -10}, {15, 20}}, 13.9, {"road"}},
  };
  s.pedestrians.count = 20;
  s.pedestrians.spawn_per_step_max = 20;
  s.pedestrians.dots_every_steps = 4;
  s.entity_capacity = 256;
  s.observers = {{15.0, 5.0}};  // near everything: despawns fade instead of vanishing
  s.despawn.fade_ms = 500;      // 5 steps at 10 Hz
  return s;
}

std::unique_ptr<core::World> make(const core::Scenario& s) {
  auto created = core::World::create(s, 7);
  REQUIRE(created.errors.empty());
  REQUIRE(created.world);
  return std::move(created.world);
}

const net::QuantizedEntity* find(const net::PublishedFrame& f, core::EntityId id) {
  for (const net::QuantizedEntity& e : f.entities) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

// Sorted by index with unique indices; retiring exactly for orphans, which
// sit at their lane pose with speed 0.
void check_frame(const core::World& w, const net::PublishedFrame& f) {
  for (std::size_t i = 1; i < f.entities.size(); ++i) REQUIRE(f.entities[i - 1].id.index < f.entities[i].id.index);
  CHECK(f.entities.size() == w.pedestrians().size() + w.vehicles().store().size() + w.orphans().size());
  std::set<std::uint32_t> orphan_indices;
  for (const core::OrphanRecord& o : w.orphans()) {
    orphan_indices.insert(o.id.index);
    const net::QuantizedEntity* e = find(f, o.id);
    REQUIRE(e != nullptr);
    CHECK(e->retiring);
    CHECK(e->speed_cmps == 0);
    CHECK(e->kind == core::EntityKind::Pedestrian);
    const core::Pose pose = w.lanes().sample(o.lane, o.s_m);
    CHECK(e->x_cm == net::quantize_cm(pose.x_m));
    CHECK(e->y_cm == net::quantize_cm(pose.y_m));
  }
  for (const net::QuantizedEntity& e : f.entities) {
    if (orphan_indices.count(e.id.index) == 0) CHECK_FALSE(e.retiring);
  }
}

}  // namespace

TEST_CASE("orphans stay in the published frame, retiring, until final deletion") {
  auto w = make(ring());
  for (int i = 0; i < 3; ++i) w->step();
  REQUIRE(w->pedestrians().size() > 2);
  const core::EntityId victim = w->pedestrians().id[1];
  REQUIRE(w->submit({{1, 1}, core::WorldCommand{core::DespawnEntity{victim}}}) == core::SubmitStatus::Queued);
  w->step();

  // The despawn phase noticed it as Retiring this step, and it is an orphan.
  const auto notices = w->despawn_notices();
  REQUIRE(std::any_of(notices.begin(), notices.end(), [&](const core::DespawnNotice& n) {
    return n.id == victim && n.stage == core::DespawnStage::Retiring;
  }));
  auto frame = net::make_published_frame(*w);
  check_frame(*w, *frame);
  REQUIRE(find(*frame, victim) != nullptr);
  CHECK(find(*frame, victim)->retiring);

  // It fades for fade_ms, then leaves the frame.
  int steps = 0;
  while (find(*net::make_published_frame(*w), victim) != nullptr) {
    REQUIRE(++steps <= 10);
    w->step();
    check_frame(*w, *net::make_published_frame(*w));
  }
  CHECK(steps >= 4);
}

TEST_CASE("dots are published on dot steps only, one clamped count per chain") {
  auto w = make(ring());
  const std::size_t chains = w->lanes().chains().size();
  REQUIRE(chains > 0);
  auto f0 = net::make_published_frame(*w);
  REQUIRE(f0->dots != nullptr);  // step 0 is a dot step
  CHECK(f0->dots->size() == chains);
  for (int i = 1; i <= 8; ++i) {
    w->step();
    auto f = net::make_published_frame(*w);
    if (f->step % 4 != 0) {
      CHECK(f->dots == nullptr);
      continue;
    }
    REQUIRE(f->dots != nullptr);
    std::vector<std::uint32_t> expected;
    w->chain_dots(expected);
    REQUIRE(f->dots->size() == expected.size());
    for (std::size_t c = 0; c < expected.size(); ++c) {
      CHECK((*f->dots)[c] == std::min<std::uint32_t>(expected[c], 65535u));
    }
  }
}
