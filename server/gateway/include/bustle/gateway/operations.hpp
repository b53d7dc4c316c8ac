// The gateway's operations endpoint (bustle-gateway --metrics-bind
// ADDR:PORT; docs/operations.md), on the same HTTP server as bustle-server's:
//
//   /metrics  bustle_gateway_* in the Prometheus text format: the published
//             step and entities, clients, per district whether it streams,
//             its step and entities, and the border counters.
//   /healthz  200 while the gateway's loop turned within kLoopStallS (it
//             turns at least every 50 ms); else 503 naming the stall.
//   /readyz   200 once every district streams to the gateway and a step went
//             out; else 503 naming the first district that does not stream
//             (down, restarting, or not yet sent its baseline).
#pragma once

#include <chrono>
#include <string>

#include "bustle/gateway/gateway.hpp"
#include "bustle/net/server.hpp"
#include "bustle/ops/metrics_server.hpp"

namespace bustle::gateway {

inline constexpr double kLoopStallS = 5.0;

ops::HealthStatus check_health(const GatewayStatus& st, std::chrono::steady_clock::time_point now);
ops::HealthStatus check_ready(const GatewayStatus& st);
std::vector<ops::MetricSample> metric_samples(const GatewayStatus& st, std::uint32_t clients,
                                              std::chrono::steady_clock::time_point now,
                                              const std::string& version,
                                              const std::string& scenario_id);

// The endpoint's callbacks over a gateway and its server (both must outlive it).
ops::Endpoint operations_endpoint(const Gateway& gateway, const net::Server& server,
                                  std::string version, std::string scenario_id);

}  // namespace bustle::gateway
