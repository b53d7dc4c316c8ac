// The world's seeded pseudo-random generator.
//
// Our own small generators, so the sequence is the same with every compiler and
// standard library (std:: distributions are not specified bit-for-bit):
//   - SplitMix64 expands a 64-bit seed and derives independent streams;
//   - xoshiro256** (Blackman & Vigna) is the stream generator.
// Bounded integers use Lemire's multiply-shift with rejection (no modulo bias),
// doubles take the top 53 bits. The full state is four words, saved in
// checkpoints and folded into the digest.
#pragma once

#include <array>
#include <cstdint>

namespace bustle::core {

[[gnu::always_inline]] constexpr std::uint64_t splitmix64_next(std::uint64_t& state) {
  state += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A stateless 64-bit mix of one value (the SplitMix64 finaliser); used to
// derive per-entity decisions that must not depend on iteration order.
[[gnu::always_inline]] constexpr std::uint64_t mix64(std::uint64_t x) {
  std::uint64_t s = x;
  return splitmix64_next(s);
}

class Prng {
 public:
  explicit Prng(std::uint64_t seed = 0) { reseed(seed); }

  void reseed(std::uint64_t seed) {
    std::uint64_t sm = seed;
    for (auto& w : state_) w = splitmix64_next(sm);
  }

  std::uint64_t next_u64() {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, bound). [Limit: bound >= 1]
  std::uint32_t next_below(std::uint32_t bound) {
    std::uint64_t m = static_cast<std::uint64_t>(next_u32()) * bound;
    auto low = static_cast<std::uint32_t>(m);
    if (low < bound) {
      const std::uint32_t threshold = static_cast<std::uint32_t>(-bound) % bound;
      while (low < threshold) {
        m = static_cast<std::uint64_t>(next_u32()) * bound;
        low = static_cast<std::uint32_t>(m);
      }
    }
    return static_cast<std::uint32_t>(m >> 32);
  }

  std::uint32_t next_u32() { return static_cast<std::uint32_t>(next_u64() >> 32); }

  // Uniform in [0, 1).
  double next_unit() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  // An independent generator for one purpose (e.g. "spawn", "vehicles"),
  // derived from this one's current state without advancing it.
  Prng derive(std::uint64_t purpose) const {
    Prng p;
    std::uint64_t sm = state_[0] ^ mix64(purpose ^ state_[3]);
    for (auto& w : p.state_) w = splitmix64_next(sm);
    return p;
  }

  const std::array<std::uint64_t, 4>& state() const { return state_; }
  void set_state(const std::array<std::uint64_t, 4>& s) { state_ = s; }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<std::uint64_t, 4> state_{};
};

}  // namespace bustle::core
