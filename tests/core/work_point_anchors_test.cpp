// Work-point anchors (work_point_anchors.cpp): residents holding an anchored
// slot walk to it and stand there while their schedule keeps the slot; the
// walk is derived from digested, checkpointed state, so a restored world
// continues it with the same digests. Also: a zone with every lane closed
// defers its growth (never rejects it, never places on a closed lane).
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "commands/command_test_support.hpp"

using namespace bustle::core;

namespace {

using test::apply_one;
using test::load;
using test::make;

struct Arrivals {
  std::uint32_t holders = 0;  // slots held (anchored work-points)
  std::uint32_t arrived = 0;  // of them, standing at their slot
};

Arrivals count_arrivals(const World& w) {
  Arrivals a;
  const auto& points = w.population().work_points();
  for (std::size_t k = 0; k < points.size(); ++k) {
    for (const std::int32_t o : points[k].occupant) {
      if (o == ResidentStore::kNone) continue;
      ++a.holders;
      a.arrived += w.resident_at_anchor(static_cast<std::uint32_t>(o)) ? 1 : 0;
    }
  }
  return a;
}

// Steps until every held slot's occupant stands at it (at most max_steps).
bool step_until_all_arrived(World& w, int max_steps) {
  for (int k = 0; k < max_steps; ++k) {
    w.step();
    const Arrivals a = count_arrivals(w);
    if (a.holders > 0 && a.arrived == a.holders) return true;
  }
  return false;
}

// Every resident at its anchor stands exactly at its own slot's place, and
// no two share a place.
void require_at_own_slots(const World& w) {
  const ResidentStore& rs = w.population().residents();
  const PedestrianStore& p = w.pedestrians();
  std::set<std::pair<LaneIndex, double>> places;
  for (std::uint32_t r = 0; r < rs.size(); ++r) {
    if (!w.resident_at_anchor(r)) continue;
    const std::uint32_t row = p.dense_of[rs.id[r].index];
    REQUIRE(row != PedestrianStore::kNoSlot);
    LaneIndex lane = 0;
    double s_m = 0.0;
    REQUIRE(w.slot_anchor(static_cast<std::size_t>(rs.work_point[r]),
                          static_cast<std::uint32_t>(rs.work_slot[r]), lane, s_m));
    CHECK(p.lane[row] == lane);
    CHECK(p.s_m[row] == s_m);
    INFO("resident " << r << " shares its place");
    REQUIRE(places.emplace(lane, s_m).second);
  }
}

Scenario without_anchors(Scenario s) {
  for (WorkPointSpec& wp : s.work_points) wp.has_anchor = false;
  return s;
}

}  // namespace

TEST_CASE("largeblock at work hours: every slot holder walks to its slot and stands there") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  REQUIRE(apply_one(*w, SetHour{8.5}).status == CommandStatus::Accepted);
  // A 200 m loop at 1.3 m/s is 154 s; growth adds 2 per zone every 0.25 s.
  REQUIRE(step_until_all_arrived(*w, 3000));
  const Arrivals a = count_arrivals(*w);
  CHECK(a.holders == 72);  // 3 communities x 24 at work, 24 slots each
  REQUIRE(w->check_invariants().ok());
  require_at_own_slots(*w);
  // Each anchored work-point's slots stand 1.5 m apart from s 30 m on.
  LaneIndex lane = 0;
  double s_m = 0.0;
  REQUIRE(w->slot_anchor(0, 23, lane, s_m));
  CHECK(lane == *w->lanes().find("market.loop"));
  CHECK(s_m == Approx(30.0 + 23 * 1.5));
  // They stay while the schedule keeps the slot: no row moves.
  const std::vector<double> before = w->pedestrians().s_m;
  const std::vector<LaneIndex> lanes_before = w->pedestrians().lane;
  for (int k = 0; k < 100; ++k) w->step();
  CHECK(w->pedestrians().s_m == before);
  CHECK(w->pedestrians().lane == lanes_before);
  CHECK(count_arrivals(*w).arrived == 72);
  // QueryEntity's view agrees.
  const ResidentStore& rs = w->population().residents();
  const EntityReport e = w->describe(rs.id[0]);
  CHECK(e.work_slot >= 0);
  CHECK(e.at_work_anchor);
}

TEST_CASE("those waiting for a slot line up before the first slot and stand there") {
  // They kept walking the block (issue 30, item 9); now they gather in a line
  // before slot 0, 1.5 m apart, the first in line nearest.
  Scenario s = load("largeblock.city.json");
  s.work_points[0].slots = 4;  // the market's 24 vendors: 4 hold a slot, 20 wait
  auto w = make(s);
  REQUIRE(apply_one(*w, SetHour{8.5}).status == CommandStatus::Accepted);
  const ResidentStore& rs = w->population().residents();
  const PedestrianStore& p = w->pedestrians();
  const LaneIndex anchor_lane = *w->lanes().find("market.loop");
  const auto in_line = [&] {
    const std::vector<std::uint32_t>& waiting = w->population().work_points()[0].waiting;
    std::uint32_t placed = 0;
    for (std::size_t k = 0; k < waiting.size(); ++k) {
      const std::uint32_t row = p.dense_of[rs.id[waiting[k]].index];
      if (row == PedestrianStore::kNoSlot) continue;
      const double place = std::max(0.0, 30.0 - 1.5 * static_cast<double>(k + 1));
      placed += p.lane[row] == anchor_lane && p.s_m[row] == place;
    }
    return placed;
  };
  int steps = 0;
  while (steps < 3000 && !(in_line() == 20 && count_arrivals(*w).arrived == 52)) {
    w->step();
    ++steps;
  }
  REQUIRE(w->population().work_points()[0].waiting.size() == 20);
  CHECK(in_line() == 20);
  CHECK(count_arrivals(*w).arrived == 52);  // 4 + the other two points' 24 each
  REQUIRE(w->check_invariants().ok());
  // Waiting is not holding: QueryEntity does not say they are at their slot.
  CHECK_FALSE(w->describe(rs.id[w->population().work_points()[0].waiting[0]]).at_work_anchor);
  // They stand while they wait.
  const std::vector<double> before = p.s_m;
  for (int k = 0; k < 50; ++k) w->step();
  CHECK(in_line() == 20);
  CHECK(p.s_m == before);
}

TEST_CASE("releasing the slot lets the resident walk on") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  REQUIRE(apply_one(*w, SetHour{8.5}).status == CommandStatus::Accepted);
  REQUIRE(step_until_all_arrived(*w, 3000));
  // 18:00-22:00: vendors stroll in the office zone, no work-point.
  REQUIRE(apply_one(*w, SetHour{18.5}).status == CommandStatus::Accepted);
  for (int k = 0; k < 400; ++k) w->step();
  CHECK(count_arrivals(*w).arrived == 0);
  const ResidentStore& rs = w->population().residents();
  std::uint32_t walking = 0, moved = 0;
  std::map<std::uint32_t, double> s_before;
  for (std::uint32_t r = 0; r < rs.size(); ++r) {
    const std::uint32_t row = w->pedestrians().dense_of[rs.id[r].index];
    if (row != PedestrianStore::kNoSlot) s_before[r] = w->pedestrians().s_m[row];
  }
  w->step();
  w->step();
  for (const auto& [r, s0] : s_before) {
    const std::uint32_t row = w->pedestrians().dense_of[rs.id[r].index];
    if (row == PedestrianStore::kNoSlot) continue;
    ++walking;
    moved += w->pedestrians().s_m[row] != s0 ? 1 : 0;
  }
  REQUIRE(walking > 0);
  // Two steps move every tier but Coarse rows whose stride phase is later.
  CHECK(moved > 0);
  REQUIRE(w->check_invariants().ok());
}

TEST_CASE("without anchors slot holders keep walking (old scenarios unchanged)") {
  const Scenario s = without_anchors(load("largeblock.city.json"));
  auto w = make(s);
  REQUIRE(apply_one(*w, SetHour{8.5}).status == CommandStatus::Accepted);
  for (int k = 0; k < 1500; ++k) w->step();
  const Arrivals a = count_arrivals(*w);
  CHECK(a.holders > 0);
  CHECK(a.arrived == 0);
  LaneIndex lane = 0;
  double s_m = 0.0;
  CHECK_FALSE(w->slot_anchor(0, 0, lane, s_m));
}

TEST_CASE("a checkpoint taken mid-walk continues with the same digests") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  REQUIRE(apply_one(*w, SetHour{8.5}).status == CommandStatus::Accepted);
  for (int k = 0; k < 400; ++k) w->step();
  const Arrivals mid = count_arrivals(*w);
  REQUIRE(mid.arrived > 0);
  REQUIRE(mid.arrived < mid.holders);  // some walking, some standing
  auto back = World::restore(s, w->capture());
  REQUIRE(back.errors.empty());
  REQUIRE(back.world->digest() == w->digest());
  for (int k = 0; k < 1500; ++k) {
    w->step();
    back.world->step();
    INFO("step " << w->step_index());
    REQUIRE(back.world->digest() == w->digest());
  }
  CHECK(count_arrivals(*back.world).arrived == count_arrivals(*w).arrived);
}

TEST_CASE("anchors change the walk: the digest differs from the same city without anchors") {
  const Scenario s = load("largeblock.city.json");
  auto with = make(s);
  auto without = make(without_anchors(s));
  // While nobody holds a slot (22:00-06:00, everyone at home) both step alike.
  REQUIRE(apply_one(*with, SetHour{22.5}).status == CommandStatus::Accepted);
  REQUIRE(apply_one(*without, SetHour{22.5}).status == CommandStatus::Accepted);
  for (int k = 0; k < 50; ++k) {
    with->step();
    without->step();
  }
  CHECK(with->digest() == without->digest());
  REQUIRE(apply_one(*with, SetHour{8.5}).status == CommandStatus::Accepted);
  REQUIRE(apply_one(*without, SetHour{8.5}).status == CommandStatus::Accepted);
  for (int k = 0; k < 600; ++k) {
    with->step();
    without->step();
  }
  CHECK(with->digest() != without->digest());
}

TEST_CASE("a zone whose every lane is closed defers activation, never rejects or places") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  const LaneIndex market = *w->lanes().find("market.loop");
  REQUIRE(apply_one(*w, SetLaneClosed{"market.loop", UINT32_MAX, true}).status ==
          CommandStatus::Accepted);
  const std::size_t z = 0;  // zone "market"
  REQUIRE(s.zones[z].id == "market");
  const std::uint32_t active_at_closure = w->population().zones()[z].active;
  for (int k = 0; k < 40; ++k) {
    w->step();
    REQUIRE(w->check_invariants().ok());
    const ZoneStatus& st = w->population().zones()[z];
    CHECK(st.active <= active_at_closure);
    CHECK(st.activated == 0);
    CHECK(st.rejected_by_capacity == 0);
  }
  const ZoneStatus& st = w->population().zones()[z];
  CHECK(st.target > st.active);
  CHECK(st.deferred_by_quota > 0);
  CHECK(st.pending_spawn > 0);
  // Nobody was placed on the closed lane.
  for (std::uint32_t i = 0; i < w->pedestrians().size(); ++i) {
    if (w->pedestrians().origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Resident) &&
        w->pedestrians().lane[i] == market) {
      FAIL("a resident stands on the closed lane");
    }
  }
  // Opening it lets the zone grow again.
  REQUIRE(apply_one(*w, SetLaneClosed{"market.loop", UINT32_MAX, false}).status ==
          CommandStatus::Accepted);
  for (int k = 0; k < 10; ++k) w->step();
  CHECK(w->population().zones()[z].active > active_at_closure);
}

TEST_CASE("anchor errors name the file and the field") {
  const std::string text = [] {
    std::ifstream in(std::string(BUSTLE_SOURCE_DIR) + "/configs/largeblock.city.json");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  const auto with_anchor = [&](const std::string& anchor) {
    std::string t = text;
    const std::string from =
        R"("anchor": {"lane": "office.loop", "s_m": 30, "slot_spacing_m": 1.5})";
    const std::size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), anchor);
    return bustle::scenario::load_scenario_text(t, "city.json");
  };
  const auto single = [](const bustle::scenario::LoadResult& r, const std::string& path,
                         const std::string& fragment) {
    INFO((r.errors.empty() ? std::string("no error") : r.errors[0].to_string()));
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].source == "city.json");
    CHECK(r.errors[0].path == path);
    CHECK(r.errors[0].message.find(fragment) != std::string::npos);
    CHECK(r.errors[0].to_string().find("city.json") != std::string::npos);
  };
  single(with_anchor(R"("anchor": {"lane": "office.nowhere", "s_m": 30})"),
         "work_points[1].anchor.lane", "unknown lane 'office.nowhere'");
  single(with_anchor(R"("anchor": {"lane": "office.loop", "s_m": 500})"),
         "work_points[1].anchor.s_m", "beyond the end of lane 'office.loop' (200 m)");
  single(with_anchor(R"("anchor": {"lane": "office.loop", "s_m": 190, "slot_spacing_m": 1})"),
         "work_points[1].anchor.slot_spacing_m", "slot 23 at 213 m");
  single(with_anchor(R"("anchor": {"lane": "x.market.office", "s_m": 1})"),
         "work_points[1].anchor.lane", "is not a sidewalk");
  single(with_anchor(R"("anchor": {"lane": "market.loop", "s_m": 1})"),
         "work_points[1].anchor.lane", "is not a lane of zone 'office'");
  single(with_anchor(R"("anchor": {"lane": "office.loop", "s_m": 1, "slot_spacing_m": 0})"),
         "work_points[1].anchor.slot_spacing_m", "must be finite and > 0");
  single(with_anchor(R"("anchor": {"lane": "office.loop", "s_m": -1})"),
         "work_points[1].anchor.s_m", "must be finite and >= 0");
  single(with_anchor(R"("anchor": {"lane": "office.loop"})"), "work_points[1].anchor.s_m",
         "is required");
  single(with_anchor(R"("anchor": {"lane": "office.loop", "s_m": 1, "spot": 2})"),
         "work_points[1].anchor.spot", "unknown field");
}
