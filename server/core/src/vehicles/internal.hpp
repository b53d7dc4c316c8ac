// Helpers shared by the VehicleSystem's source files (vehicles/*.cpp): the
// queue order of invariant 2 and the digest folding of a vehicle's word,
// which the kernel (kernel.cpp) and the checkpoint (checkpoint.cpp) must
// compute identically. Not part of the core's interface.
//
// The helpers sit in an unnamed namespace, as they did when vehicles.cpp was
// one file: each source file gets its own copy, inlined as before.
#pragma once

#include <bit>
#include <cstdint>

#include "bustle/core/digest.hpp"
#include "bustle/core/vehicles.hpp"

namespace bustle::core {
namespace {

constexpr double kEps = 1e-9;

// Invariant 2: the order of two neighbours in a garage queue.
inline bool queue_in_order(const QueuedRequest& ahead, const QueuedRequest& behind) {
  return ahead.priority > behind.priority ||
         (ahead.priority == behind.priority && ahead.enqueue_ordinal < behind.enqueue_ordinal);
}

// Digest folding for the per-step words (vehicles, garages, signals): two
// words per 64x64->128-bit multiply (hi ^ lo), each under its own key, so a
// record of 2k words costs k multiplies and no dependency chain; summing the
// results keeps records independent of each other. Keys are distinct odd
// constants; `salt` binds a record to its position (garage or signal index).
__extension__ using U128 = unsigned __int128;
[[gnu::always_inline]] inline std::uint64_t mum(std::uint64_t a, std::uint64_t b) {
  const U128 r = static_cast<U128>(a) * b;
  return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
}
constexpr std::uint64_t kFoldKey = 0x9E3779B97F4A7C15ull;
[[gnu::always_inline]] inline std::uint64_t fold_pair(std::uint64_t a, std::uint64_t b,
                                                      std::uint64_t k) {
  return mum(a ^ (kFoldKey * (2 * k + 1)), b ^ (0xD6E8FEB86659FD93ull * (2 * k + 1)));
}

// One vehicle's digest word: its fields in pairs through fold_pair (four
// independent multiplies, not a chain), summed, mixed with the hash of the
// fields that never change after dispatch.
[[gnu::always_inline]] inline std::uint64_t vehicle_flags(std::uint8_t strategy,
                                                          std::uint8_t policy, std::uint8_t reason,
                                                          SimTier tier, std::uint8_t despawn) {
  return std::uint64_t{strategy} | std::uint64_t{policy} << 8 | std::uint64_t{reason} << 16 |
         std::uint64_t{tier_index(tier)} << 24 | std::uint64_t{despawn} << 32;
}
[[gnu::always_inline]] inline std::uint64_t fold_vehicle(
    std::uint64_t cold, std::uint32_t route_index, LaneIndex lane, double s_m, double speed_mps,
    std::uint64_t flags, EntityId leader, std::uint64_t steps_advanced, std::uint64_t waiting_since,
    std::uint64_t last_advance_step) {
  const std::uint64_t acc =
      fold_pair((std::uint64_t{route_index} << 32) | lane, std::bit_cast<std::uint64_t>(s_m), 1) +
      fold_pair(std::bit_cast<std::uint64_t>(speed_mps), flags, 2) +
      fold_pair(leader.packed(), steps_advanced, 3) +
      fold_pair(waiting_since, last_advance_step, 4);
  return mix64(acc ^ cold);
}

}  // namespace

}  // namespace bustle::core
