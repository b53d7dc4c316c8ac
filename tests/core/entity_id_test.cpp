#include "bustle/core/entity_id.hpp"

#include <catch2/catch.hpp>

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
