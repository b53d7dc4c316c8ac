// `bustle population`: communities, residents, spawn pipeline, tiers, prevention,
// lane closures, observers and the spawn states, as one report.
#include <algorithm>
#include <cinttypes>

#include "commands/commands.hpp"
#include "commands/common.hpp"
#include "json_output.hpp"

namespace bustle::cli::commands {
namespace {

// The prevention lines of `bustle population`: level, units by state, the
// per-level totals of the levels that saw units, corpses.
void print_prevention(const client::PopulationReport& p, std::FILE* out) {
  std::fprintf(out,
               "  %-20s level %" PRIu32 ", units queued %" PRIu32 ", active %" PRIu32
               ", retiring %" PRIu32 "\n",
               "prevention", p.prevention_level, p.units_queued, p.units_active, p.units_retiring);
  for (std::size_t l = 0; l < p.level_queued.size(); ++l) {
    const auto at = [&](const std::vector<std::uint64_t>& v) { return l < v.size() ? v[l] : 0; };
    if (at(p.level_queued) == 0 && at(p.level_capped) == 0) continue;
    std::fprintf(out,
                 "    level %zu: queued %" PRIu64 ", spawned %" PRIu64 ", canceled %" PRIu64
                 ", despawned %" PRIu64 ", lost %" PRIu64 ", capped %" PRIu64 "\n",
                 l + 1, at(p.level_queued), at(p.level_spawned), at(p.level_canceled),
                 at(p.level_despawned), at(p.level_lost), at(p.level_capped));
  }
  std::fprintf(out,
               "  %-20s %" PRIu32 " (killed %" PRIu64 ", soft-deleted %" PRIu64
               ", force-deleted %" PRIu64 ", pressure-deleted %" PRIu64 ")\n",
               "corpses", p.corpses, p.corpses_killed, p.corpses_soft_deleted,
               p.corpses_force_deleted, p.corpses_pressure_deleted);
}

// The observers line of bustle population: points, the follow or its wait.
void print_observers(const client::PopulationReport& p, std::FILE* out) {
  std::fprintf(out, "  %-20s", "observers");
  for (std::size_t i = 0; i < p.observers_x_m.size() && i < p.observers_y_m.size(); ++i)
    std::fprintf(out, "%s (%.1f, %.1f)", i == 0 ? "" : ",", p.observers_x_m[i], p.observers_y_m[i]);
  if (p.followed != nullptr) {
    std::fprintf(out, " following %s",
                 client::id_text(client::EntityId::from_wire(*p.followed)).c_str());
  }
  if (p.follow_first_vehicle) std::fprintf(out, " (waiting to follow the first vehicle)");
  std::fprintf(out, "%s\n", p.observers_x_m.empty() ? " none" : "");
}

// The lane-closure lines of bustle population.
void print_lane_closures(const client::PopulationReport& p, std::FILE* out) {
  std::fprintf(out, "  %-20s", "closed lanes");
  for (std::size_t i = 0; i < p.closed_lanes.size(); ++i)
    std::fprintf(out, "%s %s", i == 0 ? "" : ",", p.closed_lanes[i].c_str());
  std::fprintf(out, "%s\n", p.closed_lanes.empty() ? " none" : "");
  std::fprintf(out,
               "  %-20s %" PRIu32 " pedestrians, %" PRIu32 " vehicles (closed %" PRIu64
               ", opened %" PRIu64 ", rerouted %" PRIu64 ", dead ends %" PRIu64
               ", spawns deferred %" PRIu64 ")\n",
               "waiting at closures", p.lane_waiting_pedestrians, p.lane_waiting_vehicles,
               p.lane_closures_total, p.lane_openings_total, p.lane_reroutes_total,
               p.lane_dead_ends_total, p.lane_spawns_deferred_total);
}

}  // namespace

int run_population(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandReply r;
  if (const int rc = run_query(o, client::QueryPopulationCmd{}, r, err); rc != kExitOk) return rc;
  if (!r.population) return missing(o, "the population", err);
  const client::PopulationReport& p = *r.population;
  if (o.json) return print_object(out, "population", json::population(p), r.applied_step);
  std::fprintf(out,
               "population at step %" PRIu64 ", time of day %s (%.4f h), time scale %" PRIu32
               " game s per s\n",
               r.applied_step, clock_time(p.hour).c_str(), p.hour, p.time_scale);

  const int w = id_width(p.communities);
  int zone_w = 4;
  for (const auto& cr : p.communities) zone_w = std::max(zone_w, static_cast<int>(cr->zone.size()));
  std::fprintf(out, "%-*s  %6s  %6s  %-*s  %6s  %7s  %8s\n", w, "ID", "BASE", "TARGET", zone_w,
               "ZONE", "ACTIVE", "DORMANT", "SAVEABLE");
  for (const auto& community : p.communities) {
    const client::CommunityReport& cr = *community;
    std::fprintf(out, "%-*s  %6" PRIu32 "  %6" PRIu32 "  %-*s  %6" PRIu32 "  %7" PRIu32 "  %8s\n",
                 w, cr.id.c_str(), cr.base_population, cr.target, zone_w,
                 cr.zone.empty() ? "-" : cr.zone.c_str(), cr.active, cr.dormant,
                 cr.saveable ? "yes" : "no");
  }
  std::fprintf(out, "%zu communit%s\n", p.communities.size(),
               p.communities.size() == 1 ? "y" : "ies");

  const std::uint32_t dormant =
      p.residents >= p.residents_active ? p.residents - p.residents_active : 0u;
  std::fprintf(
      out, "  %-20s %" PRIu32 ": active %" PRIu32 " (retiring %" PRIu32 "), dormant %" PRIu32 "\n",
      "residents", p.residents, p.residents_active, p.residents_retiring, dormant);
  std::fprintf(out,
               "  %-20s background %" PRIu32 ", spawned %" PRIu32 ", target %" PRIu32
               ", handoffs pending %" PRIu32 "\n",
               "pedestrians", p.background, p.spawned, p.pedestrian_target, p.handoffs_pending);
  std::fprintf(out,
               "  %-20s growth quota %" PRIu32 ", recycle quota %" PRIu32 ", interval %" PRIu32
               " ms, migration budget %" PRIu32 "\n",
               "lifecycle", p.growth_quota, p.recycle_quota, p.interval_ms, p.migration_budget);
  std::fprintf(out, "  %-20s %" PRIu64 " requested\n", "spawn pipeline", p.spawn_requested);
  std::fprintf(
      out, "  %-20s by cap %" PRIu32 ", by capacity %" PRIu32 ", by zone %" PRIu32 " (last step)\n",
      "spawn deferred", p.spawn_deferred_by_cap, p.spawn_deferred_by_capacity,
      p.spawn_deferred_by_zone);
  std::fprintf(out,
               "  %-20s displaced %" PRIu64 " (queued requests canceled for more important ones)\n",
               "spawn pressure", p.spawn_displaced_total);
  std::fprintf(out,
               "  %-20s quality %s: attached %" PRIu32 "/%" PRIu32 ", unattached %" PRIu32
               "/%" PRIu32 ", no slot %" PRIu64 "\n",
               "representation", p.quality.empty() ? "-" : p.quality.c_str(), p.attached_in_use,
               p.attached_limit, p.unattached_in_use, p.unattached_limit, p.no_slot_total);
  std::fprintf(
      out, "  %-20s orphans %" PRIu32 ", faded total %" PRIu64 ", fade skipped total %" PRIu64 "\n",
      "retiring", p.retiring, p.faded_total, p.fade_skipped_total);
  std::fprintf(out, "  %-20s", "despawns by reason");
  for (std::size_t i = 0; i < p.despawned_by_reason.size(); ++i) {
    // A retired value (2, common.fbs) has no name and is always 0.
    if (*wire::EnumNameDespawnReason(static_cast<wire::DespawnReason>(i)) == '\0') continue;
    std::fprintf(out, "%s %s %" PRIu64, i == 0 ? "" : ",",
                 despawn_reason_name(static_cast<wire::DespawnReason>(i)).c_str(),
                 p.despawned_by_reason[i]);
  }
  std::fprintf(out, "%s\n", p.despawned_by_reason.empty() ? " none" : "");
  std::fprintf(out, "  %-20s", "tiers");
  for (std::size_t i = 0; i < p.tiers.size(); ++i) {
    const char* tier = wire::EnumNameSimTier(static_cast<wire::SimTier>(i));
    std::fprintf(out, "%s %s %" PRIu32, i == 0 ? "" : ",",
                 *tier != '\0' ? tier : std::to_string(i).c_str(), p.tiers[i]);
  }
  std::fprintf(out, "%s (promoted %" PRIu32 ", demoted %" PRIu32 ", deferred %" PRIu32 ")\n",
               p.tiers.empty() ? " none" : "", p.tier_promoted, p.tier_demoted, p.tier_deferred);
  std::fprintf(out, "  %-20s %" PRIu32 " (overflow %" PRIu32 ", refused total %" PRIu64 ")\n",
               "forced full", p.forced_full, p.forced_overflow, p.force_full_refused);
  std::fprintf(out, "  %-20s %" PRIu32 "\n", "admission masked", p.admission_masked);
  print_prevention(p, out);
  print_lane_closures(p, out);
  print_observers(p, out);
  std::fprintf(out, "  %-20s fragments %" PRIu32 ", deficit %.3f, surplus %.3f, max deficit %.3f\n",
               "ledger", p.ledger_fragments, p.ledger_deficit, p.ledger_surplus,
               p.ledger_max_deficit);

  std::fprintf(out, "%-24s  %6s  %10s\n", "SPAWN STATE", "LIVE", "TOTAL");
  const std::size_t states = std::max(p.spawn_live.size(), p.spawn_totals.size());
  for (std::size_t i = 0; i < states; ++i) {
    const char* name = wire::EnumNameSpawnState(static_cast<wire::SpawnState>(i));
    std::fprintf(out, "%-24s  %6" PRIu32 "  %10" PRIu64 "\n",
                 *name != '\0' ? name : std::to_string(i).c_str(),
                 i < p.spawn_live.size() ? p.spawn_live[i] : 0u,
                 i < p.spawn_totals.size() ? p.spawn_totals[i] : std::uint64_t{0});
  }
  std::fflush(out);
  return kExitOk;
}

}  // namespace bustle::cli::commands
