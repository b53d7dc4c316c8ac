// Session recording: one SQLite file (FileKind::Recording) holding the
// scenario, keyframes (the initial one first), every world command applied
// with its tick and order, and the digest after every tick.
//
// A tick is one executed step of the session, numbered from 1; steps can
// repeat after a restore, ticks never do. A keyframe at tick T is the state
// just before tick T's step, *including* the commands already queued for it,
// so replay from a keyframe at T restores it and steps without re-submitting
// T's recorded commands; for every later tick it submits that tick's recorded
// commands in order and steps. A keyframe with reason "restore" marks where the
// live world was replaced (restore/load): replay must load it at that tick.
//
// The sim thread only appends to an in-memory queue (a mutex held for a
// push); a writer thread commits batches. Recording never blocks a step. If the
// writer fails (disk full, I/O error), recording stops, the failure is kept in
// status(), and the simulation carries on.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "bustle/core/checkpoint.hpp"
#include "bustle/core/command.hpp"
#include "bustle/persist/snapshot_store.hpp"

namespace bustle::persist {

struct RecordedTick {
  std::uint64_t tick = 0;
  std::uint64_t step = 0;                       // world step after the tick
  std::uint64_t digest = 0;                     // world digest after the tick
  std::vector<core::CommandEnvelope> commands;  // submitted for this tick, arrival order
};

enum class KeyframeReason { Initial, Periodic, Restore };
const char* to_string(KeyframeReason r);

// The keyframe tick T needs, if any: Initial at tick 1, Restore at the first
// tick after the world was replaced (restore_due), otherwise Periodic every
// keyframe_steps ticks (ticks 1 + k x keyframe_steps; 0 = none). One rule for
// every program that records (the server's sim thread and its batch mode).
std::optional<KeyframeReason> keyframe_due(std::uint64_t tick, bool restore_due,
                                           std::uint64_t keyframe_steps);

struct RecorderStatus {
  std::uint64_t ticks_written = 0;
  std::uint64_t keyframes_written = 0;
  std::uint64_t queued = 0;
  bool failed = false;
  std::string error;  // first failure, when failed
};

class Recorder {
 public:
  // Creates `path` (refuses to overwrite an existing file, so no recording is
  // ever lost) and writes the metadata. Starts the writer thread on success.
  static StoreError create(const std::string& path, const std::string& scenario_json,
                           std::unique_ptr<Recorder>& out);
  ~Recorder();  // flushes everything queued, then joins

  // Sim thread. Non-blocking.
  void record_keyframe(std::uint64_t tick, KeyframeReason reason, core::WorldCheckpoint checkpoint);
  void record_tick(RecordedTick tick);

  // Blocks until everything queued so far is committed (tests, shutdown).
  void flush();
  RecorderStatus status() const;
  const std::string& path() const { return path_; }

 private:
  Recorder() = default;
  struct Keyframe {
    std::uint64_t tick;
    KeyframeReason reason;
    core::WorldCheckpoint checkpoint;
  };
  using Item = std::variant<RecordedTick, Keyframe>;
  void run();
  StoreError write_batch(std::vector<Item>& batch);

  std::string path_;
  std::string scenario_json_;
  SnapshotStore store_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable flushed_cv_;
  std::deque<Item> queue_;
  std::uint64_t enqueued_ = 0;
  std::uint64_t committed_ = 0;
  bool stop_ = false;
  RecorderStatus status_;
  std::thread thread_;
};

// Reading a recording (replay tools).
struct RecordingKeyframe {
  std::uint64_t tick = 0;
  std::int64_t snapshot_id = 0;
  std::string reason;  // initial | periodic | restore
  std::uint64_t step = 0;
  std::uint64_t digest = 0;  // snapshots.digest: the stored state's digest (inbox included)
};

class RecordingReader {
 public:
  static StoreError open(const std::string& path, RecordingReader& out);

  const std::string& scenario_json() const { return scenario_json_; }
  std::uint64_t last_tick() const { return last_tick_; }
  const std::vector<RecordingKeyframe>& keyframes() const { return keyframes_; }

  StoreError read_keyframe(const RecordingKeyframe& kf, LoadedCheckpoint& out);
  // Ticks [from, to] with their commands, in tick order.
  StoreError read_ticks(std::uint64_t from, std::uint64_t to, std::vector<RecordedTick>& out);

  SnapshotStore& store() { return store_; }

 private:
  SnapshotStore store_;
  std::string scenario_json_;
  std::uint64_t last_tick_ = 0;
  std::vector<RecordingKeyframe> keyframes_;
};

}  // namespace bustle::persist
