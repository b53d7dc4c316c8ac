// The two bustle-replay commands. Both return the process exit code.
#pragma once

#include <cstdio>

#include "bustle/replay/options.hpp"

namespace bustle::replay {

// verify: 0 all digests match, 1 a tick diverged (one DIVERGED line on
// `out`), 2 the file cannot be read or replayed (message on `err`).
int run_verify(const ReplayOptions& options, std::FILE* out, std::FILE* err);

// serve: streams until SIGINT/SIGTERM (0); 1 when it cannot listen, 2 when the
// file cannot be read or replayed at start.
int run_serve(const ReplayOptions& options);

}  // namespace bustle::replay
