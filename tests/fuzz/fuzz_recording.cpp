// Fuzz target: reading a session recording (server/persist RecordingReader)
// and re-simulating it with the Replayer that `bustle-replay verify` and
// `serve` use: open (read-only, quick_check, meta, contiguous ticks, the
// initial keyframe), the recorded scenario, keyframe restore (World::restore),
// then ticks in order with their decoded commands submitted to the world.
// Bad input must come back as a ReplayError, never a crash; a digest mismatch
// is an outcome, not an error.
//
// The input is a whole SQLite file, written to a temporary file per execution;
// campaigns mutate it through SQL as well as byte by byte (sqlite_mutator.hpp).
// At most kTicksMax ticks are replayed, then the last tick is sought (the
// keyframe search a `--from-step` run does).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>

#include "bustle/replay/replayer.hpp"
#include "fuzz_support.hpp"
#include "sqlite_mutator.hpp"

namespace {

using namespace bustle;

constexpr int kTicksMax = 64;

void check_error(const replay::ReplayError& e) {
  if (e.ok()) std::abort();
}

void replay_file(const std::string& path) {
  std::unique_ptr<replay::Replayer> replayer;
  if (replay::ReplayError e = replay::Replayer::open(path, replayer); !e.ok()) return;
  if (replayer == nullptr) std::abort();
  if (replayer->scenario().entity_capacity > fuzz::kWorldCapacityMax) return;
  if (replay::ReplayError e = replayer->seek(1); !e.ok()) return check_error(e);
  for (int i = 0; i < kTicksMax && !replayer->at_end(); ++i) {
    const std::uint64_t expected = replayer->next_tick_number();
    replay::TickOutcome out;
    if (replay::ReplayError e = replayer->next_tick(out); !e.ok()) return check_error(e);
    if (out.tick != expected || out.replayed_step != replayer->world().step_index()) std::abort();
  }
  std::optional<std::uint64_t> tick;
  if (replay::ReplayError e = replayer->first_tick_at_step(0, tick); !e.ok()) return check_error(e);
  if (replayer->last_tick() > 0) {
    if (replay::ReplayError e = replayer->seek(replayer->last_tick()); !e.ok())
      return check_error(e);
    if (!replayer->has_world()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzz::InputFile file("bustle-fuzz-recording");
  replay_file(file.write(data, size));
  file.remove();
  return 0;
}

// Mutants that stay well-formed SQLite files (sqlite_mutator.hpp).
BUSTLE_SQLITE_CUSTOM_MUTATOR
