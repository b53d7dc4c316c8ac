// `bustle status`: the server's Stats (clock, step, entities, step time, digest),
// and through a gateway each district's step and digest.
#include <chrono>
#include <cinttypes>

#include "commands/commands.hpp"
#include "commands/common.hpp"
#include "json_output.hpp"

namespace bustle::cli::commands {

int run_status(const CliOptions& o, std::FILE* out, std::FILE* err) {
  Client c(client_options(o, wire::Role::Viewer));
  if (const int rc = connect(c, o, err); rc != kExitOk) return rc;
  const auto r = c.command(client::QueryStatsCmd{}, std::chrono::milliseconds(o.timeout_ms));
  if (!r.ok()) return report(err, o, "query_stats", r);
  if (!r.value.accepted() || !r.value.stats) {
    std::fprintf(err, "bustle status: query_stats %s: %s %s\n",
                 wire::EnumNameCommandStatus(r.value.status),
                 wire::EnumNameRejectReason(r.value.reason), r.value.message.c_str());
    return r.value.accepted() ? kExitServer : kExitRejected;
  }
  const client::WelcomeInfo& w = c.welcome();
  const client::StatsInfo& s = *r.value.stats;
  if (o.json) {
    json::print(out, {{"server",
                       {{"version", w.server_version},
                        {"address", c.connection().peer()},
                        {"scenario_id", w.scenario_id},
                        {"protocol_version", w.protocol_version},
                        {"session_id", w.session_id}}},
                      {"stats", json::stats(s)}});
    return kExitOk;
  }
  const double rate_hz = s.step_us > 0 ? 1e6 / static_cast<double>(s.step_us) : 0.0;
  std::fprintf(out, "bustle-server %s at %s (scenario %s, protocol %u, session %" PRIu32 ")\n",
               w.server_version.c_str(), c.connection().peer().c_str(), w.scenario_id.c_str(),
               unsigned{w.protocol_version}, w.session_id);
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "step", s.step);
  std::fprintf(out, "  %-18s %.3f s\n", "sim time", static_cast<double>(s.sim_time_us) / 1e6);
  std::fprintf(out, "  %-18s %" PRIu32 " us (%.2f Hz)\n", "step length", s.step_us, rate_hz);
  std::fprintf(out, "  %-18s %s%s\n", "clock", wire::EnumNameClockMode(s.clock_mode),
               s.paused ? " (paused)" : " (running)");
  std::fprintf(out, "  %-18s %" PRIu32 "\n", "pedestrians", s.pedestrians);
  std::fprintf(out, "  %-18s %" PRIu32 "\n", "pedestrian target", s.pedestrian_target);
  std::fprintf(out, "  %-18s %" PRIu32 "\n", "entity capacity", s.entity_capacity);
  std::fprintf(out, "  %-18s %" PRIu32 "\n", "clients", s.clients);
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "spawned total", s.spawned_total);
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "despawned total", s.despawned_total);
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "commands accepted", s.commands_accepted);
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "commands rejected", s.commands_rejected);
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "dropped steps", s.dropped_steps);
  std::fprintf(out, "  %-18s %s\n", "recording",
               s.recording_failed ? "failed (stopped after a write error)"
               : s.recording      ? "yes"
                                  : "no");
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "recorded ticks", s.recorded_ticks);
  std::fprintf(
      out, "  %-18s %" PRIu32 " (full %" PRIu32 ", simulated %" PRIu32 ", coarse %" PRIu32 ")\n",
      "vehicles", s.vehicles, s.vehicles_full, s.vehicles_simulated, s.vehicles_coarse);
  std::fprintf(out,
               "  %-18s moving %" PRIu32 ", waiting at signal %" PRIu32 ", yielding %" PRIu32 "\n",
               "vehicle motion", s.vehicles_moving, s.vehicles_waiting, s.vehicles_yielding);
  std::fprintf(out, "  %-18s %" PRIu32 "\n", "tier deferred", s.tier_transitions_deferred);
  std::fprintf(out, "  %-18s %s (%.4f h)\n", "time of day", clock_time(s.hour).c_str(), s.hour);
  std::fprintf(out, "  %-18s %" PRIu32 " game s per s\n", "time scale", s.time_scale);
  std::fprintf(out, "  %-18s %" PRIu32 " (active %" PRIu32 ", dormant %" PRIu32 ")\n", "residents",
               s.residents, s.residents_active,
               s.residents >= s.residents_active ? s.residents - s.residents_active : 0u);
  std::fprintf(out,
               "  %-18s assigned %" PRIu32 ", unassigned %" PRIu32 " (%" PRIu32
               " past grace), released %" PRIu64 ", preserved %" PRIu64 "\n",
               "leases", s.leases_assigned, s.leases_unassigned, s.leases_unassigned_past_grace,
               s.leases_released_total, s.leases_preserved_total);
  std::fprintf(out, "  %-18s attached %" PRIu64 ", ready %" PRIu64 ", awaiting %" PRIu32 "\n",
               "spawn stages", s.spawn_attached_total, s.spawn_ready_total,
               s.spawn_awaiting_representation);
  std::fprintf(out, "  %-18s %" PRIu32 " (dropped over the cap %" PRIu32 ")\n", "client observers",
               s.client_observers, s.client_observers_dropped);
  std::fprintf(out,
               "  %-18s p50 %.1f us, p99 %.1f us, max %.1f us (last %" PRIu32 " steps; %" PRIu64
               " timed)\n",
               "step time", s.step_time_p50_us, s.step_time_p99_us, s.step_time_max_us,
               s.step_time_window, s.steps_timed_total);
  std::fprintf(out, "  %-18s", "step histogram");
  for (std::size_t i = 0; i < s.step_time_bucket_counts.size(); ++i) {
    if (s.step_time_bucket_counts[i] == 0) continue;  // only the buckets the window has
    if (i < s.step_time_bucket_le_us.size()) {
      std::fprintf(out, " <=%gus:%" PRIu32, s.step_time_bucket_le_us[i],
                   s.step_time_bucket_counts[i]);
    } else {
      std::fprintf(out, " +Inf:%" PRIu32, s.step_time_bucket_counts[i]);
    }
  }
  std::fprintf(out, "%s\n", s.step_time_window == 0 ? " none" : "");
  std::fprintf(out, "  %-18s %016" PRIx64 "%s\n", "digest", s.digest,
               s.districts.empty() ? "" : " (city: the districts' digests below)");
  // A gateway's districts (docs/districts.md): where each one is.
  for (const auto& d : s.districts) {
    std::fprintf(out, "  %-18s %s, step %" PRIu64 ", digest %016" PRIx64 ", %" PRIu32 " entities\n",
                 ("district " + d->id).c_str(), d->streaming ? "streaming" : "NOT STREAMING",
                 d->step, d->digest, d->entities);
  }
  std::fflush(out);
  return kExitOk;
}

}  // namespace bustle::cli::commands
