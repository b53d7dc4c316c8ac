// Prints random cases of the v2 motion arithmetic with the C++ reference's
// answers (proto/src/motion.cpp), one per line, for test_motion_reference.py
// to compare bustle_client.motion against:
//   P s_mm speed_mmps anchor_step step step_us lane_length_mm -> predicted
//   S n x0 y0 ... s x y z heading            (doubles as C99 hex floats)
//   R hexbytes |error| index,lane_changed,lane,s_mm,speed ...
// Usage: bustle_motion_vectors [seed] [cases per kind]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bustle/proto/motion.hpp"

using namespace bustle::proto;

int main(int argc, char** argv) {
  const unsigned long long seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  const int n_cases = argc > 2 ? std::atoi(argv[2]) : 2000;
  std::mt19937_64 rng(seed);
  // Wide and small values alike: shifting by a random amount spreads magnitudes.
  auto wide = [&](unsigned max_shift) { return rng() >> (rng() % max_shift); };
  for (int i = 0; i < n_cases; ++i) {
    MotionAnchor a{0, static_cast<std::uint32_t>(rng()), static_cast<std::uint32_t>(wide(40)),
                   rng() % 1000};
    const std::uint64_t step = rng() % 8 == 0 ? a.step - rng() % 3 : a.step + wide(64);
    const auto us = static_cast<std::uint32_t>(wide(40));
    const auto len = static_cast<std::uint32_t>(rng());
    std::printf("P %u %u %llu %llu %u %u %u\n", a.s_mm, a.speed_mmps,
                static_cast<unsigned long long>(a.step), static_cast<unsigned long long>(step), us,
                len, predict_s_mm(a, step, us, len));
  }
  for (int i = 0; i < n_cases; ++i) {
    const int n = static_cast<int>(rng() % 7);
    std::vector<double> xs, ys;
    for (int k = 0; k < n; ++k) {
      if (k > 0 && rng() % 4 == 0) {  // zero-length segments
        xs.push_back(xs.back());
        ys.push_back(ys.back());
      } else {
        xs.push_back(std::ldexp(static_cast<double>(static_cast<std::int64_t>(rng())), -50));
        ys.push_back(std::ldexp(static_cast<double>(static_cast<std::int64_t>(rng())), -52));
      }
    }
    const auto lane = LanePolyline::from_points(xs, ys, 1.5, 0);
    // mostly within the lane, sometimes before its start or past its end
    const double s = rng() % 5 == 0 ? lane.length_m * (static_cast<double>(rng() % 3) - 0.5)
                                    : lane.length_m * static_cast<double>(rng() % 1000001) / 1e6;
    const LanePose p = sample_lane(lane, s);
    std::printf("S %d", n);
    for (int k = 0; k < n; ++k) std::printf(" %a %a", xs[k], ys[k]);
    std::printf(" %a %a %a %a %a\n", s, p.x_m, p.y_m, p.z_m, p.heading_rad);
  }
  for (int i = 0; i < n_cases; ++i) {
    const int n = static_cast<int>(rng() % 16);
    std::vector<std::uint8_t> bytes;
    for (int k = 0; k < n; ++k)
      bytes.push_back(static_cast<std::uint8_t>(rng() % 3 ? rng() & 0x7f : rng() & 0xff));
    std::vector<MotionRecord> out;
    const std::string err = read_motion(bytes, out);
    std::printf("R ");
    for (auto b : bytes) std::printf("%02x", b);
    std::printf(" |%s|", err.c_str());
    if (err.empty()) {
      for (const auto& r : out)
        std::printf(" %u,%d,%u,%u,%u", r.index, r.lane_changed ? 1 : 0, r.lane, r.s_mm,
                    r.speed_mmps);
    }
    std::printf("\n");
  }
  return 0;
}
