// DenseInstanceIndex (instance_index.hpp): slot <-> dense instance index with
// swap-remove, the bookkeeping of an instanced-mesh backend.
#include "bustle/client/instance_index.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

namespace c = bustle::client;

namespace {
c::SlotId slot(std::uint32_t v) {
  return c::SlotId{v};
}

// Invariant 1 over the whole index.
void check_consistent(const c::DenseInstanceIndex& index) {
  for (std::uint32_t i = 0; i < index.size(); ++i) {
    const c::SlotId s = index.slot_at(i);
    REQUIRE(s.valid());
    REQUIRE(index.index_of(s) == i);
  }
  CHECK_FALSE(index.slot_at(static_cast<std::uint32_t>(index.size())).valid());
}
}  // namespace

TEST_CASE("Indices are dense in arrival order; a repeated add is a retry", "[instance_index]") {
  c::DenseInstanceIndex index;
  CHECK(index.add(slot(7)) == 0);
  CHECK(index.add(slot(2)) == 1);
  CHECK(index.add(slot(40)) == 2);
  CHECK(index.add(slot(2)) == 1);  // already held: same index, nothing added
  CHECK(index.size() == 3);
  CHECK(index.index_of(slot(3)) == c::DenseInstanceIndex::kNoIndex);
  CHECK(index.index_of(c::SlotId{}) == c::DenseInstanceIndex::kNoIndex);
  check_consistent(index);
}

TEST_CASE("Removing a middle slot moves the last instance into its index", "[instance_index]") {
  c::DenseInstanceIndex index;
  for (std::uint32_t s : {10u, 11u, 12u, 13u}) index.add(slot(s));
  const auto r = index.remove(slot(11));
  REQUIRE(r.has_value());
  CHECK(r->removed_index == 1);
  CHECK(r->last_index == 3);
  CHECK(r->moved == slot(13));
  CHECK(index.index_of(slot(13)) == 1);  // took the freed index
  CHECK(index.index_of(slot(10)) == 0);  // untouched
  CHECK(index.index_of(slot(12)) == 2);  // untouched
  CHECK_FALSE(index.contains(slot(11)));
  CHECK(index.size() == 3);
  check_consistent(index);
}

TEST_CASE("Removing the last slot moves nothing; removing an absent slot changes nothing",
          "[instance_index]") {
  c::DenseInstanceIndex index;
  index.add(slot(1));
  index.add(slot(2));
  const auto r = index.remove(slot(2));
  REQUIRE(r.has_value());
  CHECK(r->removed_index == 1);
  CHECK(r->last_index == 1);
  CHECK_FALSE(r->moved.valid());
  CHECK_FALSE(index.remove(slot(2)).has_value());
  CHECK_FALSE(index.remove(slot(99)).has_value());
  CHECK(index.size() == 1);
  // A freed slot gets a fresh index at the end when it comes back.
  CHECK(index.add(slot(2)) == 1);
  index.clear();
  CHECK(index.empty());
  CHECK_FALSE(index.contains(slot(1)));
}

TEST_CASE("Replaying removals on a mirror array keeps every slot at its own instance",
          "[instance_index]") {
  // The engine side of the contract: an array of per-instance values (the
  // slot each instance draws) updated only by "copy last into removed, delete
  // last" must always agree with the index.
  c::DenseInstanceIndex index;
  std::vector<std::uint32_t> instances;  // what the engine holds, by instance index
  std::mt19937 rng(12345u);
  std::vector<std::uint32_t> live;
  for (int step = 0; step < 5000; ++step) {
    const bool add = live.empty() || (rng() % 3 != 0 && live.size() < 300);
    if (add) {
      const auto s = static_cast<std::uint32_t>(rng() % 1000);
      if (std::find(live.begin(), live.end(), s) != live.end()) continue;
      const std::uint32_t i = index.add(slot(s));
      REQUIRE(i == instances.size());
      instances.push_back(s);
      live.push_back(s);
    } else {
      const std::size_t k = static_cast<std::size_t>(rng()) % live.size();
      const std::uint32_t s = live[k];
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      const auto r = index.remove(slot(s));
      REQUIRE(r.has_value());
      REQUIRE(r->last_index == instances.size() - 1);
      if (r->moved.valid()) instances[r->removed_index] = instances[r->last_index];
      instances.pop_back();
    }
    REQUIRE(index.size() == instances.size());
  }
  for (std::uint32_t i = 0; i < instances.size(); ++i)
    REQUIRE(index.slot_at(i) == slot(instances[i]));
  check_consistent(index);
}
