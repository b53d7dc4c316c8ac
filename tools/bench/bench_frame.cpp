// `frame`: the live server's streaming work per step without sockets or
// client processes, so that a change to it can be timed on a quiet core.
//
// On the district city of `fanout --city-scale` (fanout_city.hpp) stepped
// with T threads, every step: the world's step, the published frame built
// for the union of the K district clients' interest (the server's coverage,
// on the step's threads as the sim thread builds it), the frame's spatial
// index (network thread, once per frame) and each client's Delta encoded by
// its own StreamTracker (network thread, per client). Prints p50 / p99 of
// each in wall time and in this process's CPU time (every thread, the
// executor's spinning included), the entities the frame poses, what each
// client holds, and the encode cost per held entity. The bytes are the
// server's: the same trackers, frames and budgets as a `fanout` district
// client. It fails (exit 1) when a client does not hold what its interest
// covers.
#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "bustle/app/thread_phase_executor.hpp"
#include "bustle/core/world.hpp"
#include "bustle/net/server.hpp"
#include "bustle/net/stream_tracker.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "fanout_city.hpp"
#include "measure.hpp"
#include "report.hpp"

namespace bustle::bench {
namespace {

// CPU time of the whole process (every thread), ms.
double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// A district client's interest, as fanout's: one observer at its district's
// centre with the district's radius, the district budgets, the default
// motion tolerance.
net::ClientInterest district_interest(const District& d) {
  net::ClientInterest in;
  net::ClientObserver o;
  o.x_m = d.x_m;
  o.y_m = d.y_m;
  o.radius_m = d.radius_m;
  in.observers = {o};
  in.budgets = {kDistrictActors, kDistrictInstances, kDistrictMarkers};
  return in;
}

// Wall and process-CPU samples of one part of the step, ms.
struct Timed {
  std::vector<double> wall, cpu;
  template <class F>
  void time(F&& f) {
    const double c0 = process_cpu_ms();
    const auto t0 = Clock::now();
    f();
    wall.push_back(ms(Clock::now() - t0));
    cpu.push_back(process_cpu_ms() - c0);
  }
  std::string text() const {
    char buf[160];
    std::snprintf(buf, sizeof buf, "p50 %.3f  p99 %.3f ms wall; CPU p50 %.3f  p99 %.3f ms",
                  percentile(wall, 0.5), percentile(wall, 0.99), percentile(cpu, 0.5),
                  percentile(cpu, 0.99));
    return buf;
  }
  nlohmann::json json() const {
    return {{"wall_p50_ms", percentile(wall, 0.5)},
            {"wall_p99_ms", percentile(wall, 0.99)},
            {"cpu_p50_ms", percentile(cpu, 0.5)},
            {"cpu_p99_ms", percentile(cpu, 0.99)}};
  }
};

struct Clients {
  std::vector<net::StreamTracker> trackers;
  net::Coverage coverage{false, {}, 0};
  std::uint64_t held = 0;  // summed over the clients, every timed step
};

// Whether every client holds its district's share (District::holds_its_share),
// as fanout checks its district clients; prints the first that does not.
bool interest_applied(const DistrictCity& city, const Clients& clients) {
  for (std::size_t k = 0; k < clients.trackers.size(); ++k) {
    const District& d = city.districts[k];
    const auto held = static_cast<double>(clients.trackers[k].received());
    if (!d.holds_its_share(held)) {
      std::fprintf(stderr, "frame: client %zu holds %.0f entities, expected %.0f to %.0f\n", k,
                   held, d.held_min(), d.held_max());
      return false;
    }
  }
  return true;
}

Clients subscribe(const DistrictCity& city) {
  Clients c;
  c.trackers.resize(city.districts.size());
  for (std::size_t k = 0; k < city.districts.size(); ++k) {
    const net::ClientInterest in = district_interest(city.districts[k]);
    c.trackers[k].set_interest(in, true);
    for (const net::CoverageDisc& d : net::coverage_need(in).discs) c.coverage.discs.push_back(d);
  }
  return c;
}

}  // namespace

int bench_frame(const Args& a) {
  using namespace bustle;
  const std::uint32_t share = a.frame_share != 0 ? a.frame_share : a.frame_pedestrians / 50;
  const DistrictCity city = make_district_city(a.frame_pedestrians, a.frame_clients, share);
  scenario::LoadResult loaded = scenario::load_scenario_text(city.scenario_json, "district city");
  if (!loaded.ok()) {
    std::fprintf(stderr, "frame: the district city is refused: %s\n",
                 loaded.errors.front().message.c_str());
    return 1;
  }
  auto created = core::World::create(*loaded.scenario, a.seed);
  if (!created.world) {
    std::fprintf(stderr, "frame: the district city's world could not be built\n");
    return 1;
  }
  core::World& w = *created.world;
  app::ThreadPhaseExecutor threads(a.frame_threads);
  w.set_phase_executor(&threads);
  for (int k = 0; k < 200 && w.pedestrians().size() < a.frame_pedestrians; ++k) w.step();
  for (int k = 0; k < 20; ++k) w.step();  // tiers settle

  const net::WelcomeInfo welcome = net::make_welcome_info(w, "bench", net::ClockMode::Fast);
  Clients clients = subscribe(city);
  net::FramePool pool;
  net::SpatialIndex index;
  flatbuffers::FlatBufferBuilder fbb(1 << 20);
  Timed step, frame, spatial, encode;  // encode: one sample per client per step
  std::uint64_t posed = 0;
  for (std::uint64_t s = 0; s <= a.frame_steps; ++s) {
    const bool timed = s > 0;  // the first frame carries every client's baseline
    Timed scratch;
    Timed& into_step = timed ? step : scratch;
    Timed& into_frame = timed ? frame : scratch;
    Timed& into_spatial = timed ? spatial : scratch;
    Timed& into_encode = timed ? encode : scratch;
    into_step.time([&] { w.step(); });
    std::shared_ptr<const net::PublishedFrame> f;
    into_frame.time([&] { f = pool.make(w, welcome.archetypes, 0, {}, true, clients.coverage); });
    into_spatial.time([&] { index.build(*f); });
    for (net::StreamTracker& t : clients.trackers) {
      into_encode.time([&] { t.encode(*f, &index, welcome.stream, fbb, false); });
      if (timed) clients.held += t.received();
    }
    if (timed) posed += f->entities.size();
  }
  const double n = static_cast<double>(a.frame_steps);
  const double held = static_cast<double>(clients.held) / n / static_cast<double>(a.frame_clients);
  const double encode_cpu = percentile(encode.cpu, 0.5);
  std::printf("frame: district city of %u pedestrians, %u clients of %u each, %" PRIu64
              " timed steps, %u thread%s, seed %" PRIu64 "\n",
              w.pedestrians().size(), a.frame_clients, share, a.frame_steps, a.frame_threads,
              a.frame_threads == 1 ? "" : "s", a.seed);
  std::printf("  world step            %s\n", step.text().c_str());
  std::printf("  frame build           %s (posing %.0f entities)\n", frame.text().c_str(),
              static_cast<double>(posed) / n);
  std::printf("  spatial index         %s\n", spatial.text().c_str());
  std::printf("  encode per client     %s (holding %.0f: %.1f ns CPU per held entity)\n",
              encode.text().c_str(), held, encode_cpu * 1e6 / std::max(held, 1.0));
  std::printf("  per client per step   %.3f ms CPU (encode + frame build, index / clients)\n",
              encode_cpu + (percentile(frame.cpu, 0.5) + percentile(spatial.cpu, 0.5)) /
                               static_cast<double>(a.frame_clients));
  if (!interest_applied(city, clients)) return 1;
  figures() = {{"pedestrians", w.pedestrians().size()},
               {"clients", a.frame_clients},
               {"share", share},
               {"threads", a.frame_threads},
               {"posed", static_cast<double>(posed) / n},
               {"held_per_client", held},
               {"step", step.json()},
               {"frame_build", frame.json()},
               {"spatial_index", spatial.json()},
               {"encode_per_client", encode.json()}};
  return 0;
}

}  // namespace bustle::bench
