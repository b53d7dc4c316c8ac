// The interest coverage: sessions' needs, their union, and the lanes it
// poses (coverage.hpp).
#include "bustle/net/coverage.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace bustle::net {

bool Coverage::covers(const CoverageNeed& need) const {
  if (whole) return true;
  if (need.whole) return false;
  return std::all_of(need.discs.begin(), need.discs.end(), [&](const CoverageDisc& d) {
    return std::any_of(discs.begin(), discs.end(), [&](const CoverageDisc& c) {
      if (c.radius_m < d.radius_m) return false;
      const double dx = d.x_m - c.x_m, dy = d.y_m - c.y_m;
      const double room = c.radius_m - d.radius_m;
      return dx * dx + dy * dy <= room * room;
    });
  });
}

std::uint64_t CoverageRegistry::set(std::uint32_t session_id, CoverageNeed need) {
  const std::lock_guard lock(mu_);
  auto [it, added] = needs_.try_emplace(session_id, need);
  if (!added) {
    if (it->second == need) return version_;
    it->second = std::move(need);
  }
  return ++version_;
}

void CoverageRegistry::erase(std::uint32_t session_id) {
  const std::lock_guard lock(mu_);
  if (needs_.erase(session_id) > 0) ++version_;
}

Coverage CoverageRegistry::current(std::uint64_t* version) const {
  const std::lock_guard lock(mu_);
  if (version != nullptr) *version = version_;
  Coverage c;
  c.version = version_;
  c.whole = needs_.empty();
  for (const auto& [id, need] : needs_) {
    if (need.whole) {
      c.whole = true;
      c.discs.clear();
      break;
    }
    c.discs.insert(c.discs.end(), need.discs.begin(), need.discs.end());
  }
  return c;
}

std::uint64_t CoverageRegistry::version() const {
  const std::lock_guard lock(mu_);
  return version_;
}

std::int64_t LaneCoverage::col(double x_m) const {
  return std::clamp<std::int64_t>(static_cast<std::int64_t>((x_m - min_x_m_) / cell_m_), 0,
                                  cols_ - 1);
}

std::int64_t LaneCoverage::row(double y_m) const {
  return std::clamp<std::int64_t>(static_cast<std::int64_t>((y_m - min_y_m_) / cell_m_), 0,
                                  rows_ - 1);
}

// A grid over every lane's box, and per lane the cells its box spans: built
// once per lane graph.
void LaneCoverage::index(const core::LaneGraph& lanes) {
  indexed_ = &lanes;
  indexed_lanes_ = lanes.size();
  std::vector<double> box(std::size_t{lanes.size()} * 4);  // min x, min y, max x, max y
  double min_x = std::numeric_limits<double>::infinity(), min_y = min_x;
  double max_x = -min_x, max_y = -min_x;
  for (core::LaneIndex l = 0; l < lanes.size(); ++l) {
    double* b = &box[std::size_t{l} * 4];
    b[0] = b[1] = std::numeric_limits<double>::infinity();
    b[2] = b[3] = -std::numeric_limits<double>::infinity();
    for (const core::Vec2& p : lanes.lane(l).points) {
      b[0] = std::min(b[0], p.x_m - kCoverageMarginM);
      b[1] = std::min(b[1], p.y_m - kCoverageMarginM);
      b[2] = std::max(b[2], p.x_m + kCoverageMarginM);
      b[3] = std::max(b[3], p.y_m + kCoverageMarginM);
    }
    if (b[0] > b[2]) b[0] = b[1] = b[2] = b[3] = 0.0;  // no points: never
    min_x = std::min(min_x, b[0]);
    min_y = std::min(min_y, b[1]);
    max_x = std::max(max_x, b[2]);
    max_y = std::max(max_y, b[3]);
  }
  if (lanes.size() == 0) min_x = min_y = max_x = max_y = 0.0;
  min_x_m_ = min_x;
  min_y_m_ = min_y;
  cell_m_ = 64.0;
  // At most ~1M cells whatever the extent.
  while ((max_x - min_x) / cell_m_ * (max_y - min_y) / cell_m_ > double{1 << 20}) cell_m_ *= 2.0;
  cols_ = static_cast<std::int64_t>((max_x - min_x) / cell_m_) + 1;
  rows_ = static_cast<std::int64_t>((max_y - min_y) / cell_m_) + 1;
  // Per cell, the lanes whose box spans it: counted, then filled (a lane
  // appears in a cell once, lanes in index order).
  const auto for_each_cell = [&](core::LaneIndex l, auto&& fn) {
    const double* b = &box[std::size_t{l} * 4];
    for (std::int64_t r = row(b[1]); r <= row(b[3]); ++r)
      for (std::int64_t c = col(b[0]); c <= col(b[2]); ++c)
        fn(static_cast<std::size_t>(r * cols_ + c));
  };
  cell_lane_start_.assign(static_cast<std::size_t>(cols_ * rows_) + 1, 0);
  for (core::LaneIndex l = 0; l < lanes.size(); ++l)
    for_each_cell(l, [&](std::size_t cell) { ++cell_lane_start_[cell + 1]; });
  for (std::size_t c = 0; c + 1 < cell_lane_start_.size(); ++c)
    cell_lane_start_[c + 1] += cell_lane_start_[c];
  cell_lanes_.assign(cell_lane_start_.back(), 0);
  std::vector<std::uint32_t> fill(cell_lane_start_.begin(), cell_lane_start_.end() - 1);
  for (core::LaneIndex l = 0; l < lanes.size(); ++l)
    for_each_cell(l, [&](std::size_t cell) { cell_lanes_[fill[cell]++] = l; });
  lane_stamp_.assign(lanes.size(), 0);
}

void LaneCoverage::add_disc_span(const core::Lane& lane, core::LaneIndex index,
                                 const CoverageDisc& d) {
  const double r = d.radius_m + kCoverageMarginM;
  double lo_m = std::numeric_limits<double>::infinity(), hi_m = -lo_m;
  const std::vector<core::Vec2>& p = lane.points;
  if (p.size() == 1) {  // every distance along it is this point
    const double dx = p[0].x_m - d.x_m, dy = p[0].y_m - d.y_m;
    if (dx * dx + dy * dy <= r * r) lo_m = 0.0, hi_m = lane.length_m;
  }
  for (std::size_t k = 0; k + 1 < p.size(); ++k) {
    // |a + t (b - a) - centre| <= r for t in [t0, t1]: a quadratic in t.
    const double ux = p[k + 1].x_m - p[k].x_m, uy = p[k + 1].y_m - p[k].y_m;
    const double fx = p[k].x_m - d.x_m, fy = p[k].y_m - d.y_m;
    const double a = ux * ux + uy * uy, b = 2.0 * (ux * fx + uy * fy);
    const double c = fx * fx + fy * fy - r * r;
    double t0 = 0.0, t1 = 0.0;
    if (a == 0.0) {
      if (c > 0.0) continue;  // a repeated point outside the disc
    } else {
      const double disc = b * b - 4.0 * a * c;
      if (disc < 0.0) continue;
      const double root = std::sqrt(disc);
      t0 = std::max(0.0, (-b - root) / (2.0 * a));
      t1 = std::min(1.0, (-b + root) / (2.0 * a));
      if (t0 > t1) continue;
    }
    const double start = lane.cumulative_m[k], length = lane.cumulative_m[k + 1] - start;
    lo_m = std::min(lo_m, start + t0 * length);
    hi_m = std::max(hi_m, start + t1 * length);
  }
  if (lo_m > hi_m) return;
  lo_m -= kCoverageMarginM;
  hi_m += kCoverageMarginM;
  const std::uint32_t lo_mm =
      lo_m <= 0.0 ? 0 : static_cast<std::uint32_t>(std::floor(lo_m * 1000.0));
  // Past the lane's end the frame poses its end: the span then runs to the last millimetre.
  const std::uint32_t hi_mm = hi_m >= lane.length_m
                                  ? std::numeric_limits<std::uint32_t>::max()
                                  : static_cast<std::uint32_t>(std::ceil(hi_m * 1000.0));
  PosedSpan& span = spans_[index];
  if (!span.any()) {
    span = {lo_mm, hi_mm};
  } else {
    span.lo_mm = std::min(span.lo_mm, lo_mm);
    span.hi_mm = std::max(span.hi_mm, hi_mm);
  }
}

const std::vector<PosedSpan>& LaneCoverage::mark(const core::LaneGraph& lanes,
                                                 const Coverage& coverage,
                                                 std::uint64_t world_epoch) {
  if (indexed_ != &lanes || indexed_lanes_ != lanes.size() || indexed_epoch_ != world_epoch) {
    index(lanes);
    indexed_epoch_ = world_epoch;
  }
  spans_.assign(lanes.size(), coverage.whole
                                  ? PosedSpan{0, std::numeric_limits<std::uint32_t>::max()}
                                  : PosedSpan{});
  if (coverage.whole) return spans_;
  std::fill(lane_stamp_.begin(), lane_stamp_.end(), 0);
  const double max_x_m = min_x_m_ + static_cast<double>(cols_) * cell_m_;
  const double max_y_m = min_y_m_ + static_cast<double>(rows_) * cell_m_;
  for (std::uint32_t k = 0; k < coverage.discs.size(); ++k) {
    const CoverageDisc& d = coverage.discs[k];
    // Clear of every lane: clamping would reach the grid's edge for nothing.
    if (d.x_m + d.radius_m < min_x_m_ || d.x_m - d.radius_m > max_x_m ||
        d.y_m + d.radius_m < min_y_m_ || d.y_m - d.radius_m > max_y_m)
      continue;
    for (std::int64_t r = row(d.y_m - d.radius_m); r <= row(d.y_m + d.radius_m); ++r) {
      for (std::int64_t c = col(d.x_m - d.radius_m); c <= col(d.x_m + d.radius_m); ++c) {
        const auto cell = static_cast<std::size_t>(r * cols_ + c);
        for (std::uint32_t e = cell_lane_start_[cell]; e < cell_lane_start_[cell + 1]; ++e) {
          const core::LaneIndex l = cell_lanes_[e];
          if (lane_stamp_[l] == k + 1) continue;  // this disc met it in another cell
          lane_stamp_[l] = k + 1;
          add_disc_span(lanes.lane(l), l, d);
        }
      }
    }
  }
  return spans_;
}

bool LaneCoverage::every_lane_whole() const {
  return std::all_of(spans_.begin(), spans_.end(), [](const PosedSpan& s) {
    return s.lo_mm == 0 && s.hi_mm == std::numeric_limits<std::uint32_t>::max();
  });
}

}  // namespace bustle::net
