// bustle-bench: scale measurements that are not unit tests.
//
//   bustle-bench step       [--agents N] [--steps S] [--seed K]
//   bustle-bench population [--active N] [--dormant M] [--steps S] [--warmup W] [--seed K] [--json]
//   bustle-bench snapshot   [--agents N] [--repeat R] [--dir DIR]
//   bustle-bench vehicles   [--grid N] [--vehicles V] [--steps S] [--seed K]
//   bustle-bench stream     [--agents N] [--grid N] [--vehicles V] [--steps S] [--seed K]
//   bustle-bench fanout     [--clients N] [--stalled-percent P] [--agents N] [--seconds S] [--warmup W]
//                           [--repeat R] [--server PATH] [--dir DIR] [--outbound-max-bytes B]
//                           [--motion-tolerance-mm T]
//
// `step` times World::step (p50/p99/max, agent updates per second, peak RSS).
// `population` (issue 3's target: p99 <= 5 ms with a million dormant records)
// times World::step on the default city's geometry with N active background
// pedestrians and M dormant resident identities (population_city() below),
// tier caps at 10 % Full / 30 % Simulated of N, and observers close enough
// that distance alone would want more than 10 % Full (the caps decide). It
// reports step p50/p99/max, agent updates per second (pedestrians whose tier
// made them due: Full every step, Simulated every 2nd, Coarse every 8th,
// counted before each step and outside the timing), bytes of hot state per
// active agent (pedestrian_columns() below), the tier mix reached, peak RSS and
// the digest; with --json also one JSON line for scripts. It also prints each
// step's CPU time (p50/p99/max: what a loaded machine cannot inflate by
// descheduling), the heap allocations over the timed steps, and one line per
// target of issue 17 (step p99 at 100 000 / 1 000 000 active with 1 000 000
// dormant, hot bytes, allocations, tiers at their caps), met or NOT met.
// `snapshot` times what a checkpoint costs each thread: the sim-thread copy
// (World::capture), the writer-thread commit (SnapshotStore::write_checkpoint),
// and a restore (read + validate + build the candidate world), and reports
// the file size. Scenario: the default city's geometry with N pedestrians.
// `vehicles` (issue 4) builds a signalised grid city in code (grid_city()
// below), warms up until V vehicles are managed, all in the Full tier, then
// times S steps: step p50/p99/max, vehicle updates per second (managed
// vehicles x steps / wall time of those steps, digest included), vehicles
// moving per step, the policy mix, heap allocations per step (counted by the
// operator new replacement below) and the final digest. Its SUMO peer is
// tools/bench/sumo_grid.sh; tools/bench/compare_sumo.sh runs both.
// `stream` (protocol v2) measures what one whole-city client is sent: for the
// default city, a city of N pedestrians on its geometry and the vehicle grid,
// S steps after a warm-up, each step's Delta encoded by a StreamTracker with
// budgets large enough to receive every entity. It reports wire bytes (length
// prefix included) per moving entity per step (an entity moves when its lane
// or distance changed since the previous step), the share of deltas that
// carry any motion record, the encode time per client per step (network
// thread) and the time to build the published frame (sim thread, per step).
// `fanout` runs N real clients against a real bustle-server process over
// loopback, with and without a share of stalled clients (fanout.cpp).
// Figures go to the README's Performance section with machine and command.
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bustle/core/world.hpp"
#include "bustle/net/server.hpp"
#include "bustle/net/stream_tracker.hpp"
#include "fanout.hpp"
#include "measure.hpp"
#include "bustle/persist/snapshot_store.hpp"
#include "bustle/proto/framing.hpp"
#include "bustle/scenario/scenario_loader.hpp"

// Heap allocations made by this process, counted so the vehicles mode can
// report allocations per step (DESIGN §10: none after warm-up). Array and
// nothrow forms default to these two; aligned forms are not counted.
namespace {
std::atomic<std::uint64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// Not inlined: GCC's -Wmismatched-new-delete would otherwise pair the inlined
// free() with the builtin operator new at the call site.
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string mode;
  std::uint32_t agents = 100'000;
  std::uint64_t steps = 1000;
  std::uint32_t repeat = 10;
  std::uint64_t seed = 1;
  std::string dir = "/tmp";
  std::uint32_t grid = 32;          // vehicles: intersections per side
  std::uint32_t vehicles = 10'000;  // vehicles: managed vehicles to reach
  std::uint32_t active = 100'000;     // population: active background pedestrians
  std::uint32_t dormant = 1'000'000;  // population: dormant resident identities
  std::uint32_t residents = 0;        // population: how many of the active are community residents
  std::uint64_t warmup = 40;          // population: untimed steps at least (more until tiers settle)
  bool json = false;                  // population: also print one JSON line
  bool agents_given = false;
  bool repeat_given = false;
  bool warmup_given = false;
  bustle::bench::FanoutOptions fanout;  // fanout: everything but agents, repeat and dir
};

[[noreturn]] void usage(const char* msg) {
  if (msg != nullptr) std::fprintf(stderr, "bustle-bench: %s\n", msg);
  std::fprintf(stderr,
               "usage: bustle-bench step|snapshot [--agents N] [--steps S] [--repeat R] [--seed K] [--dir DIR]\n"
               "       bustle-bench population [--active N] [--residents R] [--dormant M] [--steps S] [--warmup W] [--seed K]"
               " [--json]\n"
               "       bustle-bench vehicles [--grid N] [--vehicles V] [--steps S] [--seed K]\n"
               "       bustle-bench stream [--agents N] [--grid N] [--vehicles V] [--steps S] [--seed K]\n"
               "       bustle-bench fanout [--clients N] [--stalled-percent P] [--agents N] [--seconds S] [--warmup W]"
               " [--repeat R] [--server PATH] [--dir DIR] [--outbound-max-bytes B] [--motion-tolerance-mm T]\n");
  std::exit(2);
}

Args parse(int argc, char** argv) {
  if (argc < 2) usage(nullptr);
  Args a;
  a.mode = argv[1];
  if (a.mode != "step" && a.mode != "snapshot" && a.mode != "vehicles" && a.mode != "population" &&
      a.mode != "stream" && a.mode != "fanout") {
    usage("unknown mode");
  }
  for (int i = 2; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--json") {
      a.json = true;
      continue;
    }
    if (i + 1 >= argc) usage(("missing value for " + f).c_str());
    const std::string v = argv[++i];
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    const bool numeric = end != nullptr && *end == '\0' && !v.empty();
    if (f == "--dir") {
      a.dir = v;
    } else if (f == "--server") {
      a.fanout.server = v;
    } else if (!numeric) {
      usage(("expected a number for " + f).c_str());
    } else if (f == "--agents") {
      a.agents = static_cast<std::uint32_t>(n);
      a.agents_given = true;
    } else if (f == "--steps") {
      a.steps = n;
    } else if (f == "--repeat") {
      a.repeat = static_cast<std::uint32_t>(std::max(1ull, n));
      a.repeat_given = true;
    } else if (f == "--seed") {
      a.seed = n;
    } else if (f == "--grid") {
      if (n < 2 || n > 1000) usage("--grid must be in [2, 1000]");
      a.grid = static_cast<std::uint32_t>(n);
    } else if (f == "--vehicles") {
      if (n < 1 || n > 4'000'000) usage("--vehicles must be in [1, 4000000]");
      a.vehicles = static_cast<std::uint32_t>(n);
    } else if (f == "--active") {
      if (n < 10 || n > 4'000'000) usage("--active must be in [10, 4000000]");
      a.active = static_cast<std::uint32_t>(n);
    } else if (f == "--residents") {
      if (n > 4'000'000) usage("--residents must be at most 4000000");
      a.residents = static_cast<std::uint32_t>(n);
    } else if (f == "--dormant") {
      if (n > 8'000'000) usage("--dormant must be at most 8000000");
      a.dormant = static_cast<std::uint32_t>(n);
    } else if (f == "--warmup") {
      a.warmup = n;
      a.warmup_given = true;
    } else if (f == "--clients") {
      if (n < 1 || n > 1000) usage("--clients must be in [1, 1000]");
      a.fanout.clients = static_cast<std::uint32_t>(n);
    } else if (f == "--stalled-percent") {
      if (n > 100) usage("--stalled-percent must be in [0, 100]");
      a.fanout.stalled_percent = static_cast<std::uint32_t>(n);
    } else if (f == "--seconds") {
      if (n < 1 || n > 3600) usage("--seconds must be in [1, 3600]");
      a.fanout.seconds = static_cast<std::uint32_t>(n);
    } else if (f == "--motion-tolerance-mm") {
      if (n > 1000) usage("--motion-tolerance-mm must be in [0, 1000]");
      a.fanout.motion_tolerance_mm = static_cast<std::uint16_t>(n);
    } else if (f == "--outbound-max-bytes") {
      if (n < 4096) usage("--outbound-max-bytes must be at least 4096");
      a.fanout.outbound_max_bytes = n;
    } else {
      usage(("unknown option " + f).c_str());
    }
  }
  return a;
}

// Entity capacity for n entities: a power of two, at least 1024, with 25 % headroom.
std::uint32_t capacity_for(std::uint32_t n) {
  std::uint32_t cap = 1024;
  while (cap < n + n / 4) cap *= 2;
  return cap;
}

bustle::core::Scenario scenario_for(std::uint32_t agents) {
  auto loaded = bustle::scenario::load_embedded_default();
  if (!loaded.ok()) {
    std::fprintf(stderr, "bustle-bench: %s\n", loaded.errors[0].to_string().c_str());
    std::exit(1);
  }
  bustle::core::Scenario s = *loaded.scenario;
  s.id = "bustle.bench." + std::to_string(agents);
  s.entity_capacity = capacity_for(agents);
  s.pedestrians.count = agents;
  s.pedestrians.spawn_per_step_max = std::max<std::uint32_t>(agents, 1);
  return s;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// CPU time of the calling thread in ms: unlike wall time it does not grow
// while other processes hold the cores, so on a loaded machine it is the
// better witness of what a change did (it still feels shared caches).
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

using bustle::bench::percentile;

long peak_rss_kb() { return bustle::bench::proc_status_kb("self", "VmHWM:"); }

// A scenario built in code and its world (null after printing every
// validation error), with the time both took.
struct BuiltWorld {
  bustle::core::Scenario scenario;
  std::unique_ptr<bustle::core::World> world;
  double build_s = 0.0;
};

template <class MakeScenario>
BuiltWorld build_world(MakeScenario&& make_scenario, std::uint64_t seed) {
  const auto t0 = Clock::now();
  BuiltWorld b{make_scenario(), nullptr, 0.0};
  auto created = bustle::core::World::create(b.scenario, seed);
  for (const auto& e : created.errors) std::fprintf(stderr, "bustle-bench: %s: %s\n", e.path.c_str(), e.message.c_str());
  b.world = std::move(created.world);
  b.build_s = ms(Clock::now() - t0) / 1000.0;
  return b;
}

std::unique_ptr<bustle::core::World> populated(const Args& a, const bustle::core::Scenario& s) {
  auto w = std::move(bustle::core::World::create(s, a.seed).world);
  w->step();  // spawns everyone (spawn cap = agents)
  for (int k = 0; k < 9; ++k) w->step();
  return w;
}

// Wall time of `steps` calls of World::step, one by one; `before` runs before
// each step, outside the timing.
struct StepTimes {
  std::vector<double> ms;  // per step
  std::vector<double> cpu_ms;  // per step, this thread's CPU time
  double total_s = 0.0;    // sum of the steps' times
  double p50() const { return percentile(ms, 0.5); }
  double p99() const { return percentile(ms, 0.99); }
  double max() const { return *std::max_element(ms.begin(), ms.end()); }
};

template <class Before>
StepTimes time_steps(bustle::core::World& w, std::uint64_t steps, Before&& before) {
  StepTimes t;
  t.ms.reserve(steps);
  t.cpu_ms.reserve(steps);
  for (std::uint64_t k = 0; k < steps; ++k) {
    before();
    const double c = thread_cpu_ms();
    const auto b = Clock::now();
    w.step();
    t.ms.push_back(ms(Clock::now() - b));
    t.cpu_ms.push_back(thread_cpu_ms() - c);
    t.total_s += t.ms.back() / 1000.0;
  }
  return t;
}

void print_step_times(const StepTimes& t) {
  std::printf("  step ms  p50 %.3f  p99 %.3f  max %.3f  mean %.3f\n", t.p50(), t.p99(), t.max(),
              t.total_s * 1000.0 / static_cast<double>(t.ms.size()));
}

int bench_step(const Args& a) {
  const auto s = scenario_for(a.agents);
  auto w = populated(a, s);
  const StepTimes t = time_steps(*w, a.steps, [] {});
  const double updates = static_cast<double>(w->pedestrians().size()) * static_cast<double>(a.steps);
  std::printf("step: %u agents, %" PRIu64 " steps (digest included)\n", w->pedestrians().size(), a.steps);
  print_step_times(t);
  std::printf("  agent updates/s  %.1f M\n", updates / t.total_s / 1e6);
  std::printf("  peak RSS  %.1f MiB\n", static_cast<double>(peak_rss_kb()) / 1024.0);
  std::printf("  final digest %016" PRIx64 "\n", w->digest());
  return 0;
}

// The population-mode city: the default city's geometry (scenario_for) with
//   - N background pedestrians (spawned on step 1);
//   - M resident identities in communities of kCommunitySize, each with one
//     schedule entry [0, 24) at density 0 in zone "dormant" (one sidewalk,
//     capacity 1), so every record stays dormant all day while the coordinator
//     and the digest still see all of them; entity capacity fits N (with
//     capacity_for's headroom) plus the M identities;
//   - tiers: full_cap 10 % and simulated_cap 30 % of N, hard_full_cap raised
//     to full_cap, transitions_per_step N / 100 (at least the default) so the
//     mix settles in a few hundred steps; default radii (Full 25 m, Simulated
//     500 m) and observers at the west block, the crossings and the east
//     block, so distance alone would want more than 10 % Full (about 15-20 %;
//     the report prints the share) and all the rest Simulated: the caps
//     decide. Background pedestrians have importance weight 1, so their
//     effective distance is the plain distance.
constexpr std::uint32_t kCommunitySize = 1000;

// `members` residents in communities of kCommunitySize named <zone>.<k>,
// living in `zone` with one all-day schedule entry.
void add_communities(bustle::core::Scenario& s, const std::string& zone, std::uint32_t members,
                     const bustle::core::ScheduleEntry& all_day) {
  for (std::uint32_t first = 0; first < members; first += kCommunitySize) {
    bustle::core::CommunitySpec c;
    c.id = zone + "." + std::to_string(first / kCommunitySize);
    c.base_population = std::min(kCommunitySize, members - first);
    c.professions = {all_day.activity};
    c.home_zone = zone;
    c.schedule = {all_day};
    s.communities.push_back(std::move(c));
  }
}

bustle::core::Scenario population_city(std::uint32_t active, std::uint32_t dormant, std::uint32_t residents) {
  using namespace bustle::core;
  Scenario s = scenario_for(active);
  s.id = "bustle.bench.population." + std::to_string(active) + "." + std::to_string(dormant);
  s.entity_capacity += dormant;
  const auto sidewalk = std::find_if(s.lanes.begin(), s.lanes.end(),
                                     [](const LaneSpec& l) { return l.kind == LaneKind::Sidewalk; });
  if (sidewalk == s.lanes.end()) {
    std::fprintf(stderr, "bustle-bench: the default city has no sidewalk\n");
    std::exit(1);
  }
  s.zones = {{"dormant", {sidewalk->id}, 1}};
  add_communities(s, "dormant", dormant, {0.0, 24.0, SchedulePhase::Home, "asleep", "dormant", "", 0.0});
  // --residents R: R of the N active pedestrians are community members, all
  // awake all day in a zone spanning every sidewalk, so the coordinator has
  // R active residents to keep (quotas high enough to wake them in warm-up).
  if (residents > 0) {
    ZoneSpec awake{"awake", {}, residents};
    for (const LaneSpec& l : s.lanes) {
      if (l.kind == LaneKind::Sidewalk) awake.lanes.push_back(l.id);
    }
    s.zones.push_back(std::move(awake));
    add_communities(s, "awake", residents, {0.0, 24.0, SchedulePhase::Leisure, "strolling", "awake", "", 1.0});
    s.pedestrians.count = active - residents;
    s.entity_capacity += residents;
    s.population.growth_quota = std::max<std::uint32_t>(2, residents / 100);
  }
  s.observers = {{40.0, 30.0}, {90.0, 30.0}, {140.0, 30.0}};
  s.tiers.full_cap = active / 10;
  s.tiers.simulated_cap = active * 3 / 10;
  s.tiers.hard_full_cap = std::max(s.tiers.hard_full_cap, s.tiers.full_cap);
  s.tiers.transitions_per_step = std::max(s.tiers.transitions_per_step, active / 100);
  return s;
}

// Hot per-pedestrian state: the PedestrianStore columns, each with the size of
// its element type (sizeof, so a changed type is counted automatically). All
// but dense_of hold one element per pedestrian; dense_of holds one per entity
// index (entity_capacity), which the report amortises over the active agents.
// Keep this list in step with world.hpp: column_list_complete() counts the
// store's vectors and the bench refuses to report when a column is missing.
struct Column {
  const char* name;
  std::size_t bytes;  // sizeof one element
  std::size_t reserved;  // elements reserved (capacity())
};

template <class T>
Column column(const char* name, const std::vector<T>& v) {
  return {name, sizeof(T), v.capacity()};
}

std::vector<Column> pedestrian_columns(const bustle::core::PedestrianStore& p) {
  return {column("id", p.id),         column("lane", p.lane),     column("s_m", p.s_m),
          column("hops", p.hops),     column("tier", p.tier),     column("priority", p.priority),
          column("origin", p.origin), column("phase", p.phase),   column("route", p.route)};
}

bool column_list_complete(const bustle::core::PedestrianStore& p) {
  using Store = bustle::core::PedestrianStore;
  constexpr std::size_t kVector = sizeof(std::vector<std::uint8_t>);
  const std::size_t listed = pedestrian_columns(p).size() + 1;  // + dense_of
  if (sizeof(Store) % kVector == 0 && sizeof(Store) / kVector == listed) return true;
  std::fprintf(stderr,
               "bustle-bench: PedestrianStore is %zu bytes, %zu vectors would be %zu: a column was added or changed; "
               "update pedestrian_columns() in tools/bench/main.cpp\n",
               sizeof(Store), listed, listed * kVector);
  return false;
}

int bench_population(const Args& a) {
  using namespace bustle::core;
  if (a.steps < 1) usage("--steps must be at least 1");
  if (a.residents > a.active) usage("--residents must be at most --active");
  const BuiltWorld built = build_world([&] { return population_city(a.active, a.dormant, a.residents); }, a.seed);
  if (!built.world) return 1;
  const Scenario& s = built.scenario;
  World& w = *built.world;
  const PedestrianStore& p = w.pedestrians();
  if (!column_list_complete(p)) return 1;

  // Warm-up: at least --warmup steps, then on until a pedestrian tier
  // resolution has nothing left deferred by the transition budget.
  const std::uint64_t warmup_max = std::max<std::uint64_t>(a.warmup, 20'000);
  const auto warm0 = Clock::now();
  std::uint64_t warmup = 0;
  const auto resolved_now = [&] { return w.step_index() % s.tiers.pedestrian_resolve_every_steps == 0; };
  while (warmup < warmup_max &&
         (warmup < a.warmup || p.size() < a.active || !resolved_now() || w.pedestrian_tiers().deferred > 0)) {
    w.step();
    ++warmup;
  }
  const double warm_s = ms(Clock::now() - warm0) / 1000.0;
  if (p.size() < a.active) {
    std::fprintf(stderr, "bustle-bench: only %u of %u pedestrians after %" PRIu64 " warm-up steps\n", p.size(),
                 a.active, warmup);
    return 1;
  }

  // Timed steps; before each, count the pedestrians its movement phase will
  // advance (tier_due for the coming step), outside the timing.
  // Heap allocations are counted over the timed steps only: from the first
  // call of the counting lambda (after time_steps reserved its buffers; the
  // lambda allocates nothing) to the end.
  std::uint64_t moved = 0, present = 0;
  std::uint64_t allocs0 = UINT64_MAX;
  const StepTimes t = time_steps(w, a.steps, [&] {
    if (allocs0 == UINT64_MAX) allocs0 = g_allocations.load(std::memory_order_relaxed);
    const std::uint64_t next = w.step_index() + 1;
    for (std::uint32_t i = 0; i < p.size(); ++i) moved += tier_due(next, p.id[i], static_cast<SimTier>(p.tier[i]));
    present += p.size();
  });
  const std::uint64_t allocs = g_allocations.load(std::memory_order_relaxed) - allocs0;

  // Tier mix at the end, from the tier column, and what distance alone wants.
  std::array<std::uint32_t, kSimTierCount> tiers{};
  std::uint32_t full_by_distance = 0;
  for (std::uint32_t i = 0; i < p.size(); ++i) {
    ++tiers[p.tier[i]];
    const Vec2 at = w.lanes().position(p.lane[i], p.s_m[i]);
    full_by_distance += nearest_observer_m(w.observers(), at.x_m, at.y_m) <= s.tiers.full_enter_m;
  }
  const double n = p.size();
  const auto share = [n](std::uint32_t c) { return 100.0 * c / n; };

  // Hot state per active agent.
  std::size_t row_bytes = 0, reserved_bytes = 0;
  std::string row;
  for (const Column& c : pedestrian_columns(p)) {
    row_bytes += c.bytes;
    reserved_bytes += c.bytes * c.reserved;
    row += std::string(row.empty() ? "" : " + ") + c.name + " " + std::to_string(c.bytes);
  }
  const double dense_of_bytes = static_cast<double>(sizeof(p.dense_of[0]) * p.dense_of.size()) / n;
  const double bytes_per_agent = static_cast<double>(row_bytes) + dense_of_bytes;

  const double steps = static_cast<double>(a.steps);
  const double ups = static_cast<double>(moved) / t.total_s;
  const double stepped = static_cast<double>(present) / t.total_s;
  const double rss_mib = static_cast<double>(peak_rss_kb()) / 1024.0;
  std::printf("population: %u active pedestrians, %u dormant residents in %zu communities, entity capacity %u, "
              "%" PRIu64 " timed steps of %u us, seed %" PRIu64 " (digest included)\n",
              p.size(), w.population().residents().size() - w.population().active_count(), s.communities.size(),
              s.entity_capacity, a.steps, s.step_us, a.seed);
  std::printf("  build %.2f s, warm-up %" PRIu64 " steps in %.2f s\n", built.build_s, warmup, warm_s);
  print_step_times(t);
  std::printf("  step cpu ms  p50 %.3f  p99 %.3f  max %.3f  (this thread's CPU time: wall minus time the machine "
              "gave to others)\n",
              percentile(t.cpu_ms, 0.5), percentile(t.cpu_ms, 0.99), *std::max_element(t.cpu_ms.begin(), t.cpu_ms.end()));
  std::printf("  heap allocations in the timed steps  %" PRIu64 " (%.2f per step)\n", allocs,
              static_cast<double>(allocs) / static_cast<double>(a.steps));
  std::printf("  agent updates/s  %.2f M  (%.0f moved per step: Full every step, Simulated every 2nd, Coarse "
              "every 8th)\n",
              ups / 1e6, static_cast<double>(moved) / steps);
  std::printf("  agents stepped/s  %.2f M  (every pedestrian, due or not, as bustle-bench step counts)\n", stepped / 1e6);
  // Hot state is what the step reads or writes per agent: the dense columns.
  // The id -> slot index (dense_of) has one entry per identity slot, dormant
  // ones included, and is touched only when a pedestrian leaves; it is
  // reported apart, and in the total.
  std::printf("  hot state per active agent  %zu B  (columns: %s)\n", row_bytes, row.c_str());
  std::printf("  id index per identity slot  %zu B  (dense_of: %zu slots = %.1f B per active agent; with it %.1f B)\n",
              sizeof(p.dense_of[0]), p.dense_of.size(), dense_of_bytes, bytes_per_agent);
  std::printf("  columns reserved for entity capacity  %.1f MiB (touched only as far as used)\n",
              static_cast<double>(reserved_bytes) / (1024.0 * 1024.0));
  std::printf("  tiers at end  full %u (%.1f%%)  simulated %u (%.1f%%)  coarse %u (%.1f%%); caps %u / %u; "
              "by distance alone %.1f%% would be full\n",
              tiers[0], share(tiers[0]), tiers[1], share(tiers[1]), tiers[2], share(tiers[2]), s.tiers.full_cap,
              s.tiers.simulated_cap, share(full_by_distance));
  std::printf("  peak RSS  %.1f MiB\n", rss_mib);
  std::printf("  final digest %016" PRIx64 "\n", w.digest());
  // Issue 17's targets, each with the figure it was judged on. The step
  // targets are stated for two sizes (and a quiet machine); other sizes get
  // the size-independent ones only.
  const auto verdict = [](bool met) { return met ? "met" : "NOT met"; };
  const double step_target_ms = a.active == 1'000'000 && a.dormant == 1'000'000 ? 15.0
                                : a.active == 100'000 && a.dormant == 1'000'000 ? 1.5
                                                                                : 0.0;
  if (step_target_ms > 0.0) {
    std::printf("  target: step p99 <= %.1f ms at %u active + %u dormant: %s (p99 %.3f ms wall, %.3f ms cpu; judge on "
                "a quiet machine)\n",
                step_target_ms, a.active, a.dormant, verdict(t.p99() <= step_target_ms), t.p99(),
                percentile(t.cpu_ms, 0.99));
  } else {
    std::printf("  target: step p99: none stated for this size (issue 17 states 100000 + 1000000 and 1000000 + "
                "1000000)\n");
  }
  std::printf("  target: hot state <= 32 B per active agent: %s (%zu B)\n", verdict(row_bytes <= 32), row_bytes);
  std::printf("  target: no heap allocation in the step after warm-up: %s (%" PRIu64 " in %" PRIu64 " steps)\n",
              verdict(allocs == 0), allocs, a.steps);
  const bool at_caps = tiers[0] == std::min(s.tiers.full_cap, p.size()) &&
                       tiers[1] == std::min(s.tiers.simulated_cap, p.size() - tiers[0]);
  std::printf("  target: tiers exactly at their caps: %s (full %u of cap %u, simulated %u of cap %u)\n",
              verdict(at_caps), tiers[0], s.tiers.full_cap, tiers[1], s.tiers.simulated_cap);
  if (a.json) {
    std::printf("{\"bench\":\"population\",\"active\":%u,\"dormant\":%u,\"entity_capacity\":%u,\"steps\":%" PRIu64
                ",\"warmup_steps\":%" PRIu64 ",\"seed\":%" PRIu64
                ",\"step_ms\":{\"p50\":%.4f,\"p99\":%.4f,\"max\":%.4f,\"mean\":%.4f},"
                "\"agent_updates_per_s\":%.0f,\"agents_stepped_per_s\":%.0f,\"moved_per_step\":%.1f,"
                "\"total_bytes_per_agent\":%.2f,\"hot_bytes_per_agent\":%zu,\"dense_of_bytes_per_agent\":%.2f,"
                "\"tiers\":{\"full\":%u,\"simulated\":%u,\"coarse\":%u},\"full_by_distance\":%u,"
                "\"peak_rss_mib\":%.1f,\"digest\":\"%016" PRIx64 "\"}\n",
                p.size(), a.dormant, s.entity_capacity, a.steps, warmup, a.seed, t.p50(), t.p99(), t.max(),
                t.total_s * 1000.0 / steps, ups, stepped, static_cast<double>(moved) / steps, bytes_per_agent,
                row_bytes, dense_of_bytes, tiers[0], tiers[1], tiers[2], full_by_distance, rss_mib, w.digest());
  }
  return 0;
}

int bench_snapshot(const Args& a) {
  const auto s = scenario_for(a.agents);
  auto w = populated(a, s);
  const std::string path = a.dir + "/bustle-bench-" + std::to_string(::getpid()) + ".db";
  std::filesystem::remove(path);
  bustle::persist::SnapshotStore store;
  if (auto e = bustle::persist::SnapshotStore::open(path, bustle::persist::FileKind::Snapshots, true, store); !e.ok()) {
    std::fprintf(stderr, "bustle-bench: %s\n", e.to_string().c_str());
    return 1;
  }
  std::vector<double> copy_ms, reuse_ms, commit_ms, restore_ms;
  bustle::core::WorldCheckpoint cp;
  bustle::core::WorldCheckpoint recycled = w->capture();  // a buffer the writer handed back
  for (std::uint32_t r = 0; r < a.repeat; ++r) {
    w->step();
    const auto b = Clock::now();
    cp = w->capture();
    copy_ms.push_back(ms(Clock::now() - b));
    const auto b2 = Clock::now();
    w->capture_into(recycled);
    reuse_ms.push_back(ms(Clock::now() - b2));
    const auto c = Clock::now();
    if (auto e = store.write_checkpoint("bench", "checkpoint", cp, "{}", 0); !e.ok()) {
      std::fprintf(stderr, "bustle-bench: %s\n", e.to_string().c_str());
      return 1;
    }
    commit_ms.push_back(ms(Clock::now() - c));
    const auto d = Clock::now();
    bustle::persist::LoadedCheckpoint lc;
    if (auto e = store.read_checkpoint("bench", lc); !e.ok()) {
      std::fprintf(stderr, "bustle-bench: %s\n", e.to_string().c_str());
      return 1;
    }
    auto restored = bustle::core::World::restore(s, lc.checkpoint);
    restore_ms.push_back(ms(Clock::now() - d));
    if (!restored.world || restored.world->digest() != w->compute_digest()) {
      std::fprintf(stderr, "bustle-bench: restore did not reproduce the state\n");
      return 1;
    }
  }
  store.db().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  std::printf("snapshot: %zu agents, entity capacity %u, %u repetitions\n", cp.pedestrians.id.size(),
              s.entity_capacity, a.repeat);
  std::printf("  sim-thread copy (capture)     ms  p50 %.3f  max %.3f\n", percentile(copy_ms, 0.5),
              *std::max_element(copy_ms.begin(), copy_ms.end()));
  std::printf("  sim-thread copy, recycled buf  ms  p50 %.3f  max %.3f\n", percentile(reuse_ms, 0.5),
              *std::max_element(reuse_ms.begin(), reuse_ms.end()));
  std::printf("  writer commit (one txn, WAL)  ms  p50 %.3f  max %.3f\n", percentile(commit_ms, 0.5),
              *std::max_element(commit_ms.begin(), commit_ms.end()));
  std::printf("  restore (read+check+validate) ms  p50 %.3f  max %.3f\n", percentile(restore_ms, 0.5),
              *std::max_element(restore_ms.begin(), restore_ms.end()));
  std::printf("  file size  %.2f MiB (one checkpoint)\n", static_cast<double>(bytes) / (1024.0 * 1024.0));
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  return 0;
}

// The vehicles-mode city (issue 4; the SUMO peer in sumo_grid.sh builds the
// same shape with netgenerate):
//   - N x N intersections 100 m apart; node (i, j) at (100 i, 100 j) m;
//   - between neighbours one road lane per direction, 100 m, 13.9 m/s, drawn
//     1.75 m right of the centre line; successors: every lane leaving the end
//     node except the U-turn;
//   - every lane ends at an intersection and carries a signal there: 10 s
//     cycle (4 s open, 1 s yield, 5 s closed); east/west approaches of a node
//     are half a cycle apart from its north/south approaches, and nodes are
//     staggered by ((3 i + 7 j) mod 10) s;
//   - one garage per block, entrance = the block's south edge eastbound,
//     route = the block counter-clockwise (east, north, west, south) with
//     route_end loop, so its vehicles circulate forever; counter-clockwise
//     loops use every directed lane at most once (the block on its left);
//   - V requests spread evenly over the garages by the content plan (all
//     offered on step 1); capacity = queue depth = that garage's share,
//     dispatch_per_step_max 1, cooldown 0, entrance_clear_m 1;
//   - one observer at the centre, Full radius beyond the city, full_cap = V:
//     every vehicle is Full (stride 1); no pedestrians.
constexpr double kBlockM = 100.0;
constexpr double kRoadSpeedMps = 13.9;
constexpr double kLaneOffsetM = 1.75;

enum Dir : std::uint32_t { kEast = 0, kNorth = 1, kWest = 2, kSouth = 3 };
constexpr std::array<const char*, 4> kDirName = {"e", "n", "w", "s"};
constexpr std::array<int, 4> kDx = {1, 0, -1, 0};
constexpr std::array<int, 4> kDy = {0, 1, 0, -1};

// The lane leaving node (i, j) towards `d`.
std::string road_id(std::uint32_t i, std::uint32_t j, Dir d) {
  return "r." + std::to_string(i) + "." + std::to_string(j) + "." + kDirName[d];
}

bustle::core::Scenario grid_city(std::uint32_t n, std::uint32_t vehicles) {
  using namespace bustle::core;
  Scenario s;
  s.id = "bustle.bench.grid." + std::to_string(n) + "." + std::to_string(vehicles);
  s.name = "bench grid " + std::to_string(n) + "x" + std::to_string(n) + ", " + std::to_string(vehicles) + " vehicles";
  s.entity_capacity = capacity_for(vehicles);
  s.pedestrians.count = 0;
  s.pedestrians.spawn_per_step_max = 1;

  const auto inside = [n](long i, long j) { return i >= 0 && j >= 0 && i < long{n} && j < long{n}; };
  constexpr std::uint32_t kCycleMs = 10'000;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) {
      for (std::uint32_t d = 0; d < 4; ++d) {
        const long ei = long{i} + kDx[d], ej = long{j} + kDy[d];
        if (!inside(ei, ej)) continue;
        const auto ti = static_cast<std::uint32_t>(ei), tj = static_cast<std::uint32_t>(ej);
        LaneSpec l;
        l.id = road_id(i, j, static_cast<Dir>(d));
        l.kind = LaneKind::Road;
        l.speed_mps_limit = kRoadSpeedMps;
        // Right of the direction of travel (dx, dy) is (dy, -dx).
        const double ox = kLaneOffsetM * kDy[d], oy = -kLaneOffsetM * kDx[d];
        l.points = {{kBlockM * i + ox, kBlockM * j + oy}, {kBlockM * ti + ox, kBlockM * tj + oy}};
        for (std::uint32_t nd = 0; nd < 4; ++nd) {
          if (nd == (d + 2) % 4) continue;  // no U-turn
          if (!inside(long{ti} + kDx[nd], long{tj} + kDy[nd])) continue;
          l.successors.push_back(road_id(ti, tj, static_cast<Dir>(nd)));
        }
        SignalSpec sg;
        sg.id = "sig." + l.id;
        sg.lane = l.id;
        sg.open_ms = 4000;
        sg.yield_ms = 1000;
        sg.closed_ms = 5000;
        const std::uint32_t stagger = ((3 * ti + 7 * tj) % 10) * 1000;
        const bool east_west = d == kEast || d == kWest;
        sg.offset_ms = (stagger + (east_west ? 0 : kCycleMs / 2)) % kCycleMs;
        s.signals.push_back(std::move(sg));
        s.lanes.push_back(std::move(l));
      }
    }
  }

  const std::uint32_t blocks = (n - 1) * (n - 1);
  for (std::uint32_t b = 0; b < blocks; ++b) {
    const std::uint32_t i = b % (n - 1), j = b / (n - 1);
    const std::uint32_t share = vehicles / blocks + (b < vehicles % blocks ? 1 : 0);
    if (share == 0) continue;
    GarageSpec g;
    g.id = "g." + std::to_string(i) + "." + std::to_string(j);
    g.route = {road_id(i, j, kEast), road_id(i + 1, j, kNorth), road_id(i + 1, j + 1, kWest),
               road_id(i, j + 1, kSouth)};
    g.lane = g.route[0];
    g.route_end = RouteEnd::Loop;
    g.prototypes = {"car"};
    g.capacity = share;
    g.queue_depth = share;
    g.dispatch_per_step_max = 1;
    g.cooldown_frames = 0;
    g.entrance_clear_m = 1.0;
    for (std::uint32_t k = 0; k < share; ++k) {
      s.vehicle_plan.requests.push_back({"q" + std::to_string(k), g.id, "car", g.lane, 10});
    }
    s.garages.push_back(std::move(g));
  }
  s.vehicle_plan.batch_size = vehicles;
  s.vehicle_plan.batch_interval_steps = 1;

  const double centre = kBlockM * (n - 1) / 2.0;
  s.observers = {{centre, centre}};
  const double beyond = 2.0 * kBlockM * n;  // farther than any corner
  s.tiers.full_enter_m = beyond;
  s.tiers.full_exit_m = beyond;
  s.tiers.simulated_enter_m = beyond;
  s.tiers.simulated_exit_m = beyond;
  s.tiers.full_cap = vehicles;
  s.tiers.hard_full_cap = std::max(s.tiers.hard_full_cap, vehicles);  // the safety cap must not bind either
  s.tiers.simulated_cap = vehicles;
  s.tiers.transitions_per_step = std::max<std::uint32_t>(vehicles, 1);
  return s;
}

int bench_vehicles(const Args& a) {
  using namespace bustle::core;
  if (a.steps < 1) usage("--steps must be at least 1");
  if (a.grid < 2) usage("--grid must be at least 2");
  const BuiltWorld built = build_world([&] { return grid_city(a.grid, a.vehicles); }, a.seed);
  if (!built.world) return 1;
  const Scenario& s = built.scenario;
  World& w = *built.world;

  // Warm-up: until every planned vehicle is managed. Each garage dispatches
  // about one vehicle per headway gap (~7 steps), so this is bounded by the
  // largest garage share; the cap below only catches a broken scenario.
  const std::uint64_t warmup_max = 100'000;
  const auto warm0 = Clock::now();
  std::uint64_t warmup = 0;
  while (w.vehicles().store().size() < a.vehicles && warmup < warmup_max) {
    w.step();
    ++warmup;
  }
  const double warm_s = ms(Clock::now() - warm0) / 1000.0;
  if (w.vehicles().store().size() < a.vehicles) {
    std::fprintf(stderr, "bustle-bench: only %u of %u vehicles managed after %" PRIu64 " warm-up steps\n",
                 w.vehicles().store().size(), a.vehicles, warmup);
    return 1;
  }

  // Timed steps. Everything the loop touches is allocated before it starts.
  std::vector<double> t(a.steps, 0.0);
  std::uint64_t moving = 0, managed = 0, allocs_max = 0;
  std::array<std::uint64_t, kControlPolicyCount> policy{};
  const std::uint64_t allocs0 = g_allocations.load(std::memory_order_relaxed);
  const auto t0 = Clock::now();
  for (std::uint64_t k = 0; k < a.steps; ++k) {
    const std::uint64_t before = g_allocations.load(std::memory_order_relaxed);
    const auto b = Clock::now();
    w.step();
    const auto e = Clock::now();
    allocs_max = std::max(allocs_max, g_allocations.load(std::memory_order_relaxed) - before);
    t[k] = ms(e - b);
    const VehicleStepCounts& c = w.vehicles().last_step();
    moving += c.moving;
    managed += w.vehicles().store().size();
    for (std::size_t p = 0; p < kControlPolicyCount; ++p) policy[p] += c.per_policy[p];
  }
  const double total_s = ms(Clock::now() - t0) / 1000.0;
  const std::uint64_t allocs = g_allocations.load(std::memory_order_relaxed) - allocs0;

  const double steps = static_cast<double>(a.steps);
  const TierCounts& tiers = w.vehicles().last_tiers();
  std::printf("vehicles: grid %ux%u (%zu road lanes, %zu signals, %zu garages), %u vehicles, %" PRIu64
              " timed steps of %u us, seed %" PRIu64 "\n",
              a.grid, a.grid, s.lanes.size(), s.signals.size(), s.garages.size(), w.vehicles().store().size(),
              a.steps, s.step_us, a.seed);
  std::printf("  build %.2f s, warm-up %" PRIu64 " steps in %.2f s\n", built.build_s, warmup, warm_s);
  std::printf("  tiers at end  full %u  simulated %u  coarse %u\n", tiers.per_tier[0], tiers.per_tier[1],
              tiers.per_tier[2]);
  std::printf("  step ms  p50 %.3f  p99 %.3f  max %.3f  mean %.3f\n", percentile(t, 0.5), percentile(t, 0.99),
              *std::max_element(t.begin(), t.end()), total_s * 1000.0 / steps);
  std::printf("  vehicle updates/s  %.2f M  (%.0f vehicles x %" PRIu64 " steps in %.3f s, digest included)\n",
              static_cast<double>(managed) / total_s / 1e6, static_cast<double>(managed) / steps, a.steps, total_s);
  std::printf("  moving per step  %.1f (%.1f%%)\n", static_cast<double>(moving) / steps,
              100.0 * static_cast<double>(moving) / static_cast<double>(std::max<std::uint64_t>(managed, 1)));
  std::printf("  policy mix per step ");
  for (std::size_t p = 0; p < kControlPolicyCount; ++p) {
    if (policy[p] == 0) continue;
    std::printf(" %s %.1f", to_string(static_cast<ControlPolicy>(p)), static_cast<double>(policy[p]) / steps);
  }
  std::printf("\n");
  std::printf("  heap allocations per step  mean %.2f  max %" PRIu64 "\n", static_cast<double>(allocs) / steps,
              allocs_max);
  std::printf("  peak RSS  %.1f MiB\n", static_cast<double>(peak_rss_kb()) / 1024.0);
  std::printf("  final digest %016" PRIx64 "\n", w.digest());
  // One machine-readable line for compare_sumo.sh.
  std::printf("RESULT bustle vehicles=%u steps=%" PRIu64 " seconds=%.6f ups=%.1f p50_ms=%.4f p99_ms=%.4f\n",
              w.vehicles().store().size(), a.steps, total_s, static_cast<double>(managed) / total_s,
              percentile(t, 0.5), percentile(t, 0.99));
  return 0;
}

// One city of the stream bench: S steps, one whole-city client.
void stream_city(const char* name, bustle::core::World& w, std::uint64_t steps) {
  using namespace bustle;
  const net::WelcomeInfo welcome = net::make_welcome_info(w, "bench", net::ClockMode::Fast);
  net::StreamTracker tracker;
  net::ClientInterest interest;
  interest.budgets = {net::kActorBudgetMax, net::kInstanceBudgetMax, net::kMarkerBudgetMax};
  tracker.set_interest(interest, true);
  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  net::FramePool pool;  // as the server does: frames reused once released
  auto previous = pool.make(w, welcome.archetypes, 0);
  tracker.encode(*previous, nullptr, welcome.stream, fbb, false);  // the baseline, not counted
  const std::size_t baseline_bytes = fbb.GetSize() + proto::kLengthPrefixBytes;
  std::uint64_t bytes = 0, moving = 0, entities = 0, with_motion = 0, records = 0;
  std::vector<double> encode_us, frame_us;  // network thread per client; sim thread per step
  encode_us.reserve(steps);
  frame_us.reserve(steps);
  for (std::uint64_t k = 0; k < steps; ++k) {
    w.step();
    const auto f0 = Clock::now();
    auto frame = pool.make(w, welcome.archetypes, 0);
    frame_us.push_back(ms(Clock::now() - f0) * 1000.0);
    const auto b = Clock::now();
    const net::StreamTracker::Counts c = tracker.encode(*frame, nullptr, welcome.stream, fbb, false);
    encode_us.push_back(ms(Clock::now() - b) * 1000.0);
    bytes += fbb.GetSize() + proto::kLengthPrefixBytes;
    records += c.motion;
    with_motion += c.motion > 0;
    // Moving: same entity, lane or distance changed since the previous step.
    std::size_t j = 0;
    for (const net::PublishedEntity& e : frame->entities) {
      while (j < previous->entities.size() && previous->entities[j].id.index < e.id.index) ++j;
      if (j < previous->entities.size() && previous->entities[j].id == e.id &&
          (previous->entities[j].lane != e.lane || previous->entities[j].s_mm != e.s_mm)) {
        ++moving;
      }
    }
    entities += frame->entities.size();
    previous = std::move(frame);
  }
  const double per_moving = static_cast<double>(bytes) / static_cast<double>(std::max<std::uint64_t>(moving, 1));
  std::printf("stream %s: %.0f entities (%.0f moving) per step, %" PRIu64 " steps, baseline %zu B\n", name,
              static_cast<double>(entities) / static_cast<double>(steps),
              static_cast<double>(moving) / static_cast<double>(steps), steps, baseline_bytes);
  std::printf("  bytes per moving entity per step  %.3f  (%.1f B per delta, %.1f motion records per step, "
              "%.0f%% of deltas with motion)\n",
              per_moving, static_cast<double>(bytes) / static_cast<double>(steps),
              static_cast<double>(records) / static_cast<double>(steps),
              100.0 * static_cast<double>(with_motion) / static_cast<double>(steps));
  std::printf("  encode per client per step  p50 %.1f us  p99 %.1f us;  frame build (sim thread) p50 %.1f us  p99 %.1f us\n",
              percentile(encode_us, 0.5), percentile(encode_us, 0.99), percentile(frame_us, 0.5),
              percentile(frame_us, 0.99));
  std::printf("RESULT stream city=%s entities=%.0f bytes_per_moving=%.4f\n", name,
              static_cast<double>(entities) / static_cast<double>(steps), per_moving);
}

int bench_stream(const Args& a) {
  if (a.steps < 1) usage("--steps must be at least 1");
  {
    auto loaded = bustle::scenario::load_embedded_default();
    auto w = std::move(bustle::core::World::create(*loaded.scenario, a.seed).world);
    for (int k = 0; k < 50; ++k) w->step();
    stream_city("default", *w, a.steps);
  }
  {
    auto w = populated(a, scenario_for(a.agents));
    stream_city(("pedestrians-" + std::to_string(a.agents)).c_str(), *w, a.steps);
  }
  {
    const BuiltWorld built = build_world([&] { return grid_city(a.grid, a.vehicles); }, a.seed);
    if (!built.world) return 1;
    std::uint64_t warmup = 0;
    while (built.world->vehicles().store().size() < a.vehicles && warmup++ < 100'000) built.world->step();
    stream_city(("vehicle-grid-" + std::to_string(a.grid)).c_str(), *built.world, a.steps);
  }
  return 0;
}

}  // namespace

// fanout: the server next to this binary in the build tree unless --server.
int bench_fanout(const Args& a, const char* argv0) {
  bustle::bench::FanoutOptions o = a.fanout;
  if (a.agents_given) o.agents = a.agents;
  if (a.repeat_given) o.repeat = a.repeat;
  if (a.warmup_given) o.warmup_seconds = static_cast<std::uint32_t>(std::min<std::uint64_t>(a.warmup, 600));
  o.dir = a.dir;
  if (o.server.empty()) {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    o.server = ec ? std::string(argv0) : (self.parent_path() / "../../server/app/bustle-server").lexically_normal().string();
  }
  return bustle::bench::run_fanout(o);
}

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  if (a.mode == "fanout") return bench_fanout(a, argv[0]);
  if (a.mode == "stream") return bench_stream(a);
  if (a.mode == "vehicles") return bench_vehicles(a);
  if (a.mode == "population") return bench_population(a);
  return a.mode == "step" ? bench_step(a) : bench_snapshot(a);
}
