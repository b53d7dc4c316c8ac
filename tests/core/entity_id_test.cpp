#include "bustle/core/entity_id.hpp"

#include <catch2/catch.hpp>

#include "bustle/core/column_copies.hpp"
#include "bustle/core/prng.hpp"

using bustle::core::AllocateStatus;
using bustle::core::EntityId;
using bustle::core::EntityRegistry;
using bustle::core::ReleaseStatus;

TEST_CASE("fresh slots are issued in index order with generation 1") {
  EntityRegistry reg(4);
  for (std::uint32_t i = 0; i < 4; ++i) {
    const auto a = reg.allocate();
    REQUIRE(a.status == AllocateStatus::Allocated);
    CHECK(a.id.index == i);
    CHECK(a.id.generation == 1);
  }
  CHECK(reg.allocate().status == AllocateStatus::CapacityExhausted);
  CHECK(reg.alive_count() == 4);
}

TEST_CASE("released slots go to the back of the FIFO and are reused as late as possible") {
  EntityRegistry reg(4);
  const EntityId a = reg.allocate().id;  // 0
  const EntityId b = reg.allocate().id;  // 1
  REQUIRE(reg.release(b) == ReleaseStatus::Released);
  REQUIRE(reg.release(a) == ReleaseStatus::Released);
  // Never-used slots 2 and 3 come first, then 1 (released first), then 0.
  CHECK(reg.allocate().id == EntityId{2, 1});
  CHECK(reg.allocate().id == EntityId{3, 1});
  CHECK(reg.allocate().id == EntityId{1, 2});
  CHECK(reg.allocate().id == EntityId{0, 2});
}

TEST_CASE("stale handles are detected after release and reuse") {
  EntityRegistry reg(1);
  const EntityId first = reg.allocate().id;
  REQUIRE(reg.is_alive(first));
  REQUIRE(reg.release(first) == ReleaseStatus::Released);
  CHECK_FALSE(reg.is_alive(first));
  CHECK(reg.release(first) == ReleaseStatus::StaleHandle);
  const EntityId second = reg.allocate().id;
  CHECK(second.index == first.index);
  CHECK(second.generation == first.generation + 1);
  CHECK(reg.is_alive(second));
  CHECK_FALSE(reg.is_alive(first));
  CHECK(reg.release(EntityId{7, 1}) == ReleaseStatus::OutOfRange);
  CHECK_FALSE(reg.is_alive(EntityId{}));
}

TEST_CASE("incremental registry digest equals the from-scratch reference") {
  EntityRegistry reg(64);
  bustle::core::Prng rng(99);
  std::vector<EntityId> live;
  REQUIRE(reg.state_digest() == reg.recompute_state_digest());
  for (int op = 0; op < 5000; ++op) {
    if (live.empty() || (rng.next_below(3) != 0 && live.size() < 64)) {
      const auto a = reg.allocate();
      if (a.status == AllocateStatus::Allocated) live.push_back(a.id);
    } else {
      const std::size_t k = rng.next_below(static_cast<std::uint32_t>(live.size()));
      REQUIRE(reg.release(live[k]) == ReleaseStatus::Released);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
    REQUIRE(reg.state_digest() == reg.recompute_state_digest());
  }
}

TEST_CASE("registry digest depends on state, not on history") {
  // Two histories reaching the same generations, liveness and FIFO order.
  EntityRegistry a(3);
  EntityRegistry b(3);
  const EntityId a0 = a.allocate().id;
  REQUIRE(a.release(a0) == ReleaseStatus::Released);  // FIFO: 1 2 0, gen[0]=2
  const EntityId b0 = b.allocate().id;
  REQUIRE(b.release(b0) == ReleaseStatus::Released);
  CHECK(a.state_digest() == b.state_digest());
  // A different FIFO order must give a different digest.
  EntityRegistry c(3);
  const EntityId c0 = c.allocate().id;
  const EntityId c1 = c.allocate().id;
  REQUIRE(c.release(c1) == ReleaseStatus::Released);
  REQUIRE(c.release(c0) == ReleaseStatus::Released);
  EntityRegistry d(3);
  const EntityId d0 = d.allocate().id;
  const EntityId d1 = d.allocate().id;
  REQUIRE(d.release(d0) == ReleaseStatus::Released);
  REQUIRE(d.release(d1) == ReleaseStatus::Released);
  CHECK(c.state_digest() != d.state_digest());
}

TEST_CASE("a district's registry issues its own range; the rest starts away") {
  EntityRegistry reg(8, 4, 6);
  CHECK(reg.free_count() == 2);
  CHECK(reg.away_count() == 6);
  CHECK(reg.allocate().id == EntityId{4, 1});
  CHECK(reg.allocate().id == EntityId{5, 1});
  CHECK(reg.allocate().status == AllocateStatus::CapacityExhausted);
  CHECK(reg.slot_away(0));
  CHECK_FALSE(reg.slot_away(4));
  CHECK(reg.check_invariants().ok());
  CHECK(reg.state_digest() == reg.recompute_state_digest());
}

TEST_CASE("an id departs and is adopted with its generation; a release stays where it happens") {
  EntityRegistry home(4, 0, 2), next(4, 2, 4);
  const EntityId id = home.allocate().id;  // 0:1
  REQUIRE(home.release(id) == ReleaseStatus::Released);
  home.allocate();                             // 1:1
  const EntityId walker = home.allocate().id;  // 0:2
  REQUIRE(walker == EntityId{0, 2});
  CHECK_FALSE(next.adopt(EntityId{2, 1}));   // not away there: its own free slot
  CHECK_FALSE(home.depart(EntityId{0, 1}));  // stale
  REQUIRE(home.depart(walker));
  CHECK_FALSE(home.is_alive(walker));
  CHECK(home.slot_away(0));
  REQUIRE(next.adopt(walker));
  CHECK_FALSE(next.adopt(walker));  // once
  CHECK(next.is_alive(walker));
  // Released in the district it died in: that district's FIFO issues it next.
  REQUIRE(next.release(walker) == ReleaseStatus::Released);
  next.allocate();
  next.allocate();
  CHECK(next.allocate().id == EntityId{0, 3});
  CHECK(home.allocate().status == AllocateStatus::CapacityExhausted);
  for (const EntityRegistry* r : {&home, &next}) {
    CHECK(r->check_invariants().ok());
    CHECK(r->state_digest() == r->recompute_state_digest());
  }
}

TEST_CASE("a district registry's state, away slots included, survives export and import") {
  EntityRegistry reg(6, 0, 3);
  const EntityId a = reg.allocate().id;
  reg.allocate();
  REQUIRE(reg.depart(a));
  REQUIRE(reg.adopt(EntityId{4, 9}));
  std::vector<std::uint32_t> generation, fifo;
  std::vector<std::uint8_t> alive;
  std::uint64_t pop_seq = 0;
  bustle::core::ColumnCopies copies;
  reg.export_state(generation, alive, fifo, pop_seq, copies);
  bustle::core::InlineExecutor inline_executor;
  copies.run(inline_executor);
  EntityRegistry back(6);
  REQUIRE(back.import_state(generation, alive, fifo, pop_seq).ok());
  CHECK(back.state_digest() == reg.state_digest());
  CHECK(back.away_count() == reg.away_count());
  CHECK(back.is_alive(EntityId{4, 9}));
  alive[5] = 3;
  CHECK(back.import_state(generation, alive, fifo, pop_seq).message().find("alive[5]") == 0);
}

TEST_CASE("an id released away from home goes away with its next generation; home queues it") {
  EntityRegistry home(4, 0, 2), there(4, 2, 4);
  const EntityId id = home.allocate().id;  // 0:1
  REQUIRE(home.depart(id));
  REQUIRE(there.adopt(id));
  CHECK(there.release_away(EntityId{0, 7}) == 0);  // stale: nothing changes
  const std::uint32_t next = there.release_away(id);
  CHECK(next == 2);
  CHECK(there.slot_away(0));
  CHECK(there.free_count() == 2);                // not queued there
  CHECK_FALSE(there.take_home(EntityId{2, 1}));  // not away
  REQUIRE(home.take_home(EntityId{0, next}));
  CHECK_FALSE(home.take_home(EntityId{0, next}));  // once
  home.allocate();                                 // 1:1
  CHECK(home.allocate().id == EntityId{0, 2});     // back of home's FIFO
  for (const EntityRegistry* r : {&home, &there}) {
    CHECK(r->check_invariants().ok());
    CHECK(r->state_digest() == r->recompute_state_digest());
  }
}
