// The gateway's operations endpoint: what /healthz, /readyz and /metrics say
// of a gateway status (the HTTP side is tested with the real process in
// tests/integration/test_gateway.py).
#include "bustle/gateway/operations.hpp"

#include <catch2/catch.hpp>

using namespace bustle;
using Clock = std::chrono::steady_clock;

namespace {

gateway::GatewayStatus two_districts(bool d1_streaming) {
  gateway::GatewayStatus st;
  st.published = true;
  st.published_step = 140;
  st.published_entities = 1200;
  st.districts = {{"d0", true, 141, 700}, {"d1", d1_streaming, 140, 500}};
  st.merger.crossings = 9;
  st.heartbeat = Clock::now();
  return st;
}

double sample(const std::vector<ops::MetricSample>& all, const std::string& name,
              const std::string& district = "") {
  for (const ops::MetricSample& s : all) {
    const bool match = district.empty() ? s.labels.empty() || name == "bustle_gateway_build_info"
                                        : !s.labels.empty() && s.labels[0].second == district;
    if (s.name == name && match) return s.value;
  }
  FAIL("no sample " << name << " " << district);
  return 0;
}

}  // namespace

TEST_CASE("the gateway is ready only while every district streams and a step went out") {
  CHECK(gateway::check_ready(two_districts(true)).ok);
  CHECK(gateway::check_ready(two_districts(true)).reason ==
        "ready: 2 districts streaming, step 140");
  const ops::HealthStatus down = gateway::check_ready(two_districts(false));
  CHECK_FALSE(down.ok);
  CHECK(down.reason == "not ready: district 'd1' is not streaming to the gateway");
  gateway::GatewayStatus fresh = two_districts(true);
  fresh.published = false;
  CHECK(gateway::check_ready(fresh).reason == "not ready: no step published yet");
}

TEST_CASE("the gateway is healthy while its loop turns") {
  const gateway::GatewayStatus st = two_districts(false);  // a district down is not a stall
  CHECK(gateway::check_health(st, st.heartbeat + std::chrono::seconds(1)).ok);
  const ops::HealthStatus stalled =
      gateway::check_health(st, st.heartbeat + std::chrono::seconds(6));
  CHECK_FALSE(stalled.ok);
  CHECK(stalled.reason == "unhealthy: gateway loop stalled for 6.0 s (limit 5.0 s)");
}

TEST_CASE("the gateway's metrics name each district") {
  const gateway::GatewayStatus st = two_districts(false);
  const auto all = gateway::metric_samples(st, 3, st.heartbeat, "0.1.0", "city");
  CHECK(sample(all, "bustle_gateway_published_step") == 140);
  CHECK(sample(all, "bustle_gateway_clients") == 3);
  CHECK(sample(all, "bustle_gateway_district_streaming", "d0") == 1);
  CHECK(sample(all, "bustle_gateway_district_streaming", "d1") == 0);
  CHECK(sample(all, "bustle_gateway_district_step", "d0") == 141);
  CHECK(sample(all, "bustle_gateway_district_entities", "d1") == 500);
  CHECK(sample(all, "bustle_gateway_border_crossings_total") == 9);
  CHECK(sample(all, "bustle_gateway_ready") == 0);
  CHECK(sample(all, "bustle_gateway_healthy") == 1);
}
