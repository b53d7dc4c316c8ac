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

}  // namespace bustle::core
