// bustle-sdk-bench: what the C++ SDK costs a rendering client per frame.
//
//   bustle-sdk-bench [--entities N] [--frames F] [--corrections-percent P] [--json]
//
// A synthetic city (200 straight and bent lanes) with N entities entered in
// a baseline Delta; then F Delta frames, each with motion corrections for P%
// of the entities and a few hint changes, encoded the way a server sends
// them. Per frame it times, separately: decode (FrameReader verify +
// decode_delta), apply (mirror, one pose sample per entity, extract_update),
// render (interpolation of every drawn slot + apply_interpolation into the
// backends). Backends: the actor pool (headless factory, default 8 / 256) for
// Actor, headless backends for Instanced and Marker. Prints ns per frame and
// per entity (median over the frames) and bytes per slot.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bustle/client/actor_pool.hpp"
#include "bustle/client/frame_reader.hpp"
#include "bustle/client/headless_backend.hpp"
#include "bustle/client/representation.hpp"
#include "bustle/proto/framing.hpp"
#include "bustle/proto/motion.hpp"
#include "bustle/proto/wire.hpp"
#include "report.hpp"

namespace c = bustle::client;
namespace wire = bustle::wire;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint32_t kLanes = 200;
constexpr std::uint32_t kStepUs = 100'000;

struct Args {
  std::uint32_t entities = 2000;
  std::uint32_t frames = 200;
  std::uint32_t corrections_percent = 10;
  bool json = false;  // also print one JSON line (report.hpp)
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "bustle-sdk-bench: %s\nusage: bustle-sdk-bench [--entities N] [--frames F] "
               "[--corrections-percent P] [--json]\n",
               why);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--json") {
      a.json = true;
      continue;
    }
    if (i + 1 >= argc) usage("a flag needs a value");
    const unsigned long v = std::strtoul(argv[++i], nullptr, 10);
    if (flag == "--entities" && v >= 1 && v <= 1'000'000) {
      a.entities = static_cast<std::uint32_t>(v);
    } else if (flag == "--frames" && v >= 1 && v <= 100'000) {
      a.frames = static_cast<std::uint32_t>(v);
    } else if (flag == "--corrections-percent" && v <= 100) {
      a.corrections_percent = static_cast<std::uint32_t>(v);
    } else {
      usage(("bad flag or value: " + flag).c_str());
    }
  }
  return a;
}

// Lane i: 400 m along +x at y = 10 i; odd lanes bend 90 degrees half-way.
c::WelcomeInfo world() {
  c::WelcomeInfo w;
  w.step_us = kStepUs;
  for (std::uint32_t i = 0; i < kLanes; ++i) {
    c::LaneGeometry lane;
    lane.index = i;
    const double y = 10.0 * i;
    lane.points = {{0.0, y}, {200.0, y}};
    lane.points.push_back(i % 2 == 1 ? c::LanePoint{200.0, y + 200.0} : c::LanePoint{400.0, y});
    lane.length_m = 400.0;
    lane.length_mm = 400'000;
    w.lanes.push_back(lane);
  }
  return w;
}

std::vector<std::uint8_t> frame_of(flatbuffers::FlatBufferBuilder& fbb,
                                   flatbuffers::Offset<wire::Delta> delta) {
  const auto root = wire::CreateServerFrame(fbb, wire::ServerMessage::Delta, delta.Union());
  wire::FinishServerFrameBuffer(fbb, root);
  std::vector<std::uint8_t> out;
  bustle::proto::append_frame(out, {fbb.GetBufferPointer(), fbb.GetSize()});
  return out;
}

wire::RepresentationHint hint_for(std::uint32_t i) {
  if (i < 200) return wire::RepresentationHint::Actor;
  return i % 3 == 0 ? wire::RepresentationHint::Marker : wire::RepresentationHint::Instanced;
}

std::vector<std::uint8_t> baseline(const Args& a) {
  flatbuffers::FlatBufferBuilder fbb(64 + a.entities * 40);
  std::vector<wire::EntityEnter> entered;
  for (std::uint32_t i = 0; i < a.entities; ++i) {
    const wire::RepresentationHint hint = hint_for(i);
    const wire::SimTier tier = hint == wire::RepresentationHint::Actor ? wire::SimTier::Full
                               : hint == wire::RepresentationHint::Marker
                                   ? wire::SimTier::Coarse
                                   : wire::SimTier::Simulated;
    entered.emplace_back(wire::EntityId(i, 1), i % kLanes, (i * 7919u) % 100'000u,
                         1000u + i % 1500u, static_cast<std::uint16_t>(i % 4),
                         wire::EntityKind::Pedestrian, tier, hint, wire::ControlPolicy::RouteFollow,
                         false);
  }
  const auto delta =
      wire::CreateDelta(fbb, 1, kStepUs, 0, true, fbb.CreateVectorOfStructs(entered));
  return frame_of(fbb, delta);
}

std::vector<std::uint8_t> step_frame(const Args& a, std::uint64_t step) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  bustle::proto::MotionWriter writer;
  const std::uint32_t every =
      a.corrections_percent == 0 ? 0 : std::max(1u, 100u / a.corrections_percent);
  for (std::uint32_t i = 0; every != 0 && i < a.entities; ++i) {
    if ((i + step) % every != 0) continue;
    const std::uint32_t speed = 1000u + i % 1500u;
    const auto s =
        static_cast<std::uint32_t>(((i * 7919u) % 100'000u + speed * (step - 1) / 10) % 390'000u);
    writer.add(bustle::proto::MotionRecord{i, false, 0, s, speed});
  }
  // A few hint changes per frame, moving entities between Instanced and Marker.
  std::vector<wire::EntityChange> changes;
  for (std::uint32_t k = 0; k < 4 && a.entities > 200; ++k) {
    const std::uint32_t i =
        200 + static_cast<std::uint32_t>((step * 37 + k * 101) % (a.entities - 200));
    const bool to_marker = (step + k) % 2 == 0;
    changes.emplace_back(
        i, wire::EntityField::Representation,
        static_cast<std::uint8_t>(to_marker ? wire::RepresentationHint::Marker
                                            : wire::RepresentationHint::Instanced));
  }
  const auto motion = fbb.CreateVector(writer.bytes());
  const auto delta = wire::CreateDelta(fbb, step, step * kStepUs, 0, false, 0, 0, motion,
                                       fbb.CreateVectorOfStructs(changes));
  return frame_of(fbb, delta);
}

std::uint64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * 4096;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double ns_since(Clock::time_point t0) {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  std::string command = "bustle-sdk-bench";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  bustle::bench::print_header("sdk", command);
  std::vector<std::vector<std::uint8_t>> frames;
  frames.reserve(a.frames);
  for (std::uint32_t f = 0; f < a.frames; ++f) frames.push_back(step_frame(a, 2 + f));

  const std::uint64_t rss_before = rss_bytes();
  c::HeadlessActorFactory factory;
  c::ActorPoolBackend actors(factory);
  c::HeadlessBackend instances({.name = "instances", .record_events = false});
  c::HeadlessBackend markers({.name = "markers", .record_events = false});
  // Backends first: they must outlive their installation in the layer.
  c::RepresentationLayer layer;
  layer.set_world(world());
  layer.set_backend(c::RepresentationHint::Actor, &actors);
  layer.set_backend(c::RepresentationHint::Instanced, &instances);
  layer.set_backend(c::RepresentationHint::Marker, &markers);
  c::FrameReader reader;
  c::Delta delta;
  const auto decode = [&](const std::vector<std::uint8_t>& bytes) {
    reader.feed(bytes);
    const c::ReadResult r = reader.next();
    if (r.status != c::ReadStatus::Frame || r.frame->message_as_Delta() == nullptr)
      usage("bench frame did not verify");
    if (!c::decode_delta(*r.frame->message_as_Delta(), delta).empty())
      usage("bench frame did not decode");
  };
  decode(baseline(a));
  layer.apply(delta, 0);
  layer.render_at(0);
  const std::uint64_t rss_after = rss_bytes();

  std::vector<double> decode_ns, apply_ns, render_ns, total_ns;
  std::size_t motion_records = 0, bytes = 0;
  for (std::uint32_t f = 0; f < a.frames; ++f) {
    const auto t0 = Clock::now();
    decode(frames[f]);
    const double d_ns = ns_since(t0);
    const auto t1 = Clock::now();
    layer.apply(delta, static_cast<std::int64_t>(delta.sim_time_us));
    const double a_ns = ns_since(t1);
    const auto t2 = Clock::now();
    layer.render_at(static_cast<std::int64_t>(delta.sim_time_us) - 50'000);
    const double r_ns = ns_since(t2);
    decode_ns.push_back(d_ns);
    apply_ns.push_back(a_ns);
    render_ns.push_back(r_ns);
    total_ns.push_back(d_ns + a_ns + r_ns);
    motion_records += delta.motion.size();
    bytes += frames[f].size();
    layer.take_leases();
  }
  const double n = a.entities;
  std::printf(
      "entities %u, frames %u, corrections %.1f%% per frame (%.0f records), %.0f bytes per frame\n",
      a.entities, a.frames, 100.0 * static_cast<double>(motion_records) / (n * a.frames),
      static_cast<double>(motion_records) / a.frames, static_cast<double>(bytes) / a.frames);
  std::printf("drawn: actors %u (pooled, %u actors made), instances %zu, markers %zu\n",
              factory.shown(), static_cast<unsigned>(factory.actors().size()),
              instances.active_count(), markers.active_count());
  std::printf("per frame (median): decode %.0f us, apply %.0f us, render %.0f us, total %.0f us\n",
              median(decode_ns) / 1e3, median(apply_ns) / 1e3, median(render_ns) / 1e3,
              median(total_ns) / 1e3);
  std::printf("per entity (median): decode %.1f ns, apply %.1f ns, render %.1f ns, total %.1f ns\n",
              median(decode_ns) / n, median(apply_ns) / n, median(render_ns) / n,
              median(total_ns) / n);
  std::printf(
      "memory: layer %zu bytes per slot (record + %u-sample ring + mirror entry); process RSS "
      "growth "
      "%.0f bytes per entity (mirror, layer, backends, pools)\n",
      layer.bytes_per_slot(), layer.config().interpolation.ring_capacity,
      static_cast<double>(rss_after - rss_before) / n);
  bustle::bench::figures() = {
      {"entities", a.entities},
      {"frames", a.frames},
      {"frame_us",
       {{"decode", median(decode_ns) / 1e3},
        {"apply", median(apply_ns) / 1e3},
        {"render", median(render_ns) / 1e3},
        {"total", median(total_ns) / 1e3}}},
      {"entity_ns_total", median(total_ns) / n},
      {"bytes_per_slot", layer.bytes_per_slot()},
      {"rss_bytes_per_entity", static_cast<double>(rss_after - rss_before) / n}};
  bustle::bench::print_footer(a.json);
  return 0;
}
