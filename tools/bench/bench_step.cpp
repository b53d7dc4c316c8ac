// `step` times World::step (p50/p99/max, agent updates per second, peak RSS).
#include <cinttypes>
#include <cstdio>

#include "bench_support.hpp"
#include "bustle/app/thread_phase_executor.hpp"
#include "report.hpp"

namespace bustle::bench {

int bench_step(const Args& a) {
  const auto s = scenario_for(a.agents);
  auto w = populated(a, s);
  bustle::app::ThreadPhaseExecutor pool(a.threads);
  w->set_phase_executor(&pool);
  const StepTimes t = time_steps(*w, a.steps, [] {});
  const double updates =
      static_cast<double>(w->pedestrians().size()) * static_cast<double>(a.steps);
  std::printf("step: %u agents, %" PRIu64 " steps, %u thread%s (digest included)\n",
              w->pedestrians().size(), a.steps, a.threads, a.threads == 1 ? "" : "s");
  print_step_times(t);
  std::printf("  agent updates/s  %.1f M\n", updates / t.total_s / 1e6);
  std::printf("  peak RSS  %.1f MiB\n", static_cast<double>(peak_rss_kb()) / 1024.0);
  std::printf("  final digest %016" PRIx64 "\n", w->digest());
  bustle::bench::figures() = {{"agents", w->pedestrians().size()},
                              {"steps", a.steps},
                              {"step_ms", step_times_json(t)},
                              {"agents_stepped_per_s", updates / t.total_s},
                              {"peak_rss_mib", static_cast<double>(peak_rss_kb()) / 1024.0},
                              {"digest", hex_digest(w->digest())}};
  return 0;
}

}  // namespace bustle::bench
