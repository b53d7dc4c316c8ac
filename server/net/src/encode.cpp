#include "bustle/net/encode.hpp"

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
static_assert(static_cast<int>(wire::PriorityClass::Background) == static_cast<int>(core::PriorityClass::Background));

wire::EntityId to_wire(core::EntityId id) { return wire::EntityId(id.index, id.generation); }

// Null for an empty string, so absent and empty read the same on the client.
Offset<flatbuffers::String> maybe_string(FlatBufferBuilder& fbb, const std::string& s) {
  return s.empty() ? 0 : fbb.CreateString(s);
}

// Every field of the generated StatsT (object API): nothing to copy here.
Offset<wire::Stats> make_stats(FlatBufferBuilder& fbb, const StatsSnapshot& s) { return wire::Stats::Pack(fbb, &s); }

Offset<Vector<Offset<wire::GarageInfo>>> make_garages(FlatBufferBuilder& fbb, const std::vector<GarageReport>& list) {
  std::vector<Offset<wire::GarageInfo>> items;
  for (const GarageReport& g : list) {
    std::vector<Offset<flatbuffers::String>> queued;
    for (const std::string& q : g.queued) queued.push_back(fbb.CreateString(q));
    items.push_back(wire::CreateGarageInfoDirect(
        fbb, g.id.c_str(), &queued, g.dispatched, g.managed, g.capacity, g.frame_index, g.next_vehicle_ordinal,
        static_cast<wire::DispatchGate>(g.last_gate), &g.gate_steps, g.turnarounds, g.rejected_invalid,
        g.rejected_duplicate, g.rejected_queue_full, g.canceled, g.plan_total, g.plan_injected));
  }
  return fbb.CreateVector(items);
}

Offset<Vector<Offset<wire::SignalInfo>>> make_signals(FlatBufferBuilder& fbb, const std::vector<SignalReport>& list) {
  std::vector<Offset<wire::SignalInfo>> items;
  for (const SignalReport& sg : list) {
    items.push_back(wire::CreateSignalInfoDirect(fbb, sg.id.c_str(), sg.lane, static_cast<wire::SignalPhase>(sg.phase),
                                                 sg.phase_elapsed_us, sg.cycles));
  }
  return fbb.CreateVector(items);
}

Offset<Vector<Offset<wire::ZoneInfo>>> make_zones(FlatBufferBuilder& fbb, const std::vector<ZoneReport>& list) {
  std::vector<Offset<wire::ZoneInfo>> items;
  for (const ZoneReport& z : list) {
    const core::ZoneStatus& st = z.status;
    const auto id = fbb.CreateString(z.id);
    wire::ZoneInfoBuilder b(fbb);
    b.add_id(id);
    b.add_target(st.target);
    b.add_active(st.active);
    b.add_dormant(st.dormant);
    b.add_pending_spawn(st.pending_spawn);
    b.add_pending_recycle(st.pending_recycle);
    b.add_activated(st.activated);
    b.add_recycled(st.recycled);
    b.add_deferred_by_quota(st.deferred_by_quota);
    b.add_rejected_by_capacity(st.rejected_by_capacity);
    b.add_activated_total(st.activated_total);
    b.add_recycled_total(st.recycled_total);
    b.add_capacity(z.capacity);
    b.add_migrated_in(st.migrated_in);
    b.add_deferred_by_migration(st.deferred_by_migration);
    b.add_handoffs_started(st.handoffs_started);
    b.add_handoffs_accepted(st.handoffs_accepted);
    b.add_handoffs_returned(st.handoffs_returned);
    b.add_retiring(st.retiring);
    items.push_back(b.Finish());
  }
  return fbb.CreateVector(items);
}

Offset<wire::VehicleInfo> make_vehicle(FlatBufferBuilder& fbb, const VehicleReport& v) {
  const wire::EntityId id = to_wire(v.id);
  const wire::EntityId leader = to_wire(v.leader);
  return wire::CreateVehicleInfoDirect(
      fbb, &id, v.vehicle_id.c_str(), v.garage.c_str(), v.request_id.c_str(), v.prototype.c_str(), v.route_index,
      v.lane, v.s_m, v.alpha, v.x_m, v.y_m, v.speed_mps, static_cast<wire::VehicleStrategyState>(v.strategy),
      static_cast<wire::ControlPolicy>(v.policy), static_cast<wire::PolicyReason>(v.reason),
      static_cast<wire::SimTier>(v.tier), &leader, v.steps_advanced, v.awaiting_turnaround, v.despawn_requested);
}

Offset<Vector<Offset<wire::SnapshotInfo>>> make_snapshots(FlatBufferBuilder& fbb,
                                                          const std::vector<SnapshotEntry>& list) {
  std::vector<Offset<wire::SnapshotInfo>> items;
  for (const SnapshotEntry& e : list) {
    items.push_back(wire::CreateSnapshotInfoDirect(fbb, e.name.c_str(), e.kind.c_str(), e.scenario_id.c_str(), e.step,
                                                   e.sim_time_us, e.digest, e.pedestrians, e.created_unix_ms));
  }
  return fbb.CreateVector(items);
}

Offset<wire::JobStatus> make_job_status(FlatBufferBuilder& fbb, const JobInfo& j) {
  return wire::CreateJobStatusDirect(fbb, j.job_id, static_cast<wire::JobKind>(j.kind),
                                     static_cast<wire::JobState>(j.state), j.terminal, j.name.c_str(), j.step,
                                     j.message.c_str());
}

Offset<wire::SpawnStatus> make_spawn_status(FlatBufferBuilder& fbb, const SpawnReport& s) {
  const core::SpawnHandleState& h = s.handle;
  const auto zone = maybe_string(fbb, s.zone);
  const wire::EntityId entity = to_wire(h.entity);
  wire::SpawnStatusBuilder b(fbb);
  b.add_handle(h.handle);
  b.add_state(static_cast<wire::SpawnState>(h.state));
  b.add_failure(static_cast<wire::SpawnFailure>(h.failure));
  b.add_terminal(core::is_terminal(h.state));
  b.add_entity(&entity);
  b.add_zone(zone);
  b.add_lane(h.lane);  // core::kAnyLane is the schema's "none" (4294967295)
  b.add_priority(static_cast<wire::PriorityClass>(h.priority));
  b.add_requested_step(h.requested_step);
  b.add_state_step(h.state_step);
  return b.Finish();
}

Offset<wire::EntityInfo> make_entity_info(FlatBufferBuilder& fbb, const EntityInfoReport& e) {
  const core::EntityReport& r = e.report;
  const auto community = maybe_string(fbb, e.community);
  const auto zone = maybe_string(fbb, e.zone);
  const auto work_point = maybe_string(fbb, e.work_point);
  const wire::EntityId id = to_wire(r.id);
  wire::EntityInfoBuilder b(fbb);
  b.add_id(&id);
  b.add_alive(r.alive);
  b.add_kind(static_cast<wire::EntityKind>(r.kind));
  b.add_lifecycle(static_cast<wire::LifecycleState>(r.lifecycle));
  b.add_tier(static_cast<wire::SimTier>(r.tier));
  b.add_representation(static_cast<wire::RepresentationHint>(r.representation));
  b.add_priority(static_cast<wire::PriorityClass>(r.priority));
  b.add_origin(static_cast<wire::PedestrianOrigin>(r.origin));
  b.add_saveable(r.saveable);
  b.add_forced_full(r.forced_full);
  b.add_community(community);
  b.add_zone(zone);
  b.add_work_point(work_point);
  b.add_work_slot(r.work_slot);
  b.add_lane(r.lane);
  b.add_s_m(r.s_m);
  b.add_x_m(r.pose.x_m);
  b.add_y_m(r.pose.y_m);
  b.add_effective_distance_m(r.effective_distance_m);
  b.add_spawn_handle(r.spawn_handle);
  b.add_spawn_state(static_cast<wire::SpawnState>(r.spawn_state));
  b.add_retiring_reason(static_cast<wire::DespawnReason>(r.retiring_reason));
  b.add_release_step(r.release_step);
  return b.Finish();
}

Offset<wire::PopulationInfo> make_population(FlatBufferBuilder& fbb, const PopulationReport& p) {
  std::vector<Offset<wire::CommunityInfo>> communities;
  communities.reserve(p.communities.size());
  for (const CommunityReport& c : p.communities) {
    communities.push_back(wire::CreateCommunityInfo(fbb, fbb.CreateString(c.id), c.base_population, c.target,
                                                    maybe_string(fbb, c.zone), c.active, c.dormant, c.saveable));
  }
  const auto communities_vec = fbb.CreateVector(communities);
  const auto spawn_live = fbb.CreateVector(p.spawn_live.data(), p.spawn_live.size());
  const auto spawn_totals = fbb.CreateVector(p.spawn.per_state_total, core::kSpawnStateCount);
  const auto despawned = fbb.CreateVector(p.despawned_by_reason.data(), p.despawned_by_reason.size());
  const auto tiers = fbb.CreateVector(p.tiers.per_tier, core::kSimTierCount);
  wire::PopulationInfoBuilder b(fbb);
  b.add_hour(p.hour);
  b.add_time_scale(p.time_scale);
  b.add_growth_quota(p.settings.growth_quota);
  b.add_recycle_quota(p.settings.recycle_quota);
  b.add_interval_ms(p.settings.interval_ms);
  b.add_migration_budget(p.settings.migration_budget);
  b.add_communities(communities_vec);
  b.add_residents(p.residents);
  b.add_residents_active(p.residents_active);
  b.add_residents_retiring(p.residents_retiring);
  b.add_background(p.background);
  b.add_spawned(p.spawned);
  b.add_pedestrian_target(p.pedestrian_target);
  b.add_handoffs_pending(p.handoffs_pending);
  b.add_spawn_live(spawn_live);
  b.add_spawn_totals(spawn_totals);
  b.add_spawn_requested(p.spawn.requested);
  b.add_spawn_deferred_by_cap(p.spawn.deferred_by_cap);
  b.add_spawn_deferred_by_capacity(p.spawn.deferred_by_capacity);
  b.add_spawn_deferred_by_zone(p.spawn.deferred_by_zone);
  b.add_retiring(p.retiring);
  b.add_faded_total(p.faded_total);
  b.add_fade_skipped_total(p.fade_skipped_total);
  b.add_despawned_by_reason(despawned);
  b.add_tiers(tiers);
  b.add_tier_promoted(p.tiers.promoted);
  b.add_tier_demoted(p.tiers.demoted);
  b.add_tier_deferred(p.tiers.deferred);
  b.add_forced_full(p.tiers.forced);
  b.add_forced_overflow(p.tiers.forced_overflow);
  b.add_force_full_refused(p.force_full_refused);
  b.add_ledger_fragments(p.ledger.fragments);
  b.add_ledger_deficit(p.ledger.deficit);
  b.add_ledger_surplus(p.ledger.surplus);
  b.add_ledger_max_deficit(p.ledger.max_deficit);
  return b.Finish();
}

}  // namespace

void encode_error(wire::ErrorCode code, const std::string& message, FlatBufferBuilder& fbb) {
  fbb.Clear();
  const auto err = wire::CreateErrorDirect(fbb, code, message.c_str());
  finish(fbb, wire::ServerMessage::Error, err.Union());
}

void encode_welcome(const WelcomeInfo& w, std::uint32_t session_id, Role role, std::uint64_t current_step,
                    FlatBufferBuilder& fbb) {
  fbb.Clear();
  std::vector<Offset<wire::LaneInfo>> lanes;
  lanes.reserve(w.lanes.size());
  std::vector<wire::Vec2d> pts;
  for (std::size_t i = 0; i < w.lanes.size(); ++i) {
    const core::Lane& lane = w.lanes[i];
    pts.clear();
    for (const core::Vec2& p : lane.points) pts.emplace_back(p.x_m, p.y_m);
    lanes.push_back(wire::CreateLaneInfoDirect(fbb, static_cast<std::uint32_t>(i), lane.id.c_str(),
                                               static_cast<wire::LaneKind>(lane.kind), &pts, lane.length_m,
                                               static_cast<float>(lane.speed_mps_limit), &lane.successors,
                                               proto::to_mm(lane.length_m), static_cast<float>(lane.elevation_m)));
  }
  std::vector<Offset<wire::GarageGeometry>> garages;
  for (const GarageGeometry& g : w.garages) {
    garages.push_back(wire::CreateGarageGeometryDirect(fbb, g.id.c_str(), g.entrance_lane, &g.route));
  }
  std::vector<Offset<wire::SignalGeometry>> signals;
  for (const SignalGeometry& sg : w.signals) {
    signals.push_back(wire::CreateSignalGeometryDirect(fbb, sg.id.c_str(), sg.lane, sg.stop_alpha, sg.yield_alpha));
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
      static_cast<wire::ClockMode>(w.clock_mode), w.scenario_id.c_str(), current_step, &lanes, &garages, &signals,
      &chains, w.dots_every_steps, &archetypes);
  finish(fbb, wire::ServerMessage::Welcome, welcome.Union());
}

void encode_command_result(const OutboundResult& r, FlatBufferBuilder& fbb) {
  fbb.Clear();
  const auto stats = r.stats ? make_stats(fbb, *r.stats) : 0;
  const auto job = r.job ? make_job_status(fbb, *r.job) : 0;
  const auto snapshots = r.snapshots ? make_snapshots(fbb, *r.snapshots) : 0;
  const auto garages = r.garages ? make_garages(fbb, *r.garages) : 0;
  const auto signals = r.signals ? make_signals(fbb, *r.signals) : 0;
  const auto vehicle = r.vehicle ? make_vehicle(fbb, *r.vehicle) : 0;
  const auto zones = r.zones ? make_zones(fbb, *r.zones) : 0;
  const bool batch = r.batch != core::BatchStatus::None;
  const auto handles = batch || !r.handles.empty() ? fbb.CreateVector(r.handles) : 0;
  const auto entity_info = r.entity_info ? make_entity_info(fbb, *r.entity_info) : 0;
  const auto population = r.population ? make_population(fbb, *r.population) : 0;
  const auto spawn = r.spawn ? make_spawn_status(fbb, *r.spawn) : 0;
  flatbuffers::Offset<wire::LeaseSummary> leases = 0;
  if (r.leases) {
    const StreamTracker::LeaseSummary& l = *r.leases;
    const std::vector<std::uint32_t> requested(std::begin(l.requested), std::end(l.requested));
    const std::vector<std::uint32_t> applied(std::begin(l.applied), std::end(l.applied));
    const std::vector<std::uint32_t> by_reason(std::begin(l.past_grace_by_reason), std::end(l.past_grace_by_reason));
    leases = wire::CreateLeaseSummaryDirect(fbb, &requested, &applied, l.waiting, l.waiting_past_grace, &by_reason,
                                            r.lease_grace_steps, l.reports, l.entries, l.unknown_entries);
  }
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
  b.add_entity_info(entity_info);
  b.add_population(population);
  b.add_spawn(spawn);
  b.add_leases(leases);
  finish(fbb, wire::ServerMessage::CommandResult, b.Finish().Union());
}

void encode_job_update(const JobInfo& job, FlatBufferBuilder& fbb) {
  fbb.Clear();
  const auto status = make_job_status(fbb, job);
  finish(fbb, wire::ServerMessage::JobUpdate, wire::CreateJobUpdate(fbb, status).Union());
}

void encode_spawn_update(const SpawnReport& spawn, FlatBufferBuilder& fbb) {
  fbb.Clear();
  const auto status = make_spawn_status(fbb, spawn);
  finish(fbb, wire::ServerMessage::SpawnUpdate, wire::CreateSpawnUpdate(fbb, status).Union());
}

}  // namespace bustle::net
