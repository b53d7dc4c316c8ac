// SetAdmissionMask (commands/set_admission_mask.cpp): the admission mask holds
// a walking pedestrian's movement and nothing else. Its tier is still
// resolved, it is digested and checkpointed, bad targets are refused with a
// clear error, and the mask ends when the pedestrian leaves its lane.
#include <catch2/catch.hpp>

#include "bustle/core/world.hpp"
#include "command_test_support.hpp"

using namespace bustle::core;

namespace {

using test::apply_one;
using test::load;
using test::make;

// The walking pedestrians, lowest EntityId first.
std::vector<EntityId> walkers(const World& w) {
  std::vector<EntityId> ids(w.pedestrians().id.begin(), w.pedestrians().id.end());
  std::sort(ids.begin(), ids.end());
  return ids;
}

struct Place {
  std::int32_t lane;
  double s_m;
  bool operator==(const Place&) const = default;
};
Place place(const World& w, EntityId id) {
  return {w.describe(id).lane, w.describe(id).s_m};
}

}  // namespace

TEST_CASE("a masked pedestrian stays put while the others walk; digested and checkpointed") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  for (int k = 0; k < 40; ++k) w->step();
  const std::vector<EntityId> ids = walkers(*w);
  REQUIRE(ids.size() >= 2);
  const EntityId held = ids[0], other = ids[1];
  auto twin = World::restore(s, w->capture());
  REQUIRE(twin.world);

  const CommandResult ok = apply_one(*w, SetAdmissionMask{held, true});
  INFO(ok.message);
  REQUIRE(ok.status == CommandStatus::Accepted);
  twin.world->step();  // the same step without the mask
  CHECK(w->digest() != twin.world->digest());
  CHECK(w->admission_masked() == std::vector<EntityId>{held});
  CHECK(w->describe(held).admission_masked);
  CHECK_FALSE(w->describe(other).admission_masked);

  const Place at = place(*w, held), other_at = place(*w, other);
  // The movement phase's own count of the rows it ran must be those due by
  // tier and id phase less the masked one, counted here just before it runs.
  struct DueCounter final : StepPhaseHook {
    const World* w = nullptr;
    EntityId held;
    std::uint32_t due = 0;
    void phase_end(StepPhase phase) override {
      if (phase != StepPhase::Vehicles) return;  // phase 6 comes next
      const PedestrianStore& p = w->pedestrians();
      due = 0;
      for (std::uint32_t i = 0; i < p.size(); ++i)
        due += tier_due(w->step_index(), p.id[i], p.sim_tier[i]) && p.id[i] != held;
    }
  } counter;
  counter.w = w.get();
  counter.held = held;
  w->set_phase_hook(&counter);
  for (int k = 0; k < 30; ++k) {
    w->step();
    REQUIRE(w->check_invariants().ok());
    CHECK(w->pedestrians_due_last_step() == counter.due);
    CHECK(counter.due > 0);
  }
  w->set_phase_hook(nullptr);
  CHECK(place(*w, held) == at);               // not advanced in 30 steps, in any tier
  CHECK_FALSE(place(*w, other) == other_at);  // the neighbour walked on
  CHECK(w->describe(held).lifecycle == LifecycleState::Active);

  // Checkpoint round trip: the mask continues with the same digest chain.
  auto back = World::restore(s, w->capture());
  REQUIRE(back.world);
  CHECK(back.world->admission_masked() == std::vector<EntityId>{held});
  for (int k = 0; k < 10; ++k) {
    w->step();
    back.world->step();
    REQUIRE(back.world->digest() == w->digest());
  }
  CHECK(place(*back.world, held) == at);

  // A checkpoint naming a pedestrian that is not walking is refused.
  {
    WorldCheckpoint cp = w->capture();
    cp.admission_masked.push_back(EntityId{999, 7});
    const auto r = World::restore(s, cp);
    CHECK_FALSE(r.world);
    REQUIRE_FALSE(r.errors.empty());
    CHECK(r.errors[0].path == "admission_masked[1]");
  }

  // Released: it walks again from where it stood.
  REQUIRE(apply_one(*w, SetAdmissionMask{held, false}).status == CommandStatus::Accepted);
  CHECK(w->admission_masked().empty());
  for (int k = 0; k < 10; ++k) w->step();
  CHECK_FALSE(place(*w, held) == at);
  REQUIRE(w->check_invariants().ok());
}

TEST_CASE("the mask leaves the tier to the resolver: a far observer demotes a masked walker") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  for (int k = 0; k < 40; ++k) w->step();
  const EntityId held = walkers(*w)[0];
  REQUIRE(
      apply_one(
          *w,
          SetObservers{{ObserverPoint{w->describe(held).pose.x_m, w->describe(held).pose.y_m}}, {}})
          .status == CommandStatus::Accepted);
  for (int k = 0; k < 20; ++k) w->step();
  REQUIRE(w->describe(held).tier == SimTier::Full);
  REQUIRE(apply_one(*w, SetAdmissionMask{held, true}).status == CommandStatus::Accepted);
  CHECK(w->describe(held).tier == SimTier::Full);  // masking does not change it
  CHECK(w->describe(held).requested_tier == SimTier::Full);
  REQUIRE(apply_one(*w, SetObservers{{ObserverPoint{80, 1000}}, {}}).status ==
          CommandStatus::Accepted);
  // Distance asks for Coarse at once; the resolve cadence and the transition
  // budget apply it over the next steps.
  CHECK(w->describe(held).requested_tier == SimTier::Coarse);
  for (int k = 0; k < 40; ++k) w->step();
  CHECK(w->describe(held).tier == w->describe(held).requested_tier);
  CHECK(w->describe(held).tier != SimTier::Full);
  CHECK(w->describe(held).admission_masked);
  REQUIRE(w->check_invariants().ok());
}

TEST_CASE("the mask refuses vehicles and unknown ids, and ends when the pedestrian leaves") {
  const Scenario s = load("largeblock.city.json");
  auto w = make(s);
  for (int k = 0; k < 40; ++k) w->step();
  CommandResult r = apply_one(*w, SetAdmissionMask{EntityId{999, 7}, true});
  CHECK(r.status == CommandStatus::Rejected);
  CHECK(r.reason == RejectReason::UnknownEntity);
  CHECK(r.message.find("is not a walking pedestrian") != std::string::npos);
  CHECK(w->admission_masked().empty());

  // Masking twice is one mask; leaving the lane ends it.
  const EntityId held = walkers(*w)[0];
  REQUIRE(apply_one(*w, SetAdmissionMask{held, true}).status == CommandStatus::Accepted);
  REQUIRE(apply_one(*w, SetAdmissionMask{held, true}).status == CommandStatus::Accepted);
  CHECK(w->admission_masked().size() == 1);
  REQUIRE(apply_one(*w, DespawnEntity{held}).status == CommandStatus::Accepted);
  CHECK(w->admission_masked().empty());
  for (int k = 0; k < 5; ++k) {
    w->step();
    REQUIRE(w->check_invariants().ok());
  }

  const Scenario corridor = load("corridor.city.json");
  auto c = make(corridor);
  EntityId vehicle;
  for (int k = 0; k < 200 && vehicle.is_null(); ++k) {
    c->step();
    if (!c->vehicles().store().id.empty()) vehicle = c->vehicles().store().id[0];
  }
  REQUIRE_FALSE(vehicle.is_null());
  r = apply_one(*c, SetAdmissionMask{vehicle, true});
  CHECK(r.status == CommandStatus::Rejected);
  CHECK(r.reason == RejectReason::InvalidArgument);
  CHECK(c->admission_masked().empty());
}
