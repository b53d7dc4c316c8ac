// Replayer: re-simulates a session recording tick by tick (DESIGN §5, §8).
//
// A recording (persist::RecordingReader) holds the scenario, keyframes and,
// for every tick, the world commands submitted for it and the step and digest
// after it. The Replayer owns one World rebuilt from a keyframe and applies
// ticks in order, returning the recorded and the replayed step and digest of
// each, so `bustle-replay verify` and `bustle-replay serve` share exactly one
// implementation of the tick rule:
//
//   1. seek(T) restores the latest keyframe at or before tick T. A keyframe at
//      tick K is the state just before K's step *with K's commands already
//      queued*, so the first next_tick() after a load steps without
//      submitting K's recorded commands.
//   2. next_tick() for any other tick submits that tick's recorded commands in
//      arrival order, then steps.
//   3. A keyframe with reason "restore" marks where the live world was
//      replaced (operator restore or load): when next_tick() reaches it, the
//      world is replaced by that keyframe before stepping (rule 1 applies).
//      "initial" and "periodic" keyframes are only used as seek targets.
//   4. Ticks are read in chunks of kChunkTicks, so memory does not grow with
//      the length of the recording.
//   5. With set_check_keyframes(true), next_tick() at a "periodic" keyframe's
//      tick (other than the one just loaded) also restores that keyframe into
//      a candidate world (so it is proven to restore, and its state to hash
//      to its stored digest) and compares its stored digest with the
//      replayed state's, commands queued: TickOutcome::keyframe_diverged().
//      verify uses this so that one world replayed from the start judges
//      every keyframe exactly as segments restored from them do.
//
// Errors (unreadable file, missing keyframe, a checkpoint that fails
// World::restore, a command the world refuses to queue) are values naming the
// file, table, row and field; a digest mismatch is not an error but a
// TickOutcome with diverged() == true, and the Replayer carries on from the
// replayed state.
//
// Not thread-safe: one thread owns a Replayer and its World.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bustle/core/log_sink.hpp"
#include "bustle/core/scenario.hpp"
#include "bustle/core/world.hpp"
#include "bustle/persist/recorder.hpp"

namespace bustle::replay {

// A failure to read or apply the recording. `message` is one line naming the
// file, and where known the table, row and field.
struct ReplayError {
  std::string message;
  bool ok() const { return message.empty(); }
};

// One applied tick.
struct TickOutcome {
  std::uint64_t tick = 0;
  std::uint64_t recorded_step = 0;
  std::uint64_t recorded_digest = 0;
  std::uint64_t replayed_step = 0;
  std::uint64_t replayed_digest = 0;
  bool loaded_keyframe = false;  // the world was (re)loaded from a keyframe before this tick
  std::size_t commands = 0;      // recorded commands submitted for this tick
  // Rule 5: a periodic keyframe at this tick was checked before the step.
  bool keyframe_checked = false;
  std::uint64_t keyframe_step = 0;             // the keyframe's stored step
  std::uint64_t keyframe_digest = 0;           // its stored digest
  std::uint64_t keyframe_replayed_digest = 0;  // the replayed state's, commands queued

  bool diverged() const {
    return recorded_step != replayed_step || recorded_digest != replayed_digest;
  }
  bool keyframe_diverged() const {
    return keyframe_checked && keyframe_digest != keyframe_replayed_digest;
  }
};

class Replayer {
 public:
  // [Limit: >= 1] ticks read from the file at a time.
  static constexpr std::uint64_t kChunkTicks = 4096;

  // Opens the recording and parses its scenario. No world exists until seek().
  // `log` (may be null) receives the core's log lines; it must outlive the Replayer.
  static ReplayError open(const std::string& path, std::unique_ptr<Replayer>& out,
                          core::LogSink* log = nullptr);

  // The first tick whose recorded step is >= `step`; nullopt when none is.
  ReplayError first_tick_at_step(std::uint64_t step, std::optional<std::uint64_t>& tick,
                                 std::uint64_t from_tick = 1);

  // Every tick's recorded step and digest (no commands), in tick order: what
  // diff reads to find the first difference without replaying.
  ReplayError recorded_digests(std::vector<persist::RecordedTick>& out);
  // One tick's recorded row with its commands. [Limit: 1 <= tick <= last_tick()]
  ReplayError recorded_tick(std::uint64_t tick, persist::RecordedTick& out);

  // Restores the latest keyframe at or before `tick` [Limit: 1 <= tick <=
  // last_tick(), or tick == 1 for a recording without ticks]; the next
  // next_tick() applies that keyframe's tick (which may be before `tick`).
  ReplayError seek(std::uint64_t tick);

  // Applies the next tick (rules 1-3). [Precondition: seek() succeeded and
  // !at_end()]. On error the Replayer must be seek()ed again before reuse.
  ReplayError next_tick(TickOutcome& out);

  // Submits the next tick's recorded commands without stepping and sets
  // `digest` to the digest of the resulting state: what a keyframe at that
  // tick stores. [Precondition: has_world() and !at_end()] The world is left
  // between submit and step: seek() before the next next_tick().
  ReplayError queue_next_commands(std::uint64_t& digest);

  void set_check_keyframes(bool on) { check_keyframes_ = on; }

  bool has_world() const { return world_ != nullptr; }
  bool at_end() const { return next_tick_ > last_tick(); }
  // The tick next_tick() will apply.
  std::uint64_t next_tick_number() const { return next_tick_; }
  std::uint64_t last_tick() const { return reader_.last_tick(); }
  const std::vector<persist::RecordingKeyframe>& keyframes() const { return reader_.keyframes(); }
  const std::string& path() const { return path_; }
  const core::Scenario& scenario() const { return scenario_; }
  const std::string& scenario_json() const { return reader_.scenario_json(); }

  // [Precondition: has_world()]
  const core::World& world() const { return *world_; }
  // Bumped every time the world is replaced (seek, restore keyframe); clients
  // must not diff entity ids across epochs.
  std::uint64_t world_epoch() const { return world_epoch_; }

 private:
  Replayer() = default;

  ReplayError load_keyframe(const persist::RecordingKeyframe& kf);
  // Reads and restores `kf` into `out` without touching world_.
  ReplayError restore_keyframe(const persist::RecordingKeyframe& kf,
                               std::unique_ptr<core::World>& out);
  ReplayError submit_commands(const persist::RecordedTick& rec);
  ReplayError ensure_chunk(std::uint64_t tick);
  // The keyframe at exactly `tick`, if any.
  const persist::RecordingKeyframe* keyframe_at(std::uint64_t tick) const;
  std::string where(const std::string& table, const std::string& row,
                    const std::string& field) const;

  std::string path_;
  persist::RecordingReader reader_;
  core::LogSink* log_ = nullptr;
  core::Scenario scenario_;             // from meta.scenario_json
  std::string keyframe_scenario_json_;  // last differing keyframe scenario text, if any
  std::optional<core::Scenario> keyframe_scenario_;

  std::unique_ptr<core::World> world_;
  std::uint64_t world_epoch_ = 0;
  std::uint64_t next_tick_ = 1;
  bool skip_commands_ = false;  // the world was just loaded from the keyframe at next_tick_
  bool check_keyframes_ = false;

  std::vector<persist::RecordedTick> chunk_;
  std::uint64_t chunk_first_ = 0;  // tick of chunk_[0]; 0 = empty
};

}  // namespace bustle::replay
