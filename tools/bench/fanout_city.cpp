// The district city (fanout_city.hpp): geometry, district radii, and the
// scenario built in code and written by scenario_writer.hpp.
#include "fanout_city.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "bustle/citygen/cities.hpp"
#include "bustle/core/scenario.hpp"
#include "bustle/scenario/scenario_writer.hpp"

namespace bustle::bench {
namespace {

using Point = std::array<double, 2>;

// The four corners of block (i, j), counter-clockwise from its south-west corner.
std::array<Point, 4> block_corners(std::uint32_t i, std::uint32_t j) {
  const double x = i * kPitch, y = j * kPitch;
  return {Point{x, y}, Point{x + kBlock, y}, Point{x + kBlock, y + kBlock}, Point{x, y + kBlock}};
}

// Length of segment a-b within `r` of c.
double segment_within(const Point& a, const Point& b, const Point& c, double r) {
  const double dx = b[0] - a[0], dy = b[1] - a[1];
  const double fx = a[0] - c[0], fy = a[1] - c[1];
  const double qa = dx * dx + dy * dy, qb = 2 * (fx * dx + fy * dy), qc = fx * fx + fy * fy - r * r;
  const double disc = qb * qb - 4 * qa * qc;
  if (qa == 0.0 || disc <= 0.0) return 0.0;
  const double root = std::sqrt(disc);
  const double t0 = std::clamp((-qb - root) / (2 * qa), 0.0, 1.0);
  const double t1 = std::clamp((-qb + root) / (2 * qa), 0.0, 1.0);
  return (t1 - t0) * std::sqrt(qa);
}

}  // namespace

double sidewalk_within(double x_m, double y_m, double radius_m) {
  double length = 0.0;
  for (std::uint32_t i = 0; i < kGrid; ++i) {
    for (std::uint32_t j = 0; j < kGrid; ++j) {
      const auto p = block_corners(i, j);
      for (std::size_t k = 0; k < p.size(); ++k)
        length += segment_within(p[k], p[(k + 1) % p.size()], {x_m, y_m}, radius_m);
    }
  }
  return length;
}

DistrictCity make_district_city(std::uint32_t pedestrians, std::uint32_t districts,
                                std::uint32_t share) {
  DistrictCity city;
  city.sidewalk_m = kGrid * kGrid * 4 * kBlock;
  const double per_m = pedestrians / city.sidewalk_m;
  const double side = kGrid * kPitch;
  core::Scenario s;
  s.id = "bustle.bench.fanout.districts." + std::to_string(pedestrians);
  s.name = std::to_string(kGrid) + " x " + std::to_string(kGrid) + " sidewalk loops, " +
           std::to_string(pedestrians) + " pedestrians";
  s.entity_capacity = capacity_for(pedestrians);
  s.pedestrians.count = pedestrians;
  s.pedestrians.spawn_per_step_max = std::max(pedestrians, 1u);
  for (std::uint32_t i = 0; i < kGrid; ++i) {
    for (std::uint32_t j = 0; j < kGrid; ++j) {
      core::LaneSpec lane;
      lane.id = "block." + std::to_string(i) + "." + std::to_string(j);
      lane.kind = core::LaneKind::Sidewalk;
      lane.speed_mps_limit = 1.4;
      for (const Point& p : block_corners(i, j)) lane.points.push_back({p[0], p[1]});
      lane.points.push_back(lane.points.front());
      lane.successors = {lane.id};
      s.lanes.push_back(std::move(lane));
    }
  }
  for (std::uint32_t d = 0; d < std::min(districts, kMaxDistricts); ++d) {
    District district;
    if (districts <= 8) {
      district.x_m = side * (0.125 + 0.25 * (d % 4));
      district.y_m = side * (d < 4 ? 0.25 : 0.75);
    } else {
      district.x_m = side * (0.0625 + 0.125 * (d % 8));
      district.y_m = side * (0.0625 + 0.125 * (d / 8));
    }
    double lo = 0.0, hi = side / 8;  // 4 x 2 districts (500 m apart) this wide stay disjoint
    for (int k = 0; k < 60; ++k) {
      const double mid = (lo + hi) / 2;
      (sidewalk_within(district.x_m, district.y_m, mid) * per_m < share ? lo : hi) = mid;
    }
    district.radius_m = hi;
    district.expected = sidewalk_within(district.x_m, district.y_m, hi) * per_m;
    district.expected_hold = sidewalk_within(district.x_m, district.y_m, 1.1 * hi) * per_m;
    s.observers.push_back({district.x_m, district.y_m});
    city.districts.push_back(district);
  }
  s.tiers.full_cap = pedestrians / 10;
  s.tiers.simulated_cap = pedestrians * 3 / 10;
  s.tiers.hard_full_cap = std::max(pedestrians / 10, 8192u);
  s.tiers.transitions_per_step = std::max(pedestrians / 100, 256u);
  city.scenario_json = scenario::write_scenario_json(s);
  return city;
}

}  // namespace bustle::bench
