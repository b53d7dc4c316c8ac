// Snapshot commands: checkpoint, restore, save and load (a job followed to its end unless
// --no-wait), snapshots (the list), delete, and job (one job's state).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <ctime>

#include "commands/commands.hpp"
#include "commands/common.hpp"
#include "json_output.hpp"

namespace bustle::cli::commands {
namespace {

// "checkpoint", "restore", ...: the schema's JobKind name in lower case.
std::string kind_name(wire::JobKind k) {
  std::string name = enum_name(k, wire::EnumNameJobKind);
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return name;
}

// One line per job state: "restore 'noon' job 4: Validated (step 10)".
void print_job(std::FILE* out, const CliOptions& o, const client::JobInfo& j) {
  if (o.json) return json::print(out, json::job(j));
  std::fprintf(out, "%s '%s' job %" PRIu64 ": %s", kind_name(j.kind).c_str(), j.name.c_str(),
               j.job_id, wire::EnumNameJobState(j.state));
  if (j.state != wire::JobState::Queued && !j.failed())
    std::fprintf(out, " (step %" PRIu64 ")", j.step);
  if (!j.message.empty()) std::fprintf(out, ": %s", j.message.c_str());
  std::fputc('\n', out);
  std::fflush(out);
}

// Exit code for a job's terminal state; a failure is explained on `err`.
int job_outcome(const CliOptions& o, const client::JobInfo& j, std::FILE* err) {
  if (!j.failed()) return kExitOk;
  std::fprintf(err, "bustle %s: %s '%s' failed%s%s\n", o.command.c_str(), kind_name(j.kind).c_str(),
               j.name.c_str(), j.message.empty() ? "" : ": ", j.message.c_str());
  return kExitRejected;
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

}  // namespace

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
  print_job(out, o, job);
  if (!job.terminal && o.no_wait) return kExitOk;
  while (!job.terminal) {
    const auto u = c.next_job_update(job.job_id, timeout);
    if (!u.ok()) {
      return report(err, o, ("waiting for job " + std::to_string(job.job_id)).c_str(), u);
    }
    job = u.value;
    print_job(out, o, job);
  }
  return job_outcome(o, job, err);
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
  if (o.json) return print_list(out, "snapshots", list, json::snapshot, r.value.applied_step);
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
  if (o.json) {
    json::print(out, {{"command", o.command}, {"deleted", o.name}});
    return kExitOk;
  }
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
  print_job(out, o, *r.value.job);
  if (o.json) return kExitOk;  // "terminal" is in the object
  std::fprintf(out, "  %s\n",
               r.value.job->terminal ? "terminal: no further states" : "in progress");
  std::fflush(out);
  return kExitOk;
}

}  // namespace bustle::cli::commands
