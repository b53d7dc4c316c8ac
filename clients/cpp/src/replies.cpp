#include "bustle/client/replies.hpp"

#include "wire_util.hpp"

namespace bustle::client {

namespace wire = bustle::wire;
using detail::str;
using detail::to_vector;

namespace {
// A generated table's object-API copy (every field the schema has).
template <typename Table>
typename Table::NativeTableType unpack(const Table& table) {
  typename Table::NativeTableType out;
  table.UnPackTo(&out);
  return out;
}
}  // namespace

StatsInfo to_stats_info(const wire::Stats& s) { return unpack(s); }

GarageReport to_garage_report(const wire::GarageInfo& g) { return unpack(g); }

SignalReport to_signal_report(const wire::SignalInfo& s) { return unpack(s); }

VehicleReport to_vehicle_report(const wire::VehicleInfo& v) {
  VehicleReport out;
  if (v.id() != nullptr) out.id = EntityId::from_wire(*v.id());
  out.vehicle_id = str(v.vehicle_id());
  out.garage = str(v.garage());
  out.request_id = str(v.request_id());
  out.prototype = str(v.prototype());
  out.route_index = v.route_index();
  out.lane = v.lane();
  out.s_m = v.s_m();
  out.alpha = v.alpha();
  out.x_m = v.x_m();
  out.y_m = v.y_m();
  out.speed_mps = v.speed_mps();
  out.strategy = v.strategy();
  out.policy = static_cast<ControlPolicy>(v.policy());
  out.reason = v.reason();
  out.tier = static_cast<SimTier>(v.tier());
  if (v.leader() != nullptr) out.leader = EntityId::from_wire(*v.leader());
  out.steps_advanced = v.steps_advanced();
  out.awaiting_turnaround = v.awaiting_turnaround();
  out.despawn_requested = v.despawn_requested();
  return out;
}

ZoneReport to_zone_report(const wire::ZoneInfo& z) { return unpack(z); }

SpawnStatusInfo to_spawn_status(const wire::SpawnStatus& s) {
  SpawnStatusInfo out;
  out.handle = s.handle();
  out.state = s.state();
  out.failure = s.failure();
  out.terminal = s.terminal();
  if (s.entity() != nullptr) out.entity = EntityId::from_wire(*s.entity());
  out.zone = str(s.zone());
  out.lane = s.lane();
  out.priority = s.priority();
  out.requested_step = s.requested_step();
  out.state_step = s.state_step();
  return out;
}

EntityReport to_entity_report(const wire::EntityInfo& e) {
  EntityReport out;
  if (e.id() != nullptr) out.id = EntityId::from_wire(*e.id());
  out.alive = e.alive();
  out.kind = static_cast<EntityKind>(e.kind());
  out.lifecycle = e.lifecycle();
  out.tier = static_cast<SimTier>(e.tier());
  out.representation = static_cast<RepresentationHint>(e.representation());
  out.priority = e.priority();
  out.origin = e.origin();
  out.saveable = e.saveable();
  out.forced_full = e.forced_full();
  out.community = str(e.community());
  out.zone = str(e.zone());
  out.work_point = str(e.work_point());
  out.work_slot = e.work_slot();
  out.lane = e.lane();
  out.s_m = e.s_m();
  out.x_m = e.x_m();
  out.y_m = e.y_m();
  out.effective_distance_m = e.effective_distance_m();
  out.spawn_handle = e.spawn_handle();
  out.spawn_state = e.spawn_state();
  out.retiring_reason = e.retiring_reason();
  out.release_step = e.release_step();
  return out;
}

PopulationReport to_population_report(const wire::PopulationInfo& p) { return unpack(p); }

JobInfo to_job_info(const wire::JobStatus& j) {
  JobInfo out;
  out.job_id = j.job_id();
  out.kind = j.kind();
  out.state = j.state();
  out.terminal = j.terminal();
  out.name = str(j.name());
  out.step = j.step();
  out.message = str(j.message());
  return out;
}

SnapshotEntry to_snapshot_entry(const wire::SnapshotInfo& i) { return unpack(i); }

LeaseSummaryReport to_lease_summary(const wire::LeaseSummary& l) { return unpack(l); }

CommandReply to_command_reply(const wire::CommandResult& r) {
  CommandReply out;
  out.request_id = r.request_id();
  out.status = r.status();
  out.reason = r.reason();
  out.message = str(r.message());
  out.applied_step = r.applied_step();
  if (r.stats() != nullptr) out.stats = to_stats_info(*r.stats());
  if (r.job() != nullptr) out.job = to_job_info(*r.job());
  if (const auto* list = r.snapshots()) {
    std::vector<SnapshotEntry> entries;
    entries.reserve(list->size());
    for (const wire::SnapshotInfo* info : *list) entries.push_back(to_snapshot_entry(*info));
    out.snapshots = std::move(entries);
  }
  if (const auto* list = r.garages()) {
    std::vector<GarageReport> v;
    v.reserve(list->size());
    for (const wire::GarageInfo* g : *list) v.push_back(to_garage_report(*g));
    out.garages = std::move(v);
  }
  if (const auto* list = r.signals()) {
    std::vector<SignalReport> v;
    v.reserve(list->size());
    for (const wire::SignalInfo* g : *list) v.push_back(to_signal_report(*g));
    out.signals = std::move(v);
  }
  if (const auto* list = r.zones()) {
    std::vector<ZoneReport> v;
    v.reserve(list->size());
    for (const wire::ZoneInfo* z : *list) v.push_back(to_zone_report(*z));
    out.zones = std::move(v);
  }
  if (r.vehicle() != nullptr) out.vehicle = to_vehicle_report(*r.vehicle());
  out.handle = r.handle();
  if (r.entity() != nullptr) out.entity = EntityId::from_wire(*r.entity());
  out.batch = r.batch();
  out.handles = to_vector(r.handles());
  if (r.entity_info() != nullptr) out.entity_info = to_entity_report(*r.entity_info());
  if (r.population() != nullptr) out.population = to_population_report(*r.population());
  if (r.spawn() != nullptr) out.spawn = to_spawn_status(*r.spawn());
  if (r.leases() != nullptr) out.leases = to_lease_summary(*r.leases());
  return out;
}

}  // namespace bustle::client
