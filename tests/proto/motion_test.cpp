// The shared motion arithmetic (proto/motion.hpp): to_mm's hand-written
// rounding equals the definition it replaced, std::round of metres x 1000
// clamped to [0, 2^32 - 1] with NaN to 0, on the edges and on four million
// values from a fixed sequence.
#include "bustle/proto/motion.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

using bustle::proto::to_mm;

namespace {

std::uint32_t reference_to_mm(double metres) {
  const double mm = std::round(metres * 1000.0);
  if (!(mm > 0.0)) return 0;
  return mm >= 4294967295.0 ? UINT32_MAX : static_cast<std::uint32_t>(mm);
}

std::uint64_t next(std::uint64_t& state) {  // splitmix64, fixed seed: same values every run
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

TEST_CASE("to_mm rounds half away from zero and clamps, exactly as std::round did") {
  const double inf = std::numeric_limits<double>::infinity();
  const double edges[] = {0.0,
                          -0.0,
                          0.0004999999999,
                          0.0005,
                          0.00049999999999999996,
                          0.0015,
                          0.0025,
                          1.2345,
                          2.5005,
                          -0.0005,
                          -1.0,
                          4294967.2945,
                          4294967.2944999,
                          4294967.295,
                          4294967.296,
                          1e300,
                          -1e300,
                          inf,
                          -inf,
                          std::numeric_limits<double>::quiet_NaN(),
                          std::nextafter(0.0005, 0.0),
                          std::nextafter(0.0005, 1.0),
                          std::numeric_limits<double>::denorm_min()};
  for (const double m : edges) {
    INFO("metres " << m);
    CHECK(to_mm(m) == reference_to_mm(m));
  }
  // Every x.5 mm boundary below 10 km, and its neighbours.
  for (std::uint32_t mm = 0; mm < 10'000'000; mm += 997) {
    const double half = (mm + 0.5) / 1000.0;
    for (const double m : {half, std::nextafter(half, 0.0), std::nextafter(half, 1e9)}) {
      INFO("metres " << m);
      REQUIRE(to_mm(m) == reference_to_mm(m));
    }
  }
  // Random values over the range that matters (lane positions and speeds,
  // up to ~4300 km) and random bit patterns (any double).
  std::uint64_t state = 20261205;
  for (int k = 0; k < 2'000'000; ++k) {
    const double m = static_cast<double>(next(state) >> 11) * 0x1p-53 * 4.3e6;
    INFO("metres " << m);
    REQUIRE(to_mm(m) == reference_to_mm(m));
  }
  for (int k = 0; k < 2'000'000; ++k) {
    const std::uint64_t bits = next(state);
    double m;
    std::memcpy(&m, &bits, sizeof m);
    INFO("bits " << bits);
    REQUIRE(to_mm(m) == reference_to_mm(m));
  }
}
