// bustle-replay diff A B: the first tick where two recordings' recorded steps
// or digests differ, and what differs in the replayed state there.
//
// 1. Both recordings' tick digests are read (no replay) and compared tick by
//    tick: the first mismatch is the tick T reported.
// 2. Both are replayed from their latest keyframe at or before T through T
//    (the Replayer's tick rule), and T's recorded commands are compared.
// 3. The two worlds after T are compared with what the core exposes for
//    inspection: World::capture() (the checkpoint: clocks, counters, queues,
//    population, vehicles) and World::describe() per entity (one field per
//    axis: lifecycle, sim tier, representation hint, lane position ...),
//    plus the per-entity simulation columns describe() does not name
//    (pedestrian hops and route slot; vehicle strategy, control policy,
//    reason, speed, leader, route index).
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "bustle/persist/command_codec.hpp"
#include "bustle/replay/commands.hpp"
#include "bustle/replay/replayer.hpp"
#include "hex.hpp"

namespace bustle::replay {
namespace {

struct Difference {
  std::string section;  // clock, counters, queues, population, vehicles, observers
  std::string field;
  std::string a, b;
};

struct EntityDifference {
  std::string id;
  std::string kind;                // pedestrian, vehicle, or "-" when alive in one world only
  std::vector<Difference> fields;  // section unused
};

struct StateDiff {
  std::vector<Difference> fields;
  std::uint64_t alive_a = 0, alive_b = 0;
  std::uint64_t entities_differing = 0;
  std::vector<EntityDifference> entities;  // the first diff_entities_max
};

std::string text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
std::string text(const std::string& v) {
  return v;
}
std::string text(bool v) {
  return v ? "true" : "false";
}
std::string text(core::EntityId id) {
  return id.is_null() ? "none" : core::id_text(id);
}
template <class T>
requires std::is_integral_v<T> std::string text(T v) {
  return std::to_string(v);
}

template <class T>
void cmp(std::vector<Difference>& out, const char* section, const std::string& field, const T& a,
         const T& b) {
  if (!(a == b)) out.push_back({section, field, text(a), text(b)});
}

// Lists: the length, then the first differing element, described by `show`.
template <class T, class Show, class Eq = std::equal_to<T>>
void cmp_list(std::vector<Difference>& out, const char* section, const std::string& field,
              const std::vector<T>& a, const std::vector<T>& b, Show show, Eq eq = {}) {
  if (a.size() != b.size())
    out.push_back({section, field + ".size", std::to_string(a.size()), std::to_string(b.size())});
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t k = 0; k < n; ++k) {
    if (!eq(a[k], b[k])) {
      out.push_back({section, field + "[" + std::to_string(k) + "]", show(a[k]), show(b[k])});
      return;
    }
  }
}

std::string command_text(const core::CommandEnvelope& env) {
  return std::string(core::command_name(env.command)) + " " +
         persist::command_args_json(env.command) + " (client " +
         std::to_string(env.origin.client_id) + ", request " +
         std::to_string(env.origin.request_id) + ")";
}

bool same_command(const core::CommandEnvelope& a, const core::CommandEnvelope& b) {
  return a.origin == b.origin && command_text(a) == command_text(b);
}

void compare_entity(const core::World& wa, const core::World& wb, core::EntityId id,
                    EntityDifference& d) {
  const core::EntityReport a = wa.describe(id);
  const core::EntityReport b = wb.describe(id);
  auto& f = d.fields;
  const char* s = "";
  d.kind = a.kind == core::EntityKind::Vehicle ? "vehicle" : "pedestrian";
  cmp(f, s, "kind", std::string(d.kind),
      std::string(b.kind == core::EntityKind::Vehicle ? "vehicle" : "pedestrian"));
  cmp(f, s, "lifecycle", std::string(core::to_string(a.lifecycle)),
      std::string(core::to_string(b.lifecycle)));
  cmp(f, s, "sim_tier", std::string(core::to_string(a.tier)), std::string(core::to_string(b.tier)));
  cmp(f, s, "representation", std::string(core::to_string(a.representation)),
      std::string(core::to_string(b.representation)));
  cmp(f, s, "priority", std::string(core::to_string(a.priority)),
      std::string(core::to_string(b.priority)));
  cmp(f, s, "origin", std::string(core::to_string(a.origin)),
      std::string(core::to_string(b.origin)));
  cmp(f, s, "saveable", a.saveable, b.saveable);
  cmp(f, s, "forced_full", a.forced_full, b.forced_full);
  cmp(f, s, "resident", a.resident, b.resident);
  cmp(f, s, "community", a.community, b.community);
  cmp(f, s, "zone", a.zone, b.zone);
  cmp(f, s, "work_point", a.work_point, b.work_point);
  cmp(f, s, "work_slot", a.work_slot, b.work_slot);
  cmp(f, s, "lane", a.lane, b.lane);
  cmp(f, s, "s_m", a.s_m, b.s_m);
  cmp(f, s, "spawn_handle", a.spawn_handle, b.spawn_handle);
  if (a.spawn_handle != 0 || b.spawn_handle != 0) {
    cmp(f, s, "spawn_state", std::string(core::to_string(a.spawn_state)),
        std::string(core::to_string(b.spawn_state)));
  }
  if (a.lifecycle == core::LifecycleState::Retiring ||
      b.lifecycle == core::LifecycleState::Retiring) {
    cmp(f, s, "retiring_reason", std::string(core::to_string(a.retiring_reason)),
        std::string(core::to_string(b.retiring_reason)));
    cmp(f, s, "release_step", a.release_step, b.release_step);
  }
  // Simulation columns describe() does not name.
  const auto& pa = wa.pedestrians();
  const auto& pb = wb.pedestrians();
  const auto ped_slot = [&](const core::PedestrianStore& p) {
    return id.index < p.dense_of.size() ? p.dense_of[id.index] : core::PedestrianStore::kNoSlot;
  };
  const std::uint32_t sa = ped_slot(pa), sb = ped_slot(pb);
  if (sa != core::PedestrianStore::kNoSlot && sb != core::PedestrianStore::kNoSlot) {
    cmp(f, s, "hops", pa.hops[sa], pb.hops[sb]);
    cmp(f, s, "route_slot", pa.route[sa], pb.route[sb]);
    cmp(f, s, "dense_slot", sa, sb);
  }
  const auto& va = wa.vehicles().store();
  const auto& vb = wb.vehicles().store();
  const auto veh_slot = [&](const core::VehicleStore& v) {
    return id.index < v.dense_of.size() ? v.dense_of[id.index] : core::VehicleStore::kNoSlot;
  };
  const std::uint32_t xa = veh_slot(va), xb = veh_slot(vb);
  if (xa != core::VehicleStore::kNoSlot && xb != core::VehicleStore::kNoSlot) {
    const auto strategy = [](std::uint8_t v) {
      return std::string(core::to_string(static_cast<core::VehicleStrategy>(v)));
    };
    const auto policy = [](std::uint8_t v) {
      return std::string(core::to_string(static_cast<core::ControlPolicy>(v)));
    };
    const auto reason = [](std::uint8_t v) {
      return std::string(core::to_string(static_cast<core::PolicyReason>(v)));
    };
    cmp(f, s, "vehicle_id", wa.vehicles().vehicle_id(xa), wb.vehicles().vehicle_id(xb));
    cmp(f, s, "strategy", strategy(va.strategy[xa]), strategy(vb.strategy[xb]));
    cmp(f, s, "control_policy", policy(va.control_policy[xa]), policy(vb.control_policy[xb]));
    cmp(f, s, "policy_reason", reason(va.reason[xa]), reason(vb.reason[xb]));
    cmp(f, s, "speed_mps", va.speed_mps[xa], vb.speed_mps[xb]);
    cmp(f, s, "route_index", va.route_index[xa], vb.route_index[xb]);
    cmp(f, s, "leader", va.leader[xa], vb.leader[xb]);
    cmp(f, s, "steps_advanced", va.steps_advanced[xa], vb.steps_advanced[xb]);
    cmp(f, s, "waiting_since", va.waiting_since[xa], vb.waiting_since[xb]);
    cmp(f, s, "despawn_requested", va.despawn_requested[xa], vb.despawn_requested[xb]);
  }
}

// The sections of compare_worlds, each over the two worlds' checkpoints.
void compare_clock_and_counters(const core::World& wa, const core::World& wb,
                                const core::WorldCheckpoint& a, const core::WorldCheckpoint& b,
                                std::vector<Difference>& f) {
  // Clocks and scalars.
  cmp(f, "clock", "step", a.step_index, b.step_index);
  cmp(f, "clock", "seed", a.seed, b.seed);
  cmp(f, "clock", "day_us", a.population.day_us, b.population.day_us);
  cmp(f, "clock", "time_scale", a.population.time_scale, b.population.time_scale);
  for (std::size_t k = 0; k < a.rng_state.size(); ++k)
    cmp(f, "clock", "rng_state[" + std::to_string(k) + "]", a.rng_state[k], b.rng_state[k]);
  cmp(f, "clock", "pedestrian_target", a.pedestrian_target, b.pedestrian_target);

  // Counters.
  cmp(f, "counters", "spawned_total", a.counters.spawned_total, b.counters.spawned_total);
  cmp(f, "counters", "despawned_total", a.counters.despawned_total, b.counters.despawned_total);
  for (std::size_t k = 0; k < a.counters.despawned_by_reason.size(); ++k) {
    cmp(f, "counters",
        std::string("despawned_by_reason.") + core::to_string(static_cast<core::DespawnReason>(k)),
        a.counters.despawned_by_reason[k], b.counters.despawned_by_reason[k]);
  }
  cmp(f, "counters", "spawn_failed_capacity", a.counters.spawn_failed_capacity,
      b.counters.spawn_failed_capacity);
  cmp(f, "counters", "commands_accepted", a.counters.commands_accepted,
      b.counters.commands_accepted);
  cmp(f, "counters", "commands_rejected", a.counters.commands_rejected,
      b.counters.commands_rejected);
  cmp(f, "counters", "faded_total", a.counters.faded_total, b.counters.faded_total);
  cmp(f, "counters", "fade_skipped_total", a.counters.fade_skipped_total,
      b.counters.fade_skipped_total);
  cmp(f, "counters", "pedestrians", wa.pedestrians().size(), wb.pedestrians().size());
  cmp(f, "counters", "vehicles", wa.vehicles().store().size(), wb.vehicles().store().size());
  for (std::size_t k = 0; k < core::kSimTierCount; ++k) {
    cmp(f, "counters",
        std::string("pedestrian_tiers.") + core::to_string(static_cast<core::SimTier>(k)),
        a.pedestrian_tiers.per_tier[k], b.pedestrian_tiers.per_tier[k]);
  }
  cmp(f, "counters", "force_full_refused", a.force_full_refused, b.force_full_refused);
}

void compare_inbox_and_spawns(const core::WorldCheckpoint& a, const core::WorldCheckpoint& b,
                              std::vector<Difference>& f) {
  // Queues.
  const auto show_cmd = [](const core::CommandEnvelope& e) { return command_text(e); };
  if (a.inbox.size() != b.inbox.size()) {
    f.push_back(
        {"queues", "inbox.size", std::to_string(a.inbox.size()), std::to_string(b.inbox.size())});
  }
  for (std::size_t k = 0; k < std::min(a.inbox.size(), b.inbox.size()); ++k) {
    if (!same_command(a.inbox[k], b.inbox[k])) {
      f.push_back({"queues", "inbox[" + std::to_string(k) + "]", show_cmd(a.inbox[k]),
                   show_cmd(b.inbox[k])});
      break;
    }
  }
  const auto show_handle = [](const core::SpawnHandleState& h) {
    return "handle " + std::to_string(h.handle) + " " + core::to_string(h.state) + " id " +
           text(h.entity);
  };
  cmp(f, "queues", "spawn.next_handle", a.spawn.next_handle, b.spawn.next_handle);
  cmp_list(f, "queues", "spawn.live", a.spawn.live, b.spawn.live, show_handle);
  cmp_list(f, "queues", "spawn.recent", a.spawn.recent, b.spawn.recent, show_handle);
  if (!(a.spawn.counters == b.spawn.counters))
    f.push_back({"queues", "spawn.counters", "(differ)", "(differ)"});
}

void compare_garages(const core::WorldCheckpoint& a, const core::WorldCheckpoint& b,
                     std::vector<Difference>& f) {
  const auto show_request = [](const core::QueuedRequest& q) {
    return q.request_id + " priority " + std::to_string(q.priority) + " ordinal " +
           std::to_string(q.enqueue_ordinal);
  };
  const auto& ga = a.vehicles.garages;
  const auto& gb = b.vehicles.garages;
  for (std::size_t g = 0; g < std::min(ga.size(), gb.size()); ++g) {
    const std::string name =
        "garage." +
        (g < a.vehicles.garage_ids.size() ? a.vehicles.garage_ids[g] : std::to_string(g));
    cmp_list(f, "queues", name + ".queue", ga[g].queue, gb[g].queue, show_request,
             [](const core::QueuedRequest& x, const core::QueuedRequest& y) {
               return x.request_id == y.request_id && x.prototype == y.prototype &&
                      x.priority == y.priority && x.enqueue_ordinal == y.enqueue_ordinal;
             });
    cmp_list(f, "queues", name + ".dispatched", ga[g].dispatched, gb[g].dispatched,
             [](const std::string& v) { return v; });
    cmp(f, "queues", name + ".next_enqueue_ordinal", ga[g].next_enqueue_ordinal,
        gb[g].next_enqueue_ordinal);
    cmp(f, "queues", name + ".next_vehicle_ordinal", ga[g].next_vehicle_ordinal,
        gb[g].next_vehicle_ordinal);
    cmp(f, "queues", name + ".last_gate", std::string(core::to_string(ga[g].last_gate)),
        std::string(core::to_string(gb[g].last_gate)));
    cmp(f, "queues", name + ".turnarounds", ga[g].turnarounds, gb[g].turnarounds);
  }
}

void compare_orphans_and_fifos(const core::WorldCheckpoint& a, const core::WorldCheckpoint& b,
                               std::vector<Difference>& f) {
  cmp(f, "queues", "content_plan.cursor", a.vehicles.plan.cursor, b.vehicles.plan.cursor);
  const auto show_orphan = [](const core::OrphanState& o) {
    return text(o.id) + " lane " + std::to_string(o.lane) + " release " +
           std::to_string(o.release_step);
  };
  if (a.orphans.size() != b.orphans.size())
    f.push_back({"queues", "orphans.size", std::to_string(a.orphans.size()),
                 std::to_string(b.orphans.size())});
  for (std::size_t k = 0; k < std::min(a.orphans.size(), b.orphans.size()); ++k) {
    const auto& x = a.orphans[k];
    const auto& y = b.orphans[k];
    if (!(x.id == y.id) || x.lane != y.lane || x.s_m != y.s_m || x.release_step != y.release_step ||
        x.reason != y.reason) {
      f.push_back({"queues", "orphans[" + std::to_string(k) + "]", show_orphan(x), show_orphan(y)});
      break;
    }
  }
  cmp_list(f, "queues", "retiring_fifo", a.retiring_fifo, b.retiring_fifo,
           [](core::EntityId id) { return text(id); });
  cmp_list(f, "queues", "registry.free_fifo", a.registry.free_fifo, b.registry.free_fifo,
           [](std::uint32_t v) { return std::to_string(v); });
  cmp_list(f, "queues", "forced_full", a.forced_full, b.forced_full,
           [](core::EntityId id) { return text(id); });
}

void compare_population(const core::WorldCheckpoint& a, const core::WorldCheckpoint& b,
                        std::vector<Difference>& f) {
  // Population.
  const auto& za = a.population.zones;
  const auto& zb = b.population.zones;
  for (std::size_t z = 0; z < std::min(za.size(), zb.size()); ++z) {
    const std::string name =
        "zone." + (z < a.population.zone_ids.size() ? a.population.zone_ids[z] : std::to_string(z));
    cmp(f, "population", name + ".target", za[z].target, zb[z].target);
    cmp(f, "population", name + ".active", za[z].active, zb[z].active);
    cmp(f, "population", name + ".dormant", za[z].dormant, zb[z].dormant);
    if (!(za[z] == zb[z]) && za[z].target == zb[z].target && za[z].active == zb[z].active &&
        za[z].dormant == zb[z].dormant) {
      f.push_back({"population", name + " (other counts)", "(differ)", "(differ)"});
    }
  }
  cmp_list(f, "population", "handoffs", a.population.handoffs, b.population.handoffs,
           [](const core::ZoneHandoff& h) {
             return "resident " + std::to_string(h.resident) + " " + std::to_string(h.from) + "->" +
                    std::to_string(h.to);
           });
  for (std::size_t w = 0;
       w < std::min(a.population.work_points.size(), b.population.work_points.size()); ++w) {
    const auto& x = a.population.work_points[w];
    const auto& y = b.population.work_points[w];
    const std::string name = "work_point[" + std::to_string(w) + "]";
    cmp_list(f, "population", name + ".occupant", x.occupant, y.occupant,
             [](std::int32_t v) { return std::to_string(v); });
    cmp_list(f, "population", name + ".waiting", x.waiting, y.waiting,
             [](std::uint32_t v) { return std::to_string(v); });
  }
}

void compare_signals_and_observers(const core::WorldCheckpoint& a, const core::WorldCheckpoint& b,
                                   std::vector<Difference>& f) {
  // Vehicles (beyond the per-entity columns): signals.
  for (std::size_t k = 0; k < std::min(a.vehicles.signals.size(), b.vehicles.signals.size()); ++k) {
    const std::string name =
        "signal." +
        (k < a.vehicles.signal_ids.size() ? a.vehicles.signal_ids[k] : std::to_string(k));
    cmp(f, "vehicles", name + ".phase", std::string(core::to_string(a.vehicles.signals[k].phase)),
        std::string(core::to_string(b.vehicles.signals[k].phase)));
    cmp(f, "vehicles", name + ".phase_elapsed_us", a.vehicles.signals[k].phase_elapsed_us,
        b.vehicles.signals[k].phase_elapsed_us);
  }

  // Observers (scenario/operator and clients').
  const auto show_point = [](const core::Vec2& p) {
    return "(" + text(p.x_m) + ", " + text(p.y_m) + ")";
  };
  cmp_list(f, "observers", "observers", a.observers, b.observers, show_point);
  cmp_list(f, "observers", "client_observers", a.client_observers, b.client_observers, show_point);
}

// Entities, slot by slot: alive in one world only, or their axes differ.
void compare_entities(const core::World& wa, const core::World& wb, const core::WorldCheckpoint& a,
                      const core::WorldCheckpoint& b, std::uint32_t entities_max, StateDiff& d) {
  const std::size_t slots = std::max(a.registry.alive.size(), b.registry.alive.size());
  for (std::size_t k = 0; k < slots; ++k) {
    const bool alive_a = k < a.registry.alive.size() && a.registry.alive[k] != 0;
    const bool alive_b = k < b.registry.alive.size() && b.registry.alive[k] != 0;
    d.alive_a += alive_a ? 1 : 0;
    d.alive_b += alive_b ? 1 : 0;
    if (!alive_a && !alive_b) continue;
    const core::EntityId ida{static_cast<std::uint32_t>(k), alive_a ? a.registry.generation[k] : 0};
    const core::EntityId idb{static_cast<std::uint32_t>(k), alive_b ? b.registry.generation[k] : 0};
    EntityDifference e;
    if (!(ida == idb)) {
      // Alive in one world only (or another generation): its axes there.
      const core::EntityId id = alive_a ? ida : idb;
      const core::EntityReport there = (alive_a ? wa : wb).describe(id);
      e.id = text(id);
      e.kind = there.kind == core::EntityKind::Vehicle ? "vehicle" : "pedestrian";
      e.fields.push_back({"", "alive", alive_a ? text(ida) : "no", alive_b ? text(idb) : "no"});
      e.fields.push_back({"", "lifecycle", core::to_string(wa.describe(id).lifecycle),
                          core::to_string(wb.describe(id).lifecycle)});
    } else {
      e.id = text(ida);
      compare_entity(wa, wb, ida, e);
      if (e.fields.empty()) continue;
    }
    ++d.entities_differing;
    if (d.entities.size() < entities_max) d.entities.push_back(std::move(e));
  }
}

StateDiff compare_worlds(const core::World& wa, const core::World& wb, std::uint32_t entities_max) {
  StateDiff d;
  const core::WorldCheckpoint a = wa.capture();
  const core::WorldCheckpoint b = wb.capture();
  auto& f = d.fields;
  compare_clock_and_counters(wa, wb, a, b, f);
  compare_inbox_and_spawns(a, b, f);
  compare_garages(a, b, f);
  compare_orphans_and_fifos(a, b, f);
  compare_population(a, b, f);
  compare_signals_and_observers(a, b, f);
  compare_entities(wa, wb, a, b, entities_max, d);
  return d;
}

struct Side {
  std::unique_ptr<Replayer> rep;
  std::vector<persist::RecordedTick> digests;
  persist::RecordedTick tick;  // the first differing tick, with its commands
  TickOutcome outcome;
};

ReplayError replay_through(Side& s, std::uint64_t tick) {
  if (ReplayError e = s.rep->seek(tick); !e.ok()) return e;
  while (s.rep->next_tick_number() <= tick) {
    if (ReplayError e = s.rep->next_tick(s.outcome); !e.ok()) return e;
  }
  return s.rep->recorded_tick(tick, s.tick);
}

// What run_diff found at the first differing tick of two recordings.
struct FirstDifference {
  std::uint64_t tick = 0;
  std::size_t index = 0;             // position of the tick in both digest lists
  std::vector<Difference> commands;  // the tick's commands, pairwise, where they differ
  StateDiff state;                   // the replayed worlds after the tick
  bool a_replays = true;             // A replays to its own recorded digest there
  bool b_replays = true;
  bool same_scenario = true;
};

// The tick's commands, pairwise in arrival order.
std::vector<Difference> differing_commands(const persist::RecordedTick& ta,
                                           const persist::RecordedTick& tb) {
  std::vector<Difference> commands;
  const auto& ca = ta.commands;
  const auto& cb = tb.commands;
  for (std::size_t c = 0; c < std::max(ca.size(), cb.size()); ++c) {
    const bool in_a = c < ca.size(), in_b = c < cb.size();
    if (in_a && in_b && same_command(ca[c], cb[c])) continue;
    commands.push_back({"commands", "#" + std::to_string(c), in_a ? command_text(ca[c]) : "(none)",
                        in_b ? command_text(cb[c]) : "(none)"});
  }
  return commands;
}

// Equal recordings, or one a prefix of the other: the verdict line (or JSON)
// and exit status 0 (same) or 1 (lengths differ).
int report_no_difference(const ReplayOptions& options, const Side& a, const Side& b,
                         nlohmann::ordered_json& j, std::FILE* out) {
  const std::size_t common = std::min(a.digests.size(), b.digests.size());
  const bool same = a.digests.size() == b.digests.size();
  j["verdict"] = same ? "same" : "prefix";
  if (options.json) {
    std::fprintf(out, "%s\n", j.dump().c_str());
  } else if (same) {
    std::fprintf(out, "SAME: %zu ticks, every recorded step and digest equal\n", common);
  } else {
    std::fprintf(
        out, "DIFFER only in length: the first %zu ticks are equal; %s has %zu ticks, %s has %zu\n",
        common, options.file.c_str(), a.digests.size(), options.file_b.c_str(), b.digests.size());
  }
  std::fflush(out);
  return same ? 0 : 1;
}

nlohmann::ordered_json differences_json(const std::vector<Difference>& v) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const Difference& d : v) {
    nlohmann::ordered_json x;
    if (!d.section.empty()) x["section"] = d.section;
    x["field"] = d.field;
    x["a"] = d.a;
    x["b"] = d.b;
    arr.push_back(std::move(x));
  }
  return arr;
}

void add_difference_json(const Side& a, const Side& b, const FirstDifference& d,
                         nlohmann::ordered_json& j) {
  const std::size_t k = d.index;
  j["verdict"] = "differ";
  j["first_difference"] = {{"tick", d.tick},
                           {"step", {a.digests[k].step, b.digests[k].step}},
                           {"digest", {hex16(a.digests[k].digest), hex16(b.digests[k].digest)}},
                           {"replays_to_recorded", {d.a_replays, d.b_replays}}};
  j["commands"] = differences_json(d.commands);
  j["state"] = differences_json(d.state.fields);
  nlohmann::ordered_json ents = nlohmann::ordered_json::array();
  for (const EntityDifference& e : d.state.entities)
    ents.push_back({{"id", e.id}, {"kind", e.kind}, {"fields", differences_json(e.fields)}});
  j["entities"] = {{"alive", {d.state.alive_a, d.state.alive_b}},
                   {"differing", d.state.entities_differing},
                   {"listed", ents}};
}

// The human-readable report: the tick, both files, the commands that differ,
// then the replayed state section by section and the first differing entities.
std::string difference_text(const ReplayOptions& options, const Side& a, const Side& b,
                            const FirstDifference& d) {
  const std::size_t k = d.index;
  const std::string tick = std::to_string(d.tick);
  std::string s;
  s += "DIFFER at tick " + tick + ": A step " + std::to_string(a.digests[k].step) + " digest " +
       hex16(a.digests[k].digest) + ", B step " + std::to_string(b.digests[k].step) + " digest " +
       hex16(b.digests[k].digest) + "\n";
  s += "  A = " + options.file + " (" + std::to_string(a.digests.size()) + " ticks)\n";
  s += "  B = " + options.file_b + " (" + std::to_string(b.digests.size()) + " ticks)\n";
  if (!d.same_scenario) s += "  the recordings' scenarios differ\n";
  if (!d.a_replays || !d.b_replays) {
    s += "  note: at this tick ";
    s += !d.a_replays && !d.b_replays ? "neither A nor B replays"
         : !d.a_replays               ? "A does not replay"
                                      : "B does not replay";
    s += " to its own recorded digest (bustle-replay verify it)\n";
  }
  const std::size_t na = a.tick.commands.size(), nb = b.tick.commands.size();
  if (d.commands.empty()) {
    s += "tick " + tick + " commands: the same " + std::to_string(na) + "\n";
  } else {
    s += "tick " + tick + " commands (A " + std::to_string(na) + ", B " + std::to_string(nb) +
         "), differing:\n";
    for (const Difference& c : d.commands)
      s += "  " + c.field + "  A: " + c.a + "\n  " + std::string(c.field.size(), ' ') +
           "  B: " + c.b + "\n";
  }
  const StateDiff& state = d.state;
  s += "state after tick " + tick + " (replayed):\n";
  if (state.fields.empty() && state.entities_differing == 0)
    s += "  no difference in the replayed state\n";
  std::string section;
  for (const Difference& f : state.fields) {
    if (f.section != section) {
      section = f.section;
      s += "  " + section + ":\n";
    }
    s += "    " + f.field + "  A=" + f.a + "  B=" + f.b + "\n";
  }
  s += "  entities: " + std::to_string(state.entities_differing) + " differ (alive: A " +
       std::to_string(state.alive_a) + ", B " + std::to_string(state.alive_b) + ")";
  s += state.entities.size() < state.entities_differing
           ? ", first " + std::to_string(state.entities.size()) + ":\n"
           : (state.entities.empty() ? "\n" : ":\n");
  for (const EntityDifference& e : state.entities) {
    s += "    " + e.kind + " " + e.id + ":";
    for (std::size_t x = 0; x < e.fields.size(); ++x) {
      s +=
          (x == 0 ? " " : ", ") + e.fields[x].field + " A=" + e.fields[x].a + " B=" + e.fields[x].b;
    }
    s += "\n";
  }
  return s;
}

}  // namespace

int run_diff(const ReplayOptions& options, std::FILE* out, std::FILE* err) {
  const auto fail = [&](const std::string& message) {
    std::fprintf(err, "bustle-replay: %s\n", message.c_str());
    return 2;
  };
  Side a, b;
  if (ReplayError e = Replayer::open(options.file, a.rep); !e.ok()) return fail(e.message);
  if (ReplayError e = Replayer::open(options.file_b, b.rep); !e.ok()) return fail(e.message);
  if (ReplayError e = a.rep->recorded_digests(a.digests); !e.ok()) return fail(e.message);
  if (ReplayError e = b.rep->recorded_digests(b.digests); !e.ok()) return fail(e.message);

  FirstDifference d;
  d.same_scenario = a.rep->scenario_json() == b.rep->scenario_json();
  const std::size_t common = std::min(a.digests.size(), b.digests.size());
  while (d.index < common && a.digests[d.index].step == b.digests[d.index].step &&
         a.digests[d.index].digest == b.digests[d.index].digest)
    ++d.index;

  nlohmann::ordered_json j;
  j["a"] = options.file;
  j["b"] = options.file_b;
  j["ticks"] = {a.digests.size(), b.digests.size()};
  j["same_scenario"] = d.same_scenario;
  if (d.index == common) return report_no_difference(options, a, b, j, out);

  // Both sides replayed to the first differing tick, then compared.
  d.tick = a.digests[d.index].tick;
  if (ReplayError e = replay_through(a, d.tick); !e.ok()) return fail(e.message);
  if (ReplayError e = replay_through(b, d.tick); !e.ok()) return fail(e.message);
  d.state = compare_worlds(a.rep->world(), b.rep->world(), options.diff_entities_max);
  d.commands = differing_commands(a.tick, b.tick);
  d.a_replays = !a.outcome.diverged();
  d.b_replays = !b.outcome.diverged();

  if (options.json) {
    add_difference_json(a, b, d, j);
    std::fprintf(out, "%s\n", j.dump().c_str());
  } else {
    std::fputs(difference_text(options, a, b, d).c_str(), out);
  }
  std::fflush(out);
  return 1;
}

}  // namespace bustle::replay
