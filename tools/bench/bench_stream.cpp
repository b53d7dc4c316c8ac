// `stream` (protocol v2) measures what one whole-city client is sent: for the
// default city, a city of N pedestrians on its geometry and the vehicle grid,
// S steps after a warm-up, each step's Delta encoded by a StreamTracker with
// budgets large enough to receive every entity. It reports wire bytes (length
// prefix included) per moving entity per step (an entity moves when its lane
// or distance changed since the previous step), the share of deltas that
// carry any motion record, the encode time per client per step (network
// thread) and the time to build the published frame (sim thread, per step).
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "bustle/core/world.hpp"
#include "bustle/net/server.hpp"
#include "bustle/net/stream_tracker.hpp"
#include "bustle/proto/framing.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "measure.hpp"
#include "report.hpp"

namespace bustle::bench {
namespace {

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
    const net::StreamTracker::Counts c =
        tracker.encode(*frame, nullptr, welcome.stream, fbb, false);
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
  const double per_moving =
      static_cast<double>(bytes) / static_cast<double>(std::max<std::uint64_t>(moving, 1));
  std::printf("stream %s: %.0f entities (%.0f moving) per step, %" PRIu64
              " steps, baseline %zu B\n",
              name, static_cast<double>(entities) / static_cast<double>(steps),
              static_cast<double>(moving) / static_cast<double>(steps), steps, baseline_bytes);
  std::printf(
      "  bytes per moving entity per step  %.3f  (%.1f B per delta, %.1f motion records per step, "
      "%.0f%% of deltas with motion)\n",
      per_moving, static_cast<double>(bytes) / static_cast<double>(steps),
      static_cast<double>(records) / static_cast<double>(steps),
      100.0 * static_cast<double>(with_motion) / static_cast<double>(steps));
  std::printf(
      "  encode per client per step  p50 %.1f us  p99 %.1f us;  frame build (sim thread) p50 %.1f "
      "us  p99 %.1f us\n",
      percentile(encode_us, 0.5), percentile(encode_us, 0.99), percentile(frame_us, 0.5),
      percentile(frame_us, 0.99));
  std::printf("RESULT stream city=%s entities=%.0f bytes_per_moving=%.4f\n", name,
              static_cast<double>(entities) / static_cast<double>(steps), per_moving);
  bustle::bench::figures()["cities"].push_back(
      {{"city", name},
       {"entities", static_cast<double>(entities) / static_cast<double>(steps)},
       {"moving", static_cast<double>(moving) / static_cast<double>(steps)},
       {"bytes_per_moving_entity", per_moving},
       {"bytes_per_delta", static_cast<double>(bytes) / static_cast<double>(steps)},
       {"motion_records_per_step", static_cast<double>(records) / static_cast<double>(steps)},
       {"encode_us", {{"p50", percentile(encode_us, 0.5)}, {"p99", percentile(encode_us, 0.99)}}},
       {"frame_build_us",
        {{"p50", percentile(frame_us, 0.5)}, {"p99", percentile(frame_us, 0.99)}}}});
}

}  // namespace

int bench_stream(const Args& a) {
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
    while (built.world->vehicles().store().size() < a.vehicles && warmup++ < 100'000)
      built.world->step();
    stream_city(("vehicle-grid-" + std::to_string(a.grid)).c_str(), *built.world, a.steps);
  }
  return 0;
}

}  // namespace bustle::bench
