// The app layer's phase executor: every part exactly once, on several
// threads, reusable; and the point of it — a city stepped with 1, 2 and 4
// threads (and with parts run backwards) has the same digest at every step
// as the inline executor (core/phase_executor.hpp, issue 17); and a
// checkpoint captured on 1, 2 or 4 threads is the same bytes as inline; and a
// published frame built on 1, 2 or 4 threads is the frame built inline.
#include "bustle/app/thread_phase_executor.hpp"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bustle/core/checkpoint.hpp"
#include "bustle/core/column_copies.hpp"
#include "bustle/core/world.hpp"
#include "bustle/net/published_frame.hpp"
#include "bustle/scenario/scenario_loader.hpp"

using bustle::app::ThreadPhaseExecutor;
using bustle::core::PhaseExecutor;

namespace {

// Runs the parts last to first on the caller: a phase that (wrongly)
// depended on part order would show it here even without threads.
class ReverseExecutor final : public PhaseExecutor {
 public:
  void run(std::uint32_t parts, PartFn fn, void* context) override {
    for (std::uint32_t p = parts; p-- > 0;) fn(context, p);
  }
  std::uint32_t threads() const override { return 1; }
};

bustle::core::Scenario crowd(std::uint32_t pedestrians) {
  auto loaded = bustle::scenario::load_embedded_default();
  REQUIRE(loaded.ok());
  bustle::core::Scenario s = *loaded.scenario;
  s.id = "test.parallel." + std::to_string(pedestrians);
  std::uint32_t cap = 1024;
  while (cap < pedestrians + pedestrians / 4) cap *= 2;
  s.entity_capacity = cap;
  s.pedestrians.count = pedestrians;
  // The crowd arrives over 10 steps, so walkers spawned meanwhile get rows
  // spread over several parts.
  s.pedestrians.spawn_per_step_max = pedestrians / 10;
  return s;
}

// One-lane walks over the crossings (20 m): a routed pedestrian uses its
// route up at the crossing's end, within ~15 s, and releases it while the
// parts run (the queued route releases of phase 7).
std::vector<std::vector<std::string>> walks(const bustle::core::Scenario& s) {
  std::vector<std::vector<std::string>> out;
  for (const auto& l : s.lanes) {
    if (l.kind == bustle::core::LaneKind::Crossing) out.push_back({l.id});
  }
  return out;
}

// What a run leaves to compare: the digest after every step, and the route
// table (its free-slot order is state that only later spawns would show).
struct Run {
  std::vector<std::uint64_t> digests;
  bustle::core::RouteTableState routes;
  bool operator==(const Run&) const = default;
};

// Digest after each of `steps` steps, stepping with `executor` (null: inline);
// before steps 1, 5 and 201, routed spawns along `walks`.
Run run(const bustle::core::Scenario& s, PhaseExecutor* executor, int steps) {
  auto created = bustle::core::World::create(s, 7);
  REQUIRE(created.world);
  created.world->set_phase_executor(executor);
  const auto routes = walks(s);
  REQUIRE(routes.size() >= 2);
  std::vector<std::uint64_t> out;
  std::uint32_t live_routes_after_spawn = 0;
  std::uint32_t live_routes_before_second_wave = 0;
  for (int i = 0; i < steps; ++i) {
    // Two waves of routed walkers while the crowd arrives (rows in different
    // parts), whose walks end in overlapping steps, so one step releases
    // routes from several parts; the third wave reuses the released slots,
    // and gets them in release order.
    if (i == 0 || i == 4 || i == 200) {
      std::uint32_t request = static_cast<std::uint32_t>(i) * 1000;
      for (std::size_t k = 0; k < 96; ++k) {
        const auto& r = routes[k % routes.size()];
        bustle::core::SpawnPedestrian spawn;
        spawn.route = r;
        REQUIRE(created.world->submit({bustle::core::CommandOrigin{1, ++request}, spawn}) ==
                bustle::core::SubmitStatus::Queued);
      }
    }
    created.world->step();
    REQUIRE(created.world->check_invariants().ok());
    out.push_back(created.world->digest());
    // The routed pedestrians hold their routes for a few steps, then use
    // them up (released in phase 7's queued effects).
    if (i == 6) live_routes_after_spawn = created.world->routes().live();
    if (i == 199) live_routes_before_second_wave = created.world->routes().live();
  }
  // What the comparison covers: several parts, and routes released meanwhile.
  REQUIRE(created.world->pedestrians().size() > 2 * bustle::core::kRowsPerPart);
  REQUIRE(live_routes_after_spawn > 0);
  REQUIRE(live_routes_before_second_wave < live_routes_after_spawn);
  return {out, created.world->routes().state()};
}

}  // namespace

TEST_CASE("every part runs exactly once, on more than one thread") {
  ThreadPhaseExecutor pool(4);
  CHECK(pool.threads() == 4);
  std::vector<std::atomic<int>> runs(1000);
  std::mutex m;
  std::set<std::thread::id> threads;
  bustle::core::run_parts(pool, 1000, [&](std::uint32_t p) {
    runs[p].fetch_add(1);
    // Long enough that the workers get a share.
    volatile std::uint64_t x = 0;
    for (int k = 0; k < 20000; ++k) x = x + static_cast<std::uint64_t>(k);
    std::lock_guard<std::mutex> lock(m);
    threads.insert(std::this_thread::get_id());
  });
  CHECK(std::all_of(runs.begin(), runs.end(),
                    [](const std::atomic<int>& r) { return r.load() == 1; }));
  CHECK(threads.size() >= 2);
}

TEST_CASE("the caller runs a prefix of the parts and the workers the rest, every part once") {
  // Claims from both ends (the caller from the front, workers from the
  // back), so each thread keeps the same rows from phase to phase.
  for (const std::uint32_t threads : {2u, 4u}) {
    ThreadPhaseExecutor pool(threads);
    for (int round = 0; round < 50; ++round) {
      const std::thread::id caller = std::this_thread::get_id();
      std::vector<int> by_caller(64, -1);  // 1 the caller ran it, 0 a worker
      bustle::core::run_parts(pool, 64, [&](std::uint32_t p) {
        by_caller[p] = std::this_thread::get_id() == caller ? 1 : 0;
        volatile std::uint64_t x = 0;
        for (int k = 0; k < 2000; ++k) x = x + static_cast<std::uint64_t>(k);
      });
      INFO("threads " << threads << ", round " << round);
      REQUIRE(std::none_of(by_caller.begin(), by_caller.end(), [](int v) { return v < 0; }));
      // 1 ... 1 0 ... 0: is_sorted in descending order.
      CHECK(std::is_sorted(by_caller.begin(), by_caller.end(), std::greater<int>()));
    }
  }
}

TEST_CASE("more parts than one claim word holds run as several batches, each part once") {
  ThreadPhaseExecutor pool(2);
  constexpr std::uint32_t kParts = 0xFFFF * 2 + 7;
  std::vector<std::uint8_t> runs(kParts, 0);
  bustle::core::run_parts(pool, kParts, [&](std::uint32_t p) { ++runs[p]; });
  CHECK(std::all_of(runs.begin(), runs.end(), [](std::uint8_t r) { return r == 1; }));
}

TEST_CASE("the pool is reusable, handles zero and one part, and stops cleanly") {
  auto pool = std::make_unique<ThreadPhaseExecutor>(3);
  std::uint64_t total = 0;
  for (std::uint32_t round = 0; round < 2000; ++round) {
    const std::uint32_t parts = round % 5;  // 0..4
    std::vector<std::uint64_t> got(parts, 0);
    bustle::core::run_parts(*pool, parts, [&](std::uint32_t p) { got[p] = round * 10 + p; });
    for (std::uint32_t p = 0; p < parts; ++p) {
      REQUIRE(got[p] == round * 10 + p);
      total += got[p];
    }
  }
  CHECK(total > 0);
  pool.reset();  // joins the workers; a hang here fails by the test timeout
}

TEST_CASE("back-to-back batches: each part once, none late, writes visible to the caller") {
  // The caller claims parts itself and waits only for parts a worker has
  // claimed, so a worker that wakes late finds its batch drained, or even
  // a newer batch running: it must never run a part of the old one (its
  // claim names the batch) and never miss one of the new one. Thousands of
  // short batches of 1-8 parts make that race common.
  ThreadPhaseExecutor pool(3);
  std::atomic<std::uint32_t> current_batch{0};
  std::atomic<int> stale_runs{0};
  std::vector<std::uint64_t> written(8, 0);  // plain writes: run() must publish them
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> on_workers{0};
  for (std::uint32_t batch = 1; batch <= 3000; ++batch) {
    current_batch.store(batch);
    const std::uint32_t parts = 1 + batch % 8;
    std::atomic<int> runs[8] = {};
    bustle::core::run_parts(pool, parts, [&, batch](std::uint32_t p) {
      if (current_batch.load() != batch) stale_runs.fetch_add(1);
      // A little work, more for earlier parts (claimed first, often by a
      // worker), so a worker's part is often still running when the caller
      // has drained the rest: a run() that returned early fails below.
      volatile std::uint32_t x = 0;
      for (std::uint32_t k = 0; k < 4000 * (8 - p); ++k) x = x + k;
      runs[p].fetch_add(1);
      on_workers.fetch_add(std::this_thread::get_id() != caller);
      written[p] = batch;
    });
    for (std::uint32_t p = 0; p < parts; ++p) {
      REQUIRE(runs[p].load() == 1);
      REQUIRE(written[p] == batch);
    }
  }
  CHECK(stale_runs.load() == 0);
  CHECK(on_workers.load() > 0);  // the race was run, not avoided
  UNSCOPED_INFO("parts run by workers: " << on_workers.load());
}

TEST_CASE("prepare() between batches wakes workers without running or losing a part") {
  // prepare() takes a batch number of its own with no parts: workers woken
  // by it must find nothing to claim, and the next run() must still run
  // each of its parts once. A spin window of 0 makes the workers sleep
  // between calls, so the wake-ups really happen; some rounds call
  // prepare() twice, some not at all.
  ThreadPhaseExecutor pool(3, std::chrono::microseconds(0));
  std::atomic<int> on_workers{0};
  const std::thread::id caller = std::this_thread::get_id();
  for (std::uint32_t round = 0; round < 2000; ++round) {
    for (std::uint32_t k = 0; k < round % 3; ++k) pool.prepare();
    if (round % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    const std::uint32_t parts = 1 + round % 6;
    std::atomic<int> runs[6] = {};
    bustle::core::run_parts(pool, parts, [&](std::uint32_t p) {
      volatile std::uint32_t x = 0;
      for (std::uint32_t k = 0; k < 3000; ++k) x = x + k;
      runs[p].fetch_add(1);
      on_workers.fetch_add(std::this_thread::get_id() != caller);
    });
    for (std::uint32_t p = 0; p < parts; ++p) REQUIRE(runs[p].load() == 1);
  }
  CHECK(on_workers.load() > 0);
}

TEST_CASE("thread counts outside [1, 64] are refused, naming the range") {
  CHECK_THROWS_AS(ThreadPhaseExecutor(0), std::invalid_argument);
  CHECK_THROWS_AS(ThreadPhaseExecutor(65), std::invalid_argument);
  CHECK(ThreadPhaseExecutor(1).threads() == 1);
}

TEST_CASE(
    "a city's digest is the same at every step for 1, 2 and 4 threads and for parts run "
    "backwards") {
  // 40 000 pedestrians = 5 parts of 8 192 rows; long enough for routed
  // walkers on the 20 m crossings to finish their walks.
  constexpr int kSteps = 250;
  const auto s = crowd(40000);
  const Run inline_run = run(s, nullptr, kSteps);
  ReverseExecutor reverse;
  CHECK(run(s, &reverse, kSteps) == inline_run);
  for (const std::uint32_t threads : {1u, 2u, 4u}) {
    ThreadPhaseExecutor pool(threads);
    INFO("threads " << threads);
    CHECK(run(s, &pool, kSteps) == inline_run);
  }
}

namespace {

// Every column World::capture_into copies in parts (ColumnCopies) or derives
// in row parts, and the digest.
void check_same_columns(const bustle::core::WorldCheckpoint& a,
                        const bustle::core::WorldCheckpoint& b) {
  CHECK(a.digest == b.digest);
  CHECK(a.registry.generation == b.registry.generation);
  CHECK(a.registry.alive == b.registry.alive);
  CHECK(a.registry.free_fifo == b.registry.free_fifo);
  CHECK(a.registry.pop_seq == b.registry.pop_seq);
  const bustle::core::PedestrianState& p = a.pedestrians;
  const bustle::core::PedestrianState& q = b.pedestrians;
  CHECK(p.id == q.id);
  CHECK(p.lane == q.lane);
  CHECK(p.s_m == q.s_m);
  CHECK(p.hops == q.hops);
  CHECK(p.resident == q.resident);
  CHECK(p.sim_tier == q.sim_tier);
  CHECK(p.catch_up_steps == q.catch_up_steps);
  CHECK(p.priority == q.priority);
  CHECK(p.origin == q.origin);
  CHECK(p.route == q.route);
  const bustle::core::ResidentStore& r = a.population.residents;
  const bustle::core::ResidentStore& t = b.population.residents;
  CHECK(r.id == t.id);
  CHECK(r.community == t.community);
  CHECK(r.profession == t.profession);
  CHECK(r.zone == t.zone);
  CHECK(r.active == t.active);
  CHECK(r.work_point == t.work_point);
  CHECK(r.work_slot == t.work_slot);
  CHECK(a.population.zone_ids == b.population.zone_ids);
  CHECK(a.vehicles.store.id == b.vehicles.store.id);
}

}  // namespace

TEST_CASE(
    "a checkpoint captured with 1, 2 and 4 threads and with parts run backwards is the same as "
    "the inline capture, fresh or recycled, and restores to the same digest") {
  using namespace bustle::core;
  // 150 000 walkers: their 8-byte columns span two ColumnCopies parts; plus
  // 2 000 awake residents, so the resident rows and the derived resident
  // column hold values other than "none".
  Scenario s = crowd(150000);
  ZoneSpec awake{"awake", {}, 2000};
  for (const LaneSpec& l : s.lanes) {
    if (l.kind == LaneKind::Sidewalk) awake.lanes.push_back(l.id);
  }
  s.zones.push_back(awake);
  CommunitySpec c;
  c.id = "strollers";
  c.base_population = 2000;
  c.professions = {"strolling"};
  c.home_zone = "awake";
  c.schedule = {{0.0, 24.0, SchedulePhase::Leisure, "strolling", "awake", "", 1.0}};
  s.communities.push_back(c);
  s.population.growth_quota = 500;
  s.despawn.fade_ms = 0;  // despawned slots go back to the registry at once
  auto created = World::create(s, 7);
  INFO((created.errors.empty() ? std::string()
                               : created.errors[0].path + ": " + created.errors[0].message));
  REQUIRE(created.world);
  World& w = *created.world;
  for (int i = 0; i < 20; ++i) w.step();
  // Despawn a few walkers: their slots go back at the free ring's tail,
  // past its end, so the free FIFO is copied as two pieces.
  std::uint32_t request = 0;
  for (std::uint32_t row = 0; request < 64; row += 7) {
    if (w.pedestrians().origin[row] == static_cast<std::uint8_t>(PedestrianOrigin::Resident))
      continue;  // a resident would go dormant and keep its slot
    REQUIRE(w.submit({CommandOrigin{1, ++request}, DespawnEntity{w.pedestrians().id[row]}}) ==
            SubmitStatus::Queued);
  }
  for (int i = 0; i < 40; ++i) w.step();
  REQUIRE(w.check_invariants().ok());
  REQUIRE(w.counters().despawned_total >= 64);

  const WorldCheckpoint inline_cp = w.capture();
  // The inline capture against the live columns it copied.
  const PedestrianStore& live = w.pedestrians();
  CHECK(inline_cp.pedestrians.id == live.id);
  CHECK(inline_cp.pedestrians.lane == live.lane);
  CHECK(inline_cp.pedestrians.s_m == live.s_m);
  CHECK(inline_cp.pedestrians.hops == live.hops);
  CHECK(inline_cp.pedestrians.sim_tier == live.sim_tier);
  CHECK(inline_cp.pedestrians.priority == live.priority);
  CHECK(inline_cp.pedestrians.origin == live.origin);
  CHECK(inline_cp.pedestrians.route == live.route);
  const ResidentStore& rs = w.population().residents();
  CHECK(inline_cp.population.residents.id == rs.id);
  CHECK(inline_cp.population.residents.zone == rs.zone);
  CHECK(inline_cp.population.residents.active == rs.active);
  CHECK(inline_cp.population.residents.work_slot == rs.work_slot);
  for (std::uint32_t slot = 0; slot < s.entity_capacity; slot += 997) {
    CHECK(inline_cp.registry.generation[slot] == w.registry().generation_of(slot));
    CHECK((inline_cp.registry.alive[slot] != 0) == w.registry().slot_alive(slot));
  }
  std::vector<std::uint32_t> free_order;
  w.registry().for_each_free([&](std::uint32_t slot) { free_order.push_back(slot); });
  CHECK(inline_cp.registry.free_fifo == free_order);
  // The ring wrapped: the FIFO ends with released low slots after the never-used high ones.
  REQUIRE(!free_order.empty());
  CHECK(free_order.back() < free_order.front());
  std::size_t residents_walking = 0;
  for (const std::uint32_t r : inline_cp.pedestrians.resident)
    residents_walking += r != PedestrianStore::kNoResident;
  CHECK(residents_walking > 0);
  CHECK(inline_cp.pedestrians.s_m.size() * sizeof(double) > ColumnCopies::kBytesPerPart);

  ReverseExecutor reverse;
  ThreadPhaseExecutor one(1), two(2), four(4);
  for (PhaseExecutor* executor :
       std::initializer_list<PhaseExecutor*>{&reverse, &one, &two, &four}) {
    INFO("executor threads " << executor->threads());
    w.set_phase_executor(executor);
    check_same_columns(w.capture(), inline_cp);
    WorldCheckpoint recycled;
    reserve_for_capture(recycled, s.entity_capacity);
    w.capture_into(recycled);
    check_same_columns(recycled, inline_cp);
    w.capture_into(recycled);  // over what the previous capture left in it
    check_same_columns(recycled, inline_cp);
  }
  w.set_phase_executor(nullptr);
  auto restored = World::restore(s, inline_cp);
  REQUIRE(restored.world);
  CHECK(restored.world->digest() == w.digest());
  CHECK(restored.world->compute_digest() == w.compute_digest());
}

TEST_CASE("a published frame built on 1, 2 and 4 threads is the frame built inline") {
  // 40 000 pedestrians = 5 parts of 8 192 rows; frames compared at every
  // step while the crowd arrives and walks (tiers, lanes and speeds change),
  // whole and posed for one client's disc (the interest coverage).
  auto created = bustle::core::World::create(crowd(40000), 7);
  REQUIRE(created.world);
  bustle::core::World& w = *created.world;
  const bustle::net::ArchetypeTable archetypes = bustle::net::make_archetypes(w.scenario());
  std::vector<std::unique_ptr<ThreadPhaseExecutor>> pools;
  for (const std::uint32_t threads : {1u, 2u, 4u})
    pools.push_back(std::make_unique<ThreadPhaseExecutor>(threads));
  const auto same = [](const bustle::net::PublishedEntity& a,
                       const bustle::net::PublishedEntity& b) {
    return a.id == b.id && a.lane == b.lane && a.s_mm == b.s_mm && a.speed_mmps == b.speed_mmps &&
           a.x_m == b.x_m && a.y_m == b.y_m && a.z_m == b.z_m && a.weight == b.weight &&
           a.archetype == b.archetype && a.kind == b.kind && a.sim_tier == b.sim_tier &&
           a.policy == b.policy && a.retiring == b.retiring && a.corpse == b.corpse &&
           a.label == b.label;
  };
  const bustle::net::Coverage corner{false, {{0.0, 0.0, 30.0}}};
  bustle::net::FramePool inline_pool, pool_frames;
  std::size_t compared = 0, covered_compared = 0;
  for (int step = 0; step < 40; ++step) {
    w.step();
    w.set_phase_executor(nullptr);
    const auto inline_frame = bustle::net::make_published_frame(w, archetypes);
    const auto inline_covered = inline_pool.make(w, archetypes, 0, {}, true, corner);
    REQUIRE(inline_covered->entities.size() < inline_frame->entities.size());
    // The reference itself has every pedestrian row once, on its lane.
    const bustle::core::PedestrianStore& peds = w.pedestrians();
    REQUIRE(inline_frame->entities.size() == peds.size() + w.orphans().size());
    for (std::uint32_t i = 0; i < peds.size(); ++i) {
      const auto it = std::lower_bound(inline_frame->entities.begin(), inline_frame->entities.end(),
                                       peds.id[i].index,
                                       [](const bustle::net::PublishedEntity& e,
                                          std::uint32_t index) { return e.id.index < index; });
      REQUIRE(it != inline_frame->entities.end());
      REQUIRE(it->id == peds.id[i]);
      REQUIRE(it->lane == peds.lane[i]);
    }
    for (const auto& pool : pools) {
      w.set_phase_executor(pool.get());
      const auto frame = bustle::net::make_published_frame(w, archetypes);
      INFO("step " << step << " threads " << pool->threads());
      REQUIRE(frame->entities.size() == inline_frame->entities.size());
      CHECK(frame->bounds.min_x_m == inline_frame->bounds.min_x_m);
      CHECK(frame->bounds.min_y_m == inline_frame->bounds.min_y_m);
      CHECK(frame->bounds.max_x_m == inline_frame->bounds.max_x_m);
      CHECK(frame->bounds.max_y_m == inline_frame->bounds.max_y_m);
      for (std::size_t k = 0; k < frame->entities.size(); ++k) {
        if (!same(frame->entities[k], inline_frame->entities[k])) {
          FAIL("entity " << k << " differs");
        }
      }
      compared += frame->entities.size();
      const auto covered = pool_frames.make(w, archetypes, 0, {}, true, corner);
      REQUIRE(covered->entities.size() == inline_covered->entities.size());
      for (std::size_t k = 0; k < covered->entities.size(); ++k) {
        if (!same(covered->entities[k], inline_covered->entities[k])) {
          FAIL("covered entity " << k << " differs");
        }
      }
      CHECK(covered->chain_pedestrians == inline_covered->chain_pedestrians);
      covered_compared += covered->entities.size();
    }
    w.set_phase_executor(nullptr);
  }
  CHECK(w.pedestrians().size() > 2 * bustle::core::kRowsPerPart);
  CHECK(compared > 0);
  CHECK(covered_compared > 0);
}
