// The Replayer (replayer.hpp): one World rebuilt from a recording's keyframe
// and stepped tick by tick with the recorded commands, returning the
// recorded and replayed step and digest of each tick.
#include "bustle/replay/replayer.hpp"

#include <algorithm>
#include <cassert>

#include "bustle/scenario/scenario_loader.hpp"

namespace bustle::replay {
namespace {

ReplayError from_store(const persist::StoreError& e) {
  return ReplayError{e.to_string()};
}

std::string join_scenario_errors(const std::vector<scenario::LoadError>& errors) {
  std::string out;
  for (std::size_t k = 0; k < errors.size() && k < 8; ++k) {
    if (k > 0) out += "; ";
    out += errors[k].to_string();
  }
  if (errors.size() > 8) out += "; ... (" + std::to_string(errors.size()) + " errors)";
  return out;
}

}  // namespace

std::string Replayer::where(const std::string& table, const std::string& row,
                            const std::string& field) const {
  std::string s = path_;
  if (!table.empty()) s += ": table " + table;
  if (!row.empty()) s += ", row " + row;
  if (!field.empty()) s += ", field " + field;
  return s;
}

ReplayError Replayer::open(const std::string& path, std::unique_ptr<Replayer>& out,
                           core::LogSink* log) {
  std::unique_ptr<Replayer> r(new Replayer());
  r->path_ = path;
  r->log_ = log;
  if (persist::StoreError e = persist::RecordingReader::open(path, r->reader_); !e.ok())
    return from_store(e);
  const std::string source = path + ": meta.scenario_json";
  scenario::LoadResult loaded = scenario::load_scenario_text(r->reader_.scenario_json(), source);
  if (!loaded.ok()) {
    return ReplayError{
        r->where("meta", "key='scenario_json'", "value") +
        ": the recorded scenario does not load: " + join_scenario_errors(loaded.errors)};
  }
  r->scenario_ = std::move(*loaded.scenario);
  out = std::move(r);
  return {};
}

ReplayError Replayer::first_tick_at_step(std::uint64_t step, std::optional<std::uint64_t>& tick,
                                         std::uint64_t from_tick) {
  tick.reset();
  persist::Database& db = reader_.store().db();
  persist::SqlError err;
  // Steps are stored as signed 64-bit bit patterns; every real step is far
  // below 2^63, so the signed comparison is the unsigned one.
  persist::Statement st =
      db.prepare("SELECT min(tick) FROM recording_ticks WHERE tick >= ?1 AND step >= ?2", err);
  if (!err.ok()) return ReplayError{where("recording_ticks", "", "step") + ": " + err.message};
  st.bind_u64(1, from_tick).bind_u64(2, step);
  if (!st.step())
    return ReplayError{where("recording_ticks", "", "step") + ": " + st.error().message};
  if (!st.column_is_null(0)) tick = st.column_u64(0);
  return {};
}

const persist::RecordingKeyframe* Replayer::keyframe_at(std::uint64_t tick) const {
  const auto& kfs = reader_.keyframes();
  const auto it = std::lower_bound(
      kfs.begin(), kfs.end(), tick,
      [](const persist::RecordingKeyframe& k, std::uint64_t t) { return k.tick < t; });
  return it != kfs.end() && it->tick == tick ? &*it : nullptr;
}

ReplayError Replayer::restore_keyframe(const persist::RecordingKeyframe& kf,
                                       std::unique_ptr<core::World>& out) {
  const std::string row = "tick=" + std::to_string(kf.tick) + " (snapshot " +
                          std::to_string(kf.snapshot_id) + ", reason " + kf.reason + ")";
  persist::LoadedCheckpoint loaded;
  if (persist::StoreError e = reader_.read_keyframe(kf, loaded); !e.ok()) {
    return ReplayError{"keyframe " + row + ": " + e.to_string()};
  }
  // A keyframe carries the scenario it belongs to; it normally is the
  // recording's, but a restore or load may have brought another one.
  const core::Scenario* sc = &scenario_;
  if (!loaded.scenario_json.empty() && loaded.scenario_json != reader_.scenario_json()) {
    if (!keyframe_scenario_ || loaded.scenario_json != keyframe_scenario_json_) {
      scenario::LoadResult parsed =
          scenario::load_scenario_text(loaded.scenario_json, path_ + ": snapshots.scenario_json");
      if (!parsed.ok()) {
        return ReplayError{
            where("snapshots", "id=" + std::to_string(kf.snapshot_id), "scenario_json") +
            ": the keyframe's scenario does not load: " + join_scenario_errors(parsed.errors)};
      }
      keyframe_scenario_ = std::move(parsed.scenario);
      keyframe_scenario_json_ = loaded.scenario_json;
    }
    sc = &*keyframe_scenario_;
  }
  core::World::RestoreResult restored = core::World::restore(*sc, loaded.checkpoint, log_);
  if (!restored.world) {
    std::string msg = where("recording_keyframes", row, "") + ": the checkpoint does not restore:";
    for (std::size_t k = 0; k < restored.errors.size() && k < 8; ++k) {
      msg += (k == 0 ? " " : "; ") + restored.errors[k].path + ": " + restored.errors[k].message;
    }
    if (restored.errors.size() > 8)
      msg += "; ... (" + std::to_string(restored.errors.size()) + " errors)";
    return ReplayError{msg};
  }
  assert(restored.errors.empty());
  if (restored.world->step_index() != kf.step) {
    return ReplayError{where("snapshots", "id=" + std::to_string(kf.snapshot_id), "step") +
                       ": keyframe says step " + std::to_string(kf.step) +
                       " but the checkpoint is at step " +
                       std::to_string(restored.world->step_index())};
  }
  out = std::move(restored.world);
  return {};
}

ReplayError Replayer::load_keyframe(const persist::RecordingKeyframe& kf) {
  std::unique_ptr<core::World> world;
  if (ReplayError e = restore_keyframe(kf, world); !e.ok()) return e;
  world_ = std::move(world);
  ++world_epoch_;
  next_tick_ = kf.tick;
  skip_commands_ = true;
  return {};
}

ReplayError Replayer::seek(std::uint64_t tick) {
  const auto& kfs = reader_.keyframes();
  assert(!kfs.empty());  // RecordingReader::open refuses a recording without the initial keyframe
  assert(kfs.front().tick == 1);
  if (tick < 1 || (tick > last_tick() && !(tick == 1 && last_tick() == 0))) {
    return ReplayError{where("recording_ticks", "tick=" + std::to_string(tick), "tick") +
                       ": no such tick (the recording has ticks 1.." + std::to_string(last_tick()) +
                       ")"};
  }
  auto it = std::upper_bound(
      kfs.begin(), kfs.end(), tick,
      [](std::uint64_t t, const persist::RecordingKeyframe& k) { return t < k.tick; });
  assert(it != kfs.begin());
  --it;
  assert(it->tick <= tick);
  world_.reset();
  return load_keyframe(*it);
}

ReplayError Replayer::ensure_chunk(std::uint64_t tick) {
  if (chunk_first_ != 0 && tick >= chunk_first_ && tick - chunk_first_ < chunk_.size()) return {};
  const std::uint64_t to = std::min(last_tick(), tick + kChunkTicks - 1);
  chunk_.clear();
  chunk_first_ = 0;
  if (persist::StoreError e = reader_.read_ticks(tick, to, chunk_); !e.ok()) return from_store(e);
  // RecordingReader::open checked that ticks are contiguous from 1; check the
  // rows we got are the ones asked for, so a gap never shifts commands.
  if (chunk_.size() != to - tick + 1) {
    return ReplayError{where("recording_ticks",
                             "tick=" + std::to_string(tick) + ".." + std::to_string(to), "tick") +
                       ": expected " + std::to_string(to - tick + 1) + " rows, read " +
                       std::to_string(chunk_.size())};
  }
  for (std::size_t k = 0; k < chunk_.size(); ++k) {
    if (chunk_[k].tick != tick + k) {
      return ReplayError{
          where("recording_ticks", "tick=" + std::to_string(chunk_[k].tick), "tick") +
          ": expected tick " + std::to_string(tick + k)};
    }
  }
  chunk_first_ = tick;
  return {};
}

ReplayError Replayer::next_tick(TickOutcome& out) {
  assert(world_ != nullptr);
  assert(!at_end());
  const std::uint64_t tick = next_tick_;
  if (ReplayError e = ensure_chunk(tick); !e.ok()) return e;
  const persist::RecordedTick& rec = chunk_[tick - chunk_first_];
  assert(rec.tick == tick);

  out = TickOutcome{};
  out.tick = tick;
  out.loaded_keyframe = skip_commands_;
  // Rule 3: the live world was replaced here.
  if (!skip_commands_) {
    if (const persist::RecordingKeyframe* kf = keyframe_at(tick);
        kf != nullptr && kf->reason == "restore") {
      if (ReplayError e = load_keyframe(*kf); !e.ok()) return e;
      out.loaded_keyframe = true;
    }
  }
  assert(next_tick_ == tick);
  if (!skip_commands_) {
    if (ReplayError e = submit_commands(rec); !e.ok()) return e;
    out.commands = rec.commands.size();
    // Rule 5.
    if (const persist::RecordingKeyframe* kf = keyframe_at(tick);
        check_keyframes_ && kf != nullptr && kf->reason == "periodic") {
      std::unique_ptr<core::World> candidate;
      if (ReplayError e = restore_keyframe(*kf, candidate); !e.ok()) return e;
      out.keyframe_checked = true;
      out.keyframe_step = kf->step;
      out.keyframe_digest = candidate->digest();
      out.keyframe_replayed_digest =
          world_->inbox_size() == 0 ? world_->digest() : world_->compute_digest();
    }
  }
  world_->step();
  skip_commands_ = false;
  ++next_tick_;

  out.recorded_step = rec.step;
  out.recorded_digest = rec.digest;
  out.replayed_step = world_->step_index();
  out.replayed_digest = world_->digest();
  return {};
}

}  // namespace bustle::replay

namespace bustle::replay {

ReplayError Replayer::submit_commands(const persist::RecordedTick& rec) {
  for (std::size_t k = 0; k < rec.commands.size(); ++k) {
    if (world_->submit(rec.commands[k]) != core::SubmitStatus::Queued) {
      return ReplayError{where("recording_commands",
                               "tick=" + std::to_string(rec.tick) + " seq=" + std::to_string(k),
                               "") +
                         ": the world's command inbox is full (capacity " +
                         std::to_string(world_->scenario().command_inbox_capacity) +
                         "); the live world could not have queued it"};
    }
  }
  return {};
}

ReplayError Replayer::recorded_digests(std::vector<persist::RecordedTick>& out) {
  out.clear();
  persist::Database& db = reader_.store().db();
  persist::SqlError err;
  persist::Statement st =
      db.prepare("SELECT tick, step, digest FROM recording_ticks ORDER BY tick", err);
  if (!err.ok()) return ReplayError{where("recording_ticks", "", "digest") + ": " + err.message};
  out.reserve(last_tick());
  while (st.step()) {
    out.push_back(persist::RecordedTick{st.column_u64(0), st.column_u64(1), st.column_u64(2), {}});
  }
  if (!st.error().ok())
    return ReplayError{where("recording_ticks", "", "digest") + ": " + st.error().message};
  return {};
}

ReplayError Replayer::recorded_tick(std::uint64_t tick, persist::RecordedTick& out) {
  std::vector<persist::RecordedTick> rows;
  if (persist::StoreError e = reader_.read_ticks(tick, tick, rows); !e.ok()) return from_store(e);
  if (rows.size() != 1)
    return ReplayError{where("recording_ticks", "tick=" + std::to_string(tick), "tick") +
                       ": missing"};
  out = std::move(rows.front());
  return {};
}

ReplayError Replayer::queue_next_commands(std::uint64_t& digest) {
  assert(world_ != nullptr);
  assert(!at_end());
  const std::uint64_t tick = next_tick_;
  if (ReplayError e = ensure_chunk(tick); !e.ok()) return e;
  const persist::RecordedTick& rec = chunk_[tick - chunk_first_];
  assert(rec.tick == tick);
  if (!skip_commands_) {
    if (ReplayError e = submit_commands(rec); !e.ok()) return e;
  }
  skip_commands_ = true;  // nothing may be queued twice; seek() resets it
  digest = world_->inbox_size() == 0 ? world_->digest() : world_->compute_digest();
  return {};
}

}  // namespace bustle::replay
