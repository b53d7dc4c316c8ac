// The gateway's operations endpoint (operations.hpp).
#include "bustle/gateway/operations.hpp"

#include <cstdio>

namespace bustle::gateway {

namespace {

double age_s(std::chrono::steady_clock::time_point then,
             std::chrono::steady_clock::time_point now) {
  return std::chrono::duration<double>(now - then).count();
}

}  // namespace

ops::HealthStatus check_health(const GatewayStatus& st, std::chrono::steady_clock::time_point now) {
  const double age = age_s(st.heartbeat, now);
  char buf[160];
  if (age > kLoopStallS) {
    std::snprintf(buf, sizeof buf, "unhealthy: gateway loop stalled for %.1f s (limit %.1f s)", age,
                  kLoopStallS);
    return {false, buf};
  }
  std::snprintf(buf, sizeof buf, "ok: gateway loop turned %.3f s ago, step %llu", age,
                static_cast<unsigned long long>(st.published_step));
  return {true, buf};
}

ops::HealthStatus check_ready(const GatewayStatus& st) {
  for (const GatewayStatus::District& d : st.districts) {
    if (!d.streaming)
      return {false, "not ready: district '" + d.id + "' is not streaming to the gateway"};
  }
  if (!st.published) return {false, "not ready: no step published yet"};
  return {true, "ready: " + std::to_string(st.districts.size()) + " districts streaming, step " +
                    std::to_string(st.published_step)};
}

std::vector<ops::MetricSample> metric_samples(const GatewayStatus& st, std::uint32_t clients,
                                              std::chrono::steady_clock::time_point now,
                                              const std::string& version,
                                              const std::string& scenario_id) {
  std::vector<ops::MetricSample> out;
  const auto gauge = [&](const char* name, const char* help, double v,
                         std::vector<std::pair<std::string, std::string>> labels = {}) {
    out.push_back({name, help, false, std::move(labels), v});
  };
  gauge("bustle_gateway_build_info", "Gateway version and scenario (value 1)", 1,
        {{"version", version}, {"scenario", scenario_id}});
  gauge("bustle_gateway_published_step", "The last step streamed to the gateway's clients",
        static_cast<double>(st.published_step));
  gauge("bustle_gateway_published_entities", "Entities in the last step streamed",
        st.published_entities);
  gauge("bustle_gateway_clients", "Clients connected to the gateway", clients);
  for (const GatewayStatus::District& d : st.districts) {
    gauge("bustle_gateway_district_streaming",
          "1 while the district streams to the gateway (baseline received)", d.streaming ? 1 : 0,
          {{"district", d.id}});
    gauge("bustle_gateway_district_step", "The step of the district's latest Delta",
          static_cast<double>(d.step), {{"district", d.id}});
    gauge("bustle_gateway_district_entities", "Entities the district streams to the gateway",
          d.entities, {{"district", d.id}});
  }
  const struct {
    const char* name;
    const char* help;
    std::uint64_t value;
  } border[] = {
      {"bustle_gateway_border_crossings_total",
       "Entities held in transit at a border, then entered by the next district",
       st.merger.crossings},
      {"bustle_gateway_transit_dropped_total",
       "Entities in transit no district entered in time (dropped from the stream)",
       st.merger.transit_dropped},
      {"bustle_gateway_duplicates_total",
       "Ids held by two districts at once (the newest anchor streamed)", st.merger.duplicates},
      {"bustle_gateway_mirror_problems_total",
       "District Deltas the gateway could not apply (it asked for a baseline)",
       st.merger.mirror_problems},
  };
  for (const auto& b : border)
    out.push_back({b.name, b.help, true, {}, static_cast<double>(b.value)});
  gauge("bustle_gateway_loop_heartbeat_age_seconds", "Seconds since the gateway's loop last turned",
        age_s(st.heartbeat, now));
  gauge("bustle_gateway_healthy", "1 when /healthz answers 200", check_health(st, now).ok ? 1 : 0);
  gauge("bustle_gateway_ready", "1 when /readyz answers 200", check_ready(st).ok ? 1 : 0);
  return out;
}

ops::Endpoint operations_endpoint(const Gateway& gateway, const net::Server& server,
                                  std::string version, std::string scenario_id) {
  ops::Endpoint e;
  e.metrics = [&gateway, &server, version = std::move(version),
               scenario_id = std::move(scenario_id)] {
    return metric_samples(gateway.status(), server.client_count(), std::chrono::steady_clock::now(),
                          version, scenario_id);
  };
  e.healthz = [&gateway] {
    return check_health(gateway.status(), std::chrono::steady_clock::now());
  };
  e.readyz = [&gateway] { return check_ready(gateway.status()); };
  return e;
}

}  // namespace bustle::gateway
