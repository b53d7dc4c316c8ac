// Poses between the stream's samples: per slot a ring of samples by server
// time, interpolated or briefly extrapolated (interpolation.hpp).
#include "bustle/client/interpolation.hpp"

#include <cmath>
#include <numbers>

namespace bustle::client {

const char* to_string(SampleMode mode) {
  switch (mode) {
    case SampleMode::Empty:
      return "empty";
    case SampleMode::Single:
      return "single";
    case SampleMode::HoldOldest:
      return "hold-oldest";
    case SampleMode::Interpolated:
      return "interpolated";
    case SampleMode::Extrapolated:
      return "extrapolated";
    case SampleMode::HeldAtCap:
      return "held-at-cap";
  }
  return "?";
}

double wrap_heading_rad(double a_rad) {
  constexpr double kTwoPi = 2.0 * std::numbers::pi;
  double w = std::fmod(a_rad, kTwoPi);
  if (w <= -std::numbers::pi) w += kTwoPi;
  if (w > std::numbers::pi) w -= kTwoPi;
  return w;
}

double heading_delta_rad(double a_rad, double b_rad) {
  return wrap_heading_rad(b_rad - a_rad);
}

RenderPose lerp_pose(const RenderPose& a, const RenderPose& b, double alpha,
                     double rotation_alpha_max) {
  const double turn_alpha = std::clamp(alpha, 0.0, rotation_alpha_max);
  return RenderPose{a.x_m + (b.x_m - a.x_m) * alpha, a.y_m + (b.y_m - a.y_m) * alpha,
                    a.z_m + (b.z_m - a.z_m) * alpha,
                    wrap_heading_rad(a.heading_rad +
                                     heading_delta_rad(a.heading_rad, b.heading_rad) * turn_alpha)};
}

Sampled<RenderPose> PoseTrack::sample(std::int64_t render_time_us,
                                      const InterpolationConfig& config) const {
  return ring_.sample(render_time_us, config,
                      [&config](const RenderPose& a, const RenderPose& b, double alpha) {
                        return lerp_pose(a, b, alpha, config.rotation_alpha_max);
                      });
}

}  // namespace bustle::client
