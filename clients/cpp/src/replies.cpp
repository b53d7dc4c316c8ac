// The server's answers decoded into owned SDK types (replies.hpp).
#include "bustle/client/replies.hpp"

#include <limits>

#include "wire_util.hpp"

namespace bustle::client {

namespace wire = bustle::wire;
using detail::str;
using detail::to_vector;
using detail::unpack;
using detail::unpack_into;

StatsInfo to_stats_info(const wire::Stats& s) {
  return unpack(s);
}

GarageReport to_garage_report(const wire::GarageInfo& g) {
  return unpack(g);
}

SignalReport to_signal_report(const wire::SignalInfo& s) {
  return unpack(s);
}

VehicleReport to_vehicle_report(const wire::VehicleInfo& v) {
  return unpack_into<VehicleReport>(v);
}

ZoneReport to_zone_report(const wire::ZoneInfo& z) {
  return unpack(z);
}

SpawnStatusInfo to_spawn_status(const wire::SpawnStatus& s) {
  return unpack_into<SpawnStatusInfo>(s);
}

EntityReport to_entity_report(const wire::EntityInfo& e) {
  return unpack_into<EntityReport>(e);
}

PopulationReport to_population_report(const wire::PopulationInfo& p) {
  return unpack(p);
}

JobInfo to_job_info(const wire::JobStatus& j) {
  return unpack_into<JobInfo>(j);
}

SnapshotEntry to_snapshot_entry(const wire::SnapshotInfo& i) {
  return unpack(i);
}

LeaseSummaryReport to_lease_summary(const wire::LeaseSummary& l) {
  return unpack(l);
}

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
  // The schema's default (UINT64_MAX) means none.
  if (r.enqueue_ordinal() != std::numeric_limits<std::uint64_t>::max())
    out.enqueue_ordinal = r.enqueue_ordinal();
  return out;
}

}  // namespace bustle::client
