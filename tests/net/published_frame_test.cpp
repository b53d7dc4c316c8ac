// make_published_frame over a real World: orphans stay in the frame while they
// fade (retiring, at their last lane pose, speed 0), poses are on the wire's
// millimetre grid, and dot steps are marked.
#include "bustle/net/published_frame.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "bustle/proto/motion.hpp"

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

const net::PublishedEntity* find(const net::PublishedFrame& f, core::EntityId id) {
  for (const net::PublishedEntity& e : f.entities) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

// Sorted by index with unique indices; retiring exactly for orphans, which
// sit at their lane pose with speed 0; the bounds exactly those of every
// entity's position (the spatial index's grid).
void check_frame(const core::World& w, const net::PublishedFrame& f) {
  for (std::size_t i = 1; i < f.entities.size(); ++i)
    REQUIRE(f.entities[i - 1].id.index < f.entities[i].id.index);
  net::Bounds walked;
  for (const net::PublishedEntity& e : f.entities) walked.add(e.x_m, e.y_m);
  CHECK(f.bounds.min_x_m == walked.min_x_m);
  CHECK(f.bounds.min_y_m == walked.min_y_m);
  CHECK(f.bounds.max_x_m == walked.max_x_m);
  CHECK(f.bounds.max_y_m == walked.max_y_m);
  CHECK(f.entities.size() ==
        w.pedestrians().size() + w.vehicles().store().size() + w.orphans().size());
  std::set<std::uint32_t> orphan_indices;
  for (const core::OrphanRecord& o : w.orphans()) {
    orphan_indices.insert(o.id.index);
    const net::PublishedEntity* e = find(f, o.id);
    REQUIRE(e != nullptr);
    CHECK(e->retiring);
    CHECK(e->speed_mmps == 0);
    CHECK(e->kind == core::EntityKind::Pedestrian);
    CHECK(e->lane == o.lane);
    CHECK(e->s_mm == proto::to_mm(o.s_m));
    const core::Vec2 p = w.lanes().position(o.lane, e->s_mm / 1000.0);
    CHECK(e->x_m == p.x_m);
    CHECK(e->y_m == p.y_m);
  }
  for (const net::PublishedEntity& e : f.entities) {
    if (orphan_indices.count(e.id.index) == 0) CHECK_FALSE(e.retiring);
  }
}

}  // namespace

TEST_CASE("orphans stay in the published frame, retiring, until final deletion") {
  auto w = make(ring());
  for (int i = 0; i < 3; ++i) w->step();
  REQUIRE(w->pedestrians().size() > 2);
  const core::EntityId victim = w->pedestrians().id[1];
  REQUIRE(w->submit({{1, 1}, core::WorldCommand{core::DespawnEntity{victim}}}) ==
          core::SubmitStatus::Queued);
  w->step();

  // The despawn phase noticed it as Retiring this step, and it is an orphan.
  const auto notices = w->despawn_notices();
  REQUIRE(std::any_of(notices.begin(), notices.end(), [&](const core::DespawnNotice& n) {
    return n.id == victim && n.stage == core::DespawnStage::Retiring;
  }));
  auto frame = net::make_published_frame(*w, net::make_archetypes(w->scenario()));
  check_frame(*w, *frame);
  REQUIRE(find(*frame, victim) != nullptr);
  CHECK(find(*frame, victim)->retiring);

  // It fades for fade_ms, then leaves the frame.
  int steps = 0;
  while (find(*net::make_published_frame(*w, net::make_archetypes(w->scenario())), victim) !=
         nullptr) {
    REQUIRE(++steps <= 10);
    w->step();
    check_frame(*w, *net::make_published_frame(*w, net::make_archetypes(w->scenario())));
  }
  CHECK(steps >= 4);
}

TEST_CASE("dot steps are marked; Full pedestrians sit at their simulated pose") {
  auto w = make(ring());
  const net::ArchetypeTable archetypes = net::make_archetypes(w->scenario());
  CHECK(net::make_published_frame(*w, archetypes)->dot_step);  // step 0 is a dot step
  for (int i = 1; i <= 8; ++i) {
    w->step();
    auto f = net::make_published_frame(*w, archetypes);
    CHECK(f->dot_step == (f->step % 4 == 0));
    const core::PedestrianStore& peds = w->pedestrians();
    for (std::uint32_t k = 0; k < peds.size(); ++k) {
      if (peds.sim_tier[k] != core::SimTier::Full) continue;
      const net::PublishedEntity* e = find(*f, peds.id[k]);
      REQUIRE(e != nullptr);
      CHECK(e->lane == peds.lane[k]);
      CHECK(e->s_mm == std::min(proto::to_mm(peds.s_m[k]),
                                proto::to_mm(w->lanes().lane(peds.lane[k]).length_m)));
      CHECK(e->speed_mmps == proto::to_mmps(w->lanes().lane(peds.lane[k]).speed_mps_limit));
    }
  }
}

TEST_CASE("the frame pool reuses a frame only once nobody else holds it") {
  auto w = make(ring());
  const net::ArchetypeTable archetypes = net::make_archetypes(w->scenario());
  net::FramePool pool;
  w->step();
  auto held = pool.make(*w, archetypes, 0);  // the network side still holds this one
  const net::PublishedFrame* held_address = held.get();
  w->step();
  auto released = pool.make(*w, archetypes, 0);
  CHECK(released.get() != held_address);
  const net::PublishedFrame* released_address = released.get();
  released.reset();
  w->step();
  auto next = pool.make(*w, archetypes, 3);
  CHECK(next.get() == released_address);     // reused: nobody held it
  CHECK(held->step == w->step_index() - 2);  // the held frame was never overwritten
  // The reused frame is the current step's, complete, not a mix.
  const auto fresh = net::make_published_frame(*w, archetypes, 3);
  CHECK(next->step == fresh->step);
  CHECK(next->world_epoch == 3);
  REQUIRE(next->entities.size() == fresh->entities.size());
  for (std::size_t k = 0; k < fresh->entities.size(); ++k) {
    CHECK(next->entities[k].id == fresh->entities[k].id);
    CHECK(next->entities[k].s_mm == fresh->entities[k].s_mm);
  }
  check_frame(*w, *next);
}

TEST_CASE("a frame built from stores out of index order is sorted by index, each entity once") {
  core::Scenario s = ring();
  s.pedestrians.count = 300;
  s.pedestrians.spawn_per_step_max = 300;
  s.entity_capacity = 1024;
  auto w = make(s);
  for (int i = 0; i < 3; ++i) w->step();
  REQUIRE(w->pedestrians().size() == 300);
  // Despawning from the front moves the last rows forward (swap-remove) and
  // the refill reuses the freed indices: the store leaves index order.
  for (std::uint32_t k = 0; k < 60; ++k) {
    REQUIRE(
        w->submit({{2, k + 1}, core::WorldCommand{core::DespawnEntity{w->pedestrians().id[k]}}}) ==
        core::SubmitStatus::Queued);
  }
  for (int i = 0; i < 20; ++i) w->step();
  const core::PedestrianStore& peds = w->pedestrians();
  std::vector<std::uint32_t> indices;
  for (std::uint32_t i = 0; i < peds.size(); ++i) indices.push_back(peds.id[i].index);
  REQUIRE_FALSE(std::is_sorted(indices.begin(), indices.end()));
  auto frame = net::make_published_frame(*w, net::make_archetypes(w->scenario()));
  check_frame(*w, *frame);
  for (std::uint32_t i = 0; i < peds.size(); ++i) {
    const net::PublishedEntity* e = find(*frame, peds.id[i]);
    REQUIRE(e != nullptr);
    CHECK(e->lane == peds.lane[i]);
    CHECK(e->kind == core::EntityKind::Pedestrian);
  }
  // A second frame from the same world (the scratch buffers reused) is the same.
  auto again = net::make_published_frame(*w, net::make_archetypes(w->scenario()));
  REQUIRE(again->entities.size() == frame->entities.size());
  for (std::size_t k = 0; k < frame->entities.size(); ++k) {
    CHECK(again->entities[k].id == frame->entities[k].id);
    CHECK(again->entities[k].s_mm == frame->entities[k].s_mm);
  }
}

TEST_CASE("the frame's bounds hold orphans the stores no longer hold") {
  auto w = make(ring());
  for (int i = 0; i < 3; ++i) w->step();
  // Every pedestrian despawned and none spawned again: what fades is all
  // the frame holds, so its bounds come from the orphans alone.
  REQUIRE(w->submit({{1, 1}, core::WorldCommand{core::SetPedestrianTarget{0}}}) ==
          core::SubmitStatus::Queued);
  for (const core::EntityId id : w->pedestrians().id) {
    REQUIRE(w->submit({{1, 2}, core::WorldCommand{core::DespawnEntity{id}}}) ==
            core::SubmitStatus::Queued);
  }
  w->step();
  REQUIRE(w->pedestrians().size() == 0);
  REQUIRE(w->orphans().size() > 0);
  const auto frame = net::make_published_frame(*w, net::make_archetypes(w->scenario()));
  check_frame(*w, *frame);
  CHECK(frame->bounds.min_x_m <= frame->bounds.max_x_m);  // not empty
}

namespace {

// Every field a frame poses, entity by entity.
void check_same(const net::PublishedEntity& a, const net::PublishedEntity& b) {
  CHECK(a.id == b.id);
  CHECK(a.lane == b.lane);
  CHECK(a.s_mm == b.s_mm);
  CHECK(a.speed_mmps == b.speed_mmps);
  CHECK(a.x_m == b.x_m);
  CHECK(a.y_m == b.y_m);
  CHECK(a.weight == b.weight);
  CHECK(a.archetype == b.archetype);
  CHECK(a.sim_tier == b.sim_tier);
  CHECK(a.retiring == b.retiring);
  CHECK(a.corpse == b.corpse);
  CHECK(a.label == b.label);
}

// Two rings 1 km apart with a road through the first: a disc over the west
// end of the first ring poses that stretch of its lanes, never the second
// ring, while pedestrians despawn (orphans fading on both rings) and
// respawn. Every entity within the disc is in the frame. With `caps`, the
// tier caps (full, simulated) the rings run under. Returns how many posed
// pedestrians stood extrapolated (not Full).
std::size_t check_covered_frames(std::uint32_t full_cap, std::uint32_t simulated_cap) {
  core::Scenario s = ring();
  s.tiers.full_cap = full_cap;
  s.tiers.simulated_cap = simulated_cap;
  s.id = "test.net-two-rings";
  s.lanes.push_back(
      {"far-north", LaneKind::Sidewalk, {{1000, 0}, {1030, 0}, {1030, 10}}, 1.4, {"far-south"}});
  s.lanes.push_back(
      {"far-south", LaneKind::Sidewalk, {{1030, 10}, {1000, 10}, {1000, 0}}, 1.4, {"far-north"}});
  s.pedestrians.count = 60;
  s.pedestrians.spawn_per_step_max = 20;
  s.observers = {{15.0, 5.0}, {1015.0, 5.0}};  // both rings near an observer: despawns fade
  auto w = make(s);
  const net::ArchetypeTable archetypes = net::make_archetypes(w->scenario());
  const net::Coverage near_first{false, {{4.0, 5.0, 9.0}}};
  net::LaneCoverage spans_of;
  const std::vector<net::PosedSpan> spans = spans_of.mark(w->lanes(), near_first, 0);
  net::FramePool pool;
  std::size_t posed = 0, whole_n = 0, on_posed_lanes = 0, orphans_seen = 0, strided = 0;
  for (int step = 1; step <= 60; ++step) {
    if (step % 5 == 0 && w->pedestrians().size() > 4) {
      for (const std::uint32_t k : {0u, 3u}) {
        REQUIRE(w->submit({{1, static_cast<std::uint32_t>(step * 10) + k},
                           core::WorldCommand{core::DespawnEntity{w->pedestrians().id[k]}}}) ==
                core::SubmitStatus::Queued);
      }
    }
    w->step();
    orphans_seen += w->orphans().size();
    const auto whole = net::make_published_frame(*w, archetypes);
    const auto part = pool.make(*w, archetypes, 0, {}, true, near_first);
    CHECK_FALSE(part->coverage.whole);
    std::vector<net::PublishedEntity> expected;
    for (const net::PublishedEntity& e : whole->entities) {
      on_posed_lanes += spans[e.lane].any() ? 1 : 0;
      if (spans[e.lane].holds(e.s_mm)) expected.push_back(e);
      strided += spans[e.lane].holds(e.s_mm) &&
                 e.sim_tier != static_cast<std::uint8_t>(core::SimTier::Full);
      const double dx = e.x_m - 4.0, dy = e.y_m - 5.0;
      if (dx * dx + dy * dy <= 9.0 * 9.0) CHECK(find(*part, e.id) != nullptr);
    }
    CHECK(std::none_of(expected.begin(), expected.end(), [&](const net::PublishedEntity& e) {
      return w->lanes().lane(e.lane).id.rfind("far-", 0) == 0;
    }));
    REQUIRE(part->entities.size() == expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k) check_same(part->entities[k], expected[k]);
    // Every pedestrian counts for its chain's dots, posed or not.
    std::vector<std::uint32_t> chains(w->lanes().chains().size(), 0);
    for (const net::PublishedEntity& e : whole->entities)
      if (e.kind == core::EntityKind::Pedestrian) ++chains[w->lanes().chain_of(e.lane)];
    CHECK(part->chain_pedestrians == chains);
    posed += part->entities.size();
    whole_n += whole->entities.size();
  }
  CHECK(orphans_seen > 0);
  CHECK(posed < on_posed_lanes);    // the east end of the first ring was left out
  CHECK(on_posed_lanes < whole_n);  // and the far ring
  CHECK(posed > 0);
  return strided;
}

}  // namespace

TEST_CASE("a covered frame holds exactly the whole frame's entities on the stretches it poses") {
  check_covered_frames(core::TierSpec{}.full_cap, core::TierSpec{}.simulated_cap);
}

TEST_CASE("a covered frame poses exactly the Coarse pedestrians extrapolated into its stretches") {
  // Nearly everyone Coarse: posed distances run up to 7 steps ahead of the
  // simulated ones, so a walker simulated outside a stretch may be posed in
  // it, and one simulated inside may have left it.
  CHECK(check_covered_frames(1, 2) > 100);
}

TEST_CASE("discs that reach every lane end to end give the whole frame's entities") {
  // The ring's lanes all lie within 40 m of its middle: one disc holds the
  // city, so the frame is built as a whole one (every row posed, chain
  // counts on dot steps only) while it keeps its disc for the sessions.
  auto w = make(ring());
  const net::ArchetypeTable archetypes = net::make_archetypes(w->scenario());
  const net::Coverage all_lanes{false, {{15.0, 5.0, 40.0}}};
  net::FramePool pool;
  std::size_t compared = 0;
  for (int step = 1; step <= 24; ++step) {
    w->step();
    const auto whole = net::make_published_frame(*w, archetypes);
    const auto part = pool.make(*w, archetypes, 0, {}, true, all_lanes);
    CHECK_FALSE(part->coverage.whole);
    CHECK(part->coverage.discs == all_lanes.discs);
    CHECK(part->chain_pedestrians == whole->chain_pedestrians);
    CHECK(part->chain_pedestrians.empty() == !part->dot_step);
    REQUIRE(part->entities.size() == whole->entities.size());
    for (std::size_t k = 0; k < whole->entities.size(); ++k, ++compared)
      check_same(part->entities[k], whole->entities[k]);
  }
  CHECK(compared > 100);
}
