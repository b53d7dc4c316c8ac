// bustle-replay verify, as a library (tests drive it without a process).
//
// A recording's keyframes cut it into segments: segment i runs from keyframe
// K_i to the tick before K_{i+1}. Each segment is checked on its own:
//   1. restore K_i (which proves the keyframe restores and that its state
//      hashes to its stored digest),
//   2. re-apply every tick's recorded commands and compare every tick's
//      step and digest with the recorded ones,
//   3. if K_{i+1} is a periodic keyframe, queue its tick's commands and
//      compare the state's digest with K_{i+1}'s stored digest (a restore
//      keyframe replaced the world, so nothing carries over it).
// If every segment passes, the chain of digests is the one an uninterrupted
// replay from K_0 produces, so segments can run on `jobs` threads at once.
// With jobs == 1 one world replays everything from K_0 and checks every
// periodic keyframe it passes the same way (Replayer rule 5): the sequential
// reference, with the same verdict by construction.
//
// The verdict is the earliest event, ordered by tick and, within one tick:
// a file error, then a keyframe mismatch (both before the tick's step), then
// the tick's digest, then a broken invariant. Segments after the earliest
// event found so far are skipped or stopped, never reported.
//
// Threads: each worker owns one Replayer (its own SQLite connection and
// World); the only shared state is the segment counter, the tick counter for
// progress and the earliest event tick (atomics) and the result slots, one
// per segment, each written by exactly one worker before it is joined.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "bustle/replay/options.hpp"

namespace bustle::replay {

enum class VerifyVerdict : std::uint8_t { Ok, Diverged, InvariantBroken, Error };

enum class DivergenceKind : std::uint8_t { Tick, Keyframe };

struct VerifyReport {
  VerifyVerdict verdict = VerifyVerdict::Ok;
  std::string error;  // Error: one line naming file, table, row and field
  // Diverged / InvariantBroken: where.
  DivergenceKind kind = DivergenceKind::Tick;
  std::uint64_t tick = 0;
  std::uint64_t step = 0;  // recorded step (keyframe: the keyframe's step)
  std::uint64_t replayed_step = 0;
  std::uint64_t recorded_digest = 0;  // keyframe: its stored digest
  std::uint64_t replayed_digest = 0;
  std::string invariant;  // InvariantBroken: which one
  // Totals over the verified ticks (Ok only).
  std::uint64_t ticks = 0;
  std::uint64_t step_first = 0;
  std::uint64_t step_last = 0;
  std::uint64_t sim_us = 0;
  double seconds = 0.0;
  std::uint32_t jobs = 1;         // threads used
  std::uint32_t segments = 1;     // keyframe-to-keyframe segments
  std::uint64_t ticks_total = 0;  // ticks in the verified range
};

// Called from the calling thread a few times per second while workers run
// (ticks done, ticks in range, seconds so far, worker threads).
using VerifyProgress = std::function<void(std::uint64_t, std::uint64_t, double, std::uint32_t)>;

VerifyReport verify_recording(const ReplayOptions& options, const VerifyProgress& progress = {});

// "1234/2955 ticks (41%)  812 ticks/s  ETA 2.1 s" (no line ending).
std::string format_progress(std::uint64_t done, std::uint64_t total, double seconds,
                            std::uint32_t jobs);

}  // namespace bustle::replay
