// bustle-replay verify: headless re-simulation with a digest check per tick.
#include <chrono>
#include <cinttypes>
#include <optional>
#include <string>

#include "bustle/replay/commands.hpp"
#include "bustle/replay/replayer.hpp"

namespace bustle::replay {

int run_verify(const ReplayOptions& options, std::FILE* out, std::FILE* err) {
  auto fail = [&](const std::string& message) {
    std::fprintf(err, "bustle-replay: %s\n", message.c_str());
    return 2;
  };
  std::unique_ptr<Replayer> rep;
  if (ReplayError e = Replayer::open(options.file, rep); !e.ok()) return fail(e.message);
  if (rep->last_tick() == 0)
    return fail(options.file + ": table recording_ticks: no ticks recorded, nothing to verify");

  std::uint64_t first = 1;
  if (options.from_step) {
    std::optional<std::uint64_t> t;
    if (ReplayError e = rep->first_tick_at_step(*options.from_step, t); !e.ok())
      return fail(e.message);
    if (!t) {
      return fail(options.file + ": table recording_ticks: no tick reaches step " +
                  std::to_string(*options.from_step) + " (--from-step)");
    }
    first = *t;
  }
  std::uint64_t last = rep->last_tick();
  if (options.to_step) {
    std::optional<std::uint64_t> t;
    if (ReplayError e = rep->first_tick_at_step(*options.to_step, t, first); !e.ok())
      return fail(e.message);
    if (t) last = *t;
  }

  const auto began = std::chrono::steady_clock::now();
  if (ReplayError e = rep->seek(first); !e.ok()) return fail(e.message);
  std::uint64_t ticks = 0;
  std::uint64_t sim_us = 0;
  std::uint64_t step_first = 0;
  std::uint64_t step_last = 0;
  TickOutcome oc;
  while (rep->next_tick_number() <= last) {
    if (ReplayError e = rep->next_tick(oc); !e.ok()) return fail(e.message);
    if (oc.diverged()) {
      std::fprintf(out,
                   "DIVERGED at tick %" PRIu64 " step %" PRIu64 ": recorded %016" PRIx64
                   " replayed %016" PRIx64 "\n",
                   oc.tick, oc.recorded_step, oc.recorded_digest, oc.replayed_digest);
      if (oc.recorded_step != oc.replayed_step) {
        std::fprintf(err,
                     "bustle-replay: tick %" PRIu64 " recorded step %" PRIu64
                     " but replay reached step %" PRIu64 "\n",
                     oc.tick, oc.recorded_step, oc.replayed_step);
      }
      std::fflush(out);
      return 1;
    }
    if (options.check_invariants) {
      if (const std::string broken = rep->world().check_invariants(); !broken.empty()) {
        std::fprintf(out, "INVARIANT BROKEN at tick %" PRIu64 " step %" PRIu64 ": %s\n", oc.tick, oc.replayed_step,
                     broken.c_str());
        std::fflush(out);
        return 3;
      }
    }
    if (ticks == 0) step_first = oc.replayed_step;
    step_last = oc.replayed_step;
    ++ticks;
    sim_us += rep->world().step_us();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  const double real_s = static_cast<double>(sim_us) * 1e-6;
  std::fprintf(out,
               "OK verified %" PRIu64 " ticks (steps %" PRIu64 "..%" PRIu64
               ") in %.3f s, %.1fx real time\n",
               ticks, step_first, step_last, seconds, real_s / (seconds > 1e-9 ? seconds : 1e-9));
  std::fflush(out);
  return 0;
}

}  // namespace bustle::replay
