// Command SetObservers: the scenario / operator observers (at most 64) that
// sim tiers and out-of-range despawns measure from; and the shared part of
// SetClientObservers (set_observer_points, refresh_tier_observers).
#include <cmath>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SetObservers& c, CommandResult& r) {
  if (c.points.size() > 64) {
    reject(r, RejectReason::InvalidArgument, "at most 64 observers");
    return;
  }
  if (!set_observer_points(c.points, observers_, observer_views_, r)) return;
  accept(r);
}

bool World::set_observer_points(std::span<const ObserverPoint> points, std::vector<Vec2>& out,
                                std::vector<ObserverView>& views, CommandResult& r) {
  for (const ObserverPoint& p : points) {
    if (!std::isfinite(p.x_m) || !std::isfinite(p.y_m) || !std::isfinite(p.z_m) ||
        !std::isfinite(p.heading_rad)) {
      reject(r, RejectReason::InvalidArgument,
             "observer coordinates, height and heading must be finite");
      return false;
    }
  }
  out.clear();
  views.clear();
  for (const ObserverPoint& p : points) {
    out.push_back({p.x_m, p.y_m});
    views.push_back({p.z_m, p.has_heading, p.has_heading ? p.heading_rad : 0.0});
  }
  refresh_tier_observers();
  return true;
}

void World::refresh_tier_observers() {
  tier_observers_ = observers_;
  tier_views_ = observer_views_;
  tier_views_.resize(tier_observers_.size());
  tier_observers_.insert(tier_observers_.end(), client_observers_.begin(), client_observers_.end());
  tier_views_.insert(tier_views_.end(), client_observer_views_.begin(),
                     client_observer_views_.end());
}

}  // namespace bustle::core
