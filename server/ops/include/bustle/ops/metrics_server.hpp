// The operations endpoint (--metrics-bind ADDR:PORT): prometheus-cpp's pull
// exposer serves /metrics in the Prometheus text format; /healthz and
// /readyz are request handlers registered on the same civetweb server (the
// HTTP server the exposer runs), answering 200 or 503 with a one-line
// reason in text/plain.
//
//   /healthz  200 while the process is alive and the sim thread is within
//             `max_lag_steps` step periods (at least 1 s) of its clock: it
//             stepped, or woke idle (paused, manual clock), that recently.
//             A sim thread stuck in a step, a lock or an endless loop turns
//             it 503 ("sim thread stalled for 6.2 s ...").
//   /readyz   200 when the scenario is loaded, the game port is listening,
//             no restore or load is in flight and the server is not shutting
//             down; else 503 naming the first reason.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bustle/core/status.hpp"
#include "bustle/net/server.hpp"
#include "bustle/ops/telemetry.hpp"

namespace prometheus {
class Collectable;
}

namespace bustle::ops {

struct HealthSettings {
  std::uint32_t max_lag_steps =
      50;  // /healthz: heartbeat older than this many step periods (>= 1 s) is unhealthy
};

// What the endpoint reads. Everything must outlive the MetricsServer.
struct MetricsSources {
  const SimTelemetry* sim = nullptr;
  const JobTelemetry* jobs = nullptr;
  const net::Server* server = nullptr;
  std::function<std::uint32_t()> restores_in_flight;  // thread-safe
  const std::atomic<bool>* shutting_down = nullptr;
  std::string version;
  std::string scenario_id;
};

struct HealthStatus {
  bool ok = false;
  std::string reason;  // one line
};
HealthStatus check_health(const MetricsSources& src, const HealthSettings& settings);
HealthStatus check_ready(const MetricsSources& src);

// One sample of a program's own endpoint (Endpoint::metrics). Samples of
// one name form one family, in the order the names first appear.
struct MetricSample {
  std::string name;
  std::string help;
  bool counter = false;  // else a gauge
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0.0;
};

// The same endpoint for another program (bustle-gateway): its samples and
// probes, called on the HTTP server's threads (so they must be thread-safe).
struct Endpoint {
  std::function<std::vector<MetricSample>()> metrics;
  std::function<HealthStatus()> healthz;
  std::function<HealthStatus()> readyz;
};

class MetricsServer {
 public:
  // Starts serving on `bind` ("ADDR:PORT", port 0 = ephemeral), or says why
  // it cannot: InvalidArgument (a bad address), Unavailable (port in use).
  static core::StatusOr<std::unique_ptr<MetricsServer>> start(const std::string& bind,
                                                              MetricsSources sources,
                                                              HealthSettings health);
  // The same for another program's endpoint.
  static core::StatusOr<std::unique_ptr<MetricsServer>> start(const std::string& bind,
                                                              Endpoint endpoint);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  std::uint16_t port() const { return port_; }

  class Impl;

 private:
  MetricsServer() = default;
  // Both: /metrics from `collector`, /healthz and /readyz from `probes`.
  static core::StatusOr<std::unique_ptr<MetricsServer>> start(
      const std::string& bind, std::shared_ptr<prometheus::Collectable> collector, Endpoint probes);
  std::unique_ptr<Impl> impl_;
  std::uint16_t port_ = 0;
};

// Checks "ADDR:PORT" (IPv4, or [IPv6]:PORT): Ok, or InvalidArgument saying why not.
core::Status check_metrics_bind(const std::string& bind);

}  // namespace bustle::ops
