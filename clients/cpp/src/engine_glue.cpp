// Plugin decisions kept out of the engine: archetype lookup by dotted
// prefix and the pacing of interest updates (engine_glue.hpp).
#include "bustle/client/engine_glue.hpp"

#include <cmath>

#include "bustle/client/interpolation.hpp"

namespace bustle::client {

std::vector<std::string_view> archetype_lookup_chain(std::string_view name) {
  std::vector<std::string_view> chain;
  while (!name.empty()) {
    chain.push_back(name);
    const std::size_t dot = name.rfind('.');
    if (dot == std::string_view::npos) break;
    name = name.substr(0, dot);
  }
  return chain;
}

bool InterestPacer::due(const InterestObserver& observer, std::int64_t now_us) const {
  if (!last_) return true;
  const std::int64_t since = now_us - last_us_;
  if (since < config_.min_interval_us) return false;
  if (observer == *last_) return false;
  const double moved = std::hypot(std::hypot(observer.x_m - last_->x_m, observer.y_m - last_->y_m),
                                  observer.z_m - last_->z_m);
  bool turned = observer.heading_rad.has_value() != last_->heading_rad.has_value();
  if (!turned && observer.heading_rad && last_->heading_rad) {
    turned = std::abs(heading_delta_rad(*last_->heading_rad, *observer.heading_rad)) >
             config_.turn_threshold_rad;
  }
  if (moved > config_.move_threshold_m || turned || observer.radius_m != last_->radius_m)
    return true;
  return since >= config_.max_interval_us;
}

void InterestPacer::sent(const InterestObserver& observer, std::int64_t now_us) {
  last_ = observer;
  last_us_ = now_us;
}

}  // namespace bustle::client
