// The interest coverage: sessions' needs, their union, and the lanes it
// poses (coverage.hpp).
#include "bustle/net/coverage.hpp"

#include <algorithm>
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
  lane_cell_start_.assign(std::size_t{lanes.size()} + 1, 0);
  lane_cells_.clear();
  for (core::LaneIndex l = 0; l < lanes.size(); ++l) {
    const double* b = &box[std::size_t{l} * 4];
    for (std::int64_t r = row(b[1]); r <= row(b[3]); ++r)
      for (std::int64_t c = col(b[0]); c <= col(b[2]); ++c)
        lane_cells_.push_back(static_cast<std::uint32_t>(r * cols_ + c));
    lane_cell_start_[l + 1] = static_cast<std::uint32_t>(lane_cells_.size());
  }
  cell_marked_.assign(static_cast<std::size_t>(cols_ * rows_), 0);
}

const std::vector<std::uint8_t>& LaneCoverage::mark(const core::LaneGraph& lanes,
                                                    const Coverage& coverage,
                                                    std::uint64_t world_epoch) {
  if (indexed_ != &lanes || indexed_lanes_ != lanes.size() || indexed_epoch_ != world_epoch) {
    index(lanes);
    indexed_epoch_ = world_epoch;
  }
  covered_.assign(lanes.size(), coverage.whole ? 1 : 0);
  if (coverage.whole) return covered_;
  std::fill(cell_marked_.begin(), cell_marked_.end(), 0);
  const double max_x_m = min_x_m_ + static_cast<double>(cols_) * cell_m_;
  const double max_y_m = min_y_m_ + static_cast<double>(rows_) * cell_m_;
  for (const CoverageDisc& d : coverage.discs) {
    // Clear of every lane: clamping would mark the grid's edge for nothing.
    if (d.x_m + d.radius_m < min_x_m_ || d.x_m - d.radius_m > max_x_m ||
        d.y_m + d.radius_m < min_y_m_ || d.y_m - d.radius_m > max_y_m)
      continue;
    for (std::int64_t r = row(d.y_m - d.radius_m); r <= row(d.y_m + d.radius_m); ++r)
      for (std::int64_t c = col(d.x_m - d.radius_m); c <= col(d.x_m + d.radius_m); ++c)
        cell_marked_[static_cast<std::size_t>(r * cols_ + c)] = 1;
  }
  for (core::LaneIndex l = 0; l < lanes.size(); ++l) {
    for (std::uint32_t k = lane_cell_start_[l]; k < lane_cell_start_[l + 1]; ++k) {
      if (cell_marked_[lane_cells_[k]] != 0) {
        covered_[l] = 1;
        break;
      }
    }
  }
  return covered_;
}

}  // namespace bustle::net
