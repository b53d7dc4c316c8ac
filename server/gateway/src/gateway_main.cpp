// bustle-gateway's command line and wiring (gateway_main.hpp): one city out
// of several district servers, for clients that connect to one address
// (docs/districts.md, "The gateway").
//
//   bustle-gateway --config CITY.json --districts d0=HOST:PORT,d1=HOST:PORT
//                  [--rate HZ] [--port P] [--bind ADDR] [--token T] [--district-token T]
//                  [--metrics-bind ADDR:PORT]
//
// It holds no simulation state: it subscribes to every district server as a
// client, merges their streams into one (gateway.hpp) and serves it with the
// same protocol and limits as bustle-server. Several may run; a restarted
// one rebuilds its city from the districts' baselines.
#include "bustle/gateway/gateway_main.hpp"

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include "bustle/app/process_startup.hpp"
#include "bustle/args/addresses.hpp"
#include "bustle/args/checks.hpp"
#include "bustle/core/lane_graph.hpp"
#include "bustle/gateway/gateway.hpp"
#include "bustle/gateway/operations.hpp"
#include "bustle/net/server.hpp"
#include "bustle/ops/metrics_server.hpp"
#include "bustle/scenario/scenario_loader.hpp"

#ifndef BUSTLE_VERSION
#define BUSTLE_VERSION "unknown"
#endif

namespace bustle::gateway {
namespace {

using bustle::args::storing;

struct GatewayOptions {
  std::string config;
  std::vector<bustle::args::DistrictAddress> districts;
  bustle::net::ServerOptions server;
  std::string district_token;
  std::optional<double> rate_hz;  // the districts' --rate (their step length)
  std::string metrics_bind;       // empty: no operations endpoint
  std::string log_level = "info";
};

constexpr const char* kFooter =
    "Every district of the city's map is named exactly once in --districts; the\n"
    "gateway streams nothing until each of them streams to it. Give the district\n"
    "servers a --client-entries-per-step above what enters one per step (spawns\n"
    "and arrivals), or entities reach the gateway late. Environment variables (BUSTLE_...)\n"
    "stand in for flags. exit codes: 0 stopped by a signal, 1 cannot listen,\n"
    "2 bad settings or a district that serves another city.";

// Parses argv; returns -1 to go on, else the exit code.
int parse(int argc, char** argv, GatewayOptions& o) {
  CLI::App app{"bustle-gateway: one stream of a city served by district servers", "bustle-gateway"};
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("bustle-gateway ") + BUSTLE_VERSION);
  app.add_option("--config", o.config, "the city's scenario file (with its district map)")
      ->envname("BUSTLE_CONFIG")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--districts", "where each district server's clients connect")
      ->type_name("ID=HOST:PORT,...")
      ->envname("BUSTLE_DISTRICTS")
      ->required()
      ->check(storing([&](const std::string& v) {
        return bustle::args::parse_district_addresses(v, o.districts);
      }));
  app.add_option("--port", "TCP port for clients (0 = ephemeral; default 7777)")
      ->type_name("P")
      ->envname("BUSTLE_PORT")
      ->check(storing([&](const std::string& v) {
        return bustle::args::store_whole<std::uint16_t>(v, 0, 65535, o.server.port, "a port");
      }));
  app.add_option("--bind", o.server.bind_address, "address to listen on (default 127.0.0.1)")
      ->envname("BUSTLE_BIND");
  app.add_option("--token", o.server.token, "operator token (needed to bind beyond loopback)")
      ->envname("BUSTLE_TOKEN");
  app.add_option("--district-token", o.district_token, "token sent to the district servers")
      ->envname("BUSTLE_DISTRICT_TOKEN");
  app.add_option("--max-clients", "clients at once (default 64)")
      ->envname("BUSTLE_MAX_CLIENTS")
      ->check(storing([&](const std::string& v) {
        return bustle::args::store_whole<std::uint32_t>(v, 1, 10'000, o.server.max_clients,
                                                        "a count");
      }));
  app.add_option("--rate", "the districts' --rate: steps per second (default: the scenario's)")
      ->type_name("HZ")
      ->envname("BUSTLE_RATE")
      ->check(storing([&](const std::string& v) {
        double hz = 0;
        if (!bustle::args::parse_finite(v, hz) || hz < 1.0 || hz > 1000.0)
          return bustle::args::expected("steps per second in [1, 1000]", v);
        o.rate_hz = hz;
        return std::string();
      }));
  app.add_option("--metrics-bind",
                 "serve /metrics (Prometheus text), /healthz and /readyz on ADDR:PORT "
                 "(port 0 = ephemeral)")
      ->type_name("ADDR:PORT")
      ->envname("BUSTLE_METRICS_BIND")
      ->check(storing([&](const std::string& v) {
        if (const auto s = bustle::ops::check_metrics_bind(v); !s.ok()) return s.message();
        o.metrics_bind = v;
        return std::string();
      }));
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error or off")
      ->envname("BUSTLE_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  std::vector<std::string> args(argv + 1, argv + argc);
  if (std::string e = bustle::args::flag_given_a_value(app, args); !e.empty()) {
    std::fprintf(stderr, "bustle-gateway: %s\n", e.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return -1;
}

// The feeds in map order: every district of the map exactly once.
bool feeds_for(const bustle::core::Scenario& s, const GatewayOptions& o,
               std::vector<bustle::gateway::FeedSettings>& out) {
  if (s.districts.empty()) {
    std::fprintf(stderr, "bustle-gateway: %s: the scenario has no district map\n",
                 o.config.c_str());
    return false;
  }
  std::map<std::string, const bustle::args::DistrictAddress*> given;
  for (const auto& a : o.districts) {
    if (!given.emplace(a.district, &a).second) {
      std::fprintf(stderr, "bustle-gateway: --districts: '%s' is named twice\n",
                   a.district.c_str());
      return false;
    }
  }
  for (std::size_t d = 0; d < s.districts.size(); ++d) {
    auto it = given.find(s.districts[d].id);
    if (it == given.end()) {
      std::fprintf(stderr, "bustle-gateway: --districts: district '%s' of %s is missing\n",
                   s.districts[d].id.c_str(), o.config.c_str());
      return false;
    }
    out.push_back({d, it->first, it->second->host, it->second->port, o.district_token});
    given.erase(it);
  }
  if (!given.empty()) {
    std::fprintf(stderr, "bustle-gateway: --districts: '%s' is not a district of %s\n",
                 given.begin()->first.c_str(), o.config.c_str());
    return false;
  }
  return true;
}

}  // namespace

int gateway_main(int argc, char** argv) {
  GatewayOptions opt;
  if (const int code = parse(argc, argv, opt); code >= 0) return code;
  bustle::app::ignore_hangup();
  bustle::app::start_logging("text", opt.log_level);
  const bustle::scenario::LoadResult loaded = bustle::scenario::load_scenario_file(opt.config);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors)
      std::fprintf(stderr, "bustle-gateway: %s\n", e.to_string().c_str());
    return 2;
  }
  bustle::core::Scenario scenario = *loaded.scenario;
  // As bustle-server computes it, so that both dead-reckon alike.
  if (opt.rate_hz) scenario.step_us = static_cast<std::uint32_t>(std::lround(1e6 / *opt.rate_hz));
  std::vector<bustle::gateway::FeedSettings> feeds;
  if (!feeds_for(scenario, opt, feeds)) return 2;
  if (const auto s = bustle::net::check_bind_policy(opt.server); !s.ok()) {
    std::fprintf(stderr, "bustle-gateway: %s\n", s.message().c_str());
    return 2;
  }
  const bustle::core::LaneGraph lanes(scenario);
  bustle::net::WelcomeInfo welcome = bustle::net::make_welcome_info(
      scenario, lanes, {}, BUSTLE_VERSION, bustle::net::ClockMode::Realtime);
  bustle::gateway::CityFacts city{scenario.id, scenario.step_us, lanes.size(),
                                  welcome.archetypes.names};
  opt.server.keep_wire_commands = true;  // commands about an entity or lane are relayed
  bustle::net::CommandQueue commands(4096);
  bustle::net::Server server(opt.server, std::move(welcome), commands);
  const auto listening = server.listen();
  if (!listening.status.ok()) {
    std::fprintf(stderr, "bustle-gateway: %s\n", listening.status.message().c_str());
    return 1;
  }
  std::atomic<bool> stop{false};
  server.on_signal(bustle::app::shutdown_handler("nothing to reopen", [&] {
    stop.store(true);
    commands.close();
  }));
  std::thread net_thread([&] { server.run(); });
  std::printf("bustle-gateway listening on %s:%u\n", listening.address.c_str(), listening.port);
  std::fflush(stdout);
  spdlog::info("gateway for '{}': {} districts", scenario.id, feeds.size());
  bustle::gateway::Gateway gateway(scenario, lanes, server, commands, std::move(feeds),
                                   std::move(city));
  std::unique_ptr<bustle::ops::MetricsServer> metrics;
  if (!opt.metrics_bind.empty()) {
    auto started = bustle::ops::MetricsServer::start(
        opt.metrics_bind, operations_endpoint(gateway, server, BUSTLE_VERSION, scenario.id));
    if (!started.ok()) {
      std::fprintf(stderr, "bustle-gateway: --metrics-bind: %s\n",
                   started.status().message().c_str());
      server.stop();
      net_thread.join();
      return 1;
    }
    metrics = std::move(*started);
    const auto colon = opt.metrics_bind.rfind(':');
    std::printf("bustle-gateway metrics on %s:%u\n", opt.metrics_bind.substr(0, colon).c_str(),
                metrics->port());
    std::fflush(stdout);
  }
  const int code = gateway.run(stop);
  metrics.reset();
  server.stop();
  net_thread.join();
  return code;
}

}  // namespace bustle::gateway
