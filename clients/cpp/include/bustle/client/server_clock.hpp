// ServerClock: estimates the server's simulation time at a local instant
// from the Deltas received (Delta.sim_time_us, taken when the frame was read).
//
// Filter: every Delta gives one offset observation, sim_time - local receive
// time. Network delay only ever makes a frame late, so observations jitter
// below the true offset. The estimate is a first-order low-pass (exponential
// moving average) of the observations with weight `smoothing`, which averages
// the jitter away, plus two exceptions:
//   - an observation more than snap_threshold_us away from the estimate
//     (a pause, a restore, a load, a clock-mode change) replaces it at once
//     (counted in snaps());
//   - an observation above the estimate (a frame that arrived with less delay
//     than the estimate assumes) is weighted rise_smoothing, so the estimate
//     follows the least-delayed frames, as a jitter buffer should.
// The first observation sets the estimate. Times are microseconds; the
// local clock is whatever monotonic clock the caller uses, consistently.
#pragma once

#include <cstdint>
#include <optional>

namespace bustle::client {

struct ServerClockConfig {
  double smoothing = 0.05;       // EMA weight of an observation below the estimate (0, 1]
  double rise_smoothing = 0.25;  // EMA weight of an observation above the estimate (0, 1]
  std::int64_t snap_threshold_us = 500'000;  // |observation - estimate| beyond this: jump
};

class ServerClock {
 public:
  explicit ServerClock(const ServerClockConfig& config = {}) : config_(config) {}

  void observe(std::int64_t server_time_us, std::int64_t local_receive_us);
  // nullopt before the first observation.
  std::optional<std::int64_t> server_time_at(std::int64_t local_us) const;
  void reset();

  bool has_estimate() const { return observations_ > 0; }
  double offset_us() const { return offset_us_; }
  std::uint64_t observations() const { return observations_; }
  std::uint64_t snaps() const { return snaps_; }
  const ServerClockConfig& config() const { return config_; }

 private:
  ServerClockConfig config_;
  double offset_us_ = 0.0;  // estimated server time - local time
  std::uint64_t observations_ = 0;
  std::uint64_t snaps_ = 0;
};

}  // namespace bustle::client
