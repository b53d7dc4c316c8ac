// Queries answered from the world between steps: stats, garages, signals,
// zones and work-points, an entity, the population, a spawn handle, a
// vehicle. Each builds its reply from the world's views and never changes
// the world.
#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "internal.hpp"
#include "sim_driver.hpp"

namespace bustle::app {

namespace {

// QueryZones: work-point k's anchor and which occupants stand at their slots.
void fill_work_point_anchor(const core::World& world, std::size_t k, wire::WorkPointInfoT& w) {
  core::LaneIndex lane = 0;
  double s_m = 0.0;
  if (!world.slot_anchor(k, 0, lane, s_m)) return;
  const core::WorkPointSpec& spec = world.scenario().work_points[k];
  w.anchor_lane = spec.anchor.lane;
  w.anchor_lane_index = static_cast<std::int32_t>(lane);
  w.anchor_s_m = s_m;
  const core::Vec2 p = world.lanes().position(lane, s_m);
  w.anchor_x_m = p.x_m;
  w.anchor_y_m = p.y_m;
  w.slot_spacing_m = spec.anchor.slot_spacing_m;
  const core::WorkPointState& wp = world.population().work_points()[k];
  w.arrived.assign(wp.occupant.size(), false);
  for (std::size_t s = 0; s < wp.occupant.size(); ++s) {
    const std::int32_t o = wp.occupant[s];
    if (o == core::ResidentStore::kNone) continue;
    w.arrived[s] = world.resident_at_anchor(static_cast<std::uint32_t>(o));
    w.arrived_count += w.arrived[s] ? 1 : 0;
  }
}

}  // namespace

bool SimDriver::answer_query(const net::ControlCommand& ctl, net::OutboundResult& r) {
  const auto not_alive = [&](const char* what) {
    r.status = core::CommandStatus::Rejected;
    r.reason = core::RejectReason::UnknownEntity;
    r.message = "entity " + core::id_text(ctl.entity) + what;
  };
  switch (ctl.kind) {
    case Kind::QueryStats:
      r.stats = stats(ctl.step_time_window);
      return true;
    case Kind::QueryGarages:
      r.garages = garage_reports();
      return true;
    case Kind::QuerySignals:
      r.signals = signal_reports();
      return true;
    case Kind::QueryZones: {
      std::vector<net::ZoneReport> zones;
      const core::PopulationSystem& pop = world_->population();
      const core::Scenario& sc = world_->scenario();
      for (std::size_t z = 0; z < pop.zones().size(); ++z) {
        zones.push_back({sc.zones[z].id, pop.zones()[z], sc.zones[z].capacity, {}});
        for (std::size_t k = 0; k < sc.work_points.size(); ++k) {
          if (sc.work_points[k].zone != sc.zones[z].id) continue;
          const core::WorkPointState& wp = pop.work_points()[k];
          wire::WorkPointInfoT w;
          w.id = sc.work_points[k].id;
          w.profession = sc.work_points[k].profession;
          w.slots = static_cast<std::uint32_t>(wp.occupant.size());
          w.occupied = static_cast<std::uint32_t>(
              std::count_if(wp.occupant.begin(), wp.occupant.end(),
                            [](std::int32_t o) { return o != core::ResidentStore::kNone; }));
          w.waiting = static_cast<std::uint32_t>(wp.waiting.size());
          fill_work_point_anchor(*world_, k, w);
          zones.back().work_points.push_back(std::move(w));
        }
      }
      r.zones = std::move(zones);
      return true;
    }
    case Kind::QueryEntity:
      r.entity_info = entity_info(ctl.entity);
      // Still answered with the report (lifecycle Gone), so the client sees why.
      if (!r.entity_info->report.alive) not_alive(" is not alive (stale or never issued)");
      return true;
    case Kind::QueryPopulation:
      r.population = population_report();
      return true;
    case Kind::QuerySpawn:
      if (const auto h = find_handle(ctl.spawn_handle)) {
        r.spawn = spawn_report(*h);
      } else {
        r.status = core::CommandStatus::Rejected;
        r.reason = core::RejectReason::NotFound;
        r.message = "no spawn handle " + std::to_string(ctl.spawn_handle) +
                    " (never issued, or older than the last " +
                    std::to_string(core::kSpawnHistory) + " finished handles)";
      }
      return true;
    case Kind::QueryVehicle:
      if (auto v = vehicle_report(ctl.entity)) {
        r.vehicle = std::move(*v);
      } else if (std::string mouth = world_->vehicles().mouth_text(ctl.entity); !mouth.empty()) {
        // Dispatched but on no lane yet: QueryGarages lists it in its garage's mouth.
        r.status = core::CommandStatus::Rejected;
        r.reason = core::RejectReason::InvalidArgument;
        r.message = "entity " + core::id_text(ctl.entity) + " is " + mouth +
                    " (QueryGarages lists the mouth)";
      } else {
        not_alive(" is not a vehicle");
      }
      return true;
    default:
      return false;
  }
}

net::SpawnReport SimDriver::spawn_report(const core::SpawnHandleState& handle) const {
  net::SpawnReport r;
  r.handle = handle;
  const auto& zones = world_->scenario().zones;
  if (handle.zone >= 0 && static_cast<std::size_t>(handle.zone) < zones.size())
    r.zone = zones[handle.zone].id;
  return r;
}

net::EntityInfoReport SimDriver::entity_info(core::EntityId id) const {
  net::EntityInfoReport r;
  r.report = world_->describe(id);
  if (r.report.spawn_handle != 0) {
    if (const auto h = stages_.find(r.report.spawn_handle)) r.report.spawn_state = h->state;
  }
  const core::Scenario& sc = world_->scenario();
  const auto id_of = [](const auto& specs, std::int32_t i) {
    return i >= 0 && static_cast<std::size_t>(i) < specs.size() ? specs[i].id : std::string();
  };
  r.community = id_of(sc.communities, r.report.community);
  r.zone = id_of(sc.zones, r.report.zone);
  r.work_point = id_of(sc.work_points, r.report.work_point);
  r.last_portal = id_of(sc.zones, r.report.last_portal);
  if (r.report.resident >= 0) {
    static constexpr const char* kPhases[] = {"Home", "CommuteToWork", "Work", "Leisure",
                                              "CommuteHome"};
    const auto res = static_cast<std::size_t>(r.report.resident);
    const core::ResidentStore& rs = world_->population().residents();
    const core::CommunitySpec& cs = sc.communities[rs.community[res]];
    r.profession = cs.professions[rs.profession[res]];
    const int e = core::schedule_entry_at(cs.schedule, world_->population().hour());
    if (e >= 0) {
      const core::ScheduleEntry& entry = cs.schedule[static_cast<std::size_t>(e)];
      r.schedule_phase = kPhases[static_cast<std::size_t>(entry.phase)];
      r.activity = entry.activity;
    }
  }
  return r;
}

net::PopulationReport SimDriver::population_report() const {
  const core::World& w = *world_;
  const core::PopulationSystem& pop = w.population();
  const core::Scenario& sc = w.scenario();
  net::PopulationReport p;
  p.hour = pop.hour();
  p.time_scale = pop.time_scale();
  p.settings = pop.settings();
  for (std::uint32_t c = 0; c < sc.communities.size(); ++c) {
    const core::CommunitySpec& spec = sc.communities[c];
    net::CommunityReport cr;
    cr.id = spec.id;
    cr.base_population = spec.base_population;
    cr.target = pop.community_target(c);
    const std::int64_t zone = pop.community_zone(c);
    if (zone >= 0 && static_cast<std::size_t>(zone) < sc.zones.size()) cr.zone = sc.zones[zone].id;
    for (std::uint32_t z = 0; z < pop.zones().size(); ++z) cr.active += pop.active_in(c, z);
    cr.dormant = spec.base_population > cr.active ? spec.base_population - cr.active : 0;
    cr.saveable = spec.saveable;
    p.communities.push_back(std::move(cr));
  }
  p.residents = pop.residents().size();
  p.residents_active = pop.active_count();
  p.residents_retiring = pop.retiring_count();
  p.background = w.background_pedestrians();
  for (const std::uint8_t origin : w.pedestrians().origin) {
    if (origin == static_cast<std::uint8_t>(core::PedestrianOrigin::Spawned)) ++p.spawned;
  }
  p.pedestrian_target = w.pedestrian_target();
  p.handoffs_pending = static_cast<std::uint32_t>(pop.handoffs().size());
  for (const core::SpawnHandleState& h : w.spawn_pipeline().live)
    ++p.spawn_live[static_cast<std::size_t>(h.state)];
  for (const core::SpawnHandleState& h : stages_.waiting())
    ++p.spawn_live[static_cast<std::size_t>(h.state)];
  p.spawn = w.spawn_pipeline().counters;
  // The representation axis adds its entries (counted by this process since
  // it started; the core's part ended at RepresentationRequested).
  const RepresentationStages::Counters& rc = stages_.counters();
  p.spawn.per_state_total[static_cast<std::size_t>(core::SpawnState::Attached)] +=
      rc.attached_total;
  p.spawn.per_state_total[static_cast<std::size_t>(core::SpawnState::ReadyForGameplay)] +=
      rc.ready_total;
  p.spawn.per_state_total[static_cast<std::size_t>(core::SpawnState::Failed)] += rc.failed_total;
  const RepresentationStages::Budgets budgets = stages_.budgets();
  p.quality = std::string(quality_budgets(options_.quality).name);
  p.attached_in_use = budgets.attached_in_use;
  p.attached_limit = budgets.attached_limit;
  p.unattached_in_use = budgets.unattached_in_use;
  p.unattached_limit = budgets.unattached_limit;
  p.no_slot_total = rc.no_slot_total;
  p.retiring = static_cast<std::uint32_t>(w.orphans().size());
  const core::WorldCounters& counters = w.counters();
  p.faded_total = counters.faded_total;
  p.fade_skipped_total = counters.fade_skipped_total;
  std::copy(std::begin(counters.despawned_by_reason), std::end(counters.despawned_by_reason),
            p.despawned_by_reason.begin());
  p.tiers = w.pedestrian_tiers();
  p.force_full_refused = w.force_full_refused();
  p.admission_masked = static_cast<std::uint32_t>(w.admission_masked().size());
  p.prevention = w.prevention();
  for (const core::LaneIndex l : w.closed_lanes()) {
    p.closed_lanes.push_back(w.lanes().lane(l).id);
    p.closed_lane_indices.push_back(l);
  }
  p.lane_waiting_pedestrians = static_cast<std::uint32_t>(w.lane_waiters().size());
  p.lane_waiting_vehicles = w.vehicles().held_at_closures();
  p.lane_closure = w.lane_closure_counters();
  p.observers = w.observers();
  p.followed = w.followed();
  p.follow_first_vehicle = w.follow_first_vehicle_pending();
  p.ledger = w.ledger_summary();
  return p;
}

std::vector<net::GarageReport> SimDriver::garage_reports() const {
  const core::VehicleSystem& vs = world_->vehicles();
  std::vector<net::GarageReport> out;
  for (std::uint32_t g = 0; g < vs.garages().size(); ++g) {
    const core::GarageState& gs = vs.garages()[g];
    const core::GarageSpec& spec = world_->scenario().garages[g];
    net::GarageReport r;
    r.id = spec.id;
    for (const core::QueuedRequest& q : gs.queue) {
      r.queued.push_back(q.request_id);
      auto entry = std::make_unique<wire::QueuedRequestInfoT>();
      entry->request_id = q.request_id;
      entry->prototype = spec.prototypes[q.prototype];
      entry->priority = q.priority;
      entry->enqueue_ordinal = q.enqueue_ordinal;
      r.queue.push_back(std::move(entry));
    }
    r.dispatched_ids = gs.dispatched;
    r.next_enqueue_ordinal = gs.next_enqueue_ordinal;
    r.mouth_capacity = spec.mouth_capacity;
    for (const core::MouthVehicle& m : gs.mouth) {
      auto entry = std::make_unique<wire::MouthVehicleInfoT>();
      entry->id = wire::EntityId(m.id.index, m.id.generation);
      entry->vehicle_id = core::format_vehicle_id(spec.vehicle_id_format, spec.id,
                                                  world_->scenario().id, m.ordinal);
      entry->request_id = m.request_id;
      entry->prototype = spec.prototypes[m.prototype];
      r.mouth.push_back(std::move(entry));
    }
    r.dispatched = static_cast<std::uint32_t>(gs.dispatched.size());
    r.managed = vs.managed(g);
    r.capacity = spec.capacity;
    r.frame_index = gs.frame_index;
    r.next_vehicle_ordinal = gs.next_vehicle_ordinal;
    r.last_gate = static_cast<wire::DispatchGate>(gs.last_gate);
    r.gate_steps.assign(gs.gate_steps.begin(), gs.gate_steps.end());
    r.turnarounds = gs.turnarounds;
    r.rejected_invalid = gs.rejected_invalid;
    r.rejected_duplicate = gs.rejected_duplicate;
    r.rejected_queue_full = gs.rejected_queue_full;
    r.canceled = gs.canceled;
    r.plan_total = static_cast<std::uint32_t>(world_->scenario().vehicle_plan.requests.size());
    r.plan_injected = vs.plan().cursor;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<net::SignalReport> SimDriver::signal_reports() const {
  const core::VehicleSystem& vs = world_->vehicles();
  std::vector<net::SignalReport> out;
  for (std::size_t i = 0; i < vs.signals().size(); ++i) {
    const core::SignalSpec& spec = world_->scenario().signals[i];
    std::uint32_t lane = 0;
    for (std::uint32_t l = 0; l < world_->lanes().size(); ++l) {
      if (world_->lanes().lane(l).id == spec.lane) lane = l;
    }
    const core::SignalState& st = vs.signals()[i];
    net::SignalReport r;
    r.id = spec.id;
    r.lane = lane;
    r.phase = static_cast<wire::SignalPhase>(st.phase);
    r.phase_elapsed_us = st.phase_elapsed_us;
    r.cycles = st.cycles;
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<net::VehicleReport> SimDriver::vehicle_report(core::EntityId id) const {
  const core::VehicleSystem& vs = world_->vehicles();
  if (!vs.is_vehicle(id)) return std::nullopt;
  const core::VehicleStore& v = vs.store();
  const std::uint32_t i = v.dense_of[id.index];
  const core::GarageSpec& spec = world_->scenario().garages[v.garage[i]];
  const core::Pose p = vs.pose(i);
  net::VehicleReport r;
  r.id = wire::EntityId(id.index, id.generation);
  r.vehicle_id = vs.vehicle_id(i);
  r.garage = spec.id;
  r.request_id = v.request_id[i];
  r.prototype = spec.prototypes[v.prototype[i]];
  r.route_index = v.route_index[i];
  r.lane = v.lane[i];
  r.s_m = v.s_m[i];
  r.alpha = v.s_m[i] / world_->lanes().lane(v.lane[i]).length_m;
  r.x_m = p.x_m;
  r.y_m = p.y_m;
  r.speed_mps = v.speed_mps[i];
  r.strategy = static_cast<wire::VehicleStrategyState>(v.strategy[i]);
  r.policy = static_cast<wire::ControlPolicy>(v.control_policy[i]);
  r.reason = static_cast<wire::PolicyReason>(v.reason[i]);
  r.tier = static_cast<wire::SimTier>(v.sim_tier[i]);
  r.leader = wire::EntityId(v.leader[i].index, v.leader[i].generation);
  r.steps_advanced = v.steps_advanced[i];
  r.awaiting_turnaround = v.waiting_since[i] != 0;
  r.despawn_requested = v.despawn_requested[i] != 0;
  return r;
}

}  // namespace bustle::app
