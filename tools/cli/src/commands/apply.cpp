// World commands as the command line sends them: connect as operator, read
// whether the clock steps by itself, send, and wait for the result, step it
// (--step) or report the command queued; print the acceptance line.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <optional>

#include "commands/common.hpp"

namespace bustle::cli::commands {

// "accepted at step N[: message]", the line every answered command prints.
void print_accepted(std::FILE* out, const CliOptions& o, const client::CommandReply& r) {
  if (o.json) {
    json::Json j = {{"command", o.command},
                    {"accepted", true},
                    {"applied_step", r.applied_step},
                    {"message", r.message}};
    if (r.enqueue_ordinal) j["enqueue_ordinal"] = *r.enqueue_ordinal;
    return json::print(out, j);
  }
  std::fprintf(out, "%s accepted at step %" PRIu64 "%s%s\n", o.command.c_str(), r.applied_step,
               r.message.empty() ? "" : ": ", r.message.c_str());
  if (r.enqueue_ordinal) std::fprintf(out, "enqueue_ordinal %" PRIu64 "\n", *r.enqueue_ordinal);
  std::fflush(out);
}

// Connects as operator and reads the clock mode and whether paused.
int connect_operator(Client& c, const CliOptions& o, ClockView& clock, std::FILE* err) {
  if (const int rc = connect_as(c, o, wire::Role::Operator, err); rc != kExitOk) return rc;
  const auto stats = c.command(client::QueryStatsCmd{}, std::chrono::milliseconds(o.timeout_ms));
  if (!stats.ok()) return report(err, o, "query_stats", stats);
  clock.manual = stats.value.stats ? stats.value.stats->clock_mode == wire::ClockMode::Manual
                                   : c.welcome().clock_mode == wire::ClockMode::Manual;
  clock.paused = stats.value.stats && stats.value.stats->paused;
  clock.stepping = clock.manual && o.step_after;
  return kExitOk;
}

// Sends one Step{1} and waits for its result: every SpawnUpdate of that step
// has arrived (and been buffered) by then.
int step_once(Client& c, const CliOptions& o, std::FILE* err) {
  const auto step = c.command(client::StepCmd{1}, std::chrono::milliseconds(o.timeout_ms));
  if (!step.ok()) return report(err, o, "step", step);
  if (!step.value.accepted()) return rejected(o, step.value, err, " (its step)");
  return kExitOk;
}

// "; the clock is manual: ..." when no step comes by itself, else "".
const char* no_step_hint(const ClockView& clock) {
  if (clock.manual && !clock.stepping) {
    return "; the server's clock is manual: pass --step, or advance with 'bustle step 1'";
  }
  if (clock.paused) return "; the server is paused: 'bustle resume'";
  return "";
}

// World commands: answered when the next step applies them. With a
// realtime/fast clock that is within a step; under the manual clock (or while
// paused) only after someone steps, so without --step the command is queued
// (printed, exit 0, `reply` left empty) unless `must_answer`, which waits up
// to --timeout-ms for someone to step. On an accepted answer `reply` holds it.
int apply_world(Client& c, const CliOptions& o, const ClockView& clock,
                const client::CommandSpec& spec, bool must_answer,
                std::optional<client::CommandReply>& reply, std::FILE* out, std::FILE* err) {
  const auto timeout = std::chrono::milliseconds(o.timeout_ms);
  const auto sent = c.send_command(spec);
  if (!sent.ok()) return report(err, o, client::command_name(spec), sent);
  if (clock.stepping) {
    if (const int rc = step_once(c, o, err); rc != kExitOk) return rc;
  } else if ((clock.manual || clock.paused) && !must_answer) {
    // Rejections that need no step (role, full inbox) come at once; give
    // them a moment, then leave the command queued.
    const auto quick = c.wait_result(sent.value, std::min(timeout, std::chrono::milliseconds(300)));
    if (quick.status != ClientStatus::Timeout) {
      if (!quick.ok()) return report(err, o, client::command_name(spec), quick);
      if (!quick.value.accepted()) return rejected(o, quick.value, err);
      reply = quick.value;
      return kExitOk;
    }
    if (o.json) {
      json::print(out, {{"command", o.command},
                        {"queued", true},
                        {"why", clock.manual ? "manual clock" : "paused"}});
    } else if (clock.manual) {
      std::fprintf(out,
                   "%s queued: the server's clock is manual, so the command is applied (and "
                   "its result sent) at the next step; advance with 'bustle step 1', or pass "
                   "--step to step right after the command\n",
                   o.command.c_str());
    } else {
      std::fprintf(out,
                   "%s queued: the server is paused, so the command is applied (and its result "
                   "sent) at the next step, after 'bustle resume'\n",
                   o.command.c_str());
    }
    std::fflush(out);
    return kExitOk;
  }
  const auto r = c.wait_result(sent.value, timeout);
  if (r.status == ClientStatus::Timeout) {
    std::fprintf(err, "bustle %s: %s: no result within %" PRIu32 " ms%s\n", o.command.c_str(),
                 client::command_name(spec), o.timeout_ms, no_step_hint(clock));
    return kExitServer;
  }
  if (!r.ok()) return report(err, o, client::command_name(spec), r);
  if (!r.value.accepted()) return rejected(o, r.value, err);
  reply = r.value;
  return kExitOk;
}

}  // namespace bustle::cli::commands
