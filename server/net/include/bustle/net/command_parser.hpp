// Turns a verified wire Command into what the sim thread executes, or a
// graded rejection. Runs on the network thread; never touches the World.
//
// The FlatBuffers Verifier has already checked offsets, sizes and the table
// budget (proto::kClientMaxTables), but not what the schema cannot say:
// required structs inside optional tables, enum values a newer or broken
// client may send, vector lengths that must agree, list limits (lifecycle
// batch ops, spawn route lanes). Those are checked here, so a malformed
// command is answered InvalidArgument naming the field instead of reaching
// the core. Semantic checks (known zone, lane, entity, route succession,
// ranges of settings) stay in the core, which owns the state.
//
// Roles (DESIGN §6): world commands and clock/snapshot control need the
// operator role, with one exception: ReportAttached is allowed for viewers,
// because viewers are the clients that hold actors for entities. It is a
// control command of the sim driver (the spawn handle's representation stage,
// outside the World), never simulation state. Queries (stats,
// snapshots list, jobs, garages, signals, vehicles, zones, entities,
// population, spawn handles) are allowed for every role.
//
// Order of checks: unknown body type, missing body, structure, then role. A
// rejected command never reaches the queue.
#pragma once

#include <cstddef>
#include <string>
#include <variant>

#include "bustle/core/command.hpp"
#include "bustle/net/command_queue.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::net {

// A LifecycleBatch carries at most this many operations (core::LifecycleBatch).
inline constexpr std::size_t kLifecycleBatchOpsMax = 256;
// A SpawnPedestrian route names at most this many lanes (core::SpawnPedestrian);
// longer routes are rejected here, before any lane is looked up.
inline constexpr std::size_t kSpawnRouteLanesMax = 256;

struct ParsedCommand {
  core::RejectReason reason = core::RejectReason::None;  // None: `body` is valid
  std::string message;                                   // why, naming the field
  std::variant<ControlCommand, core::WorldCommand> body;
  bool ok() const { return reason == core::RejectReason::None; }
};

// [Precondition: `cmd` lives in a buffer that passed proto::verify_client_frame]
ParsedCommand parse_command(const wire::Command& cmd, Role role);

// True when any role may send this command body (queries, ReportAttached).
bool allowed_for_viewer(wire::CommandBody body);

}  // namespace bustle::net
