// The SDK's EntityMirror: entered / motion / left with stable slots, poses
// reconstructed across lane changes and gaps, baselines and restores, reused
// indices with new generations, strict mode and capacity.
#include "bustle/client/entity_mirror.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include "support/sdk_frames.hpp"

using bustle::client::ControlPolicy;
using bustle::client::EntityField;
using bustle::client::EntityId;
using bustle::client::EntityMirror;
using bustle::client::EntityView;
using bustle::client::MirrorListener;
using bustle::client::RepresentationHint;
using bustle::client::SimTier;
using bustle::client::SlotId;
namespace t = bustle::test;
namespace wire = bustle::wire;

namespace {

constexpr std::uint32_t kMirrorStepUs = 100000;  // 10 Hz

// Lane 0: 100 m along +x at z 0. Lane 1: from its end 50 m along +y, at
// z 2.5. Lane 2: an L, 10 m along +x then 10 m along +y, at z -1. Lane 3:
// 2 km along +x.
t::WelcomeSpec world_spec() {
  t::WelcomeSpec w;
  w.step_us = kMirrorStepUs;
  w.lanes = {
      {"east", {{0.0, 0.0}, {100.0, 0.0}}, 0.0f},
      {"north", {{100.0, 0.0}, {100.0, 50.0}}, 2.5f},
      {"ell", {{0.0, 10.0}, {10.0, 10.0}, {10.0, 20.0}}, -1.0f},
      {"long", {{0.0, -5.0}, {2000.0, -5.0}}, 0.0f},
  };
  w.archetypes = {"pedestrian", "vehicle.car"};
  return w;
}

EntityMirror world_mirror(std::uint32_t max_entities = EntityMirror::kDefaultMaxEntities) {
  EntityMirror m(max_entities);
  m.set_world(t::decoded(world_spec()));
  return m;
}

bustle::client::ApplySummary apply_to_mirror(EntityMirror& m, const t::DeltaSpec& spec,
                                             MirrorListener* listener = nullptr) {
  return m.apply(t::decoded(spec), listener);
}

t::DeltaSpec mirror_baseline(std::uint64_t step, std::vector<wire::EntityEnter> entered) {
  t::DeltaSpec d;
  d.step = step;
  d.baseline = true;
  d.entered = std::move(entered);
  return d;
}

t::DeltaSpec at_step(std::uint64_t step) {
  t::DeltaSpec d;
  d.step = step;
  return d;
}

// A pedestrian on lane 0 at s metres, standing.
wire::EntityEnter standing(std::uint32_t index, std::uint32_t generation, std::uint32_t s_mm = 0) {
  return t::enter(index, generation, 0, s_mm);
}

struct Recorder : MirrorListener {
  std::vector<std::string> events;
  void on_reset() override { events.push_back("reset"); }
  void on_entered(const EntityView& v) override {
    events.push_back("enter " + std::to_string(v.id.index) + "/" + std::to_string(v.id.generation) +
                     "@" + std::to_string(v.slot.value));
  }
  void on_moved(const EntityView& v) override {
    events.push_back("move " + std::to_string(v.id.index) + "@" + std::to_string(v.slot.value));
  }
  void on_changed(const EntityView& v, EntityField f) override {
    events.push_back("change " + std::to_string(v.id.index) + " " + bustle::client::to_string(f));
  }
  void on_left(const EntityView& v) override {
    events.push_back("left " + std::to_string(v.id.index) + "/" + std::to_string(v.id.generation) +
                     "@" + std::to_string(v.slot.value));
  }
  void on_retiring(const EntityView& v) override {
    events.push_back("retiring " + std::to_string(v.id.index));
  }
};

}  // namespace

TEST_CASE("EntityMirror keeps what entered says, and the anchor at the Delta's step", "[mirror]") {
  EntityMirror m = world_mirror();
  t::DeltaSpec b = mirror_baseline(
      5, {t::enter(3, 1, 1, 2500, 1400, wire::EntityKind::Vehicle, 1, wire::SimTier::Simulated,
                   wire::RepresentationHint::Instanced, wire::ControlPolicy::Yielding)});
  b.labels = {{3, "vehicle.depot.000001"}};
  b.interest_truncated = 42;
  const auto s = apply_to_mirror(m, b);
  CHECK(s.ok());
  const EntityView* v = m.find(EntityId{3, 1});
  REQUIRE(v != nullptr);
  CHECK(v->kind == bustle::client::EntityKind::Vehicle);
  CHECK(v->archetype == 1);
  CHECK(v->label == "vehicle.depot.000001");
  CHECK(v->sim_tier == SimTier::Simulated);
  CHECK(v->representation == RepresentationHint::Instanced);
  CHECK(v->policy == ControlPolicy::Yielding);
  CHECK(v->anchor == bustle::proto::MotionAnchor{1, 2500, 1400, 5});
  CHECK(v->entered_step == 5);
  CHECK_FALSE(v->retiring);
  CHECK(m.interest_truncated() == 42);

  // On lane 1 (north from 100,0), 2.5 m in, at the lane's elevation.
  const auto p = m.pose(EntityId{3, 1}, 5);
  REQUIRE(p.has_value());
  CHECK(p->lane == 1);
  CHECK(p->s_mm == 2500);
  CHECK(p->x_m == 100.0);
  CHECK(p->y_m == 2.5);
  CHECK(p->z_m == 2.5);
  CHECK(p->heading_rad == Approx(std::numbers::pi / 2));
  // 10 steps of 0.1 s at 1.4 m/s: 1.4 m further.
  const auto later = m.pose(v->slot, 15);
  REQUIRE(later.has_value());
  CHECK(later->s_mm == 2500 + 1400);
  CHECK(later->y_m == Approx(3.9));
  CHECK_FALSE(m.pose(EntityId{3, 2}, 5).has_value());  // stale generation
  CHECK_FALSE(m.pose(SlotId{7}, 5).has_value());       // free slot
}

TEST_CASE("EntityMirror applies entered, motion and left with stable slots", "[mirror]") {
  EntityMirror m = world_mirror();
  auto s = apply_to_mirror(
      m, mirror_baseline(1, {standing(0, 1), standing(1, 1, 1000), standing(2, 1, 2000)}));
  CHECK(s.baseline);
  CHECK(s.entered == 3);
  REQUIRE(m.size() == 3);
  const SlotId slot0 = m.find(EntityId{0, 1})->slot;
  const SlotId slot1 = m.find(EntityId{1, 1})->slot;
  const SlotId slot2 = m.find(EntityId{2, 1})->slot;
  CHECK(slot0.value == 0);
  CHECK(slot1.value == 1);
  CHECK(slot2.value == 2);

  t::DeltaSpec d2 = at_step(2);
  d2.motion = {t::motion(1, 1500, 500)};
  d2.left = {wire::EntityId(0, 1)};
  s = apply_to_mirror(m, d2);
  CHECK(s.moved == 1);
  CHECK(s.left == 1);
  CHECK(m.size() == 2);
  CHECK(m.find(EntityId{0, 1}) == nullptr);
  CHECK(m.at(slot0) == nullptr);
  const EntityView* e1 = m.find(EntityId{1, 1});
  REQUIRE(e1 != nullptr);
  CHECK(e1->slot == slot1);  // motion never moves an entity to another slot
  CHECK(e1->anchor == bustle::proto::MotionAnchor{0, 1500, 500, 2});
  CHECK(e1->entered_step == 1);
  CHECK(m.find(EntityId{2, 1})->anchor.step == 1);  // untouched

  // A new entity reuses the freed slot; the others keep theirs.
  t::DeltaSpec d3 = at_step(3);
  d3.entered = {standing(7, 1, 7000)};
  s = apply_to_mirror(m, d3);
  CHECK(s.entered == 1);
  CHECK(m.find(EntityId{7, 1})->slot == slot0);
  CHECK(m.find(EntityId{1, 1})->slot == slot1);
  CHECK(m.find(EntityId{2, 1})->slot == slot2);
  CHECK(m.slot_count() == 3);

  const auto& k = m.counters();
  CHECK(k.deltas == 3);
  CHECK(k.baselines == 1);
  CHECK(k.entered == 4);
  CHECK(k.moved == 1);
  CHECK(k.left == 1);
  CHECK(m.last_step() == 3);

  std::size_t visited = 0;
  m.for_each([&](const EntityView& v) {
    CHECK(m.at(v.slot) == &v);
    ++visited;
  });
  CHECK(visited == 3);
}

TEST_CASE("EntityMirror reconstructs poses across a lane change", "[mirror][motion]") {
  EntityMirror m = world_mirror();
  // 1 m before the end of lane 0, at 2 m/s.
  apply_to_mirror(m, mirror_baseline(10, {t::enter(4, 1, 0, 99000, 2000)}));
  auto p = m.pose(EntityId{4, 1}, 13);  // 0.6 m later
  REQUIRE(p);
  CHECK(p->lane == 0);
  CHECK(p->s_mm == 99600);
  CHECK(p->x_m == Approx(99.6));
  CHECK(p->y_m == 0.0);
  CHECK(p->heading_rad == 0.0);

  // Step 15: the server moved it onto lane 1, 0.0 m in; the anchor is there now.
  t::DeltaSpec d = at_step(15);
  d.motion = {t::motion(4, 0, 2000, 1)};
  Recorder rec;
  const auto s = apply_to_mirror(m, d, &rec);
  CHECK(s.ok());
  CHECK(rec.events == std::vector<std::string>{"move 4@0"});
  CHECK(m.find(EntityId{4, 1})->anchor == bustle::proto::MotionAnchor{1, 0, 2000, 15});
  p = m.pose(EntityId{4, 1}, 20);  // 1 m along lane 1
  REQUIRE(p);
  CHECK(p->lane == 1);
  CHECK(p->s_mm == 1000);
  CHECK(p->x_m == 100.0);
  CHECK(p->y_m == Approx(1.0));
  CHECK(p->z_m == 2.5);
  CHECK(p->heading_rad == Approx(std::numbers::pi / 2));

  // A record with lane code 0 keeps the anchor's (new) lane.
  t::DeltaSpec e = at_step(21);
  e.motion = {t::motion(4, 1300, 1000)};
  apply_to_mirror(m, e);
  CHECK(m.find(EntityId{4, 1})->anchor == bustle::proto::MotionAnchor{1, 1300, 1000, 21});

  // On the L-shaped lane the pose follows the second segment past the corner.
  t::DeltaSpec f = at_step(22);
  f.motion = {t::motion(4, 12000, 0, 2)};
  apply_to_mirror(m, f);
  p = m.pose(EntityId{4, 1}, 100);
  REQUIRE(p);
  CHECK(p->lane == 2);
  CHECK(p->x_m == Approx(10.0));
  CHECK(p->y_m == Approx(12.0));
  CHECK(p->z_m == -1.0);
  CHECK(p->heading_rad == Approx(std::numbers::pi / 2));
}

TEST_CASE("EntityMirror clamps the prediction at the end of the lane", "[mirror][motion]") {
  EntityMirror m = world_mirror();
  apply_to_mirror(m, mirror_baseline(0, {t::enter(1, 1, 0, 90000, 5000)}));
  // 2 s at 5 m/s: exactly at the end; later: still the last point.
  auto p = m.pose(EntityId{1, 1}, 20);
  REQUIRE(p);
  CHECK(p->s_mm == 100000);
  CHECK(p->x_m == 100.0);
  p = m.pose(EntityId{1, 1}, 100000);
  REQUIRE(p);
  CHECK(p->s_mm == 100000);
  CHECK(p->x_m == 100.0);
  CHECK(p->y_m == 0.0);
  CHECK(p->heading_rad == 0.0);  // the last segment's direction
  // Before the anchor's step: the anchor itself.
  CHECK(m.pose(EntityId{1, 1}, 0)->s_mm == 90000);
}

TEST_CASE("EntityMirror poses a coalesced Delta after a gap of many steps", "[mirror][motion]") {
  EntityMirror m = world_mirror();
  apply_to_mirror(m, mirror_baseline(10, {t::enter(2, 1, 3, 1000, 1400), t::enter(5, 1, 3, 0, 0)}));
  // The client fell behind: the next Delta is at step 1010, with one
  // correction for entity 5 only. Entity 2 keeps its anchor of step 10.
  t::DeltaSpec late = at_step(1010);
  late.motion = {t::motion(5, 300000, 1000)};
  const auto s = apply_to_mirror(m, late);
  CHECK_FALSE(s.step_not_increasing);
  CHECK(s.moved == 1);
  auto p2 = m.pose(EntityId{2, 1}, 1010);
  REQUIRE(p2);
  CHECK(p2->s_mm == 1000 + 1400 * 100);  // 1000 steps = 100 s at 1.4 m/s
  CHECK(p2->x_m == Approx(141.0));
  CHECK(p2->y_m == -5.0);
  auto p5 = m.pose(EntityId{5, 1}, 1011);
  REQUIRE(p5);
  CHECK(p5->s_mm == 300000 + 100);  // anchored at 1010, one step later
  // The prediction's integer arithmetic rounds down per evaluation, not per step.
  apply_to_mirror(m, mirror_baseline(0, {t::enter(9, 1, 3, 0, 7)}));
  CHECK(m.pose(EntityId{9, 1}, 1)->s_mm == 0);   // 0.7 mm
  CHECK(m.pose(EntityId{9, 1}, 10)->s_mm == 7);  // 7 mm, not 10 x 0
  CHECK(m.pose(EntityId{9, 1}, 3)->s_mm == 2);   // 2.1 mm
}

TEST_CASE("EntityMirror applies changes and retiring marks", "[mirror]") {
  EntityMirror m = world_mirror();
  apply_to_mirror(m, mirror_baseline(1, {t::enter(1, 1, 0, 0, 1000, wire::EntityKind::Vehicle),
                                         standing(2, 1)}));
  Recorder rec;
  t::DeltaSpec d = at_step(2);
  d.changes = {wire::EntityChange(1, wire::EntityField::SimTier,
                                  static_cast<std::uint8_t>(wire::SimTier::Coarse)),
               wire::EntityChange(1, wire::EntityField::Representation,
                                  static_cast<std::uint8_t>(wire::RepresentationHint::Marker)),
               wire::EntityChange(1, wire::EntityField::Policy,
                                  static_cast<std::uint8_t>(wire::ControlPolicy::WaitingAtSignal))};
  d.retiring = {wire::EntityId(2, 1)};
  d.motion = {t::motion(1, 1000, 0)};  // stopped at the signal
  const auto s = apply_to_mirror(m, d, &rec);
  CHECK(s.ok());
  CHECK(s.changed == 3);
  CHECK(s.retiring == 1);
  const EntityView* v = m.find(EntityId{1, 1});
  CHECK(v->sim_tier == SimTier::Coarse);
  CHECK(v->representation == RepresentationHint::Marker);
  CHECK(v->policy == ControlPolicy::WaitingAtSignal);
  CHECK(m.pose(EntityId{1, 1}, 50)->s_mm == 1000);
  CHECK(m.find(EntityId{2, 1})->retiring);
  CHECK_FALSE(v->retiring);
  CHECK(rec.events == std::vector<std::string>{"move 1@0", "change 1 SimTier",
                                               "change 1 Representation", "change 1 Policy",
                                               "retiring 2"});
  // A repeated mark is nothing new; the entity leaves later.
  t::DeltaSpec again = at_step(3);
  again.retiring = {wire::EntityId(2, 1)};
  CHECK(apply_to_mirror(m, again).retiring == 0);
  t::DeltaSpec gone = at_step(4);
  gone.left = {wire::EntityId(2, 1)};
  CHECK(apply_to_mirror(m, gone).left == 1);
  CHECK(m.counters().retiring == 1);
  CHECK(m.counters().changed == 3);
}

TEST_CASE("EntityMirror strict mode reports what it only counts otherwise", "[mirror]") {
  auto problems = [](bool strict) {
    EntityMirror m = world_mirror();
    m.set_strict(strict);
    apply_to_mirror(m, mirror_baseline(1, {standing(0, 1), standing(1, 1)}));
    std::vector<std::string> errors;
    auto run = [&](t::DeltaSpec d) {
      const auto s = m.apply(t::decoded(d));
      errors.push_back(s.error);
      return s;
    };
    t::DeltaSpec motion = at_step(2);
    motion.motion = {t::motion(1, 5, 5), t::motion(9, 5, 5)};
    CHECK(run(motion).unknown_motion == 1);
    CHECK(m.find(EntityId{1, 1})->anchor.s_mm == 5);  // the rest is still applied
    t::DeltaSpec change = at_step(3);
    change.changes = {wire::EntityChange(8, wire::EntityField::Policy, 0)};
    CHECK(run(change).unknown_changes == 1);
    t::DeltaSpec dup = at_step(4);
    dup.entered = {standing(0, 1, 400)};
    CHECK(run(dup).duplicate_enters == 1);
    CHECK(m.find(EntityId{0, 1})->anchor.s_mm == 400);  // trusted
    t::DeltaSpec left = at_step(5);
    left.left = {wire::EntityId(1, 2)};  // stale generation
    CHECK(run(left).unknown_lefts == 1);
    t::DeltaSpec label = at_step(6);
    label.labels = {{0, "not entered here"}};
    CHECK(run(label).unknown_labels == 1);
    CHECK(m.find(EntityId{0, 1})->label.empty());
    t::DeltaSpec lane = at_step(7);
    lane.motion = {t::motion(0, 0, 0, 17)};
    CHECK(run(lane).unknown_lanes == 1);
    CHECK_FALSE(m.pose(EntityId{0, 1}, 7).has_value());  // no such lane to place it on
    t::DeltaSpec fine = at_step(8);
    fine.motion = {t::motion(0, 10, 0, 0)};
    CHECK(run(fine).ok());
    CHECK(m.counters().errors == (strict ? 6u : 0u));
    return errors;
  };
  const auto lax = problems(false);
  for (const auto& e : lax) CHECK(e.empty());
  const auto strict = problems(true);
  REQUIRE(strict.size() == 7);
  CHECK(strict[0] == "motion: index 9 is not received");
  CHECK(strict[1] == "changes: index 8 is not received");
  CHECK(strict[2] == "entered: 0:1 is already received");
  CHECK(strict[3] == "left: 1:2 is not received");
  CHECK(strict[4] == "labels: index 0 did not enter in this Delta");
  CHECK(strict[5] == "motion: lane 17 is not in the Welcome (4 lanes)");
  CHECK(strict[6].empty());
}

TEST_CASE("EntityMirror resets on a baseline Delta", "[mirror]") {
  EntityMirror m = world_mirror();
  apply_to_mirror(m, mirror_baseline(1, {standing(0, 1), standing(1, 1)}));
  REQUIRE(m.size() == 2);
  Recorder rec;
  auto s = apply_to_mirror(m, mirror_baseline(50, {standing(5, 2)}), &rec);
  CHECK(s.baseline);
  CHECK(m.size() == 1);
  CHECK(m.find(EntityId{0, 1}) == nullptr);
  CHECK(m.find(EntityId{1, 1}) == nullptr);
  REQUIRE(m.find(EntityId{5, 2}) != nullptr);
  CHECK(m.find(EntityId{5, 2})->slot.value == 0);  // slots restart from scratch
  CHECK(m.slot_count() == 1);
  CHECK(rec.events == std::vector<std::string>{"reset", "enter 5/2@0"});
  CHECK(m.counters().baselines == 2);
  // A baseline may go back in time (replay, re-subscribe): not counted as disorder.
  apply_to_mirror(m, mirror_baseline(10, {}));
  CHECK(m.counters().steps_not_increasing == 0);
  CHECK(m.size() == 0);
  CHECK(m.lane_count() == 4);  // the world stays
}

TEST_CASE("EntityMirror accepts a restore's baseline at a lower step and continues from it",
          "[mirror][snapshots]") {
  // Deltas up to step 20, then a baseline of the restored world at step 10
  // (ids may coincide with the old world's, with other states), then 11 on.
  EntityMirror m = world_mirror();
  apply_to_mirror(m, mirror_baseline(5, {t::enter(0, 1, 0, 0, 1000), standing(1, 1)}));
  for (std::uint64_t step = 6; step <= 20; ++step) {
    t::DeltaSpec d = at_step(step);
    d.motion = {t::motion(0, static_cast<std::uint32_t>(step * 100), 1000)};
    apply_to_mirror(m, d);
  }
  REQUIRE(m.last_step() == 20);
  Recorder rec;
  t::DeltaSpec restored = mirror_baseline(10, {t::enter(0, 1, 0, 5550, 0), standing(7, 3)});
  restored.sim_time_us = 1'000'000;
  restored.digest = 0x1010;
  const auto s = apply_to_mirror(m, restored, &rec);
  CHECK(s.baseline);
  CHECK_FALSE(s.step_not_increasing);
  CHECK(m.last_step() == 10);
  CHECK(m.last_sim_time_us() == 1'000'000);
  CHECK(m.last_digest() == 0x1010);
  CHECK(m.size() == 2);
  CHECK(m.find(EntityId{1, 1}) == nullptr);
  REQUIRE(m.find(EntityId{0, 1}) != nullptr);
  CHECK(m.pose(EntityId{0, 1}, 11)->x_m == Approx(5.55));  // the restored state, not the old one
  CHECK(m.find(EntityId{0, 1})->entered_step == 10);
  CHECK(rec.events.front() == "reset");

  t::DeltaSpec next = at_step(11);
  next.motion = {t::motion(7, 10, 0)};
  const auto s11 = apply_to_mirror(m, next);
  CHECK_FALSE(s11.step_not_increasing);
  CHECK(s11.moved == 1);
  CHECK(s11.unknown_motion == 0);
  CHECK(apply_to_mirror(m, at_step(11)).step_not_increasing);
  CHECK(m.counters().steps_not_increasing == 1);
}

TEST_CASE("EntityMirror replaces an entry when its index comes back with a new generation",
          "[mirror]") {
  EntityMirror m = world_mirror();
  apply_to_mirror(m, mirror_baseline(1, {standing(4, 1), standing(5, 1)}));
  Recorder rec;
  t::DeltaSpec d = at_step(2);
  d.entered = {standing(4, 2, 9990)};
  const auto s = apply_to_mirror(m, d, &rec);
  CHECK(s.replaced == 1);
  CHECK(s.entered == 1);
  CHECK(m.size() == 2);
  CHECK(m.find(EntityId{4, 1}) == nullptr);
  const EntityView* v = m.find(EntityId{4, 2});
  REQUIRE(v != nullptr);
  CHECK(v->anchor.s_mm == 9990);
  CHECK(v->entered_step == 2);
  CHECK(rec.events == std::vector<std::string>{"left 4/1@0", "enter 4/2@0"});

  // Leaves and retiring marks for the old generation are stale.
  t::DeltaSpec stale = at_step(3);
  stale.left = {wire::EntityId(4, 1)};
  stale.retiring = {wire::EntityId(4, 1)};
  const auto s2 = apply_to_mirror(m, stale);
  CHECK(s2.unknown_lefts == 1);
  CHECK(s2.unknown_retiring == 1);
  CHECK(m.find(EntityId{4, 2}) != nullptr);
  CHECK_FALSE(m.find(EntityId{4, 2})->retiring);
}

TEST_CASE("EntityMirror resolves left-then-entered of a reused index in one Delta", "[mirror]") {
  EntityMirror m = world_mirror();
  apply_to_mirror(m, mirror_baseline(1, {standing(4, 1)}));
  t::DeltaSpec d = at_step(2);
  d.left = {wire::EntityId(4, 1)};
  d.entered = {standing(4, 2, 100)};
  d.labels = {{4, "market.007"}};
  const auto s = apply_to_mirror(m, d);
  CHECK(s.left == 1);
  CHECK(s.entered == 1);
  CHECK(s.replaced == 0);
  CHECK(s.unknown_lefts == 0);
  REQUIRE(m.find(EntityId{4, 2}) != nullptr);
  CHECK(m.find(EntityId{4, 2})->label == "market.007");
}

TEST_CASE("EntityMirror stops at its capacity and counts the overflow", "[mirror]") {
  EntityMirror m = world_mirror(2);
  const auto s =
      apply_to_mirror(m, mirror_baseline(1, {standing(0, 1), standing(1, 1), standing(2, 1)}));
  CHECK(s.entered == 2);
  CHECK(s.rejected_full == 1);
  CHECK(m.size() == 2);
  CHECK(m.find(EntityId{2, 1}) == nullptr);
  t::DeltaSpec d = at_step(2);
  d.left = {wire::EntityId(0, 1)};
  d.entered = {standing(2, 1)};
  const auto s2 = apply_to_mirror(m, d);
  CHECK(s2.entered == 1);
  CHECK(s2.rejected_full == 0);
  CHECK(m.find(EntityId{2, 1}) != nullptr);
}

TEST_CASE("EntityMirror without a world keeps anchors but has no poses", "[mirror]") {
  EntityMirror m;
  const auto s = apply_to_mirror(m, mirror_baseline(1, {t::enter(0, 1, 12, 5, 5)}));
  CHECK(s.ok());
  CHECK(s.unknown_lanes == 0);  // nothing to check against
  CHECK(m.find(EntityId{0, 1})->anchor.lane == 12);
  CHECK_FALSE(m.pose(EntityId{0, 1}, 1).has_value());
}

TEST_CASE("EntityMirror slots and poses stay consistent through a seeded random history",
          "[mirror][motion]") {
  // A model of live ids and their anchors against the mirror, over many
  // random Deltas with enters, motion records (with lane changes), leaves,
  // index reuse and gaps of several steps.
  EntityMirror m = world_mirror();
  m.set_strict(true);
  struct Model {
    std::uint32_t generation;
    bustle::proto::MotionAnchor anchor;
  };
  std::map<std::uint32_t, Model> model;
  std::map<std::uint32_t, std::uint32_t> slot_of;
  std::uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&](std::uint32_t bound) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return static_cast<std::uint32_t>(rng % bound);
  };
  const auto lanes = bustle::client::lane_polylines(t::decoded(world_spec()));
  apply_to_mirror(m, mirror_baseline(1, {}));
  std::uint64_t step = 1;
  for (int round = 0; round < 400; ++round) {
    step += 1 + next(5);
    t::DeltaSpec d = at_step(step);
    std::set<std::uint32_t> touched;
    for (int i = 0; i < 5; ++i) {
      const std::uint32_t index = next(32);
      if (!touched.insert(index).second) continue;
      auto it = model.find(index);
      const std::uint32_t lane = next(4);
      const std::uint32_t s_mm = next(lanes[lane].length_mm + 1);
      const std::uint32_t speed = next(3000);
      if (it == model.end()) {
        const std::uint32_t gen = next(3) + 1;
        d.entered.push_back(t::enter(index, gen, lane, s_mm, speed));
        model[index] = {gen, {lane, s_mm, speed, step}};
      } else if (next(3) == 0) {
        d.left.emplace_back(index, it->second.generation);
        model.erase(it);
        slot_of.erase(index);
      } else {
        const bool change_lane = next(2) == 0;
        const std::uint32_t to = change_lane ? lane : it->second.anchor.lane;
        const std::uint32_t s = next(lanes[to].length_mm + 1);
        it->second.anchor = {to, s, speed, step};
        d.motion.push_back(t::motion(
            index, s, speed, change_lane ? std::optional<std::uint32_t>(lane) : std::nullopt));
      }
    }
    std::sort(d.motion.begin(), d.motion.end(),
              [](const auto& a, const auto& b) { return a.index < b.index; });
    const auto s = apply_to_mirror(m, d);
    INFO(s.error);
    REQUIRE(s.ok());
    REQUIRE(m.size() == model.size());
    const std::uint64_t when = step + next(40);
    for (const auto& [index, e] : model) {
      const EntityView* v = m.find(EntityId{index, e.generation});
      REQUIRE(v != nullptr);
      REQUIRE(v->anchor == e.anchor);
      const auto& lane = lanes[e.anchor.lane];
      const std::uint32_t expect_s =
          bustle::proto::predict_s_mm(e.anchor, when, kMirrorStepUs, lane.length_mm);
      const auto expect = bustle::proto::sample_lane(lane, expect_s / 1000.0);
      const auto p = m.pose(v->slot, when);
      REQUIRE(p.has_value());
      REQUIRE(p->s_mm == expect_s);
      REQUIRE(p->x_m == expect.x_m);
      REQUIRE(p->y_m == expect.y_m);
      auto [sit, inserted] = slot_of.emplace(index, v->slot.value);
      if (!inserted) REQUIRE(sit->second == v->slot.value);  // slot stable for life
    }
  }
  CHECK(m.slot_count() <= 32);
  CHECK(m.counters().errors == 0);
}

TEST_CASE("EntityMirror keeps the corpse flag from entered and from a Corpse change, once",
          "[mirror]") {
  EntityMirror m = world_mirror();
  // A late join: one entity enters already dead.
  apply_to_mirror(
      m, mirror_baseline(
             1, {t::enter(1, 1, 0, 0, 0, wire::EntityKind::Pedestrian, 0, wire::SimTier::Full,
                          wire::RepresentationHint::Actor, wire::ControlPolicy::RouteFollow, true),
                 standing(2, 1)}));
  CHECK(m.find(EntityId{1, 1})->corpse);
  CHECK_FALSE(m.find(EntityId{2, 1})->corpse);
  // The other dies while received: one change, announced to the listener.
  Recorder rec;
  t::DeltaSpec d = at_step(2);
  d.changes = {wire::EntityChange(2, wire::EntityField::Corpse, 1)};
  const auto s = apply_to_mirror(m, d, &rec);
  CHECK(s.ok());
  CHECK(s.corpses == 1);
  CHECK(s.changed == 1);
  CHECK(m.find(EntityId{2, 1})->corpse);
  CHECK(rec.events == std::vector<std::string>{"change 2 Corpse"});
  // A repeated change is nothing new; the flag is never cleared while it lives.
  t::DeltaSpec again = at_step(3);
  again.changes = {wire::EntityChange(2, wire::EntityField::Corpse, 1)};
  Recorder quiet;
  CHECK(apply_to_mirror(m, again, &quiet).corpses == 0);
  CHECK(quiet.events.empty());
  CHECK(m.counters().corpses == 1);
  // Leaving and a new identity on the index start alive.
  t::DeltaSpec gone = at_step(4);
  gone.left = {wire::EntityId(2, 1)};
  gone.entered = {standing(2, 2)};
  apply_to_mirror(m, gone);
  CHECK_FALSE(m.find(EntityId{2, 2})->corpse);
}
