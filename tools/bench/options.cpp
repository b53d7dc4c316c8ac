// bustle-bench's command line (options.hpp): CLI11 subcommands, one per
// bench, each with only the flags its bench reads.
#include "options.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string>

#include "bustle/args/checks.hpp"
#include "fanout_city.hpp"

#ifndef BUSTLE_VERSION
#define BUSTLE_VERSION "unknown"
#endif

namespace bustle::bench {
namespace {

// An integer flag in [lo, hi]; the message names the range and echoes the
// value as given ("expected an integer in [2, 1000], got 'x'"), and CLI11
// prefixes the flag name.
template <class T>
CLI::Validator in_range(T lo, T hi) {
  std::ostringstream name;
  name << "in [" << lo << ", " << hi << "]";
  return CLI::Validator(
      [lo, hi](std::string& input) -> std::string {
        T value{};
        const bool digits =
            !input.empty() && input.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || !CLI::detail::lexical_cast(input, value) || value < lo || value > hi) {
          std::ostringstream out;
          out << "expected an integer in [" << lo << ", " << hi << "], got '" << input << "'";
          return out.str();
        }
        return {};
      },
      name.str());
}

// An integer flag bound to `field`, checked by in_range, default shown in --help.
template <class T>
void add_int(CLI::App& sub, const char* name, T& field, const char* what, T lo, T hi) {
  sub.add_option(name, field, what)->check(in_range<T>(lo, hi))->capture_default_str();
}

// The same without a default in --help (its 0 means "the server's own").
template <class T>
void add_int_no_default(CLI::App& sub, const char* name, T& field, const char* what, T lo, T hi) {
  sub.add_option(name, field, what)->check(in_range<T>(lo, hi));
}

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kStepsMax = 100'000'000;
constexpr std::uint32_t kAgentsMax = 4'000'000;

// --city-scale: "two-blocks" (0) or a pedestrian count with an optional k or
// m suffix ("1m" = 1 000 000, "50k"), in [1000, kAgentsMax].
bool parse_city_scale(const std::string& input, std::uint32_t& out) {
  if (input == "two-blocks") {
    out = 0;
    return true;
  }
  std::string digits = input;
  std::uint64_t scale = 1;
  if (!digits.empty() && (digits.back() == 'k' || digits.back() == 'm')) {
    scale = digits.back() == 'k' ? 1000 : 1'000'000;
    digits.pop_back();
  }
  if (digits.empty() || digits.size() > 7 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return false;
  const std::uint64_t n = std::stoull(digits) * scale;
  if (n < 1000 || n > kAgentsMax) return false;
  out = static_cast<std::uint32_t>(n);
  return true;
}

// --city-scale into `pedestrians` (parse_city_scale); "two-blocks" (0) only
// with `two_blocks`.
void add_city_scale(CLI::App& sub, std::uint32_t& pedestrians, bool two_blocks,
                    const char* description) {
  const std::string expected = std::string("expected ") + (two_blocks ? "two-blocks or " : "") +
                               "a pedestrian count in [1000, 4000000] such as 1m or 50k, got '";
  sub.add_option_function<std::string>(
         "--city-scale", [&pedestrians](const std::string& v) { parse_city_scale(v, pedestrians); },
         description)
      ->check(CLI::Validator(
          [two_blocks, expected](std::string& input) -> std::string {
            std::uint32_t n = 0;
            const bool ok = parse_city_scale(input, n) && (two_blocks || n > 0);
            return ok ? std::string() : expected + input + "'";
          },
          two_blocks ? "two-blocks|N[k|m]" : "N[k|m]"));
}

// A subcommand keeps unknown arguments (allow_extras) so parse_args can name
// them in the order given.
CLI::App* bench_subcommand(CLI::App& app, const char* name, const char* description) {
  CLI::App* sub = app.add_subcommand(name, description);
  sub->allow_extras();
  return sub;
}

void add_seed(CLI::App& sub, Args& a) {
  add_int<std::uint64_t>(sub, "--seed", a.seed, "world seed", 0, kU64Max);
}

void add_threads(CLI::App& sub, Args& a) {
  add_int<std::uint32_t>(sub, "--threads", a.threads,
                         "threads for the step's parallel parts (movement, tier distances, the "
                         "vehicle kernel); the "
                         "digest is the same for every count",
                         1, 64);
}

void add_steps(CLI::App& sub, Args& a, const char* what) {
  sub.add_option("--steps", a.steps, what)
      ->check(in_range<std::uint64_t>(1, kStepsMax))
      ->capture_default_str();
}

void add_json(CLI::App& sub, Args& a) {
  sub.add_flag("--json", a.json,
               "also print one JSON line with the figures (for tools/bench/run-all.sh)");
}

void add_step(CLI::App& app, Args& a) {
  CLI::App* sub = bench_subcommand(
      app, "step",
      "time World::step on the default city's geometry with N pedestrians: p50/p99/max, agent "
      "updates per second, peak RSS");
  add_int<std::uint32_t>(*sub, "--agents", a.agents, "pedestrians", 1, kAgentsMax);
  add_steps(*sub, a, "timed steps");
  add_threads(*sub, a);
  add_seed(*sub, a);
  add_json(*sub, a);
}

void add_population(CLI::App& app, Args& a) {
  CLI::App* sub = bench_subcommand(
      app, "population",
      "time World::step with N active pedestrians held by the tier caps and M dormant "
      "resident identities (issue 3: p99 <= 5 ms)");
  add_int<std::uint32_t>(*sub, "--active", a.active, "active background pedestrians", 10,
                         kAgentsMax);
  add_int<std::uint32_t>(*sub, "--residents", a.residents,
                         "of the active, how many are awake community residents", 0, kAgentsMax);
  add_int<std::uint32_t>(*sub, "--dormant", a.dormant, "dormant resident identities", 0, 8'000'000);
  add_steps(*sub, a, "timed steps");
  add_int<std::uint64_t>(*sub, "--warmup", a.warmup,
                         "untimed steps at least (more until the tiers settle)", 0, kStepsMax);
  add_threads(*sub, a);
  add_seed(*sub, a);
  add_json(*sub, a);
}

void add_snapshot(CLI::App& app, Args& a) {
  CLI::App* sub = bench_subcommand(
      app, "snapshot",
      "time a checkpoint: the sim-thread copy, the writer-thread commit and a restore, over "
      "--repeat checkpoints (p50/p99/max against issue 13's targets at 100000 and issue 17's "
      "stall target at 1000000)");
  add_int<std::uint32_t>(*sub, "--agents", a.agents, "pedestrians", 1, kAgentsMax);
  add_int<std::uint32_t>(*sub, "--repeat", a.repeat,
                         "checkpoints taken (with 51 or fewer, p99 is the max)", 1, 100'000);
  add_int<std::uint32_t>(*sub, "--steps-between", a.steps_between,
                         "steps between checkpoints (a server's --autosave-steps; more steps "
                         "leave more rows written since the recycled buffer's last capture)",
                         1, 100'000);
  sub->add_option("--dir", a.dir, "directory for the snapshot file")
      ->check(CLI::ExistingDirectory)
      ->capture_default_str();
  add_int<std::uint32_t>(*sub, "--threads", a.threads,
                         "threads for the capture's column copies; the checkpoint is the same "
                         "bytes for every count",
                         1, 64);
  add_seed(*sub, a);
  add_json(*sub, a);
}

void add_vehicles(CLI::App& app, Args& a) {
  CLI::App* sub = bench_subcommand(
      app, "vehicles",
      "time World::step on a signalised N x N grid with V vehicles, all Full (issue 4; "
      "tools/bench/compare_sumo.sh runs SUMO on the same grid)");
  add_int<std::uint32_t>(*sub, "--grid", a.grid, "intersections per side", 2, 1000);
  add_int<std::uint32_t>(*sub, "--vehicles", a.vehicles, "managed vehicles to reach before timing",
                         1, kAgentsMax);
  add_steps(*sub, a, "timed steps");
  add_threads(*sub, a);
  add_seed(*sub, a);
  add_json(*sub, a);
}

void add_districts(CLI::App& app, Args& a) {
  CLI::App* sub = bench_subcommand(
      app, "districts",
      "step the district city (issue 34: the vehicle grid with sidewalks, cut into strips of node "
      "columns) on one process and count border crossings; fails when the map is refused or "
      "pedestrians or vehicles never cross");
  add_int<std::uint32_t>(*sub, "--grid", a.grid, "nodes per side", 2, 1000);
  add_int<std::uint32_t>(*sub, "--districts", a.districts,
                         "strips of node columns (at most --grid)", 1, 64);
  add_int<std::uint32_t>(*sub, "--agents", a.agents, "pedestrians", 0, kAgentsMax);
  add_int<std::uint32_t>(*sub, "--vehicles", a.vehicles, "vehicles", 0, kAgentsMax);
  add_steps(*sub, a, "steps followed");
  add_seed(*sub, a);
  sub->add_option("--write-scenario", a.write_scenario,
                  "write the district city as a scenario file to PATH (for bustle-server "
                  "--config) and exit without stepping it")
      ->type_name("PATH");
}

void add_stream(CLI::App& app, Args& a) {
  CLI::App* sub = bench_subcommand(
      app, "stream",
      "protocol v2 bytes per moving entity per step for one whole-city client: the default city, "
      "N pedestrians on its geometry, and the vehicle grid");
  add_int<std::uint32_t>(*sub, "--agents", a.agents, "pedestrians of the second city", 1,
                         kAgentsMax);
  add_int<std::uint32_t>(*sub, "--grid", a.grid, "intersections per side of the vehicle grid", 2,
                         1000);
  add_int<std::uint32_t>(*sub, "--vehicles", a.vehicles, "vehicles of the grid", 1, kAgentsMax);
  add_steps(*sub, a, "steps measured per city");
  add_seed(*sub, a);
  add_json(*sub, a);
}

void add_frame(CLI::App& app, Args& a) {
  CLI::App* sub = bench_subcommand(
      app, "frame",
      "the live server's streaming work per step without sockets: the published frame for K "
      "district clients, its spatial index and each client's Delta, on the district city of "
      "fanout --city-scale");
  add_city_scale(*sub, a.frame_pedestrians, false,
                 "pedestrians of the district city, such as 1m or 50k (default 1m)");
  add_int<std::uint32_t>(*sub, "--clients", a.frame_clients,
                         "district clients (up to 8 apart, 9 to 64 overlapping)", 1, kMaxDistricts);
  add_int_no_default<std::uint32_t>(*sub, "--share", a.frame_share,
                                    "pedestrians per client district (default N / 50)", 1,
                                    kAgentsMax);
  add_int<std::uint64_t>(*sub, "--steps", a.frame_steps, "timed steps", 1, kStepsMax);
  add_int<std::uint32_t>(*sub, "--threads", a.frame_threads,
                         "threads for the step's and the frame build's parallel parts (the "
                         "server's --sim-threads)",
                         1, 64);
  add_seed(*sub, a);
  add_json(*sub, a);
}

void add_fanout(CLI::App& app, Args& a) {
  FanoutOptions& f = a.fanout;
  CLI::App* sub = bench_subcommand(
      app, "fanout",
      "N real clients over loopback against a real bustle-server, runs with and without stalled "
      "clients interleaved");
  add_int<std::uint32_t>(*sub, "--clients", f.clients, "connections per run", 1, 1000);
  add_int<std::uint32_t>(*sub, "--stalled-percent", f.stalled_percent,
                         "of the clients, stalled in the stalled runs", 0, 100);
  add_int<std::uint32_t>(*sub, "--agents", f.agents, "pedestrians of the city", 1, kAgentsMax);
  add_int<std::uint32_t>(*sub, "--seconds", f.seconds, "measured window per run", 1, 3600);
  add_int<std::uint32_t>(*sub, "--warmup", f.warmup_seconds,
                         "seconds after every client subscribed, before measuring", 0, 600);
  add_int<std::uint32_t>(*sub, "--repeat", f.repeat, "pairs of runs (no stall, stalled)", 1, 1000);
  sub->add_option("--server", f.server,
                  "bustle-server binary (default: the one in this build tree)")
      ->check(CLI::ExistingFile);
  sub->add_option("--dir", f.dir, "directory for the scenario, snapshot store and server log")
      ->check(CLI::ExistingDirectory)
      ->capture_default_str();
  add_int_no_default<std::uint64_t>(*sub, "--outbound-max-bytes", f.outbound_max_bytes,
                                    "the server's per-client queue cap (0: 256 KiB)", 4096,
                                    kU64Max);
  add_int<std::uint16_t>(*sub, "--motion-tolerance-mm", f.motion_tolerance_mm,
                         "every client's Subscribe tolerance", 0, 1000);
  add_city_scale(
      *sub, f.district_pedestrians, true,
      "two-blocks (the default city, every client receives all), or a pedestrian count such as "
      "1m or 50k: a generated 20 x 20 grid of sidewalk loops (2 km square) where each client "
      "(--clients at most 64, default 8) subscribes to its own district holding --share "
      "pedestrians (up to 8 districts 500 m apart, more on an 8 x 8 layout 250 m apart, "
      "overlapping), in pairs of runs without and with the clients; fails when a client holds "
      "far more or less than its share");
  add_int_no_default<std::uint32_t>(*sub, "--share", f.district_share,
                                    "with --city-scale N: pedestrians per client district "
                                    "(default N / 50: 20000 of 1m)",
                                    1, kAgentsMax);
  add_int_no_default<std::uint32_t>(*sub, "--sim-threads", f.sim_threads,
                                    "the server's --sim-threads (default: the server's own)", 1,
                                    64);
  add_int_no_default<std::uint32_t>(*sub, "--net-threads", f.net_threads,
                                    "the server's --net-threads (default: the server's own)", 1,
                                    64);
  add_json(*sub, a);
}

void add_district_servers(CLI::App& app, Args& a) {
  DistrictServersOptions& d = a.district_servers;
  CLI::App* sub = bench_subcommand(
      app, "district-servers",
      "the district city on K real bustle-server processes over loopback in batch mode, in "
      "neighbour lockstep (issue 34), for each K of --districts: per district wall time, step "
      "mean, barrier wait per step, efficiency = compute / (compute + wait), border bytes per "
      "step; strong scaling (one city) or weak (--agents per district)");
  sub->add_flag("--weak", d.weak,
                "weak scaling: --agents pedestrians per district on a grid of --grid x sqrt(K) "
                "nodes per side (default: strong, one city of --agents on --grid)");
  sub->add_option("--districts", d.districts,
                  "the district counts to run, in order (default 1,2,4; --weak 1,2,3,4); 1 is the "
                  "plain server without --district")
      ->delimiter(',')
      ->check(in_range<std::uint32_t>(1, 64));
  add_int<std::uint32_t>(*sub, "--grid", d.grid, "nodes per side (--weak: of one district's city)",
                         2, 1000);
  add_int<std::uint32_t>(*sub, "--agents", d.agents,
                         "pedestrians of the city (--weak: per district)", 1, kAgentsMax);
  add_int<std::uint32_t>(*sub, "--vehicles", d.vehicles,
                         "cars on the blocks' loops, some across borders (--weak: per district)", 0,
                         kAgentsMax);
  sub->add_option("--steps", d.steps, "steps each server runs (--steps of bustle-server)")
      ->check(in_range<std::uint64_t>(1, kStepsMax))
      ->capture_default_str();
  add_int<std::uint64_t>(*sub, "--seed", d.seed, "every server's --seed", 0, kU64Max);
  add_int<std::uint32_t>(*sub, "--sim-threads", d.sim_threads, "every server's --sim-threads", 1,
                         64);
  sub->add_flag("--record", d.record,
                "each server records (--record) and the bench counts the pedestrians and cars "
                "each district received across its borders and the ghost rows it read (costs "
                "step time)");
  sub->add_option("--server", d.server,
                  "bustle-server binary (default: the one in this build tree)")
      ->check(CLI::ExistingFile);
  sub->add_option("--dir", d.dir, "directory for the cities, server logs and recordings")
      ->check(CLI::ExistingDirectory)
      ->capture_default_str();
  add_json(*sub, a);
}

void add_gateway(CLI::App& app, Args& a) {
  GatewayBenchOptions& g = a.gateway;
  CLI::App* sub = bench_subcommand(
      app, "gateway",
      "one city on --districts live bustle-server processes behind bustle-gateway (issue 34), "
      "realtime clock, whole-city clients with the default budgets; per client count of "
      "--clients in interleaved rounds: the gateway's and the busiest district's CPU per step, "
      "bytes per client per second");
  add_int<std::uint32_t>(*sub, "--districts", g.districts, "district servers", 1, 64);
  add_int<std::uint32_t>(*sub, "--grid", g.grid, "nodes per side", 2, 1000);
  add_int<std::uint32_t>(*sub, "--agents", g.agents, "pedestrians of the city", 1, kAgentsMax);
  sub->add_option("--clients", g.clients, "client counts, in order (default 0,1,4,16)")
      ->delimiter(',')
      ->check(in_range<std::uint32_t>(0, 64));
  add_int<std::uint32_t>(*sub, "--seconds", g.seconds, "measured window per run", 1, 3600);
  add_int<std::uint32_t>(*sub, "--warmup", g.warmup_seconds, "seconds before each window", 0, 600);
  add_int<std::uint32_t>(*sub, "--repeat", g.repeat, "rounds over every client count", 1, 99);
  sub->add_option("--server", g.server, "bustle-server binary (default: this build tree's)")
      ->check(CLI::ExistingFile);
  sub->add_option("--gateway", g.gateway, "bustle-gateway binary (default: this build tree's)")
      ->check(CLI::ExistingFile);
  sub->add_option("--dir", g.dir, "directory for the city and the processes' logs")
      ->check(CLI::ExistingDirectory)
      ->capture_default_str();
  add_json(*sub, a);
}

// Fanout checks across flags; "" or the message. With --city-scale N,
// --clients and --warmup default to 8 clients and 5 s (the district city's
// tiers settle after spawning).
std::string check_fanout(const CLI::App& sub, FanoutOptions& f) {
  if (f.district_pedestrians == 0) {
    return sub.count("--share") > 0 ? "--share needs --city-scale N" : "";
  }
  if (sub.count("--clients") == 0) f.clients = 8;
  if (sub.count("--warmup") == 0) f.warmup_seconds = 5;
  for (const char* flag : {"--agents", "--stalled-percent"}) {
    if (sub.count(flag) > 0) {
      return std::string(flag) +
             " does not apply with --city-scale N (the district city has N pedestrians and no "
             "stalled runs)";
    }
  }
  if (f.clients > kMaxDistricts) {
    return "--clients (" + std::to_string(f.clients) + ") must be at most " +
           std::to_string(kMaxDistricts) + " with --city-scale N (one district each)";
  }
  if (f.district_share > f.district_pedestrians / 25) {
    return "--share (" + std::to_string(f.district_share) +
           ") must be at most 1/25 of --city-scale (" + std::to_string(f.district_pedestrians) +
           ")";
  }
  return "";
}

// Checks across the flags of subcommand `sub` (a.mode); "" or the message.
std::string check_across_flags(const CLI::App& sub, Args& a) {
  if (a.mode == "fanout") return check_fanout(sub, a.fanout);
  if (a.mode == "frame" && a.frame_share > a.frame_pedestrians / 25) {
    return "--share (" + std::to_string(a.frame_share) +
           ") must be at most 1/25 of --city-scale (" + std::to_string(a.frame_pedestrians) + ")";
  }
  if (a.mode == "population" && a.residents > a.active) {
    return "--residents (" + std::to_string(a.residents) + ") must be at most --active (" +
           std::to_string(a.active) + ")";
  }
  if (a.mode == "district-servers") {
    const DistrictServersOptions& d = a.district_servers;
    for (const std::uint32_t k : d.districts) {
      if (k > district_servers_grid(d, k)) {
        return "--districts " + std::to_string(k) + " needs --grid of at least " +
               std::to_string(k) + " (a district is a strip of node columns)";
      }
    }
  }
  if (a.mode == "districts" && !a.write_scenario.empty()) {
    for (const char* flag : {"--steps", "--seed"}) {
      if (sub.count(flag) > 0) {
        return std::string(flag) +
               " does not apply with --write-scenario (the city is written, not stepped)";
      }
    }
  }
  return "";
}

std::string subcommand_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return names;
}

std::string option_names(const CLI::App& sub) {
  std::string names;
  for (const CLI::Option* o : sub.get_options()) {
    for (const std::string& n : o->get_lnames()) names += (names.empty() ? "--" : ", --") + n;
  }
  return names;
}

}  // namespace

const char* version_text() {
  return "bustle-bench " BUSTLE_VERSION;
}

ParsedArgs parse_args(int argc, char** argv) {
  ParsedArgs out;
  Args& a = out.args;
  CLI::App app("bustle-bench: scale measurements that are not unit tests (docs/performance.md)",
               "bustle-bench");
  app.set_version_flag("--version", std::string(version_text()));
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ran (targets met or not), 1 the bench could not run or a self-check failed, "
      "2 bad command line.\nRun 'bustle-bench SUBCOMMAND --help' for a subcommand's flags.");
  add_step(app, a);
  add_population(app, a);
  add_snapshot(app, a);
  add_vehicles(app, a);
  add_districts(app, a);
  add_stream(app, a);
  add_frame(app, a);
  add_fanout(app, a);
  add_district_servers(app, a);
  add_gateway(app, a);
  const auto fail = [&](const std::string& where, const std::string& message) {
    std::fprintf(stderr, "bustle-bench%s: %s\nrun 'bustle-bench%s --help' for usage\n",
                 where.c_str(), message.c_str(), where.c_str());
    out.exit_code = 2;
    return out;
  };
  const std::vector<std::string> given(argv + std::min(argc, 1), argv + argc);
  if (std::string why = args::flag_given_a_value(app, given); !why.empty()) return fail("", why);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    out.exit_code = app.exit(e);
    return out;
  } catch (const CLI::CallForAllHelp& e) {
    out.exit_code = app.exit(e);
    return out;
  } catch (const CLI::CallForVersion& e) {
    out.exit_code = app.exit(e);
    return out;
  } catch (const CLI::ParseError& e) {
    const CLI::App* sub = app.get_subcommands().empty() ? nullptr : app.get_subcommands().front();
    const std::string where = sub != nullptr ? " " + sub->get_name() : "";
    const std::string what = e.what();
    // CLI11 says "--grid: 1 required UINT:in [2, 1000] missing" for a flag at the end without its
    // value.
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr &&
        what.find(" missing") != std::string::npos) {
      return fail(where, what.substr(0, what.find(':')) + ": missing value");
    }
    // Flags before the subcommand belong to no bench (CLI11 reports them as extras).
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && argc > 1 && argv[1][0] == '-') {
      return fail(
          "", std::string("unknown option '") + argv[1] +
                  "' (before the subcommand: --help, --version; a bench's flags follow its name)");
    }
    if (sub == nullptr && argc > 1 && argv[1][0] != '-') {
      return fail("", std::string("unknown subcommand '") + argv[1] +
                          "' (one of: " + subcommand_names(app) + ")");
    }
    if (sub == nullptr && argc > 1) {
      return fail(
          "", std::string("unknown option '") + argv[1] +
                  "' (before the subcommand: --help, --version; a bench's flags follow its name)");
    }
    if (sub == nullptr)
      return fail("", "a subcommand is required (one of: " + subcommand_names(app) + ")");
    return fail(where, what);
  }
  CLI::App* sub = app.get_subcommands().front();
  // Left-overs (allow_extras): an unknown flag or a stray value, named in argv order.
  if (const std::vector<std::string> rest = sub->remaining(); !rest.empty()) {
    const std::string& first = rest.front();
    if (first.rfind("-", 0) == 0) {
      return fail(" " + sub->get_name(),
                  "unknown option '" + first + "' (allowed here: " + option_names(*sub) + ")");
    }
    return fail(" " + sub->get_name(), "unexpected argument '" + first + "'");
  }
  a.mode = app.get_subcommands().front()->get_name();
  if (const std::string error = check_across_flags(*sub, a); !error.empty()) {
    std::fprintf(stderr, "bustle-bench %s: %s\n", a.mode.c_str(), error.c_str());
    out.exit_code = 2;
    return out;
  }
  out.run = true;
  return out;
}

}  // namespace bustle::bench
