// The helpers of common.hpp: connecting, failure and rejection reports,
// queries answered at once, entity and enum names.
#include "commands/common.hpp"

#include <cinttypes>
#include <string>

namespace bustle::cli::commands {

ClientOptions client_options(const CliOptions& o, wire::Role role) {
  ClientOptions c;
  c.host = o.host;
  c.port = o.port;
  c.token = o.token;
  c.role = role;
  c.client_name = "bustle-cli";
  c.connect_timeout = std::chrono::milliseconds(o.timeout_ms);
  c.handshake_timeout = std::chrono::milliseconds(o.timeout_ms);
  c.send_timeout = std::chrono::milliseconds(o.timeout_ms);
  return c;
}

// Prints why talking to the server failed and returns the exit code.
int report(std::FILE* err, const CliOptions& o, const char* what, const client::Status& s) {
  if (s.status == ClientStatus::ConnectFailed) {
    std::fprintf(err, "bustle %s: %s: %s\n", o.command.c_str(), what, s.message.c_str());
  } else {
    std::fprintf(err, "bustle %s: %s: %s (server %s:%u)\n", o.command.c_str(), what,
                 s.message.c_str(), o.host.c_str(), unsigned{o.port});
  }
  return kExitServer;
}

int connect(Client& c, const CliOptions& o, std::FILE* err) {
  const auto r = c.connect();
  if (r.ok()) return kExitOk;
  const char* what = r.status == ClientStatus::ConnectFailed ? "server unreachable" : "handshake";
  return report(err, o, what, r);
}

// "HH:MM:SS" for an hour of the day in [0, 24).
std::string clock_time(double hour) {
  if (!(hour >= 0.0 && hour < 24.0)) return "?";
  auto total = static_cast<long>(hour * 3600.0 + 0.5);
  if (total >= 24 * 3600) total = 24 * 3600 - 1;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%02ld:%02ld:%02ld", total / 3600, (total / 60) % 60, total % 60);
  return buf;
}

// Connects with `role`; as Operator, warns when the server granted less.
int connect_as(Client& c, const CliOptions& o, wire::Role role, std::FILE* err) {
  if (const int rc = connect(c, o, err); rc != kExitOk) return rc;
  if (role == wire::Role::Operator && c.welcome().role != wire::Role::Operator) {
    std::fprintf(err, "bustle %s: the server granted role %s, not Operator (token?)\n",
                 o.command.c_str(), wire::EnumNameRole(c.welcome().role));
    // Still send: the server's graded answer says precisely why it refuses.
  }
  return kExitOk;
}

// Prints a rejection (reason and message, plus what the job says) to `err`.
int rejected(const CliOptions& o, const client::CommandReply& r, std::FILE* err,
             const std::string& subject) {
  std::fprintf(err, "bustle %s%s: rejected (%s)%s%s\n", o.command.c_str(), subject.c_str(),
               wire::EnumNameRejectReason(r.reason), r.message.empty() ? "" : ": ",
               r.message.c_str());
  if (r.job && !r.job->message.empty() && r.job->message != r.message) {
    std::fprintf(err, "bustle %s%s: job %" PRIu64 ": %s\n", o.command.c_str(), subject.c_str(),
                 r.job->job_id, r.job->message.c_str());
  }
  return kExitRejected;
}

// --json of a query: {"applied_step": N, "<key>": {object}}.
int print_object(std::FILE* out, const char* key, json::Json object, std::uint64_t applied_step) {
  json::print(out, {{"applied_step", applied_step}, {key, std::move(object)}});
  return kExitOk;
}

// Runs a query answered at once (any role); on success `reply` holds it.
// Returns kExitOk, or the exit code after printing why not.
int run_query(const CliOptions& o, const client::CommandSpec& spec, client::CommandReply& reply,
              std::FILE* err) {
  Client c(client_options(o, wire::Role::Viewer));
  if (const int rc = connect(c, o, err); rc != kExitOk) return rc;
  const auto r = c.command(spec, std::chrono::milliseconds(o.timeout_ms));
  if (!r.ok()) return report(err, o, client::command_name(spec), r);
  if (!r.value.accepted()) return rejected(o, r.value, err);
  reply = r.value;
  return kExitOk;
}

int missing(const CliOptions& o, const char* what, std::FILE* err) {
  std::fprintf(err, "bustle %s: the server answered without %s (server %s:%u)\n", o.command.c_str(),
               what, o.host.c_str(), unsigned{o.port});
  return kExitServer;
}

std::string priority_name(wire::PriorityClass p) {
  return enum_name(p, wire::EnumNamePriorityClass);
}
std::string despawn_reason_name(wire::DespawnReason r) {
  return enum_name(r, wire::EnumNameDespawnReason);
}

}  // namespace bustle::cli::commands
