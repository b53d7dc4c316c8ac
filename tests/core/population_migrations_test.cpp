// Per-resident migrations (PopulationSystem::migration_of, seed 001's HUD:
// migration count and last portal): every zone change of a resident is
// counted with the zone it left, whether a dormant record was handed over or
// an active member's handoff completed; digested, checkpointed, validated.
#include <catch2/catch.hpp>
#include <map>

#include "bustle/core/world.hpp"
#include "commands/command_test_support.hpp"

using namespace bustle::core;

namespace {

using test::make;

Scenario largeblock() {
  return test::load("largeblock.city.json");
}

// What an observer outside the core sees: each resident's zone after every
// step, its changes counted and the zone it left last.
struct Watched {
  std::uint32_t count = 0;
  std::uint32_t last_from = 0;
};

void watch(const World& w, std::vector<std::uint32_t>& zone_before,
           std::map<std::uint32_t, Watched>& seen) {
  const ResidentStore& rs = w.population().residents();
  for (std::uint32_t i = 0; i < rs.size(); ++i) {
    if (rs.zone[i] != zone_before[i]) {
      Watched& m = seen[i];
      ++m.count;
      m.last_from = zone_before[i];
      zone_before[i] = rs.zone[i];
    }
  }
}

}  // namespace

TEST_CASE(
    "each resident's migrations count its zone changes and name the zone it left last; "
    "checkpointed with the same digest chain") {
  const Scenario s = largeblock();
  auto w = make(s);
  std::vector<std::uint32_t> zone_before = w->population().residents().zone;
  std::map<std::uint32_t, Watched> seen;
  CHECK(w->population().migrations().empty());  // nobody moved yet
  // 12:30 and then 18:30: the large block's schedules move every community
  // between zones twice (office workers to the market and back, maintenance
  // to the office and on to the market), by handovers of dormant records and
  // handoffs of walkers.
  REQUIRE(w->submit({{1, 1}, SetHour{12.5}}) == SubmitStatus::Queued);
  for (int k = 0; k < 600; ++k) {
    w->step();
    watch(*w, zone_before, seen);
  }
  REQUIRE(w->submit({{1, 2}, SetHour{18.5}}) == SubmitStatus::Queued);
  for (int k = 0; k < 600; ++k) {
    w->step();
    watch(*w, zone_before, seen);
  }
  REQUIRE(seen.size() > 10);
  bool some_twice = false;
  for (const auto& [resident, m] : seen) {
    INFO("resident " << resident);
    const ResidentMigration* rec = w->population().migration_of(resident);
    REQUIRE(rec != nullptr);
    CHECK(rec->count == m.count);
    CHECK(rec->last_portal == m.last_from);
    some_twice |= m.count >= 2;
    const EntityReport e = w->describe(w->population().residents().id[resident]);
    CHECK(e.migrations == m.count);
    CHECK(e.last_portal == static_cast<std::int32_t>(m.last_from));
  }
  CHECK(some_twice);
  CHECK(w->population().migrations().size() == seen.size());  // nobody else has a record

  // Checkpoint round trip: the records come back and the digests agree.
  const WorldCheckpoint cp = w->capture();
  CHECK(cp.population.migrations == w->population().migrations());
  auto back = World::restore(s, cp);
  REQUIRE(back.world);
  CHECK(back.world->population().migrations() == w->population().migrations());
  for (int k = 0; k < 50; ++k) {
    w->step();
    back.world->step();
    REQUIRE(back.world->digest() == w->digest());
  }

  // The records are state: with a count changed, the state no longer hashes
  // to the checkpoint's digest.
  {
    WorldCheckpoint other = w->capture();
    ++other.population.migrations.front().count;
    auto changed = World::restore(s, other);
    CHECK_FALSE(changed.world);
    REQUIRE_FALSE(changed.errors.empty());
    CHECK(changed.errors[0].path == "digest");
  }
}

TEST_CASE("bad migration records in a checkpoint are refused by their path") {
  const Scenario s = largeblock();
  auto w = make(s);
  for (int k = 0; k < 10; ++k) w->step();
  const auto refused = [&](void (*spoil)(WorldCheckpoint&), const std::string& path) {
    WorldCheckpoint cp = w->capture();
    spoil(cp);
    const auto r = World::restore(s, cp);
    CHECK_FALSE(r.world);
    REQUIRE_FALSE(r.errors.empty());
    bool named = false;
    for (const auto& e : r.errors) named |= e.path.find(path) != std::string::npos;
    INFO(r.errors[0].path << ": " << r.errors[0].message);
    CHECK(named);
  };
  refused(
      [](WorldCheckpoint& cp) {
        cp.population.migrations = {{5, 1, 0}, {3, 1, 0}};
      },
      "migrations[1].resident");
  refused(
      [](WorldCheckpoint& cp) {
        cp.population.migrations = {{5, 0, 0}};
      },
      "migrations[0].count");
  refused(
      [](WorldCheckpoint& cp) {
        cp.population.migrations = {{5, 1, 999}};
      },
      "migrations[0].last_portal");
  refused(
      [](WorldCheckpoint& cp) {
        cp.population.migrations = {{99999, 1, 0}};
      },
      "migrations[0].resident");
}
