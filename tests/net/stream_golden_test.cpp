// Golden byte streams: the exact bytes every client of a recorded session
// receives, pinned per step in tests/golden/stream_bytes.tsv. Digests pin the
// simulation; these pin what the frame build, interest, ranking and encoder
// make of it, so a change that is meant to be a pure speed-up of the stream
// path (frame build, spatial index, per-client encode) must leave every byte
// alone. Five clients cover the paths: the whole city, an observer crossing
// many cells fast with tight budgets and tolerance 0, two observers for
// vehicles only, a slow reader (coalesced deltas) and a late joiner. The
// two clients with observers read frames built as the server builds them
// for their coverage alone (coverage.hpp): only the lanes near their
// observers posed, and still exactly the pinned bytes.
//
// To re-pin after a deliberate change of the stream (say so in the commit):
//   BUSTLE_WRITE_STREAM_GOLDEN=1 build/release/tests/net/net_tests "golden*"
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bustle/net/published_frame.hpp"
#include "bustle/net/server.hpp"
#include "bustle/net/stream_tracker.hpp"
#include "bustle/proto/framing.hpp"
#include "bustle/scenario/scenario_loader.hpp"

using namespace bustle;

namespace {

constexpr int kSteps = 400;
constexpr int kPinEvery = 20;  // a golden row every 20 steps (the hash runs over all)
const std::string kGoldenPath = std::string(BUSTLE_SOURCE_DIR) + "/tests/golden/stream_bytes.tsv";

std::uint64_t fnv1a(std::uint64_t h, const std::uint8_t* p, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) h = (h ^ p[k]) * 0x100000001b3ull;
  return h;
}

// One client's stream: its tracker, a running hash of every byte it got,
// and its dead-reckoned poses (anchor per received index), checked against
// the server's pose each step it reads.
struct GoldenClient {
  explicit GoldenClient(std::string n) : name(std::move(n)) {}
  std::string name;
  net::StreamTracker tracker;
  std::uint64_t hash = 0xcbf29ce484222325ull;
  std::uint64_t bytes = 0;
  std::map<std::uint32_t, proto::MotionAnchor> anchors;
  std::uint64_t worst_mm = 0;

  void read(const net::PublishedFrame& frame, const net::SpatialIndex& index,
            const net::StreamContext& ctx) {
    flatbuffers::FlatBufferBuilder fbb;
    tracker.encode(frame, &index, ctx, fbb, frame.dot_step || tracker.baseline_pending());
    hash = fnv1a(hash, fbb.GetBufferPointer(), fbb.GetSize());
    bytes += fbb.GetSize();
    const std::vector<std::uint8_t> buf(fbb.GetBufferPointer(),
                                        fbb.GetBufferPointer() + fbb.GetSize());
    std::string error;
    const wire::ServerFrame* f = proto::verify_server_frame(buf, error);
    REQUIRE(f != nullptr);
    const wire::Delta* d = f->message_as_Delta();
    REQUIRE(d != nullptr);
    if (d->baseline()) anchors.clear();
    if (d->left() != nullptr)
      for (const wire::EntityId* id : *d->left()) anchors.erase(id->index());
    if (d->entered() != nullptr)
      for (const wire::EntityEnter* e : *d->entered())
        anchors[e->id().index()] = {e->lane(), e->s_mm(), e->speed_mmps(), d->step()};
    std::vector<proto::MotionRecord> records;
    if (d->motion() != nullptr)
      REQUIRE(proto::read_motion({d->motion()->data(), d->motion()->size()}, records).empty());
    for (const proto::MotionRecord& r : records) {
      proto::MotionAnchor& a = anchors.at(r.index);
      a = {r.lane_changed ? r.lane : a.lane, r.s_mm, r.speed_mmps, d->step()};
    }
    // Every received entity is where the server has it, within 1 cm.
    for (const net::PublishedEntity& e : frame.entities) {
      const auto it = anchors.find(e.id.index);
      if (it == anchors.end()) continue;
      REQUIRE(it->second.lane == e.lane);
      const std::uint32_t s =
          proto::predict_s_mm(it->second, frame.step, ctx.step_us, ctx.lane_length_mm[e.lane]);
      const std::uint64_t err = s > e.s_mm ? s - e.s_mm : e.s_mm - s;
      worst_mm = std::max(worst_mm, err);
    }
  }
};

net::ClientObserver observer(double x, double y, double radius) {
  return {x, y, 0.0, false, 0.0, radius};
}

// Runs one city for kSteps and returns "city<TAB>client<TAB>step<TAB>hash"
// rows every kPinEvery steps.
std::vector<std::string> record(const std::string& config, std::uint64_t seed) {
  const auto loaded = scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) + "/" + config);
  REQUIRE(loaded.errors.empty());
  auto created = core::World::create(*loaded.scenario, seed);
  REQUIRE(created.errors.empty());
  core::World& w = *created.world;
  const net::StreamContext ctx = net::make_welcome_info(w, "golden", net::ClockMode::Fast).stream;
  const net::ArchetypeTable archetypes = net::make_archetypes(w.scenario());

  // The city's extent, for observers that sweep across it.
  double x0 = 1e300, y0 = 1e300, x1 = -1e300, y1 = -1e300;
  for (const core::LaneSpec& l : w.scenario().lanes) {
    for (const core::Vec2& p : l.points) {
      x0 = std::min(x0, p.x_m), y0 = std::min(y0, p.y_m);
      x1 = std::max(x1, p.x_m), y1 = std::max(y1, p.y_m);
    }
  }
  const double cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
  const double rx = (x1 - x0) / 2, ry = (y1 - y0) / 2;

  GoldenClient all("all"), sweep("sweep"), cars("vehicles"), slow("slow"), late("late");
  net::ClientInterest whole;
  all.tracker.set_interest(whole, true);
  net::ClientInterest coalesced = whole;
  coalesced.motion_tolerance_mm = 25;
  slow.tracker.set_interest(coalesced, true);
  net::ClientInterest vehicles;
  vehicles.kind_mask = 1u << static_cast<std::uint32_t>(core::EntityKind::Vehicle);
  vehicles.observers = {observer(x0, y0, std::max(rx, ry)), observer(x1, y1, std::max(rx, ry))};
  cars.tracker.set_interest(vehicles, true);

  std::vector<std::string> rows;
  net::SpatialIndex index;
  // One client's frame, posed only where it may read (as the server does
  // when it is the only client subscribed).
  net::FramePool covered_frames;
  std::size_t posed = 0, posed_whole = 0;
  const auto read_covered = [&](GoldenClient& c, const net::PublishedFrame& whole_frame) {
    const net::CoverageNeed need = net::coverage_need(c.tracker.interest());
    const auto f = covered_frames.make(w, archetypes, 0, {}, true, {need.whole, need.discs});
    REQUIRE(f->coverage.covers(need));
    posed += f->entities.size();
    posed_whole += whole_frame.entities.size();
    net::SpatialIndex own;
    own.build(*f);
    c.read(*f, own, ctx);
  };
  for (int step = 1; step <= kSteps; ++step) {
    w.step();
    const auto frame = net::make_published_frame(w, archetypes);
    index.build(*frame);
    // The sweeping observer circles the city once every 100 steps (tens of
    // metres per step, many 64 m cells), with budgets far below its interest.
    net::ClientInterest moving;
    const double a = 2.0 * M_PI * step / 100.0;
    moving.observers = {observer(cx + rx * std::cos(a), cy + ry * std::sin(a),
                                 std::max(20.0, std::min(rx, ry) / 2))};
    moving.budgets = {4, 12, 40};
    moving.motion_tolerance_mm = 0;
    sweep.tracker.set_interest(moving, step == 1);
    all.read(*frame, index, ctx);
    read_covered(sweep, *frame);
    read_covered(cars, *frame);
    if (step % 7 == 0) slow.read(*frame, index, ctx);
    if (step == kSteps / 2) late.tracker.set_interest(whole, true);
    if (step >= kSteps / 2) late.read(*frame, index, ctx);
    if (step % kPinEvery != 0) continue;
    for (const GoldenClient* c : {&all, &sweep, &cars, &slow, &late}) {
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(c->hash));
      rows.push_back(config + "\t" + c->name + "\t" + std::to_string(step) + "\t" + hex);
    }
  }
  // Every client was sent something, and reconstructs the server within 1 cm.
  for (const GoldenClient* c : {&all, &sweep, &cars, &slow, &late}) {
    INFO(config << " client " << c->name);
    CHECK(c->bytes > 0);
    CHECK(c->worst_mm <= 25);
  }
  CHECK(sweep.worst_mm == 0);  // tolerance 0: exact
  CHECK(all.worst_mm <= 10);
  // The covered frames posed part of the city, not all of it.
  CHECK(posed < posed_whole);
  return rows;
}

}  // namespace

TEST_CASE("golden byte streams: every client gets the pinned bytes at every step") {
  std::vector<std::string> got;
  for (const auto& [config, seed] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"configs/corridor.city.json", 3}, {"configs/largeblock.city.json", 5}}) {
    const std::vector<std::string> rows = record(config, seed);
    got.insert(got.end(), rows.begin(), rows.end());
  }
  if (std::getenv("BUSTLE_WRITE_STREAM_GOLDEN") != nullptr) {
    std::ofstream out(kGoldenPath);
    out << "# config\tclient\tstep\tFNV-1a 64 of every byte the client got up to that step\n";
    for (const std::string& r : got) out << r << "\n";
    WARN("wrote " << got.size() << " rows to " << kGoldenPath);
    return;
  }
  std::ifstream in(kGoldenPath);
  REQUIRE(in.good());
  std::vector<std::string> want;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') want.push_back(line);
  REQUIRE(want.size() == got.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    INFO("first differing row (config, client, step, hash): expected " << want[k]);
    REQUIRE(got[k] == want[k]);
  }
}
