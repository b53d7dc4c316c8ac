// bustle::ops without a server: the step-time histogram, the sim telemetry's
// samples, log event names and JSON escaping, metrics bind addresses.
#include <catch2/catch.hpp>
#include <limits>
#include <string>

#include "bustle/ops/logging.hpp"
#include "bustle/ops/metrics_server.hpp"
#include "bustle/ops/telemetry.hpp"

using bustle::ops::AtomicHistogram;

TEST_CASE("atomic histogram: buckets are 'less or equal', cumulative, and end at the count") {
  AtomicHistogram h({0.001, 0.01, 0.1});
  for (const double v : {0.0005, 0.001, 0.002, 0.05, 0.2, 3.0}) h.observe(v);
  const auto s = h.snapshot();
  REQUIRE(s.cumulative.size() == 4);
  CHECK(s.cumulative[0] == 2);  // 0.0005 and exactly 0.001
  CHECK(s.cumulative[1] == 3);
  CHECK(s.cumulative[2] == 4);
  CHECK(s.cumulative[3] == 6);
  CHECK(s.count == 6);
  CHECK(s.sum == Approx(3.2535));
  CHECK(AtomicHistogram::quantile(s, 0.5) == 0.01);
  CHECK(AtomicHistogram::quantile(AtomicHistogram({1.0}).snapshot(), 0.99) == 0.0);
}

TEST_CASE("sim telemetry: recent step times, late steps, samples published between steps") {
  bustle::ops::SimTelemetry t({"g0"});
  CHECK(t.recent_step_seconds().empty());
  t.on_step(std::chrono::microseconds(250), false);
  t.on_step(std::chrono::milliseconds(3), true);
  CHECK(t.steps() == 2);
  CHECK(t.late_steps() == 1);
  const auto recent = t.recent_step_seconds();
  REQUIRE(recent.size() == 2);
  CHECK(recent[0] == Approx(250e-6));
  CHECK(recent[1] == Approx(3e-3));
  CHECK_FALSE(t.last_sample().valid);
  const auto now = std::chrono::steady_clock::now();
  REQUIRE(t.sample_due(now));
  t.sample_buffer().valid = true;
  t.sample_buffer().step = 42;
  t.publish_sample(now);
  CHECK(t.last_sample().step == 42);
  CHECK_FALSE(t.sample_due(now + std::chrono::milliseconds(10)));
  t.heartbeat(now);
  CHECK(t.heartbeat_age_seconds(now + std::chrono::milliseconds(1500)) == Approx(1.5));
}

TEST_CASE("log events: a leading lower-case name and ': ' become the event") {
  std::string_view event, rest;
  bustle::ops::split_event("client_joined: client 3 joined", event, rest);
  CHECK(event == "client_joined");
  CHECK(rest == "client 3 joined");
  bustle::ops::split_event("Client: x", event, rest);
  CHECK(event.empty());
  bustle::ops::split_event("no event here", event, rest);
  CHECK(event.empty());
  CHECK(rest == "no event here");
  bustle::ops::split_event("a:b", event, rest);
  CHECK(event.empty());
}

TEST_CASE("JSON escaping of log messages") {
  std::string out;
  bustle::ops::append_json_escaped("a\"b\\c\nd\x01\x7f", out);
  CHECK(out == "a\\\"b\\\\c\\nd\\u0001\\u007f");
}

TEST_CASE("metrics bind addresses") {
  CHECK(bustle::ops::check_metrics_bind("127.0.0.1:9464").ok());
  CHECK(bustle::ops::check_metrics_bind("0.0.0.0:0").ok());
  CHECK(bustle::ops::check_metrics_bind("[::1]:9464").ok());
  CHECK(bustle::ops::check_metrics_bind("9464").code() ==
        bustle::core::StatusCode::InvalidArgument);
  CHECK(bustle::ops::check_metrics_bind(":9464").code() ==
        bustle::core::StatusCode::InvalidArgument);
  CHECK(bustle::ops::check_metrics_bind("localhost:9464").code() ==
        bustle::core::StatusCode::InvalidArgument);
  CHECK(bustle::ops::check_metrics_bind("127.0.0.1:65536").code() ==
        bustle::core::StatusCode::InvalidArgument);
  CHECK(bustle::ops::check_metrics_bind("::1:9464").code() ==
        bustle::core::StatusCode::InvalidArgument);
}
