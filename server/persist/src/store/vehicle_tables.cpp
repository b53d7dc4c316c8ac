// The vehicles' tables: the bulk vehicle columns, garages with their request
// queues, dispatched ids and mouths (schema 12), and the signals; a
// district's ghosts and its garages' vehicles away (schema 13).
#include <limits>

#include "tables.hpp"

namespace bustle::persist::store {
namespace {

// A file read without migrating (read-only) from before schema 13 has no
// ghost columns and no garages.away: a whole city's, or a district's without
// vehicles (nothing away, no ghost).
const TableColumns kVehicleColumnsBefore13{"vehicle_columns",
                                           {"snapshot_id",
                                            "count",
                                            "id_index",
                                            "id_generation",
                                            "garage",
                                            "ordinal",
                                            "prototype",
                                            "route_index",
                                            "lane",
                                            "s_m",
                                            "speed_mps",
                                            "strategy",
                                            "policy",
                                            "reason",
                                            "tier",
                                            "leader_index",
                                            "leader_generation",
                                            "steps_advanced",
                                            "waiting_since",
                                            "despawn_requested",
                                            "request_ids",
                                            "last_advance_step"}};
const TableColumns kVehicleColumns{
    kVehicleColumnsBefore13,
    {"ghost_count", "ghost_id_index", "ghost_id_generation", "ghost_garage", "ghost_route_index",
     "ghost_lane", "ghost_s_m", "ghost_crossing_count", "ghost_crossings"}};

const TableColumns kGaragesBefore13{
    "garages",
    {"snapshot_id", "garage_index", "garage_id", "frame_index", "has_dispatched",
     "last_dispatch_frame", "next_enqueue_ordinal", "next_vehicle_ordinal", "turnarounds",
     "last_gate", "gate_steps", "rejected_invalid", "rejected_duplicate", "rejected_queue_full",
     "canceled"}};
const TableColumns kGarages{kGaragesBefore13, {"away"}};
const TableColumns kGarageQueue{"garage_queue",
                                {"snapshot_id", "garage_index", "position", "request_id",
                                 "prototype", "priority", "enqueue_ordinal"}};
const TableColumns kGarageDispatched{"garage_dispatched",
                                     {"snapshot_id", "garage_index", "request_id"}};
const TableColumns kGarageMouth{"garage_mouth",
                                {"snapshot_id", "garage_index", "position", "id_index",
                                 "id_generation", "ordinal", "prototype", "request_id"}};
const TableColumns kSignals{
    "signals", {"snapshot_id", "signal_index", "signal_id", "phase", "phase_elapsed_us", "cycles"}};

// The u64 counters of a garages row, by column.
template <class G>
auto garage_counters(G& g) {
  using Field = decltype(&g.frame_index);
  return std::array<std::pair<const char*, Field>, 10>{
      {{"frame_index", &g.frame_index},
       {"last_dispatch_frame", &g.last_dispatch_frame},
       {"next_enqueue_ordinal", &g.next_enqueue_ordinal},
       {"next_vehicle_ordinal", &g.next_vehicle_ordinal},
       {"turnarounds", &g.turnarounds},
       {"rejected_invalid", &g.rejected_invalid},
       {"rejected_duplicate", &g.rejected_duplicate},
       {"rejected_queue_full", &g.rejected_queue_full},
       {"canceled", &g.canceled},
       {"away", &g.away}}};  // migration 0013
}

// A district world's ghosts (migration 0013), as columns.
struct GhostColumns {
  std::vector<core::EntityId> id;
  std::vector<std::uint32_t> garage, route_index, lane;
  std::vector<double> s_m;
};

StoreError write_vehicle_columns(Tables& t, std::int64_t id, const core::VehicleStore& st,
                                 const std::vector<core::VehicleGhost>& ghosts,
                                 const std::vector<std::uint32_t>& crossings) {
  Insert vc;
  if (StoreError e = t.prepare(kVehicleColumns, vc); !e.ok()) return e;
  assert(all_sized(st.id.size(), st.garage, st.ordinal, st.prototype, st.route_index, st.lane,
                   st.s_m, st.speed_mps, st.strategy, st.control_policy, st.reason, st.sim_tier,
                   st.leader, st.steps_advanced, st.waiting_since, st.despawn_requested,
                   st.request_id, st.last_advance_step));
  const IdBlobs ids(st.id), leaders(st.leader);
  vc.i64("snapshot_id", id).i64("count", static_cast<std::int64_t>(st.id.size()));
  vc.blob("id_index", ids.index).blob("id_generation", ids.generation);
  vc.blob("garage", st.garage).blob("ordinal", st.ordinal).blob("prototype", st.prototype);
  vc.blob("route_index", st.route_index)
      .blob("lane", st.lane)
      .blob("s_m", st.s_m)
      .blob("speed_mps", st.speed_mps);
  vc.blob("strategy", st.strategy)
      .blob("policy", st.control_policy)
      .blob("reason", st.reason)
      .blob("tier", st.sim_tier);
  vc.blob("leader_index", leaders.index).blob("leader_generation", leaders.generation);
  vc.blob("steps_advanced", st.steps_advanced).blob("waiting_since", st.waiting_since);
  vc.blob("despawn_requested", st.despawn_requested)
      .text("request_ids", encode_strings(st.request_id));
  vc.blob("last_advance_step", st.last_advance_step);  // column added by migration 0002
  GhostColumns g;
  for (const core::VehicleGhost& x : ghosts) {
    g.id.push_back(x.id);
    g.garage.push_back(x.garage);
    g.route_index.push_back(x.route_index);
    g.lane.push_back(x.lane);
    g.s_m.push_back(x.s_m);
  }
  const IdBlobs gids(g.id);
  vc.i64("ghost_count", static_cast<std::int64_t>(ghosts.size()));
  vc.blob("ghost_id_index", gids.index).blob("ghost_id_generation", gids.generation);
  vc.blob("ghost_garage", g.garage).blob("ghost_route_index", g.route_index);
  vc.blob("ghost_lane", g.lane).blob("ghost_s_m", g.s_m);
  vc.i64("ghost_crossing_count", static_cast<std::int64_t>(crossings.size()))
      .blob("ghost_crossings", crossings);
  return t.run(vc, kVehicleColumns, snapshot_row(id));
}

StoreError read_vehicle_columns(Tables& t, std::int64_t id, core::VehicleStore& st,
                                std::vector<core::VehicleGhost>& ghosts,
                                std::vector<std::uint32_t>& crossings) {
  const std::string row = snapshot_row(id);
  const bool with_ghosts = t.file_version() >= 13;
  const TableColumns& columns = with_ghosts ? kVehicleColumns : kVehicleColumnsBefore13;
  Statement s;
  std::size_t n = 0;
  if (StoreError e = t.blob_row(columns, id, row, s, n); !e.ok()) return e;
  RowReader rr(s, columns);
  rr.ids("id_index", "id_generation", n, st.id);
  rr.blob("garage", n, st.garage);
  rr.blob("ordinal", n, st.ordinal);
  rr.blob("prototype", n, st.prototype);
  rr.blob("route_index", n, st.route_index);
  rr.blob("lane", n, st.lane);
  rr.blob("s_m", n, st.s_m);
  rr.blob("speed_mps", n, st.speed_mps);
  rr.blob("strategy", n, st.strategy);
  rr.blob("policy", n, st.control_policy);
  rr.blob("reason", n, st.reason);
  rr.blob("tier", n, st.sim_tier);
  rr.ids("leader_index", "leader_generation", n, st.leader);
  rr.blob("steps_advanced", n, st.steps_advanced);
  rr.blob("waiting_since", n, st.waiting_since);
  rr.blob("despawn_requested", n, st.despawn_requested);
  rr.blob("last_advance_step", n, st.last_advance_step);
  const auto ghost_count =
      with_ghosts
          ? static_cast<std::size_t>(rr.integer("ghost_count", 0, core::kBorderPedestriansMax))
          : 0;
  GhostColumns g;
  if (with_ghosts) {
    rr.ids("ghost_id_index", "ghost_id_generation", ghost_count, g.id);
    rr.blob("ghost_garage", ghost_count, g.garage);
    rr.blob("ghost_route_index", ghost_count, g.route_index);
    rr.blob("ghost_lane", ghost_count, g.lane);
    rr.blob("ghost_s_m", ghost_count, g.s_m);
    const auto crossing_count = static_cast<std::size_t>(
        rr.integer("ghost_crossing_count", 0, std::numeric_limits<std::uint32_t>::max()));
    rr.blob("ghost_crossings", crossing_count, crossings);
  }
  if (rr.ok()) {
    ghosts.clear();
    for (std::size_t k = 0; k < ghost_count; ++k)
      ghosts.push_back({g.id[k], g.garage[k], g.route_index[k], g.lane[k], g.s_m[k]});
  }
  if (rr.ok() &&
      (!decode_strings(rr.text("request_ids"), st.request_id) || st.request_id.size() != n)) {
    rr.fail("request_ids", "expected a JSON array of count strings");
  }
  if (!rr.ok()) return t.row_error(columns, row, rr);
  assert(all_sized(n, st.id, st.garage, st.ordinal, st.prototype, st.route_index, st.lane, st.s_m,
                   st.speed_mps, st.strategy, st.control_policy, st.reason, st.sim_tier, st.leader,
                   st.steps_advanced, st.waiting_since, st.despawn_requested, st.request_id,
                   st.last_advance_step));
  return {};
}

// The three list tables of the garages, prepared once per snapshot.
struct GarageListInserts {
  Insert queue, dispatched, mouth;
};

StoreError write_garage_lists(Tables& t, std::int64_t id, std::size_t gi,
                              const core::GarageState& gs, GarageListInserts& ins) {
  const std::string row = snapshot_row(id) + " garage_index=" + std::to_string(gi);
  const auto key = [&](Insert& i, std::size_t k) -> Insert& {
    return i.i64("snapshot_id", id)
        .i64("garage_index", static_cast<std::int64_t>(gi))
        .i64("position", static_cast<std::int64_t>(k));
  };
  for (std::size_t k = 0; k < gs.queue.size(); ++k) {
    const core::QueuedRequest& r = gs.queue[k];
    Insert& q = key(ins.queue, k);
    q.text("request_id", r.request_id).i64("prototype", r.prototype).i64("priority", r.priority);
    q.u64("enqueue_ordinal", r.enqueue_ordinal);
    if (StoreError e = t.run(q, kGarageQueue, row); !e.ok()) return e;
  }
  for (std::size_t k = 0; k < gs.mouth.size(); ++k) {
    const core::MouthVehicle& m = gs.mouth[k];
    Insert& q = key(ins.mouth, k);
    q.i64("id_index", m.id.index).i64("id_generation", m.id.generation);
    q.u64("ordinal", m.ordinal).i64("prototype", m.prototype).text("request_id", m.request_id);
    if (StoreError e = t.run(q, kGarageMouth, row); !e.ok()) return e;
  }
  Insert& d = ins.dispatched;
  for (const std::string& r : gs.dispatched) {
    d.i64("snapshot_id", id)
        .i64("garage_index", static_cast<std::int64_t>(gi))
        .text("request_id", r);
    if (StoreError e = t.run(d, kGarageDispatched, row); !e.ok()) return e;
  }
  return {};
}

StoreError write_garages(Tables& t, std::int64_t id, const core::VehicleCheckpoint& v) {
  Insert g;
  GarageListInserts lists;
  if (StoreError e = t.prepare(kGarages, g); !e.ok()) return e;
  if (StoreError e = t.prepare(kGarageQueue, lists.queue); !e.ok()) return e;
  if (StoreError e = t.prepare(kGarageDispatched, lists.dispatched); !e.ok()) return e;
  if (StoreError e = t.prepare(kGarageMouth, lists.mouth); !e.ok()) return e;
  for (std::size_t gi = 0; gi < v.garages.size(); ++gi) {
    const core::GarageState& gs = v.garages[gi];
    g.i64("snapshot_id", id).i64("garage_index", static_cast<std::int64_t>(gi));
    g.text("garage_id", gi < v.garage_ids.size() ? v.garage_ids[gi] : std::string());
    for (const auto& [column, field] : garage_counters(gs)) g.u64(column, *field);
    g.i64("has_dispatched", gs.has_dispatched ? 1 : 0)
        .i64("last_gate", static_cast<std::int64_t>(gs.last_gate));
    g.text("gate_steps", encode_counts(gs.gate_steps));
    if (StoreError e = t.run(g, kGarages, snapshot_row(id) + " garage_index=" + std::to_string(gi));
        !e.ok())
      return e;
    if (StoreError e = write_garage_lists(t, id, gi, gs, lists); !e.ok()) return e;
  }
  return {};
}

StoreError read_garages(Tables& t, std::int64_t id, core::VehicleCheckpoint& v) {
  const bool with_away = t.file_version() >= 13;
  return t.read_rows(with_away ? kGarages : kGaragesBefore13, "garage_index", "", id,
                     snapshot_row(id), [&](RowReader& rr, const std::string&) {
                       core::GarageState gs;
                       v.garage_ids.push_back(rr.text("garage_id"));
                       for (const auto& [column, field] : garage_counters(gs)) {
                         if (with_away || std::string_view(column) != "away")
                           *field = rr.u64(column);
                       }
                       gs.has_dispatched = rr.flag("has_dispatched");
                       gs.last_gate = static_cast<core::DispatchGate>(
                           rr.integer("last_gate", 0, core::kDispatchGateCount - 1));
                       if (rr.ok() && !decode_counts(rr.text("gate_steps"), gs.gate_steps)) {
                         rr.fail("gate_steps", "expected a JSON array of " +
                                                   std::to_string(core::kDispatchGateCount) +
                                                   " counts");
                       }
                       v.garages.push_back(std::move(gs));
                     });
}

// A row of a garage list kept by position (garage_queue, garage_mouth): its
// garage and its label; its position must be the next of that garage's
// `list` (rows run 0, 1, 2, ...). Null with `e` set when not.
template <class T>
core::GarageState* positioned_row(Tables& t, const TableColumns& cols, RowReader& rr,
                                  const std::string& row, core::VehicleCheckpoint& v,
                                  std::vector<T> core::GarageState::*list, std::string& label,
                                  StoreError& e) {
  const std::int64_t gi =
      rr.integer("garage_index", 0, static_cast<std::int64_t>(v.garages.size()) - 1);
  if (!rr.ok()) {
    e = t.error(cols.table(), row, "garage_index", "unknown garage");
    return nullptr;
  }
  core::GarageState& gs = v.garages[static_cast<std::size_t>(gi)];
  label = row + " garage_index=" + rr.text("garage_index") + " position=" + rr.text("position");
  if (rr.integer("position", 0, INT64_MAX) != static_cast<std::int64_t>((gs.*list).size())) {
    e = t.error(cols.table(), label, "position", "not contiguous");
    return nullptr;
  }
  return &gs;
}

StoreError read_garage_queue(Tables& t, std::int64_t id, core::VehicleCheckpoint& v) {
  const std::string row = snapshot_row(id);
  return t.each_row(kGarageQueue, "garage_index, position", id, row,
                    [&](RowReader& rr, const Statement&) -> StoreError {
                      std::string label;
                      StoreError e;
                      core::GarageState* gs = positioned_row(t, kGarageQueue, rr, row, v,
                                                             &core::GarageState::queue, label, e);
                      if (gs == nullptr) return e;
                      gs->queue.push_back({rr.text("request_id"), rr.u32("prototype"),
                                           rr.i32("priority"), rr.u64("enqueue_ordinal")});
                      if (!rr.ok()) return t.row_error(kGarageQueue, label, rr);
                      return {};
                    });
}

// The mouths (schema 12; a file from before held no vehicle in a mouth).
// World::restore checks what the rows say against the rest of the state.
StoreError read_garage_mouths(Tables& t, std::int64_t id, core::VehicleCheckpoint& v) {
  if (t.file_version() < 12) return {};
  const std::string row = snapshot_row(id);
  return t.each_row(
      kGarageMouth, "garage_index, position", id, row,
      [&](RowReader& rr, const Statement&) -> StoreError {
        std::string label;
        StoreError e;
        core::GarageState* gs =
            positioned_row(t, kGarageMouth, rr, row, v, &core::GarageState::mouth, label, e);
        if (gs == nullptr) return e;
        core::MouthVehicle m;
        m.id = {rr.u32("id_index"), rr.u32("id_generation")};
        m.ordinal = rr.u64("ordinal");
        m.prototype = rr.u32("prototype");
        m.request_id = rr.text("request_id");
        if (!rr.ok()) return t.row_error(kGarageMouth, label, rr);
        if (m.id.is_null()) {
          return t.error(kGarageMouth.table(), label, "id_generation", "0 is the null entity");
        }
        gs->mouth.push_back(std::move(m));
        return {};
      });
}

StoreError read_garage_lists(Tables& t, std::int64_t id, core::VehicleCheckpoint& v) {
  const std::string row = snapshot_row(id);
  if (StoreError e = read_garage_queue(t, id, v); !e.ok()) return e;
  if (StoreError e = read_garage_mouths(t, id, v); !e.ok()) return e;
  return t.each_row(
      kGarageDispatched, "garage_index, request_id", id, row,
      [&](RowReader& rr, const Statement&) -> StoreError {
        const std::int64_t gi =
            rr.integer("garage_index", 0, static_cast<std::int64_t>(v.garages.size()) - 1);
        if (!rr.ok()) return t.error("garage_dispatched", row, "garage_index", "unknown garage");
        v.garages[static_cast<std::size_t>(gi)].dispatched.push_back(rr.text("request_id"));
        return {};
      });
}

StoreError write_signals(Tables& t, std::int64_t id, const core::VehicleCheckpoint& v) {
  Insert sg;
  if (StoreError e = t.prepare(kSignals, sg); !e.ok()) return e;
  for (std::size_t si = 0; si < v.signals.size(); ++si) {
    const core::SignalState& ss = v.signals[si];
    sg.i64("snapshot_id", id).i64("signal_index", static_cast<std::int64_t>(si));
    sg.text("signal_id", si < v.signal_ids.size() ? v.signal_ids[si] : std::string());
    sg.i64("phase", static_cast<std::int64_t>(ss.phase))
        .u64("phase_elapsed_us", ss.phase_elapsed_us);
    sg.u64("cycles", ss.cycles);
    if (StoreError e = t.run(sg, kSignals, snapshot_row(id)); !e.ok()) return e;
  }
  return {};
}

StoreError read_signals(Tables& t, std::int64_t id, core::VehicleCheckpoint& v) {
  return t.read_rows(
      kSignals, "signal_index", "", id, snapshot_row(id), [&](RowReader& rr, const std::string&) {
        const std::int64_t phase = rr.integer("phase", 0, 2);  // 0 open, 1 yield, 2 closed
        v.signal_ids.push_back(rr.text("signal_id"));
        v.signals.push_back(
            {static_cast<core::SignalPhase>(phase), rr.u64("phase_elapsed_us"), rr.u64("cycles")});
      });
}

}  // namespace

std::vector<const TableColumns*> vehicle_tables() {
  return {&kVehicleColumns, &kGarages, &kGarageQueue, &kGarageDispatched, &kGarageMouth, &kSignals};
}

StoreError write_vehicles(Tables& t, std::int64_t id, const core::VehicleCheckpoint& v) {
  if (StoreError e = write_vehicle_columns(t, id, v.store, v.ghosts, v.foreign_crossings); !e.ok())
    return e;
  if (StoreError e = write_garages(t, id, v); !e.ok()) return e;
  return write_signals(t, id, v);
}

StoreError read_vehicles(Tables& t, std::int64_t id, core::VehicleCheckpoint& v) {
  if (StoreError e = read_vehicle_columns(t, id, v.store, v.ghosts, v.foreign_crossings); !e.ok())
    return e;
  if (StoreError e = read_garages(t, id, v); !e.ok()) return e;
  if (StoreError e = read_garage_lists(t, id, v); !e.ok()) return e;
  return read_signals(t, id, v);
}

}  // namespace bustle::persist::store
