// Delta captures (issue 17; row_write_stamps.hpp, World::capture_into): a
// capture into a recycled checkpoint copies only the rows written since that
// checkpoint's last capture, and must still hold exactly what a fresh full
// capture holds, at every capture, whatever happened in between: spawns and
// despawns (swap-removes), lane hops, routes, tier changes, residents waking,
// sleeping, retiring and changing zone, lane closures, kills and response
// units. Checkpoints rotate through three buffers at irregular intervals (as
// the persistence worker's spares do, moved between owners), and a restore
// starts a new world that must not trust any buffer stamped by the old one.
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "bustle/core/prng.hpp"
#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "commands/command_test_support.hpp"

using namespace bustle::core;

namespace {

// A city where every stamped column keeps changing: 3 000 walkers (a dozen
// 256-row chunks), 2 400 residents on a fast clock (the schedule's zones and
// work-points change within the run), tight tier caps, response units.
Scenario churning_city() {
  Scenario s = test::load("largeblock.city.json");
  s.id = "test.capture-delta";
  s.entity_capacity = 8192;
  s.pedestrians.count = 3000;
  s.pedestrians.spawn_per_step_max = 16;
  for (CommunitySpec& c : s.communities) c.base_population = 800;
  for (ZoneSpec& z : s.zones) z.capacity = 1600;
  s.population.time_scale = 900;  // 25 game hours in 1 000 steps of 100 ms
  s.population.growth_quota = 60;
  s.population.recycle_quota = 60;
  s.tiers.full_cap = 300;
  s.tiers.simulated_cap = 1000;
  s.tiers.hard_full_cap = std::max(s.tiers.hard_full_cap, s.tiers.full_cap);
  s.tiers.transitions_per_step = 40;
  test::enable_response_units(s);
  return s;
}

// The first field where a and b differ ("" when none): every column a
// capture copies in row chunks or derives, then the rest that matters here.
std::string first_difference(const WorldCheckpoint& a, const WorldCheckpoint& b) {
  const PedestrianState& p = a.pedestrians;
  const PedestrianState& q = b.pedestrians;
  const ResidentStore& r = a.population.residents;
  const ResidentStore& t = b.population.residents;
  const std::pair<const char*, bool> fields[] = {
      {"step_index", a.step_index == b.step_index},
      {"digest", a.digest == b.digest},
      {"registry.generation", a.registry.generation == b.registry.generation},
      {"registry.alive", a.registry.alive == b.registry.alive},
      {"registry.free_fifo", a.registry.free_fifo == b.registry.free_fifo},
      {"registry.pop_seq", a.registry.pop_seq == b.registry.pop_seq},
      {"pedestrians.id", p.id == q.id},
      {"pedestrians.lane", p.lane == q.lane},
      {"pedestrians.s_m", p.s_m == q.s_m},
      {"pedestrians.hops", p.hops == q.hops},
      {"pedestrians.resident", p.resident == q.resident},
      {"pedestrians.sim_tier", p.sim_tier == q.sim_tier},
      {"pedestrians.catch_up_steps", p.catch_up_steps == q.catch_up_steps},
      {"pedestrians.priority", p.priority == q.priority},
      {"pedestrians.origin", p.origin == q.origin},
      {"pedestrians.route", p.route == q.route},
      {"residents.id", r.id == t.id},
      {"residents.community", r.community == t.community},
      {"residents.profession", r.profession == t.profession},
      {"residents.zone", r.zone == t.zone},
      {"residents.active", r.active == t.active},
      {"residents.work_point", r.work_point == t.work_point},
      {"residents.work_slot", r.work_slot == t.work_slot},
      {"population.zones", a.population.zones == b.population.zones},
      {"population.handoffs", a.population.handoffs == b.population.handoffs},
      {"closed_lanes", a.closed_lanes == b.closed_lanes},
      {"lane_waiters", a.lane_waiters == b.lane_waiters},
      {"forced_full", a.forced_full == b.forced_full},
      {"retiring_fifo", a.retiring_fifo == b.retiring_fifo},
      {"routes.count", a.routes.count == b.routes.count},
      {"vehicles.store.id", a.vehicles.store.id == b.vehicles.store.id},
  };
  for (const auto& [name, same] : fields) {
    if (!same) return name;
  }
  return "";
}

// The bytes a capture into `into` would copy, and all of them.
std::pair<std::size_t, std::size_t> copied_of_total(const World& w, const WorldCheckpoint& into) {
  std::size_t copied = 0, total = 0;
  for (const CaptureColumnBytes& c : w.capture_bytes(into)) {
    copied += c.copied;
    total += c.bytes;
  }
  return {copied, total};
}

// Seeded churn: commands of every kind that writes a stamped column.
void submit_churn(World& w, Prng& rng, std::uint32_t& request) {
  auto send = [&](WorldCommand c) { (void)w.submit({CommandOrigin{1, ++request}, std::move(c)}); };
  const std::uint32_t n = w.pedestrians().size();
  auto any_walker = [&] { return w.pedestrians().id[rng.next_below(n)]; };
  switch (rng.next_below(10)) {
    case 0:
      if (n > 0) send(DespawnEntity{any_walker()});
      break;
    case 1:
      send(SpawnPedestrian{"", "market.loop", 1, 0, {"market.loop", "x.market.office"}});
      break;
    case 2:
      send(SetPedestrianTarget{rng.next_below(2) == 0 ? 2600u : 3400u});
      break;
    case 3: {
      static const char* const kLanes[] = {"x.market.office", "office.loop", "x.office.facilities"};
      send(SetLaneClosed{kLanes[rng.next_below(3)], UINT32_MAX, rng.next_below(2) == 0});
      break;
    }
    case 4:
      if (n > 0) send(ForceFull{any_walker(), rng.next_below(2) == 0});
      break;
    case 5:
      if (n > 0) send(KillPedestrian{any_walker()});
      break;
    case 6:
      send(SetPreventionLevel{rng.next_below(3)});
      break;
    default:
      break;  // quiet step
  }
}

}  // namespace

TEST_CASE(
    "captures into recycled checkpoints, rotating at irregular intervals and across a restore, "
    "equal a fresh full capture every time") {
  const Scenario s = churning_city();
  auto created = World::create(s, 17);
  INFO((created.errors.empty() ? std::string()
                               : created.errors[0].path + ": " + created.errors[0].message));
  REQUIRE(created.world);
  std::unique_ptr<World> w = std::move(created.world);
  // Three spares, prepared as the persistence worker prepares them.
  std::unique_ptr<WorldCheckpoint> spares[3];
  for (auto& spare : spares) {
    spare = std::make_unique<WorldCheckpoint>();
    reserve_for_capture(*spare, s.entity_capacity);
  }
  Prng rng(99);
  std::uint32_t request = 0;
  std::size_t captures = 0, delta_captures = 0, restores = 0;
  std::size_t bytes_copied = 0, bytes_total = 0;
  bool saw_resident_walking = false, saw_route = false, saw_closure = false, saw_corpse = false;
  std::uint64_t next_capture = 3;
  const std::uint64_t kSteps = 1100;
  while (w->step_index() < kSteps) {
    submit_churn(*w, rng, request);
    w->step();
    if (w->step_index() < next_capture) continue;
    // Irregular gaps: sometimes back to back, sometimes a few dozen steps.
    next_capture = w->step_index() + (rng.next_below(4) == 0 ? 1 : 1 + rng.next_below(40));
    const std::size_t k = rng.next_below(5) == 0 ? rng.next_below(3) : captures % 3;
    WorldCheckpoint& buffer = *spares[k];
    const auto [copied, total] = copied_of_total(*w, buffer);
    w->capture_into(buffer);
    const WorldCheckpoint full = w->capture();
    INFO("step " << w->step_index() << ", capture " << captures << " into spare " << k);
    REQUIRE(first_difference(buffer, full) == "");
    ++captures;
    delta_captures += copied < total;
    bytes_copied += copied;
    bytes_total += total;
    saw_closure |= !full.closed_lanes.empty();
    saw_corpse |= !full.prevention.corpses.empty();
    for (std::size_t i = 0; i < full.pedestrians.id.size(); ++i) {
      saw_resident_walking |= full.pedestrians.resident[i] != PedestrianStore::kNoResident;
      saw_route |= full.pedestrians.route[i] != kNoRoute;
    }
    // Handed to the writer and back: a move to a new owner keeps the stamp
    // and the columns together.
    spares[k] = std::make_unique<WorldCheckpoint>(std::move(buffer));
    // Now and then the world is replaced by a restore of one capture: the
    // spares hold the old world's captures and must be filled whole.
    if (captures % 9 == 0) {
      auto restored = World::restore(s, full);
      INFO((restored.errors.empty() ? std::string() : restored.errors[0].path));
      REQUIRE(restored.world);
      w = std::move(restored.world);
      ++restores;
      for (auto& spare : spares) {
        const auto [after_copied, after_total] = copied_of_total(*w, *spare);
        CHECK(after_copied == after_total);
      }
    }
  }
  INFO(captures << " captures, " << delta_captures << " copied less than everything, " << restores
                << " restores, " << bytes_copied << " of " << bytes_total << " bytes copied");
  CHECK(captures >= 60);
  CHECK(restores >= 5);
  // The delta path ran (a capture that copied less than everything).
  CHECK(delta_captures >= captures / 4);
  CHECK(bytes_copied < bytes_total);
  // Every kind of row write happened at some capture.
  CHECK(saw_resident_walking);
  CHECK(saw_route);
  CHECK(saw_closure);
  CHECK(saw_corpse);
  CHECK(w->counters().despawned_total > 100);
  CHECK(w->check_invariants().ok());
}

TEST_CASE("a moved-from or reserved checkpoint holds no capture, a copy holds the same one") {
  const Scenario s = churning_city();
  auto created = World::create(s, 3);
  REQUIRE(created.world);
  World& w = *created.world;
  for (int k = 0; k < 30; ++k) w.step();
  WorldCheckpoint a;
  w.capture_into(a);
  REQUIRE(a.capture_stamp.lineage != 0);
  WorldCheckpoint copy = a;  // the same columns: the same capture
  CHECK(copy.capture_stamp.lineage == a.capture_stamp.lineage);
  CHECK(copy.capture_stamp.epoch == a.capture_stamp.epoch);
  WorldCheckpoint moved = std::move(a);
  CHECK(moved.capture_stamp.epoch == copy.capture_stamp.epoch);
  CHECK(a.capture_stamp.lineage == 0);  // NOLINT(bugprone-use-after-move): the point of the test
  // The moved-from checkpoint's columns are gone; a capture into it is whole.
  w.step();
  const auto [copied, total] = copied_of_total(w, a);
  CHECK(copied == total);
  w.capture_into(a);
  CHECK(first_difference(a, w.capture()) == "");
  reserve_for_capture(moved, s.entity_capacity);
  CHECK(moved.capture_stamp.lineage == 0);
  // Another world of the same scenario and seed never matches the stamp.
  auto twin = World::create(s, 3);
  REQUIRE(twin.world);
  const auto [twin_copied, twin_total] = copied_of_total(*twin.world, copy);
  CHECK(twin_copied == twin_total);
}
