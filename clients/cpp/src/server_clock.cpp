// The estimate of the server's simulation time from the Deltas received
// (server_clock.hpp).
#include "bustle/client/server_clock.hpp"

#include <cassert>
#include <cmath>

namespace bustle::client {

void ServerClock::observe(std::int64_t server_time_us, std::int64_t local_receive_us) {
  const double observed = static_cast<double>(server_time_us - local_receive_us);
  if (observations_ == 0) {
    offset_us_ = observed;
  } else {
    const double error = observed - offset_us_;
    if (std::abs(error) > static_cast<double>(config_.snap_threshold_us)) {
      offset_us_ = observed;
      ++snaps_;
    } else {
      offset_us_ += (error > 0.0 ? config_.rise_smoothing : config_.smoothing) * error;
    }
  }
  ++observations_;
}

std::optional<std::int64_t> ServerClock::server_time_at(std::int64_t local_us) const {
  if (observations_ == 0) return std::nullopt;
  return local_us + static_cast<std::int64_t>(std::llround(offset_us_));
}

void ServerClock::reset() {
  offset_us_ = 0.0;
  observations_ = 0;
  snaps_ = 0;
}

}  // namespace bustle::client
