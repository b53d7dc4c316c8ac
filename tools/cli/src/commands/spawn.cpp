// The spawn pipeline from the command line: spawn (optionally waiting for a state,
// stepping a manual clock), cancel-spawn and spawn-status.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <optional>

#include "commands/commands.hpp"
#include "commands/common.hpp"
#include "json_output.hpp"

namespace bustle::cli::commands {
namespace {

// One line per spawn state: "spawn 3: Registered (step 14) entity 40:1 zone
// market lane 7 priority Story".
void print_spawn(std::FILE* out, const CliOptions& o, const client::SpawnStatusInfo& s) {
  if (o.json) return json::print(out, json::spawn(s));
  std::fprintf(out, "spawn %" PRIu64 ": %s", s.handle, wire::EnumNameSpawnState(s.state));
  if (s.failure != wire::SpawnFailure::None) {
    std::fprintf(out, " (%s)", wire::EnumNameSpawnFailure(s.failure));
  }
  const std::string lane =
      s.lane == client::SpawnStatusInfo::kNoLane ? std::string("any") : std::to_string(s.lane);
  std::fprintf(out, " (step %" PRIu64 ") entity %s zone %s lane %s priority %s\n", s.state_step,
               s.entity_id() == client::EntityId{} ? "-" : client::id_text(s.entity_id()).c_str(),
               s.zone.empty() ? "any" : s.zone.c_str(), lane.c_str(),
               priority_name(s.priority).c_str());
  std::fflush(out);
}

// Exit code for a spawn's terminal state; a failure is explained on `err`.
int spawn_outcome(const CliOptions& o, const client::SpawnStatusInfo& s, std::FILE* err) {
  if (s.succeeded()) return kExitOk;
  std::fprintf(err, "bustle %s: spawn %" PRIu64 " ended %s%s%s\n", o.command.c_str(), s.handle,
               wire::EnumNameSpawnState(s.state), s.failure == wire::SpawnFailure::None ? "" : ": ",
               s.failure == wire::SpawnFailure::None ? "" : wire::EnumNameSpawnFailure(s.failure));
  return kExitRejected;
}

// Prints the states of `handle` until o.wait_state, an end, or --timeout-ms
// without a new state. Stepping (manual clock and --step): one Step whenever
// no state is buffered, at most one per step length of the scenario (as a
// realtime clock would). --attach: ReportAttached on RepresentationRequested.
int wait_spawn(Client& c, const CliOptions& o, const ClockView& clock, std::uint64_t handle,
               std::FILE* out, std::FILE* err) {
  const auto timeout = std::chrono::milliseconds(o.timeout_ms);
  const auto pace =
      std::chrono::milliseconds(std::max<std::uint32_t>(1, c.welcome().step_us / 1000));
  const auto until = static_cast<wire::SpawnState>(*o.wait_state);
  auto last_change = Clock::now();
  const char* last_state = "none yet";
  std::uint64_t steps_sent = 0;
  for (;;) {
    const auto u = c.next_spawn_update(handle, clock.stepping ? pace : timeout);
    if (u.status == ClientStatus::Timeout) {
      if (clock.stepping && Clock::now() - last_change < timeout) {
        if (const int rc = step_once(c, o, err); rc != kExitOk) return rc;
        ++steps_sent;
        continue;
      }
      const bool needs_actor = until >= wire::SpawnState::Attached && !o.attach;
      const std::string stepped =
          clock.stepping ? " after " + std::to_string(steps_sent) + " steps" : "";
      std::fprintf(err,
                   "bustle %s: spawn %" PRIu64 " did not reach %s: no new state within %" PRIu32
                   " ms%s (last: %s)%s%s\n",
                   o.command.c_str(), handle, wire::EnumNameSpawnState(until), o.timeout_ms,
                   stepped.c_str(), last_state, no_step_hint(clock),
                   needs_actor ? "; Attached needs a client holding an actor to report it "
                                 "(--attach makes bustle report it)"
                               : "");
      return kExitServer;
    }
    if (!u.ok()) return report(err, o, ("waiting for spawn " + std::to_string(handle)).c_str(), u);
    const client::SpawnStatusInfo& s = u.value;
    last_change = Clock::now();
    last_state = wire::EnumNameSpawnState(s.state);
    print_spawn(out, o, s);
    if (s.terminal) return spawn_outcome(o, s, err);
    if (s.state >= until) return kExitOk;
    if (o.attach && s.state == wire::SpawnState::RepresentationRequested) {
      // The representation axis: answered at once, no step needed.
      const auto attached = c.command(client::ReportAttachedCmd{s.entity_id()}, timeout);
      if (!attached.ok()) return report(err, o, "report_attached", attached);
      if (!attached.value.accepted()) return rejected(o, attached.value, err);
      if (o.json) {
        json::print(out, {{"reported_attached", client::id_text(s.entity_id())},
                          {"applied_step", attached.value.applied_step}});
        continue;
      }
      std::fprintf(out, "reported entity %s attached at step %" PRIu64 "\n",
                   client::id_text(s.entity_id()).c_str(), attached.value.applied_step);
      std::fflush(out);
    }
  }
}

}  // namespace

int run_spawn(const CliOptions& o, std::FILE* out, std::FILE* err) {
  Client c(client_options(o, wire::Role::Operator));
  ClockView clock;
  if (const int rc = connect_operator(c, o, clock, err); rc != kExitOk) return rc;
  const client::SpawnPedestrianCmd spec{o.zone, o.spawn_lane,
                                        static_cast<wire::PriorityClass>(o.spawn_priority),
                                        o.spawn_timeout_ms, o.route};
  std::optional<client::CommandReply> reply;
  const bool waiting = o.wait_state.has_value();
  if (const int rc = apply_world(c, o, clock, spec, waiting, reply, out, err); rc != kExitOk) {
    return rc;
  }
  if (!reply) return kExitOk;  // queued
  if (o.json) {
    json::print(out, {{"command", o.command},
                      {"accepted", true},
                      {"applied_step", reply->applied_step},
                      {"handle", reply->handle}});
  } else {
    std::fprintf(out, "spawn accepted at step %" PRIu64 ": handle %" PRIu64 "\n",
                 reply->applied_step, reply->handle);
  }
  std::fflush(out);
  if (!waiting) return kExitOk;
  if (reply->handle == 0) return missing(o, "a spawn handle", err);
  return wait_spawn(c, o, clock, reply->handle, out, err);
}

int run_cancel_spawn(const CliOptions& o, std::FILE* out, std::FILE* err) {
  Client c(client_options(o, wire::Role::Operator));
  ClockView clock;
  if (const int rc = connect_operator(c, o, clock, err); rc != kExitOk) return rc;
  std::optional<client::CommandReply> reply;
  const int rc = apply_world(c, o, clock, client::CancelSpawnCmd{o.handle}, false, reply, out, err);
  if (rc != kExitOk || !reply) return rc;
  const bool given_back = reply->entity && !(*reply->entity == client::EntityId{});
  if (o.json) {
    json::print(out,
                {{"command", o.command},
                 {"accepted", true},
                 {"applied_step", reply->applied_step},
                 {"handle", o.handle},
                 {"entity", given_back ? json::Json(client::id_text(*reply->entity)) : nullptr}});
    return kExitOk;
  }
  print_accepted(out, o, *reply);
  if (given_back) {
    std::fprintf(out, "spawn %" PRIu64 " canceled; entity %s given back\n", o.handle,
                 client::id_text(*reply->entity).c_str());
  } else {
    std::fprintf(out, "spawn %" PRIu64 " canceled; no entity given back (none was created yet)\n",
                 o.handle);
  }
  std::fflush(out);
  return kExitOk;
}

int run_spawn_status(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandReply r;
  if (const int rc = run_query(o, client::QuerySpawnCmd{o.handle}, r, err); rc != kExitOk) {
    return rc;
  }
  if (!r.spawn) return missing(o, "the spawn", err);
  if (o.json) return print_object(out, "spawn", json::spawn(*r.spawn), r.applied_step);
  print_spawn(out, o, *r.spawn);
  std::fprintf(out, "  requested at step %" PRIu64 "; %s\n", r.spawn->requested_step,
               r.spawn->terminal ? "terminal: no further states" : "in progress");
  std::fflush(out);
  return kExitOk;
}

}  // namespace bustle::cli::commands
