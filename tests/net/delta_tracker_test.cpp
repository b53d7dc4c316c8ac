#include <catch2/catch.hpp>

#include <optional>

#include "bustle/net/delta_tracker.hpp"
#include "bustle/proto/framing.hpp"

using namespace bustle;
using net::PublishedFrame;
using net::QuantizedEntity;

namespace {

QuantizedEntity ent(std::uint32_t index, std::uint32_t gen, std::int32_t x,
                    core::EntityKind kind = core::EntityKind::Pedestrian) {
  QuantizedEntity e;
  e.id = {index, gen};
  e.x_cm = x;
  e.kind = kind;
  return e;
}

PublishedFrame frame(std::uint64_t step, std::vector<QuantizedEntity> es) {
  PublishedFrame f;
  f.step = step;
  f.sim_time_us = step * 100'000;
  f.digest = 0xABC0 + step;
  f.entities = std::move(es);
  return f;
}

QuantizedEntity retiring(QuantizedEntity e) {
  e.retiring = true;
  e.speed_cmps = 0;
  return e;
}

struct Decoded {
  bool baseline;
  std::uint64_t step;
  std::vector<std::uint32_t> entered, updated, left;  // indices
  std::vector<std::uint32_t> left_gen;
  std::vector<std::uint32_t> retiring;                    // indices
  std::optional<std::vector<std::pair<std::uint32_t, std::uint16_t>>> dots;  // absent: none sent
};

Decoded encode(net::DeltaTracker& t, const PublishedFrame& f, const std::vector<std::uint16_t>* dots = nullptr) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto counts = t.encode(f, fbb, dots);
  std::string err;
  const wire::ServerFrame* sf = proto::verify_server_frame({fbb.GetBufferPointer(), fbb.GetSize()}, err);
  REQUIRE(sf != nullptr);
  const wire::Delta* d = sf->message_as_Delta();
  REQUIRE(d != nullptr);
  Decoded out{d->baseline(), d->step(), {}, {}, {}, {}, {}, std::nullopt};
  for (const auto* e : *d->entered()) out.entered.push_back(e->id().index());
  for (const auto* e : *d->updated()) out.updated.push_back(e->id().index());
  for (const auto* e : *d->left()) {
    out.left.push_back(e->index());
    out.left_gen.push_back(e->generation());
  }
  if (d->retiring() != nullptr) {
    for (const auto* e : *d->retiring()) out.retiring.push_back(e->index());
  }
  if (d->dots() != nullptr) {
    out.dots.emplace();
    for (const auto* c : *d->dots()) out.dots->emplace_back(c->chain(), c->count());
  }
  CHECK(counts.retiring == out.retiring.size());
  CHECK(d->digest() == f.digest);
  return out;
}

using V = std::vector<std::uint32_t>;

}  // namespace

TEST_CASE("first delta is a baseline, later ones carry only changes") {
  net::DeltaTracker t;
  auto d0 = encode(t, frame(1, {ent(0, 1, 0), ent(2, 1, 0), ent(5, 1, 0)}));
  CHECK(d0.baseline);
  CHECK(d0.entered == V{0, 2, 5});
  CHECK(d0.updated.empty());

  // 0 unchanged, 2 moved, 5 gone, 7 new.
  auto d1 = encode(t, frame(2, {ent(0, 1, 0), ent(2, 1, 10), ent(7, 1, 0)}));
  CHECK_FALSE(d1.baseline);
  CHECK(d1.entered == V{7});
  CHECK(d1.updated == V{2});
  CHECK(d1.left == V{5});
}

TEST_CASE("a reused slot with a new generation is left + entered, never updated") {
  net::DeltaTracker t;
  encode(t, frame(1, {ent(3, 1, 0)}));
  auto d = encode(t, frame(2, {ent(3, 2, 0)}));
  CHECK(d.entered == V{3});
  CHECK(d.left == V{3});
  CHECK(d.left_gen == V{1});
  CHECK(d.updated.empty());
}

TEST_CASE("skipped frames coalesce into one delta against what was sent") {
  net::DeltaTracker t;
  encode(t, frame(1, {ent(1, 1, 0), ent(2, 1, 0)}));
  // Frames 2..9 never sent (client behind). Frame 10: 1 moved, 2 gone, 4 new;
  // 3 appeared and vanished in between and must not show up at all.
  auto d = encode(t, frame(10, {ent(1, 1, 50), ent(4, 1, 0)}));
  CHECK(d.step == 10);
  CHECK(d.updated == V{1});
  CHECK(d.left == V{2});
  CHECK(d.entered == V{4});
}

TEST_CASE("kind filter and reset produce a new baseline") {
  net::DeltaTracker t;
  encode(t, frame(1, {ent(1, 1, 0), ent(2, 1, 0, core::EntityKind::Vehicle)}));
  t.set_kind_mask(1u << static_cast<std::uint32_t>(core::EntityKind::Vehicle));
  auto d = encode(t, frame(2, {ent(1, 1, 0), ent(2, 1, 0, core::EntityKind::Vehicle)}));
  CHECK(d.baseline);
  CHECK(d.entered == V{2});
  t.reset();
  auto d2 = encode(t, frame(3, {ent(1, 1, 0), ent(2, 1, 0, core::EntityKind::Vehicle)}));
  CHECK(d2.baseline);
  CHECK(d2.entered == V{2});
  CHECK(d2.left.empty());
}

TEST_CASE("quantization is stable and wraps heading") {
  CHECK(net::quantize_cm(1.234) == 123);
  CHECK(net::quantize_cm(-0.005) == -1);  // round half away from zero
  CHECK(net::quantize_heading(0.0) == 0);
  CHECK(net::quantize_heading(3.14159265358979323846) == 32768);
  CHECK(net::quantize_heading(-3.14159265358979323846 / 2) == 49152);
  CHECK(net::quantize_heading(2 * 3.14159265358979323846) == 0);
  CHECK(net::quantize_speed(1.4) == 140);
  CHECK(net::quantize_speed(-1.0) == 0);
  CHECK(net::quantize_speed(1e9) == 65535);
}

TEST_CASE("an entity that begins retiring is announced once and leaves later") {
  net::DeltaTracker t;
  encode(t, frame(1, {ent(1, 1, 0), ent(2, 1, 0)}));
  auto d = encode(t, frame(2, {ent(1, 1, 0), retiring(ent(2, 1, 0))}));
  CHECK(d.retiring == V{2});
  CHECK(d.left.empty());
  // Still fading: in the stream, not announced again.
  auto d2 = encode(t, frame(3, {ent(1, 1, 0), retiring(ent(2, 1, 0))}));
  CHECK(d2.retiring.empty());
  CHECK(d2.updated.empty());
  auto d3 = encode(t, frame(4, {ent(1, 1, 0)}));
  CHECK(d3.left == V{2});
  CHECK(d3.retiring.empty());
}

TEST_CASE("a baseline lists every entity already retiring") {
  net::DeltaTracker t;
  auto d = encode(t, frame(5, {ent(1, 1, 0), retiring(ent(4, 2, 7))}));
  CHECK(d.baseline);
  CHECK(d.entered == V{1, 4});
  CHECK(d.retiring == V{4});
}

TEST_CASE("a coalesced delta announces retiring entities that are still fading") {
  net::DeltaTracker t;
  encode(t, frame(1, {ent(1, 1, 0), ent(2, 1, 0), ent(3, 1, 0)}));
  // Skipped: 2 began fading and was deleted; 3 began fading and still fades.
  auto d = encode(t, frame(9, {ent(1, 1, 0), retiring(ent(3, 1, 0))}));
  CHECK(d.left == V{2});
  CHECK(d.retiring == V{3});
}

TEST_CASE("a retiring entity that comes back unseen is left and entered again") {
  // A resident fades, goes dormant and is activated again (same id) between
  // two deltas of a slow client: the client must not keep the retiring mark.
  net::DeltaTracker t;
  encode(t, frame(1, {ent(6, 1, 0)}));
  encode(t, frame(2, {retiring(ent(6, 1, 0))}));
  auto d = encode(t, frame(9, {ent(6, 1, 30)}));
  CHECK(d.left == V{6});
  CHECK(d.left_gen == V{1});
  CHECK(d.entered == V{6});
  CHECK(d.updated.empty());
  CHECK(d.retiring.empty());
}

TEST_CASE("retiring follows the kind filter") {
  net::DeltaTracker t;
  t.set_kind_mask(1u << static_cast<std::uint32_t>(core::EntityKind::Vehicle));
  auto d = encode(t, frame(1, {retiring(ent(1, 1, 0)), retiring(ent(2, 1, 0, core::EntityKind::Vehicle))}));
  CHECK(d.entered == V{2});
  CHECK(d.retiring == V{2});
}

TEST_CASE("dots are sent only when given, one entry per chain") {
  net::DeltaTracker t;
  auto d = encode(t, frame(1, {ent(1, 1, 0)}));
  CHECK_FALSE(d.dots.has_value());
  const std::vector<std::uint16_t> dots{0, 5, 65535};
  auto d2 = encode(t, frame(2, {ent(1, 1, 0)}), &dots);
  REQUIRE(d2.dots.has_value());
  using Pair = std::pair<std::uint32_t, std::uint16_t>;
  CHECK(*d2.dots == std::vector<Pair>{{0, 0}, {1, 5}, {2, 65535}});
}
