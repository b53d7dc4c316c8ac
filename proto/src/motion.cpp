// Lane-relative motion shared by server and clients (motion.hpp): the motion
// record writer and reader, and the integer dead-reckoning both sides use so
// their predictions agree to the millimetre.
#include "bustle/proto/motion.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace bustle::proto {

void MotionWriter::clear() {
  bytes_.clear();
  last_index_ = 0;
  count_ = 0;
}

void MotionWriter::varint(std::uint64_t v) {
  while (v >= 0x80) {
    bytes_.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  bytes_.push_back(static_cast<std::uint8_t>(v));
}

void MotionWriter::add(const MotionRecord& r) {
  assert(count_ == 0 || r.index > last_index_);
  varint(count_ == 0 ? r.index : r.index - last_index_);
  varint(r.lane_changed ? std::uint64_t{r.lane} + 1 : 0);
  varint(r.s_mm);
  varint(r.speed_mmps);
  last_index_ = r.index;
  ++count_;
}

namespace {

// Reads one unsigned LEB128 value of at most 64 bits; false when truncated or
// longer than 10 bytes.
bool read_varint(std::span<const std::uint8_t> bytes, std::size_t& at, std::uint64_t& value) {
  value = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (at >= bytes.size()) return false;
    const std::uint8_t b = bytes[at++];
    value |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

std::string read_motion(std::span<const std::uint8_t> bytes, std::vector<MotionRecord>& out) {
  out.clear();
  std::size_t at = 0;
  std::uint64_t index = 0;
  static const char* const kField[4] = {"index delta", "lane code", "s_mm", "speed_mmps"};
  while (at < bytes.size()) {
    const std::size_t record_at = at;
    std::uint64_t v[4];
    for (int f = 0; f < 4; ++f) {
      const std::size_t field_at = at;
      if (!read_varint(bytes, at, v[f])) {
        return "motion[byte " + std::to_string(field_at) + "]: truncated or over-long varint (" +
               kField[f] + ")";
      }
      const std::uint64_t max = f == 1 ? std::uint64_t{UINT32_MAX} + 1 : UINT32_MAX;
      if (v[f] > max) {
        return "motion[byte " + std::to_string(field_at) + "]: " + kField[f] + " " +
               std::to_string(v[f]) + " exceeds 32 bits";
      }
    }
    if (!out.empty() && v[0] == 0) {
      return "motion[byte " + std::to_string(record_at) +
             "]: index delta 0 (indices must increase)";
    }
    index = out.empty() ? v[0] : index + v[0];
    if (index > UINT32_MAX)
      return "motion[byte " + std::to_string(record_at) + "]: index exceeds 32 bits";
    MotionRecord r;
    r.index = static_cast<std::uint32_t>(index);
    r.lane_changed = v[1] != 0;
    r.lane = r.lane_changed ? static_cast<std::uint32_t>(v[1] - 1) : 0;
    r.s_mm = static_cast<std::uint32_t>(v[2]);
    r.speed_mmps = static_cast<std::uint32_t>(v[3]);
    out.push_back(r);
  }
  return {};
}

LanePolyline LanePolyline::from_points(std::span<const double> xs, std::span<const double> ys,
                                       double elevation_m, std::uint32_t length_mm) {
  LanePolyline lane;
  const std::size_t n = std::min(xs.size(), ys.size());
  lane.x_m.assign(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n));
  lane.y_m.assign(ys.begin(), ys.begin() + static_cast<std::ptrdiff_t>(n));
  lane.cumulative_m.assign(n, 0.0);
  for (std::size_t k = 1; k < n; ++k) {
    // sqrt(dx*dx + dy*dy), not std::hypot: its rounding differs between C
    // libraries, while IEEE 754 rounds these operations the same everywhere
    // (no contraction: -ffp-contract=off), so every client gets the server's
    // lengths bit for bit.
    const double dx = lane.x_m[k] - lane.x_m[k - 1];
    const double dy = lane.y_m[k] - lane.y_m[k - 1];
    lane.cumulative_m[k] = lane.cumulative_m[k - 1] + std::sqrt(dx * dx + dy * dy);
  }
  lane.length_m = n > 0 ? lane.cumulative_m.back() : 0.0;
  lane.elevation_m = elevation_m;
  lane.length_mm = length_mm;
  return lane;
}

LanePose sample_lane(const LanePolyline& lane, double s_m) {
  LanePose p;
  p.z_m = lane.elevation_m;
  const std::size_t n = lane.x_m.size();
  if (n == 0) return p;
  if (n == 1) {
    p.x_m = lane.x_m[0];
    p.y_m = lane.y_m[0];
    return p;
  }
  // The same segment choice as core::LaneGraph::sample.
  const double s = std::clamp(s_m, 0.0, lane.length_m);
  auto it = std::upper_bound(lane.cumulative_m.begin(), lane.cumulative_m.end(), s);
  std::size_t k = static_cast<std::size_t>(it - lane.cumulative_m.begin());
  if (k >= n) k = n - 1;
  if (k == 0) k = 1;
  while (k > 1 && lane.cumulative_m[k] == lane.cumulative_m[k - 1]) --k;
  const double seg = lane.cumulative_m[k] - lane.cumulative_m[k - 1];
  const double t = seg > 0.0 ? (s - lane.cumulative_m[k - 1]) / seg : 0.0;
  const double ax = lane.x_m[k - 1], ay = lane.y_m[k - 1], bx = lane.x_m[k], by = lane.y_m[k];
  p.x_m = ax + (bx - ax) * t;
  p.y_m = ay + (by - ay) * t;
  p.heading_rad = std::atan2(by - ay, bx - ax);
  return p;
}

}  // namespace bustle::proto
