// Name tables: the text of every core enum that world.hpp and command.hpp
// declare a to_string() for, and command_name(). Logs, JSON output and
// error messages use these; nothing in the simulation reads them.
#include "bustle/core/world.hpp"
#include "world_internal.hpp"

namespace bustle::core {

const char* to_string(CommandStatus s) {
  switch (s) {
    case CommandStatus::Accepted:
      return "accepted";
    case CommandStatus::Rejected:
      return "rejected";
  }
  return "?";
}

const char* to_string(RejectReason r) {
  switch (r) {
    case RejectReason::None:
      return "none";
    case RejectReason::InboxFull:
      return "inbox_full";
    case RejectReason::InvalidArgument:
      return "invalid_argument";
    case RejectReason::UnknownEntity:
      return "unknown_entity";
    case RejectReason::NotAuthorized:
      return "not_authorized";
    case RejectReason::WrongClockMode:
      return "wrong_clock_mode";
    case RejectReason::UnknownCommand:
      return "unknown_command";
    case RejectReason::ShuttingDown:
      return "shutting_down";
    case RejectReason::NotFound:
      return "not_found";
    case RejectReason::StorageError:
      return "storage_error";
    case RejectReason::WorldReplaced:
      return "world_replaced";
    case RejectReason::Duplicate:
      return "duplicate";
    case RejectReason::QueueFull:
      return "queue_full";
    case RejectReason::InvariantFailure:
      return "invariant_failure";
    case RejectReason::RateLimited:
      return "rate_limited";
  }
  return "?";
}

const char* to_string(BatchStatus s) {
  switch (s) {
    case BatchStatus::None:
      return "none";
    case BatchStatus::RejectedNoChange:
      return "rejected_no_change";
    case BatchStatus::Committed:
      return "committed";
    case BatchStatus::PartiallyCommitted:
      return "partially_committed";
    case BatchStatus::InvariantFailure:
      return "invariant_failure";
  }
  return "?";
}

const char* to_string(PedestrianOrigin o) {
  switch (o) {
    case PedestrianOrigin::Background:
      return "background";
    case PedestrianOrigin::Resident:
      return "resident";
    case PedestrianOrigin::Spawned:
      return "spawned";
  }
  return "?";
}

const char* to_string(StepPhase p) {
  switch (p) {
    case StepPhase::ApplyCommands:
      return "apply_commands";
    case StepPhase::TimeAndZones:
      return "time_and_zones";
    case StepPhase::BackgroundUpkeep:
      return "background_upkeep";
    case StepPhase::SpawnPipeline:
      return "spawn_pipeline";
    case StepPhase::Prevention:
      return "prevention";
    case StepPhase::Vehicles:
      return "vehicles";
    case StepPhase::MovePedestrians:
      return "move_pedestrians";
    case StepPhase::SimTiers:
      return "sim_tiers";
    case StepPhase::RepresentationRequests:
      return "representation_requests";
    case StepPhase::Despawn:
      return "despawn";
    case StepPhase::Digest:
      return "digest";
  }
  return "?";
}

const char* to_string(LifecycleState s) {
  switch (s) {
    case LifecycleState::Requested:
      return "requested";
    case LifecycleState::Active:
      return "active";
    case LifecycleState::Dormant:
      return "dormant";
    case LifecycleState::Retiring:
      return "retiring";
    case LifecycleState::Gone:
      return "gone";
    case LifecycleState::Deceased:
      return "deceased";
  }
  return "?";
}

const char* to_string(RepresentationHint h) {
  switch (h) {
    case RepresentationHint::Actor:
      return "actor";
    case RepresentationHint::Instanced:
      return "instanced";
    case RepresentationHint::Marker:
      return "marker";
    case RepresentationHint::None:
      return "none";
  }
  return "?";
}

const char* command_name(const WorldCommand& c) {
  return std::visit(
      Overloaded{[](const SetPedestrianTarget&) { return "set_pedestrian_target"; },
                 [](const DespawnEntity&) { return "despawn_entity"; },
                 [](const GarageRequest&) { return "garage_request"; },
                 [](const CancelGarageRequest&) { return "cancel_garage_request"; },
                 [](const SetVehicleStrategy&) { return "set_vehicle_strategy"; },
                 [](const SetObservers&) { return "set_observers"; },
                 [](const SetHour&) { return "set_hour"; },
                 [](const SetTimeScale&) { return "set_time_scale"; },
                 [](const ForceFull&) { return "force_full"; },
                 [](const SpawnPedestrian&) { return "spawn_pedestrian"; },
                 [](const CancelSpawn&) { return "cancel_spawn"; },
                 [](const SetLifecycle&) { return "set_lifecycle"; },
                 [](const LifecycleBatch&) { return "lifecycle_batch"; },
                 [](const SetClientObservers&) { return "set_client_observers"; },
                 [](const SetAdmissionMask&) { return "set_admission_mask"; },
                 [](const SetPreventionLevel&) { return "set_prevention_level"; },
                 [](const KillPedestrian&) { return "kill_pedestrian"; },
                 [](const SetLaneClosed& l) { return l.closed ? "close_lane" : "open_lane"; },
                 [](const BorderArrivals&) { return "border_arrivals"; }},
      c);
}

const char* to_string(DespawnReason r) {
  switch (r) {
    case DespawnReason::OutOfRange:
      return "out_of_range";
    case DespawnReason::Stuck:
      return "stuck";
    case DespawnReason::LaneDeadEnd:
      return "lane_dead_end";
    case DespawnReason::Requested:
      return "requested";
    case DespawnReason::Overpopulated:
      return "overpopulated";
    case DespawnReason::RouteCompleted:
      return "route_completed";
    case DespawnReason::PreventionLowered:
      return "prevention_lowered";
    case DespawnReason::CorpseCleanup:
      return "corpse_cleanup";
    case DespawnReason::CorpseForced:
      return "corpse_forced";
    case DespawnReason::CorpsePressure:
      return "corpse_pressure";
  }
  return "?";
}

const char* to_string(ResponseUnitState s) {
  switch (s) {
    case ResponseUnitState::Queued:
      return "queued";
    case ResponseUnitState::Active:
      return "active";
    case ResponseUnitState::Retiring:
      return "retiring";
    case ResponseUnitState::Canceled:
      return "canceled";
    case ResponseUnitState::Despawned:
      return "despawned";
    case ResponseUnitState::Lost:
      return "lost";
  }
  return "?";
}

}  // namespace bustle::core
