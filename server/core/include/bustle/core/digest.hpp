// A 64-bit digest over a canonical encoding of authoritative state.
//
// Word-at-a-time: each 64-bit input word is mixed (SplitMix64 finaliser) and
// folded into the running value with a rotate-multiply, so the result depends
// on both the words and their order. Not cryptographic: it detects divergence
// between runs of the same build, which is all replay and clients need.
// Doubles are hashed by bit pattern (so -0.0 != 0.0, NaN payloads count).
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>

#include "bustle/core/prng.hpp"

namespace bustle::core {

class Digest {
 public:
  // Forced inline: the per-entity loops call these hundreds of thousands of
  // times per step, and GCC stops inlining them in large functions.
  [[gnu::always_inline]] Digest& u64(std::uint64_t w) {
    h_ = (rotl(h_ ^ mix64(w), 29) * 0x9E3779B97F4A7C15ull) + 0x632BE59BD9B4E019ull;
    return *this;
  }
  [[gnu::always_inline]] Digest& u32(std::uint32_t w) { return u64(w); }
  [[gnu::always_inline]] Digest& f64(double d) { return u64(std::bit_cast<std::uint64_t>(d)); }
  Digest& boolean(bool b) { return u64(b ? 1u : 0u); }
  Digest& str(std::string_view s) {
    u64(s.size());
    std::uint64_t w = 0;
    int n = 0;
    for (const char c : s) {
      w = (w << 8) | static_cast<std::uint8_t>(c);
      if (++n == 8) {
        u64(w);
        w = 0;
        n = 0;
      }
    }
    if (n != 0) u64(w);
    return *this;
  }
  // Section tags keep adjacent variable-length collections from aliasing.
  Digest& tag(std::uint64_t t) { return u64(0xB5A1'0000'0000'0000ull | t); }

  [[gnu::always_inline]] std::uint64_t value() const { return mix64(h_); }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t h_ = 0x243F6A8885A308D3ull;
};

}  // namespace bustle::core
