#include "bustle/client/entity_mirror.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include "support/server_frames.hpp"

using bustle::client::EntityId;
using bustle::client::EntityMirror;
using bustle::client::EntityView;
using bustle::client::MirrorListener;
using bustle::client::SlotId;
namespace t = bustle::test;
namespace wire = bustle::wire;

namespace {

// Applies a Delta built from `spec`; the payload only lives for the call.
bustle::client::ApplySummary apply(EntityMirror& m, const t::DeltaSpec& spec,
                                   MirrorListener* listener = nullptr) {
  const auto payload = t::delta_payload(spec);
  const wire::Delta* d = t::as_delta(payload);
  REQUIRE(d != nullptr);
  return m.apply(*d, listener);
}

t::DeltaSpec baseline(std::uint64_t step, std::vector<wire::EntityState> entered) {
  t::DeltaSpec d;
  d.step = step;
  d.baseline = true;
  d.entered = std::move(entered);
  return d;
}

struct Recorder : MirrorListener {
  std::vector<std::string> events;
  void on_reset() override { events.push_back("reset"); }
  void on_entered(const EntityView& v) override {
    events.push_back("enter " + std::to_string(v.id.index) + "/" + std::to_string(v.id.generation) +
                     "@" + std::to_string(v.slot.value));
  }
  void on_updated(const EntityView& v) override {
    events.push_back("update " + std::to_string(v.id.index) + "@" + std::to_string(v.slot.value));
  }
  void on_left(const EntityView& v) override {
    events.push_back("left " + std::to_string(v.id.index) + "/" + std::to_string(v.id.generation) +
                     "@" + std::to_string(v.slot.value));
  }
};

}  // namespace

TEST_CASE("EntityMirror dequantizes the wire state", "[mirror]") {
  EntityMirror m;
  apply(m, baseline(5, {t::state(3, 1, 12345, -250, 16384, 150, wire::EntityKind::Vehicle)}));
  const EntityView* v = m.find(EntityId{3, 1});
  REQUIRE(v != nullptr);
  CHECK(v->x_m == Approx(123.45));
  CHECK(v->y_m == Approx(-2.5));
  CHECK(v->heading_rad == Approx(std::numbers::pi / 2));  // a quarter turn, CCW from +x
  CHECK(v->speed_mps == Approx(1.5));
  CHECK(v->kind == wire::EntityKind::Vehicle);
  CHECK(v->entered_step == 5);
  CHECK(v->last_step == 5);
  CHECK(bustle::client::heading_q_to_rad(0) == 0.0);
  CHECK(bustle::client::heading_q_to_rad(65535) < 2 * std::numbers::pi);
  CHECK(bustle::client::heading_q_to_rad(32768) == Approx(std::numbers::pi));
}

TEST_CASE("EntityMirror applies entered, updated and left with stable slots", "[mirror]") {
  EntityMirror m;
  auto s =
      apply(m, baseline(1, {t::state(0, 1, 0, 0), t::state(1, 1, 100, 0), t::state(2, 1, 200, 0)}));
  CHECK(s.baseline);
  CHECK(s.entered == 3);
  REQUIRE(m.size() == 3);
  const SlotId slot0 = m.find(EntityId{0, 1})->slot;
  const SlotId slot1 = m.find(EntityId{1, 1})->slot;
  const SlotId slot2 = m.find(EntityId{2, 1})->slot;
  CHECK(slot0.value == 0);
  CHECK(slot1.value == 1);
  CHECK(slot2.value == 2);

  t::DeltaSpec d2;
  d2.step = 2;
  d2.updated = {t::state(1, 1, 150, 10, 0, 50)};
  d2.left = {wire::EntityId(0, 1)};
  s = apply(m, d2);
  CHECK(s.updated == 1);
  CHECK(s.left == 1);
  CHECK(m.size() == 2);
  CHECK(m.find(EntityId{0, 1}) == nullptr);
  CHECK(m.at(slot0) == nullptr);
  const EntityView* e1 = m.find(EntityId{1, 1});
  REQUIRE(e1 != nullptr);
  CHECK(e1->slot == slot1);  // an update never moves an entity
  CHECK(e1->x_m == Approx(1.5));
  CHECK(e1->last_step == 2);
  CHECK(e1->entered_step == 1);
  CHECK(m.find(EntityId{2, 1})->last_step == 1);  // untouched

  // A new entity reuses the freed slot; the others keep theirs.
  t::DeltaSpec d3;
  d3.step = 3;
  d3.entered = {t::state(7, 1, 700, 0)};
  s = apply(m, d3);
  CHECK(s.entered == 1);
  CHECK(m.find(EntityId{7, 1})->slot == slot0);
  CHECK(m.find(EntityId{1, 1})->slot == slot1);
  CHECK(m.find(EntityId{2, 1})->slot == slot2);
  CHECK(m.slot_count() == 3);

  const auto& k = m.counters();
  CHECK(k.deltas == 3);
  CHECK(k.baselines == 1);
  CHECK(k.entered == 4);
  CHECK(k.updated == 1);
  CHECK(k.left == 1);
  CHECK(m.last_step() == 3);

  std::size_t visited = 0;
  m.for_each([&](const EntityView& v) {
    CHECK(m.at(v.slot) == &v);
    ++visited;
  });
  CHECK(visited == 3);
}

TEST_CASE("EntityMirror resets on a baseline Delta", "[mirror]") {
  EntityMirror m;
  apply(m, baseline(1, {t::state(0, 1, 0, 0), t::state(1, 1, 0, 0)}));
  REQUIRE(m.size() == 2);
  Recorder rec;
  auto s = apply(m, baseline(50, {t::state(5, 2, 10, 10)}), &rec);
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
  apply(m, baseline(10, {}));
  CHECK(m.counters().steps_not_increasing == 0);
  CHECK(m.size() == 0);
}

TEST_CASE("EntityMirror accepts a restore's baseline at a lower step and continues from it",
          "[mirror][snapshots]") {
  // The stream a subscribed client sees around a restore: deltas up to step
  // 20, then a baseline of the restored world at step 10 (ids may coincide
  // with the old world's, with other states), then deltas from 11 on.
  EntityMirror m;
  apply(m, baseline(5, {t::state(0, 1, 0, 0), t::state(1, 1, 100, 0)}));
  for (std::uint64_t step = 6; step <= 20; ++step) {
    t::DeltaSpec d;
    d.step = step;
    d.updated = {t::state(0, 1, static_cast<std::int32_t>(step), 0)};
    apply(m, d);
  }
  REQUIRE(m.last_step() == 20);
  Recorder rec;
  t::DeltaSpec restored = baseline(10, {t::state(0, 1, 555, 0), t::state(7, 3, 700, 0)});
  restored.sim_time_us = 1'000'000;
  restored.digest = 0x1010;
  const auto s = apply(m, restored, &rec);
  CHECK(s.baseline);
  CHECK_FALSE(s.step_not_increasing);
  CHECK(m.counters().steps_not_increasing == 0);
  CHECK(m.last_step() == 10);
  CHECK(m.last_sim_time_us() == 1'000'000);
  CHECK(m.last_digest() == 0x1010);
  CHECK(m.size() == 2);
  CHECK(m.find(EntityId{1, 1}) == nullptr);
  REQUIRE(m.find(EntityId{0, 1}) != nullptr);
  CHECK(m.find(EntityId{0, 1})->x_m == Approx(5.55));  // the restored state, not the old one
  CHECK(m.find(EntityId{0, 1})->entered_step == 10);
  REQUIRE(m.find(EntityId{7, 3}) != nullptr);
  CHECK(rec.events.front() == "reset");

  // The stream goes on from the restored step; only a repeat is disorder.
  t::DeltaSpec next;
  next.step = 11;
  next.updated = {t::state(7, 3, 710, 0)};
  const auto s11 = apply(m, next);
  CHECK_FALSE(s11.step_not_increasing);
  CHECK(s11.updated == 1);
  CHECK(s11.unknown_updates == 0);
  CHECK(m.counters().steps_not_increasing == 0);
  CHECK(m.last_step() == 11);
  next.step = 11;
  next.updated.clear();
  CHECK(apply(m, next).step_not_increasing);
  CHECK(m.counters().steps_not_increasing == 1);
}

TEST_CASE("EntityMirror replaces an entry when its index comes back with a new generation",
          "[mirror]") {
  EntityMirror m;
  apply(m, baseline(1, {t::state(4, 1, 0, 0), t::state(5, 1, 0, 0)}));
  Recorder rec;
  t::DeltaSpec d;
  d.step = 2;
  d.entered = {t::state(4, 2, 999, 0)};
  const auto s = apply(m, d, &rec);
  CHECK(s.replaced == 1);
  CHECK(s.entered == 1);
  CHECK(m.size() == 2);
  CHECK(m.find(EntityId{4, 1}) == nullptr);
  const EntityView* v = m.find(EntityId{4, 2});
  REQUIRE(v != nullptr);
  CHECK(v->x_m == Approx(9.99));
  CHECK(v->entered_step == 2);
  CHECK(rec.events == std::vector<std::string>{"left 4/1@0", "enter 4/2@0"});
  CHECK(m.counters().replaced == 1);

  // Updates for the old generation are stale: counted, not applied.
  t::DeltaSpec stale;
  stale.step = 3;
  stale.updated = {t::state(4, 1, 5, 5)};
  stale.left = {wire::EntityId(4, 1)};
  const auto s2 = apply(m, stale);
  CHECK(s2.unknown_updates == 1);
  CHECK(s2.unknown_lefts == 1);
  CHECK(m.find(EntityId{4, 2})->x_m == Approx(9.99));
  CHECK(m.size() == 2);
}

TEST_CASE("EntityMirror resolves left-then-entered of a reused index in one Delta", "[mirror]") {
  EntityMirror m;
  apply(m, baseline(1, {t::state(4, 1, 0, 0)}));
  t::DeltaSpec d;
  d.step = 2;
  d.left = {wire::EntityId(4, 1)};
  d.entered = {t::state(4, 2, 100, 0)};
  const auto s = apply(m, d);
  CHECK(s.left == 1);
  CHECK(s.entered == 1);
  CHECK(s.replaced == 0);
  CHECK(s.unknown_lefts == 0);
  CHECK(m.find(EntityId{4, 2}) != nullptr);
}

TEST_CASE("EntityMirror counts updates and leaves for unknown ids without failing", "[mirror]") {
  EntityMirror m;
  apply(m, baseline(1, {t::state(0, 1, 0, 0)}));
  t::DeltaSpec d;
  d.step = 2;
  d.updated = {t::state(9, 1, 1, 1), t::state(0, 1, 300, 0)};
  d.left = {wire::EntityId(8, 3)};
  const auto s = apply(m, d);
  CHECK(s.unknown_updates == 1);
  CHECK(s.unknown_lefts == 1);
  CHECK(s.updated == 1);
  CHECK(m.size() == 1);
  CHECK(m.find(EntityId{9, 1}) == nullptr);
  CHECK(m.counters().unknown_updates == 1);
  CHECK(m.counters().unknown_lefts == 1);
}

TEST_CASE("EntityMirror treats a duplicate enter as a state write", "[mirror]") {
  EntityMirror m;
  apply(m, baseline(1, {t::state(0, 1, 0, 0)}));
  t::DeltaSpec d;
  d.step = 2;
  d.entered = {t::state(0, 1, 500, 0)};
  const auto s = apply(m, d);
  CHECK(s.duplicate_enters == 1);
  CHECK(s.entered == 0);
  CHECK(m.size() == 1);
  CHECK(m.find(EntityId{0, 1})->slot.value == 0);
  CHECK(m.find(EntityId{0, 1})->x_m == Approx(5.0));
  CHECK(m.find(EntityId{0, 1})->entered_step == 1);
}

TEST_CASE("EntityMirror counts steps that do not increase", "[mirror]") {
  EntityMirror m;
  apply(m, baseline(10, {}));
  t::DeltaSpec d;
  d.step = 10;
  CHECK(apply(m, d).step_not_increasing);
  d.step = 11;
  CHECK_FALSE(apply(m, d).step_not_increasing);
  CHECK(m.counters().steps_not_increasing == 1);
}

TEST_CASE("EntityMirror stops at its capacity and counts the overflow", "[mirror]") {
  EntityMirror m(2);
  const auto s =
      apply(m, baseline(1, {t::state(0, 1, 0, 0), t::state(1, 1, 0, 0), t::state(2, 1, 0, 0)}));
  CHECK(s.entered == 2);
  CHECK(s.rejected_full == 1);
  CHECK(m.size() == 2);
  CHECK(m.find(EntityId{2, 1}) == nullptr);
  // After a leave there is room again.
  t::DeltaSpec d;
  d.step = 2;
  d.left = {wire::EntityId(0, 1)};
  d.entered = {t::state(2, 1, 0, 0)};
  const auto s2 = apply(m, d);
  CHECK(s2.entered == 1);
  CHECK(s2.rejected_full == 0);
  CHECK(m.find(EntityId{2, 1}) != nullptr);
}

TEST_CASE("EntityMirror slots stay consistent through a seeded random history", "[mirror]") {
  // A small model-based check: a reference map of live ids against the
  // mirror, over many random deltas with enters, updates, leaves and reuse.
  EntityMirror m;
  std::map<std::uint32_t, std::pair<std::uint32_t, std::int32_t>> model;  // index -> (gen, x)
  std::map<std::uint32_t, std::uint32_t> slot_of;                         // index -> slot
  std::uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&](std::uint32_t bound) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return static_cast<std::uint32_t>(rng % bound);
  };
  apply(m, baseline(1, {}));
  for (std::uint64_t step = 2; step < 400; ++step) {
    t::DeltaSpec d;
    d.step = step;
    std::set<std::uint32_t> touched;
    for (int i = 0; i < 4; ++i) {
      const std::uint32_t index = next(32);
      if (touched.count(index)) continue;
      touched.insert(index);
      auto it = model.find(index);
      if (it == model.end()) {
        const std::uint32_t gen = next(3) + 1;
        const auto x = static_cast<std::int32_t>(next(10000));
        d.entered.push_back(t::state(index, gen, x, 0));
        model[index] = {gen, x};
      } else if (next(2) == 0) {
        d.left.emplace_back(index, it->second.first);
        model.erase(it);
        slot_of.erase(index);
      } else {
        const auto x = static_cast<std::int32_t>(next(10000));
        d.updated.push_back(t::state(index, it->second.first, x, 0));
        it->second.second = x;
      }
    }
    const auto s = apply(m, d);
    REQUIRE(s.unknown_updates == 0);
    REQUIRE(s.unknown_lefts == 0);
    REQUIRE(m.size() == model.size());
    for (const auto& [index, gx] : model) {
      const EntityView* v = m.find(EntityId{index, gx.first});
      REQUIRE(v != nullptr);
      REQUIRE(v->x_m == Approx(gx.second / 100.0));
      auto [sit, inserted] = slot_of.emplace(index, v->slot.value);
      if (!inserted) REQUIRE(sit->second == v->slot.value);  // slot stable for life
    }
  }
  CHECK(m.slot_count() <= 32);
}
