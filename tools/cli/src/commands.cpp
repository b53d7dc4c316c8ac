#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "bustle/cli/cli.hpp"
#include "bustle/client/client.hpp"
#include "bustle/client/entity_mirror.hpp"
#include "json_output.hpp"

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

// "HH:MM:SS" for an hour of the day in [0, 24).
std::string clock_time(double hour) {
  if (!(hour >= 0.0 && hour < 24.0)) return "?";
  auto total = static_cast<long>(hour * 3600.0 + 0.5);
  if (total >= 24 * 3600) total = 24 * 3600 - 1;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%02ld:%02ld:%02ld", total / 3600, (total / 60) % 60, total % 60);
  return buf;
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
  if (o.json) {
    json::print(out, {{"server",
                       {{"version", w.server_version},
                        {"address", c.connection().peer()},
                        {"scenario_id", w.scenario_id},
                        {"protocol_version", w.protocol_version},
                        {"session_id", w.session_id}}},
                      {"stats", json::stats(s)}});
    return kExitOk;
  }
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
  std::fprintf(
      out, "  %-18s %" PRIu32 " (full %" PRIu32 ", simulated %" PRIu32 ", coarse %" PRIu32 ")\n",
      "vehicles", s.vehicles, s.vehicles_full, s.vehicles_simulated, s.vehicles_coarse);
  std::fprintf(out,
               "  %-18s moving %" PRIu32 ", waiting at signal %" PRIu32 ", yielding %" PRIu32 "\n",
               "vehicle motion", s.vehicles_moving, s.vehicles_waiting, s.vehicles_yielding);
  std::fprintf(out, "  %-18s %" PRIu32 "\n", "tier deferred", s.tier_transitions_deferred);
  std::fprintf(out, "  %-18s %s (%.4f h)\n", "time of day", clock_time(s.hour).c_str(), s.hour);
  std::fprintf(out, "  %-18s %" PRIu32 " game s per s\n", "time scale", s.time_scale);
  std::fprintf(out, "  %-18s %" PRIu32 " (active %" PRIu32 ", dormant %" PRIu32 ")\n", "residents",
               s.residents, s.residents_active,
               s.residents >= s.residents_active ? s.residents - s.residents_active : 0u);
  std::fprintf(out,
               "  %-18s assigned %" PRIu32 ", unassigned %" PRIu32 " (%" PRIu32
               " past grace), released %" PRIu64 ", preserved %" PRIu64 "\n",
               "leases", s.leases_assigned, s.leases_unassigned, s.leases_unassigned_past_grace,
               s.leases_released_total, s.leases_preserved_total);
  std::fprintf(out, "  %-18s attached %" PRIu64 ", ready %" PRIu64 ", awaiting %" PRIu32 "\n",
               "spawn stages", s.spawn_attached_total, s.spawn_ready_total,
               s.spawn_awaiting_representation);
  std::fprintf(out, "  %-18s %" PRIu32 " (dropped over the cap %" PRIu32 ")\n", "client observers",
               s.client_observers, s.client_observers_dropped);
  std::fprintf(out,
               "  %-18s p50 %.1f us, p99 %.1f us, max %.1f us (last %" PRIu32 " steps; %" PRIu64
               " timed)\n",
               "step time", s.step_time_p50_us, s.step_time_p99_us, s.step_time_max_us,
               s.step_time_window, s.steps_timed_total);
  std::fprintf(out, "  %-18s", "step histogram");
  for (std::size_t i = 0; i < s.step_time_bucket_counts.size(); ++i) {
    if (s.step_time_bucket_counts[i] == 0) continue;  // only the buckets the window has
    if (i < s.step_time_bucket_le_us.size()) {
      std::fprintf(out, " <=%gus:%" PRIu32, s.step_time_bucket_le_us[i],
                   s.step_time_bucket_counts[i]);
    } else {
      std::fprintf(out, " +Inf:%" PRIu32, s.step_time_bucket_counts[i]);
    }
  }
  std::fprintf(out, "%s\n", s.step_time_window == 0 ? " none" : "");
  std::fprintf(out, "  %-18s %016" PRIx64 "\n", "digest", s.digest);
  std::fflush(out);
  return kExitOk;
}

int rejected(const CliOptions& o, const client::CommandReply& r, std::FILE* err,
             const std::string& subject = "");

int run_watch(const CliOptions& o, std::FILE* out, std::FILE* err) {
  Client c(client_options(o, wire::Role::Viewer));
  if (const int rc = connect(c, o, err); rc != kExitOk) return rc;
  client::SubscribeParams sub;
  for (const CliOptions::WatchObserver& w : o.watch_observers) {
    client::InterestObserver obs;
    obs.x_m = w.x_m;
    obs.y_m = w.y_m;
    obs.radius_m = w.radius_m;
    sub.observers.push_back(obs);
  }
  if (const auto s = c.subscribe(sub, std::chrono::milliseconds(o.timeout_ms)); !s.ok()) {
    if (s.status == ClientStatus::Rejected) return rejected(o, s.value, err);
    return report(err, o, "subscribe", s);
  }

  client::EntityMirror mirror;
  mirror.set_world(c.welcome());
  const auto interval = std::chrono::milliseconds(o.interval_ms);
  auto window_start = Clock::now();
  auto next_line = window_start + interval;
  client::MirrorCounters at_window_start = mirror.counters();
  std::uint32_t lines = 0;
  if (o.json) {
    json::print(out, {{"watching", c.connection().peer()},
                      {"clock_mode", wire::EnumNameClockMode(c.welcome().clock_mode)},
                      {"step_us", c.welcome().step_us},
                      {"observers", o.watch_observers.size()}});
  } else {
    std::fprintf(out, "watching %s (%s clock, %" PRIu32 " us steps, %s)\n",
                 c.connection().peer().c_str(), wire::EnumNameClockMode(c.welcome().clock_mode),
                 c.welcome().step_us,
                 o.watch_observers.empty()
                     ? "whole city"
                     : (std::to_string(o.watch_observers.size()) + " observers").c_str());
  }
  std::fflush(out);

  while (o.count == 0 || lines < o.count) {
    const auto now = Clock::now();
    if (now >= next_line) {
      const double seconds = std::chrono::duration<double>(now - window_start).count();
      const client::MirrorCounters& k = mirror.counters();
      auto per_s = [&](std::uint64_t total, std::uint64_t before) {
        return seconds > 0 ? static_cast<double>(total - before) / seconds : 0.0;
      };
      // Step time (Stats, the server's last 1024 steps): one QueryStats per line.
      const auto stats =
          c.command(client::QueryStatsCmd{}, std::chrono::milliseconds(o.timeout_ms));
      const client::StatsInfo* st = stats.ok() && stats.value.stats ? &*stats.value.stats : nullptr;
      if (o.json) {
        json::print(out, {{"step", mirror.last_step()},
                          {"entities", mirror.size()},
                          {"entered_per_s", per_s(k.entered, at_window_start.entered)},
                          {"moved_per_s", per_s(k.moved, at_window_start.moved)},
                          {"left_per_s", per_s(k.left, at_window_start.left)},
                          {"truncated", mirror.interest_truncated()},
                          {"digest", json::hex(mirror.last_digest())},
                          {"step_time_p50_us", st ? st->step_time_p50_us : 0.0},
                          {"step_time_p99_us", st ? st->step_time_p99_us : 0.0},
                          {"step_time_max_us", st ? st->step_time_max_us : 0.0}});
      } else {
        std::fprintf(out,
                     "step %-10" PRIu64
                     " entities %-7zu entered/s %-9.1f moved/s %-10.1f "
                     "left/s %-9.1f truncated %-7" PRIu32 " digest %016" PRIx64
                     " step_us p50 %.1f p99 %.1f max %.1f\n",
                     mirror.last_step(), mirror.size(), per_s(k.entered, at_window_start.entered),
                     per_s(k.moved, at_window_start.moved), per_s(k.left, at_window_start.left),
                     mirror.interest_truncated(), mirror.last_digest(),
                     st ? st->step_time_p50_us : 0.0, st ? st->step_time_p99_us : 0.0,
                     st ? st->step_time_max_us : 0.0);
      }
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
    mirror.apply(d.value);
  }
  const client::MirrorCounters& k = mirror.counters();
  const std::uint64_t unknown =
      k.unknown_motion + k.unknown_changes + k.unknown_lefts + k.unknown_retiring;
  if (unknown + k.duplicate_enters > 0) {
    std::fprintf(err,
                 "bustle watch: %" PRIu64 " updates or leaves for entities not received, %" PRIu64
                 " duplicate enters\n",
                 unknown, k.duplicate_enters);
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

// A schema enum value by its generated name ("Story"), or its number when
// this build's schema has no name for it (a newer server).
template <class Enum>
std::string enum_name(Enum value, const char* (*name_of)(Enum)) {
  const char* name = name_of(value);
  return *name != '\0' ? std::string(name) : std::to_string(static_cast<unsigned>(value));
}
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

// --json of a query: {"applied_step": N, "<key>": [rows]}.
template <class Row, class ToJson>
int print_list(std::FILE* out, const char* key, const std::vector<Row>& rows, ToJson to_json,
               std::uint64_t applied_step) {
  json::Json list = json::Json::array();
  for (const Row& row : rows) list.push_back(to_json(row));
  json::print(out, {{"applied_step", applied_step}, {key, list}});
  return kExitOk;
}

// --json of a query: {"applied_step": N, "<key>": {object}}.
int print_object(std::FILE* out, const char* key, json::Json object, std::uint64_t applied_step) {
  json::print(out, {{"applied_step", applied_step}, {key, std::move(object)}});
  return kExitOk;
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

// Rows by value or, as the object API holds nested tables, by unique_ptr.
template <class T>
const T& row_ref(const T& row) {
  return row;
}
template <class T>
const T& row_ref(const std::unique_ptr<T>& row) {
  return *row;
}

template <class T>
int id_width(const std::vector<T>& rows, int least = 2) {
  int w = least;
  for (const auto& row : rows) w = std::max(w, static_cast<int>(row_ref(row).id.size()));
  return w;
}

int run_garages(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandReply r;
  if (const int rc = run_query(o, client::QueryGaragesCmd{}, r, err); rc != kExitOk) return rc;
  if (!r.garages) return missing(o, "a garage list", err);
  const auto& list = *r.garages;
  if (o.json) return print_list(out, "garages", list, json::garage, r.applied_step);
  const int w = id_width(list);
  std::fprintf(out, "%-*s  %6s  %10s  %11s  %-15s  %11s  %8s  %s\n", w, "ID", "QUEUED",
               "DISPATCHED", "MANAGED/CAP", "LAST GATE", "TURNAROUNDS", "CANCELED",
               "REJECTED INVALID/DUPLICATE/FULL");
  for (const auto& g : list) {
    const std::string managed = std::to_string(g.managed) + "/" + std::to_string(g.capacity);
    const std::string rejected_counts = std::to_string(g.rejected_invalid) + "/" +
                                        std::to_string(g.rejected_duplicate) + "/" +
                                        std::to_string(g.rejected_queue_full);
    std::fprintf(out, "%-*s  %6zu  %10" PRIu32 "  %11s  %-15s  %11" PRIu64 "  %8" PRIu64 "  %s\n",
                 w, g.id.c_str(), g.queued.size(), g.dispatched, managed.c_str(),
                 wire::EnumNameDispatchGate(g.last_gate), g.turnarounds, g.canceled,
                 rejected_counts.c_str());
  }
  // Per garage: each queued request in dispatch order with its EnqueueOrdinal,
  // priority and prototype, the vehicles in its mouth, then the dispatched
  // request ids.
  for (const auto& g : list) {
    for (const auto& q : g.queue) {
      std::fprintf(out, "queued %s: %s ordinal %" PRIu64 " priority %" PRId32 " prototype %s\n",
                   g.id.c_str(), q->request_id.c_str(), q->enqueue_ordinal, q->priority,
                   q->prototype.c_str());
    }
    if (!g.mouth.empty()) {  // dispatched, waiting for the entrance, front first
      std::fprintf(out, "mouth %s (%zu of %" PRIu32 "):", g.id.c_str(), g.mouth.size(),
                   g.mouth_capacity);
      for (const auto& m : g.mouth) std::fprintf(out, " %s", m->vehicle_id.c_str());
      std::fputc('\n', out);
    }
    if (g.dispatched_ids.empty()) continue;
    std::fprintf(out, "dispatched %s:", g.id.c_str());
    for (const auto& id : g.dispatched_ids) std::fprintf(out, " %s", id.c_str());
    std::fputc('\n', out);
  }
  if (!list.empty()) {
    std::fprintf(out, "content plan: %" PRIu64 " of %" PRIu32 " requests injected\n",
                 list.front().plan_injected, list.front().plan_total);
  }
  std::fprintf(out, "%zu garage%s at step %" PRIu64 "\n", list.size(), list.size() == 1 ? "" : "s",
               r.applied_step);
  std::fflush(out);
  return kExitOk;
}

int run_signals(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandReply r;
  if (const int rc = run_query(o, client::QuerySignalsCmd{}, r, err); rc != kExitOk) return rc;
  if (!r.signals) return missing(o, "a signal list", err);
  const auto& list = *r.signals;
  if (o.json) return print_list(out, "signals", list, json::signal, r.applied_step);
  const int w = id_width(list);
  std::fprintf(out, "%-*s  %6s  %-6s  %10s  %8s\n", w, "ID", "LANE", "PHASE", "ELAPSED", "CYCLES");
  for (const auto& sig : list) {
    std::fprintf(out, "%-*s  %6" PRIu32 "  %-6s  %8.1f s  %8" PRIu64 "\n", w, sig.id.c_str(),
                 sig.lane, wire::EnumNameSignalPhase(sig.phase),
                 static_cast<double>(sig.phase_elapsed_us) / 1e6, sig.cycles);
  }
  std::fprintf(out, "%zu signal%s at step %" PRIu64 "\n", list.size(), list.size() == 1 ? "" : "s",
               r.applied_step);
  std::fflush(out);
  return kExitOk;
}

int run_zones(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandReply r;
  if (const int rc = run_query(o, client::QueryZonesCmd{}, r, err); rc != kExitOk) return rc;
  if (!r.zones) return missing(o, "a zone list", err);
  const auto& list = *r.zones;
  if (o.json) return print_list(out, "zones", list, json::zone, r.applied_step);
  const int w = id_width(list);
  std::fprintf(out, "%-*s  %6s  %6s  %7s  %13s  %15s  %8s  %20s  %8s\n", w, "ID", "TARGET",
               "ACTIVE", "DORMANT", "PENDING SPAWN", "PENDING RECYCLE", "DEFERRED",
               "REJECTED BY CAPACITY", "CAPACITY");
  for (const auto& z : list) {
    std::fprintf(out,
                 "%-*s  %6" PRIu32 "  %6" PRIu32 "  %7" PRIu32 "  %13" PRIu32 "  %15" PRIu32
                 "  %8" PRIu32 "  %20" PRIu32 "  %8" PRIu32 "\n",
                 w, z.id.c_str(), z.target, z.active, z.dormant, z.pending_spawn, z.pending_recycle,
                 z.deferred_by_quota, z.rejected_by_capacity, z.capacity);
    for (const auto& wp : z.work_points) {
      std::fprintf(
          out,
          "%-*s  work point %s (%s): %" PRIu32 " of %" PRIu32 " slots held, %" PRIu32 " waiting\n",
          w, "", wp->id.c_str(), wp->profession.c_str(), wp->occupied, wp->slots, wp->waiting);
      if (!wp->anchor_lane.empty()) {
        std::fprintf(out,
                     "%-*s    anchor lane %s (%" PRId32
                     ") s %.3f m at %.3f, %.3f m, slots every "
                     "%.3f m: %" PRIu32 " of %" PRIu32 " holders at their slot\n",
                     w, "", wp->anchor_lane.c_str(), wp->anchor_lane_index, wp->anchor_s_m,
                     wp->anchor_x_m, wp->anchor_y_m, wp->slot_spacing_m, wp->arrived_count,
                     wp->occupied);
      }
    }
  }
  std::fprintf(out, "%zu zone%s at step %" PRIu64 " (deferred and rejected: last interval)\n",
               list.size(), list.size() == 1 ? "" : "s", r.applied_step);
  std::fflush(out);
  return kExitOk;
}

std::string ident(client::EntityId e) {
  return std::to_string(e.index) + ":" + std::to_string(e.generation);
}

int run_vehicle(const CliOptions& o, std::FILE* out, std::FILE* err) {
  const client::EntityId id{o.entity_index, o.entity_generation};
  client::CommandReply r;
  if (const int rc = run_query(o, client::QueryVehicleCmd{id}, r, err); rc != kExitOk) return rc;
  if (!r.vehicle) return missing(o, "the vehicle", err);
  const client::VehicleReport& v = *r.vehicle;
  if (o.json) return print_object(out, "vehicle", json::vehicle(v), r.applied_step);
  std::fprintf(out, "vehicle %s at step %" PRIu64 "\n", ident(v.entity()).c_str(), r.applied_step);
  std::fprintf(out, "  %-20s %s\n", "vehicle id", v.vehicle_id.c_str());
  std::fprintf(out, "  %-20s %s\n", "garage", v.garage.c_str());
  std::fprintf(out, "  %-20s %s\n", "request", v.request_id.c_str());
  std::fprintf(out, "  %-20s %s\n", "prototype", v.prototype.c_str());
  std::fprintf(out, "  %-20s %" PRIu32 "\n", "route index", v.route_index);
  std::fprintf(out, "  %-20s %" PRIu32 "\n", "lane", v.lane);
  std::fprintf(out, "  %-20s %.3f m (alpha %.4f)\n", "distance on lane", v.s_m, v.alpha);
  std::fprintf(out, "  %-20s %.3f, %.3f m\n", "position", v.x_m, v.y_m);
  std::fprintf(out, "  %-20s %.3f m/s\n", "speed", v.speed_mps);
  std::fprintf(out, "  %-20s %s\n", "strategy", wire::EnumNameVehicleStrategyState(v.strategy));
  std::fprintf(out, "  %-20s %s\n", "policy", wire::EnumNameControlPolicy(v.policy));
  std::fprintf(out, "  %-20s %s\n", "reason", wire::EnumNamePolicyReason(v.reason));
  std::fprintf(out, "  %-20s %s\n", "tier", wire::EnumNameSimTier(v.tier));
  std::fprintf(out, "  %-20s %s\n", "leader",
               v.has_leader() ? ident(v.leader_entity()).c_str() : "none");
  std::fprintf(out, "  %-20s %" PRIu64 "\n", "steps advanced", v.steps_advanced);
  std::fprintf(out, "  %-20s %s\n", "awaiting turnaround", v.awaiting_turnaround ? "yes" : "no");
  std::fprintf(out, "  %-20s %s\n", "despawn requested", v.despawn_requested ? "yes" : "no");
  std::fflush(out);
  return kExitOk;
}

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

// Whether a step comes by itself: world commands wait for one.
struct ClockView {
  bool manual = false;
  bool paused = false;
  bool stepping = false;  // manual and --step: this tool sends the steps
};

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

std::string priority_name(wire::PriorityClass p) {
  return enum_name(p, wire::EnumNamePriorityClass);
}
std::string despawn_reason_name(wire::DespawnReason r) {
  return enum_name(r, wire::EnumNameDespawnReason);
}

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
               s.entity_id() == client::EntityId{} ? "-" : ident(s.entity_id()).c_str(),
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
        json::print(out, {{"reported_attached", ident(s.entity_id())},
                          {"applied_step", attached.value.applied_step}});
        continue;
      }
      std::fprintf(out, "reported entity %s attached at step %" PRIu64 "\n",
                   ident(s.entity_id()).c_str(), attached.value.applied_step);
      std::fflush(out);
    }
  }
}

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
    json::print(out, {{"command", o.command},
                      {"accepted", true},
                      {"applied_step", reply->applied_step},
                      {"handle", o.handle},
                      {"entity", given_back ? json::Json(ident(*reply->entity)) : nullptr}});
    return kExitOk;
  }
  print_accepted(out, o, *reply);
  if (given_back) {
    std::fprintf(out, "spawn %" PRIu64 " canceled; entity %s given back\n", o.handle,
                 ident(*reply->entity).c_str());
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

int run_entity(const CliOptions& o, std::FILE* out, std::FILE* err) {
  const client::EntityId id{o.entity_index, o.entity_generation};
  client::CommandReply r;
  if (const int rc = run_query(o, client::QueryEntityCmd{id}, r, err); rc != kExitOk) return rc;
  if (!r.entity_info) return missing(o, "the entity", err);
  const client::EntityReport& e = *r.entity_info;
  if (o.json) return print_object(out, "entity", json::entity(e), r.applied_step);
  auto name_or_dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  std::fprintf(out, "entity %s at step %" PRIu64 "\n", ident(e.entity_id()).c_str(),
               r.applied_step);
  std::fprintf(out, "  %-20s %s %s, %s%s\n", "identity", ident(e.entity_id()).c_str(),
               wire::EnumNameEntityKind(e.kind), e.alive ? "alive" : "not alive",
               e.saveable ? ", saveable" : "");
  std::fprintf(out, "  %-20s %s\n", "lifecycle", wire::EnumNameLifecycleState(e.lifecycle));
  std::fprintf(out, "  %-20s %s%s", "tier", wire::EnumNameSimTier(e.tier),
               e.forced_full ? " (forced full)" : "");
  std::fputc('\n', out);
  if (e.lifecycle == wire::LifecycleState::Active)
    std::fprintf(out, "  %-20s distance asks %s, capacity target %s, applied %s\n", "tier stages",
                 wire::EnumNameSimTier(e.requested_tier), wire::EnumNameSimTier(e.capacity_tier),
                 wire::EnumNameSimTier(e.tier));
  if (e.admission_masked) std::fprintf(out, "  %-20s %s\n", "admission mask", "movement held");
  if (e.corpse) std::fprintf(out, "  %-20s %s\n", "corpse", "killed, awaiting cleanup");
  if (e.response_level != 0)
    std::fprintf(out, "  %-20s level %" PRIu32 "\n", "response unit", e.response_level);
  std::fprintf(out, "  %-20s %s\n", "representation",
               wire::EnumNameRepresentationHint(e.representation));
  std::fprintf(out, "  %-20s priority %s, origin %s\n", "priority/origin",
               priority_name(e.priority).c_str(), wire::EnumNamePedestrianOrigin(e.origin));
  const std::string slot = e.work_slot >= 0 ? std::to_string(e.work_slot) : "-";
  std::fprintf(out, "  %-20s community %s, zone %s, work point %s, slot %s\n", "community/zone",
               name_or_dash(e.community).c_str(), name_or_dash(e.zone).c_str(),
               name_or_dash(e.work_point).c_str(), slot.c_str());
  if (e.work_slot >= 0) {
    std::fprintf(out, "  %-20s %s\n", "work anchor",
                 e.at_work_anchor ? "at its slot" : "not at its slot (walking, or no anchor)");
  }
  if (!e.profession.empty()) {
    std::fprintf(out, "  %-20s %s, %s: %s\n", "profession/phase", e.profession.c_str(),
                 e.schedule_phase.c_str(), name_or_dash(e.activity).c_str());
    std::fprintf(out, "  %-20s %" PRIu32 ", last portal %s\n", "migrations", e.migrations,
                 name_or_dash(e.last_portal).c_str());
  }
  if (e.lane >= 0) {
    std::fprintf(out, "  %-20s lane %" PRId32 ", s %.3f m, position %.3f, %.3f m\n",
                 "lane/position", e.lane, e.s_m, e.x_m, e.y_m);
  } else {
    std::fprintf(out, "  %-20s no lane, position %.3f, %.3f m\n", "lane/position", e.x_m, e.y_m);
  }
  std::fprintf(out, "  %-20s %.3f m\n", "effective distance", e.effective_distance_m);
  if (e.spawn_handle != 0) {
    std::fprintf(out, "  %-20s handle %" PRIu64 ", %s\n", "spawn", e.spawn_handle,
                 wire::EnumNameSpawnState(e.spawn_state));
  } else {
    std::fprintf(out, "  %-20s none\n", "spawn");
  }
  if (e.lifecycle == wire::LifecycleState::Retiring) {
    std::fprintf(out, "  %-20s reason %s, id released at step %" PRIu64 "\n", "retiring",
                 despawn_reason_name(e.retiring_reason).c_str(), e.release_step);
  } else {
    std::fprintf(out, "  %-20s no\n", "retiring");
  }
  std::fflush(out);
  return kExitOk;
}

// The prevention lines of `bustle population`: level, units by state, the
// per-level totals of the levels that saw units, corpses.
void print_prevention(const client::PopulationReport& p, std::FILE* out) {
  std::fprintf(out,
               "  %-20s level %" PRIu32 ", units queued %" PRIu32 ", active %" PRIu32
               ", retiring %" PRIu32 "\n",
               "prevention", p.prevention_level, p.units_queued, p.units_active, p.units_retiring);
  for (std::size_t l = 0; l < p.level_queued.size(); ++l) {
    const auto at = [&](const std::vector<std::uint64_t>& v) { return l < v.size() ? v[l] : 0; };
    if (at(p.level_queued) == 0 && at(p.level_capped) == 0) continue;
    std::fprintf(out,
                 "    level %zu: queued %" PRIu64 ", spawned %" PRIu64 ", canceled %" PRIu64
                 ", despawned %" PRIu64 ", lost %" PRIu64 ", capped %" PRIu64 "\n",
                 l + 1, at(p.level_queued), at(p.level_spawned), at(p.level_canceled),
                 at(p.level_despawned), at(p.level_lost), at(p.level_capped));
  }
  std::fprintf(out,
               "  %-20s %" PRIu32 " (killed %" PRIu64 ", soft-deleted %" PRIu64
               ", force-deleted %" PRIu64 ", pressure-deleted %" PRIu64 ")\n",
               "corpses", p.corpses, p.corpses_killed, p.corpses_soft_deleted,
               p.corpses_force_deleted, p.corpses_pressure_deleted);
}

// The observers line of bustle population: points, the follow or its wait.
void print_observers(const client::PopulationReport& p, std::FILE* out) {
  std::fprintf(out, "  %-20s", "observers");
  for (std::size_t i = 0; i < p.observers_x_m.size() && i < p.observers_y_m.size(); ++i)
    std::fprintf(out, "%s (%.1f, %.1f)", i == 0 ? "" : ",", p.observers_x_m[i], p.observers_y_m[i]);
  if (p.followed != nullptr) {
    std::fprintf(out, " following %" PRIu32 ":%" PRIu32, p.followed->index(),
                 p.followed->generation());
  }
  if (p.follow_first_vehicle) std::fprintf(out, " (waiting to follow the first vehicle)");
  std::fprintf(out, "%s\n", p.observers_x_m.empty() ? " none" : "");
}

// The lane-closure lines of bustle population.
void print_lane_closures(const client::PopulationReport& p, std::FILE* out) {
  std::fprintf(out, "  %-20s", "closed lanes");
  for (std::size_t i = 0; i < p.closed_lanes.size(); ++i)
    std::fprintf(out, "%s %s", i == 0 ? "" : ",", p.closed_lanes[i].c_str());
  std::fprintf(out, "%s\n", p.closed_lanes.empty() ? " none" : "");
  std::fprintf(out,
               "  %-20s %" PRIu32 " pedestrians, %" PRIu32 " vehicles (closed %" PRIu64
               ", opened %" PRIu64 ", rerouted %" PRIu64 ", dead ends %" PRIu64
               ", spawns deferred %" PRIu64 ")\n",
               "waiting at closures", p.lane_waiting_pedestrians, p.lane_waiting_vehicles,
               p.lane_closures_total, p.lane_openings_total, p.lane_reroutes_total,
               p.lane_dead_ends_total, p.lane_spawns_deferred_total);
}

int run_population(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandReply r;
  if (const int rc = run_query(o, client::QueryPopulationCmd{}, r, err); rc != kExitOk) return rc;
  if (!r.population) return missing(o, "the population", err);
  const client::PopulationReport& p = *r.population;
  if (o.json) return print_object(out, "population", json::population(p), r.applied_step);
  std::fprintf(out,
               "population at step %" PRIu64 ", time of day %s (%.4f h), time scale %" PRIu32
               " game s per s\n",
               r.applied_step, clock_time(p.hour).c_str(), p.hour, p.time_scale);

  const int w = id_width(p.communities);
  int zone_w = 4;
  for (const auto& cr : p.communities) zone_w = std::max(zone_w, static_cast<int>(cr->zone.size()));
  std::fprintf(out, "%-*s  %6s  %6s  %-*s  %6s  %7s  %8s\n", w, "ID", "BASE", "TARGET", zone_w,
               "ZONE", "ACTIVE", "DORMANT", "SAVEABLE");
  for (const auto& community : p.communities) {
    const client::CommunityReport& cr = *community;
    std::fprintf(out, "%-*s  %6" PRIu32 "  %6" PRIu32 "  %-*s  %6" PRIu32 "  %7" PRIu32 "  %8s\n",
                 w, cr.id.c_str(), cr.base_population, cr.target, zone_w,
                 cr.zone.empty() ? "-" : cr.zone.c_str(), cr.active, cr.dormant,
                 cr.saveable ? "yes" : "no");
  }
  std::fprintf(out, "%zu communit%s\n", p.communities.size(),
               p.communities.size() == 1 ? "y" : "ies");

  const std::uint32_t dormant =
      p.residents >= p.residents_active ? p.residents - p.residents_active : 0u;
  std::fprintf(
      out, "  %-20s %" PRIu32 ": active %" PRIu32 " (retiring %" PRIu32 "), dormant %" PRIu32 "\n",
      "residents", p.residents, p.residents_active, p.residents_retiring, dormant);
  std::fprintf(out,
               "  %-20s background %" PRIu32 ", spawned %" PRIu32 ", target %" PRIu32
               ", handoffs pending %" PRIu32 "\n",
               "pedestrians", p.background, p.spawned, p.pedestrian_target, p.handoffs_pending);
  std::fprintf(out,
               "  %-20s growth quota %" PRIu32 ", recycle quota %" PRIu32 ", interval %" PRIu32
               " ms, migration budget %" PRIu32 "\n",
               "lifecycle", p.growth_quota, p.recycle_quota, p.interval_ms, p.migration_budget);
  std::fprintf(out, "  %-20s %" PRIu64 " requested\n", "spawn pipeline", p.spawn_requested);
  std::fprintf(
      out, "  %-20s by cap %" PRIu32 ", by capacity %" PRIu32 ", by zone %" PRIu32 " (last step)\n",
      "spawn deferred", p.spawn_deferred_by_cap, p.spawn_deferred_by_capacity,
      p.spawn_deferred_by_zone);
  std::fprintf(out,
               "  %-20s displaced %" PRIu64 " (queued requests canceled for more important ones)\n",
               "spawn pressure", p.spawn_displaced_total);
  std::fprintf(out,
               "  %-20s quality %s: attached %" PRIu32 "/%" PRIu32 ", unattached %" PRIu32
               "/%" PRIu32 ", no slot %" PRIu64 "\n",
               "representation", p.quality.empty() ? "-" : p.quality.c_str(), p.attached_in_use,
               p.attached_limit, p.unattached_in_use, p.unattached_limit, p.no_slot_total);
  std::fprintf(
      out, "  %-20s orphans %" PRIu32 ", faded total %" PRIu64 ", fade skipped total %" PRIu64 "\n",
      "retiring", p.retiring, p.faded_total, p.fade_skipped_total);
  std::fprintf(out, "  %-20s", "despawns by reason");
  for (std::size_t i = 0; i < p.despawned_by_reason.size(); ++i) {
    // A retired value (2, common.fbs) has no name and is always 0.
    if (*wire::EnumNameDespawnReason(static_cast<wire::DespawnReason>(i)) == '\0') continue;
    std::fprintf(out, "%s %s %" PRIu64, i == 0 ? "" : ",",
                 despawn_reason_name(static_cast<wire::DespawnReason>(i)).c_str(),
                 p.despawned_by_reason[i]);
  }
  std::fprintf(out, "%s\n", p.despawned_by_reason.empty() ? " none" : "");
  std::fprintf(out, "  %-20s", "tiers");
  for (std::size_t i = 0; i < p.tiers.size(); ++i) {
    const char* tier = wire::EnumNameSimTier(static_cast<wire::SimTier>(i));
    std::fprintf(out, "%s %s %" PRIu32, i == 0 ? "" : ",",
                 *tier != '\0' ? tier : std::to_string(i).c_str(), p.tiers[i]);
  }
  std::fprintf(out, "%s (promoted %" PRIu32 ", demoted %" PRIu32 ", deferred %" PRIu32 ")\n",
               p.tiers.empty() ? " none" : "", p.tier_promoted, p.tier_demoted, p.tier_deferred);
  std::fprintf(out, "  %-20s %" PRIu32 " (overflow %" PRIu32 ", refused total %" PRIu64 ")\n",
               "forced full", p.forced_full, p.forced_overflow, p.force_full_refused);
  std::fprintf(out, "  %-20s %" PRIu32 "\n", "admission masked", p.admission_masked);
  print_prevention(p, out);
  print_lane_closures(p, out);
  print_observers(p, out);
  std::fprintf(out, "  %-20s fragments %" PRIu32 ", deficit %.3f, surplus %.3f, max deficit %.3f\n",
               "ledger", p.ledger_fragments, p.ledger_deficit, p.ledger_surplus,
               p.ledger_max_deficit);

  std::fprintf(out, "%-24s  %6s  %10s\n", "SPAWN STATE", "LIVE", "TOTAL");
  const std::size_t states = std::max(p.spawn_live.size(), p.spawn_totals.size());
  for (std::size_t i = 0; i < states; ++i) {
    const char* name = wire::EnumNameSpawnState(static_cast<wire::SpawnState>(i));
    std::fprintf(out, "%-24s  %6" PRIu32 "  %10" PRIu64 "\n",
                 *name != '\0' ? name : std::to_string(i).c_str(),
                 i < p.spawn_live.size() ? p.spawn_live[i] : 0u,
                 i < p.spawn_totals.size() ? p.spawn_totals[i] : std::uint64_t{0});
  }
  std::fflush(out);
  return kExitOk;
}

int run_lifecycle(const CliOptions& o, std::FILE* out, std::FILE* err) {
  Client c(client_options(o, wire::Role::Operator));
  ClockView clock;
  if (const int rc = connect_operator(c, o, clock, err); rc != kExitOk) return rc;
  // SetLifecycle sends every field: the ones not given keep the current value.
  const auto current =
      c.command(client::QueryPopulationCmd{}, std::chrono::milliseconds(o.timeout_ms));
  if (!current.ok()) return report(err, o, "query_population", current);
  if (!current.value.accepted()) return rejected(o, current.value, err, " (reading the settings)");
  if (!current.value.population) return missing(o, "the population", err);
  const client::PopulationReport& was = *current.value.population;
  const client::SetLifecycleCmd spec{o.growth_quota.value_or(was.growth_quota),
                                     o.recycle_quota.value_or(was.recycle_quota),
                                     o.lifecycle_interval_ms.value_or(was.interval_ms),
                                     o.migration_budget.value_or(was.migration_budget)};
  std::optional<client::CommandReply> reply;
  const int rc = apply_world(c, o, clock, spec, false, reply, out, err);
  if (rc != kExitOk || !reply) return rc;
  if (o.json) {
    auto settings = [](std::uint32_t growth, std::uint32_t recycle, std::uint32_t interval,
                       std::uint32_t budget) {
      return json::Json{{"growth_quota", growth},
                        {"recycle_quota", recycle},
                        {"interval_ms", interval},
                        {"migration_budget", budget}};
    };
    json::print(out, {{"command", o.command},
                      {"accepted", true},
                      {"applied_step", reply->applied_step},
                      {"settings", settings(spec.growth_quota, spec.recycle_quota, spec.interval_ms,
                                            spec.migration_budget)},
                      {"was", settings(was.growth_quota, was.recycle_quota, was.interval_ms,
                                       was.migration_budget)}});
    return kExitOk;
  }
  print_accepted(out, o, *reply);
  auto setting = [&](const char* name, std::uint32_t now, std::uint32_t before, const char* unit) {
    std::fprintf(out, "  %-20s %" PRIu32 "%s", name, now, unit);
    if (now != before) std::fprintf(out, " (was %" PRIu32 "%s)", before, unit);
    std::fputc('\n', out);
  };
  setting("growth quota", spec.growth_quota, was.growth_quota, "");
  setting("recycle quota", spec.recycle_quota, was.recycle_quota, "");
  setting("interval", spec.interval_ms, was.interval_ms, " ms");
  setting("migration budget", spec.migration_budget, was.migration_budget, "");
  std::fflush(out);
  return kExitOk;
}

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

}  // namespace

int run(const CliOptions& options, std::FILE* out, std::FILE* err) {
  if (options.command == "status") return run_status(options, out, err);
  if (options.command == "watch") return run_watch(options, out, err);
  if (options.command == "pause" || options.command == "resume" || options.command == "step") {
    return run_operator(options, out, err);
  }
  if (is_world(options.command)) return run_world(options, world_spec(options), out, err);
  if (options.command == "garages") return run_garages(options, out, err);
  if (options.command == "signals") return run_signals(options, out, err);
  if (options.command == "zones") return run_zones(options, out, err);
  if (options.command == "vehicle") return run_vehicle(options, out, err);
  if (options.command == "population") return run_population(options, out, err);
  if (options.command == "entity") return run_entity(options, out, err);
  if (options.command == "spawn") return run_spawn(options, out, err);
  if (options.command == "cancel-spawn") return run_cancel_spawn(options, out, err);
  if (options.command == "spawn-status") return run_spawn_status(options, out, err);
  if (options.command == "lifecycle") return run_lifecycle(options, out, err);
  if (options.command == "checkpoint" || options.command == "restore" ||
      options.command == "save" || options.command == "load") {
    return run_snapshot_job(options, out, err);
  }
  if (options.command == "snapshots") return run_snapshots(options, out, err);
  if (options.command == "delete") return run_delete(options, out, err);
  if (options.command == "job") return run_job_query(options, out, err);
  std::fprintf(err, "bustle: unknown command \"%s\"\n", options.command.c_str());
  return kExitUsage;
}

int main_entry(int argc, char** argv) {
  std::vector<std::string_view> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  const ParseResult parsed = parse_args(args, std::getenv("BUSTLE_TOKEN"),
                                        std::getenv("BUSTLE_HOST"), std::getenv("BUSTLE_PORT"));
  switch (parsed.status) {
    case ParseStatus::Help:
    case ParseStatus::Version:
      std::fputs(parsed.text.c_str(), stdout);
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
