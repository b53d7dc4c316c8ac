#include <catch2/catch.hpp>

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

struct Decoded {
  bool baseline;
  std::uint64_t step;
  std::vector<std::uint32_t> entered, updated, left;  // indices
  std::vector<std::uint32_t> left_gen;
};

Decoded encode(net::DeltaTracker& t, const PublishedFrame& f) {
  flatbuffers::FlatBufferBuilder fbb;
  t.encode(f, fbb);
  std::string err;
  const wire::ServerFrame* sf = proto::verify_server_frame({fbb.GetBufferPointer(), fbb.GetSize()}, err);
  REQUIRE(sf != nullptr);
  const wire::Delta* d = sf->message_as_Delta();
  REQUIRE(d != nullptr);
  Decoded out{d->baseline(), d->step(), {}, {}, {}, {}};
  for (const auto* e : *d->entered()) out.entered.push_back(e->id().index());
  for (const auto* e : *d->updated()) out.updated.push_back(e->id().index());
  for (const auto* e : *d->left()) {
    out.left.push_back(e->index());
    out.left_gen.push_back(e->generation());
  }
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
