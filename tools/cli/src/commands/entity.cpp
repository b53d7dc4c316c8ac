// `bustle entity INDEX:GEN`: one entity on every axis (identity, lifecycle, tier,
// representation, population, lane, spawn, retiring).
#include <cinttypes>

#include "commands/commands.hpp"
#include "commands/common.hpp"
#include "json_output.hpp"

namespace bustle::cli::commands {

int run_entity(const CliOptions& o, std::FILE* out, std::FILE* err) {
  const client::EntityId id{o.entity_index, o.entity_generation};
  client::CommandReply r;
  if (const int rc = run_query(o, client::QueryEntityCmd{id}, r, err); rc != kExitOk) return rc;
  if (!r.entity_info) return missing(o, "the entity", err);
  const client::EntityReport& e = *r.entity_info;
  if (o.json) return print_object(out, "entity", json::entity(e), r.applied_step);
  auto name_or_dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  std::fprintf(out, "entity %s at step %" PRIu64 "\n", client::id_text(e.entity_id()).c_str(),
               r.applied_step);
  std::fprintf(out, "  %-20s %s %s, %s%s\n", "identity", client::id_text(e.entity_id()).c_str(),
               wire::EnumNameEntityKind(e.kind), e.alive ? "alive" : "not alive",
               e.saveable ? ", saveable" : "");
  std::fprintf(out, "  %-20s %s\n", "lifecycle", wire::EnumNameLifecycleState(e.lifecycle));
  std::fprintf(out, "  %-20s %s%s", "tier", wire::EnumNameSimTier(e.tier),
               e.forced_full ? " (forced full)" : "");
  std::fputc('\n', out);
  if (e.lifecycle == wire::LifecycleState::Active)
    std::fprintf(out, "  %-20s distance asks %s, capacity target %s, applied %s\n", "tier stages",
                 wire::EnumNameSimTier(e.requested_tier), wire::EnumNameSimTier(e.capacity_tier),
                 wire::EnumNameSimTier(e.tier));
  if (e.admission_masked) std::fprintf(out, "  %-20s %s\n", "admission mask", "movement held");
  if (e.corpse) std::fprintf(out, "  %-20s %s\n", "corpse", "killed, awaiting cleanup");
  if (e.response_level != 0)
    std::fprintf(out, "  %-20s level %" PRIu32 "\n", "response unit", e.response_level);
  std::fprintf(out, "  %-20s %s\n", "representation",
               wire::EnumNameRepresentationHint(e.representation));
  std::fprintf(out, "  %-20s priority %s, origin %s\n", "priority/origin",
               priority_name(e.priority).c_str(), wire::EnumNamePedestrianOrigin(e.origin));
  const std::string slot = e.work_slot >= 0 ? std::to_string(e.work_slot) : "-";
  std::fprintf(out, "  %-20s community %s, zone %s, work point %s, slot %s\n", "community/zone",
               name_or_dash(e.community).c_str(), name_or_dash(e.zone).c_str(),
               name_or_dash(e.work_point).c_str(), slot.c_str());
  if (e.work_slot >= 0) {
    std::fprintf(out, "  %-20s %s\n", "work anchor",
                 e.at_work_anchor ? "at its slot" : "not at its slot (walking, or no anchor)");
  }
  if (!e.profession.empty()) {
    std::fprintf(out, "  %-20s %s, %s: %s\n", "profession/phase", e.profession.c_str(),
                 e.schedule_phase.c_str(), name_or_dash(e.activity).c_str());
    std::fprintf(out, "  %-20s %" PRIu32 ", last portal %s\n", "migrations", e.migrations,
                 name_or_dash(e.last_portal).c_str());
  }
  if (e.lane >= 0) {
    std::fprintf(out, "  %-20s lane %" PRId32 ", s %.3f m, position %.3f, %.3f m\n",
                 "lane/position", e.lane, e.s_m, e.x_m, e.y_m);
  } else {
    std::fprintf(out, "  %-20s no lane, position %.3f, %.3f m\n", "lane/position", e.x_m, e.y_m);
  }
  std::fprintf(out, "  %-20s %.3f m\n", "effective distance", e.effective_distance_m);
  if (e.spawn_handle != 0) {
    std::fprintf(out, "  %-20s handle %" PRIu64 ", %s\n", "spawn", e.spawn_handle,
                 wire::EnumNameSpawnState(e.spawn_state));
  } else {
    std::fprintf(out, "  %-20s none\n", "spawn");
  }
  if (e.lifecycle == wire::LifecycleState::Retiring) {
    std::fprintf(out, "  %-20s reason %s, id released at step %" PRIu64 "\n", "retiring",
                 despawn_reason_name(e.retiring_reason).c_str(), e.release_step);
  } else {
    std::fprintf(out, "  %-20s no\n", "retiring");
  }
  std::fflush(out);
  return kExitOk;
}

}  // namespace bustle::cli::commands
