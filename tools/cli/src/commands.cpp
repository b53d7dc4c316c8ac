#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "bustle/cli/cli.hpp"
#include "bustle/client/client.hpp"
#include "bustle/client/entity_mirror.hpp"

namespace bustle::cli {
namespace {

namespace wire = bustle::wire;
using bustle::client::Client;
using bustle::client::ClientOptions;
using bustle::client::ClientStatus;
using Clock = std::chrono::steady_clock;

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

int run_status(const CliOptions& o, std::FILE* out, std::FILE* err) {
  Client c(client_options(o, wire::Role::Viewer));
  if (const int rc = connect(c, o, err); rc != kExitOk) return rc;
  const auto r = c.command(client::QueryStatsCmd{}, std::chrono::milliseconds(o.timeout_ms));
  if (!r.ok()) return report(err, o, "query_stats", r);
  if (!r.value.accepted() || !r.value.stats) {
    std::fprintf(err, "bustle status: query_stats %s: %s %s\n",
                 wire::EnumNameCommandStatus(r.value.status),
                 wire::EnumNameRejectReason(r.value.reason), r.value.message.c_str());
    return r.value.accepted() ? kExitServer : kExitRejected;
  }
  const client::WelcomeInfo& w = c.welcome();
  const client::StatsInfo& s = *r.value.stats;
  const double rate_hz = s.step_us > 0 ? 1e6 / static_cast<double>(s.step_us) : 0.0;
  std::fprintf(out, "bustle-server %s at %s (scenario %s, protocol %u, session %" PRIu32 ")\n",
               w.server_version.c_str(), c.connection().peer().c_str(), w.scenario_id.c_str(),
               unsigned{w.protocol_version}, w.session_id);
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "step", s.step);
  std::fprintf(out, "  %-18s %.3f s\n", "sim time", static_cast<double>(s.sim_time_us) / 1e6);
  std::fprintf(out, "  %-18s %" PRIu32 " us (%.2f Hz)\n", "step length", s.step_us, rate_hz);
  std::fprintf(out, "  %-18s %s%s\n", "clock", wire::EnumNameClockMode(s.clock_mode),
               s.paused ? " (paused)" : " (running)");
  std::fprintf(out, "  %-18s %" PRIu32 "\n", "pedestrians", s.pedestrians);
  std::fprintf(out, "  %-18s %" PRIu32 "\n", "pedestrian target", s.pedestrian_target);
  std::fprintf(out, "  %-18s %" PRIu32 "\n", "entity capacity", s.entity_capacity);
  std::fprintf(out, "  %-18s %" PRIu32 "\n", "clients", s.clients);
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "spawned total", s.spawned_total);
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "despawned total", s.despawned_total);
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "commands accepted", s.commands_accepted);
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "commands rejected", s.commands_rejected);
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "dropped steps", s.dropped_steps);
  std::fprintf(out, "  %-18s %s\n", "recording",
               s.recording_failed ? "failed (stopped after a write error)"
               : s.recording      ? "yes"
                                  : "no");
  std::fprintf(out, "  %-18s %" PRIu64 "\n", "recorded ticks", s.recorded_ticks);
  std::fprintf(out, "  %-18s %016" PRIx64 "\n", "digest", s.digest);
  std::fflush(out);
  return kExitOk;
}

int run_watch(const CliOptions& o, std::FILE* out, std::FILE* err) {
  Client c(client_options(o, wire::Role::Viewer));
  if (const int rc = connect(c, o, err); rc != kExitOk) return rc;
  if (const auto s = c.subscribe(); !s.ok()) return report(err, o, "subscribe", s);

  client::EntityMirror mirror;
  const auto interval = std::chrono::milliseconds(o.interval_ms);
  auto window_start = Clock::now();
  auto next_line = window_start + interval;
  client::MirrorCounters at_window_start = mirror.counters();
  std::uint32_t lines = 0;
  std::fprintf(out, "watching %s (%s clock, %" PRIu32 " us steps)\n", c.connection().peer().c_str(),
               wire::EnumNameClockMode(c.welcome().clock_mode), c.welcome().step_us);
  std::fflush(out);

  while (o.count == 0 || lines < o.count) {
    const auto now = Clock::now();
    if (now >= next_line) {
      const double seconds = std::chrono::duration<double>(now - window_start).count();
      const client::MirrorCounters& k = mirror.counters();
      auto per_s = [&](std::uint64_t total, std::uint64_t before) {
        return seconds > 0 ? static_cast<double>(total - before) / seconds : 0.0;
      };
      std::fprintf(out,
                   "step %-10" PRIu64
                   " entities %-7zu entered/s %-9.1f updated/s %-10.1f "
                   "left/s %-9.1f digest %016" PRIx64 "\n",
                   mirror.last_step(), mirror.size(), per_s(k.entered, at_window_start.entered),
                   per_s(k.updated, at_window_start.updated), per_s(k.left, at_window_start.left),
                   mirror.last_digest());
      std::fflush(out);
      ++lines;
      at_window_start = k;
      window_start = now;
      next_line += interval;
      if (next_line <= now) next_line = now + interval;  // fell behind: do not burst
      continue;
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_line - now) +
                      std::chrono::milliseconds(1);
    auto d = c.next_delta(wait);
    if (d.status == ClientStatus::Timeout) continue;  // a paused server sends no Deltas
    if (!d.ok()) return report(err, o, "watch", d);
    mirror.apply(*d.value.delta());
  }
  const client::MirrorCounters& k = mirror.counters();
  if (k.unknown_updates + k.unknown_lefts > 0) {
    std::fprintf(err, "bustle watch: %" PRIu64 " updates and %" PRIu64 " leaves for unknown ids\n",
                 k.unknown_updates, k.unknown_lefts);
  }
  return kExitOk;
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
             const std::string& subject = "") {
  std::fprintf(err, "bustle %s%s: rejected (%s)%s%s\n", o.command.c_str(), subject.c_str(),
               wire::EnumNameRejectReason(r.reason), r.message.empty() ? "" : ": ",
               r.message.c_str());
  if (r.job && !r.job->message.empty() && r.job->message != r.message) {
    std::fprintf(err, "bustle %s%s: job %" PRIu64 ": %s\n", o.command.c_str(), subject.c_str(),
                 r.job->job_id, r.job->message.c_str());
  }
  return kExitRejected;
}

const char* kind_name(wire::JobKind k) {
  switch (k) {
    case wire::JobKind::Checkpoint:
      return "checkpoint";
    case wire::JobKind::Save:
      return "save";
    case wire::JobKind::Restore:
      return "restore";
    case wire::JobKind::Load:
      return "load";
    case wire::JobKind::Autosave:
      return "autosave";
  }
  return "?";
}

// One line per job state: "restore 'noon' job 4: Validated (step 10)".
void print_job(std::FILE* out, const client::JobInfo& j) {
  std::fprintf(out, "%s '%s' job %" PRIu64 ": %s", kind_name(j.kind), j.name.c_str(), j.job_id,
               wire::EnumNameJobState(j.state));
  if (j.state != wire::JobState::Queued && !j.failed())
    std::fprintf(out, " (step %" PRIu64 ")", j.step);
  if (!j.message.empty()) std::fprintf(out, ": %s", j.message.c_str());
  std::fputc('\n', out);
  std::fflush(out);
}

// Exit code for a job's terminal state; a failure is explained on `err`.
int job_outcome(const CliOptions& o, const client::JobInfo& j, std::FILE* err) {
  if (!j.failed()) return kExitOk;
  std::fprintf(err, "bustle %s: %s '%s' failed%s%s\n", o.command.c_str(), kind_name(j.kind),
               j.name.c_str(), j.message.empty() ? "" : ": ", j.message.c_str());
  return kExitRejected;
}

int run_snapshot_job(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandSpec spec;
  if (o.command == "checkpoint") {
    spec = client::CheckpointCmd{o.name};
  } else if (o.command == "restore") {
    spec = client::RestoreCmd{o.name};
  } else if (o.command == "save") {
    spec = client::SaveCmd{o.name};
  } else {
    spec = client::LoadCmd{o.name};
  }
  const auto timeout = std::chrono::milliseconds(o.timeout_ms);
  Client c(client_options(o, wire::Role::Operator));
  if (const int rc = connect_as(c, o, wire::Role::Operator, err); rc != kExitOk) return rc;
  const auto r = c.command(spec, timeout);
  if (!r.ok()) return report(err, o, client::command_name(spec), r);
  const std::string subject = " '" + o.name + "'";
  if (!r.value.accepted()) return rejected(o, r.value, err, subject);
  if (!r.value.job) {
    std::fprintf(err, "bustle %s%s: the server accepted it but named no job (server %s:%u)\n",
                 o.command.c_str(), subject.c_str(), o.host.c_str(), unsigned{o.port});
    return kExitServer;
  }
  client::JobInfo job = *r.value.job;
  print_job(out, job);
  if (!job.terminal && o.no_wait) return kExitOk;
  while (!job.terminal) {
    const auto u = c.next_job_update(job.job_id, timeout);
    if (!u.ok()) {
      return report(err, o, ("waiting for job " + std::to_string(job.job_id)).c_str(), u);
    }
    job = u.value;
    print_job(out, job);
  }
  return job_outcome(o, job, err);
}

std::string utc_time(std::int64_t unix_ms) {
  // Floor division, so times before 1970 still print the right second.
  std::int64_t seconds = unix_ms / 1000;
  if (unix_ms % 1000 < 0) --seconds;
  const auto t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return "?";
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return n == 0 ? std::string("?") : std::string(buf, n);
}

int run_snapshots(const CliOptions& o, std::FILE* out, std::FILE* err) {
  Client c(client_options(o, wire::Role::Viewer));
  if (const int rc = connect(c, o, err); rc != kExitOk) return rc;
  const auto r = c.command(client::ListSnapshotsCmd{}, std::chrono::milliseconds(o.timeout_ms));
  if (!r.ok()) return report(err, o, "list_snapshots", r);
  if (!r.value.accepted()) return rejected(o, r.value, err);
  if (!r.value.snapshots) {
    std::fprintf(err,
                 "bustle snapshots: the server answered without a snapshot list (server %s:%u)\n",
                 o.host.c_str(), unsigned{o.port});
    return kExitServer;
  }
  const auto& list = *r.value.snapshots;
  int name_width = 4;
  for (const auto& e : list) name_width = std::max(name_width, static_cast<int>(e.name.size()));
  std::fprintf(out, "%-*s  %-10s  %10s  %12s  %11s  %-16s  %s\n", name_width, "NAME", "KIND",
               "STEP", "SIM TIME", "PEDESTRIANS", "DIGEST", "CREATED (UTC)");
  for (const auto& e : list) {
    std::fprintf(out, "%-*s  %-10s  %10" PRIu64 "  %10.1f s  %11" PRIu32 "  %016" PRIx64 "  %s\n",
                 name_width, e.name.c_str(), e.kind.c_str(), e.step,
                 static_cast<double>(e.sim_time_us) / 1e6, e.pedestrians, e.digest,
                 utc_time(e.created_unix_ms).c_str());
  }
  std::fprintf(out, "%zu snapshot%s\n", list.size(), list.size() == 1 ? "" : "s");
  std::fflush(out);
  return kExitOk;
}

int run_delete(const CliOptions& o, std::FILE* out, std::FILE* err) {
  Client c(client_options(o, wire::Role::Operator));
  if (const int rc = connect_as(c, o, wire::Role::Operator, err); rc != kExitOk) return rc;
  const auto r =
      c.command(client::DeleteSnapshotCmd{o.name}, std::chrono::milliseconds(o.timeout_ms));
  if (!r.ok()) return report(err, o, "delete_snapshot", r);
  if (!r.value.accepted()) return rejected(o, r.value, err, " '" + o.name + "'");
  std::fprintf(out, "deleted snapshot '%s'\n", o.name.c_str());
  std::fflush(out);
  return kExitOk;
}

int run_job_query(const CliOptions& o, std::FILE* out, std::FILE* err) {
  Client c(client_options(o, wire::Role::Viewer));
  if (const int rc = connect(c, o, err); rc != kExitOk) return rc;
  const auto r = c.command(client::QueryJobCmd{o.job_id}, std::chrono::milliseconds(o.timeout_ms));
  if (!r.ok()) return report(err, o, "query_job", r);
  const std::string subject = " " + std::to_string(o.job_id);
  if (!r.value.accepted()) return rejected(o, r.value, err, subject);
  if (!r.value.job) {
    std::fprintf(err, "bustle job%s: the server answered without the job (server %s:%u)\n",
                 subject.c_str(), o.host.c_str(), unsigned{o.port});
    return kExitServer;
  }
  print_job(out, *r.value.job);
  std::fprintf(out, "  %s\n",
               r.value.job->terminal ? "terminal: no further states" : "in progress");
  std::fflush(out);
  return kExitOk;
}

int run_operator(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandSpec spec;
  if (o.command == "pause") {
    spec = client::PauseCmd{};
  } else if (o.command == "resume") {
    spec = client::ResumeCmd{};
  } else if (o.command == "step") {
    spec = client::StepCmd{o.argument};
  } else {
    spec = client::SetPedestrianTargetCmd{o.argument};
  }
  Client c(client_options(o, wire::Role::Operator));
  if (const int rc = connect_as(c, o, wire::Role::Operator, err); rc != kExitOk) return rc;
  const auto r = c.command(spec, std::chrono::milliseconds(o.timeout_ms));
  if (!r.ok()) return report(err, o, client::command_name(spec), r);
  if (!r.value.accepted()) {
    std::fprintf(err, "bustle %s: rejected (%s)%s%s\n", o.command.c_str(),
                 wire::EnumNameRejectReason(r.value.reason), r.value.message.empty() ? "" : ": ",
                 r.value.message.c_str());
    return kExitRejected;
  }
  std::fprintf(out, "%s accepted at step %" PRIu64 "%s%s\n", o.command.c_str(),
               r.value.applied_step, r.value.message.empty() ? "" : ": ", r.value.message.c_str());
  std::fflush(out);
  return kExitOk;
}

}  // namespace

int run(const CliOptions& options, std::FILE* out, std::FILE* err) {
  if (options.command == "status") return run_status(options, out, err);
  if (options.command == "watch") return run_watch(options, out, err);
  if (options.command == "pause" || options.command == "resume" || options.command == "step" ||
      options.command == "target") {
    return run_operator(options, out, err);
  }
  if (options.command == "checkpoint" || options.command == "restore" ||
      options.command == "save" || options.command == "load") {
    return run_snapshot_job(options, out, err);
  }
  if (options.command == "snapshots") return run_snapshots(options, out, err);
  if (options.command == "delete") return run_delete(options, out, err);
  if (options.command == "job") return run_job_query(options, out, err);
  if (options.command == "help") {
    print_usage(out);
    return kExitOk;
  }
  std::fprintf(err, "bustle: unknown command \"%s\"\n", options.command.c_str());
  return kExitUsage;
}

int main_entry(int argc, char** argv) {
  std::vector<std::string_view> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  const ParseResult parsed = parse_args(args, std::getenv("BUSTLE_TOKEN"));
  switch (parsed.status) {
    case ParseStatus::Help:
      print_usage(stdout);
      return kExitOk;
    case ParseStatus::Error:
      std::fprintf(stderr, "bustle: %s\nTry 'bustle --help'.\n", parsed.error.c_str());
      return kExitUsage;
    case ParseStatus::Ok:
      break;
  }
  return run(parsed.options, stdout, stderr);
}

}  // namespace bustle::cli
