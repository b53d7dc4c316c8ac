// `bustle lifecycle`: changes the zone lifecycle settings given, keeping the others
// (read first from QueryPopulation), and prints what changed.
#include <chrono>
#include <cinttypes>
#include <optional>

#include "commands/commands.hpp"
#include "commands/common.hpp"
#include "json_output.hpp"

namespace bustle::cli::commands {

int run_lifecycle(const CliOptions& o, std::FILE* out, std::FILE* err) {
  Client c(client_options(o, wire::Role::Operator));
  ClockView clock;
  if (const int rc = connect_operator(c, o, clock, err); rc != kExitOk) return rc;
  // SetLifecycle sends every field: the ones not given keep the current value.
  const auto current =
      c.command(client::QueryPopulationCmd{}, std::chrono::milliseconds(o.timeout_ms));
  if (!current.ok()) return report(err, o, "query_population", current);
  if (!current.value.accepted()) return rejected(o, current.value, err, " (reading the settings)");
  if (!current.value.population) return missing(o, "the population", err);
  const client::PopulationReport& was = *current.value.population;
  const client::SetLifecycleCmd spec{o.growth_quota.value_or(was.growth_quota),
                                     o.recycle_quota.value_or(was.recycle_quota),
                                     o.lifecycle_interval_ms.value_or(was.interval_ms),
                                     o.migration_budget.value_or(was.migration_budget)};
  std::optional<client::CommandReply> reply;
  const int rc = apply_world(c, o, clock, spec, false, reply, out, err);
  if (rc != kExitOk || !reply) return rc;
  if (o.json) {
    auto settings = [](std::uint32_t growth, std::uint32_t recycle, std::uint32_t interval,
                       std::uint32_t budget) {
      return json::Json{{"growth_quota", growth},
                        {"recycle_quota", recycle},
                        {"interval_ms", interval},
                        {"migration_budget", budget}};
    };
    json::print(out, {{"command", o.command},
                      {"accepted", true},
                      {"applied_step", reply->applied_step},
                      {"settings", settings(spec.growth_quota, spec.recycle_quota, spec.interval_ms,
                                            spec.migration_budget)},
                      {"was", settings(was.growth_quota, was.recycle_quota, was.interval_ms,
                                       was.migration_budget)}});
    return kExitOk;
  }
  print_accepted(out, o, *reply);
  auto setting = [&](const char* name, std::uint32_t now, std::uint32_t before, const char* unit) {
    std::fprintf(out, "  %-20s %" PRIu32 "%s", name, now, unit);
    if (now != before) std::fprintf(out, " (was %" PRIu32 "%s)", before, unit);
    std::fputc('\n', out);
  };
  setting("growth quota", spec.growth_quota, was.growth_quota, "");
  setting("recycle quota", spec.recycle_quota, was.recycle_quota, "");
  setting("interval", spec.interval_ms, was.interval_ms, " ms");
  setting("migration budget", spec.migration_budget, was.migration_budget, "");
  std::fflush(out);
  return kExitOk;
}

}  // namespace bustle::cli::commands
