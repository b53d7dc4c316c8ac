// The bustle-replay commands. Each returns the process exit code (options.hpp).
#pragma once

#include <cstdio>

#include "bustle/replay/options.hpp"

namespace bustle::replay {

// verify: 0 all digests match, 1 a tick or keyframe diverged (one DIVERGED
// line on `out`, or with --json one JSON object), 2 the file cannot be read or
// replayed (message on `err`), 3 an invariant broke (--check-invariants).
// A progress line goes to `err` when it is a terminal (verify.hpp).
int run_verify(const ReplayOptions& options, std::FILE* out, std::FILE* err);

// serve: streams until SIGINT/SIGTERM (0); 1 when it cannot listen, 2 when the
// file cannot be read or replayed at start.
int run_serve(const ReplayOptions& options);

// diff: 0 every tick's recorded step and digest agree and the lengths match,
// 1 they differ, also only in length (the report on `out`), 2 a file cannot
// be read or replayed (message on `err`).
int run_diff(const ReplayOptions& options, std::FILE* out, std::FILE* err);

}  // namespace bustle::replay
