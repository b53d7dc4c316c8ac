// Vehicle queries: garages (queues, mouths, dispatch), signals, and one vehicle.
#include <chrono>
#include <cinttypes>

#include "commands/commands.hpp"
#include "commands/common.hpp"
#include "json_output.hpp"

namespace bustle::cli::commands {

int run_garages(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandReply r;
  if (const int rc = run_query(o, client::QueryGaragesCmd{}, r, err); rc != kExitOk) return rc;
  if (!r.garages) return missing(o, "a garage list", err);
  const auto& list = *r.garages;
  if (o.json) return print_list(out, "garages", list, json::garage, r.applied_step);
  const int w = id_width(list);
  std::fprintf(out, "%-*s  %6s  %10s  %11s  %-15s  %11s  %8s  %s\n", w, "ID", "QUEUED",
               "DISPATCHED", "MANAGED/CAP", "LAST GATE", "TURNAROUNDS", "CANCELED",
               "REJECTED INVALID/DUPLICATE/FULL");
  for (const auto& g : list) {
    const std::string managed = std::to_string(g.managed) + "/" + std::to_string(g.capacity);
    const std::string rejected_counts = std::to_string(g.rejected_invalid) + "/" +
                                        std::to_string(g.rejected_duplicate) + "/" +
                                        std::to_string(g.rejected_queue_full);
    std::fprintf(out, "%-*s  %6zu  %10" PRIu32 "  %11s  %-15s  %11" PRIu64 "  %8" PRIu64 "  %s\n",
                 w, g.id.c_str(), g.queued.size(), g.dispatched, managed.c_str(),
                 wire::EnumNameDispatchGate(g.last_gate), g.turnarounds, g.canceled,
                 rejected_counts.c_str());
  }
  // Per garage: each queued request in dispatch order with its EnqueueOrdinal,
  // priority and prototype, the vehicles in its mouth, then the dispatched
  // request ids.
  for (const auto& g : list) {
    for (const auto& q : g.queue) {
      std::fprintf(out, "queued %s: %s ordinal %" PRIu64 " priority %" PRId32 " prototype %s\n",
                   g.id.c_str(), q->request_id.c_str(), q->enqueue_ordinal, q->priority,
                   q->prototype.c_str());
    }
    if (!g.mouth.empty()) {  // dispatched, waiting for the entrance, front first
      std::fprintf(out, "mouth %s (%zu of %" PRIu32 "):", g.id.c_str(), g.mouth.size(),
                   g.mouth_capacity);
      for (const auto& m : g.mouth) std::fprintf(out, " %s", m->vehicle_id.c_str());
      std::fputc('\n', out);
    }
    if (g.dispatched_ids.empty()) continue;
    std::fprintf(out, "dispatched %s:", g.id.c_str());
    for (const auto& id : g.dispatched_ids) std::fprintf(out, " %s", id.c_str());
    std::fputc('\n', out);
  }
  if (!list.empty()) {
    std::fprintf(out, "content plan: %" PRIu64 " of %" PRIu32 " requests injected\n",
                 list.front().plan_injected, list.front().plan_total);
  }
  std::fprintf(out, "%zu garage%s at step %" PRIu64 "\n", list.size(), list.size() == 1 ? "" : "s",
               r.applied_step);
  std::fflush(out);
  return kExitOk;
}

int run_signals(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandReply r;
  if (const int rc = run_query(o, client::QuerySignalsCmd{}, r, err); rc != kExitOk) return rc;
  if (!r.signals) return missing(o, "a signal list", err);
  const auto& list = *r.signals;
  if (o.json) return print_list(out, "signals", list, json::signal, r.applied_step);
  const int w = id_width(list);
  std::fprintf(out, "%-*s  %6s  %-6s  %10s  %8s\n", w, "ID", "LANE", "PHASE", "ELAPSED", "CYCLES");
  for (const auto& sig : list) {
    std::fprintf(out, "%-*s  %6" PRIu32 "  %-6s  %8.1f s  %8" PRIu64 "\n", w, sig.id.c_str(),
                 sig.lane, wire::EnumNameSignalPhase(sig.phase),
                 static_cast<double>(sig.phase_elapsed_us) / 1e6, sig.cycles);
  }
  std::fprintf(out, "%zu signal%s at step %" PRIu64 "\n", list.size(), list.size() == 1 ? "" : "s",
               r.applied_step);
  std::fflush(out);
  return kExitOk;
}

int run_vehicle(const CliOptions& o, std::FILE* out, std::FILE* err) {
  const client::EntityId id{o.entity_index, o.entity_generation};
  client::CommandReply r;
  if (const int rc = run_query(o, client::QueryVehicleCmd{id}, r, err); rc != kExitOk) return rc;
  if (!r.vehicle) return missing(o, "the vehicle", err);
  const client::VehicleReport& v = *r.vehicle;
  if (o.json) return print_object(out, "vehicle", json::vehicle(v), r.applied_step);
  std::fprintf(out, "vehicle %s at step %" PRIu64 "\n", client::id_text(v.entity()).c_str(),
               r.applied_step);
  std::fprintf(out, "  %-20s %s\n", "vehicle id", v.vehicle_id.c_str());
  std::fprintf(out, "  %-20s %s\n", "garage", v.garage.c_str());
  std::fprintf(out, "  %-20s %s\n", "request", v.request_id.c_str());
  std::fprintf(out, "  %-20s %s\n", "prototype", v.prototype.c_str());
  std::fprintf(out, "  %-20s %" PRIu32 "\n", "route index", v.route_index);
  std::fprintf(out, "  %-20s %" PRIu32 "\n", "lane", v.lane);
  std::fprintf(out, "  %-20s %.3f m (alpha %.4f)\n", "distance on lane", v.s_m, v.alpha);
  std::fprintf(out, "  %-20s %.3f, %.3f m\n", "position", v.x_m, v.y_m);
  std::fprintf(out, "  %-20s %.3f m/s\n", "speed", v.speed_mps);
  std::fprintf(out, "  %-20s %s\n", "strategy", wire::EnumNameVehicleStrategyState(v.strategy));
  std::fprintf(out, "  %-20s %s\n", "policy", wire::EnumNameControlPolicy(v.policy));
  std::fprintf(out, "  %-20s %s\n", "reason", wire::EnumNamePolicyReason(v.reason));
  std::fprintf(out, "  %-20s %s\n", "tier", wire::EnumNameSimTier(v.tier));
  std::fprintf(out, "  %-20s %s\n", "leader",
               v.has_leader() ? client::id_text(v.leader_entity()).c_str() : "none");
  std::fprintf(out, "  %-20s %" PRIu64 "\n", "steps advanced", v.steps_advanced);
  std::fprintf(out, "  %-20s %s\n", "awaiting turnaround", v.awaiting_turnaround ? "yes" : "no");
  std::fprintf(out, "  %-20s %s\n", "despawn requested", v.despawn_requested ? "yes" : "no");
  std::fflush(out);
  return kExitOk;
}

}  // namespace bustle::cli::commands
