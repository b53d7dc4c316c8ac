// Executable invariants (World::check_invariants): the shipped cities hold
// them after every step, and each area names the exact invariant when its
// state is corrupted on purpose (through InvariantProbe; see its header for
// why checkpoints cannot be that seam).
#include <catch2/catch.hpp>
#include <string>

#include "bustle/core/world.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "invariant_probe.hpp"

using namespace bustle::core;

namespace {

Scenario config(const char* name) {
  auto r =
      bustle::scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) + "/configs/" + name);
  INFO((r.errors.empty() ? std::string() : r.errors[0].to_string()));
  REQUIRE(r.ok());
  return *r.scenario;
}

std::unique_ptr<World> make_checked(const Scenario& s, std::uint64_t seed = 7) {
  auto c = World::create(s, seed);
  INFO((c.errors.empty() ? std::string() : c.errors[0].path + ": " + c.errors[0].message));
  REQUIRE(c.world);
  REQUIRE(c.world->check_invariants().ok());
  return std::move(c.world);
}

// Runs `steps` steps, checking every invariant after each; every 37th step
// asks for a spawn and every 53rd despawns a pedestrian, so the spawn
// pipeline, the orphan set and the retiring FIFO are exercised too.
void run_checked(World& w, std::uint64_t steps) {
  std::uint32_t request = 0;
  for (std::uint64_t k = 1; k <= steps; ++k) {
    if (k % 37 == 0 && !w.lanes().sidewalks().empty()) {
      (void)w.submit({CommandOrigin{1, ++request}, SpawnPedestrian{}});
    }
    if (k % 53 == 0 && w.pedestrians().size() > 0) {
      (void)w.submit({CommandOrigin{1, ++request},
                      DespawnEntity{w.pedestrians().id[k % w.pedestrians().size()]}});
    }
    w.step();
    const std::string broken = w.check_invariants().message();
    INFO("step " << w.step_index());
    REQUIRE(broken == "");
  }
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

TEST_CASE("the shipped cities hold every invariant after every step") {
  SECTION("default city") {
    auto w = make_checked(config("default.city.json"));
    run_checked(*w, 1200);
  }
  SECTION("corridor (vehicles)") {
    auto w = make_checked(config("corridor.city.json"));
    run_checked(*w, 1500);
    CHECK(w->vehicles().store().size() > 0);
  }
  SECTION("large block (population)") {
    Scenario s = config("largeblock.city.json");
    s.population.time_scale = 288;  // 24 game hours in 3000 steps: every schedule entry
    auto w = make_checked(s);
    run_checked(*w, 3000);
    CHECK(w->population().active_count() > 0);
  }
}

TEST_CASE("a broken registry is named") {
  auto w = make_checked(config("default.city.json"));
  for (int k = 0; k < 20; ++k) w->step();
  EntityRegistry& reg = InvariantProbe::registry(*w);
  REQUIRE(w->pedestrians().size() > 0);
  SECTION("a live index in the free FIFO") {
    const std::uint32_t live = w->pedestrians().id[0].index;
    InvariantProbe::free_ring(reg)[InvariantProbe::free_head(reg)] = live;
    const Status broken = w->check_invariants();
    CHECK(broken.code() == StatusCode::Internal);  // ours, not the input's
    CHECK(broken.message() ==
          "registry: invariant 3: free FIFO holds live index " + std::to_string(live));
  }
  SECTION("generation 0") {
    const std::uint32_t free_slot = InvariantProbe::free_ring(reg)[InvariantProbe::free_head(reg)];
    InvariantProbe::generations(reg)[free_slot] = 0;
    CHECK(w->check_invariants().message() ==
          "registry: invariant 1: slot " + std::to_string(free_slot) + " has generation 0");
  }
  SECTION("a leaked id (allocated, held by no one)") {
    REQUIRE(reg.allocate().status == AllocateStatus::Allocated);
    CHECK(starts_with(w->check_invariants().message(), "lifecycle: "));
    CHECK(w->check_invariants().message().find("live ids but") != std::string::npos);
  }
}

TEST_CASE("broken pedestrian arrays are named") {
  auto w = make_checked(config("default.city.json"));
  for (int k = 0; k < 20; ++k) w->step();
  PedestrianStore& p = InvariantProbe::pedestrians(*w);
  REQUIRE(p.size() >= 2);
  SECTION("the id map") {
    std::swap(p.dense_of[p.id[0].index], p.dense_of[p.id[1].index]);
    CHECK(w->check_invariants().message() ==
          "pedestrians: invariant 1: dense_of[" + std::to_string(p.id[0].index) +
              "] is 1, pedestrian " + id_text(p.id[0]) + " is in slot 0");
  }
  SECTION("off its lane") {
    p.s_m[1] = w->lanes().lane(p.lane[1]).length_m + 1.0;
    CHECK(starts_with(w->check_invariants().message(),
                      "pedestrians: invariant 4: pedestrian " + id_text(p.id[1]) + " at s "));
  }
  SECTION("a phase not derived from the id") {
    p.phase[0] = static_cast<std::uint8_t>(p.phase[0] + 1);
    CHECK(w->check_invariants().message() == "pedestrians: invariant 4: pedestrian " +
                                                 id_text(p.id[0]) +
                                                 " has a phase not derived from its id");
  }
}

TEST_CASE("broken vehicle state is named") {
  auto w = make_checked(config("corridor.city.json"));
  while (w->vehicles().store().size() < 3 && w->step_index() < 2000) w->step();
  VehicleStore& v = InvariantProbe::vehicles(*w);
  REQUIRE(v.size() >= 3);
  SECTION("invariant 5: closer than headway_block_m behind another vehicle") {
    // Put vehicle 1 two metres behind vehicle 0 on vehicle 0's lane.
    v.lane[1] = v.lane[0];
    v.route_index[1] = v.route_index[0];
    v.s_m[0] = std::max(v.s_m[0], 5.0);
    v.s_m[1] = v.s_m[0] - 2.0;
    const std::string broken = w->check_invariants().message();
    CHECK(starts_with(broken, "vehicles: invariant 5: vehicle " + id_text(v.id[1]) + " on lane " +
                                  std::to_string(v.lane[0]) + " is 2.000000 m behind vehicle " +
                                  id_text(v.id[0])));
  }
  SECTION("invariant 5: across the loop seam, a vehicle at the end of the last lane") {
    // Vehicle 1 0.12 m before the end of the route's last lane, vehicle 0 at
    // s = 0 of the entrance lane: 0.12 m apart along the route.
    const auto& route = w->scenario().garages[0].route;
    const LaneIndex first = *w->lanes().find(route.front());
    const LaneIndex last = *w->lanes().find(route.back());
    v.lane[0] = first;
    v.route_index[0] = 0;
    v.s_m[0] = 0.0;
    v.lane[1] = last;
    v.route_index[1] = static_cast<std::uint32_t>(route.size() - 1);
    v.s_m[1] = w->lanes().lane(last).length_m - 0.12;
    v.lane[2] = first;  // out of the way: 30 m down the entrance lane
    v.route_index[2] = 0;
    v.s_m[2] = 30.0;
    const std::string broken = w->check_invariants().message();
    CHECK(starts_with(broken, "vehicles: invariant 5: vehicle " + id_text(v.id[1]) + " on lane " +
                                  std::to_string(last) + " is 0.120000 m behind vehicle " +
                                  id_text(v.id[0]) + " on lane " + std::to_string(first)));
  }
  SECTION("invariant 3: a repeated VehicleId") {
    v.ordinal[2] = v.ordinal[1];
    CHECK(starts_with(w->check_invariants().message(), "vehicles: invariant 3: "));
    CHECK(w->check_invariants().message().find("share VehicleId") != std::string::npos);
  }
  SECTION("invariant 1: a request both queued and dispatched") {
    std::vector<GarageState>& g = InvariantProbe::garages(*w);
    REQUIRE(!g[0].dispatched.empty());
    g[0].queue.push_back({g[0].dispatched[0], 0, -100, g[0].next_enqueue_ordinal++});
    CHECK(w->check_invariants().message() ==
          "vehicles: invariant 1: garage " + w->scenario().garages[0].id + " request '" +
              g[0].dispatched[0] + "' is both queued and dispatched");
  }
}

TEST_CASE("broken population state is named") {
  Scenario s = config("largeblock.city.json");
  auto w = make_checked(s);
  for (int k = 0; k < 50; ++k) w->step();
  REQUIRE(w->population().active_count() > 0);
  SECTION("invariant 2: a community x zone count") {
    InvariantProbe::active_cz(*w)[0] += 1;
    CHECK(starts_with(w->check_invariants().message(),
                      "population: invariant 2: community " + s.communities[0].id + " in zone "));
  }
  SECTION("invariant 4: a slot naming a resident that holds no slot") {
    std::vector<WorkPointState>& wps = InvariantProbe::work_points(*w);
    REQUIRE(!wps.empty());
    REQUIRE(!wps[0].occupant.empty());
    const std::int32_t was = wps[0].occupant[0];
    // A resident index that holds no slot of work-point 0 (the last identity is dormant).
    wps[0].occupant[0] = static_cast<std::int32_t>(w->population().residents().size() - 1);
    INFO("occupant was " << was);
    CHECK(starts_with(w->check_invariants().message(), "population: invariant 4: "));
  }
}

TEST_CASE("a broken spawn pipeline is named") {
  auto w = make_checked(config("default.city.json"));
  REQUIRE(w->submit({CommandOrigin{1, 1}, SpawnPedestrian{}}) == SubmitStatus::Queued);
  w->step();  // Queued
  w->step();  // IdentityCreated
  REQUIRE(w->spawn_pipeline().live.size() == 1);
  SpawnPipelineState& sp = InvariantProbe::spawn(*w);
  REQUIRE(sp.live[0].state == SpawnState::IdentityCreated);
  SECTION("invariant 4: a queued handle with an entity") {
    sp.live[0].state = SpawnState::Queued;
    CHECK(w->check_invariants().message() ==
          "spawn pipeline: invariant 4: queued handle 1 already holds entity " +
              id_text(sp.live[0].entity));
  }
  SECTION("invariant 2: a terminal state among the live handles") {
    sp.live[0].state = SpawnState::Canceled;
    CHECK(w->check_invariants().message() ==
          "spawn pipeline: invariant 2: live handle 1 is canceled");
  }
  SECTION("invariant 1: a handle both live and recent") {
    SpawnHandleState twin = sp.live[0];
    twin.state = SpawnState::TimedOut;
    sp.recent.push_back(twin);
    CHECK(w->check_invariants().message() ==
          "spawn pipeline: invariant 1: handle 1 is both live and recent (or recent twice)");
  }
  SECTION("invariant 2: a representation stage in the core") {
    sp.live[0].state = SpawnState::Attached;
    CHECK(w->check_invariants().message() ==
          "spawn pipeline: invariant 2: live handle 1 is attached");
  }
  SECTION("invariant 2: the core counted an entry into ready_for_gameplay") {
    ++sp.counters.per_state_total[static_cast<std::size_t>(SpawnState::ReadyForGameplay)];
    CHECK(w->check_invariants().message() ==
          "spawn pipeline: invariant 2: the core counted entries into ready_for_gameplay");
  }
}

TEST_CASE("broken observer sets are named") {
  auto w = make_checked(config("default.city.json"));
  REQUIRE(w->submit({CommandOrigin{}, SetClientObservers{{{1.0, 2.0, 0.0, false, 0.0}}}}) ==
          SubmitStatus::Queued);
  w->step();
  REQUIRE(w->client_observers().size() == 1);
  REQUIRE(w->check_invariants().ok());
  SECTION("invariant 1: a client observer without its view") {
    InvariantProbe::client_observer_views(*w).clear();
    CHECK(starts_with(w->check_invariants().message(), "observers: invariant 1: "));
  }
  SECTION("invariant 2: the tier resolver's set lost the client observer") {
    InvariantProbe::tier_observers(*w).pop_back();
    CHECK(starts_with(w->check_invariants().message(), "observers: invariant 2: "));
  }
}

TEST_CASE("a broken retiring FIFO is named") {
  Scenario s = config("default.city.json");
  s.observers = {{0.0, 0.0}};
  s.tiers.full_enter_m = s.tiers.full_exit_m = s.tiers.simulated_enter_m =
      s.tiers.simulated_exit_m = 1e6;
  s.despawn.fade_ms = 2000;  // everyone is on screen, so despawns fade
  auto w = make_checked(s);
  for (int k = 0; k < 20; ++k) w->step();
  REQUIRE(w->pedestrians().size() > 0);
  REQUIRE(w->submit({CommandOrigin{1, 1}, DespawnEntity{w->pedestrians().id[0]}}) ==
          SubmitStatus::Queued);
  w->step();
  REQUIRE(w->orphans().size() == 1);
  REQUIRE(w->check_invariants().ok());
  InvariantProbe::retiring_fifo(*w).clear();
  CHECK(w->check_invariants().message() ==
        "orphans: invariant 1: the retiring FIFO holds 0 ids, the orphan set 1");
}
