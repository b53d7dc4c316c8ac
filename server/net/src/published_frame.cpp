#include "bustle/net/published_frame.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace bustle::net {

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
  std::sort(frame->entities.begin(), frame->entities.end(),
            [](const QuantizedEntity& a, const QuantizedEntity& b) { return a.id.index < b.id.index; });
  return frame;
}

}  // namespace bustle::net
