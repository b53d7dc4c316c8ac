// Wire Commands into what the sim thread executes, with the role check and
// every field validated, or a graded rejection naming the field
// (command_parser.hpp). Network thread only.
#include "bustle/net/command_parser.hpp"

#include <optional>
#include <utility>

namespace bustle::net {
namespace {

using Kind = ControlCommand::Kind;

ControlCommand control(Kind kind) {
  ControlCommand c;
  c.kind = kind;
  return c;
}

ControlCommand named(Kind kind, const flatbuffers::String* name) {
  ControlCommand c = control(kind);
  if (name != nullptr) c.name = name->str();
  return c;
}

std::string str(const flatbuffers::String* s) {
  return s != nullptr ? s->str() : std::string();
}

core::EntityId to_core(const wire::EntityId& id) {
  return core::EntityId{id.index(), id.generation()};
}

ParsedCommand reject(core::RejectReason reason, std::string message) {
  ParsedCommand p;
  p.reason = reason;
  p.message = std::move(message);
  return p;
}

ParsedCommand invalid(std::string message) {
  return reject(core::RejectReason::InvalidArgument, std::move(message));
}

ParsedCommand accept(std::variant<ControlCommand, core::WorldCommand> body) {
  ParsedCommand p;
  p.body = std::move(body);
  return p;
}

// Commands naming one entity. The verifier already refuses a missing
// (required) id; this guards any path that skipped that check.
template <class Make>
ParsedCommand with_id(const wire::EntityId* id, Make make) {
  if (id == nullptr) return invalid("id is required");
  return accept(make(to_core(*id)));
}

ControlCommand entity_query(Kind kind, core::EntityId id) {
  ControlCommand c = control(kind);
  c.entity = id;
  return c;
}

// A SpawnPedestrian table (top level or inside a lifecycle op); `field` names
// it in messages ("" at top level, "ops[3].spawn." inside a batch).
std::optional<std::string> to_spawn(const wire::SpawnPedestrian& w, const std::string& field,
                                    core::SpawnPedestrian& out) {
  const auto priority = static_cast<std::uint8_t>(w.priority());
  if (priority > static_cast<std::uint8_t>(wire::PriorityClass::MAX)) {
    return field + "priority: unknown PriorityClass value " + std::to_string(priority) +
           " (0 Story, 1 Quest, 2 Community, 3 Background)";
  }
  const std::size_t lanes = w.route() != nullptr ? w.route()->size() : 0;
  if (lanes > kSpawnRouteLanesMax) {
    return field + "route: " + std::to_string(lanes) + " lanes, at most " +
           std::to_string(kSpawnRouteLanesMax) + " per spawn";
  }
  out.zone = str(w.zone());
  out.lane = str(w.lane());
  out.priority = priority;
  out.timeout_ms = w.timeout_ms();
  out.route.clear();
  out.route.reserve(lanes);
  for (flatbuffers::uoffset_t i = 0; i < lanes; ++i) out.route.push_back(str(w.route()->Get(i)));
  return std::nullopt;
}

ParsedCommand parse_set_observers(const wire::SetObservers& c) {
  core::SetObservers obs;
  const std::size_t points = c.points() != nullptr ? c.points()->size() : 0;
  if (c.views() != nullptr && c.views()->size() != points) {
    return invalid("views: " + std::to_string(c.views()->size()) + " entries for " +
                   std::to_string(points) + " points (send one view per point, or no views)");
  }
  obs.points.reserve(points);
  for (flatbuffers::uoffset_t i = 0; i < points; ++i) {
    const wire::Vec2* p = c.points()->Get(i);
    core::ObserverPoint o;
    o.x_m = p->x();
    o.y_m = p->y();
    if (c.views() != nullptr) {
      const wire::ObserverView* v = c.views()->Get(i);
      o.z_m = v->z_m();
      o.has_heading = v->has_heading();
      o.heading_rad = v->heading_rad();
    }
    obs.points.push_back(o);
  }
  if (c.follow() != nullptr) obs.follow = to_core(*c.follow());
  return accept(core::WorldCommand{std::move(obs)});
}

ParsedCommand parse_lifecycle_batch(const wire::LifecycleBatch& b) {
  core::LifecycleBatch batch;
  const std::size_t n = b.ops() != nullptr ? b.ops()->size() : 0;
  if (n > kLifecycleBatchOpsMax) {
    return invalid("ops: " + std::to_string(n) + " operations, at most " +
                   std::to_string(kLifecycleBatchOpsMax) + " per batch (nothing was applied)");
  }
  batch.ops.reserve(n);
  for (flatbuffers::uoffset_t i = 0; i < n; ++i) {
    const wire::LifecycleOp* w = b.ops()->Get(i);
    const std::string field = "ops[" + std::to_string(i) + "].";
    core::LifecycleOp op;
    switch (w->kind()) {
      case wire::LifecycleOpKind::Spawn:
        op.kind = core::LifecycleOp::Kind::Spawn;
        if (w->spawn() == nullptr) return invalid(field + "spawn is required for a Spawn op");
        if (auto why = to_spawn(*w->spawn(), field + "spawn.", op.spawn))
          return invalid(std::move(*why));
        break;
      case wire::LifecycleOpKind::Despawn:
        op.kind = core::LifecycleOp::Kind::Despawn;
        if (w->id() == nullptr) return invalid(field + "id is required for a Despawn op");
        op.id = to_core(*w->id());
        break;
      default:
        return invalid(field + "kind: unknown LifecycleOpKind value " +
                       std::to_string(static_cast<int>(w->kind())) + " (0 Spawn, 1 Despawn)");
    }
    batch.ops.push_back(std::move(op));
  }
  return accept(core::WorldCommand{std::move(batch)});
}

// The vehicle commands, ForceFull, the admission mask and the lane closures
// (the rest of parse_body's world commands); anything else is an unknown
// command.
ParsedCommand parse_entity_command(const wire::Command& cmd) {
  switch (cmd.body_type()) {
    case wire::CommandBody::GarageRequest: {
      const wire::GarageRequest* g = cmd.body_as_GarageRequest();
      return accept(core::WorldCommand{core::GarageRequest{str(g->garage()), str(g->request_id()),
                                                           str(g->prototype()), str(g->lane()),
                                                           g->priority()}});
    }
    case wire::CommandBody::CancelGarageRequest: {
      const wire::CancelGarageRequest* c = cmd.body_as_CancelGarageRequest();
      return accept(
          core::WorldCommand{core::CancelGarageRequest{str(c->garage()), str(c->request_id())}});
    }
    case wire::CommandBody::SetVehicleStrategy: {
      const auto strategy = static_cast<std::uint8_t>(cmd.body_as_SetVehicleStrategy()->strategy());
      return with_id(cmd.body_as_SetVehicleStrategy()->id(), [&](core::EntityId id) {
        return core::WorldCommand{core::SetVehicleStrategy{id, strategy}};
      });
    }
    case wire::CommandBody::ForceFull: {
      const bool on = cmd.body_as_ForceFull()->on();
      return with_id(cmd.body_as_ForceFull()->id(), [&](core::EntityId id) {
        return core::WorldCommand{core::ForceFull{id, on}};
      });
    }
    case wire::CommandBody::SetAdmissionMask: {
      const bool masked = cmd.body_as_SetAdmissionMask()->masked();
      return with_id(cmd.body_as_SetAdmissionMask()->id(), [&](core::EntityId id) {
        return core::WorldCommand{core::SetAdmissionMask{id, masked}};
      });
    }
    case wire::CommandBody::SetPreventionLevel:
      return accept(
          core::WorldCommand{core::SetPreventionLevel{cmd.body_as_SetPreventionLevel()->level()}});
    case wire::CommandBody::KillPedestrian:
      return with_id(cmd.body_as_KillPedestrian()->id(), [&](core::EntityId id) {
        return core::WorldCommand{core::KillPedestrian{id}};
      });
    case wire::CommandBody::CloseLane: {
      const wire::CloseLane* c = cmd.body_as_CloseLane();
      return accept(core::WorldCommand{core::SetLaneClosed{str(c->lane()), c->lane_index(), true}});
    }
    case wire::CommandBody::OpenLane: {
      const wire::OpenLane* o = cmd.body_as_OpenLane();
      return accept(
          core::WorldCommand{core::SetLaneClosed{str(o->lane()), o->lane_index(), false}});
    }
    default:
      break;
  }
  return reject(core::RejectReason::UnknownCommand,
                "unknown command type " + std::to_string(static_cast<int>(cmd.body_type())));
}

// Structure only; the role is checked by parse_command.
ParsedCommand parse_body(const wire::Command& cmd) {
  switch (cmd.body_type()) {
    case wire::CommandBody::Pause:
      return accept(control(Kind::Pause));
    case wire::CommandBody::Resume:
      return accept(control(Kind::Resume));
    case wire::CommandBody::Step: {
      ControlCommand c = control(Kind::Step);
      c.step_count = cmd.body_as_Step()->count();
      return accept(std::move(c));
    }
    case wire::CommandBody::QueryStats: {
      ControlCommand c = control(Kind::QueryStats);
      c.step_time_window = cmd.body_as_QueryStats()->step_time_window();
      if (c.step_time_window > kStepTimeWindowMax) {
        return invalid("step_time_window: " + std::to_string(c.step_time_window) +
                       " steps, at most " + std::to_string(kStepTimeWindowMax) +
                       " (0: all of them)");
      }
      return accept(std::move(c));
    }
    case wire::CommandBody::SetPedestrianTarget:
      return accept(core::WorldCommand{
          core::SetPedestrianTarget{cmd.body_as_SetPedestrianTarget()->count()}});
    case wire::CommandBody::DespawnEntity:
      return with_id(cmd.body_as_DespawnEntity()->id(),
                     [](core::EntityId id) { return core::WorldCommand{core::DespawnEntity{id}}; });
    case wire::CommandBody::Checkpoint:
      return accept(named(Kind::Checkpoint, cmd.body_as_Checkpoint()->name()));
    case wire::CommandBody::Restore:
      return accept(named(Kind::Restore, cmd.body_as_Restore()->name()));
    case wire::CommandBody::Save:
      return accept(named(Kind::Save, cmd.body_as_Save()->name()));
    case wire::CommandBody::Load:
      return accept(named(Kind::Load, cmd.body_as_Load()->name()));
    case wire::CommandBody::ListSnapshots:
      return accept(control(Kind::ListSnapshots));
    case wire::CommandBody::DeleteSnapshot:
      return accept(named(Kind::DeleteSnapshot, cmd.body_as_DeleteSnapshot()->name()));
    case wire::CommandBody::QueryJob: {
      ControlCommand c = control(Kind::QueryJob);
      c.job_id = cmd.body_as_QueryJob()->job_id();
      return accept(std::move(c));
    }
    case wire::CommandBody::SetObservers:
      return parse_set_observers(*cmd.body_as_SetObservers());
    case wire::CommandBody::QueryGarages:
      return accept(control(Kind::QueryGarages));
    case wire::CommandBody::QuerySignals:
      return accept(control(Kind::QuerySignals));
    case wire::CommandBody::QueryVehicle:
      return with_id(cmd.body_as_QueryVehicle()->id(),
                     [](core::EntityId id) { return entity_query(Kind::QueryVehicle, id); });
    case wire::CommandBody::SetHour:
      return accept(core::WorldCommand{core::SetHour{cmd.body_as_SetHour()->hour()}});
    case wire::CommandBody::SetTimeScale:
      return accept(core::WorldCommand{core::SetTimeScale{cmd.body_as_SetTimeScale()->scale()}});
    case wire::CommandBody::QueryZones:
      return accept(control(Kind::QueryZones));
    case wire::CommandBody::SpawnPedestrian: {
      core::SpawnPedestrian spawn;
      if (auto why = to_spawn(*cmd.body_as_SpawnPedestrian(), "", spawn))
        return invalid(std::move(*why));
      return accept(core::WorldCommand{std::move(spawn)});
    }
    case wire::CommandBody::CancelSpawn:
      return accept(core::WorldCommand{core::CancelSpawn{cmd.body_as_CancelSpawn()->handle()}});
    case wire::CommandBody::ReportAttached:
      // The representation axis: handled by the sim driver, not the World.
      return with_id(cmd.body_as_ReportAttached()->id(),
                     [](core::EntityId id) { return entity_query(Kind::ReportAttached, id); });
    case wire::CommandBody::SetLifecycle: {
      const wire::SetLifecycle* l = cmd.body_as_SetLifecycle();
      return accept(core::WorldCommand{core::SetLifecycle{
          l->growth_quota(), l->recycle_quota(), l->interval_ms(), l->migration_budget()}});
    }
    case wire::CommandBody::LifecycleBatch:
      return parse_lifecycle_batch(*cmd.body_as_LifecycleBatch());
    case wire::CommandBody::QueryEntity:
      return with_id(cmd.body_as_QueryEntity()->id(),
                     [](core::EntityId id) { return entity_query(Kind::QueryEntity, id); });
    case wire::CommandBody::QueryPopulation:
      return accept(control(Kind::QueryPopulation));
    case wire::CommandBody::QuerySpawn: {
      ControlCommand c = control(Kind::QuerySpawn);
      c.spawn_handle = cmd.body_as_QuerySpawn()->handle();
      return accept(std::move(c));
    }
    default:
      break;
  }
  return parse_entity_command(cmd);
}

}  // namespace

bool allowed_for_viewer(wire::CommandBody body) {
  switch (body) {
    case wire::CommandBody::QueryStats:
    case wire::CommandBody::ListSnapshots:
    case wire::CommandBody::QueryJob:
    case wire::CommandBody::QueryGarages:
    case wire::CommandBody::QuerySignals:
    case wire::CommandBody::QueryVehicle:
    case wire::CommandBody::QueryZones:
    case wire::CommandBody::QueryEntity:
    case wire::CommandBody::QueryPopulation:
    case wire::CommandBody::QuerySpawn:
    case wire::CommandBody::QueryLeases:
    case wire::CommandBody::ReportAttached:  // viewers hold the actors (see the header)
      return true;
    default:
      return false;
  }
}

ParsedCommand parse_command(const wire::Command& cmd, Role role) {
  if (cmd.body_type() != wire::CommandBody::NONE && cmd.body() == nullptr) {
    return invalid("command body is missing");
  }
  ParsedCommand p = parse_body(cmd);
  if (!p.ok()) return p;
  if (role != Role::Operator && !allowed_for_viewer(cmd.body_type())) {
    return reject(
        core::RejectReason::NotAuthorized,
        std::string(wire::EnumNameCommandBody(cmd.body_type())) + " requires the operator role");
  }
  return p;
}

}  // namespace bustle::net
