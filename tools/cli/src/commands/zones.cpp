// `bustle zones`: each zone's target and counts, and its work points.
#include <cinttypes>

#include "commands/commands.hpp"
#include "commands/common.hpp"
#include "json_output.hpp"

namespace bustle::cli::commands {

int run_zones(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandReply r;
  if (const int rc = run_query(o, client::QueryZonesCmd{}, r, err); rc != kExitOk) return rc;
  if (!r.zones) return missing(o, "a zone list", err);
  const auto& list = *r.zones;
  if (o.json) return print_list(out, "zones", list, json::zone, r.applied_step);
  const int w = id_width(list);
  std::fprintf(out, "%-*s  %6s  %6s  %7s  %13s  %15s  %8s  %20s  %8s\n", w, "ID", "TARGET",
               "ACTIVE", "DORMANT", "PENDING SPAWN", "PENDING RECYCLE", "DEFERRED",
               "REJECTED BY CAPACITY", "CAPACITY");
  for (const auto& z : list) {
    std::fprintf(out,
                 "%-*s  %6" PRIu32 "  %6" PRIu32 "  %7" PRIu32 "  %13" PRIu32 "  %15" PRIu32
                 "  %8" PRIu32 "  %20" PRIu32 "  %8" PRIu32 "\n",
                 w, z.id.c_str(), z.target, z.active, z.dormant, z.pending_spawn, z.pending_recycle,
                 z.deferred_by_quota, z.rejected_by_capacity, z.capacity);
    for (const auto& wp : z.work_points) {
      std::fprintf(
          out,
          "%-*s  work point %s (%s): %" PRIu32 " of %" PRIu32 " slots held, %" PRIu32 " waiting\n",
          w, "", wp->id.c_str(), wp->profession.c_str(), wp->occupied, wp->slots, wp->waiting);
      if (!wp->anchor_lane.empty()) {
        std::fprintf(out,
                     "%-*s    anchor lane %s (%" PRId32
                     ") s %.3f m at %.3f, %.3f m, slots every "
                     "%.3f m: %" PRIu32 " of %" PRIu32 " holders at their slot\n",
                     w, "", wp->anchor_lane.c_str(), wp->anchor_lane_index, wp->anchor_s_m,
                     wp->anchor_x_m, wp->anchor_y_m, wp->slot_spacing_m, wp->arrived_count,
                     wp->occupied);
      }
    }
  }
  std::fprintf(out, "%zu zone%s at step %" PRIu64 " (deferred and rejected: last interval)\n",
               list.size(), list.size() == 1 ? "" : "s", r.applied_step);
  std::fflush(out);
  return kExitOk;
}

}  // namespace bustle::cli::commands
