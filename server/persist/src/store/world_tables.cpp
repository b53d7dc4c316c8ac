// The world's tables: world_state (clocks, RNG, counters, observers, forced
// Full set; the registry's columns are registry_columns.cpp's), the bulk
// pedestrian columns, and the pending command inbox.
#include "bustle/persist/command_codec.hpp"
#include "tables.hpp"

namespace bustle::persist::store {
namespace {

const TableColumns kWorldState{"world_state",
                               {"snapshot_id",
                                "rng_s0",
                                "rng_s1",
                                "rng_s2",
                                "rng_s3",
                                "route_salt",
                                "pedestrian_target",
                                "spawned_total",
                                "despawned_total",
                                "despawned_by_reason",
                                "spawn_failed_capacity",
                                "commands_accepted",
                                "commands_rejected",
                                "registry_capacity",
                                "registry_pop_seq",
                                "registry_generation",
                                "registry_alive",
                                "registry_free_fifo",
                                "plan_cursor",
                                "plan_accepted",
                                "plan_rejected",
                                "observers",
                                "day_us",
                                "time_scale",
                                "last_interval",
                                "forced_full",
                                "force_full_refused",
                                "vehicle_step_stats",
                                "faded_total",
                                "fade_skipped_total",
                                "interval_origin_us"}};

const TableColumns kPedestrianColumns{
    "pedestrian_columns",
    {"snapshot_id", "count", "id_index", "id_generation", "lane", "s_m", "hops", "resident", "tier",
     "tier_stats", "priority", "origin", "route", "catch_up"}};  // catch_up: migration 0011
// A file read without migrating (read-only) from before schema 11 has no
// catch_up column: no row kept one.
const TableColumns kPedestrianColumnsBefore11{
    "pedestrian_columns",
    {"snapshot_id", "count", "id_index", "id_generation", "lane", "s_m", "hops", "resident", "tier",
     "tier_stats", "priority", "origin", "route"}};

const TableColumns kPendingCommands{
    "pending_commands", {"snapshot_id", "seq", "client_id", "request_id", "kind", "args"}};

constexpr const char* kRngColumns[] = {"rng_s0", "rng_s1", "rng_s2", "rng_s3"};

// vehicle_step_stats: the last step's vehicle tier and policy counts.
NamedCounts vehicle_stats_shape() {
  NamedCounts c;
  for (const char* name : {"promoted", "demoted", "deferred", "forced", "forced_overflow", "moving",
                           "turnarounds", "dispatched"}) {
    c.scalars.emplace_back(name, 0);
  }
  c.arrays.emplace_back("tiers", std::vector<std::uint64_t>(core::kSimTierCount));
  c.arrays.emplace_back("policy", std::vector<std::uint64_t>(core::kControlPolicyCount));
  return c;
}

// The fields of vehicle_step_stats, in vehicle_stats_shape()'s scalar order
// (V is VehicleCheckpoint or const VehicleCheckpoint).
template <class V>
auto* vehicle_stat_field(V& v, std::size_t k) {
  decltype(&v.last_step.moving) fields[] = {&v.last_tiers.promoted,        &v.last_tiers.demoted,
                                            &v.last_tiers.deferred,        &v.last_tiers.forced,
                                            &v.last_tiers.forced_overflow, &v.last_step.moving,
                                            &v.last_step.turnarounds,      &v.last_step.dispatched};
  return fields[k];
}

std::string vehicle_stats_text(const core::VehicleCheckpoint& v) {
  NamedCounts c = vehicle_stats_shape();
  for (std::size_t k = 0; k < c.scalars.size(); ++k)
    c.scalars[k].second = *vehicle_stat_field(v, k);
  c.arrays[0].second.assign(std::begin(v.last_tiers.per_tier), std::end(v.last_tiers.per_tier));
  c.arrays[1].second.assign(std::begin(v.last_step.per_policy), std::end(v.last_step.per_policy));
  return encode_named_counts(c);
}

bool parse_vehicle_stats(const std::string& text, core::VehicleCheckpoint& v) {
  NamedCounts c = vehicle_stats_shape();
  if (!decode_named_counts(text, c)) return false;
  for (const auto& [name, value] : c.scalars) {
    if (value > UINT32_MAX) return false;
  }
  for (const auto& [name, values] : c.arrays) {
    for (const std::uint64_t value : values) {
      if (value > UINT32_MAX) return false;
    }
  }
  for (std::size_t k = 0; k < c.scalars.size(); ++k)
    *vehicle_stat_field(v, k) = static_cast<std::uint32_t>(c.scalars[k].second);
  for (std::size_t k = 0; k < core::kSimTierCount; ++k)
    v.last_tiers.per_tier[k] = static_cast<std::uint32_t>(c.arrays[0].second[k]);
  for (std::size_t k = 0; k < core::kControlPolicyCount; ++k) {
    v.last_step.per_policy[k] = static_cast<std::uint32_t>(c.arrays[1].second[k]);
  }
  return true;
}

std::string observers_text(const std::vector<core::Vec2>& observers) {
  std::vector<std::pair<double, double>> pairs;
  for (const core::Vec2& o : observers) pairs.emplace_back(o.x_m, o.y_m);
  return encode_pairs(pairs);
}

std::string forced_full_text(const std::vector<core::EntityId>& forced) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  for (const core::EntityId f : forced) pairs.emplace_back(f.index, f.generation);
  return encode_pairs(pairs);
}

// The JSON columns of world_state.
void read_world_json(RowReader& rr, core::WorldCheckpoint& cp) {
  const std::string by_reason = rr.text("despawned_by_reason");
  // Before schema 7 the array had the 7 reasons before prevention.
  const std::span<std::uint64_t> all(cp.counters.despawned_by_reason);
  if (!decode_counts(by_reason, all) &&
      !decode_counts(by_reason, all.first(core::kDespawnReasonCountBeforePrevention))) {
    rr.fail("despawned_by_reason", "expected a JSON array of " +
                                       std::to_string(cp.counters.despawned_by_reason.size()) +
                                       " counts, got '" + by_reason + "'");
  }
  std::vector<std::pair<double, double>> observers;
  if (!decode_pairs(rr.text("observers"), observers))
    rr.fail("observers", "expected a JSON array of [x, y]");
  for (const auto& [x, y] : observers) cp.observers.push_back({x, y});
  std::vector<std::pair<std::uint32_t, std::uint32_t>> forced;
  if (!decode_pairs(rr.text("forced_full"), forced)) {
    rr.fail("forced_full", "expected a JSON array of [index, generation]");
  }
  for (const auto& [index, generation] : forced) cp.forced_full.push_back({index, generation});
  if (!parse_vehicle_stats(rr.text("vehicle_step_stats"), cp.vehicles))
    rr.fail("vehicle_step_stats", "malformed JSON");
}

}  // namespace

std::vector<const TableColumns*> world_tables() {
  return {&kWorldState, &kPedestrianColumns, &kPendingCommands};
}

StoreError write_world_state(Tables& t, std::int64_t id, const core::WorldCheckpoint& cp) {
  Insert ws;
  if (StoreError e = t.prepare(kWorldState, ws); !e.ok()) return e;
  ws.i64("snapshot_id", id);
  for (std::size_t k = 0; k < 4; ++k) ws.u64(kRngColumns[k], cp.rng_state[k]);
  ws.u64("route_salt", cp.route_salt).i64("pedestrian_target", cp.pedestrian_target);
  const core::CounterState& c = cp.counters;
  ws.u64("spawned_total", c.spawned_total).u64("despawned_total", c.despawned_total);
  ws.text("despawned_by_reason", encode_counts(c.despawned_by_reason));
  ws.u64("spawn_failed_capacity", c.spawn_failed_capacity)
      .u64("commands_accepted", c.commands_accepted);
  ws.u64("commands_rejected", c.commands_rejected);
  ws.u64("faded_total", c.faded_total).u64("fade_skipped_total", c.fade_skipped_total);
  bind_registry(ws, cp.registry);
  const core::VehicleCheckpoint& v = cp.vehicles;
  ws.u64("plan_cursor", v.plan.cursor)
      .u64("plan_accepted", v.plan.accepted)
      .u64("plan_rejected", v.plan.rejected);
  ws.text("vehicle_step_stats", vehicle_stats_text(v));
  ws.text("observers", observers_text(cp.observers));
  ws.u64("day_us", cp.population.day_us).i64("time_scale", cp.population.time_scale);
  ws.u64("last_interval", cp.population.last_interval)
      .u64("interval_origin_us", cp.population.interval_origin_us);
  ws.text("forced_full", forced_full_text(cp.forced_full))
      .u64("force_full_refused", cp.force_full_refused);
  return t.run(ws, kWorldState, snapshot_row(id));
}

StoreError read_world_state(Tables& t, std::int64_t id, core::WorldCheckpoint& cp) {
  const std::string row = snapshot_row(id);
  Statement st;
  if (StoreError e = t.one_row(kWorldState, id, row, st, "missing (checkpoint incomplete)");
      !e.ok())
    return e;
  RowReader rr(st, kWorldState);
  for (std::size_t k = 0; k < 4; ++k) cp.rng_state[k] = rr.u64(kRngColumns[k]);
  cp.route_salt = rr.u64("route_salt");
  cp.pedestrian_target = rr.u32("pedestrian_target");
  core::CounterState& c = cp.counters;
  c.spawned_total = rr.u64("spawned_total");
  c.despawned_total = rr.u64("despawned_total");
  c.spawn_failed_capacity = rr.u64("spawn_failed_capacity");
  c.commands_accepted = rr.u64("commands_accepted");
  c.commands_rejected = rr.u64("commands_rejected");
  read_registry(rr, cp.registry);
  cp.vehicles.plan.cursor = rr.u64("plan_cursor");
  cp.vehicles.plan.accepted = rr.u64("plan_accepted");
  cp.vehicles.plan.rejected = rr.u64("plan_rejected");
  cp.population.day_us = rr.u64("day_us");
  cp.population.time_scale = rr.u32("time_scale");
  cp.population.last_interval = rr.u64("last_interval");
  cp.force_full_refused = rr.u64("force_full_refused");
  read_world_json(rr, cp);
  c.faded_total = rr.u64("faded_total");
  c.fade_skipped_total = rr.u64("fade_skipped_total");
  cp.population.interval_origin_us = rr.u64("interval_origin_us");
  if (!rr.ok()) return t.row_error(kWorldState, row, rr);
  return {};
}

StoreError write_pedestrians(Tables& t, std::int64_t id, const core::WorldCheckpoint& cp) {
  const core::PedestrianState& p = cp.pedestrians;
  const std::size_t n = p.id.size();
  assert(all_sized(n, p.lane, p.s_m, p.hops, p.resident, p.sim_tier, p.priority, p.origin, p.route,
                   p.catch_up_steps));
  const IdBlobs ids(p.id);
  const core::TierCounts& pt = cp.pedestrian_tiers;
  const std::uint64_t tier_stats[] = {pt.per_tier[0], pt.per_tier[1],    pt.per_tier[2],
                                      pt.promoted,    pt.demoted,        pt.deferred,
                                      pt.forced,      pt.forced_overflow};
  Insert pc;
  if (StoreError e = t.prepare(kPedestrianColumns, pc); !e.ok()) return e;
  pc.i64("snapshot_id", id).i64("count", static_cast<std::int64_t>(n)).blob("id_index", ids.index);
  pc.blob("id_generation", ids.generation)
      .blob("lane", p.lane)
      .blob("s_m", p.s_m)
      .blob("hops", p.hops)
      .blob("resident", p.resident)
      .blob("tier", p.sim_tier);
  pc.text("tier_stats", encode_counts(tier_stats));
  pc.blob("priority", p.priority).blob("origin", p.origin).blob("route", p.route);
  pc.blob("catch_up", p.catch_up_steps);
  return t.run(pc, kPedestrianColumns, snapshot_row(id));
}

StoreError read_pedestrians(Tables& t, std::int64_t id, std::uint32_t expected,
                            core::WorldCheckpoint& cp) {
  const std::string row = snapshot_row(id);
  const bool has_catch_up = t.file_version() >= 11;
  const TableColumns& columns = has_catch_up ? kPedestrianColumns : kPedestrianColumnsBefore11;
  Statement st;
  if (StoreError e = t.one_row(columns, id, row, st, "missing (checkpoint incomplete)"); !e.ok())
    return e;
  RowReader rr(st, columns);
  const std::int64_t count = rr.integer("count", 0, INT64_MAX);
  if (!rr.ok() || count != expected) {
    return t.error("pedestrian_columns", row, "count",
                   std::to_string(count) + " does not match snapshots.pedestrians " +
                       std::to_string(expected));
  }
  const auto n = static_cast<std::size_t>(count);
  core::PedestrianState& p = cp.pedestrians;
  rr.ids("id_index", "id_generation", n, p.id);
  rr.blob("lane", n, p.lane);
  rr.blob("s_m", n, p.s_m);
  rr.blob("hops", n, p.hops);
  rr.blob("resident", n, p.resident);
  rr.blob("tier", n, p.sim_tier);
  rr.blob("priority", n, p.priority);
  rr.blob("origin", n, p.origin);
  rr.blob("route", n, p.route);
  if (has_catch_up) {
    rr.blob("catch_up", n, p.catch_up_steps);
  } else {
    p.catch_up_steps.assign(n, 0);
  }
  std::array<std::uint64_t, 8> ts{};
  if (!decode_counts(rr.text("tier_stats"), ts, UINT32_MAX))
    rr.fail("tier_stats", "expected a JSON array of 8 counts");
  if (!rr.ok()) return t.row_error(columns, row, rr);
  assert(all_sized(n, p.id, p.lane, p.s_m, p.hops, p.resident, p.sim_tier, p.priority, p.origin,
                   p.route, p.catch_up_steps));
  core::TierCounts& pt = cp.pedestrian_tiers;
  for (std::size_t k = 0; k < 3; ++k) pt.per_tier[k] = static_cast<std::uint32_t>(ts[k]);
  pt.promoted = static_cast<std::uint32_t>(ts[3]);
  pt.demoted = static_cast<std::uint32_t>(ts[4]);
  pt.deferred = static_cast<std::uint32_t>(ts[5]);
  pt.forced = static_cast<std::uint32_t>(ts[6]);
  pt.forced_overflow = static_cast<std::uint32_t>(ts[7]);
  return {};
}

StoreError write_pending_commands(Tables& t, std::int64_t id,
                                  const std::vector<core::CommandEnvelope>& inbox) {
  Insert cmd;
  if (StoreError e = t.prepare(kPendingCommands, cmd); !e.ok()) return e;
  for (std::size_t k = 0; k < inbox.size(); ++k) {
    const core::CommandEnvelope& env = inbox[k];
    cmd.i64("snapshot_id", id)
        .i64("seq", static_cast<std::int64_t>(k))
        .i64("client_id", env.origin.client_id);
    cmd.i64("request_id", env.origin.request_id).text("kind", core::command_name(env.command));
    cmd.text("args", command_args_json(env.command));
    if (StoreError e = t.run(cmd, kPendingCommands, "seq=" + std::to_string(k)); !e.ok()) return e;
  }
  return {};
}

StoreError read_pending_commands(Tables& t, std::int64_t id,
                                 std::vector<core::CommandEnvelope>& inbox) {
  return t.read_rows(
      kPendingCommands, "seq", "", id, snapshot_row(id),
      [&](RowReader& rr, const std::string&) {
        core::CommandEnvelope env;
        env.origin.client_id = rr.u32("client_id");
        env.origin.request_id = rr.u32("request_id");
        auto decoded = decode_command(rr.text("kind"), rr.text("args"));
        if (!decoded.ok()) {
          // The codec's reason starts with the field it names.
          const std::string& why = decoded.status().message();
          rr.fail(why.substr(0, why.find(':')), why);
          return;
        }
        env.command = std::move(*decoded);
        inbox.push_back(std::move(env));
      },
      "sequence has a gap");
}

}  // namespace bustle::persist::store
