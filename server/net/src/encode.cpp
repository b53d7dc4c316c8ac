// Server-to-client frames other than Delta: Welcome, CommandResult and its
// replies, JobUpdate, SpawnUpdate and Error (encode.hpp).
#include "bustle/net/encode.hpp"

#include <memory>
#include <vector>

#include "bustle/proto/motion.hpp"

namespace bustle::net {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;
using flatbuffers::Vector;

void finish(FlatBufferBuilder& fbb, wire::ServerMessage type, Offset<void> message) {
  fbb.Finish(wire::CreateServerFrame(fbb, type, message), wire::ServerFrameIdentifier());
}

// The schema's enums are the core's values (encode casts between them).
static_assert(static_cast<int>(wire::DespawnReason::MAX) + 1 == core::kDespawnReasonCount);
static_assert(static_cast<int>(wire::DespawnReason::RouteCompleted) ==
              static_cast<int>(core::DespawnReason::RouteCompleted));
static_assert(static_cast<int>(wire::PriorityClass::Background) ==
              static_cast<int>(core::PriorityClass::Background));

wire::EntityId to_wire(core::EntityId id) {
  return wire::EntityId(id.index, id.generation);
}

// Null for an empty string, so absent and empty read the same on the client.
Offset<flatbuffers::String> maybe_string(FlatBufferBuilder& fbb, const std::string& s) {
  return s.empty() ? 0 : fbb.CreateString(s);
}

// The reply tables are the generated object-API types (server.hpp), or are
// filled into them here from the core's reports; wire::X::Pack writes every
// field, so nothing below lists a table's fields for the builder.
template <class T>
Offset<Vector<Offset<typename T::TableType>>> pack_all(FlatBufferBuilder& fbb,
                                                       const std::vector<T>& list) {
  std::vector<Offset<typename T::TableType>> items;
  items.reserve(list.size());
  for (const T& item : list) items.push_back(T::TableType::Pack(fbb, &item));
  return fbb.CreateVector(items);
}

wire::ZoneInfoT zone_info(const ZoneReport& z) {
  const core::ZoneStatus& st = z.status;
  wire::ZoneInfoT o;
  o.id = z.id;
  o.target = st.target;
  o.active = st.active;
  o.dormant = st.dormant;
  o.pending_spawn = st.pending_spawn;
  o.pending_recycle = st.pending_recycle;
  o.activated = st.activated;
  o.recycled = st.recycled;
  o.deferred_by_quota = st.deferred_by_quota;
  o.rejected_by_capacity = st.rejected_by_capacity;
  o.activated_total = st.activated_total;
  o.recycled_total = st.recycled_total;
  o.capacity = z.capacity;
  o.migrated_in = st.migrated_in;
  o.deferred_by_migration = st.deferred_by_migration;
  o.handoffs_started = st.handoffs_started;
  o.handoffs_accepted = st.handoffs_accepted;
  o.handoffs_returned = st.handoffs_returned;
  o.retiring = st.retiring;
  for (const wire::WorkPointInfoT& w : z.work_points)
    o.work_points.push_back(std::make_unique<wire::WorkPointInfoT>(w));
  return o;
}

Offset<Vector<Offset<wire::ZoneInfo>>> make_zones(FlatBufferBuilder& fbb,
                                                  const std::vector<ZoneReport>& list) {
  std::vector<wire::ZoneInfoT> zones;
  zones.reserve(list.size());
  for (const ZoneReport& z : list) zones.push_back(zone_info(z));
  return pack_all(fbb, zones);
}

wire::SpawnStatusT spawn_status(const SpawnReport& s) {
  const core::SpawnHandleState& h = s.handle;
  wire::SpawnStatusT o;
  o.handle = h.handle;
  o.state = static_cast<wire::SpawnState>(h.state);
  o.failure = static_cast<wire::SpawnFailure>(h.failure);
  o.terminal = core::is_terminal(h.state);
  o.entity = to_wire(h.entity);
  o.zone = s.zone;
  o.lane = h.lane;  // core::kAnyLane is the schema's "none" (4294967295)
  o.priority = static_cast<wire::PriorityClass>(h.priority);
  o.requested_step = h.requested_step;
  o.state_step = h.state_step;
  return o;
}

Offset<wire::SpawnStatus> make_spawn_status(FlatBufferBuilder& fbb, const SpawnReport& s) {
  const wire::SpawnStatusT o = spawn_status(s);
  return wire::SpawnStatus::Pack(fbb, &o);
}

wire::EntityInfoT entity_info(const EntityInfoReport& e) {
  const core::EntityReport& r = e.report;
  wire::EntityInfoT o;
  o.id = to_wire(r.id);
  o.alive = r.alive;
  o.kind = static_cast<wire::EntityKind>(r.kind);
  o.lifecycle = static_cast<wire::LifecycleState>(r.lifecycle);
  o.tier = static_cast<wire::SimTier>(r.tier);
  o.representation = static_cast<wire::RepresentationHint>(r.representation);
  o.priority = static_cast<wire::PriorityClass>(r.priority);
  o.origin = static_cast<wire::PedestrianOrigin>(r.origin);
  o.saveable = r.saveable;
  o.forced_full = r.forced_full;
  o.community = e.community;
  o.zone = e.zone;
  o.work_point = e.work_point;
  o.work_slot = r.work_slot;
  o.profession = e.profession;
  o.schedule_phase = e.schedule_phase;
  o.activity = e.activity;
  o.lane = r.lane;
  o.s_m = r.s_m;
  o.x_m = r.pose.x_m;
  o.y_m = r.pose.y_m;
  o.effective_distance_m = r.effective_distance_m;
  o.spawn_handle = r.spawn_handle;
  o.spawn_state = static_cast<wire::SpawnState>(r.spawn_state);
  o.retiring_reason = static_cast<wire::DespawnReason>(r.retiring_reason);
  o.release_step = r.release_step;
  o.admission_masked = r.admission_masked;
  o.corpse = r.corpse;
  o.response_level = r.response_level;
  o.requested_tier = static_cast<wire::SimTier>(r.requested_tier);
  o.capacity_tier = static_cast<wire::SimTier>(r.capacity_tier);
  o.migrations = r.migrations;
  o.last_portal = e.last_portal;
  o.at_work_anchor = r.at_work_anchor;
  return o;
}

// The per-state / per-reason / per-tier arrays, the lifecycle settings and
// the tier and ledger summaries of a PopulationReport.
void fill_population_counters(const PopulationReport& p, wire::PopulationInfoT& o) {
  o.growth_quota = p.settings.growth_quota;
  o.recycle_quota = p.settings.recycle_quota;
  o.interval_ms = p.settings.interval_ms;
  o.migration_budget = p.settings.migration_budget;
  o.spawn_live.assign(p.spawn_live.begin(), p.spawn_live.end());
  o.spawn_totals.assign(std::begin(p.spawn.per_state_total), std::end(p.spawn.per_state_total));
  o.spawn_requested = p.spawn.requested;
  o.spawn_deferred_by_cap = p.spawn.deferred_by_cap;
  o.spawn_deferred_by_capacity = p.spawn.deferred_by_capacity;
  o.spawn_deferred_by_zone = p.spawn.deferred_by_zone;
  o.spawn_displaced_total = p.spawn.displaced_total;
  o.quality = p.quality;
  o.attached_in_use = p.attached_in_use;
  o.attached_limit = p.attached_limit;
  o.unattached_in_use = p.unattached_in_use;
  o.unattached_limit = p.unattached_limit;
  o.no_slot_total = p.no_slot_total;
  o.despawned_by_reason.assign(p.despawned_by_reason.begin(), p.despawned_by_reason.end());
  o.tiers.assign(std::begin(p.tiers.per_tier), std::end(p.tiers.per_tier));
  o.tier_promoted = p.tiers.promoted;
  o.tier_demoted = p.tiers.demoted;
  o.tier_deferred = p.tiers.deferred;
  o.forced_full = p.tiers.forced;
  o.forced_overflow = p.tiers.forced_overflow;
  o.ledger_fragments = p.ledger.fragments;
  o.ledger_deficit = p.ledger.deficit;
  o.ledger_surplus = p.ledger.surplus;
  o.ledger_max_deficit = p.ledger.max_deficit;
}

// The prevention fields of PopulationInfo: live units by state, per-level
// totals and the corpse counters.
void prevention_info(const core::PreventionState& pv, wire::PopulationInfoT& o) {
  o.prevention_level = pv.level;
  for (const core::ResponseUnit& u : pv.units) {
    o.units_queued += u.state == core::ResponseUnitState::Queued;
    o.units_active += u.state == core::ResponseUnitState::Active;
    o.units_retiring += u.state == core::ResponseUnitState::Retiring;
  }
  for (const core::PreventionLevelCounts& c : pv.per_level) {
    o.level_queued.push_back(c.queued);
    o.level_spawned.push_back(c.spawned);
    o.level_canceled.push_back(c.canceled);
    o.level_despawned.push_back(c.despawned);
    o.level_lost.push_back(c.lost);
    o.level_capped.push_back(c.capped);
  }
  o.corpses = static_cast<std::uint32_t>(pv.corpses.size());
  o.corpses_killed = pv.corpse.killed;
  o.corpses_soft_deleted = pv.corpse.soft_deleted;
  o.corpses_force_deleted = pv.corpse.force_deleted;
  o.corpses_pressure_deleted = pv.corpse.pressure_deleted;
}

wire::PopulationInfoT population_info(const PopulationReport& p) {
  wire::PopulationInfoT o;
  o.hour = p.hour;
  o.time_scale = p.time_scale;
  for (const CommunityReport& c : p.communities)
    o.communities.push_back(std::make_unique<CommunityReport>(c));
  o.residents = p.residents;
  o.residents_active = p.residents_active;
  o.residents_retiring = p.residents_retiring;
  o.background = p.background;
  o.spawned = p.spawned;
  o.pedestrian_target = p.pedestrian_target;
  o.handoffs_pending = p.handoffs_pending;
  o.retiring = p.retiring;
  o.faded_total = p.faded_total;
  o.fade_skipped_total = p.fade_skipped_total;
  o.force_full_refused = p.force_full_refused;
  o.admission_masked = p.admission_masked;
  o.follow_first_vehicle = p.follow_first_vehicle;
  prevention_info(p.prevention, o);
  o.closed_lanes = p.closed_lanes;
  o.closed_lane_indices = p.closed_lane_indices;
  o.lane_waiting_pedestrians = p.lane_waiting_pedestrians;
  o.lane_waiting_vehicles = p.lane_waiting_vehicles;
  o.lane_closures_total = p.lane_closure.closures_total;
  o.lane_openings_total = p.lane_closure.openings_total;
  o.lane_reroutes_total = p.lane_closure.reroutes_total;
  o.lane_dead_ends_total = p.lane_closure.dead_ends_total;
  o.lane_spawns_deferred_total = p.lane_closure.spawns_deferred_total;
  for (const core::Vec2& v : p.observers) {
    o.observers_x_m.push_back(v.x_m);
    o.observers_y_m.push_back(v.y_m);
  }
  if (!p.followed.is_null())
    o.followed = std::make_unique<wire::EntityId>(p.followed.index, p.followed.generation);
  fill_population_counters(p, o);
  return o;
}

wire::LeaseSummaryT lease_summary(const StreamTracker::LeaseSummary& l, std::uint32_t grace_steps) {
  wire::LeaseSummaryT o;
  o.requested.assign(std::begin(l.requested), std::end(l.requested));
  o.applied.assign(std::begin(l.applied), std::end(l.applied));
  o.waiting = l.waiting;
  o.waiting_past_grace = l.waiting_past_grace;
  o.past_grace_by_reason.assign(std::begin(l.past_grace_by_reason),
                                std::end(l.past_grace_by_reason));
  o.grace_steps = grace_steps;
  o.reports = l.reports;
  o.entries = l.entries;
  o.unknown_entries = l.unknown_entries;
  return o;
}

template <class Table, class Native>
Offset<Table> pack(FlatBufferBuilder& fbb, const Native& native) {
  return Table::Pack(fbb, &native);
}

}  // namespace

void encode_error(wire::ErrorCode code, const std::string& message, FlatBufferBuilder& fbb) {
  fbb.Clear();
  const auto err = wire::CreateErrorDirect(fbb, code, message.c_str());
  finish(fbb, wire::ServerMessage::Error, err.Union());
}

void encode_welcome(const WelcomeInfo& w, std::uint32_t session_id, Role role,
                    std::uint64_t current_step, FlatBufferBuilder& fbb) {
  fbb.Clear();
  std::vector<Offset<wire::LaneInfo>> lanes;
  lanes.reserve(w.lanes.size());
  std::vector<wire::Vec2d> pts;
  for (std::size_t i = 0; i < w.lanes.size(); ++i) {
    const core::Lane& lane = w.lanes[i];
    pts.clear();
    for (const core::Vec2& p : lane.points) pts.emplace_back(p.x_m, p.y_m);
    lanes.push_back(wire::CreateLaneInfoDirect(
        fbb, static_cast<std::uint32_t>(i), lane.id.c_str(), static_cast<wire::LaneKind>(lane.kind),
        &pts, lane.length_m, static_cast<float>(lane.speed_mps_limit), &lane.successors,
        proto::to_mm(lane.length_m), static_cast<float>(lane.elevation_m)));
  }
  std::vector<Offset<wire::GarageGeometry>> garages;
  for (const GarageGeometry& g : w.garages) {
    garages.push_back(
        wire::CreateGarageGeometryDirect(fbb, g.id.c_str(), g.entrance_lane, &g.route));
  }
  std::vector<Offset<wire::SignalGeometry>> signals;
  for (const SignalGeometry& sg : w.signals) {
    signals.push_back(wire::CreateSignalGeometryDirect(fbb, sg.id.c_str(), sg.lane, sg.stop_alpha,
                                                       sg.yield_alpha));
  }
  std::vector<Offset<wire::LaneChainInfo>> chains;
  chains.reserve(w.chains.size());
  for (const core::LaneChain& c : w.chains) {
    chains.push_back(wire::CreateLaneChainInfoDirect(fbb, &c.lanes, c.cyclic, c.pedestrian,
                                                     static_cast<float>(c.length_m)));
  }
  std::vector<Offset<flatbuffers::String>> archetypes;
  for (const std::string& a : w.archetypes.names) archetypes.push_back(fbb.CreateString(a));
  const auto welcome = wire::CreateWelcomeDirect(
      fbb, w.server_version.c_str(), proto::kProtocolVersion, session_id,
      role == Role::Operator ? wire::Role::Operator : wire::Role::Viewer, w.step_us,
      static_cast<wire::ClockMode>(w.clock_mode), w.scenario_id.c_str(), current_step, &lanes,
      &garages, &signals, &chains, w.dots_every_steps, &archetypes);
  finish(fbb, wire::ServerMessage::Welcome, welcome.Union());
}

void encode_command_result(const OutboundResult& r, FlatBufferBuilder& fbb) {
  fbb.Clear();
  if (r.forwarded) {
    finish(fbb, wire::ServerMessage::CommandResult,
           wire::CommandResult::Pack(fbb, r.forwarded.get()).Union());
    return;
  }
  const auto stats = r.stats ? wire::Stats::Pack(fbb, &*r.stats) : 0;
  const auto job = r.job ? wire::JobStatus::Pack(fbb, &*r.job) : 0;
  const auto snapshots = r.snapshots ? pack_all(fbb, *r.snapshots) : 0;
  const auto garages = r.garages ? pack_all(fbb, *r.garages) : 0;
  const auto signals = r.signals ? pack_all(fbb, *r.signals) : 0;
  const auto vehicle = r.vehicle ? wire::VehicleInfo::Pack(fbb, &*r.vehicle) : 0;
  const auto zones = r.zones ? make_zones(fbb, *r.zones) : 0;
  const bool batch = r.batch != core::BatchStatus::None;
  const auto handles = batch || !r.handles.empty() ? fbb.CreateVector(r.handles) : 0;
  const auto entity_info_t =
      r.entity_info ? pack<wire::EntityInfo>(fbb, entity_info(*r.entity_info)) : 0;
  const auto population =
      r.population ? pack<wire::PopulationInfo>(fbb, population_info(*r.population)) : 0;
  const auto spawn = r.spawn ? make_spawn_status(fbb, *r.spawn) : 0;
  const auto leases =
      r.leases ? pack<wire::LeaseSummary>(fbb, lease_summary(*r.leases, r.lease_grace_steps)) : 0;
  const auto msg = maybe_string(fbb, r.message);
  const wire::EntityId entity = to_wire(r.entity);
  wire::CommandResultBuilder b(fbb);
  b.add_request_id(r.request_id);
  b.add_status(static_cast<wire::CommandStatus>(r.status));
  b.add_reason(static_cast<wire::RejectReason>(r.reason));
  b.add_message(msg);
  b.add_applied_step(r.applied_step);
  b.add_stats(stats);
  b.add_job(job);
  b.add_snapshots(snapshots);
  b.add_garages(garages);
  b.add_signals(signals);
  b.add_vehicle(vehicle);
  b.add_zones(zones);
  b.add_handle(r.handle);
  if (!r.entity.is_null()) b.add_entity(&entity);
  b.add_batch(static_cast<wire::BatchStatus>(r.batch));
  b.add_handles(handles);
  b.add_entity_info(entity_info_t);
  b.add_population(population);
  b.add_spawn(spawn);
  b.add_leases(leases);
  if (r.enqueue_ordinal) b.add_enqueue_ordinal(*r.enqueue_ordinal);
  finish(fbb, wire::ServerMessage::CommandResult, b.Finish().Union());
}

void encode_job_update(const JobInfo& job, FlatBufferBuilder& fbb) {
  fbb.Clear();
  const auto status = wire::JobStatus::Pack(fbb, &job);
  finish(fbb, wire::ServerMessage::JobUpdate, wire::CreateJobUpdate(fbb, status).Union());
}

void encode_spawn_update(const SpawnReport& spawn, FlatBufferBuilder& fbb) {
  fbb.Clear();
  const auto status = make_spawn_status(fbb, spawn);
  finish(fbb, wire::ServerMessage::SpawnUpdate, wire::CreateSpawnUpdate(fbb, status).Union());
}

}  // namespace bustle::net
