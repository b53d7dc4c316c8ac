// Interpolation of remote entities between the samples the stream gives.
//
// Each slot keeps a ring of the latest samples keyed by server time (µs of
// simulation time, Delta.sim_time_us). A renderer samples the ring at the
// render time = estimated server time - interpolation delay, so it normally
// draws between two samples it already holds and never snaps to the newest
// one as it lands. The rules (defaults from the representation contract,
// all in InterpolationConfig):
//   1. render time before the oldest sample: the oldest sample is held;
//   2. render time inside the held span: the two bracketing samples are found
//      by binary search and blended (alpha in [0, 1]);
//   3. past the newest sample: extrapolated from the last two samples for at
//      most extrapolation_max_us (0.2 s), then held at the value extrapolated
//      to that cap;
//   4. the extrapolation step is at least the average gap of the last
//      step_gap_count (4) samples, or two_sample_step_us (50 ms) when only two
//      are held, so two samples that arrive almost together after a sender
//      hitch extrapolate at the normal pace: alpha = 1 + dt / step with
//      step = max(last gap, that average);
//   5. rotation (heading) follows the shortest arc and its extrapolation alpha
//      is clamped to rotation_alpha_max (1.2): at most a fifth of the last
//      step's turn beyond the newest sample; position follows alpha in full;
//   6. one sample: that sample; none: the caller's fallback.
// A ring is reset when its slot is deactivated or reused, so a reused slot
// never starts from a departed entity's history.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <vector>

namespace bustle::client {

struct InterpolationConfig {
  std::uint32_t ring_capacity = 32;  // samples per slot [Limit: >= 2]
  // Render time behind the estimated server time; RepresentationLayer uses at
  // least 1.5 of the server's steps (Welcome.step_us), so a Delta a little
  // late is still interpolated rather than extrapolated.
  std::int64_t interpolation_delay_us = 100'000;
  std::int64_t extrapolation_max_us = 200'000;  // beyond the newest sample, then hold
  std::uint32_t step_gap_count = 4;             // gaps averaged for the step [Limit: >= 1]
  std::int64_t two_sample_step_us = 50'000;     // the step's floor with only two samples
  double rotation_alpha_max = 1.2;              // heading extrapolation clamp [Limit: >= 1]
};

// Where an entity is drawn (metres, radians; heading 0 = +x, counter-clockwise).
struct RenderPose {
  double x_m = 0.0;
  double y_m = 0.0;
  double z_m = 0.0;
  double heading_rad = 0.0;
  friend bool operator==(const RenderPose&, const RenderPose&) = default;
};

// How a sample was obtained (rule numbers above).
enum class SampleMode : std::uint8_t {
  Empty,         // no sample: the fallback (rule 6)
  Single,        // one sample held (rule 6)
  HoldOldest,    // before the oldest sample (rule 1)
  Interpolated,  // between two samples, or exactly on one (rule 2)
  Extrapolated,  // past the newest, within the cap (rule 3)
  HeldAtCap,     // past the newest by more than the cap (rule 3)
};
const char* to_string(SampleMode mode);

template <class T>
struct Sampled {
  T value{};
  SampleMode mode = SampleMode::Empty;
};

enum class PushStatus : std::uint8_t {
  Stored,          // appended (the oldest dropped when the ring was full)
  ReplacedNewest,  // same server time as the newest: the newest was overwritten
  RejectedOlder,   // older than the newest: ignored (samples only go forward)
};

// A ring of timestamped samples of one field. `Lerp` is called as
// lerp(a, b, alpha) with alpha in [0, 1] when interpolating and alpha > 1
// when extrapolating (rule 3); it decides how each part follows alpha.
template <class T>
class SampleRing {
 public:
  // [Limit: capacity >= 2]
  explicit SampleRing(std::uint32_t capacity = 32) : entries_(capacity) { assert(capacity >= 2); }

  PushStatus push(std::int64_t server_time_us, const T& value) {
    if (count_ > 0) {
      Entry& newest = entries_[physical(count_ - 1)];
      if (server_time_us < newest.time_us) return PushStatus::RejectedOlder;
      if (server_time_us == newest.time_us) {
        newest.value = value;
        return PushStatus::ReplacedNewest;
      }
    }
    if (count_ < entries_.size()) {
      entries_[physical(count_)] = Entry{server_time_us, value};
      ++count_;
    } else {
      entries_[head_] = Entry{server_time_us, value};
      head_ = (head_ + 1) % static_cast<std::uint32_t>(entries_.size());
    }
    return PushStatus::Stored;
  }

  template <class Lerp>
  Sampled<T> sample(std::int64_t render_time_us, const InterpolationConfig& config, Lerp&& lerp,
                    const T& fallback = T{}) const {
    if (count_ == 0) return {fallback, SampleMode::Empty};
    if (count_ == 1) return {at(0).value, SampleMode::Single};
    const Entry& oldest = at(0);
    const Entry& newest = at(count_ - 1);
    if (render_time_us < oldest.time_us) return {oldest.value, SampleMode::HoldOldest};
    if (render_time_us <= newest.time_us) {
      // The first sample at or after the render time (binary search). A
      // render time one delay behind the newest sample usually falls in the
      // last gap: that bracket is tried first.
      std::uint32_t lo = 0;
      std::uint32_t hi = count_ - 1;
      if (at(count_ - 2).time_us < render_time_us) lo = hi;
      while (lo < hi) {
        const std::uint32_t mid = lo + (hi - lo) / 2;
        if (at(mid).time_us < render_time_us) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      const Entry& b = at(lo);
      if (b.time_us == render_time_us || lo == 0) return {b.value, SampleMode::Interpolated};
      const Entry& a = at(lo - 1);
      assert(a.time_us < render_time_us && render_time_us < b.time_us);
      const double alpha = static_cast<double>(render_time_us - a.time_us) /
                           static_cast<double>(b.time_us - a.time_us);
      return {lerp(a.value, b.value, alpha), SampleMode::Interpolated};
    }
    const Entry& previous = at(count_ - 2);
    const std::int64_t beyond_us = render_time_us - newest.time_us;
    const std::int64_t dt_us = std::min(beyond_us, config.extrapolation_max_us);
    const double alpha = 1.0 + static_cast<double>(dt_us) / static_cast<double>(step_us(config));
    return {lerp(previous.value, newest.value, alpha), beyond_us > config.extrapolation_max_us
                                                           ? SampleMode::HeldAtCap
                                                           : SampleMode::Extrapolated};
  }

  // The extrapolation step (rule 4); 0 with fewer than two samples.
  std::int64_t step_us(const InterpolationConfig& config) const {
    if (count_ < 2) return 0;
    const std::int64_t last_gap = at(count_ - 1).time_us - at(count_ - 2).time_us;
    std::int64_t reference = config.two_sample_step_us;
    if (count_ > 2) {
      const std::uint32_t gaps =
          std::min(std::max<std::uint32_t>(config.step_gap_count, 1), count_ - 1);
      reference = (at(count_ - 1).time_us - at(count_ - 1 - gaps).time_us) / gaps;
    }
    return std::max<std::int64_t>(std::max(last_gap, reference), 1);
  }

  void reset() {
    head_ = 0;
    count_ = 0;
  }
  std::uint32_t size() const { return count_; }
  std::uint32_t capacity() const { return static_cast<std::uint32_t>(entries_.size()); }
  bool empty() const { return count_ == 0; }
  // [Limit: !empty()]
  std::int64_t oldest_time_us() const { return at(0).time_us; }
  std::int64_t newest_time_us() const { return at(count_ - 1).time_us; }
  const T& newest() const { return at(count_ - 1).value; }

 private:
  struct Entry {
    std::int64_t time_us = 0;
    T value{};
  };
  // Logical index (0 = oldest) to the physical index in entries_.
  std::uint32_t physical(std::uint32_t logical) const {
    return (head_ + logical) % static_cast<std::uint32_t>(entries_.size());
  }
  const Entry& at(std::uint32_t logical) const {
    assert(logical < count_);
    return entries_[physical(logical)];
  }

  std::vector<Entry> entries_;
  std::uint32_t head_ = 0;   // physical index of the oldest sample
  std::uint32_t count_ = 0;  // samples held
};

// Shortest-arc difference b - a, in (-pi, pi].
double heading_delta_rad(double a_rad, double b_rad);
// a wrapped into (-pi, pi].
double wrap_heading_rad(double a_rad);

// The pose blend of rules 2, 3 and 5: position linear in alpha, heading
// along the shortest arc with alpha clamped to [0, rotation_alpha_max].
RenderPose lerp_pose(const RenderPose& a, const RenderPose& b, double alpha,
                     double rotation_alpha_max);

// The ring of one slot's poses.
class PoseTrack {
 public:
  explicit PoseTrack(const InterpolationConfig& config = {}) : ring_(config.ring_capacity) {}
  PushStatus push(std::int64_t server_time_us, const RenderPose& pose) {
    return ring_.push(server_time_us, pose);
  }
  Sampled<RenderPose> sample(std::int64_t render_time_us, const InterpolationConfig& config) const;
  void reset() { ring_.reset(); }
  const SampleRing<RenderPose>& ring() const { return ring_; }

 private:
  SampleRing<RenderPose> ring_;
};

}  // namespace bustle::client
