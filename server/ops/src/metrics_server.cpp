// The operations endpoint (metrics_server.hpp): /metrics from the latest
// SimSample and the counters, /healthz from the sim thread's heartbeat,
// /readyz from the readiness reasons, on prometheus-cpp's civetweb server.
#include "bustle/ops/metrics_server.hpp"

#include <CivetServer.h>
#include <civetweb.h>
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>

#include <algorithm>
#include <array>
#include <asio/ip/address.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <deque>
#include <iterator>
#include <map>

#include "bustle/persist/persist_worker.hpp"

namespace bustle::ops {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

// "WaitingAtSignal" / "queue_full" / "Full" -> "waiting_at_signal" / "queue_full" / "full".
std::string label(const char* text) {
  std::string out;
  for (const char* p = text; *p != '\0'; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (std::isupper(c)) {
      if (!out.empty() && out.back() != '_') out.push_back('_');
      out.push_back(static_cast<char>(std::tolower(c)));
    } else {
      out.push_back(*p == ' ' || *p == '-' ? '_' : static_cast<char>(c));
    }
  }
  return out;
}

// Families under construction. A deque, so the reference family() returns
// stays valid while further families are added.
class Families {
 public:
  MetricFamily& family(const std::string& name, const std::string& help, MetricType type) {
    out.push_back(MetricFamily{name, help, type, {}});
    return out.back();
  }
  static void add(MetricFamily& f, Labels labels, double value) {
    ClientMetric m;
    m.label = std::move(labels);
    switch (f.type) {
      case MetricType::Counter:
        m.counter.value = value;
        break;
      case MetricType::Gauge:
        m.gauge.value = value;
        break;
      default:
        m.untyped.value = value;
        break;
    }
    f.metric.push_back(std::move(m));
  }
  void scalar(const std::string& name, const std::string& help, MetricType type, double value) {
    add(family(name, help, type), {}, value);
  }
  void histogram(const std::string& name, const std::string& help,
                 const AtomicHistogram::Snapshot& s) {
    MetricFamily& f = family(name, help, MetricType::Histogram);
    ClientMetric m;
    m.histogram.sample_count = s.count;
    m.histogram.sample_sum = s.sum;
    for (std::size_t i = 0; i < s.upper_bounds.size(); ++i) {
      m.histogram.bucket.push_back({s.cumulative[i], s.upper_bounds[i]});
    }
    m.histogram.bucket.push_back({s.count, std::numeric_limits<double>::infinity()});
    f.metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> take() {
    return std::vector<MetricFamily>(std::make_move_iterator(out.begin()),
                                     std::make_move_iterator(out.end()));
  }
  std::deque<MetricFamily> out;
};

constexpr const char* kLifecycleLabels[kLifecycles] = {"requested", "active", "dormant",
                                                       "retiring"};
constexpr const char* kTierLabels[kTiersOrNone] = {"full", "simulated", "coarse", "none"};
constexpr const char* kHintLabels[kHints] = {"actor", "instanced", "marker", "none"};
constexpr const char* kEntityKindLabels[kEntityKinds] = {"pedestrian", "vehicle"};
constexpr const char* kRoleLabels[2] = {"viewer", "operator"};
constexpr const char* kFrameLabels[net::kFrameKindCount] = {"delta", "answer", "push", "error"};
constexpr const char* kClockLabels[3] = {"realtime", "fast", "manual"};

class Collector final : public prometheus::Collectable {
 public:
  Collector(const MetricsSources& src, const HealthSettings& health) : src_(src), health_(health) {}

  std::vector<MetricFamily> Collect() const override {
    Families f;
    const auto C = MetricType::Counter;
    const auto G = MetricType::Gauge;
    {
      MetricFamily& info =
          f.family("bustle_build_info", "Server version and scenario (value 1)", G);
      Families::add(info, {{"version", src_.version}, {"scenario", src_.scenario_id}}, 1);
    }
    const SimTelemetry& sim = *src_.sim;
    f.histogram("bustle_step_duration_seconds",
                "Wall time of one executed step (world step, frame build, publish)",
                sim.step_seconds());
    {
      std::vector<double> recent = sim.recent_step_seconds();
      std::sort(recent.begin(), recent.end());
      MetricFamily& m = f.family(
          "bustle_step_duration_recent_seconds",
          "Exact step wall time over the last 8192 steps (quantiles of the recorded times)",
          MetricType::Summary);
      ClientMetric c;
      c.summary.sample_count = recent.size();
      for (const double v : recent) c.summary.sample_sum += v;
      for (const double q : {0.5, 0.9, 0.99, 1.0}) {
        // Nearest rank: the smallest recorded time with at least q of them at or below it.
        const auto rank =
            static_cast<std::size_t>(std::ceil(q * static_cast<double>(recent.size())));
        c.summary.quantile.push_back(
            {q, recent.empty() ? 0.0 : recent[std::max<std::size_t>(rank, 1) - 1]});
      }
      m.metric.push_back(std::move(c));
    }
    f.scalar("bustle_steps_total", "Steps executed by this process", C,
             static_cast<double>(sim.steps()));
    f.scalar("bustle_steps_late_total",
             "Steps run as catch-up after the realtime clock fell behind", C,
             static_cast<double>(sim.late_steps()));
    f.scalar("bustle_steps_dropped_total", "Steps of wall-clock debt dropped by the realtime clock",
             C, static_cast<double>(sim.dropped_steps()));
    const auto now = std::chrono::steady_clock::now();
    f.scalar("bustle_sim_heartbeat_age_seconds",
             "Seconds since the sim thread last stepped or woke idle", G,
             sim.heartbeat_age_seconds(now));
    f.scalar("bustle_healthy", "1 when /healthz answers 200", G,
             check_health(src_, health_).ok ? 1 : 0);
    f.scalar("bustle_ready", "1 when /readyz answers 200", G, check_ready(src_).ok ? 1 : 0);

    const SimSample s = sim.last_sample();
    if (s.valid) collect_sample(f, s, sim.garage_ids());
    if (s.valid) collect_spawn_pressure(f, s);
    collect_net(f);
    collect_jobs(f);
    return f.take();
  }

 private:
  // Spawn pressure (issue 12): displaced requests and the attached /
  // unattached slots of spawned handles.
  static void collect_spawn_pressure(Families& f, const SimSample& s) {
    f.scalar("bustle_spawn_displaced_total",
             "Queued spawns displaced by more important requests (this world)", MetricType::Counter,
             static_cast<double>(s.spawn_displaced_total));
    MetricFamily& slots =
        f.family("bustle_representation_slots",
                 "Attached / unattached slots of spawned handles, in use and limit (--quality)",
                 MetricType::Gauge);
    Families::add(slots, {{"budget", "attached"}, {"of", "in_use"}}, s.attached_in_use);
    Families::add(slots, {{"budget", "attached"}, {"of", "limit"}}, s.attached_limit);
    Families::add(slots, {{"budget", "unattached"}, {"of", "in_use"}}, s.unattached_in_use);
    Families::add(slots, {{"budget", "unattached"}, {"of", "limit"}}, s.unattached_limit);
  }

  static void collect_sample(Families& f, const SimSample& s,
                             const std::vector<std::string>& garage_ids) {
    const auto C = MetricType::Counter;
    const auto G = MetricType::Gauge;
    f.scalar("bustle_sim_step", "Current world step (sampled once a second)", G,
             static_cast<double>(s.step));
    f.scalar("bustle_sim_time_seconds", "Simulated time of the current world", G,
             s.sim_time_seconds);
    f.scalar("bustle_step_period_seconds", "Fixed step length", G, s.step_us / 1e6);
    f.scalar("bustle_world_epoch", "Worlds replaced by restore or load since start", G,
             static_cast<double>(s.world_epoch));
    f.scalar("bustle_paused", "1 while the clock is paused", G, s.paused ? 1 : 0);
    {
      MetricFamily& m = f.family("bustle_clock_mode", "Clock mode (1 for the active one)", G);
      for (std::size_t i = 0; i < 3; ++i)
        Families::add(m, {{"mode", kClockLabels[i]}}, s.clock_mode == i ? 1 : 0);
    }
    {
      MetricFamily& m = f.family(
          "bustle_entities",
          "Entities by kind, lifecycle, simulation tier and the server's representation hint "
          "(derived from the tier; per-client budgets are not applied)",
          G);
      for (std::size_t k = 0; k < kEntityKinds; ++k)
        for (std::size_t l = 0; l < kLifecycles; ++l)
          for (std::size_t t = 0; t < kTiersOrNone; ++t)
            for (std::size_t h = 0; h < kHints; ++h) {
              const std::uint32_t n =
                  s.entities[((k * kLifecycles + l) * kTiersOrNone + t) * kHints + h];
              if (n == 0) continue;  // only combinations that exist
              Families::add(m,
                            {{"kind", kEntityKindLabels[k]},
                             {"lifecycle", kLifecycleLabels[l]},
                             {"tier", kTierLabels[t]},
                             {"hint", kHintLabels[h]}},
                            n);
            }
    }
    f.scalar("bustle_entity_capacity", "Entity registry capacity", G, s.entity_capacity);
    {
      MetricFamily& live = f.family("bustle_spawn_handles", "Live spawn handles by state", G);
      MetricFamily& entered = f.family("bustle_spawn_transitions_total",
                                       "Spawn handles that entered each state (this world)", C);
      for (std::size_t i = 0; i < core::kSpawnStateCount; ++i) {
        const std::string st = label(core::to_string(static_cast<core::SpawnState>(i)));
        Families::add(live, {{"state", st}}, s.spawn_live[i]);
        Families::add(entered, {{"state", st}}, static_cast<double>(s.spawn_entered[i]));
      }
      f.scalar("bustle_spawn_requests_total", "Spawn requests (this world)", C,
               static_cast<double>(s.spawn_requested));
      MetricFamily& deferred = f.family("bustle_spawn_deferred",
                                        "Queued spawns held back in the last step, by cause", G);
      Families::add(deferred, {{"cause", "per_step_cap"}}, s.spawn_deferred_by_cap);
      Families::add(deferred, {{"cause", "registry_capacity"}}, s.spawn_deferred_by_capacity);
      Families::add(deferred, {{"cause", "zone_capacity"}}, s.spawn_deferred_by_zone);
    }
    {
      MetricFamily& m = f.family("bustle_despawns_total", "Despawns by reason (this world)", C);
      for (std::size_t i = 0; i < core::kDespawnReasonCount; ++i) {
        if (!core::is_despawn_reason(i)) continue;  // retired value (despawn_reason.hpp)
        Families::add(m, {{"reason", label(core::to_string(static_cast<core::DespawnReason>(i)))}},
                      static_cast<double>(s.despawned[i]));
      }
      f.scalar("bustle_spawned_total", "Pedestrians and vehicles spawned (this world)", C,
               static_cast<double>(s.spawned_total));
    }
    {
      f.scalar("bustle_zones", "Zones in the scenario", G, s.zones);
      MetricFamily& members =
          f.family("bustle_zone_members", "Zone members by state, over all zones", G);
      Families::add(members, {{"state", "active"}}, s.zone_members_active);
      Families::add(members, {{"state", "dormant"}}, s.zone_members_dormant);
      MetricFamily& held =
          f.family("bustle_zone_lifecycle_held",
                   "Zone lifecycle work held back in the last interval, by cause (all zones)", G);
      Families::add(held, {{"cause", "deferred_by_quota"}}, s.zone_deferred_by_quota);
      Families::add(held, {{"cause", "deferred_by_migration"}}, s.zone_deferred_by_migration);
      Families::add(held, {{"cause", "rejected_by_capacity"}}, s.zone_rejected_by_capacity);
      f.scalar("bustle_zone_handoffs_pending", "Active members on their way between zones", G,
               s.zone_handoffs_pending);
    }
    {
      MetricFamily& queued =
          f.family("bustle_garage_queued", "Vehicle requests queued per garage", G);
      MetricFamily& out =
          f.family("bustle_garage_dispatched", "Vehicles out of each garage now", G);
      MetricFamily& cap = f.family("bustle_garage_capacity", "Garage capacity", G);
      MetricFamily& gates = f.family("bustle_garage_gate_steps_total",
                                     "Steps that ended at each dispatch gate, per garage", C);
      MetricFamily& rejected = f.family("bustle_garage_requests_rejected_total",
                                        "Vehicle requests rejected per garage and reason", C);
      MetricFamily& canceled =
          f.family("bustle_garage_requests_canceled_total", "Vehicle requests canceled", C);
      MetricFamily& turn = f.family("bustle_garage_turnarounds_total", "Turnarounds per garage", C);
      for (std::size_t g = 0; g < s.garages.size(); ++g) {
        const GarageSample& gs = s.garages[g];
        const std::string id = g < garage_ids.size() ? garage_ids[g] : std::to_string(g);
        Families::add(queued, {{"garage", id}}, gs.queued);
        Families::add(out, {{"garage", id}}, gs.dispatched);
        Families::add(cap, {{"garage", id}}, gs.capacity);
        for (std::size_t k = 0; k < core::kDispatchGateCount; ++k) {
          Families::add(gates,
                        {{"garage", id},
                         {"gate", label(core::to_string(static_cast<core::DispatchGate>(k)))}},
                        static_cast<double>(gs.gate_steps[k]));
        }
        Families::add(rejected, {{"garage", id}, {"reason", "invalid"}},
                      static_cast<double>(gs.rejected_invalid));
        Families::add(rejected, {{"garage", id}, {"reason", "duplicate"}},
                      static_cast<double>(gs.rejected_duplicate));
        Families::add(rejected, {{"garage", id}, {"reason", "queue_full"}},
                      static_cast<double>(gs.rejected_queue_full));
        Families::add(canceled, {{"garage", id}}, static_cast<double>(gs.canceled));
        Families::add(turn, {{"garage", id}}, static_cast<double>(gs.turnarounds));
      }
    }
    {
      MetricFamily& m =
          f.family("bustle_vehicle_policies", "Vehicles per control policy after the last step", G);
      for (std::size_t i = 0; i < core::kControlPolicyCount; ++i) {
        Families::add(m, {{"policy", label(core::to_string(static_cast<core::ControlPolicy>(i)))}},
                      s.vehicle_policies[i]);
      }
      f.scalar("bustle_tier_transitions_deferred",
               "Tier transitions held back by the budget in the last step", G,
               s.tier_transitions_deferred);
    }
    collect_outputs(f, s);
  }

  // What the sim thread hands on: frames, autosaves, the recording.
  static void collect_outputs(Families& f, const SimSample& s) {
    const auto C = MetricType::Counter;
    const auto G = MetricType::Gauge;
    f.scalar("bustle_frame_entities",
             "Entities posed in the last published frame (0 while no client is subscribed)", G,
             s.frame_entities);
    f.scalar("bustle_frame_coverage_discs",
             "Interest discs the last frame was posed for (0: the whole city)", G,
             s.frame_coverage_discs);
    f.scalar("bustle_autosaves_skipped_total",
             "Autosaves skipped because the previous one was still committing", C,
             static_cast<double>(s.autosaves_skipped));
    {
      MetricFamily& m =
          f.family("bustle_recording_state", "Session recording state (1 for the current one)", G);
      Families::add(m, {{"state", "off"}}, s.recording == 0 ? 1 : 0);
      Families::add(m, {{"state", "recording"}}, s.recording == 1 ? 1 : 0);
      Families::add(m, {{"state", "failed"}}, s.recording == 2 ? 1 : 0);
      f.scalar("bustle_recorded_ticks_total", "Ticks written to the recording", C,
               static_cast<double>(s.recorded_ticks));
    }
  }

  void collect_net(Families& f) const {
    const auto C = MetricType::Counter;
    const auto G = MetricType::Gauge;
    const net::NetCounters& n = src_.server->counters();
    // Disconnects are read before the joined gauge: the network thread leaves
    // the gauge first and counts the disconnect after, so reading in the
    // opposite order, one scrape never shows a disconnect for a client it
    // still counts as joined.
    std::array<std::uint64_t, net::kDisconnectReasonCount> disconnects{};
    for (std::size_t r = 0; r < net::kDisconnectReasonCount; ++r)
      disconnects[r] = n.disconnects[r].load();
    {
      MetricFamily& m = f.family("bustle_clients", "Joined clients by role", G);
      for (std::size_t r = 0; r < 2; ++r)
        Families::add(m, {{"role", kRoleLabels[r]}}, n.joined_by_role[r].load());
    }
    f.scalar("bustle_connections_accepted_total", "TCP connections accepted (joined or refused)", C,
             static_cast<double>(n.connections_accepted.load()));
    f.scalar("bustle_sent_bytes_total", "Bytes written to client sockets", C,
             static_cast<double>(n.bytes_sent.load()));
    {
      MetricFamily& m =
          f.family("bustle_frames_sent_total", "Frames written to client sockets, by type", C);
      for (std::size_t k = 0; k < net::kFrameKindCount; ++k) {
        Families::add(m, {{"type", kFrameLabels[k]}}, static_cast<double>(n.frames_sent[k].load()));
      }
    }
    f.scalar("bustle_deltas_coalesced_total",
             "Deltas skipped for clients over their backlog cap (sent later as one)", C,
             static_cast<double>(n.deltas_coalesced.load()));
    {
      MetricFamily& m = f.family("bustle_disconnects_total", "Connections closed, by reason", C);
      for (std::size_t r = 0; r < net::kDisconnectReasonCount; ++r) {
        Families::add(m, {{"reason", net::disconnect_reason_name(r)}},
                      static_cast<double>(disconnects[r]));
      }
    }
    {
      f.scalar("bustle_commands_accepted_total", "Command answers sent with status Accepted", C,
               static_cast<double>(n.commands_accepted.load()));
      MetricFamily& m = f.family("bustle_commands_rejected_total",
                                 "Command answers sent with status Rejected, by reason", C);
      for (std::size_t r = 1; r <= static_cast<std::size_t>(core::RejectReason::RateLimited); ++r) {
        Families::add(m, {{"reason", label(core::to_string(static_cast<core::RejectReason>(r)))}},
                      static_cast<double>(n.commands_rejected[r].load()));
      }
    }
  }

  void collect_jobs(Families& f) const {
    const JobTelemetry& j = *src_.jobs;
    MetricFamily& m =
        f.family("bustle_snapshot_jobs_total", "Snapshot jobs that entered each state, by kind",
                 MetricType::Counter);
    for (std::size_t k = 0; k < kJobKinds; ++k) {
      for (std::size_t s = 0; s < kJobStates; ++s) {
        const std::uint64_t v = j.transitions(k, s);
        if (v == 0) continue;
        Families::add(m,
                      {{"kind", persist::to_string(static_cast<persist::JobKind>(k))},
                       {"state", persist::to_string(static_cast<persist::JobState>(s))}},
                      static_cast<double>(v));
      }
    }
    f.histogram("bustle_snapshot_commit_duration_seconds",
                "Checkpoint, save and autosave jobs: submission (state copied) to committed",
                j.commit_seconds());
    f.histogram("bustle_snapshot_restore_duration_seconds",
                "Restore and load jobs: submission to applied in the sim thread",
                j.restore_seconds());
    f.scalar("bustle_restores_in_flight", "Restore and load jobs submitted and not finished",
             MetricType::Gauge, src_.restores_in_flight ? src_.restores_in_flight() : 0);
  }

  MetricsSources src_;
  HealthSettings health_;
};

// Another program's samples (Endpoint::metrics), one family per name.
class SampleCollector final : public prometheus::Collectable {
 public:
  explicit SampleCollector(std::function<std::vector<MetricSample>()> samples)
      : samples_(std::move(samples)) {}

  std::vector<MetricFamily> Collect() const override {
    Families f;
    std::map<std::string, MetricFamily*> by_name;
    for (MetricSample& s : samples_()) {
      MetricFamily*& fam = by_name[s.name];
      if (fam == nullptr)
        fam = &f.family(s.name, s.help, s.counter ? MetricType::Counter : MetricType::Gauge);
      Labels labels;
      for (auto& [k, v] : s.labels) labels.push_back({std::move(k), std::move(v)});
      Families::add(*fam, std::move(labels), s.value);
    }
    return f.take();
  }

 private:
  std::function<std::vector<MetricSample>()> samples_;
};

// civetweb request handler for /healthz and /readyz.
struct Probe {
  std::function<HealthStatus()> check;
};

int probe_handler(mg_connection* conn, void* cbdata) {
  const HealthStatus st = static_cast<Probe*>(cbdata)->check();
  const std::string body = st.reason + "\n";
  if (st.ok) {
    mg_send_http_ok(conn, "text/plain; charset=utf-8", static_cast<long long>(body.size()));
    mg_write(conn, body.data(), body.size());
    return 200;
  }
  mg_send_http_error(conn, 503, "%s", body.c_str());
  return 503;
}

// The civetweb context of the exposer being constructed on this thread (its
// init_context callback runs inside the constructor).
thread_local mg_context* g_starting_context = nullptr;

}  // namespace

class MetricsServer::Impl {
 public:
  std::shared_ptr<prometheus::Collectable> collector;
  Probe healthz;
  Probe readyz;
  std::unique_ptr<prometheus::Exposer> exposer;
  mg_context* context = nullptr;
};

HealthStatus check_health(const MetricsSources& src, const HealthSettings& settings) {
  const SimSample s = src.sim->last_sample();
  const double period = (s.valid && s.step_us > 0 ? s.step_us : 100'000) / 1e6;
  const double limit = std::max(1.0, settings.max_lag_steps * period);
  const double age = src.sim->heartbeat_age_seconds(std::chrono::steady_clock::now());
  char buf[160];
  if (age > limit) {
    std::snprintf(buf, sizeof buf,
                  "unhealthy: sim thread stalled for %.1f s (limit %.1f s = %u steps)", age, limit,
                  settings.max_lag_steps);
    return {false, buf};
  }
  std::snprintf(buf, sizeof buf, "ok: sim thread heartbeat %.3f s ago, step %llu", age,
                static_cast<unsigned long long>(s.step));
  return {true, buf};
}

HealthStatus check_ready(const MetricsSources& src) {
  if (src.shutting_down != nullptr && src.shutting_down->load())
    return {false, "not ready: shutting down"};
  if (!src.server->counters().listening.load())
    return {false, "not ready: game port not listening"};
  if (src.restores_in_flight && src.restores_in_flight() > 0) {
    return {false, "not ready: restore or load in flight (" +
                       std::to_string(src.restores_in_flight()) + ")"};
  }
  return {true, "ready: scenario '" + src.scenario_id + "' loaded, listening"};
}

core::Status check_metrics_bind(const std::string& bind) {
  const auto colon = bind.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return core::Status::invalid_argument("expected ADDR:PORT (e.g. 127.0.0.1:9464), got '" + bind +
                                          "'");
  std::string host = bind.substr(0, colon);
  const std::string port = bind.substr(colon + 1);
  unsigned value = 0;
  const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || p != port.data() + port.size() || port.empty() || value > 65535) {
    return core::Status::invalid_argument("expected a port in [0, 65535] after ':', got '" + bind +
                                          "'");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  asio::error_code aec;
  const auto addr = asio::ip::make_address(host, aec);
  if (aec)
    return core::Status::invalid_argument("invalid address '" + host + "' in '" + bind + "'");
  if (addr.is_v6() && bind.front() != '[')
    return core::Status::invalid_argument("write an IPv6 address in brackets: [" + host +
                                          "]:" + port);
  return {};
}

core::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& bind,
                                                                    MetricsSources sources,
                                                                    HealthSettings health) {
  return start(bind, std::make_shared<Collector>(sources, health),
               {nullptr, [sources, health] { return check_health(sources, health); },
                [sources] { return check_ready(sources); }});
}

core::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& bind,
                                                                    Endpoint endpoint) {
  auto collector = std::make_shared<SampleCollector>(std::move(endpoint.metrics));
  return start(bind, std::move(collector), std::move(endpoint));
}

core::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::start(
    const std::string& bind, std::shared_ptr<prometheus::Collectable> collector, Endpoint probes) {
  if (core::Status s = check_metrics_bind(bind); !s.ok()) return s;
  std::unique_ptr<MetricsServer> out(new MetricsServer());
  out->impl_ = std::make_unique<Impl>();
  Impl& impl = *out->impl_;
  impl.collector = std::move(collector);
  impl.healthz.check = std::move(probes.healthz);
  impl.readyz.check = std::move(probes.readyz);

  CivetCallbacks callbacks;
  callbacks.init_context = [](const mg_context* ctx) {
    g_starting_context = const_cast<mg_context*>(ctx);
  };
  g_starting_context = nullptr;
  try {
    impl.exposer = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", bind, "num_threads", "2", "request_timeout_ms",
                                 "5000"},
        &callbacks);
  } catch (const std::exception& e) {
    return core::Status::unavailable("cannot serve metrics on " + bind + ": " + e.what());
  }
  impl.context = g_starting_context;
  g_starting_context = nullptr;
  if (impl.context == nullptr) {
    return core::Status::unavailable("cannot serve metrics on " + bind +
                                     ": the HTTP server did not start");
  }
  impl.exposer->RegisterCollectable(impl.collector);
  mg_set_request_handler(impl.context, "/healthz", probe_handler, &impl.healthz);
  mg_set_request_handler(impl.context, "/readyz", probe_handler, &impl.readyz);
  const std::vector<int> ports = impl.exposer->GetListeningPorts();
  out->port_ = ports.empty() ? 0 : static_cast<std::uint16_t>(ports.front());
  return out;
}

MetricsServer::~MetricsServer() {
  if (impl_ && impl_->context != nullptr) {
    // Unregister before the probes go away (the exposer stops the server).
    mg_set_request_handler(impl_->context, "/healthz", nullptr, nullptr);
    mg_set_request_handler(impl_->context, "/readyz", nullptr, nullptr);
  }
}

}  // namespace bustle::ops
