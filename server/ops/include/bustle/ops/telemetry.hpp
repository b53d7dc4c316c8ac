// What the server publishes for operations (metrics, health, readiness),
// written by the sim, network and persistence threads and read by the
// metrics endpoint's threads, never with a lock inside the step:
//
//   - per step, the sim thread adds the step's wall time to a histogram of
//     relaxed atomic bucket counts and stores a heartbeat (two clock reads
//     and a handful of relaxed atomic adds per step);
//   - at most every `sample_interval` (1 s) of wall time, between steps, the
//     sim thread copies the world's counts (entities per axis, spawn
//     pipeline, zones, garages, policies, ...) into a SimSample with only
//     numbers in it (no allocation after the first sample) and publishes it
//     with try_lock: if a scrape is copying the previous sample at that
//     moment, the sim thread skips publishing and tries again next time,
//     so it never waits;
//   - the endpoint reads the last sample (a copy under that mutex) and the
//     atomics, and turns them into Prometheus families.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bustle/core/world.hpp"

namespace bustle::ops {

// A histogram with fixed upper bounds whose buckets are relaxed atomics:
// observe() never locks, and a reader gets each count as of some moment
// (a scrape may see a sample in a bucket before it sees it in the count; the
// reader makes the result consistent, see snapshot()).
class AtomicHistogram {
 public:
  explicit AtomicHistogram(std::vector<double> upper_bounds);

  void observe(double value) noexcept;

  struct Snapshot {
    std::vector<double> upper_bounds;       // without +Inf
    std::vector<std::uint64_t> cumulative;  // one per bound, then +Inf (= count)
    std::uint64_t count = 0;
    double sum = 0.0;
  };
  Snapshot snapshot() const;
  // The bucket upper bound below which a fraction q of the samples lie
  // (Prometheus's histogram_quantile without interpolation); 0 when empty.
  static double quantile(const Snapshot& s, double q);

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // per bucket (not cumulative), +Inf last
  std::atomic<std::uint64_t> sum_nanos_{0};  // sum of observed values x 1e9 (values >= 0)
};

// Step wall time buckets: 50 us .. 1 s.
std::vector<double> step_seconds_buckets();
// Snapshot commit and restore buckets: 1 ms .. 120 s.
std::vector<double> job_seconds_buckets();

inline constexpr std::size_t kEntityKinds = 2;  // core::EntityKind
inline constexpr std::size_t kLifecycles = 4;   // Requested, Active, Dormant, Retiring
inline constexpr std::size_t kTiersOrNone = 4;  // Full, Simulated, Coarse, none
inline constexpr std::size_t kHints = 4;        // core::RepresentationHint (None last)

struct GarageSample {
  std::uint32_t queued = 0;
  std::uint32_t dispatched = 0;  // vehicles out of this garage now
  std::uint32_t managed = 0;
  std::uint32_t capacity = 0;
  std::array<std::uint64_t, core::kDispatchGateCount>
      gate_steps{};  // steps that ended at each gate
  std::uint64_t rejected_invalid = 0;
  std::uint64_t rejected_duplicate = 0;
  std::uint64_t rejected_queue_full = 0;
  std::uint64_t canceled = 0;
  std::uint64_t turnarounds = 0;
};

// The world's counts at one step boundary: numbers only.
struct SimSample {
  bool valid = false;
  std::uint64_t step = 0;
  std::uint64_t world_epoch = 0;  // +1 per restore or load applied
  double sim_time_seconds = 0.0;
  std::uint32_t step_us = 0;
  bool paused = false;
  std::uint8_t clock_mode = 0;  // net::ClockMode
  // entities[kind][lifecycle][tier][hint]: the server's representation hint
  // (derived from the tier, as QueryEntity reports it).
  std::array<std::uint32_t, kEntityKinds * kLifecycles * kTiersOrNone * kHints> entities{};
  std::uint32_t entity_capacity = 0;
  std::array<std::uint32_t, core::kSpawnStateCount> spawn_live{};
  std::array<std::uint64_t, core::kSpawnStateCount>
      spawn_entered{};  // entries into each state, this world
  std::uint64_t spawn_requested = 0;
  std::uint32_t spawn_deferred_by_cap = 0;                           // last step
  std::uint32_t spawn_deferred_by_capacity = 0;                      // last step
  std::uint32_t spawn_deferred_by_zone = 0;                          // last step
  std::array<std::uint64_t, core::kDespawnReasonCount> despawned{};  // this world
  std::uint64_t spawned_total = 0;
  // Queued handles displaced (this world), and the representation budgets of
  // spawned handles (server/app quality.hpp).
  std::uint64_t spawn_displaced_total = 0;
  std::uint32_t attached_in_use = 0;
  std::uint32_t attached_limit = 0;
  std::uint32_t unattached_in_use = 0;
  std::uint32_t unattached_limit = 0;
  std::uint32_t zones = 0;
  std::uint32_t zone_members_active = 0;
  std::uint32_t zone_members_dormant = 0;
  std::uint32_t zone_deferred_by_quota = 0;      // last interval, summed over zones
  std::uint32_t zone_deferred_by_migration = 0;  // last interval
  std::uint32_t zone_rejected_by_capacity = 0;   // last interval
  std::uint32_t zone_handoffs_pending = 0;
  std::vector<GarageSample> garages;  // in scenario order (SimTelemetry::garage_ids)
  std::array<std::uint32_t, core::kControlPolicyCount> vehicle_policies{};
  std::uint32_t tier_transitions_deferred = 0;  // last step, vehicles + pedestrians
  // The last published frame: entities it posed (0 while nobody is
  // subscribed) and the interest discs it was built for (0: the whole city).
  std::uint32_t frame_entities = 0;
  std::uint32_t frame_coverage_discs = 0;
  std::uint64_t world_commands_accepted = 0;  // this world
  std::uint64_t world_commands_rejected = 0;
  std::uint64_t autosaves_skipped = 0;
  std::uint32_t recording = 0;  // 0 off, 1 recording, 2 failed
  std::uint64_t recorded_ticks = 0;
};

// Fills `out` from `world` (sim thread, between steps). Reuses out's buffers.
void sample_world(const core::World& world, SimSample& out);

// Step wall times over a sliding window of the last executed steps, for
// Stats (bustle status / watch): exact nearest-rank quantiles of the window
// and a histogram of it with step_seconds_buckets() as bounds.
struct StepTimingSummary {
  std::uint32_t window = 0;  // steps in the window (<= the window asked for)
  double p50_us = 0.0;
  double p99_us = 0.0;
  double max_us = 0.0;
  std::vector<double> bucket_le_us;          // upper bounds, microseconds (+Inf implied)
  std::vector<std::uint32_t> bucket_counts;  // per bucket, not cumulative; +Inf last
  std::uint64_t steps_total = 0;             // executed steps measured since start
};

class SimTelemetry {
 public:
  explicit SimTelemetry(std::vector<std::string> garage_ids);

  // Sim thread. One executed step that took `wall` (frame build and publish
  // included); `late` when it ran as catch-up after the clock fell behind.
  void on_step(std::chrono::steady_clock::duration wall, bool late) noexcept;
  void on_dropped(std::uint64_t steps) noexcept {
    dropped_steps_.fetch_add(steps, std::memory_order_relaxed);
  }
  // Sim thread: it is alive and within its clock (idle waits count).
  void heartbeat(std::chrono::steady_clock::time_point now) noexcept;
  // Sim thread: whether a new sample is due; the caller then fills and
  // publishes one.
  bool sample_due(std::chrono::steady_clock::time_point now) const noexcept {
    return now >= next_sample_;
  }
  SimSample& sample_buffer() { return staging_; }
  void publish_sample(std::chrono::steady_clock::time_point now);

  // Any thread.
  SimSample last_sample() const;
  AtomicHistogram::Snapshot step_seconds() const { return step_seconds_.snapshot(); }
  // Exact wall times of the last kRecentSteps steps (seconds, unordered):
  // what the recent-steps summary and the bench's p50/p99 come from.
  std::vector<double> recent_step_seconds() const;
  static constexpr std::size_t kRecentSteps = 8192;
  // The last min(window, steps(), kRecentSteps) step times, summarised. Call
  // it on the sim thread (between steps) for a window that no step overwrites
  // while it is read. [Limit: window >= 1]
  StepTimingSummary step_timing(std::size_t window) const;
  static constexpr std::size_t kStepTimingWindow = 1024;  // what Stats reports
  std::uint64_t steps() const { return steps_.load(std::memory_order_relaxed); }
  std::uint64_t late_steps() const { return late_steps_.load(std::memory_order_relaxed); }
  std::uint64_t dropped_steps() const { return dropped_steps_.load(std::memory_order_relaxed); }
  // Seconds since the sim thread last stepped or woke idle (0 before it ran).
  double heartbeat_age_seconds(std::chrono::steady_clock::time_point now) const;
  const std::vector<std::string>& garage_ids() const { return garage_ids_; }

  static constexpr std::chrono::milliseconds kSampleInterval{1000};

 private:
  std::vector<std::string> garage_ids_;
  AtomicHistogram step_seconds_;
  std::atomic<std::uint64_t> steps_{0};
  std::unique_ptr<std::atomic<std::uint32_t>[]>
      recent_ns_;  // ring of kRecentSteps, indexed by steps_
  std::atomic<std::uint64_t> late_steps_{0};
  std::atomic<std::uint64_t> dropped_steps_{0};
  std::atomic<std::int64_t> heartbeat_ns_{0};  // steady_clock, since its epoch
  std::chrono::steady_clock::time_point next_sample_{};
  SimSample staging_;  // sim thread only
  mutable std::mutex sample_mu_;
  SimSample published_;  // guarded by sample_mu_
};

// Snapshot jobs (persistence thread and sim thread, via the worker's
// callback): state changes and durations.
inline constexpr std::size_t kJobKinds = 5;   // persist::JobKind
inline constexpr std::size_t kJobStates = 9;  // persist::JobState

class JobTelemetry {
 public:
  JobTelemetry();
  // A job entered `state`; `terminal` with its time since submission.
  void on_update(std::size_t kind, std::size_t state, bool terminal, bool failed, bool is_restore,
                 double seconds_since_submit) noexcept;

  std::uint64_t transitions(std::size_t kind, std::size_t state) const {
    return transitions_[kind * kJobStates + state].load(std::memory_order_relaxed);
  }
  AtomicHistogram::Snapshot commit_seconds() const { return commit_seconds_.snapshot(); }
  AtomicHistogram::Snapshot restore_seconds() const { return restore_seconds_.snapshot(); }

 private:
  std::array<std::atomic<std::uint64_t>, kJobKinds * kJobStates> transitions_{};
  AtomicHistogram commit_seconds_;
  AtomicHistogram restore_seconds_;
};

}  // namespace bustle::ops
