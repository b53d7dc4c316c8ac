// Lane-relative, dead-reckoned motion (protocol v2, server.fbs Delta).
//
// Server and clients share these definitions so that both compute exactly the
// same prediction: an entity's anchor (lane, distance along it in mm, speed in
// mm/s, anchor step) places it at any later step with integer arithmetic, and
// its pose follows from the lane polyline. The server sends a record only
// when the client's prediction would leave the tolerance, so an entity at
// constant speed costs no bytes. Transport- and engine-agnostic.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace bustle::proto {

struct MotionAnchor {
  std::uint32_t lane = 0;
  std::uint32_t s_mm = 0;
  std::uint32_t speed_mmps = 0;
  std::uint64_t step = 0;  // the step the anchor was set at
  friend bool operator==(const MotionAnchor&, const MotionAnchor&) = default;
};

// Operand bounds of the prediction (so its product fits 64 bits); the server
// never sends larger values.
inline constexpr std::uint64_t kMotionSpeedMmpsMax = 1u << 20;  // ~1 km/s
inline constexpr std::uint64_t kMotionGapStepsMax = 1u << 22;
inline constexpr std::uint64_t kMotionStepUsMax = 1u << 20;  // steps of at most ~1.05 s

// The predicted distance along the anchor's lane at `step` (>= anchor.step;
// an earlier step gives the anchor itself):
//   min(lane_length_mm, s_mm + speed x gap x step_us / 1e6)
// with speed = min(speed_mmps, 2^20), gap = min(step - anchor.step, 2^22),
// step_us = min(step_us, 2^20), in unsigned 64-bit arithmetic, division
// rounding down.
// Inline (as are to_mm and to_mmps): the server calls them for every entity
// of every frame it builds.
inline std::uint32_t predict_s_mm(const MotionAnchor& anchor, std::uint64_t step,
                                  std::uint32_t step_us, std::uint32_t lane_length_mm) {
  if (step <= anchor.step || anchor.speed_mmps == 0)
    return anchor.s_mm < lane_length_mm ? anchor.s_mm : lane_length_mm;
  // Bounded operands keep the product in 64 bits: speed <= 2^20 mm/s (over a
  // km/s), gap <= 2^22 steps, step_us <= 2^20 (a step of at most ~1 s).
  const std::uint64_t gap =
      step - anchor.step < kMotionGapStepsMax ? step - anchor.step : kMotionGapStepsMax;
  const std::uint64_t speed =
      anchor.speed_mmps < kMotionSpeedMmpsMax ? anchor.speed_mmps : kMotionSpeedMmpsMax;
  const std::uint64_t us = step_us < kMotionStepUsMax ? step_us : kMotionStepUsMax;
  const std::uint64_t advance_mm = speed * gap * us / 1'000'000u;
  const std::uint64_t s = static_cast<std::uint64_t>(anchor.s_mm) + advance_mm;
  return static_cast<std::uint32_t>(s < lane_length_mm ? s : lane_length_mm);
}

// Metres <-> the wire's millimetres: rounded half away from zero (as
// std::round), clamped to [0, 2^32 - 1], NaN to 0. Written without
// std::round, which is a library call on the baseline x86-64 target: below
// 2^32 the integer part converts exactly and x - trunc(x) is exact.
inline std::uint32_t to_mm(double metres) {
  const double mm = metres * 1000.0;
  if (!(mm >= 0.5)) return 0;                         // rounds to 0 or less; also NaN
  if (mm >= 4294967294.5) return 4294967295u;         // rounds to 2^32 - 1 or more
  const auto whole = static_cast<std::uint32_t>(mm);  // truncation
  return whole + (mm - static_cast<double>(whole) >= 0.5 ? 1u : 0u);
}
inline std::uint32_t to_mmps(double metres_per_second) {
  return to_mm(metres_per_second);
}

// One record of Delta.motion.
struct MotionRecord {
  std::uint32_t index = 0;    // EntityId.index
  bool lane_changed = false;  // false: the lane of the client's anchor
  std::uint32_t lane = 0;     // when lane_changed
  std::uint32_t s_mm = 0;
  std::uint32_t speed_mmps = 0;
  friend bool operator==(const MotionRecord&, const MotionRecord&) = default;
};

// Appends records in strictly increasing index order (asserted) to a packed
// byte vector: varint index delta, varint lane code, varint s_mm, varint speed.
class MotionWriter {
 public:
  void clear();
  void add(const MotionRecord& r);
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }
  std::size_t count() const { return count_; }

 private:
  void varint(std::uint64_t v);
  std::vector<std::uint8_t> bytes_;
  std::uint32_t last_index_ = 0;
  std::size_t count_ = 0;
};

// Decodes Delta.motion into `out` (cleared first). Returns "" or what is
// wrong, naming the byte offset: a truncated or over-long varint, a value
// over 32 bits, an index that does not increase.
std::string read_motion(std::span<const std::uint8_t> bytes, std::vector<MotionRecord>& out);

// A lane polyline prepared for sampling exactly as the server does
// (core::LaneGraph::sample): cumulative lengths as sqrt(dx*dx + dy*dy).
struct LanePolyline {
  std::vector<double> x_m, y_m;
  std::vector<double> cumulative_m;
  double length_m = 0.0;
  double elevation_m = 0.0;
  std::uint32_t length_mm = 0;  // Welcome's length_mm: where prediction stops

  static LanePolyline from_points(std::span<const double> xs, std::span<const double> ys,
                                  double elevation_m, std::uint32_t length_mm);
};

struct LanePose {
  double x_m = 0.0;
  double y_m = 0.0;
  double z_m = 0.0;
  double heading_rad = 0.0;  // 0 = +x, counter-clockwise
};

// The pose at s metres along the lane (clamped to [0, length]).
LanePose sample_lane(const LanePolyline& lane, double s_m);

}  // namespace bustle::proto
