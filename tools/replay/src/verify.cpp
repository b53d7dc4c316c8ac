// bustle-replay verify: keyframe-to-keyframe segments replayed on worker
// threads, each comparing every digest (see verify.hpp).
#include "bustle/replay/verify.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bustle/replay/commands.hpp"
#include "bustle/replay/replayer.hpp"
#include "hex.hpp"

namespace bustle::replay {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::uint64_t kNoTick = std::numeric_limits<std::uint64_t>::max();

// What stopped a segment, ordered as verify.hpp says.
struct Event {
  enum class Kind : std::uint8_t { Error = 0, Keyframe = 1, Tick = 2, Invariant = 3 };
  Kind kind = Kind::Error;
  std::uint64_t tick = 0;
  std::uint64_t step = 0;
  std::uint64_t replayed_step = 0;
  std::uint64_t recorded_digest = 0;
  std::uint64_t replayed_digest = 0;
  std::string message;

  bool before(const Event& o) const {
    if (tick != o.tick) return tick < o.tick;
    return kind < o.kind;
  }
};

struct Segment {
  std::uint64_t first = 0;  // a keyframe's tick
  std::uint64_t last = 0;
  std::optional<persist::RecordingKeyframe> end_keyframe;  // periodic keyframe at last + 1
};

struct SegmentResult {
  bool finished = false;  // ran to its end (or to its event)
  std::uint64_t ticks = 0;
  std::uint64_t step_first = 0;
  std::uint64_t step_last = 0;
  std::uint64_t sim_us = 0;
  std::optional<Event> event;
};

class SegmentRunner {
 public:
  SegmentRunner(const ReplayOptions& options, std::atomic<std::uint64_t>& ticks_done,
                std::atomic<std::uint64_t>& cutoff)
      : options_(options), ticks_done_(ticks_done), cutoff_(cutoff) {}

  ReplayError open() {
    ReplayError e = Replayer::open(options_.file, rep_);
    if (e.ok()) rep_->set_check_keyframes(true);
    return e;
  }

  void run(const Segment& seg, SegmentResult& out) {
    out = SegmentResult{};
    const auto stop = [&](Event ev) {
      out.event = std::move(ev);
      std::uint64_t cur = cutoff_.load();
      while (out.event->tick < cur && !cutoff_.compare_exchange_weak(cur, out.event->tick)) {
      }
      out.finished = true;
    };
    const auto error = [&](std::uint64_t tick, std::string message) {
      Event ev;
      ev.kind = Event::Kind::Error;
      ev.tick = tick;
      ev.message = std::move(message);
      stop(std::move(ev));
    };
    if (seg.first > cutoff_.load()) return;
    if (ReplayError e = rep_->seek(seg.first); !e.ok()) return error(seg.first, e.message);
    assert(rep_->next_tick_number() == seg.first);
    TickOutcome oc;
    std::uint64_t unreported = 0;
    while (rep_->next_tick_number() <= seg.last) {
      const std::uint64_t tick = rep_->next_tick_number();
      if (tick > cutoff_.load()) {
        ticks_done_ += unreported;
        return;  // an earlier event decides the verdict; this result is not used
      }
      if (ReplayError e = rep_->next_tick(oc); !e.ok()) return error(tick, e.message);
      if (oc.keyframe_diverged()) {
        return stop({Event::Kind::Keyframe,
                     tick,
                     oc.keyframe_step,
                     oc.keyframe_step,
                     oc.keyframe_digest,
                     oc.keyframe_replayed_digest,
                     {}});
      }
      if (oc.diverged()) {
        return stop({Event::Kind::Tick,
                     tick,
                     oc.recorded_step,
                     oc.replayed_step,
                     oc.recorded_digest,
                     oc.replayed_digest,
                     {}});
      }
      if (options_.check_invariants) {
        if (core::Status broken = rep_->world().check_invariants(); !broken.ok()) {
          Event ev;
          ev.kind = Event::Kind::Invariant;
          ev.tick = tick;
          ev.step = oc.replayed_step;
          ev.replayed_step = oc.replayed_step;
          ev.message = broken.message();
          return stop(std::move(ev));
        }
      }
      if (out.ticks == 0) out.step_first = oc.replayed_step;
      out.step_last = oc.replayed_step;
      ++out.ticks;
      out.sim_us += rep_->world().step_us();
      // Batched so workers do not contend on one cache line every tick.
      if (++unreported == 16) {
        ticks_done_ += unreported;
        unreported = 0;
      }
    }
    ticks_done_ += unreported;
    if (seg.end_keyframe) {
      const persist::RecordingKeyframe& kf = *seg.end_keyframe;
      std::uint64_t digest = 0;
      if (ReplayError e = rep_->queue_next_commands(digest); !e.ok())
        return error(kf.tick, e.message);
      if (digest != kf.digest) {
        Event ev;
        ev.kind = Event::Kind::Keyframe;
        ev.tick = kf.tick;
        ev.step = kf.step;
        ev.replayed_step = rep_->world().step_index();
        ev.recorded_digest = kf.digest;
        ev.replayed_digest = digest;
        return stop(std::move(ev));
      }
    }
    out.finished = true;
  }

 private:
  const ReplayOptions& options_;
  std::atomic<std::uint64_t>& ticks_done_;
  std::atomic<std::uint64_t>& cutoff_;
  std::unique_ptr<Replayer> rep_;
};

}  // namespace

std::string format_progress(std::uint64_t done, std::uint64_t total, double seconds,
                            std::uint32_t jobs) {
  const double rate = seconds > 0.0 ? static_cast<double>(done) / seconds : 0.0;
  const double pct =
      total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
  char buf[160];
  if (rate > 0.0 && done < total) {
    std::snprintf(buf, sizeof buf,
                  "verify: %" PRIu64 "/%" PRIu64
                  " ticks (%.0f%%)  %.0f steps/s  ETA %.1f s  [%u job%s]",
                  done, total, pct, rate, static_cast<double>(total - done) / rate, jobs,
                  jobs == 1 ? "" : "s");
  } else {
    std::snprintf(buf, sizeof buf,
                  "verify: %" PRIu64 "/%" PRIu64 " ticks (%.0f%%)  %.0f steps/s  [%u job%s]", done,
                  total, pct, rate, jobs, jobs == 1 ? "" : "s");
  }
  return buf;
}

namespace {

// The ticks to verify, [first, last], from --from-step / --to-step. Empty
// string or the reason it cannot (naming the file and table).
std::string tick_range(const ReplayOptions& options, Replayer& rep, std::uint64_t& first,
                       std::uint64_t& last) {
  if (rep.last_tick() == 0)
    return options.file + ": table recording_ticks: no ticks recorded, nothing to verify";
  first = 1;
  if (options.from_step) {
    std::optional<std::uint64_t> t;
    if (ReplayError e = rep.first_tick_at_step(*options.from_step, t); !e.ok()) return e.message;
    if (!t) {
      return options.file + ": table recording_ticks: no tick reaches step " +
             std::to_string(*options.from_step) + " (--from-step)";
    }
    first = *t;
  }
  last = rep.last_tick();
  if (options.to_step) {
    std::optional<std::uint64_t> t;
    if (ReplayError e = rep.first_tick_at_step(*options.to_step, t, first); !e.ok())
      return e.message;
    if (t) last = *t;
  }
  return {};
}

// Segments: from the keyframe at or before `first`, cut at every later
// keyframe up to `last` (jobs_wanted == 1: one segment, keyframes checked
// inside). A segment that ends at a periodic keyframe carries a copy of it,
// so its end state is checked against that keyframe's digest.
std::vector<Segment> plan_segments(const Replayer& rep, std::uint64_t first, std::uint64_t last,
                                   std::uint32_t jobs_wanted) {
  const auto& kfs = rep.keyframes();
  auto start_kf = std::upper_bound(
      kfs.begin(), kfs.end(), first,
      [](std::uint64_t t, const persist::RecordingKeyframe& k) { return t < k.tick; });
  assert(start_kf != kfs.begin());
  --start_kf;
  std::vector<Segment> segments;
  segments.push_back(Segment{start_kf->tick, last, std::nullopt});
  if (jobs_wanted > 1) {
    for (auto it = start_kf + 1; it != kfs.end() && it->tick <= last; ++it) {
      Segment& prev = segments.back();
      prev.last = it->tick - 1;
      if (it->reason == "periodic") prev.end_keyframe = *it;
      segments.push_back(Segment{it->tick, last, std::nullopt});
    }
  }
  return segments;
}

// Runs the segments on `jobs` threads, each with its own Replayer, calling
// `progress` at once and then four times a second. Fills `results` (one per
// segment); returns the first worker's open error, or empty.
std::string run_segments(const ReplayOptions& options, const std::vector<Segment>& segments,
                         std::uint32_t jobs, std::uint64_t ticks_total,
                         const VerifyProgress& progress, std::vector<SegmentResult>& results) {
  const auto began = SteadyClock::now();
  std::atomic<std::uint64_t> ticks_done{0};
  std::atomic<std::uint64_t> cutoff{kNoTick};
  std::atomic<std::size_t> next_segment{0};
  results.assign(segments.size(), SegmentResult{});
  std::vector<std::string> open_errors(jobs);
  std::mutex mu;
  std::condition_variable cv;
  std::uint32_t running = jobs;

  std::vector<std::thread> workers;
  workers.reserve(jobs);
  for (std::uint32_t w = 0; w < jobs; ++w) {
    workers.emplace_back([&, w] {
      SegmentRunner runner(options, ticks_done, cutoff);
      if (ReplayError e = runner.open(); !e.ok()) {
        open_errors[w] = e.message;
        cutoff.store(0);
      } else {
        for (std::size_t k = next_segment++; k < segments.size(); k = next_segment++) {
          runner.run(segments[k], results[k]);
        }
      }
      std::lock_guard lock(mu);
      --running;
      cv.notify_all();
    });
  }
  {
    // A line at once (even when the workers are already done: a short
    // recording still shows one), then four a second.
    std::unique_lock lock(mu);
    do {
      if (progress) {
        lock.unlock();
        progress(ticks_done.load(), ticks_total,
                 std::chrono::duration<double>(SteadyClock::now() - began).count(), jobs);
        lock.lock();
      }
      cv.wait_for(lock, std::chrono::milliseconds(250), [&] { return running == 0; });
    } while (running > 0);
  }
  for (std::thread& t : workers) t.join();
  for (const std::string& e : open_errors) {
    if (!e.empty()) return e;
  }
  return {};
}

// The verdict from the segments' results: the earliest event of any segment
// (the first divergence is the earliest step whichever job found it), else
// the totals of a clean run.
void merge_results(const std::vector<SegmentResult>& results, VerifyReport& report) {
  const Event* earliest = nullptr;
  for (const SegmentResult& r : results) {
    if (r.event && (earliest == nullptr || r.event->before(*earliest))) earliest = &*r.event;
  }
  if (earliest != nullptr) {
    report.tick = earliest->tick;
    report.step = earliest->step;
    report.replayed_step = earliest->replayed_step;
    report.recorded_digest = earliest->recorded_digest;
    report.replayed_digest = earliest->replayed_digest;
    switch (earliest->kind) {
      case Event::Kind::Error:
        report.verdict = VerifyVerdict::Error;
        report.error = earliest->message;
        break;
      case Event::Kind::Keyframe:
        report.verdict = VerifyVerdict::Diverged;
        report.kind = DivergenceKind::Keyframe;
        break;
      case Event::Kind::Tick:
        report.verdict = VerifyVerdict::Diverged;
        report.kind = DivergenceKind::Tick;
        break;
      case Event::Kind::Invariant:
        report.verdict = VerifyVerdict::InvariantBroken;
        report.invariant = earliest->message;
        break;
    }
    return;
  }
  for (const SegmentResult& r : results) {
    assert(r.finished);
    if (r.ticks == 0) continue;
    if (report.ticks == 0) report.step_first = r.step_first;
    report.step_last = r.step_last;
    report.ticks += r.ticks;
    report.sim_us += r.sim_us;
  }
}

}  // namespace

VerifyReport verify_recording(const ReplayOptions& options, const VerifyProgress& progress) {
  VerifyReport report;
  const auto fail = [&](std::string message) {
    report.verdict = VerifyVerdict::Error;
    report.error = std::move(message);
    return report;
  };
  std::vector<Segment> segments;
  {
    std::unique_ptr<Replayer> rep;  // closed before the workers open their own
    if (ReplayError e = Replayer::open(options.file, rep); !e.ok()) return fail(e.message);
    std::uint64_t first = 0, last = 0;
    if (std::string why = tick_range(options, *rep, first, last); !why.empty())
      return fail(std::move(why));
    const std::uint32_t jobs_wanted =
        options.jobs != 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
    segments = plan_segments(*rep, first, last, jobs_wanted);
    report.jobs = static_cast<std::uint32_t>(std::min<std::size_t>(jobs_wanted, segments.size()));
    report.ticks_total = last - segments.front().first + 1;
  }
  report.segments = static_cast<std::uint32_t>(segments.size());
  const auto began = SteadyClock::now();
  std::vector<SegmentResult> results;
  std::string open_error =
      run_segments(options, segments, report.jobs, report.ticks_total, progress, results);
  report.seconds = std::chrono::duration<double>(SteadyClock::now() - began).count();
  if (!open_error.empty()) return fail(std::move(open_error));
  merge_results(results, report);
  return report;
}

int run_verify(const ReplayOptions& options, std::FILE* out, std::FILE* err) {
  const bool show_progress =
      options.progress == ProgressMode::Always ||
      (options.progress == ProgressMode::Auto && ::isatty(::fileno(err)) == 1);
  bool drew = false;
  VerifyProgress progress;
  if (show_progress) {
    progress = [&](std::uint64_t done, std::uint64_t total, double seconds, std::uint32_t jobs) {
      std::fprintf(err, "\r%s\033[K", format_progress(done, total, seconds, jobs).c_str());
      std::fflush(err);
      drew = true;
    };
  }
  const VerifyReport r = verify_recording(options, progress);
  if (drew) {
    std::fputs("\r\033[K", err);
    std::fflush(err);
  }
  const double real_s = static_cast<double>(r.sim_us) * 1e-6;
  const double factor = real_s / (r.seconds > 1e-9 ? r.seconds : 1e-9);

  if (r.verdict == VerifyVerdict::Error) std::fprintf(err, "bustle-replay: %s\n", r.error.c_str());
  if (options.json) {
    nlohmann::ordered_json j;
    j["file"] = options.file;
    j["verdict"] = r.verdict == VerifyVerdict::Ok                ? "ok"
                   : r.verdict == VerifyVerdict::Diverged        ? "diverged"
                   : r.verdict == VerifyVerdict::InvariantBroken ? "invariant_broken"
                                                                 : "error";
    if (r.verdict == VerifyVerdict::Diverged) {
      j["first_divergence"] = {{"what", r.kind == DivergenceKind::Keyframe ? "keyframe" : "tick"},
                               {"tick", r.tick},
                               {"step", r.step},
                               {"replayed_step", r.replayed_step},
                               {"expected_digest", hex16(r.recorded_digest)},
                               {"actual_digest", hex16(r.replayed_digest)}};
    } else if (r.verdict == VerifyVerdict::InvariantBroken) {
      j["invariant"] = {{"tick", r.tick}, {"step", r.step}, {"broken", r.invariant}};
    } else if (r.verdict == VerifyVerdict::Error) {
      j["error"] = r.error;
    }
    if (r.verdict == VerifyVerdict::Ok) {
      j["ticks"] = r.ticks;
      j["steps"] = {r.step_first, r.step_last};
      j["real_time_factor"] = factor;
    }
    j["ticks_in_range"] = r.ticks_total;
    j["seconds"] = r.seconds;
    j["jobs"] = r.jobs;
    j["segments"] = r.segments;
    std::fprintf(out, "%s\n", j.dump().c_str());
    std::fflush(out);
  }
  switch (r.verdict) {
    case VerifyVerdict::Error:
      return 2;
    case VerifyVerdict::Diverged:
      if (!options.json) {
        std::fprintf(out,
                     "DIVERGED at tick %" PRIu64 " step %" PRIu64 ": %srecorded %016" PRIx64
                     " replayed %016" PRIx64 "\n",
                     r.tick, r.step, r.kind == DivergenceKind::Keyframe ? "keyframe " : "",
                     r.recorded_digest, r.replayed_digest);
        std::fflush(out);
      }
      if (r.kind == DivergenceKind::Tick && r.step != r.replayed_step) {
        std::fprintf(err,
                     "bustle-replay: tick %" PRIu64 " recorded step %" PRIu64
                     " but replay reached step %" PRIu64 "\n",
                     r.tick, r.step, r.replayed_step);
      }
      return 1;
    case VerifyVerdict::InvariantBroken:
      if (!options.json) {
        std::fprintf(out, "INVARIANT BROKEN at tick %" PRIu64 " step %" PRIu64 ": %s\n", r.tick,
                     r.step, r.invariant.c_str());
        std::fflush(out);
      }
      return 3;
    case VerifyVerdict::Ok:
      break;
  }
  if (!options.json) {
    std::fprintf(out,
                 "OK verified %" PRIu64 " ticks (steps %" PRIu64 "..%" PRIu64
                 ") in %.3f s, %.1fx real time (%u job%s, %u segment%s)\n",
                 r.ticks, r.step_first, r.step_last, r.seconds, factor, r.jobs,
                 r.jobs == 1 ? "" : "s", r.segments, r.segments == 1 ? "" : "s");
    std::fflush(out);
  }
  return 0;
}

}  // namespace bustle::replay
