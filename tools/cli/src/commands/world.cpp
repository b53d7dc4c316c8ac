// World commands that print only their acceptance (target, garage-request, strategy,
// observers, hour, mask, close-lane, ...), and the clock commands pause, resume, step.
#include <chrono>
#include <optional>

#include "commands/commands.hpp"
#include "commands/common.hpp"
#include "json_output.hpp"

namespace bustle::cli::commands {

client::CommandSpec world_spec(const CliOptions& o) {
  if (o.command == "target") return client::SetPedestrianTargetCmd{o.argument};
  if (o.command == "garage-request") {
    return client::GarageRequestCmd{o.garage, o.request_id, o.prototype, o.lane, o.priority};
  }
  if (o.command == "cancel-request") return client::CancelGarageRequestCmd{o.garage, o.request_id};
  if (o.command == "strategy") {
    return client::SetVehicleStrategyCmd{client::EntityId{o.entity_index, o.entity_generation},
                                         static_cast<wire::VehicleStrategy>(o.strategy)};
  }
  if (o.command == "observers") {
    client::SetObserversCmd cmd;
    for (const auto& [x, y] : o.observers) cmd.points.push_back({x, y});
    if (o.follow) cmd.follow = client::EntityId{o.entity_index, o.entity_generation};
    return cmd;
  }
  if (o.command == "hour") return client::SetHourCmd{o.hour};
  if (o.command == "mask") {
    return client::SetAdmissionMaskCmd{client::EntityId{o.entity_index, o.entity_generation},
                                       !o.unmask};
  }
  if (o.command == "prevention") return client::SetPreventionLevelCmd{o.argument};
  if (o.command == "kill")
    return client::KillPedestrianCmd{client::EntityId{o.entity_index, o.entity_generation}};
  if (o.command == "close-lane" || o.command == "open-lane")
    return client::SetLaneClosedCmd{o.lane, o.lane_index, o.command == "close-lane"};
  return client::SetTimeScaleCmd{o.time_scale};
}

bool is_world(const std::string& command) {
  return command == "target" || command == "garage-request" || command == "cancel-request" ||
         command == "strategy" || command == "observers" || command == "hour" ||
         command == "time-scale" || command == "mask" || command == "prevention" ||
         command == "kill" || command == "close-lane" || command == "open-lane";
}

int run_world(const CliOptions& o, const client::CommandSpec& spec, std::FILE* out,
              std::FILE* err) {
  Client c(client_options(o, wire::Role::Operator));
  ClockView clock;
  if (const int rc = connect_operator(c, o, clock, err); rc != kExitOk) return rc;
  std::optional<client::CommandReply> reply;
  const int rc = apply_world(c, o, clock, spec, false, reply, out, err);
  if (rc == kExitOk && reply) print_accepted(out, o, *reply);
  return rc;
}

int run_operator(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandSpec spec;
  if (o.command == "pause") {
    spec = client::PauseCmd{};
  } else if (o.command == "resume") {
    spec = client::ResumeCmd{};
  } else {
    spec = client::StepCmd{o.argument};
  }
  Client c(client_options(o, wire::Role::Operator));
  if (const int rc = connect_as(c, o, wire::Role::Operator, err); rc != kExitOk) return rc;
  const auto r = c.command(spec, std::chrono::milliseconds(o.timeout_ms));
  if (!r.ok()) return report(err, o, client::command_name(spec), r);
  if (!r.value.accepted()) return rejected(o, r.value, err);
  print_accepted(out, o, r.value);
  return kExitOk;
}

}  // namespace bustle::cli::commands
