// Telemetry written by the server's threads and read by the metrics endpoint
// (telemetry.hpp): the lock-free step-time histogram, the heartbeat, and the
// per-second SimSample the sim thread publishes without ever waiting.
#include "bustle/ops/telemetry.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace bustle::ops {

AtomicHistogram::AtomicHistogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)),
      counts_(new std::atomic<std::uint64_t>[bounds_.size() + 1]) {
  std::sort(bounds_.begin(), bounds_.end());
  for (std::size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void AtomicHistogram::observe(double value) noexcept {
  const auto it =
      std::lower_bound(bounds_.begin(), bounds_.end(), value);  // first bound >= value ("le")
  counts_[static_cast<std::size_t>(it - bounds_.begin())].fetch_add(1, std::memory_order_relaxed);
  const double nanos = std::max(0.0, value) * 1e9;
  sum_nanos_.fetch_add(static_cast<std::uint64_t>(std::llround(nanos)), std::memory_order_relaxed);
}

AtomicHistogram::Snapshot AtomicHistogram::snapshot() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  s.cumulative.resize(bounds_.size() + 1);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = running;
  }
  // The count is the sum of the buckets read, so the exposition is always
  // consistent (+Inf == count, buckets non-decreasing).
  s.count = running;
  s.sum = static_cast<double>(sum_nanos_.load(std::memory_order_relaxed)) / 1e9;
  return s;
}

double AtomicHistogram::quantile(const Snapshot& s, double q) {
  if (s.count == 0) return 0.0;
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(s.count)));
  for (std::size_t i = 0; i < s.upper_bounds.size(); ++i) {
    if (s.cumulative[i] >= rank) return s.upper_bounds[i];
  }
  return s.upper_bounds.empty() ? 0.0 : s.upper_bounds.back();
}

std::vector<double> step_seconds_buckets() {
  return {50e-6, 100e-6, 250e-6, 500e-6, 1e-3,   2.5e-3, 5e-3,
          10e-3, 25e-3,  50e-3,  100e-3, 250e-3, 500e-3, 1.0};
}

std::vector<double> job_seconds_buckets() {
  return {1e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
          1.0,  2.5,  5.0,   10.0,  30.0,  60.0,   120.0};
}

namespace {
std::size_t entity_slot(core::EntityKind kind, std::size_t lifecycle, std::size_t tier,
                        core::RepresentationHint hint) {
  return ((static_cast<std::size_t>(kind) * kLifecycles + lifecycle) * kTiersOrNone + tier) *
             kHints +
         static_cast<std::size_t>(hint);
}
// Lifecycle label index in SimSample::entities (core::LifecycleState without Gone).
constexpr std::size_t kRequested = 0, kActive = 1, kDormant = 2, kRetiring = 3;
constexpr std::size_t kNoTier = 3;

core::RepresentationHint hint_of(core::SimTier tier) {
  switch (tier) {
    case core::SimTier::Full:
      return core::RepresentationHint::Actor;
    case core::SimTier::Simulated:
      return core::RepresentationHint::Instanced;
    case core::SimTier::Coarse:
      return core::RepresentationHint::Marker;
  }
  return core::RepresentationHint::None;
}
}  // namespace

void sample_world(const core::World& w, SimSample& s) {
  s.valid = true;
  s.step = w.step_index();
  s.sim_time_seconds = static_cast<double>(w.sim_time_us()) / 1e6;
  s.step_us = w.step_us();
  s.entities.fill(0);
  const core::PedestrianStore& peds = w.pedestrians();
  for (std::uint32_t i = 0; i < peds.size(); ++i) {
    const core::SimTier t = peds.sim_tier[i];
    ++s.entities[entity_slot(core::EntityKind::Pedestrian, kActive,
                             std::min(core::tier_index(t), kNoTier), hint_of(t))];
  }
  const core::VehicleStore& vs = w.vehicles().store();
  for (std::uint32_t i = 0; i < vs.size(); ++i) {
    const core::SimTier t = vs.sim_tier[i];
    ++s.entities[entity_slot(core::EntityKind::Vehicle, kActive,
                             std::min(core::tier_index(t), kNoTier), hint_of(t))];
  }
  // Orphans fade as Coarse markers (World::describe); vehicles never retire.
  s.entities[entity_slot(
      core::EntityKind::Pedestrian, kRetiring, static_cast<std::size_t>(core::SimTier::Coarse),
      core::RepresentationHint::Marker)] = static_cast<std::uint32_t>(w.orphans().size());
  const core::PopulationSystem& pop = w.population();
  const auto residents = static_cast<std::uint32_t>(pop.residents().size());
  s.entities[entity_slot(core::EntityKind::Pedestrian, kDormant, kNoTier,
                         core::RepresentationHint::None)] =
      residents > pop.active_count() ? residents - pop.active_count() : 0;
  s.spawn_live.fill(0);
  for (const core::SpawnHandleState& h : w.spawn_pipeline().live)
    ++s.spawn_live[static_cast<std::size_t>(h.state)];
  s.entities[entity_slot(core::EntityKind::Pedestrian, kRequested, kNoTier,
                         core::RepresentationHint::None)] =
      s.spawn_live[static_cast<std::size_t>(core::SpawnState::IdentityCreated)];
  s.entity_capacity = w.registry().capacity();

  const core::SpawnCounters& sc = w.spawn_pipeline().counters;
  std::copy(std::begin(sc.per_state_total), std::end(sc.per_state_total), s.spawn_entered.begin());
  s.spawn_requested = sc.requested;
  s.spawn_deferred_by_cap = sc.deferred_by_cap;
  s.spawn_deferred_by_capacity = sc.deferred_by_capacity;
  s.spawn_deferred_by_zone = sc.deferred_by_zone;
  s.spawn_displaced_total = sc.displaced_total;
  const core::WorldCounters& wc = w.counters();
  std::copy(std::begin(wc.despawned_by_reason), std::end(wc.despawned_by_reason),
            s.despawned.begin());
  s.spawned_total = wc.spawned_total;
  s.world_commands_accepted = wc.commands_accepted;
  s.world_commands_rejected = wc.commands_rejected;

  s.zones = static_cast<std::uint32_t>(pop.zones().size());
  s.zone_members_active = s.zone_members_dormant = 0;
  s.zone_deferred_by_quota = s.zone_deferred_by_migration = s.zone_rejected_by_capacity = 0;
  for (const core::ZoneStatus& z : pop.zones()) {
    s.zone_members_active += z.active;
    s.zone_members_dormant += z.dormant;
    s.zone_deferred_by_quota += z.deferred_by_quota;
    s.zone_deferred_by_migration += z.deferred_by_migration;
    s.zone_rejected_by_capacity += z.rejected_by_capacity;
  }
  s.zone_handoffs_pending = static_cast<std::uint32_t>(pop.handoffs().size());

  const core::VehicleSystem& veh = w.vehicles();
  s.garages.resize(veh.garages().size());
  for (std::uint32_t g = 0; g < veh.garages().size(); ++g) {
    const core::GarageState& gs = veh.garages()[g];
    GarageSample& out = s.garages[g];
    out.queued = static_cast<std::uint32_t>(gs.queue.size());
    out.dispatched = static_cast<std::uint32_t>(gs.dispatched.size());
    out.managed = veh.managed(g);
    out.capacity = w.scenario().garages[g].capacity;
    out.gate_steps.fill(0);
    for (std::size_t k = 0; k < gs.gate_steps.size() && k < out.gate_steps.size(); ++k)
      out.gate_steps[k] = gs.gate_steps[k];
    out.rejected_invalid = gs.rejected_invalid;
    out.rejected_duplicate = gs.rejected_duplicate;
    out.rejected_queue_full = gs.rejected_queue_full;
    out.canceled = gs.canceled;
    out.turnarounds = gs.turnarounds;
  }
  std::copy(std::begin(veh.last_step().per_policy), std::end(veh.last_step().per_policy),
            s.vehicle_policies.begin());
  s.tier_transitions_deferred = veh.last_tiers().deferred + w.pedestrian_tiers().deferred;
}

SimTelemetry::SimTelemetry(std::vector<std::string> garage_ids)
    : garage_ids_(std::move(garage_ids)),
      step_seconds_(step_seconds_buckets()),
      recent_ns_(new std::atomic<std::uint32_t>[kRecentSteps]) {
  for (std::size_t i = 0; i < kRecentSteps; ++i) recent_ns_[i].store(0, std::memory_order_relaxed);
}

void SimTelemetry::on_step(std::chrono::steady_clock::duration wall, bool late) noexcept {
  step_seconds_.observe(std::chrono::duration<double>(wall).count());
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count();
  const std::uint64_t n = steps_.fetch_add(1, std::memory_order_relaxed);
  recent_ns_[n % kRecentSteps].store(
      static_cast<std::uint32_t>(std::clamp<std::int64_t>(ns, 0, UINT32_MAX)),
      std::memory_order_relaxed);
  if (late) late_steps_.fetch_add(1, std::memory_order_relaxed);
}

void SimTelemetry::heartbeat(std::chrono::steady_clock::time_point now) noexcept {
  heartbeat_ns_.store(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count(),
      std::memory_order_relaxed);
}

void SimTelemetry::publish_sample(std::chrono::steady_clock::time_point now) {
  next_sample_ = now + kSampleInterval;
  std::unique_lock lock(sample_mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    next_sample_ = now;  // a scrape is copying the last one: try again on the next wake
    return;
  }
  published_ = staging_;  // same shapes after the first sample: no allocation
}

std::vector<double> SimTelemetry::recent_step_seconds() const {
  const std::uint64_t n =
      std::min<std::uint64_t>(steps_.load(std::memory_order_relaxed), kRecentSteps);
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = recent_ns_[i].load(std::memory_order_relaxed) / 1e9;
  return out;
}

StepTimingSummary SimTelemetry::step_timing(std::size_t window) const {
  assert(window >= 1);
  StepTimingSummary out;
  out.steps_total = steps_.load(std::memory_order_relaxed);
  const std::uint64_t n = std::min<std::uint64_t>({out.steps_total, kRecentSteps, window});
  std::vector<std::uint32_t> ns(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    ns[i] = recent_ns_[(out.steps_total - 1 - i) % kRecentSteps].load(
        std::memory_order_relaxed);  // newest first
  }
  const std::vector<double> bounds = step_seconds_buckets();
  out.window = static_cast<std::uint32_t>(n);
  out.bucket_le_us.reserve(bounds.size());
  for (const double b : bounds) out.bucket_le_us.push_back(b * 1e6);
  out.bucket_counts.assign(bounds.size() + 1, 0);
  for (const std::uint32_t v : ns) {
    const double seconds = v / 1e9;
    const auto it =
        std::lower_bound(bounds.begin(), bounds.end(), seconds);  // "le", as AtomicHistogram
    ++out.bucket_counts[static_cast<std::size_t>(it - bounds.begin())];
  }
  if (n == 0) return out;
  std::sort(ns.begin(), ns.end());
  const auto nearest_rank = [&](double q) {
    const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n)));
    return ns[std::clamp<std::uint64_t>(rank, 1, n) - 1] / 1e3;
  };
  out.p50_us = nearest_rank(0.50);
  out.p99_us = nearest_rank(0.99);
  out.max_us = ns.back() / 1e3;
  assert(out.p50_us <= out.p99_us);
  assert(out.p99_us <= out.max_us);
  return out;
}

SimSample SimTelemetry::last_sample() const {
  std::lock_guard lock(sample_mu_);
  return published_;
}

double SimTelemetry::heartbeat_age_seconds(std::chrono::steady_clock::time_point now) const {
  const std::int64_t beat = heartbeat_ns_.load(std::memory_order_relaxed);
  if (beat == 0) return 0.0;
  const std::int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  return static_cast<double>(std::max<std::int64_t>(0, now_ns - beat)) / 1e9;
}

JobTelemetry::JobTelemetry()
    : commit_seconds_(job_seconds_buckets()), restore_seconds_(job_seconds_buckets()) {}

void JobTelemetry::on_update(std::size_t kind, std::size_t state, bool terminal, bool failed,
                             bool is_restore, double seconds_since_submit) noexcept {
  if (kind < kJobKinds && state < kJobStates)
    transitions_[kind * kJobStates + state].fetch_add(1, std::memory_order_relaxed);
  if (!terminal || failed) return;
  (is_restore ? restore_seconds_ : commit_seconds_).observe(seconds_since_submit);
}

}  // namespace bustle::ops
