#include "bustle/net/published_frame.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace bustle::net {

// Scenario validation keeps every coordinate within core::kWorldExtentM, so
// a position in the world never reaches the clamp below (entities stay on
// lane polylines, inside the points' bounding box); this keeps the two limits
// from drifting apart, with a 2x margin.
static_assert(core::kWorldExtentM * 100.0 * 2.0 < 2147483647.0,
              "the world extent must fit int32 centimetres on the wire with margin");

std::int32_t quantize_cm(double metres) {
  const double cm = std::round(metres * 100.0);
  return static_cast<std::int32_t>(std::clamp(cm, -2147483647.0, 2147483647.0));
}

std::uint16_t quantize_heading(double radians) {
  double turns = radians / (2.0 * std::numbers::pi);
  turns -= std::floor(turns);  // [0, 1)
  return static_cast<std::uint16_t>(static_cast<std::uint32_t>(std::lround(turns * 65536.0)) & 0xFFFFu);
}

std::uint16_t quantize_speed(double mps) {
  return static_cast<std::uint16_t>(std::clamp(std::round(mps * 100.0), 0.0, 65535.0));
}

namespace {

// Orphans (retiring, fading out) stay in the stream until final deletion, at
// their last lane pose with speed 0, so clients can fade them where they
// stopped. One still held by its store (a vehicle the world keeps until it
// is deleted) is only marked. `entities` is sorted by index and stays so.
void add_orphans(const core::World& world, std::vector<QuantizedEntity>& entities) {
  const auto by_index = [](const QuantizedEntity& a, const QuantizedEntity& b) { return a.id.index < b.id.index; };
  const std::size_t live = entities.size();
  for (const core::OrphanRecord& o : world.orphans()) {
    QuantizedEntity probe;
    probe.id = o.id;
    const auto it = std::lower_bound(entities.begin(), entities.begin() + static_cast<std::ptrdiff_t>(live), probe,
                                     by_index);
    if (it != entities.begin() + static_cast<std::ptrdiff_t>(live) && it->id.index == o.id.index) {
      // Indices are unique among live entities; a stale occupant cannot share
      // a slot with a live orphan, so this is the orphan itself.
      if (it->id == o.id) it->retiring = true;
      continue;
    }
    if (o.lane >= world.lanes().size()) continue;  // never: the core validates orphan lanes
    const core::Pose pose = world.lanes().sample(o.lane, o.s_m);
    // Pedestrians never walk roads: an orphan on a road is a vehicle even once
    // the vehicle store has let it go.
    const bool vehicle =
        world.vehicles().is_vehicle(o.id) || !core::is_pedestrian_lane(world.lanes().lane(o.lane).kind);
    entities.push_back(QuantizedEntity{o.id, quantize_cm(pose.x_m), quantize_cm(pose.y_m),
                                       quantize_heading(pose.heading_rad), 0,
                                       vehicle ? core::EntityKind::Vehicle : core::EntityKind::Pedestrian, true});
  }
  // The orphan set is sorted by id, hence by index: merge the two runs.
  std::inplace_merge(entities.begin(), entities.begin() + static_cast<std::ptrdiff_t>(live), entities.end(),
                     by_index);
}

std::shared_ptr<const std::vector<std::uint16_t>> chain_dots(const core::World& world) {
  std::vector<std::uint32_t> counts;
  world.chain_dots(counts);
  auto dots = std::make_shared<std::vector<std::uint16_t>>(world.lanes().chains().size(), std::uint16_t{0});
  for (std::size_t c = 0; c < counts.size() && c < dots->size(); ++c) {
    (*dots)[c] = static_cast<std::uint16_t>(std::min<std::uint32_t>(counts[c], 65535u));
  }
  return dots;
}

}  // namespace

std::shared_ptr<const PublishedFrame> make_published_frame(const core::World& world,
                                                           std::uint64_t world_epoch) {
  auto frame = std::make_shared<PublishedFrame>();
  frame->world_epoch = world_epoch;
  frame->step = world.step_index();
  frame->sim_time_us = world.sim_time_us();
  frame->digest = world.digest();
  const core::PedestrianStore& peds = world.pedestrians();
  frame->entities.reserve(peds.size() + world.vehicles().store().size());
  for (std::uint32_t i = 0; i < peds.size(); ++i) {
    const core::Pose pose = world.pedestrian_pose(i);
    frame->entities.push_back(QuantizedEntity{peds.id[i], quantize_cm(pose.x_m),
                                              quantize_cm(pose.y_m), quantize_heading(pose.heading_rad),
                                              quantize_speed(world.pedestrian_speed_mps(i)),
                                              core::EntityKind::Pedestrian});
  }
  const core::VehicleSystem& vs = world.vehicles();
  for (std::uint32_t i = 0; i < vs.store().size(); ++i) {
    const core::Pose pose = vs.pose(i);
    frame->entities.push_back(QuantizedEntity{vs.store().id[i], quantize_cm(pose.x_m), quantize_cm(pose.y_m),
                                              quantize_heading(pose.heading_rad),
                                              quantize_speed(vs.store().speed_mps[i]), core::EntityKind::Vehicle});
  }
  for (const core::SignalState& sg : vs.signals()) frame->signal_phases.push_back(static_cast<std::uint8_t>(sg.phase));
  const auto by_index = [](const QuantizedEntity& a, const QuantizedEntity& b) { return a.id.index < b.id.index; };
  std::sort(frame->entities.begin(), frame->entities.end(), by_index);
  add_orphans(world, frame->entities);
  const std::uint32_t dots_every = world.scenario().pedestrians.dots_every_steps;
  if (dots_every > 0 && world.step_index() % dots_every == 0) frame->dots = chain_dots(world);
  return frame;
}

}  // namespace bustle::net
