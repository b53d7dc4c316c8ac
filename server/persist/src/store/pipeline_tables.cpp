// The spawn pipeline's tables (counters, live and recent handles), the orphan
// set and retiring FIFO, the observers' views, and the shared route buffer.
#include "tables.hpp"

namespace bustle::persist::store {
namespace {

const TableColumns kObserverViews{
    "observer_views", {"snapshot_id", "observer_index", "z_m", "has_heading", "heading_rad"}};
const TableColumns kClientObservers{
    "client_observers",
    {"snapshot_id", "observer_index", "x_m", "y_m", "z_m", "has_heading", "heading_rad"}};
const TableColumns kObserverFollow{"observer_follow", {"snapshot_id", "id_index", "id_generation"}};
// The observer_follow row of a world still waiting to follow its first
// vehicle (scenario observer_follow = first_vehicle): no entity has this
// index (capacities stop at 2^24) and generation 0 is never issued, so the
// row cannot be mistaken for a followed entity; schema 5 needs no new table.
constexpr std::uint32_t kFollowFirstVehicleIndex = UINT32_MAX;
const TableColumns kAdmissionMask{"admission_mask",
                                  {"snapshot_id", "position", "id_index", "id_generation"}};
const TableColumns kClosedLanes{"closed_lanes", {"snapshot_id", "position", "lane_index"}};
const TableColumns kLaneWaiters{
    "lane_waiters", {"snapshot_id", "position", "id_index", "id_generation", "since_step"}};
const TableColumns kLaneClosureCounters{
    "lane_closure_counters",
    {"snapshot_id", "closures_total", "openings_total", "reroutes_total", "dead_ends_total",
     "spawns_deferred_total"}};
const TableColumns kSpawnPipeline{"spawn_pipeline",
                                  {"snapshot_id", "next_handle", "requested", "per_state_total",
                                   "deferred_by_cap", "deferred_by_capacity", "deferred_by_zone",
                                   "displaced_total"}};  // displaced_total: migration 0009
// A file read without migrating (read-only) from before schema 9 has no
// displaced_total column: nothing was displaced.
const TableColumns kSpawnPipelineBefore9{
    "spawn_pipeline",
    {"snapshot_id", "next_handle", "requested", "per_state_total", "deferred_by_cap",
     "deferred_by_capacity", "deferred_by_zone"}};
const TableColumns kSpawnHandles{
    "spawn_handles",
    {"snapshot_id", "list", "position", "handle", "state", "failure", "entity_index",
     "entity_generation", "client_id", "request_id", "zone", "lane", "priority", "requested_step",
     "deadline_step", "state_step", "route"}};
const TableColumns kOrphans{"orphans",
                            {"snapshot_id", "position", "id_index", "id_generation", "reason",
                             "lane", "s_m", "resident", "release_step"}};
const TableColumns kRetiringFifo{"retiring_fifo",
                                 {"snapshot_id", "position", "id_index", "id_generation"}};
const TableColumns kRouteSlots{"route_slots", {"snapshot_id", "slot", "offset", "count", "target"}};
const TableColumns kRouteLanes{"route_lanes", {"snapshot_id", "position", "lane"}};
const TableColumns kRouteFreeSlots{"route_free_slots", {"snapshot_id", "position", "slot"}};

constexpr const char* kHandleLists[] = {"live", "recent"};  // spawn_handles.list

core::EntityId read_id(RowReader& rr, const char* index_field, const char* generation_field) {
  const std::uint32_t index = rr.u32(index_field);
  return {index, rr.u32(generation_field)};
}

StoreError write_observer_views(Tables& t, std::int64_t id, const core::WorldCheckpoint& cp) {
  const std::string row = snapshot_row(id);
  if (!cp.observer_views.empty() && cp.observer_views.size() != cp.observers.size()) {
    return t.error("observer_views", row, "observer_index",
                   std::to_string(cp.observer_views.size()) + " views for " +
                       std::to_string(cp.observers.size()) +
                       " observers (none, or one per observer)");
  }
  Insert ov;
  if (StoreError e = t.prepare(kObserverViews, ov); !e.ok()) return e;
  for (std::size_t k = 0; k < cp.observer_views.size(); ++k) {
    const core::ObserverView& v = cp.observer_views[k];
    ov.i64("snapshot_id", id).i64("observer_index", static_cast<std::int64_t>(k)).f64("z_m", v.z_m);
    ov.i64("has_heading", v.has_heading ? 1 : 0).f64("heading_rad", v.heading_rad);
    if (StoreError e = t.run(ov, kObserverViews, row + " observer_index=" + std::to_string(k));
        !e.ok())
      return e;
  }
  // Client observers (migration 0003).
  if (cp.client_observer_views.size() != cp.client_observers.size()) {
    return t.error("client_observers", row, "observer_index",
                   std::to_string(cp.client_observer_views.size()) + " views for " +
                       std::to_string(cp.client_observers.size()) +
                       " client observers (one per observer)");
  }
  std::vector<core::ObserverPoint> points;
  for (std::size_t k = 0; k < cp.client_observers.size(); ++k) {
    const core::ObserverView& v = cp.client_observer_views[k];
    points.push_back({cp.client_observers[k].x_m, cp.client_observers[k].y_m, v.z_m, v.has_heading,
                      v.heading_rad});
  }
  return write_observer_rows(t, kClientObservers, id, points);
}

StoreError read_observer_views(Tables& t, std::int64_t id, core::WorldCheckpoint& cp) {
  const std::string row = snapshot_row(id);
  if (StoreError e =
          t.read_rows(kObserverViews, "observer_index", "", id, row,
                      [&](RowReader& rr, const std::string&) {
                        cp.observer_views.push_back(
                            {rr.f64("z_m"), rr.flag("has_heading"), rr.f64("heading_rad")});
                      });
      !e.ok()) {
    return e;
  }
  if (!cp.observer_views.empty() && cp.observer_views.size() != cp.observers.size()) {
    return t.error("observer_views", row, "observer_index",
                   std::to_string(cp.observer_views.size()) + " rows for " +
                       std::to_string(cp.observers.size()) +
                       " observers in world_state.observers (none, or one per observer)");
  }
  // Schema 5: the followed entity (no table before, no row when none).
  if (t.file_version() >= 5) {
    // One row at most (its key is the snapshot), read as it is: the entity's
    // index is not a row position (read_rows' 0, 1, 2 ... check refused any
    // followed entity but index 0).
    if (StoreError e = t.each_row(kObserverFollow, "id_index", id, row,
                                  [&](RowReader& rr, const Statement&) -> StoreError {
                                    const std::uint32_t index = rr.u32("id_index");
                                    const std::uint32_t generation = rr.u32("id_generation");
                                    if (!rr.ok()) return t.row_error(kObserverFollow, row, rr);
                                    if (index == kFollowFirstVehicleIndex && generation == 0) {
                                      cp.follow_first_vehicle = true;
                                    } else {
                                      cp.follow = {index, generation};
                                    }
                                    return {};
                                  });
        !e.ok())
      return e;
  }
  // A checkpoint written before schema 3 has no rows here: an empty set (and
  // a schema-2 file opened read-only has no such table).
  if (t.file_version() < 3) return {};
  return read_observer_rows(t, kClientObservers, id, row, [&](const core::ObserverPoint& o) {
    cp.client_observers.push_back({o.x_m, o.y_m});
    cp.client_observer_views.push_back({o.z_m, o.has_heading, o.heading_rad});
  });
}

StoreError write_spawn_handles(Tables& t, std::int64_t id, const core::SpawnPipelineState& sp) {
  Insert sh;
  if (StoreError e = t.prepare(kSpawnHandles, sh); !e.ok()) return e;
  const std::vector<core::SpawnHandleState>* lists[] = {&sp.live, &sp.recent};
  for (std::size_t l = 0; l < 2; ++l) {
    for (std::size_t k = 0; k < lists[l]->size(); ++k) {
      const core::SpawnHandleState& h = (*lists[l])[k];
      sh.i64("snapshot_id", id)
          .text("list", kHandleLists[l])
          .i64("position", static_cast<std::int64_t>(k));
      sh.u64("handle", h.handle).i64("state", static_cast<std::int64_t>(h.state));
      sh.i64("failure", static_cast<std::int64_t>(h.failure));
      sh.i64("entity_index", h.entity.index).i64("entity_generation", h.entity.generation);
      sh.i64("client_id", h.origin.client_id).i64("request_id", h.origin.request_id);
      sh.i64("zone", h.zone)
          .i64("lane", h.lane)
          .i64("priority", static_cast<std::int64_t>(h.priority));
      sh.u64("requested_step", h.requested_step).u64("deadline_step", h.deadline_step);
      sh.u64("state_step", h.state_step).i64("route", h.route);
      const std::string row =
          snapshot_row(id) + " list='" + kHandleLists[l] + "' position=" + std::to_string(k);
      if (StoreError e = t.run(sh, kSpawnHandles, row); !e.ok()) return e;
    }
  }
  return {};
}

void read_spawn_handle(RowReader& rr, std::vector<core::SpawnHandleState>& list) {
  core::SpawnHandleState h;
  h.handle = rr.u64("handle");
  h.state = static_cast<core::SpawnState>(rr.u8("state", core::kSpawnStateCount - 1));
  h.failure = static_cast<core::SpawnFailure>(
      rr.u8("failure", static_cast<std::int64_t>(core::kSpawnFailureLast)));
  h.entity = read_id(rr, "entity_index", "entity_generation");
  h.origin.client_id = rr.u32("client_id");
  h.origin.request_id = rr.u32("request_id");
  h.zone = rr.i32("zone", core::kAnyZone);
  h.lane = rr.u32("lane");
  h.priority = static_cast<core::PriorityClass>(rr.u8("priority", core::kPriorityClassCount - 1));
  h.requested_step = rr.u64("requested_step");
  h.deadline_step = rr.u64("deadline_step");
  h.state_step = rr.u64("state_step");
  h.route = rr.u32("route");
  list.push_back(h);
}

StoreError write_spawn_pipeline(Tables& t, std::int64_t id, const core::SpawnPipelineState& sp) {
  Insert ps;
  if (StoreError e = t.prepare(kSpawnPipeline, ps); !e.ok()) return e;
  ps.i64("snapshot_id", id)
      .u64("next_handle", sp.next_handle)
      .u64("requested", sp.counters.requested);
  ps.text("per_state_total", encode_counts(sp.counters.per_state_total));
  ps.i64("deferred_by_cap", sp.counters.deferred_by_cap)
      .i64("deferred_by_capacity", sp.counters.deferred_by_capacity);
  ps.i64("deferred_by_zone", sp.counters.deferred_by_zone);
  ps.u64("displaced_total", sp.counters.displaced_total);
  if (StoreError e = t.run(ps, kSpawnPipeline, snapshot_row(id)); !e.ok()) return e;
  return write_spawn_handles(t, id, sp);
}

StoreError read_spawn_pipeline(Tables& t, std::int64_t id, core::SpawnPipelineState& sp) {
  const std::string row = snapshot_row(id);
  const TableColumns& columns = t.file_version() >= 9 ? kSpawnPipeline : kSpawnPipelineBefore9;
  Statement st;
  if (StoreError e = t.one_row(columns, id, row, st); !e.ok()) return e;
  RowReader rr(st, columns);
  sp.next_handle = rr.u64("next_handle");
  sp.counters.requested = rr.u64("requested");
  sp.counters.deferred_by_cap = rr.u32("deferred_by_cap");
  sp.counters.deferred_by_capacity = rr.u32("deferred_by_capacity");
  sp.counters.deferred_by_zone = rr.u32("deferred_by_zone");
  sp.counters.displaced_total = t.file_version() >= 9 ? rr.u64("displaced_total") : 0;
  if (rr.ok() && !decode_counts(rr.text("per_state_total"), sp.counters.per_state_total)) {
    rr.fail("per_state_total",
            "expected a JSON array of " + std::to_string(core::kSpawnStateCount) + " counts");
  }
  if (!rr.ok()) return t.row_error(columns, row, rr);
  std::vector<core::SpawnHandleState>* lists[] = {&sp.live, &sp.recent};
  for (std::size_t l = 0; l < 2; ++l) {
    if (StoreError e = t.read_rows(
            kSpawnHandles, "position", std::string("list='") + kHandleLists[l] + "'", id, row,
            [&](RowReader& hr, const std::string&) { read_spawn_handle(hr, *lists[l]); });
        !e.ok()) {
      return e;
    }
  }
  return {};
}

StoreError write_orphans(Tables& t, std::int64_t id, const core::WorldCheckpoint& cp) {
  Insert op;
  if (StoreError e = t.prepare(kOrphans, op); !e.ok()) return e;
  for (std::size_t k = 0; k < cp.orphans.size(); ++k) {
    const core::OrphanState& o = cp.orphans[k];
    op.i64("snapshot_id", id).i64("position", static_cast<std::int64_t>(k));
    op.i64("id_index", o.id.index).i64("id_generation", o.id.generation).i64("reason", o.reason);
    op.i64("lane", o.lane)
        .f64("s_m", o.s_m)
        .i64("resident", o.resident)
        .u64("release_step", o.release_step);
    if (StoreError e = t.run(op, kOrphans, snapshot_row(id) + " position=" + std::to_string(k));
        !e.ok())
      return e;
  }
  Insert rf;
  if (StoreError e = t.prepare(kRetiringFifo, rf); !e.ok()) return e;
  for (std::size_t k = 0; k < cp.retiring_fifo.size(); ++k) {
    rf.i64("snapshot_id", id).i64("position", static_cast<std::int64_t>(k));
    rf.i64("id_index", cp.retiring_fifo[k].index)
        .i64("id_generation", cp.retiring_fifo[k].generation);
    if (StoreError e =
            t.run(rf, kRetiringFifo, snapshot_row(id) + " position=" + std::to_string(k));
        !e.ok()) {
      return e;
    }
  }
  return {};
}

StoreError read_orphans(Tables& t, std::int64_t id, core::WorldCheckpoint& cp) {
  const std::string row = snapshot_row(id);
  if (StoreError e = t.read_rows(kOrphans, "position", "", id, row,
                                 [&](RowReader& rr, const std::string&) {
                                   core::OrphanState o;
                                   o.id = read_id(rr, "id_index", "id_generation");
                                   o.reason = rr.u8("reason");
                                   o.lane = rr.u32("lane");
                                   o.s_m = rr.f64("s_m");
                                   o.resident = rr.u32("resident");
                                   o.release_step = rr.u64("release_step");
                                   cp.orphans.push_back(o);
                                 });
      !e.ok()) {
    return e;
  }
  return t.read_rows(kRetiringFifo, "position", "", id, row,
                     [&](RowReader& rr, const std::string&) {
                       cp.retiring_fifo.push_back(read_id(rr, "id_index", "id_generation"));
                     });
}

// A per-snapshot list of u32 values: (snapshot_id, position, value).
StoreError write_u32_rows(Tables& t, const TableColumns& cols, const char* column, std::int64_t id,
                          const std::vector<std::uint32_t>& values) {
  Insert st;
  if (StoreError e = t.prepare(cols, st); !e.ok()) return e;
  for (std::size_t k = 0; k < values.size(); ++k) {
    st.i64("snapshot_id", id).i64("position", static_cast<std::int64_t>(k)).i64(column, values[k]);
    if (StoreError e = t.run(st, cols, snapshot_row(id) + " position=" + std::to_string(k));
        !e.ok())
      return e;
  }
  return {};
}

StoreError read_u32_rows(Tables& t, const TableColumns& cols, const char* column, std::int64_t id,
                         std::vector<std::uint32_t>& out) {
  return t.read_rows(cols, "position", "", id, snapshot_row(id),
                     [&](RowReader& rr, const std::string&) { out.push_back(rr.u32(column)); });
}

}  // namespace

std::vector<const TableColumns*> pipeline_tables() {
  return {&kObserverViews, &kClientObservers,    &kObserverFollow, &kAdmissionMask,
          &kSpawnPipeline, &kSpawnHandles,       &kOrphans,        &kRetiringFifo,
          &kRouteSlots,    &kRouteLanes,         &kRouteFreeSlots, &kClosedLanes,
          &kLaneWaiters,   &kLaneClosureCounters};
}

StoreError write_observer_rows(Tables& t, const TableColumns& cols, std::int64_t id,
                               const std::vector<core::ObserverPoint>& points) {
  Insert ob;
  if (StoreError e = t.prepare(cols, ob); !e.ok()) return e;
  for (std::size_t k = 0; k < points.size(); ++k) {
    const core::ObserverPoint& o = points[k];
    ob.i64("snapshot_id", id)
        .i64("observer_index", static_cast<std::int64_t>(k))
        .f64("x_m", o.x_m)
        .f64("y_m", o.y_m);
    ob.f64("z_m", o.z_m)
        .i64("has_heading", o.has_heading ? 1 : 0)
        .f64("heading_rad", o.heading_rad);
    if (StoreError e = t.run(ob, cols, snapshot_row(id) + " observer_index=" + std::to_string(k));
        !e.ok())
      return e;
  }
  return {};
}

StoreError read_observer_rows(Tables& t, const TableColumns& cols, std::int64_t id,
                              const std::string& row,
                              const std::function<void(const core::ObserverPoint&)>& add) {
  return t.read_rows(cols, "observer_index", "", id, row, [&](RowReader& rr, const std::string&) {
    core::ObserverPoint o;
    o.x_m = rr.f64("x_m");
    o.y_m = rr.f64("y_m");
    o.z_m = rr.f64("z_m");
    o.has_heading = rr.flag("has_heading");
    o.heading_rad = rr.f64("heading_rad");
    if (rr.ok()) add(o);
  });
}

// Schema 8: lane closures. Nothing is written until a lane was ever closed.
StoreError write_lane_closures(Tables& t, std::int64_t id, const core::WorldCheckpoint& cp) {
  const core::LaneClosureCounters& k = cp.lane_closure;
  if (k.closures_total == 0) return {};
  Insert c;
  if (StoreError e = t.prepare(kLaneClosureCounters, c); !e.ok()) return e;
  c.i64("snapshot_id", id)
      .u64("closures_total", k.closures_total)
      .u64("openings_total", k.openings_total)
      .u64("reroutes_total", k.reroutes_total);
  c.u64("dead_ends_total", k.dead_ends_total).u64("spawns_deferred_total", k.spawns_deferred_total);
  if (StoreError e = t.run(c, kLaneClosureCounters, snapshot_row(id)); !e.ok()) return e;
  Insert l;
  if (StoreError e = t.prepare(kClosedLanes, l); !e.ok()) return e;
  for (std::size_t n = 0; n < cp.closed_lanes.size(); ++n) {
    l.i64("snapshot_id", id)
        .i64("position", static_cast<std::int64_t>(n))
        .i64("lane_index", cp.closed_lanes[n]);
    if (StoreError e = t.run(l, kClosedLanes, snapshot_row(id) + " position=" + std::to_string(n));
        !e.ok())
      return e;
  }
  Insert w;
  if (StoreError e = t.prepare(kLaneWaiters, w); !e.ok()) return e;
  for (std::size_t n = 0; n < cp.lane_waiters.size(); ++n) {
    const core::LaneWaiter& lw = cp.lane_waiters[n];
    w.i64("snapshot_id", id)
        .i64("position", static_cast<std::int64_t>(n))
        .i64("id_index", lw.id.index)
        .i64("id_generation", lw.id.generation)
        .u64("since_step", lw.since_step);
    if (StoreError e = t.run(w, kLaneWaiters, snapshot_row(id) + " position=" + std::to_string(n));
        !e.ok())
      return e;
  }
  return {};
}

StoreError read_lane_closures(Tables& t, std::int64_t id, core::WorldCheckpoint& cp) {
  if (t.file_version() < 8) return {};  // no closures before schema 8
  const std::string row = snapshot_row(id);
  if (StoreError e = t.each_row(kLaneClosureCounters, "snapshot_id", id, row,
                                [&](RowReader& rr, const Statement&) {
                                  core::LaneClosureCounters& k = cp.lane_closure;
                                  k.closures_total = rr.u64("closures_total");
                                  k.openings_total = rr.u64("openings_total");
                                  k.reroutes_total = rr.u64("reroutes_total");
                                  k.dead_ends_total = rr.u64("dead_ends_total");
                                  k.spawns_deferred_total = rr.u64("spawns_deferred_total");
                                  return rr.ok() ? StoreError{}
                                                 : t.row_error(kLaneClosureCounters, row, rr);
                                });
      !e.ok())
    return e;
  if (StoreError e = t.read_rows(kClosedLanes, "position", "", id, row,
                                 [&](RowReader& rr, const std::string&) {
                                   cp.closed_lanes.push_back(rr.u32("lane_index"));
                                 });
      !e.ok())
    return e;
  return t.read_rows(kLaneWaiters, "position", "", id, row, [&](RowReader& rr, const std::string&) {
    const std::uint32_t index = rr.u32("id_index");
    const std::uint32_t generation = rr.u32("id_generation");
    cp.lane_waiters.push_back({{index, generation}, rr.u64("since_step")});
  });
}

StoreError write_pipeline(Tables& t, std::int64_t id, const core::WorldCheckpoint& cp) {
  if (StoreError e = write_observer_views(t, id, cp); !e.ok()) return e;
  if (!cp.follow.is_null() || cp.follow_first_vehicle) {
    Insert f;
    if (StoreError e = t.prepare(kObserverFollow, f); !e.ok()) return e;
    const core::EntityId row_id =
        cp.follow_first_vehicle ? core::EntityId{kFollowFirstVehicleIndex, 0} : cp.follow;
    f.i64("snapshot_id", id).i64("id_index", row_id.index).i64("id_generation", row_id.generation);
    if (StoreError e = t.run(f, kObserverFollow, snapshot_row(id)); !e.ok()) return e;
  }
  if (!cp.admission_masked.empty()) {
    Insert m;
    if (StoreError e = t.prepare(kAdmissionMask, m); !e.ok()) return e;
    for (std::size_t k = 0; k < cp.admission_masked.size(); ++k) {
      m.i64("snapshot_id", id)
          .i64("position", static_cast<std::int64_t>(k))
          .i64("id_index", cp.admission_masked[k].index)
          .i64("id_generation", cp.admission_masked[k].generation);
      if (StoreError e =
              t.run(m, kAdmissionMask, snapshot_row(id) + " position=" + std::to_string(k));
          !e.ok())
        return e;
    }
  }
  if (StoreError e = write_spawn_pipeline(t, id, cp.spawn); !e.ok()) return e;
  if (StoreError e = write_lane_closures(t, id, cp); !e.ok()) return e;
  return write_orphans(t, id, cp);
}

StoreError read_pipeline(Tables& t, std::int64_t id, core::WorldCheckpoint& cp) {
  if (StoreError e = read_observer_views(t, id, cp); !e.ok()) return e;
  // Schema 6: the admission mask (no table before: nobody masked).
  if (t.file_version() >= 6) {
    if (StoreError e =
            t.read_rows(kAdmissionMask, "position", "", id, snapshot_row(id),
                        [&](RowReader& rr, const std::string&) {
                          const std::uint32_t index = rr.u32("id_index");
                          cp.admission_masked.push_back({index, rr.u32("id_generation")});
                        });
        !e.ok())
      return e;
  }
  if (StoreError e = read_spawn_pipeline(t, id, cp.spawn); !e.ok()) return e;
  if (StoreError e = read_lane_closures(t, id, cp); !e.ok()) return e;
  return read_orphans(t, id, cp);
}

StoreError write_routes(Tables& t, std::int64_t id, const core::RouteTableState& r) {
  const std::string row = snapshot_row(id);
  if (r.offset.size() != r.count.size() || r.target.size() != r.count.size()) {
    return t.error("route_slots", row, "slot",
                   "offset, count and target have " + std::to_string(r.offset.size()) + ", " +
                       std::to_string(r.count.size()) + " and " + std::to_string(r.target.size()) +
                       " entries (one of each per slot)");
  }
  Insert rs;
  if (StoreError e = t.prepare(kRouteSlots, rs); !e.ok()) return e;
  for (std::size_t k = 0; k < r.count.size(); ++k) {
    rs.i64("snapshot_id", id).i64("slot", static_cast<std::int64_t>(k)).i64("offset", r.offset[k]);
    rs.i64("count", r.count[k]).i64("target", r.target[k]);
    if (StoreError e = t.run(rs, kRouteSlots, row + " slot=" + std::to_string(k)); !e.ok())
      return e;
  }
  if (StoreError e = write_u32_rows(t, kRouteLanes, "lane", id, r.lanes); !e.ok()) return e;
  return write_u32_rows(t, kRouteFreeSlots, "slot", id, r.free_slots);
}

StoreError read_routes(Tables& t, std::int64_t id, core::RouteTableState& r) {
  // The buffer first: a live route must lie inside it. Free slots and lane
  // indices are checked by World::restore (RouteTable::validate).
  if (StoreError e = read_u32_rows(t, kRouteLanes, "lane", id, r.lanes); !e.ok()) return e;
  const auto buffer = static_cast<std::int64_t>(r.lanes.size());
  const auto read_slot = [&](RowReader& rr, const std::string&) {
    const std::int64_t count = rr.integer("count", 0, buffer);
    // A live route lies inside the buffer; a free slot (count 0) may keep any offset.
    const std::int64_t offset = rr.integer("offset", 0, count > 0 ? buffer - count : UINT32_MAX);
    const std::int64_t target = rr.integer("target", 0, count);
    r.offset.push_back(static_cast<std::uint32_t>(offset));
    r.count.push_back(static_cast<std::uint32_t>(count));
    r.target.push_back(static_cast<std::uint32_t>(target));
  };
  if (StoreError e = t.read_rows(kRouteSlots, "slot", "", id, snapshot_row(id), read_slot); !e.ok())
    return e;
  return read_u32_rows(t, kRouteFreeSlots, "slot", id, r.free_slots);
}

}  // namespace bustle::persist::store
