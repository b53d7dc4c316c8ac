// The SDK's FrameReader against split, concatenated, oversize, truncated and
// corrupted input: it returns every good frame and fails cleanly otherwise.
#include "bustle/client/frame_reader.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "bustle/client/messages.hpp"
#include "bustle/client/stream.hpp"
#include "support/server_frames.hpp"

using bustle::client::FrameReader;
using bustle::client::ReadStatus;
namespace t = bustle::test;
namespace wire = bustle::wire;

namespace {

std::vector<std::uint8_t> delta_frame(std::uint64_t step) {
  t::DeltaSpec d;
  d.step = step;
  d.digest = 0x1234 + step;
  d.entered = {t::enter(1, 1, 0, 100, 200)};
  return t::framed(t::delta_payload(d));
}

std::vector<std::uint8_t> prefix(std::uint32_t n) {
  return {static_cast<std::uint8_t>(n), static_cast<std::uint8_t>(n >> 8),
          static_cast<std::uint8_t>(n >> 16), static_cast<std::uint8_t>(n >> 24)};
}

}  // namespace

TEST_CASE("FrameReader reassembles a frame fed one byte at a time", "[frame_reader]") {
  FrameReader reader;
  const auto bytes = delta_frame(42);
  for (std::size_t i = 0; i + 1 < bytes.size(); ++i) {
    reader.feed(std::span<const std::uint8_t>(&bytes[i], 1));
    REQUIRE(reader.next().status == ReadStatus::NeedMore);
  }
  reader.feed(std::span<const std::uint8_t>(&bytes.back(), 1));
  const auto r = reader.next();
  REQUIRE(r.status == ReadStatus::Frame);
  REQUIRE(r.frame != nullptr);
  REQUIRE(r.frame->message_type() == wire::ServerMessage::Delta);
  CHECK(r.frame->message_as_Delta()->step() == 42);
  CHECK(r.payload.size() == bytes.size() - 4);
  CHECK(reader.next().status == ReadStatus::NeedMore);
  CHECK(reader.buffered_bytes() == 0);
  CHECK(reader.frames_total() == 1);
}

TEST_CASE("FrameReader returns every frame of one buffer in order", "[frame_reader]") {
  FrameReader reader;
  std::vector<std::uint8_t> all;
  for (std::uint64_t step = 1; step <= 3; ++step) {
    const auto f = delta_frame(step);
    all.insert(all.end(), f.begin(), f.end());
  }
  // Plus the first half of a fourth frame.
  const auto fourth = delta_frame(4);
  all.insert(all.end(), fourth.begin(), fourth.begin() + 10);
  reader.feed(all);
  for (std::uint64_t step = 1; step <= 3; ++step) {
    const auto r = reader.next();
    REQUIRE(r.status == ReadStatus::Frame);
    CHECK(r.frame->message_as_Delta()->step() == step);
  }
  CHECK(reader.next().status == ReadStatus::NeedMore);
  reader.feed(std::span<const std::uint8_t>(fourth).subspan(10));
  const auto r = reader.next();
  REQUIRE(r.status == ReadStatus::Frame);
  CHECK(r.frame->message_as_Delta()->step() == 4);
}

TEST_CASE("FrameReader rejects a length prefix over the cap before buffering", "[frame_reader]") {
  SECTION("default cap is the 64 MiB server frame cap") {
    FrameReader reader;
    CHECK(reader.max_frame_bytes() == bustle::proto::kServerFrameMaxBytes);
    reader.feed(prefix(bustle::proto::kServerFrameMaxBytes + 1));
    const auto r = reader.next();
    CHECK(r.status == ReadStatus::FrameTooLarge);
    CHECK(r.error.find("over the cap") != std::string::npos);
    CHECK(reader.failed());
  }
  SECTION("a length equal to the cap is waited for, not rejected") {
    FrameReader reader;
    reader.feed(prefix(bustle::proto::kServerFrameMaxBytes));
    CHECK(reader.next().status == ReadStatus::NeedMore);
    CHECK_FALSE(reader.failed());
  }
  SECTION("a smaller cap applies to real frames") {
    const auto bytes = delta_frame(1);
    FrameReader reader(static_cast<std::uint32_t>(bytes.size() - 5));
    reader.feed(bytes);
    CHECK(reader.next().status == ReadStatus::FrameTooLarge);
  }
}

TEST_CASE("FrameReader reports garbage and stays failed", "[frame_reader]") {
  SECTION("zero length prefix") {
    FrameReader reader;
    reader.feed(prefix(0));
    CHECK(reader.next().status == ReadStatus::EmptyFrame);
  }
  SECTION("random bytes with a plausible length") {
    FrameReader reader;
    std::vector<std::uint8_t> bytes = prefix(64);
    for (std::uint32_t i = 0; i < 64; ++i) bytes.push_back(static_cast<std::uint8_t>(i * 37 + 11));
    reader.feed(bytes);
    const auto r = reader.next();
    CHECK(r.status == ReadStatus::Malformed);
    CHECK_FALSE(r.error.empty());
  }
  SECTION("too short for a FlatBuffer") {
    FrameReader reader;
    std::vector<std::uint8_t> bytes = prefix(3);
    bytes.insert(bytes.end(), {1, 2, 3});
    reader.feed(bytes);
    CHECK(reader.next().status == ReadStatus::Malformed);
  }
  SECTION("a client frame is not a server frame (identifier)") {
    FrameReader reader;
    reader.feed(bustle::client::build_hello({}));
    const auto r = reader.next();
    CHECK(r.status == ReadStatus::Malformed);
    CHECK(r.error.find("identifier") != std::string::npos);
  }
  SECTION("right identifier, corrupted offsets") {
    auto payload = t::delta_payload(t::DeltaSpec{});
    // The root offset (first 4 bytes) now points far outside the buffer.
    payload[0] = 0xff;
    payload[1] = 0xff;
    payload[2] = 0xff;
    payload[3] = 0x7f;
    FrameReader reader;
    reader.feed(t::framed(payload));
    CHECK(reader.next().status == ReadStatus::Malformed);
  }
  // Sticky: a valid frame after the error is not handed out.
  FrameReader reader;
  reader.feed(prefix(0));
  REQUIRE(reader.next().status == ReadStatus::EmptyFrame);
  reader.feed(delta_frame(1));
  CHECK(reader.next().status == ReadStatus::EmptyFrame);
  CHECK(reader.failed());
}

TEST_CASE("FrameReader survives every truncation of a valid frame", "[frame_reader]") {
  // Feeding a prefix of a frame never yields a frame or an error.
  const auto bytes = delta_frame(9);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    FrameReader reader;
    reader.feed(std::span<const std::uint8_t>(bytes).first(cut));
    INFO("cut at " << cut);
    CHECK(reader.next().status == ReadStatus::NeedMore);
  }
}

TEST_CASE("FrameReader rejects every single-byte corruption cleanly or verifies it",
          "[frame_reader]") {
  // Flipping any payload byte must give Frame (a still-valid buffer) or
  // Malformed, never a crash: the verifier runs before anything is read.
  const auto payload =
      t::delta_payload(t::DeltaSpec{7,
                                    700,
                                    99,
                                    true,
                                    {t::enter(1, 1, 0, 1, 2), t::enter(2, 1, 3, 4, 5)},
                                    {{1, "a"}},
                                    {t::motion(2, 9, 9)}});
  for (std::size_t i = 0; i < payload.size(); ++i) {
    auto corrupted = payload;
    corrupted[i] ^= 0xa5;
    FrameReader reader;
    reader.feed(t::framed(corrupted));
    const auto r = reader.next();
    INFO("byte " << i);
    CHECK((r.status == ReadStatus::Frame || r.status == ReadStatus::Malformed));
    // A frame that still verifies decodes, or names what is wrong: no crash.
    if (r.status == ReadStatus::Frame && r.frame->message_as_Delta() != nullptr) {
      bustle::client::Delta d;
      const std::string error = bustle::client::decode_delta(*r.frame->message_as_Delta(), d);
      CHECK((error.empty() || error.find('[') != std::string::npos));  // errors name where
    }
  }
}
