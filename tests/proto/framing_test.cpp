// Framing and verification (proto/): frames split at every byte, size caps,
// the verifier against garbage and misaligned vectors, payload alignment,
// and recorded server sessions verified frame by frame.
#include "bustle/proto/framing.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "bustle/proto/wire.hpp"

using namespace bustle;
using proto::DecodeStatus;

namespace {

std::vector<std::uint8_t> hello_payload(std::uint16_t version) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto h = wire::CreateHelloDirect(fbb, version, "test", nullptr, wire::Role::Viewer);
  fbb.Finish(wire::CreateClientFrame(fbb, wire::ClientMessage::Hello, h.Union()),
             wire::ClientFrameIdentifier());
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

}  // namespace

TEST_CASE("frames round-trip through the decoder, split at every byte") {
  const auto payload = hello_payload(proto::kProtocolVersion);
  std::vector<std::uint8_t> stream;
  proto::append_frame(stream, payload);
  proto::append_frame(stream, payload);
  REQUIRE(stream.size() == 2 * (4 + payload.size()));
  CHECK(stream[0] == (payload.size() & 0xFF));  // little-endian prefix

  for (std::size_t split = 0; split <= stream.size(); ++split) {
    proto::FrameDecoder dec(proto::kClientFrameMaxBytes);
    std::span<const std::uint8_t> out;
    int frames = 0;
    dec.feed({stream.data(), split});
    while (dec.next(out) == DecodeStatus::Frame) {
      REQUIRE(std::equal(out.begin(), out.end(), payload.begin(), payload.end()));
      ++frames;
    }
    dec.feed({stream.data() + split, stream.size() - split});
    while (dec.next(out) == DecodeStatus::Frame) {
      REQUIRE(std::equal(out.begin(), out.end(), payload.begin(), payload.end()));
      ++frames;
    }
    REQUIRE(frames == 2);
    REQUIRE(dec.buffered_bytes() == 0);
  }
}

TEST_CASE("an oversize length prefix is refused before buffering the frame") {
  proto::FrameDecoder dec(1024);
  const std::uint8_t prefix[4] = {0x01, 0x04, 0x00, 0x00};  // 1025
  dec.feed(prefix);
  std::span<const std::uint8_t> out;
  CHECK(dec.next(out) == DecodeStatus::FrameTooLarge);
  CHECK(dec.declared_length() == 1025);
  CHECK(dec.next(out) == DecodeStatus::FrameTooLarge);  // sticky
}

TEST_CASE("a zero-length frame is an error") {
  proto::FrameDecoder dec(1024);
  const std::uint8_t prefix[4] = {0, 0, 0, 0};
  dec.feed(prefix);
  std::span<const std::uint8_t> out;
  CHECK(dec.next(out) == DecodeStatus::EmptyFrame);
}

TEST_CASE("the verifier accepts a good client frame and rejects garbage") {
  std::string error;
  const auto good = hello_payload(1);
  const wire::ClientFrame* f = proto::verify_client_frame(good, error);
  REQUIRE(f != nullptr);
  CHECK(f->message_type() == wire::ClientMessage::Hello);

  SECTION("wrong identifier") {
    auto bad = good;
    bad[4] = 'X';
    CHECK(proto::verify_client_frame(bad, error) == nullptr);
    CHECK(error.find("identifier") != std::string::npos);
  }
  SECTION("too short") {
    const std::vector<std::uint8_t> tiny = {1, 2, 3};
    CHECK(proto::verify_client_frame(tiny, error) == nullptr);
    CHECK(error.find("too short") != std::string::npos);
  }
  SECTION("corrupt root offset") {
    auto bad = good;
    bad[0] = 0xFF;
    bad[1] = 0xFF;
    CHECK(proto::verify_client_frame(bad, error) == nullptr);
  }
  SECTION("server frame identifier is not a client frame") {
    flatbuffers::FlatBufferBuilder fbb;
    const auto e = wire::CreateErrorDirect(fbb, wire::ErrorCode::MalformedFrame, "x");
    fbb.Finish(wire::CreateServerFrame(fbb, wire::ServerMessage::Error, e.Union()),
               wire::ServerFrameIdentifier());
    std::span<const std::uint8_t> s{fbb.GetBufferPointer(), fbb.GetSize()};
    CHECK(proto::verify_client_frame(s, error) == nullptr);
    CHECK(proto::verify_server_frame(s, error) != nullptr);
  }
}

TEST_CASE("random bytes never crash the verifier") {
  std::uint64_t x = 12345;
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::uint8_t> buf(8 + round % 200);
    for (auto& b : buf) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      b = static_cast<std::uint8_t>(x >> 56);
    }
    // Make a fraction carry the right identifier so verification goes deeper.
    if (round % 2 == 0) std::memcpy(buf.data() + 4, "BCL1", 4);
    std::string error;
    const wire::ClientFrame* f = proto::verify_client_frame(buf, error);
    if (f == nullptr) REQUIRE_FALSE(error.empty());
  }
  SUCCEED("2000 random buffers verified without crashing");
}

namespace {

// ClientFrame{Command{LifecycleBatch}} with `ops` spawn ops: 3 + 2 x ops tables.
std::vector<std::uint8_t> batch_payload(std::size_t ops) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<wire::LifecycleOp>> items;
  for (std::size_t i = 0; i < ops; ++i) {
    const auto spawn = wire::CreateSpawnPedestrian(fbb);
    items.push_back(wire::CreateLifecycleOp(fbb, wire::LifecycleOpKind::Spawn, spawn));
  }
  const auto batch = wire::CreateLifecycleBatchDirect(fbb, &items);
  const auto cmd = wire::CreateCommand(fbb, 1, wire::CommandBody::LifecycleBatch, batch.Union());
  fbb.Finish(wire::CreateClientFrame(fbb, wire::ClientMessage::Command, cmd.Union()),
             wire::ClientFrameIdentifier());
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

}  // namespace

TEST_CASE("the client table budget fits the largest valid command and bounds the rest") {
  std::string error;
  // 256 ops (the LifecycleBatch limit) and a bit beyond verify, so the server
  // can answer "at most 256" instead of closing the connection.
  CHECK(proto::verify_client_frame(batch_payload(256), error) != nullptr);
  CHECK(proto::verify_client_frame(batch_payload(300), error) != nullptr);
  // Far beyond: refused by the table budget (kClientMaxTables).
  const std::size_t over = proto::kClientMaxTables / 2;
  CHECK(proto::verify_client_frame(batch_payload(over), error) == nullptr);
  CHECK_FALSE(error.empty());
}

// Found by fuzzing (tests/fuzz/fuzz_server_inbound, fuzz_sdk_frames): payloads
// were handed out at buffer offset 4 + earlier frames, so FlatBuffers read
// uint32/uint64 fields from misaligned addresses (UBSan: "load of misaligned
// address"). Every payload must be aligned, whatever came before it.
TEST_CASE("payloads are aligned for FlatBuffers whatever the preceding frame lengths") {
  std::vector<std::uint8_t> stream;
  std::vector<std::vector<std::uint8_t>> payloads;
  for (std::size_t n : {5u, 8u, 13u, 1u, 16u, 3u, 24u}) {
    std::vector<std::uint8_t> p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(n + i);
    proto::append_frame(stream, p);
    payloads.push_back(std::move(p));
  }
  for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, stream.size()}) {
    proto::FrameDecoder dec(proto::kClientFrameMaxBytes);
    std::size_t seen = 0;
    for (std::size_t at = 0; at < stream.size(); at += chunk) {
      dec.feed({stream.data() + at, std::min(chunk, stream.size() - at)});
      std::span<const std::uint8_t> out;
      while (dec.next(out) == DecodeStatus::Frame) {
        REQUIRE(seen < payloads.size());
        CHECK(reinterpret_cast<std::uintptr_t>(out.data()) % proto::kPayloadAlignment == 0);
        CHECK(std::equal(out.begin(), out.end(), payloads[seen].begin(), payloads[seen].end()));
        ++seen;
      }
    }
    CHECK(seen == payloads.size());
  }
}

// Found by fuzzing (tests/fuzz/fuzz_sdk_frames): the FlatBuffers Verifier
// accepts a union type whose table is absent, and Client::stash then bound a
// reference to the missing CommandResult. Such a frame is malformed.
TEST_CASE("a frame naming a message type without its table fails verification") {
  std::string error;
  {
    flatbuffers::FlatBufferBuilder fbb;
    wire::ClientFrameBuilder b(fbb);
    b.add_message_type(wire::ClientMessage::Hello);
    fbb.Finish(b.Finish(), wire::ClientFrameIdentifier());
    CHECK(proto::verify_client_frame({fbb.GetBufferPointer(), fbb.GetSize()}, error) == nullptr);
    CHECK(error.find("without its message table") != std::string::npos);
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    wire::ServerFrameBuilder b(fbb);
    b.add_message_type(wire::ServerMessage::CommandResult);
    fbb.Finish(b.Finish(), wire::ServerFrameIdentifier());
    CHECK(proto::verify_server_frame({fbb.GetBufferPointer(), fbb.GetSize()}, error) == nullptr);
  }
  {
    // Type NONE carries nothing; readers treat it as an unknown message.
    flatbuffers::FlatBufferBuilder fbb;
    wire::ServerFrameBuilder b(fbb);
    fbb.Finish(b.Finish(), wire::ServerFrameIdentifier());
    CHECK(proto::verify_server_frame({fbb.GetBufferPointer(), fbb.GetSize()}, error) != nullptr);
  }
}

// Found by fuzzing (tests/fuzz/fuzz_sdk_frames): the Verifier accepts a
// [ulong] vector whose elements sit at 4 mod 8, and the SDK iterated it with
// misaligned uint64 loads. copy_scalar_vector reads such a vector bytewise.
TEST_CASE("copy_scalar_vector reads a uint64 vector whose elements are misaligned") {
  alignas(8) std::uint8_t raw[4 + 2 * 8] = {};
  const std::uint32_t length = 2;
  std::memcpy(raw, &length, 4);  // little-endian host, as FlatBuffers stores it
  const std::uint64_t values[2] = {0x0102030405060708ull, 42};
  std::memcpy(raw + 4, values, sizeof values);  // elements at offset 4: misaligned
  const auto* v = reinterpret_cast<const flatbuffers::Vector<std::uint64_t>*>(raw);
  CHECK(proto::copy_scalar_vector(v) == std::vector<std::uint64_t>{0x0102030405060708ull, 42});
  CHECK(proto::copy_scalar_vector<std::uint64_t>(nullptr).empty());
}

namespace {

// The frames of a raw server stream (a fuzz_sdk_frames input), as the SDK's
// decoder reassembles them.
std::vector<std::vector<std::uint8_t>> frames_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                        std::istreambuf_iterator<char>());
  proto::FrameDecoder decoder(proto::kServerFrameMaxBytes);
  decoder.feed(bytes);
  std::vector<std::vector<std::uint8_t>> frames;
  std::span<const std::uint8_t> payload;
  while (decoder.next(payload) == proto::DecodeStatus::Frame)
    frames.emplace_back(payload.begin(), payload.end());
  return frames;
}

// True when TABLE (a table or struct type) holds an 8-byte scalar, directly
// or in a nested struct: a struct like that is 8-byte aligned.
bool holds_8_byte_scalar(const flatbuffers::TypeTable* table) {
  for (std::size_t i = 0; i < table->num_elems; ++i) {
    const flatbuffers::TypeCode code = table->type_codes[i];
    const auto type = static_cast<flatbuffers::ElementaryType>(code.base_type);
    if (type == flatbuffers::ET_LONG || type == flatbuffers::ET_ULONG ||
        type == flatbuffers::ET_DOUBLE)
      return true;
    if (type == flatbuffers::ET_SEQUENCE && code.sequence_ref >= 0) {
      const flatbuffers::TypeTable* ref = table->type_refs[code.sequence_ref]();
      if (ref->st == flatbuffers::ST_STRUCT && holds_8_byte_scalar(ref)) return true;
    }
  }
  return false;
}

// Every struct type that some vector reachable from TABLE holds and that is
// 8-byte aligned, by type table; tables and unions are walked once each.
void wide_struct_vectors(const flatbuffers::TypeTable* table,
                         std::set<const flatbuffers::TypeTable*>& seen,
                         std::set<const flatbuffers::TypeTable*>& out) {
  if (!seen.insert(table).second) return;
  for (std::size_t i = 0; i < table->num_elems; ++i) {
    const flatbuffers::TypeCode code = table->type_codes[i];
    if (code.base_type != flatbuffers::ET_SEQUENCE || code.sequence_ref < 0) continue;
    const flatbuffers::TypeTable* ref = table->type_refs[code.sequence_ref]();
    if (ref->st == flatbuffers::ST_STRUCT && code.is_repeating && holds_8_byte_scalar(ref))
      out.insert(ref);
    if (ref->st == flatbuffers::ST_TABLE || ref->st == flatbuffers::ST_UNION)
      wide_struct_vectors(ref, seen, out);
  }
}

}  // namespace

// Found by fuzzing (tests/fuzz/regressions/fuzz_sdk_frames/
// regress-misaligned-double-vector.bin): a Population reply whose
// observers_x_m [double] sits at 4 mod 8 passed verification, and decoding it
// was a misaligned double load. The Verifier now checks the alignment of
// every vector of 8-byte elements (bustle/proto/verifier_alignment.hpp).
TEST_CASE("verify_server_frame refuses a vector of doubles that is not 8-byte aligned") {
  const auto frames = frames_of(std::string(BUSTLE_SOURCE_DIR) +
                                "/tests/fuzz/regressions/fuzz_sdk_frames/"
                                "regress-misaligned-double-vector.bin");
  REQUIRE(frames.size() == 1);
  std::string error;
  CHECK(proto::verify_server_frame(frames[0], error) == nullptr);
  CHECK(error.find("alignment") != std::string::npos);
}

TEST_CASE("every earlier misaligned-vector finding is refused by the Verifier itself") {
  for (const char* name : {"regress-misaligned-ulong-vector.bin", "regress-misaligned-vec2d.bin"}) {
    INFO(name);
    const auto frames = frames_of(std::string(BUSTLE_SOURCE_DIR) +
                                  "/tests/fuzz/regressions/fuzz_sdk_frames/" + name);
    REQUIRE_FALSE(frames.empty());
    std::size_t refused = 0;
    for (const auto& frame : frames) {
      std::string error;
      if (proto::verify_server_frame(frame, error) == nullptr) ++refused;
    }
    CHECK(refused >= 1);
  }
}

TEST_CASE("the recorded server sessions still verify frame by frame") {
  for (const char* city : {"corridor", "default", "largeblock"}) {
    INFO(city);
    const auto frames = frames_of(std::string(BUSTLE_SOURCE_DIR) +
                                  "/tests/fuzz/corpus/fuzz_sdk_frames/" + city + "-stream.bin");
    REQUIRE(frames.size() > 1);
    for (const auto& frame : frames) {
      std::string error;
      CHECK(proto::verify_server_frame(frame, error) != nullptr);
      CHECK(error.empty());
    }
  }
}

// verifier_alignment.hpp, invariant 1: every vector of 8-byte elements the
// server schema can carry is checked. Scalars (double, long, ulong) are
// covered by type; structs one by one, so a new 8-byte struct in a vector
// must be added there (and here).
TEST_CASE("every vector of 8-byte structs in the server schema is alignment-checked") {
  std::set<const flatbuffers::TypeTable*> seen;
  std::set<const flatbuffers::TypeTable*> wide;
  wide_struct_vectors(wire::ServerFrameTypeTable(), seen, wide);
  CHECK(seen.size() > 20);  // the walk reached the message tables
  CHECK(wide == std::set<const flatbuffers::TypeTable*>{wire::Vec2dTypeTable()});
}
