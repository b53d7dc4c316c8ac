// Command SetObservers: the scenario / operator observers (at most 64) that
// sim tiers and out-of-range despawns measure from; the follow that moves
// observers[0] with an entity (the command's, or the scenario's
// observer_follow = first_vehicle); and the shared part of
// SetClientObservers (set_observer_points, refresh_tier_observers).
#include <algorithm>
#include <cmath>

#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const SetObservers& c, CommandResult& r) {
  if (c.points.size() > 64) {
    reject(r, RejectReason::InvalidArgument, "at most 64 observers");
    return;
  }
  if (!c.follow.is_null()) {
    Vec2 at;
    if (!c.points.empty()) {
      reject(r, RejectReason::InvalidArgument,
             "follow: give either points or an entity to follow, not both");
    } else if (!registry_.is_alive(c.follow)) {
      reject(r, RejectReason::UnknownEntity,
             "follow: entity " + id_text(c.follow) + " is not alive");
    } else if (!entity_position(c.follow, at)) {
      reject(r, RejectReason::InvalidArgument,
             "follow: entity " + id_text(c.follow) +
                 " is not on a lane (a dormant resident or a fading entity)");
    } else {
      follow_ = c.follow;
      follow_first_vehicle_ = false;  // the operator's choice replaces the scenario's
      observers_.assign(1, at);
      observer_views_.assign(1, ObserverView{});
      refresh_tier_observers();
      accept(r);
    }
    return;
  }
  if (!set_observer_points(c.points, observers_, observer_views_, r)) return;
  follow_ = EntityId{};
  follow_first_vehicle_ = false;
  accept(r);
}

bool World::entity_position(EntityId id, Vec2& out) const {
  if (!registry_.is_alive(id)) return false;
  if (vehicles_.is_vehicle(id)) {
    const Pose p = vehicles_.pose(vehicles_.store().dense_of[id.index]);
    out = {p.x_m, p.y_m};
    return true;
  }
  const std::uint32_t slot = walking_slot(registry_, pedestrians_, id);
  if (slot == PedestrianStore::kNoSlot) return false;
  out = lanes_.position(pedestrians_.lane[slot], pedestrians_.s_m[slot]);
  return true;
}

void World::update_follow_observer() {
  if (follow_first_vehicle_ && vehicles_.store().size() > 0) {
    follow_ = vehicles_.store().id[0];  // dispatch order: the first on the road
    follow_first_vehicle_ = false;
  }
  if (follow_.is_null()) return;
  Vec2 at;
  if (!entity_position(follow_, at)) {
    follow_ = EntityId{};  // the observer stays where the entity was last seen
    return;
  }
  if (observers_.size() == 1 && observers_[0].x_m == at.x_m && observers_[0].y_m == at.y_m) return;
  observers_.assign(1, at);
  observer_views_.assign(1, ObserverView{});
  refresh_tier_observers();
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
