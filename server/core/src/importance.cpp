#include "bustle/core/importance.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace bustle::core {

const char* to_string(PriorityClass c) {
  switch (c) {
    case PriorityClass::Story:
      return "story";
    case PriorityClass::Quest:
      return "quest";
    case PriorityClass::Community:
      return "community";
    case PriorityClass::Background:
      return "background";
  }
  return "?";
}

void ImportanceField::prepare(const ImportanceSpec& spec, std::span<const Vec2> observers,
                              std::span<const ObserverView> views) {
  spec_ = &spec;
  obs_.clear();
  flat_ = true;
  flat_z_ = views.empty() || observers.empty() ? 0.0 : views[0].z_m;
  for (std::size_t k = 0; k < observers.size(); ++k) {
    const ObserverView v = k < views.size() ? views[k] : ObserverView{};
    Obs o{observers[k].x_m, observers[k].y_m, v.z_m, v.has_heading, 0.0, 0.0};
    if (v.has_heading) {
      o.dx = std::cos(v.heading_rad);
      o.dy = std::sin(v.heading_rad);
    }
    obs_.push_back(o);
    flat_ = flat_ && !v.has_heading && v.z_m == flat_z_;
  }
}

double ImportanceField::effective_distance_directed_m(double x_m, double y_m, double z_m,
                                                      double weight) const {
  double best = std::numeric_limits<double>::infinity();
  const double hw = spec_->height_weight;
  for (const Obs& o : obs_) {
    const double dx = x_m - o.x;
    const double dy = y_m - o.y;
    double d = std::sqrt(dx * dx + dy * dy) + hw * std::abs(z_m - o.z);
    // Behind: the entity lies in the half-plane opposite the view direction.
    if (o.directed && dx * o.dx + dy * o.dy < 0.0) d *= spec_->behind_factor;
    best = std::min(best, d);
  }
  return weight == 1.0 ? best : best / weight;
}

void ImportanceField::effective_distances_m(const double* __restrict x_m,
                                            const double* __restrict y_m,
                                            const double* __restrict z_m,
                                            const double* __restrict weight, std::size_t count,
                                            double* __restrict out_m) const {
  if (!flat_) {
    for (std::size_t j = 0; j < count; ++j)
      out_m[j] = effective_distance_directed_m(x_m[j], y_m[j], z_m[j], weight[j]);
    return;
  }
  // effective_distance_m's flat case, observer by observer over all points:
  // out_m holds each point's smallest squared distance so far.
  for (std::size_t j = 0; j < count; ++j) out_m[j] = std::numeric_limits<double>::infinity();
  for (const Obs& o : obs_) {
    const double ox = o.x, oy = o.y;
    for (std::size_t j = 0; j < count; ++j) {
      const double dx = x_m[j] - ox;
      const double dy = y_m[j] - oy;
      out_m[j] = std::min(out_m[j], dx * dx + dy * dy);
    }
  }
  const double hw = spec_->height_weight;
  const double z0 = flat_z_;
  for (std::size_t j = 0; j < count; ++j) {
    const double d = std::sqrt(out_m[j]) + hw * std::abs(z_m[j] - z0);
    // d / 1.0 == d, so this is effective_distance_m's skipped division as
    // one that always runs (a conditional one would keep the loop scalar).
    out_m[j] = d / weight[j];
  }
}

}  // namespace bustle::core
