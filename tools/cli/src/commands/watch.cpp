// `bustle watch`: subscribes and prints one line per interval (entities, enters/moves/leaves
// per second, step time, digest), optionally from given observers.
#include <chrono>
#include <cinttypes>

#include "bustle/client/entity_mirror.hpp"
#include "commands/commands.hpp"
#include "commands/common.hpp"
#include "json_output.hpp"

namespace bustle::cli::commands {

int run_watch(const CliOptions& o, std::FILE* out, std::FILE* err) {
  Client c(client_options(o, wire::Role::Viewer));
  if (const int rc = connect(c, o, err); rc != kExitOk) return rc;
  client::SubscribeParams sub;
  for (const CliOptions::WatchObserver& w : o.watch_observers) {
    client::InterestObserver obs;
    obs.x_m = w.x_m;
    obs.y_m = w.y_m;
    obs.radius_m = w.radius_m;
    sub.observers.push_back(obs);
  }
  if (const auto s = c.subscribe(sub, std::chrono::milliseconds(o.timeout_ms)); !s.ok()) {
    if (s.status == ClientStatus::Rejected) return rejected(o, s.value, err);
    return report(err, o, "subscribe", s);
  }

  client::EntityMirror mirror;
  mirror.set_world(c.welcome());
  const auto interval = std::chrono::milliseconds(o.interval_ms);
  auto window_start = Clock::now();
  auto next_line = window_start + interval;
  client::MirrorCounters at_window_start = mirror.counters();
  std::uint32_t lines = 0;
  if (o.json) {
    json::print(out, {{"watching", c.connection().peer()},
                      {"clock_mode", wire::EnumNameClockMode(c.welcome().clock_mode)},
                      {"step_us", c.welcome().step_us},
                      {"observers", o.watch_observers.size()}});
  } else {
    std::fprintf(out, "watching %s (%s clock, %" PRIu32 " us steps, %s)\n",
                 c.connection().peer().c_str(), wire::EnumNameClockMode(c.welcome().clock_mode),
                 c.welcome().step_us,
                 o.watch_observers.empty()
                     ? "whole city"
                     : (std::to_string(o.watch_observers.size()) + " observers").c_str());
  }
  std::fflush(out);

  while (o.count == 0 || lines < o.count) {
    const auto now = Clock::now();
    if (now >= next_line) {
      const double seconds = std::chrono::duration<double>(now - window_start).count();
      const client::MirrorCounters& k = mirror.counters();
      auto per_s = [&](std::uint64_t total, std::uint64_t before) {
        return seconds > 0 ? static_cast<double>(total - before) / seconds : 0.0;
      };
      // Step time (Stats, the server's last 1024 steps): one QueryStats per line.
      const auto stats =
          c.command(client::QueryStatsCmd{}, std::chrono::milliseconds(o.timeout_ms));
      const client::StatsInfo* st = stats.ok() && stats.value.stats ? &*stats.value.stats : nullptr;
      if (o.json) {
        json::print(out, {{"step", mirror.last_step()},
                          {"entities", mirror.size()},
                          {"entered_per_s", per_s(k.entered, at_window_start.entered)},
                          {"moved_per_s", per_s(k.moved, at_window_start.moved)},
                          {"left_per_s", per_s(k.left, at_window_start.left)},
                          {"truncated", mirror.interest_truncated()},
                          {"digest", json::hex(mirror.last_digest())},
                          {"step_time_p50_us", st ? st->step_time_p50_us : 0.0},
                          {"step_time_p99_us", st ? st->step_time_p99_us : 0.0},
                          {"step_time_max_us", st ? st->step_time_max_us : 0.0}});
      } else {
        std::fprintf(out,
                     "step %-10" PRIu64
                     " entities %-7zu entered/s %-9.1f moved/s %-10.1f "
                     "left/s %-9.1f truncated %-7" PRIu32 " digest %016" PRIx64
                     " step_us p50 %.1f p99 %.1f max %.1f\n",
                     mirror.last_step(), mirror.size(), per_s(k.entered, at_window_start.entered),
                     per_s(k.moved, at_window_start.moved), per_s(k.left, at_window_start.left),
                     mirror.interest_truncated(), mirror.last_digest(),
                     st ? st->step_time_p50_us : 0.0, st ? st->step_time_p99_us : 0.0,
                     st ? st->step_time_max_us : 0.0);
      }
      std::fflush(out);
      ++lines;
      at_window_start = k;
      window_start = now;
      next_line += interval;
      if (next_line <= now) next_line = now + interval;  // fell behind: do not burst
      continue;
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_line - now) +
                      std::chrono::milliseconds(1);
    auto d = c.next_delta(wait);
    if (d.status == ClientStatus::Timeout) continue;  // a paused server sends no Deltas
    if (!d.ok()) return report(err, o, "watch", d);
    mirror.apply(d.value);
  }
  const client::MirrorCounters& k = mirror.counters();
  const std::uint64_t unknown =
      k.unknown_motion + k.unknown_changes + k.unknown_lefts + k.unknown_retiring;
  if (unknown + k.duplicate_enters > 0) {
    std::fprintf(err,
                 "bustle watch: %" PRIu64 " updates or leaves for entities not received, %" PRIu64
                 " duplicate enters\n",
                 unknown, k.duplicate_enters);
  }
  return kExitOk;
}

}  // namespace bustle::cli::commands
