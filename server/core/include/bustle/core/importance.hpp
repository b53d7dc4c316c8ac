// Importance inputs to the simulation-tier axis (DESIGN §3).
//
// Tier resolution ranks entities by an *effective distance*, so an important
// entity far away can outrank an unimportant one nearby:
//
//   d_eff = min over observers of
//             (d_xy + height_weight x |z_entity - z_observer|)
//             x (behind_factor when the entity is behind an observer that has
//                a view direction, else 1)
//           / (class_weight[priority] x type_weight x area_weight)
//
// area_weight is the largest weight of the areas of interest containing the
// entity (1 outside all of them). With no observers d_eff is infinity. The
// hysteresis thresholds, caps and budget of sim_tier.hpp apply to d_eff
// unchanged, so with default weights (background, pedestrian, flat ground, no
// view direction, no areas) d_eff equals the plain distance.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "bustle/core/scenario.hpp"

namespace bustle::core {

const char* to_string(PriorityClass c);

// What an observer adds to its position: height and, optionally, where it looks.
struct ObserverView {
  double z_m = 0.0;
  bool has_heading = false;
  double heading_rad = 0.0;  // 0 = +x, counter-clockwise
  friend bool operator==(const ObserverView&, const ObserverView&) = default;
};

// Observers prepared for many queries: view directions as unit vectors, so a
// query costs a few multiplications per observer and no trigonometry.
class ImportanceField {
 public:
  void prepare(const ImportanceSpec& spec, std::span<const Vec2> observers,
               std::span<const ObserverView> views);

  // Weight of an entity of this class and type at (x, y): class x type x area.
  double weight(PriorityClass cls, bool vehicle, double x_m, double y_m) const;
  // The effective distance defined above.
  double effective_distance_m(double x_m, double y_m, double z_m, double weight) const;
  // effective_distance_m of `count` points (x, y, z, weight each): the same
  // operations on the same values, so the same bits, in loops over the
  // points without branches, which the compiler runs several points at a time.
  void effective_distances_m(const double* x_m, const double* y_m, const double* z_m,
                             const double* weight, std::size_t count, double* out_m) const;

 private:
  struct Obs {
    double x, y, z;
    bool directed;
    double dx, dy;  // unit view direction
  };
  // effective_distance_m when some observer has a view direction or its own
  // height (out of line, so the flat case inlines small).
  double effective_distance_directed_m(double x_m, double y_m, double z_m, double weight) const;
  const ImportanceSpec* spec_ = nullptr;
  std::vector<Obs> obs_;
  // When no observer has a view direction and all stand at one height, the
  // nearest observer is the one at the smallest squared distance: one sqrt.
  bool flat_ = true;
  double flat_z_ = 0.0;
};

// Defined here so the per-entity loops of tier resolution inline them.
inline double ImportanceField::weight(PriorityClass cls, bool vehicle, double x_m,
                                      double y_m) const {
  const ImportanceSpec& s = *spec_;
  double area = 1.0;
  for (const AreaOfInterest& a : s.areas) {
    const double dx = x_m - a.center.x_m;
    const double dy = y_m - a.center.y_m;
    if (dx * dx + dy * dy <= a.radius_m * a.radius_m) area = std::max(area, a.weight);
  }
  return s.class_weight[static_cast<std::size_t>(cls)] *
         (vehicle ? s.vehicle_weight : s.pedestrian_weight) * area;
}

inline double ImportanceField::effective_distance_m(double x_m, double y_m, double z_m,
                                                    double weight) const {
  if (!flat_) return effective_distance_directed_m(x_m, y_m, z_m, weight);
  double best = std::numeric_limits<double>::infinity();
  for (const Obs& o : obs_) {
    const double dx = x_m - o.x;
    const double dy = y_m - o.y;
    best = std::min(best, dx * dx + dy * dy);
  }
  const double d = std::sqrt(best) + spec_->height_weight * std::abs(z_m - flat_z_);
  // Most entities weigh exactly 1; x / 1.0 == x, so skipping the divide
  // (a long-latency instruction on this hot path) changes no result.
  return weight == 1.0 ? d : d / weight;
}

}  // namespace bustle::core
