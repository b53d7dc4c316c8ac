// StreamTracker (protocol v2) over real Worlds: what a client reconstructs
// from the deltas (lane-relative dead reckoning) is the server's pose, for
// every received entity at every step, across lane ends, tier changes and
// coalesced deltas; interest, budgets, hints, dots and entry limits hold.
#include "bustle/net/stream_tracker.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <set>

#include "bustle/net/server.hpp"
#include "bustle/proto/framing.hpp"
#include "bustle/scenario/scenario_loader.hpp"

using namespace bustle;
using core::LaneKind;

namespace {

// Sidewalk ring with corners, a crossing spur and a road loop with a garage;
// observers at one corner make tiers differ (Full near, Simulated, Coarse far).
core::Scenario tracker_city() {
  core::Scenario s;
  s.id = "test.net-stream";
  s.lanes = {
      {"n", LaneKind::Sidewalk, {{0, 0}, {300, 0}, {300, 40}}, 1.4, {"s"}},
      {"s", LaneKind::Sidewalk, {{300, 40}, {0, 40}, {0, 0}}, 1.1, {"n", "x"}},
      {"x", LaneKind::Crossing, {{0, 0}, {0, -20}}, 1.3, {"n"}},
  };
  s.pedestrians.count = 300;
  s.pedestrians.spawn_per_step_max = 300;
  s.pedestrians.dots_every_steps = 5;
  s.entity_capacity = 1024;
  s.observers = {{0.0, 0.0}};
  s.tiers.full_enter_m = 40.0;
  s.tiers.full_exit_m = 45.0;
  s.tiers.simulated_enter_m = 150.0;
  s.tiers.simulated_exit_m = 160.0;
  return s;
}

std::unique_ptr<core::World> make_tracked_world(const core::Scenario& s) {
  auto created = core::World::create(s, 11);
  REQUIRE(created.errors.empty());
  REQUIRE(created.world);
  return std::move(created.world);
}

// What a client keeps per entity, and its prediction (the wire's contract).
struct MiniClient {
  net::StreamTracker tracker;
  std::map<std::uint32_t, proto::MotionAnchor> anchors;  // by index
  std::map<std::uint32_t, std::uint32_t> generation;
  std::map<std::uint32_t, std::uint8_t> hint, tier;
  std::vector<std::uint32_t> dots;
  std::uint64_t bytes = 0;
  std::uint64_t deltas = 0;

  void apply(const std::vector<std::uint8_t>& frame_bytes) {
    bytes += frame_bytes.size();
    ++deltas;
    std::string error;
    const wire::ServerFrame* f = proto::verify_server_frame(frame_bytes, error);
    REQUIRE(f != nullptr);
    const wire::Delta* d = f->message_as_Delta();
    REQUIRE(d != nullptr);
    if (d->baseline()) {
      anchors.clear();
      generation.clear();
      hint.clear();
      tier.clear();
    }
    if (d->left() != nullptr) {
      for (const wire::EntityId* id : *d->left()) {
        REQUIRE(anchors.count(id->index()) == 1);
        REQUIRE(generation[id->index()] == id->generation());
        anchors.erase(id->index());
        generation.erase(id->index());
        hint.erase(id->index());
        tier.erase(id->index());
      }
    }
    if (d->entered() != nullptr) {
      for (const wire::EntityEnter* e : *d->entered()) {
        REQUIRE(anchors.count(e->id().index()) == 0);
        anchors[e->id().index()] = {e->lane(), e->s_mm(), e->speed_mmps(), d->step()};
        generation[e->id().index()] = e->id().generation();
        hint[e->id().index()] = static_cast<std::uint8_t>(e->representation());
        tier[e->id().index()] = static_cast<std::uint8_t>(e->sim_tier());
        REQUIRE(e->representation() != wire::RepresentationHint::None);
      }
    }
    std::vector<proto::MotionRecord> records;
    if (d->motion() != nullptr) {
      REQUIRE(proto::read_motion({d->motion()->data(), d->motion()->size()}, records).empty());
    }
    for (const proto::MotionRecord& r : records) {
      REQUIRE(anchors.count(r.index) == 1);
      proto::MotionAnchor& a = anchors[r.index];
      a = {r.lane_changed ? r.lane : a.lane, r.s_mm, r.speed_mmps, d->step()};
    }
    if (d->changes() != nullptr) {
      for (const wire::EntityChange* c : *d->changes()) {
        REQUIRE(anchors.count(c->index()) == 1);
        if (c->field() == wire::EntityField::Representation) hint[c->index()] = c->value();
        if (c->field() == wire::EntityField::SimTier) tier[c->index()] = c->value();
      }
    }
    if (d->dots() != nullptr) {
      dots.clear();
      for (const wire::ChainDots* c : *d->dots()) dots.push_back(c->count());
    }
  }

  void encode(const net::PublishedFrame& frame, const net::SpatialIndex& index,
              const net::StreamContext& ctx, bool send_dots = false) {
    flatbuffers::FlatBufferBuilder fbb;
    tracker.encode(frame, &index, ctx, fbb, send_dots);
    apply(
        std::vector<std::uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()));
  }

  // Every received entity is where the server put it, within the tolerance
  // (same lane, |s_mm difference| <= tolerance), and every entity the server
  // sends this client is received.
  void check_poses(const net::PublishedFrame& frame, const net::StreamContext& ctx,
                   std::uint32_t tolerance_mm, std::uint64_t* worst_mm = nullptr) {
    for (const net::PublishedEntity& e : frame.entities) {
      auto it = anchors.find(e.id.index);
      if (it == anchors.end() || generation[e.id.index] != e.id.generation) continue;
      const proto::MotionAnchor& a = it->second;
      REQUIRE(a.lane == e.lane);
      const std::uint32_t s =
          proto::predict_s_mm(a, frame.step, ctx.step_us, ctx.lane_length_mm[a.lane]);
      const std::uint32_t err = s > e.s_mm ? s - e.s_mm : e.s_mm - s;
      INFO("entity " << e.id.index << " step " << frame.step << " predicted " << s << " server "
                     << e.s_mm);
      REQUIRE(err <= tolerance_mm);
      if (worst_mm != nullptr) *worst_mm = std::max<std::uint64_t>(*worst_mm, err);
    }
  }
};

net::StreamContext context_of(const core::World& w) {
  return net::make_welcome_info(w, "test", net::ClockMode::Fast).stream;
}

}  // namespace

TEST_CASE("dead reckoning reproduces the server's pose for every entity at every step") {
  auto w = make_tracked_world(tracker_city());
  const net::StreamContext ctx = context_of(*w);
  const net::ArchetypeTable archetypes = net::make_archetypes(w->scenario());
  MiniClient exact, loose, slow;
  net::ClientInterest in;
  in.motion_tolerance_mm = 0;
  exact.tracker.set_interest(in, true);
  in.motion_tolerance_mm = 10;
  loose.tracker.set_interest(in, true);
  slow.tracker.set_interest(in, true);

  std::set<std::uint8_t> tiers_seen;
  std::uint64_t lane_changes = 0, worst = 0;
  std::map<std::uint32_t, std::uint32_t> last_lane;
  net::SpatialIndex index;
  for (int step = 0; step < 900; ++step) {
    w->step();
    const auto frame = net::make_published_frame(*w, archetypes);
    index.build(*frame);
    exact.encode(*frame, index, ctx);
    loose.encode(*frame, index, ctx);
    exact.check_poses(*frame, ctx, 0);
    loose.check_poses(*frame, ctx, 10, &worst);
    REQUIRE(exact.anchors.size() ==
            frame->entities.size());  // the whole city, within default budgets
    if (step % 7 == 0) {              // a client that only reads every 7th step: coalesced deltas
      slow.encode(*frame, index, ctx);
      slow.check_poses(*frame, ctx, 10);
    }
    for (const net::PublishedEntity& e : frame->entities) {
      tiers_seen.insert(e.sim_tier);
      auto [it, added] = last_lane.emplace(e.id.index, e.lane);
      if (!added && it->second != e.lane) {
        ++lane_changes;
        it->second = e.lane;
      }
    }
  }
  CHECK(tiers_seen.size() == 3);  // Full, Simulated and Coarse all exercised
  CHECK(lane_changes > 50);       // lane ends crossed many times
  CHECK(worst <= 10);
  // Steady motion costs (almost) nothing: the loose client's deltas average
  // well under 2 bytes per moving entity per step, headers included.
  const double per_entity = static_cast<double>(loose.bytes) / (900.0 * 300.0);
  INFO("bytes per entity per step: " << per_entity);
  CHECK(per_entity < 2.0);
  if (std::getenv("BUSTLE_PRINT_FIGURES") != nullptr)
    WARN("bytes per entity per step: " << per_entity);
}

TEST_CASE("interest follows each client's observers, with hysteresis") {
  auto w = make_tracked_world(tracker_city());
  const net::StreamContext ctx = context_of(*w);
  const net::ArchetypeTable archetypes = net::make_archetypes(w->scenario());
  MiniClient west, east, late;
  net::ClientInterest a, b;
  a.observers = {{0.0, 0.0, 0.0, false, 0.0, 60.0}};
  b.observers = {{300.0, 40.0, 0.0, false, 0.0, 60.0}};
  west.tracker.set_interest(a, true);
  east.tracker.set_interest(b, true);
  net::SpatialIndex index;
  for (int step = 0; step < 200; ++step) {
    w->step();
    const auto frame = net::make_published_frame(*w, archetypes);
    index.build(*frame);
    west.encode(*frame, index, ctx);
    east.encode(*frame, index, ctx);
    if (step == 120) late.tracker.set_interest(a, true);
    if (step >= 120) late.encode(*frame, index, ctx);
    for (MiniClient* c : {&west, &east}) {
      const net::ClientObserver& o = c == &west ? a.observers[0] : b.observers[0];
      for (const net::PublishedEntity& e : frame->entities) {
        const double d = std::hypot(e.x_m - o.x_m, e.y_m - o.y_m);
        const bool received = c->anchors.count(e.id.index) == 1;
        if (d <= o.radius_m) CHECK(received);  // inside: always received
        if (d > o.radius_m * net::kInterestExitFactor)
          CHECK_FALSE(received);  // beyond the exit radius: never
      }
    }
  }
  std::set<std::uint32_t> w_ids, e_ids;
  for (auto& [k, v] : west.anchors) w_ids.insert(k);
  for (auto& [k, v] : east.anchors) e_ids.insert(k);
  CHECK(!w_ids.empty());
  CHECK(!e_ids.empty());
  CHECK(w_ids != e_ids);
  // A late joiner with the first client's observers converges to the same set
  // (hysteresis aside: everything strictly inside the radius is in both).
  for (auto& [k, v] : late.anchors) CHECK(west.anchors.count(k) == 1);
}

TEST_CASE("representation hints respect the budgets, nearest first, and tiers") {
  auto w = make_tracked_world(tracker_city());
  const net::StreamContext ctx = context_of(*w);
  const net::ArchetypeTable archetypes = net::make_archetypes(w->scenario());
  MiniClient c;
  net::ClientInterest in;
  in.observers = {{0.0, 0.0, 0.0, false, 0.0, 500.0}};
  in.budgets = {5, 20, 40};
  c.tracker.set_interest(in, true);
  net::SpatialIndex index;
  std::uint64_t hint_changes_late = 0;
  for (int step = 0; step < 300; ++step) {
    w->step();
    const auto frame = net::make_published_frame(*w, archetypes);
    index.build(*frame);
    flatbuffers::FlatBufferBuilder fbb;
    const auto counts = c.tracker.encode(*frame, &index, ctx, fbb, true);
    const std::map<std::uint32_t, std::uint8_t> before = c.hint;
    c.apply(
        std::vector<std::uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()));
    CHECK(counts.per_hint[0] <= 5);
    CHECK(counts.per_hint[1] <= 20);
    CHECK(counts.per_hint[2] <= 40);
    CHECK(c.anchors.size() <= 65);
    CHECK(counts.truncated == frame->entities.size() - c.anchors.size());
    std::map<std::uint8_t, int> per_hint;
    for (auto& [index_, h] : c.hint) ++per_hint[h];
    CHECK(per_hint[0] <= 5);
    // Actors go to Full-tier entities only; Instanced never to Coarse ones.
    for (const net::PublishedEntity& e : frame->entities) {
      auto it = c.hint.find(e.id.index);
      if (it == c.hint.end()) continue;
      if (it->second == 0) CHECK(e.sim_tier == 0);
      if (it->second == 1) CHECK(e.sim_tier != 2);
    }
    // Dots: every pedestrian is either received or a dot, never both.
    if (frame->dot_step && !c.dots.empty()) {
      std::uint64_t dot_total = 0;
      for (const std::uint32_t d : c.dots) dot_total += d;
      CHECK(dot_total + c.anchors.size() == frame->entities.size());
    }
    if (step > 200) {
      for (auto& [k, h] : c.hint) hint_changes_late += before.count(k) == 1 && before.at(k) != h;
    }
  }
  // Hysteresis: over the last 100 steps hints change rarely (walkers move
  // about 1.1-1.4 m per second; without hysteresis the boundary ones flap).
  CHECK(hint_changes_late < 100);
}

TEST_CASE("entries per step are bounded after the baseline, nearest first") {
  auto w = make_tracked_world(tracker_city());
  net::StreamContext ctx = context_of(*w);
  ctx.entries_per_step_max = 7;
  const net::ArchetypeTable archetypes = net::make_archetypes(w->scenario());
  for (int step = 0; step < 20; ++step) w->step();
  MiniClient c;
  net::ClientInterest in;
  in.observers = {{1000.0, 1000.0, 0.0, false, 0.0, 10.0}};  // sees nothing at first
  c.tracker.set_interest(in, true);
  net::SpatialIndex index;
  auto frame = net::make_published_frame(*w, archetypes);
  index.build(*frame);
  c.encode(*frame, index, ctx);
  CHECK(c.anchors.empty());
  in.observers = {{150.0, 20.0, 0.0, false, 0.0, 1000.0}};  // now everything is in interest
  c.tracker.set_interest(in, false);
  std::size_t previous = 0;
  for (int step = 0; step < 5; ++step) {
    w->step();
    frame = net::make_published_frame(*w, archetypes);
    index.build(*frame);
    flatbuffers::FlatBufferBuilder fbb;
    const auto counts = c.tracker.encode(*frame, &index, ctx, fbb, false);
    c.apply(
        std::vector<std::uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()));
    CHECK(counts.entered <= 7);
    CHECK(c.anchors.size() > previous);
    CHECK(counts.truncated > 0);
    previous = c.anchors.size();
  }
  // A resubscribe (baseline) sends everything at once.
  c.tracker.set_interest(in, true);
  w->step();
  frame = net::make_published_frame(*w, archetypes);
  index.build(*frame);
  c.encode(*frame, index, ctx);
  CHECK(c.anchors.size() == frame->entities.size());
}

TEST_CASE("Subscribe validation names the field and changes nothing") {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<wire::Observer>> obs;
  obs.push_back(wire::CreateObserver(fbb, 1.0, 2.0, 0.0, false, 0.0, 50.0));
  obs.push_back(wire::CreateObserver(fbb, 1.0, 2.0, 0.0, false, 0.0, -5.0));
  const auto sub = wire::CreateSubscribeDirect(fbb, 7, nullptr, &obs, 0, 10);
  fbb.Finish(sub);
  const auto* s = flatbuffers::GetRoot<wire::Subscribe>(fbb.GetBufferPointer());
  net::ClientInterest out;
  out.motion_tolerance_mm = 77;
  const core::Status why = net::read_subscribe(*s, out);
  CHECK(why.code() == core::StatusCode::InvalidArgument);
  CHECK(why.message().rfind("observers[1].radius_m:", 0) == 0);
  CHECK(out.motion_tolerance_mm == 77);  // untouched

  flatbuffers::FlatBufferBuilder fbb2;
  const auto budgets = wire::CreateRepresentationBudgets(fbb2, 5000, 1, 1);
  fbb2.Finish(wire::CreateSubscribeDirect(fbb2, 8, nullptr, nullptr, budgets, 10));
  CHECK(net::read_subscribe(*flatbuffers::GetRoot<wire::Subscribe>(fbb2.GetBufferPointer()), out)
            .message() == "budgets.actors: 5000 exceeds the limit of 4096");

  flatbuffers::FlatBufferBuilder fbb3;
  std::vector<flatbuffers::Offset<wire::Observer>> many;
  for (int k = 0; k < 17; ++k) many.push_back(wire::CreateObserver(fbb3, 0, 0, 0, false, 0, 10));
  fbb3.Finish(wire::CreateSubscribeDirect(fbb3, 9, nullptr, &many, 0, 10));
  CHECK(net::read_subscribe(*flatbuffers::GetRoot<wire::Subscribe>(fbb3.GetBufferPointer()), out)
            .message() == "observers: 17 entries exceed the limit of 16 per client");
}

TEST_CASE("a Subscribe without budgets gets the server's defaults; with budgets, its own") {
  const net::RepresentationBudgets low{64, 1024, 4096};  // --quality low
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(wire::CreateSubscribeDirect(fbb, 1, nullptr, nullptr, 0, 10));
  const auto* none = flatbuffers::GetRoot<wire::Subscribe>(fbb.GetBufferPointer());
  net::ClientInterest out;
  REQUIRE(net::read_subscribe(*none, out, low).ok());
  CHECK(out.budgets.actors == 64);
  CHECK(out.budgets.instances == 1024);
  CHECK(out.budgets.markers == 4096);
  REQUIRE(net::read_subscribe(*none, out).ok());  // no server defaults: the schema's
  CHECK(out.budgets.actors == 256);
  flatbuffers::FlatBufferBuilder fbb2;
  const auto own = wire::CreateRepresentationBudgets(fbb2, 3, 4, 5);
  fbb2.Finish(wire::CreateSubscribeDirect(fbb2, 2, nullptr, nullptr, own, 10));
  REQUIRE(
      net::read_subscribe(*flatbuffers::GetRoot<wire::Subscribe>(fbb2.GetBufferPointer()), out, low)
          .ok());
  CHECK(out.budgets.actors == 3);
  CHECK(out.budgets.instances == 4);
  CHECK(out.budgets.markers == 5);
}

TEST_CASE("vehicles on the corridor are streamed with prototypes, labels and policies") {
  auto loaded =
      scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) + "/configs/corridor.city.json");
  REQUIRE(loaded.ok());
  auto w = make_tracked_world(*loaded.scenario);
  const net::WelcomeInfo welcome = net::make_welcome_info(*w, "test", net::ClockMode::Fast);
  const net::StreamContext& ctx = welcome.stream;
  MiniClient c;
  net::ClientInterest in;
  in.motion_tolerance_mm = 0;
  c.tracker.set_interest(in, true);
  net::SpatialIndex index;
  std::set<std::string> labels;
  std::set<std::uint16_t> archetypes_seen;
  for (int step = 0; step < 400; ++step) {
    w->step();
    const auto frame = net::make_published_frame(*w, welcome.archetypes);
    index.build(*frame);
    flatbuffers::FlatBufferBuilder fbb;
    c.tracker.encode(*frame, &index, ctx, fbb, false);
    std::string error;
    const auto* f = proto::verify_server_frame({fbb.GetBufferPointer(), fbb.GetSize()}, error);
    REQUIRE(f != nullptr);
    const wire::Delta* d = f->message_as_Delta();
    if (d->labels() != nullptr) {
      for (const wire::EntityLabel* l : *d->labels()) labels.insert(l->label()->str());
    }
    if (d->entered() != nullptr) {
      for (const wire::EntityEnter* e : *d->entered()) {
        if (e->kind() == wire::EntityKind::Vehicle) archetypes_seen.insert(e->archetype());
      }
    }
    c.apply(
        std::vector<std::uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()));
    c.check_poses(*frame, ctx, 0);
  }
  CHECK(labels.count("vehicle.g0.000000") == 1);
  REQUIRE(!archetypes_seen.empty());
  for (const std::uint16_t a : archetypes_seen) {
    REQUIRE(a < welcome.archetypes.names.size());
    CHECK(welcome.archetypes.names[a].rfind("vehicle.", 0) == 0);
  }
}

TEST_CASE("a label given as text in the frame is sent as that text") {
  // What a gateway does with the VehicleIds its districts named.
  auto loaded =
      scenario::load_scenario_file(std::string(BUSTLE_SOURCE_DIR) + "/configs/corridor.city.json");
  REQUIRE(loaded.ok());
  auto w = make_tracked_world(*loaded.scenario);
  for (int step = 0; step < 50; ++step) w->step();
  const net::WelcomeInfo welcome = net::make_welcome_info(*w, "test", net::ClockMode::Fast);
  auto frame =
      std::make_shared<net::PublishedFrame>(*net::make_published_frame(*w, welcome.archetypes));
  REQUIRE(frame->entities.size() >= 2);
  frame->label_texts = {"vehicle.far.000042"};
  frame->entities[0].label = net::kLabelText | 0;
  frame->entities[1].label = net::kLabelText | 7;  // out of range: an empty name, no crash
  net::SpatialIndex index;
  index.build(*frame);
  MiniClient c;
  c.tracker.set_interest(net::ClientInterest{}, true);
  flatbuffers::FlatBufferBuilder fbb;
  c.tracker.encode(*frame, &index, welcome.stream, fbb, false);
  std::string error;
  const auto* f = proto::verify_server_frame({fbb.GetBufferPointer(), fbb.GetSize()}, error);
  REQUIRE(f != nullptr);
  std::map<std::uint32_t, std::string> labels;
  for (const wire::EntityLabel* l : *f->message_as_Delta()->labels())
    labels[l->index()] = l->label()->str();
  CHECK(labels.at(frame->entities[0].id.index) == "vehicle.far.000042");
  CHECK(labels.at(frame->entities[1].id.index).empty());
}

TEST_CASE("the kept lease summary equals a recount after every delta and report") {
  // Stats and QueryLeases read the summary a tracker keeps as it sends and
  // takes reports (O(1) per query, however many entities a client holds);
  // it must say what walking every received entity says.
  auto w = make_tracked_world(tracker_city());
  const net::StreamContext ctx = context_of(*w);
  const net::ArchetypeTable archetypes = net::make_archetypes(w->scenario());
  MiniClient c;
  constexpr std::uint32_t kGrace = 6;
  c.tracker.set_lease_grace_steps(kGrace);
  net::ClientInterest in;
  in.observers = {{0.0, 0.0, 0.0, false, 0.0, 500.0}};
  in.budgets = {5, 20, 40};
  c.tracker.set_interest(in, true);
  net::SpatialIndex index;
  auto same = [](const net::StreamTracker::LeaseSummary& a,
                 const net::StreamTracker::LeaseSummary& b) {
    return std::equal(std::begin(a.requested), std::end(a.requested), std::begin(b.requested)) &&
           std::equal(std::begin(a.applied), std::end(a.applied), std::begin(b.applied)) &&
           a.waiting == b.waiting && a.waiting_past_grace == b.waiting_past_grace &&
           std::equal(std::begin(a.past_grace_by_reason), std::end(a.past_grace_by_reason),
                      std::begin(b.past_grace_by_reason)) &&
           a.reports == b.reports && a.entries == b.entries &&
           a.unknown_entries == b.unknown_entries &&
           std::equal(std::begin(a.entries_by_state), std::end(a.entries_by_state),
                      std::begin(b.entries_by_state));
  };
  std::uint32_t past_grace_seen = 0, applied_seen = 0;
  for (std::uint64_t step = 1; step <= 120; ++step) {
    w->step();
    const auto frame = net::make_published_frame(*w, archetypes);
    index.build(*frame);
    c.encode(*frame, index, ctx);
    REQUIRE(same(c.tracker.lease_summary(frame->step, kGrace),
                 c.tracker.recount_lease_summary(frame->step, kGrace)));
    // Every third step a report about every other received entity, in turn
    // each lease state (and an unknown id), some reports a step late.
    if (step % 3 != 0) continue;
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<wire::LeaseEntry> entries;
    std::uint32_t k = 0;
    for (const auto& [index_, h] : c.hint) {
      if (k++ % 2 != step % 2) continue;
      const auto state = static_cast<wire::LeaseState>((k + step / 3) % 4);
      const auto shown =
          static_cast<std::uint8_t>(state == wire::LeaseState::Assigned ? h : (h + 1) % 3);
      entries.emplace_back(wire::EntityId(index_, c.generation[index_]), state, shown,
                           static_cast<wire::UnassignedReason>(k % 5));
    }
    entries.emplace_back(wire::EntityId(9999, 1), wire::LeaseState::Assigned, 0,
                         wire::UnassignedReason::None);
    fbb.Finish(fbb.CreateVectorOfStructs(entries));
    const auto* report =
        flatbuffers::GetRoot<flatbuffers::Vector<const wire::LeaseEntry*>>(fbb.GetBufferPointer());
    c.tracker.apply_leases(*report, frame->step - step % 2);
    const auto kept = c.tracker.lease_summary(frame->step, kGrace);
    REQUIRE(same(kept, c.tracker.recount_lease_summary(frame->step, kGrace)));
    past_grace_seen += kept.waiting_past_grace;
    applied_seen += kept.applied[0] + kept.applied[1] + kept.applied[2];
  }
  CHECK(past_grace_seen > 0);  // the test reached every part of the summary
  CHECK(applied_seen > 0);
  // Another step or grace than the kept one is answered by a recount.
  CHECK(same(c.tracker.lease_summary(5, 0), c.tracker.recount_lease_summary(5, 0)));
}

TEST_CASE("sort_by_pos orders like std::sort, short and long, any position width") {
  struct Item {
    std::uint32_t pos = 0;
    std::uint32_t payload = 0;
  };
  std::uint64_t state = 31;
  const auto next = [&state] {  // splitmix64, fixed seed
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::vector<Item> scratch;
  for (const std::size_t n : {0u, 1u, 511u, 512u, 24000u}) {
    for (const unsigned width : {8u, 21u, 22u, 24u, 32u}) {
      std::set<std::uint32_t> used;  // positions are unique
      std::vector<Item> items;
      while (items.size() < n && used.size() < (std::size_t{1} << std::min(width, 20u))) {
        const auto pos = static_cast<std::uint32_t>(next() >> (64 - width));
        if (used.insert(pos).second)
          items.push_back({pos, static_cast<std::uint32_t>(items.size())});
      }
      std::vector<Item> expected = items;
      std::sort(expected.begin(), expected.end(),
                [](const Item& a, const Item& b) { return a.pos < b.pos; });
      net::sort_by_pos(items, scratch);
      INFO("n " << n << " width " << width);
      REQUIRE(items.size() == expected.size());
      for (std::size_t k = 0; k < items.size(); ++k) {
        REQUIRE(items[k].pos == expected[k].pos);
        REQUIRE(items[k].payload == expected[k].payload);
      }
    }
  }
}

TEST_CASE("dots from the frame's per-chain totals equal dots from a walk over the frame") {
  // Two clients with the same interest: one gets each frame as built (dots
  // = chain totals minus what it receives), the other a copy without the
  // totals (dots by walking every entity). Their bytes must be the same.
  auto w = make_tracked_world(tracker_city());
  const net::StreamContext ctx = context_of(*w);
  const net::ArchetypeTable archetypes = net::make_archetypes(w->scenario());
  net::ClientInterest in;
  in.observers = {{0.0, 0.0, 0.0, false, 0.0, 90.0}};
  in.budgets = {5, 20, 60};
  net::StreamTracker fast, walked;
  fast.set_interest(in, true);
  walked.set_interest(in, true);
  net::SpatialIndex index, index_copy;
  std::uint64_t dots_sent = 0;
  for (int step = 0; step < 300; ++step) {
    w->step();
    const auto frame = net::make_published_frame(*w, archetypes);
    REQUIRE(frame->chain_pedestrians.size() == (frame->dot_step ? ctx.chain_count : 0u));
    net::PublishedFrame copy = *frame;
    copy.chain_pedestrians.clear();
    index.build(*frame);
    index_copy.build(copy);
    const bool dots = frame->dot_step || step % 11 == 0;
    flatbuffers::FlatBufferBuilder a, b;
    fast.encode(*frame, &index, ctx, a, dots);
    walked.encode(copy, &index_copy, ctx, b, dots);
    REQUIRE(std::vector<std::uint8_t>(a.GetBufferPointer(), a.GetBufferPointer() + a.GetSize()) ==
            std::vector<std::uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()));
    dots_sent += dots;
  }
  CHECK(dots_sent > 50);
}
