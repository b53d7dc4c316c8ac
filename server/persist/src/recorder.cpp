// Session recording (recorder.hpp): keyframes, every tick's commands and
// digest written in batches by a writer thread; a failing recording stops and
// says why without ever blocking the sim thread. Also the reader replay uses.
#include "bustle/persist/recorder.hpp"

#include <pthread.h>

#include <chrono>
#include <filesystem>

#include "bustle/persist/command_codec.hpp"
#include "wall_clock.hpp"

namespace bustle::persist {
namespace {

constexpr std::size_t kBatchMax = 4096;

}  // namespace

const char* to_string(KeyframeReason r) {
  switch (r) {
    case KeyframeReason::Initial:
      return "initial";
    case KeyframeReason::Periodic:
      return "periodic";
    case KeyframeReason::Restore:
      return "restore";
  }
  return "?";
}

std::optional<KeyframeReason> keyframe_due(std::uint64_t tick, bool restore_due,
                                           std::uint64_t keyframe_steps) {
  if (tick == 1) return KeyframeReason::Initial;
  if (restore_due) return KeyframeReason::Restore;
  if (keyframe_steps > 0 && (tick - 1) % keyframe_steps == 0) return KeyframeReason::Periodic;
  return std::nullopt;
}

StoreError Recorder::create(const std::string& path, const std::string& scenario_json,
                            std::unique_ptr<Recorder>& out) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    return StoreError{path, "", "", "", "recording file already exists (refusing to overwrite it)",
                      0};
  }
  std::unique_ptr<Recorder> r(new Recorder());
  r->path_ = path;
  r->scenario_json_ = scenario_json;
  if (StoreError e = SnapshotStore::open(path, FileKind::Recording, true, r->store_); !e.ok())
    return e;
  SqlError err;
  Statement st =
      r->store_.db().prepare("INSERT INTO meta(key, value) VALUES ('scenario_json', ?1)", err);
  if (!err.ok()) return StoreError{path, "meta", "", "", err.message, err.code};
  st.bind_text(1, scenario_json);
  if (SqlError e = st.run(); !e.ok())
    return StoreError{path, "meta", "key='scenario_json'", "", e.message, e.code};
  r->thread_ = std::thread([p = r.get()] {
    pthread_setname_np(pthread_self(), "bustle-record");
    p->run();
  });
  out = std::move(r);
  return {};
}

Recorder::~Recorder() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Recorder::record_keyframe(std::uint64_t tick, KeyframeReason reason,
                               core::WorldCheckpoint checkpoint) {
  {
    std::lock_guard lock(mu_);
    if (status_.failed) return;
    queue_.push_back(Keyframe{tick, reason, std::move(checkpoint)});
    ++enqueued_;
  }
  cv_.notify_one();
}

void Recorder::record_tick(RecordedTick tick) {
  {
    std::lock_guard lock(mu_);
    if (status_.failed) return;
    queue_.push_back(std::move(tick));
    ++enqueued_;
  }
  cv_.notify_one();
}

void Recorder::flush() {
  std::unique_lock lock(mu_);
  const std::uint64_t target = enqueued_;
  cv_.notify_one();
  flushed_cv_.wait(lock, [&] { return committed_ >= target || status_.failed; });
}

RecorderStatus Recorder::status() const {
  std::lock_guard lock(mu_);
  RecorderStatus s = status_;
  s.queued = queue_.size();
  return s;
}

void Recorder::run() {
  std::vector<Item> batch;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      // Batch: wait briefly so one transaction carries many ticks.
      cv_.wait_for(lock, std::chrono::milliseconds(100),
                   [&] { return stop_ || queue_.size() >= 256; });
      if (queue_.empty()) {
        if (stop_) return;
        continue;
      }
      while (!queue_.empty() && batch.size() < kBatchMax) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    const StoreError e = write_batch(batch);
    {
      std::lock_guard lock(mu_);
      committed_ += batch.size();
      if (!e.ok() && !status_.failed) {
        status_.failed = true;
        status_.error = e.to_string();
        queue_.clear();
      }
    }
    batch.clear();
    flushed_cv_.notify_all();
  }
}

StoreError Recorder::write_batch(std::vector<Item>& batch) {
  Database& db = store_.db();
  Transaction tx(db);
  if (!tx.begin_error().ok())
    return StoreError{path_, "", "", "", tx.begin_error().message, tx.begin_error().code};
  SqlError err;
  Statement tick_st =
      db.prepare("INSERT INTO recording_ticks(tick, step, digest) VALUES (?1, ?2, ?3)", err);
  if (!err.ok()) return StoreError{path_, "recording_ticks", "", "", err.message, err.code};
  Statement cmd_st = db.prepare(
      "INSERT INTO recording_commands(tick, seq, client_id, request_id, kind, args) VALUES (?1, "
      "?2, ?3, ?4, ?5, ?6)",
      err);
  if (!err.ok()) return StoreError{path_, "recording_commands", "", "", err.message, err.code};
  Statement kf_st = db.prepare(
      "INSERT INTO recording_keyframes(tick, snapshot_id, reason) VALUES (?1, ?2, ?3)", err);
  if (!err.ok()) return StoreError{path_, "recording_keyframes", "", "", err.message, err.code};

  std::uint64_t ticks = 0;
  std::uint64_t keyframes = 0;
  for (Item& item : batch) {
    if (auto* t = std::get_if<RecordedTick>(&item)) {
      tick_st.reset();
      tick_st.bind_u64(1, t->tick).bind_u64(2, t->step).bind_u64(3, t->digest);
      if (SqlError e = tick_st.run(); !e.ok()) {
        return StoreError{path_, "recording_ticks", "tick=" + std::to_string(t->tick),
                          "",    e.message,         e.code};
      }
      for (std::size_t k = 0; k < t->commands.size(); ++k) {
        const core::CommandEnvelope& env = t->commands[k];
        cmd_st.reset();
        cmd_st.bind_u64(1, t->tick)
            .bind_i64(2, static_cast<std::int64_t>(k))
            .bind_i64(3, env.origin.client_id);
        const std::string args = command_args_json(env.command);
        cmd_st.bind_i64(4, env.origin.request_id)
            .bind_text(5, core::command_name(env.command))
            .bind_text(6, args);
        if (SqlError e = cmd_st.run(); !e.ok()) {
          return StoreError{
              path_, "recording_commands", "tick=" + std::to_string(t->tick), "", e.message,
              e.code};
        }
      }
      ++ticks;
    } else {
      auto& kf = std::get<Keyframe>(item);
      std::int64_t id = 0;
      const std::string name = "keyframe." + std::to_string(kf.tick);
      if (StoreError e = store_.write_checkpoint_in_transaction(name, "keyframe", kf.checkpoint,
                                                                scenario_json_, now_unix_ms(), &id);
          !e.ok()) {
        return e;
      }
      kf_st.reset();
      kf_st.bind_u64(1, kf.tick).bind_i64(2, id).bind_text(3, to_string(kf.reason));
      if (SqlError e = kf_st.run(); !e.ok()) {
        return StoreError{
            path_, "recording_keyframes", "tick=" + std::to_string(kf.tick), "", e.message, e.code};
      }
      ++keyframes;
    }
  }
  if (SqlError e = tx.commit(); !e.ok()) return StoreError{path_, "", "", "", e.message, e.code};
  std::lock_guard lock(mu_);
  status_.ticks_written += ticks;
  status_.keyframes_written += keyframes;
  return {};
}

StoreError RecordingReader::open(const std::string& path, RecordingReader& out) {
  RecordingReader r;
  // Read-only: verifying a recording never changes it (and works on read-only media).
  if (StoreError e =
          SnapshotStore::open(path, FileKind::Recording, false, r.store_, /*read_only=*/true);
      !e.ok()) {
    return e;
  }
  Database& db = r.store_.db();
  if (SqlError e = db.quick_check(); !e.ok()) {
    return StoreError{path, "", "", "", "file failed PRAGMA quick_check: " + e.message, e.code};
  }
  // Checked once here: the file is read-only to us, so the keyframe reads
  // that follow need not re-read all of it each time.
  r.store_.skip_quick_check_on_read();
  SqlError err;
  Statement meta = db.prepare("SELECT value FROM meta WHERE key = 'scenario_json'", err);
  if (!err.ok() || !meta.step())
    return StoreError{path, "meta", "key='scenario_json'", "value", "missing", err.code};
  r.scenario_json_ = meta.column_text(0);
  Statement last = db.prepare("SELECT coalesce(max(tick), 0), count(*) FROM recording_ticks", err);
  if (!err.ok() || !last.step())
    return StoreError{path, "recording_ticks", "", "", "cannot read", err.code};
  r.last_tick_ = last.column_u64(0);
  if (last.column_u64(1) != r.last_tick_) {
    return StoreError{path,
                      "recording_ticks",
                      "",
                      "tick",
                      "ticks are not contiguous from 1 (" + std::to_string(last.column_u64(1)) +
                          " rows, last tick " + std::to_string(r.last_tick_) + ")",
                      0};
  }
  Statement kf = db.prepare(
      "SELECT k.tick, k.snapshot_id, k.reason, s.step, s.digest FROM recording_keyframes k JOIN "
      "snapshots s ON s.id = k.snapshot_id "
      "ORDER BY k.tick",
      err);
  if (!err.ok()) return StoreError{path, "recording_keyframes", "", "", err.message, err.code};
  while (kf.step()) {
    r.keyframes_.push_back({kf.column_u64(0), kf.column_i64(1), kf.column_text(2), kf.column_u64(3),
                            kf.column_u64(4)});
  }
  if (r.keyframes_.empty() || r.keyframes_.front().tick != 1 ||
      r.keyframes_.front().reason != "initial") {
    return StoreError{
        path, "recording_keyframes", "tick=1", "reason", "the initial keyframe is missing", 0};
  }
  out = std::move(r);
  return {};
}

StoreError RecordingReader::read_keyframe(const RecordingKeyframe& kf, LoadedCheckpoint& out) {
  return store_.read_checkpoint_by_id(kf.snapshot_id, out);
}

StoreError RecordingReader::read_ticks(std::uint64_t from, std::uint64_t to,
                                       std::vector<RecordedTick>& out) {
  Database& db = store_.db();
  const std::string& path = store_.path();
  SqlError err;
  Statement ticks = db.prepare(
      "SELECT tick, step, digest FROM recording_ticks WHERE tick BETWEEN ?1 AND ?2 ORDER BY tick",
      err);
  if (!err.ok()) return StoreError{path, "recording_ticks", "", "", err.message, err.code};
  ticks.bind_u64(1, from).bind_u64(2, to);
  out.clear();
  while (ticks.step())
    out.push_back(RecordedTick{ticks.column_u64(0), ticks.column_u64(1), ticks.column_u64(2), {}});
  if (!ticks.error().ok())
    return StoreError{path, "recording_ticks", "", "", ticks.error().message, ticks.error().code};
  Statement cmds = db.prepare(
      "SELECT tick, seq, client_id, request_id, kind, args FROM recording_commands WHERE tick "
      "BETWEEN ?1 AND ?2 "
      "ORDER BY tick, seq",
      err);
  if (!err.ok()) return StoreError{path, "recording_commands", "", "", err.message, err.code};
  cmds.bind_u64(1, from).bind_u64(2, to);
  while (cmds.step()) {
    const std::uint64_t tick = cmds.column_u64(0);
    const std::string row =
        "tick=" + std::to_string(tick) + " seq=" + std::to_string(cmds.column_i64(1));
    if (tick < from || tick - from >= out.size()) {
      return StoreError{
          path, "recording_commands", row, "tick", "refers to a tick with no digest row", 0};
    }
    core::CommandEnvelope env;
    env.origin = {static_cast<std::uint32_t>(cmds.column_i64(2)),
                  static_cast<std::uint32_t>(cmds.column_i64(3))};
    auto decoded = decode_command(cmds.column_text(4), cmds.column_text(5));
    if (!decoded.ok()) {
      const std::string& why = decoded.status().message();
      return StoreError{path, "recording_commands", row, why.substr(0, why.find(':')), why, 0};
    }
    env.command = std::move(*decoded);
    out[tick - from].commands.push_back(std::move(env));
  }
  if (!cmds.error().ok())
    return StoreError{path, "recording_commands", "", "", cmds.error().message, cmds.error().code};
  return {};
}

}  // namespace bustle::persist
