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
  std::fprintf(out, "  %-18s %" PRIu32 " (full %" PRIu32 ", simulated %" PRIu32 ", coarse %" PRIu32
               ")\n",
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

template <class T>
int id_width(const std::vector<T>& rows, int least = 2) {
  int w = least;
  for (const auto& row : rows) w = std::max(w, static_cast<int>(row.id.size()));
  return w;
}

int run_garages(const CliOptions& o, std::FILE* out, std::FILE* err) {
  client::CommandReply r;
  if (const int rc = run_query(o, client::QueryGaragesCmd{}, r, err); rc != kExitOk) return rc;
  if (!r.garages) return missing(o, "a garage list", err);
  const auto& list = *r.garages;
  const int w = id_width(list);
  std::fprintf(out, "%-*s  %6s  %10s  %11s  %-15s  %11s  %8s  %s\n", w, "ID", "QUEUED",
               "DISPATCHED", "MANAGED/CAP", "LAST GATE", "TURNAROUNDS", "CANCELED",
               "REJECTED INVALID/DUPLICATE/FULL");
  for (const auto& g : list) {
    const std::string managed = std::to_string(g.managed) + "/" + std::to_string(g.capacity);
    const std::string rejected_counts = std::to_string(g.rejected_invalid) + "/" +
                                        std::to_string(g.rejected_duplicate) + "/" +
                                        std::to_string(g.rejected_queue_full);
    std::fprintf(out, "%-*s  %6zu  %10" PRIu32 "  %11s  %-15s  %11" PRIu64 "  %8" PRIu64 "  %s\n", w,
                 g.id.c_str(), g.queued.size(), g.dispatched, managed.c_str(),
                 wire::EnumNameDispatchGate(g.last_gate), g.turnarounds, g.canceled,
                 rejected_counts.c_str());
  }
  for (const auto& g : list) {
    if (g.queued.empty()) continue;
    std::fprintf(out, "queue %s:", g.id.c_str());
    for (const auto& q : g.queued) std::fprintf(out, " %s", q.c_str());
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
  const int w = id_width(list);
  std::fprintf(out, "%-*s  %6s  %6s  %7s  %13s  %15s  %8s  %20s  %8s\n", w, "ID", "TARGET", "ACTIVE",
               "DORMANT", "PENDING SPAWN", "PENDING RECYCLE", "DEFERRED", "REJECTED BY CAPACITY",
               "CAPACITY");
  for (const auto& z : list) {
    std::fprintf(out,
                 "%-*s  %6" PRIu32 "  %6" PRIu32 "  %7" PRIu32 "  %13" PRIu32 "  %15" PRIu32
                 "  %8" PRIu32 "  %20" PRIu32 "  %8" PRIu32 "\n",
                 w, z.id.c_str(), z.target, z.active, z.dormant, z.pending_spawn,
                 z.pending_recycle, z.deferred_by_quota, z.rejected_by_capacity, z.capacity);
  }
  std::fprintf(out, "%zu zone%s at step %" PRIu64 " (deferred and rejected: last interval)\n",
               list.size(), list.size() == 1 ? "" : "s", r.applied_step);
  std::fflush(out);
  return kExitOk;
}

int run_vehicle(const CliOptions& o, std::FILE* out, std::FILE* err) {
  const client::EntityId id{o.entity_index, o.entity_generation};
  client::CommandReply r;
  if (const int rc = run_query(o, client::QueryVehicleCmd{id}, r, err); rc != kExitOk) return rc;
  if (!r.vehicle) return missing(o, "the vehicle", err);
  const client::VehicleReport& v = *r.vehicle;
  auto ident = [](client::EntityId e) {
    return std::to_string(e.index) + ":" + std::to_string(e.generation);
  };
  std::fprintf(out, "vehicle %s at step %" PRIu64 "\n", ident(v.id).c_str(), r.applied_step);
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
  std::fprintf(out, "  %-20s %s\n", "leader", v.has_leader() ? ident(v.leader).c_str() : "none");
  std::fprintf(out, "  %-20s %" PRIu64 "\n", "steps advanced", v.steps_advanced);
  std::fprintf(out, "  %-20s %s\n", "awaiting turnaround", v.awaiting_turnaround ? "yes" : "no");
  std::fprintf(out, "  %-20s %s\n", "despawn requested", v.despawn_requested ? "yes" : "no");
  std::fflush(out);
  return kExitOk;
}

// World commands: answered when the next step applies them. With a
// realtime/fast clock that is within a step; under the manual clock (or while
// paused) only after someone steps, so without --step the command is queued.
int run_world(const CliOptions& o, const client::CommandSpec& spec, std::FILE* out,
              std::FILE* err) {
  const auto timeout = std::chrono::milliseconds(o.timeout_ms);
  Client c(client_options(o, wire::Role::Operator));
  if (const int rc = connect_as(c, o, wire::Role::Operator, err); rc != kExitOk) return rc;
  // Whether a step is coming by itself: the clock mode and whether paused.
  const auto stats = c.command(client::QueryStatsCmd{}, timeout);
  if (!stats.ok()) return report(err, o, "query_stats", stats);
  const bool manual = stats.value.stats ? stats.value.stats->clock_mode == wire::ClockMode::Manual
                                        : c.welcome().clock_mode == wire::ClockMode::Manual;
  const bool paused = stats.value.stats && stats.value.stats->paused;

  const auto sent = c.send_command(spec);
  if (!sent.ok()) return report(err, o, client::command_name(spec), sent);
  if (manual && o.step_after) {
    const auto step = c.send_command(client::StepCmd{1});
    if (!step.ok()) return report(err, o, "step", step);
    const auto sr = c.wait_result(step.value, timeout);
    if (!sr.ok()) return report(err, o, "step", sr);
    if (!sr.value.accepted()) return rejected(o, sr.value, err, " (its step)");
  } else if (manual || paused) {
    // Rejections that need no step (role, full inbox) come at once; give
    // them a moment, then leave the command queued.
    const auto quick = c.wait_result(sent.value, std::min(timeout, std::chrono::milliseconds(300)));
    if (quick.status != ClientStatus::Timeout) {
      if (!quick.ok()) return report(err, o, client::command_name(spec), quick);
      if (!quick.value.accepted()) return rejected(o, quick.value, err);
      std::fprintf(out, "%s accepted at step %" PRIu64 "%s%s\n", o.command.c_str(),
                   quick.value.applied_step, quick.value.message.empty() ? "" : ": ",
                   quick.value.message.c_str());
      std::fflush(out);
      return kExitOk;
    }
    if (manual) {
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
  if (!r.ok()) return report(err, o, client::command_name(spec), r);
  if (!r.value.accepted()) return rejected(o, r.value, err);
  std::fprintf(out, "%s accepted at step %" PRIu64 "%s%s\n", o.command.c_str(),
               r.value.applied_step, r.value.message.empty() ? "" : ": ", r.value.message.c_str());
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
    return cmd;
  }
  if (o.command == "hour") return client::SetHourCmd{o.hour};
  return client::SetTimeScaleCmd{o.time_scale};
}

bool is_world(const std::string& command) {
  return command == "target" || command == "garage-request" || command == "cancel-request" ||
         command == "strategy" || command == "observers" || command == "hour" ||
         command == "time-scale";
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
  if (options.command == "pause" || options.command == "resume" || options.command == "step") {
    return run_operator(options, out, err);
  }
  if (is_world(options.command)) return run_world(options, world_spec(options), out, err);
  if (options.command == "garages") return run_garages(options, out, err);
  if (options.command == "signals") return run_signals(options, out, err);
  if (options.command == "zones") return run_zones(options, out, err);
  if (options.command == "vehicle") return run_vehicle(options, out, err);
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
