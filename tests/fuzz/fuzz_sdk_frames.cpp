// Fuzz target: the C++ SDK's decoding of what a server sends (clients/cpp):
// FrameReader (length-prefix reassembly with the server frame cap, then the
// FlatBuffers Verifier with the server limits), then for each verified frame
// the SDK's own public decoders, picked by message type only: to_welcome_info
// (whose lanes then feed the mirror), decode_delta and EntityMirror::apply
// with pose() for every live entity, to_command_reply, to_job_info,
// to_spawn_status. No field of any message is read here, so the target keeps
// working when the schema changes: whatever the SDK decodes is fuzzed through
// it.
//
// The input is the raw TCP stream from a server, delivered in chunks of
// 1..16 bytes whose sizes come from the stream itself. The harness relies on
// FrameReader's promise that a handed-out frame is verified: a message type
// comes with its message table.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "bustle/client/entity_mirror.hpp"
#include "bustle/client/frame_reader.hpp"
#include "bustle/client/replies.hpp"
#include "bustle/client/stream.hpp"

namespace {

using namespace bustle;

// Checks every view handed to a rendering backend is a live, in-range slot.
class CheckingListener : public client::MirrorListener {
 public:
  explicit CheckingListener(const client::EntityMirror& mirror) : mirror_(mirror) {}
  void on_entered(const client::EntityView& v) override { check(v); }
  void on_moved(const client::EntityView& v) override { check(v); }
  void on_changed(const client::EntityView& v, client::EntityField) override { check(v); }
  void on_retiring(const client::EntityView& v) override { check(v); }
  void on_left(const client::EntityView& v) override {
    if (v.slot.value >= mirror_.slot_count()) std::abort();
  }

 private:
  void check(const client::EntityView& v) const {
    if (mirror_.at(v.slot) != &v) std::abort();
  }
  const client::EntityMirror& mirror_;
};

void decode(const wire::ServerFrame& frame, client::EntityMirror& mirror) {
  switch (frame.message_type()) {
    case wire::ServerMessage::Welcome:
      mirror.set_world(client::to_welcome_info(*frame.message_as_Welcome()));
      break;
    case wire::ServerMessage::Delta: {
      client::Delta delta;
      const std::string error = client::decode_delta(*frame.message_as_Delta(), delta);
      if (!error.empty()) break;  // refused with a message: what the SDK promises
      CheckingListener listener(mirror);
      (void)mirror.apply(delta, &listener);
      std::size_t live = 0;
      mirror.for_each([&](const client::EntityView& v) {
        if (mirror.find(v.id) != &v) std::abort();
        (void)mirror.pose(v,
                          delta.step + (v.id.index & 63u));  // any later step, past lane ends too
        ++live;
      });
      if (live != mirror.size() || mirror.size() > mirror.max_entities()) std::abort();
      break;
    }
    case wire::ServerMessage::CommandResult:
      (void)client::to_command_reply(*frame.message_as_CommandResult());
      break;
    case wire::ServerMessage::JobUpdate:
      if (const wire::JobStatus* job = frame.message_as_JobUpdate()->job())
        (void)client::to_job_info(*job);
      break;
    case wire::ServerMessage::SpawnUpdate:
      if (const wire::SpawnStatus* s = frame.message_as_SpawnUpdate()->spawn())
        (void)client::to_spawn_status(*s);
      break;
    default:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  client::FrameReader reader;
  client::EntityMirror mirror(1024);  // small, so the full-mirror path is reached
  std::size_t at = 0;
  while (at < bytes.size() && !reader.failed()) {
    const std::size_t n = std::min<std::size_t>(bytes.size() - at, 1 + (bytes[at] & 15u));
    reader.feed(bytes.subspan(at, n));
    at += n;
    for (;;) {
      const client::ReadResult r = reader.next();
      if (r.status == client::ReadStatus::NeedMore) break;
      if (client::is_error(r.status)) {
        if (r.error.empty() || !reader.failed()) std::abort();
        break;
      }
      if (r.frame == nullptr) std::abort();
      decode(*r.frame, mirror);
    }
  }
  return 0;
}
