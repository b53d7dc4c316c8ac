// Interpolation rules with exact numbers (interpolation.hpp, rules 1-6) and
// the server-time estimator (server_clock.hpp).
#include "bustle/client/interpolation.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <numbers>

#include "bustle/client/server_clock.hpp"

namespace c = bustle::client;

namespace {

constexpr std::int64_t kMs = 1000;

double lerp(double a, double b, double alpha) {
  return a + (b - a) * alpha;
}

c::Sampled<double> at(const c::SampleRing<double>& ring, std::int64_t t_us,
                      const c::InterpolationConfig& config = {}) {
  return ring.sample(t_us, config, lerp, -1.0);
}

}  // namespace

TEST_CASE("Defaults are the contract's numbers", "[interpolation]") {
  const c::InterpolationConfig config;
  CHECK(config.ring_capacity == 32);
  CHECK(config.interpolation_delay_us == 100 * kMs);
  CHECK(config.extrapolation_max_us == 200 * kMs);
  CHECK(config.step_gap_count == 4);
  CHECK(config.two_sample_step_us == 50 * kMs);
  CHECK(config.rotation_alpha_max == 1.2);
}

TEST_CASE("Bracketing: binary search finds the two samples around the render time",
          "[interpolation]") {
  c::SampleRing<double> ring(32);
  for (int k = 0; k < 4; ++k) ring.push(k * 100 * kMs, 10.0 * k);
  CHECK(at(ring, 150 * kMs).value == Approx(15.0).margin(1e-12));
  CHECK(at(ring, 150 * kMs).mode == c::SampleMode::Interpolated);
  CHECK(at(ring, 100 * kMs).value == 10.0);  // exactly on a sample
  CHECK(at(ring, 275 * kMs).value == Approx(27.5).margin(1e-12));
  CHECK(at(ring, 300 * kMs).value == 30.0);

  SECTION("after the ring wrapped, the 32 newest samples are searched") {
    c::SampleRing<double> wrapped(32);
    for (int k = 0; k < 40; ++k) wrapped.push(k * 50 * kMs, static_cast<double>(k));
    CHECK(wrapped.size() == 32);
    CHECK(wrapped.oldest_time_us() == 8 * 50 * kMs);
    CHECK(at(wrapped, 20 * 50 * kMs + 25 * kMs).value == Approx(20.5).margin(1e-12));
    CHECK(at(wrapped, 39 * 50 * kMs).value == 39.0);
    // Older than every sample held: the oldest is held (rule 1).
    CHECK(at(wrapped, 5 * 50 * kMs).value == 8.0);
    CHECK(at(wrapped, 5 * 50 * kMs).mode == c::SampleMode::HoldOldest);
  }
}

TEST_CASE("Samples only go forward; an equal time replaces the newest", "[interpolation]") {
  c::SampleRing<double> ring(4);
  CHECK(ring.push(100, 1.0) == c::PushStatus::Stored);
  CHECK(ring.push(100, 2.0) == c::PushStatus::ReplacedNewest);
  CHECK(ring.push(50, 3.0) == c::PushStatus::RejectedOlder);
  CHECK(ring.size() == 1);
  CHECK(ring.newest() == 2.0);
}

TEST_CASE("Extrapolation runs at most 0.2 s past the newest sample, then holds",
          "[interpolation]") {
  c::SampleRing<double> ring(32);
  for (int k = 0; k < 4; ++k) ring.push(k * 50 * kMs, static_cast<double>(k));  // 1 per 50 ms
  CHECK(ring.step_us(c::InterpolationConfig{}) == 50 * kMs);
  // 100 ms past the newest (150 ms): 3 + 2.
  CHECK(at(ring, 250 * kMs).value == Approx(5.0).margin(1e-12));
  CHECK(at(ring, 250 * kMs).mode == c::SampleMode::Extrapolated);
  // Exactly at the cap: 3 + 4.
  CHECK(at(ring, 350 * kMs).value == Approx(7.0).margin(1e-12));
  CHECK(at(ring, 350 * kMs).mode == c::SampleMode::Extrapolated);
  // Beyond: held at the value extrapolated to the cap.
  CHECK(at(ring, 351 * kMs).value == Approx(7.0).margin(1e-12));
  CHECK(at(ring, 10'000 * kMs).value == Approx(7.0).margin(1e-12));
  CHECK(at(ring, 10'000 * kMs).mode == c::SampleMode::HeldAtCap);

  SECTION("the cap is configurable") {
    c::InterpolationConfig config;
    config.extrapolation_max_us = 50 * kMs;
    CHECK(at(ring, 10'000 * kMs, config).value == Approx(4.0).margin(1e-12));
  }
}

TEST_CASE("The step is the average of the last four gaps under jitter (at least the last gap)",
          "[interpolation]") {
  // 20 m/s sent with jitter, then a hitch: the last two samples 10 ms apart.
  c::SampleRing<double> ring(32);
  const std::int64_t times_ms[] = {0, 40, 100, 140, 200, 210};
  const double xs[] = {0.0, 0.8, 2.0, 2.8, 4.0, 4.2};
  for (int i = 0; i < 6; ++i) ring.push(times_ms[i] * kMs, xs[i]);
  // Gaps 60, 40, 60, 10: (210 - 40) / 4 = 42.5 ms.
  CHECK(ring.step_us(c::InterpolationConfig{}) == 42'500);
  // 85 ms past the newest: alpha = 1 + 85 / 42.5 = 3 on (4.0 -> 4.2): 4.6,
  // where a 10 ms step would throw it to 5.9.
  CHECK(at(ring, 295 * kMs).value == Approx(4.6).margin(1e-9));

  SECTION("a last gap longer than the average is the step") {
    c::SampleRing<double> slow(32);
    const std::int64_t t2[] = {0, 50, 100, 150, 300};
    for (int i = 0; i < 5; ++i) slow.push(t2[i] * kMs, static_cast<double>(i));
    // Average (300 - 0) / 4 = 75 ms, last gap 150 ms: the step is 150 ms.
    CHECK(slow.step_us(c::InterpolationConfig{}) == 150 * kMs);
  }
}

TEST_CASE("With two samples the step is at least 50 ms", "[interpolation]") {
  c::SampleRing<double> ring(32);
  ring.push(0, 0.0);
  ring.push(20 * kMs, 1.0);  // two samples 20 ms apart
  CHECK(ring.step_us(c::InterpolationConfig{}) == 50 * kMs);
  // 25 ms past: alpha = 1 + 25 / 50 = 1.5.
  CHECK(at(ring, 45 * kMs).value == Approx(1.5).margin(1e-12));

  c::SampleRing<double> wide(32);
  wide.push(0, 0.0);
  wide.push(100 * kMs, 1.0);  // 100 ms apart: the gap itself
  CHECK(wide.step_us(c::InterpolationConfig{}) == 100 * kMs);
  CHECK(at(wide, 150 * kMs).value == Approx(1.5).margin(1e-12));
}

TEST_CASE(
    "Before the oldest sample the oldest is held; one sample is returned; none gives the fallback",
    "[interpolation]") {
  c::SampleRing<double> ring(32);
  CHECK(at(ring, 0).value == -1.0);
  CHECK(at(ring, 0).mode == c::SampleMode::Empty);
  ring.push(100 * kMs, 7.0);
  CHECK(at(ring, 0).value == 7.0);
  CHECK(at(ring, 500 * kMs).mode == c::SampleMode::Single);
  ring.push(200 * kMs, 9.0);
  CHECK(at(ring, 50 * kMs).value == 7.0);
  CHECK(at(ring, 50 * kMs).mode == c::SampleMode::HoldOldest);
  ring.reset();
  CHECK(ring.empty());
  CHECK(at(ring, 150 * kMs).mode == c::SampleMode::Empty);
}

TEST_CASE("Rotation extrapolation is clamped to 1.2 x the last step's turn; position is not",
          "[interpolation]") {
  const c::InterpolationConfig config;
  c::PoseTrack track(config);
  track.push(0, c::RenderPose{0.0, 0.0, 0.0, 0.0});
  track.push(100 * kMs, c::RenderPose{1.0, 0.0, 0.0, 0.1});
  // 100 ms past the newest with a 100 ms step: alpha 2.
  const auto s = track.sample(200 * kMs, config);
  CHECK(s.mode == c::SampleMode::Extrapolated);
  CHECK(s.value.x_m == Approx(2.0).margin(1e-12));
  CHECK(s.value.heading_rad == Approx(0.12).margin(1e-12));  // 0.1 x 1.2, not 0.2
  // Between samples the heading follows alpha.
  CHECK(track.sample(50 * kMs, config).value.heading_rad == Approx(0.05).margin(1e-12));

  SECTION("headings blend along the shortest arc across +-pi") {
    c::PoseTrack wrap(config);
    wrap.push(0, c::RenderPose{0.0, 0.0, 0.0, 3.1});
    wrap.push(100 * kMs, c::RenderPose{0.0, 0.0, 0.0, -3.1});
    const double mid = wrap.sample(50 * kMs, config).value.heading_rad;
    CHECK(std::abs(mid) == Approx(std::numbers::pi).margin(1e-9));
    CHECK(c::heading_delta_rad(3.1, -3.1) == Approx(2.0 * std::numbers::pi - 6.2).margin(1e-12));
  }
}

TEST_CASE("ServerClock: the first Delta sets the estimate, jitter is smoothed, a jump snaps",
          "[interpolation][clock]") {
  c::ServerClock clock;
  CHECK_FALSE(clock.server_time_at(0).has_value());
  clock.observe(1'000'000, 50'000);  // server 1 s when local 50 ms
  REQUIRE(clock.has_estimate());
  CHECK(*clock.server_time_at(50'000) == 1'000'000);
  CHECK(*clock.server_time_at(150'000) == 1'100'000);

  // Frames every 100 ms, each delayed by 0..20 ms at random-looking amounts.
  const std::int64_t delay_us[] = {0, 20'000, 5'000, 15'000, 10'000, 0, 20'000, 5'000};
  double worst_error = 0.0;
  for (int k = 1; k <= 400; ++k) {
    const std::int64_t server = 1'000'000 + k * 100'000;
    const std::int64_t local = 50'000 + k * 100'000 + delay_us[k % 8];
    clock.observe(server, local);
    if (k > 100) worst_error = std::max(worst_error, std::abs(clock.offset_us() - 950'000.0));
  }
  // The estimate stays within the jitter band (0..20 ms of delay), never
  // following a single late frame all the way.
  CHECK(worst_error <= 20'000.0);
  CHECK(clock.snaps() == 0);

  // A restore sends the server 60 s back: the estimate jumps at once.
  clock.observe(1'000'000, 50'000 + 401 * 100'000);
  CHECK(clock.snaps() == 1);
  CHECK(*clock.server_time_at(50'000 + 401 * 100'000) == 1'000'000);
}
