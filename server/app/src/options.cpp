// bustle-server's settings (options.hpp): the CLI11 option table, the
// BUSTLE_* environment variables under the flags, the checks that name the
// flag or variable at fault, and the combinations batch mode refuses.
#include "options.hpp"

#include <CLI/CLI.hpp>
#include <limits>
#include <map>

#include "bustle/args/addresses.hpp"
#include "bustle/args/checks.hpp"
#include "bustle/ops/metrics_server.hpp"
#include "bustle/persist/persist_worker.hpp"

namespace bustle::app {
namespace {

using args::split_host_port;
using args::store_whole;

// Why batch mode (--steps) refuses a setting: each would otherwise be
// silently ignored, because batch mode steps the world back to back in this
// process and exits, with no listener, clock or snapshot store.
constexpr const char* kNoListener = "batch mode opens no listener";
constexpr const char* kNoSnapshotStore =
    "batch mode opens no snapshot store (use --record for a replayable file)";
// Only for --clock realtime and manual: --clock fast is what batch mode does.
constexpr const char* kClockInBatch =
    "batch mode always runs its steps back to back (as --clock fast)";

// One setting: its flag, its environment variable, and how to apply a value.
struct Setting {
  const char* flag;
  const char* env;  // nullptr: flag only
  bool takes_value;
  std::function<std::string(AppOptions&, const std::string&)> apply;  // "" = ok, else error
  const char* not_in_batch = nullptr;  // set: refused with --steps, for this reason
};

// The listener's and each client's limits (--token to --client-entries-per-step),
// kept out of settings() so that no function holds the whole table.
std::vector<Setting> client_settings() {
  using O = AppOptions;
  return {
      {"--token", "BUSTLE_TOKEN", true,
       [](O& o, const std::string& v) {
         o.server.token = v;
         return std::string();
       },
       kNoListener},
      {"--handshake-timeout-ms", "BUSTLE_HANDSHAKE_TIMEOUT_MS", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 10, 600'000, o.server.handshake_timeout_ms,
                                           "milliseconds");
       },
       kNoListener},
      {"--max-clients", "BUSTLE_MAX_CLIENTS", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 1, 10'000, o.server.max_clients, "a count");
       },
       kNoListener},
      {"--client-outbound-max-bytes", "BUSTLE_CLIENT_OUTBOUND_MAX_BYTES", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::size_t>(v, 4096, std::size_t{1} << 32, o.server.outbound_bytes_max,
                                         "bytes");
       },
       kNoListener},
      {"--client-overflow-disconnect-ms", "BUSTLE_CLIENT_OVERFLOW_DISCONNECT_MS", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 100, 600'000, o.server.overflow_disconnect_ms,
                                           "milliseconds");
       },
       kNoListener},
      {"--client-commands-per-second", "BUSTLE_CLIENT_COMMANDS_PER_SECOND", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 1, 1'000'000, o.server.commands_per_second_max,
                                           "commands per second");
       },
       kNoListener},
      {"--max-clients-per-address", "BUSTLE_MAX_CLIENTS_PER_ADDRESS", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 1, 10'000, o.server.clients_per_address_max,
                                           "a count");
       },
       kNoListener},
      {"--client-idle-timeout-ms", "BUSTLE_CLIENT_IDLE_TIMEOUT_MS", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 100, 86'400'000, o.server.idle_timeout_ms,
                                           "milliseconds");
       },
       kNoListener},
      {"--lease-grace-steps", "BUSTLE_LEASE_GRACE_STEPS", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 0, 1'000'000, o.server.lease_grace_steps, "steps");
       },
       kNoListener},
      {"--client-entries-per-step", "BUSTLE_CLIENT_ENTRIES_PER_STEP", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 1, 1'000'000, o.server.entries_per_step_max,
                                           "a count");
       },
       kNoListener},
  };
}

}  // namespace

std::string parse_district_peers(const std::string& v,
                                 std::vector<AppOptions::DistrictPeerAddress>& out) {
  return args::parse_district_addresses(v, out);
}

namespace {

// District servers (docs/districts.md).
std::vector<Setting> district_settings() {
  using O = AppOptions;
  return {
      {"--district", "BUSTLE_DISTRICT", true,
       [](O& o, const std::string& v) {
         if (v.empty()) return std::string("expected a district id of the scenario's map");
         o.district = v;
         return std::string();
       }},
      {"--district-listen", "BUSTLE_DISTRICT_LISTEN", true,
       [](O& o, const std::string& v) {
         return split_host_port(v, o.district_listen_host, o.district_listen_port);
       }},
      {"--agones-district", "BUSTLE_AGONES_DISTRICT", false,
       [](O& o, const std::string& v) {
         if (!v.empty() && v != "1" && v != "true") return "expected 1 or true, got '" + v + "'";
         o.agones_district = true;
         return std::string();
       },
       kNoListener},
      {"--district-wait-s", "BUSTLE_DISTRICT_WAIT_S", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 1, 86'400, o.district_wait_s, "seconds");
       }},
      {"--resume", "BUSTLE_RESUME", true,
       [](O& o, const std::string& v) {
         if (v.empty()) return std::string("expected a recording file");
         o.resume_path = v;
         return std::string();
       }},
      {"--district-peers", "BUSTLE_DISTRICT_PEERS", true,
       [](O& o, const std::string& v) { return parse_district_peers(v, o.district_peers); }},
  };
}

// --sim-threads: a count, or "auto" (0: one per usable CPU, cpu_budget.hpp).
std::string store_threads_or_auto(const std::string& v, std::uint32_t& out) {
  if (v != "auto") return store_whole<std::uint32_t>(v, 1, 64, out, "a thread count or auto");
  out = 0;
  return {};
}

std::vector<Setting> settings() {
  using O = AppOptions;
  std::vector<Setting> all = {
      {"--port", "BUSTLE_PORT", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint16_t>(v, 0, 65535, o.server.port, "an integer");
       },
       kNoListener},
      {"--bind", "BUSTLE_BIND", true,
       [](O& o, const std::string& v) {
         o.server.bind_address = v;
         return std::string();
       },
       kNoListener},
      {"--config", "BUSTLE_CONFIG", true,
       [](O& o, const std::string& v) {
         o.config_path = v;
         return std::string();
       }},
      {"--seed", "BUSTLE_SEED", true,
       [=](O& o, const std::string& v) {
         const auto most = std::numeric_limits<std::uint64_t>::max();
         return args::parse_whole<std::uint64_t>(v, 0, most, o.seed)
                    ? ""
                    : args::expected("an unsigned 64-bit integer", v);
       }},
      {"--rate", "BUSTLE_RATE", true,
       [](O& o, const std::string& v) {
         double hz = 0;
         if (!args::parse_finite(v, hz) || hz < 1.0 || hz > 1000.0) {
           return args::expected("steps per second in [1, 1000]", v);
         }
         o.rate_hz = hz;
         return std::string();
       }},
      {"--sim-threads", "BUSTLE_SIM_THREADS", true,
       [=](O& o, const std::string& v) { return store_threads_or_auto(v, o.sim_threads); }},
      {"--net-threads", "BUSTLE_NET_THREADS", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 1, 64, o.net_threads, "a thread count");
       },
       kNoListener},
      {"--clock", "BUSTLE_CLOCK", true,
       [](O& o, const std::string& v) {
         static const std::map<std::string, net::ClockMode> modes = {
             {"realtime", net::ClockMode::Realtime},
             {"fast", net::ClockMode::Fast},
             {"manual", net::ClockMode::Manual}};
         auto it = modes.find(v);
         if (it == modes.end()) return "expected realtime, fast or manual, got '" + v + "'";
         o.clock = it->second;
         return std::string();
       },
       kClockInBatch},
      {"--steps", nullptr, true,
       [=](O& o, const std::string& v) {
         std::uint64_t n = 0;
         std::string why =
             store_whole<std::uint64_t>(v, 0, 1'000'000'000'000ull, n, "a step count");
         if (why.empty()) o.batch_steps = n;
         return why;
       }},
      {"--check-invariants", nullptr, false,
       [](O& o, const std::string&) {
         o.check_invariants = true;
         return std::string();
       }},
      {"--print-digest", nullptr, false,
       [](O& o, const std::string&) {
         o.print_digest = true;
         return std::string();
       }},
  };
  for (Setting& s : client_settings()) all.push_back(std::move(s));
  for (Setting& s : district_settings()) all.push_back(std::move(s));
  std::vector<Setting> rest = {
      {"--snapshot-db", "BUSTLE_SNAPSHOT_DB", true,
       [](O& o, const std::string& v) {
         if (v.empty()) return std::string("expected a file path");
         o.snapshot_db = v;
         return std::string();
       },
       kNoSnapshotStore},
      {"--snapshot-db-max-pages", "BUSTLE_SNAPSHOT_DB_MAX_PAGES", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::int64_t>(v, 0, std::int64_t{1} << 40, o.snapshot_db_max_pages,
                                          "pages");
       },
       kNoSnapshotStore},
      {"--autosave-steps", "BUSTLE_AUTOSAVE_STEPS", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint64_t>(v, 0, 1'000'000'000ull, o.autosave_steps, "steps");
       },
       kNoSnapshotStore},
      {"--record", "BUSTLE_RECORD", true,
       [](O& o, const std::string& v) {
         if (v.empty()) return std::string("expected a file path");
         o.record_path = v;
         return std::string();
       }},
      {"--record-keyframe-steps", "BUSTLE_RECORD_KEYFRAME_STEPS", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint64_t>(v, 0, 1'000'000'000ull, o.record_keyframe_steps,
                                           "steps");
       }},
      {"--log-level", "BUSTLE_LOG_LEVEL", true,
       [](O& o, const std::string& v) {
         if (v != "trace" && v != "debug" && v != "info" && v != "warn" && v != "error" &&
             v != "off") {
           return "expected trace, debug, info, warn, error or off, got '" + v + "'";
         }
         o.log_level = v;
         return std::string();
       }},
      {"--log-format", "BUSTLE_LOG_FORMAT", true,
       [](O& o, const std::string& v) {
         if (v != "text" && v != "json") return "expected text or json, got '" + v + "'";
         o.log_format = v;
         return std::string();
       }},
      {"--metrics-bind", "BUSTLE_METRICS_BIND", true,
       [](O& o, const std::string& v) {
         if (core::Status s = ops::check_metrics_bind(v); !s.ok()) return s.message();
         o.metrics_bind = v;
         return std::string();
       },
       kNoListener},
      {"--health-max-lag-steps", "BUSTLE_HEALTH_MAX_LAG_STEPS", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 1, 1'000'000, o.health_max_lag_steps, "steps");
       },
       kNoListener},
      {"--checkpoint-on-exit", "BUSTLE_CHECKPOINT_ON_EXIT", true,
       [](O& o, const std::string& v) {
         if (core::Status why = persist::validate_snapshot_name(v); !why.ok())
           return "snapshot name: " + why.message();
         o.checkpoint_on_exit = v;
         return std::string();
       },
       kNoSnapshotStore},
      {"--agones", "BUSTLE_AGONES", false,
       [](O& o, const std::string& v) {
         // The flag takes no value; the variable is 1/true/0/false.
         if (v.empty() || v == "1" || v == "true") {
           o.agones = true;
         } else if (v == "0" || v == "false") {
           o.agones = false;
         } else {
           return "expected 1, true, 0 or false, got '" + v + "'";
         }
         return std::string();
       },
       kNoListener},
      {"--agones-health-ms", "BUSTLE_AGONES_HEALTH_MS", true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 100, 600'000, o.agones_health_ms, "milliseconds");
       },
       kNoListener},
      {"--debug-stall-at-step", nullptr, true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint64_t>(v, 1, 1'000'000'000ull, o.debug_stall_at_step, "a step");
       },
       kNoListener},
      {"--debug-stall-ms", nullptr, true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 1, 600'000, o.debug_stall_ms, "milliseconds");
       },
       kNoListener},
      {"--debug-restore-delay-ms", nullptr, true,
       [=](O& o, const std::string& v) {
         return store_whole<std::uint32_t>(v, 0, 600'000, o.debug_restore_delay_ms, "milliseconds");
       },
       kNoSnapshotStore},
  };
  for (Setting& s : rest) all.push_back(std::move(s));
  return all;
}

// Settings that would have no effect together are refused, naming both,
// instead of being silently ignored.
core::Status check_combinations(const AppOptions& o,
                                const std::map<const Setting*, std::string>& given) {
  if (o.print_digest && !o.batch_steps)
    return core::Status::invalid_argument("--print-digest needs --steps N");
  if (o.batch_steps) {
    for (const auto& [setting, source] : given) {
      if (setting->not_in_batch == nullptr) continue;
      if (setting->not_in_batch == kClockInBatch && o.clock == net::ClockMode::Fast) continue;
      return core::Status::invalid_argument(
          source + " has no effect with --steps: " + setting->not_in_batch);
    }
  }
  for (const auto& [setting, source] : given) {
    const std::string flag = setting->flag;
    if (flag == "--record-keyframe-steps" && !o.record_path) {
      return core::Status::invalid_argument(source + " has no effect without --record FILE");
    }
    if (flag == "--agones-district" && !o.agones)
      return core::Status::invalid_argument(source + " has no effect without --agones");
    if (flag == "--agones-district" && o.district)
      return core::Status::invalid_argument(source + " and --district both name the district");
    if ((flag == "--district-listen" || flag == "--district-peers" ||
         flag == "--district-wait-s") &&
        !o.district && !o.agones_district)
      return core::Status::invalid_argument(source + " has no effect without --district ID");
    if (flag == "--agones-health-ms" && !o.agones)
      return core::Status::invalid_argument(source + " has no effect without --agones");
    if (flag == "--health-max-lag-steps" && !o.metrics_bind) {
      return core::Status::invalid_argument(source +
                                            " has no effect without --metrics-bind ADDR:PORT");
    }
  }
  if ((o.debug_stall_at_step == 0) != (o.debug_stall_ms == 0)) {
    return core::Status::invalid_argument("--debug-stall-at-step and --debug-stall-ms go together");
  }
  return {};
}

}  // namespace

namespace {

// bustle-server --help, in two parts (the server, then operations, snapshots
// and batch mode).
constexpr const char* kUsageServer = R"(Usage: bustle-server [options]

Runs the Bustle city simulation. With no options: the embedded default city,
realtime clock at the scenario's rate (10 Hz), listening on 127.0.0.1:7777.
Flags override BUSTLE_* environment variables (shown in brackets).

  --config FILE          scenario JSON (schema/scenario.schema.json)   [BUSTLE_CONFIG]
                         default: the embedded city = configs/default.city.json
  --seed N               world seed, unsigned 64-bit (default 1)         [BUSTLE_SEED]
  --rate HZ              steps per second, overrides the scenario's step_us
                         (1..1000)                                      [BUSTLE_RATE]
  --sim-threads N        threads that step the city's parallel parts (pedestrian
                         movement, tier distances, the frame), 1..64 or auto
                         (default auto: one per CPU the process may use, its
                         affinity and cgroup quota, at most 8); every count
                         gives the same digests                 [BUSTLE_SIM_THREADS]
  --net-threads N        threads that encode a step's deltas for several clients
                         at once (the network thread and N - 1 helpers), 1..64
                         (default 1); every count gives every client the same
                         bytes                                  [BUSTLE_NET_THREADS]
  --clock MODE           realtime | fast | manual (default realtime)     [BUSTLE_CLOCK]
                         fast: as fast as possible; manual: only on Step commands
  --port N               TCP port, 0 = ephemeral (default 7777)          [BUSTLE_PORT]
  --bind ADDR            listen address (default 127.0.0.1); a non-loopback
                         address requires a token                       [BUSTLE_BIND]
  --token T              operator token; when set, Operator role needs it [BUSTLE_TOKEN]
  --handshake-timeout-ms N   Hello deadline (default 5000)  [BUSTLE_HANDSHAKE_TIMEOUT_MS]
  --max-clients N        concurrent clients (default 64)          [BUSTLE_MAX_CLIENTS]
  --client-outbound-max-bytes N  per-client send backlog (soft cap): above it
                         deltas are coalesced and the client's commands are not
                         read; a frame that would pass twice the cap (at least
                         cap + 1 MiB) closes the client (default 8388608)
                                               [BUSTLE_CLIENT_OUTBOUND_MAX_BYTES]
  --client-overflow-disconnect-ms N  a client over the soft cap this long is
                         closed with OutboundOverflow (default 10000)
                                           [BUSTLE_CLIENT_OVERFLOW_DISCONNECT_MS]
  --client-commands-per-second N  per-client command rate, bursts up to twice
                         that; excess is answered RateLimited (default 200)
                                              [BUSTLE_CLIENT_COMMANDS_PER_SECOND]
  --max-clients-per-address N  connections from one address; more are refused
                         with TooManyConnections (default 64) [BUSTLE_MAX_CLIENTS_PER_ADDRESS]
  --client-idle-timeout-ms N  a client that sent nothing and had nothing
                         written to it this long is closed with IdleTimeout
                         (default 300000)            [BUSTLE_CLIENT_IDLE_TIMEOUT_MS]
  --client-entries-per-step N  entities entering one client's stream per step
                         after its baseline (default 1024) [BUSTLE_CLIENT_ENTRIES_PER_STEP]
  --lease-grace-steps N  a hint a client has not applied (leases) for this many
                         steps counts as waiting past grace (default 30)
                                                       [BUSTLE_LEASE_GRACE_STEPS]
  --quality Q            low|medium|high|epic budgets (default high) [BUSTLE_QUALITY]
  --log-level L          trace|debug|info|warn|error|off (default info) [BUSTLE_LOG_LEVEL]
  --log-format F         text | json: one JSON object per line (default text);
                         UTC timestamps with offset either way   [BUSTLE_LOG_FORMAT]

)";

constexpr const char* kUsageMore = R"(Operations (docs/operations.md):
  --metrics-bind ADDR:PORT  serve /metrics (Prometheus text), /healthz and
                         /readyz over HTTP; IPv6 as [ADDR]:PORT; port 0 picks
                         a free one (default: off)            [BUSTLE_METRICS_BIND]
  --health-max-lag-steps N  /healthz turns 503 when the sim thread has neither
                         stepped nor woken idle for N step periods (at least
                         1 s; default 50)             [BUSTLE_HEALTH_MAX_LAG_STEPS]
  --checkpoint-on-exit NAME  on SIGTERM/SIGINT, checkpoint NAME before exiting
                                                      [BUSTLE_CHECKPOINT_ON_EXIT]
  --agones               report Ready, Health and Shutdown to the Agones SDK
                         sidecar (http://127.0.0.1:$AGONES_SDK_HTTP_PORT,
                         default port 9358)                     [BUSTLE_AGONES=1]
  --agones-health-ms N   period of the Health pings (default 2000) [BUSTLE_AGONES_HEALTH_MS]
  --agones-district      a district GameServer of a Fleet: after Ready, wait for
                         the allocation's label bustle.dev/district (the
                         district) and annotation bustle.dev/district-peers
                         (as --district-peers)          [BUSTLE_AGONES_DISTRICT=1]

Districts (one city on several servers, docs/districts.md):
  --district ID          run district ID of the scenario's district map: its
                         lanes, its share of the ids and pedestrians; step k
                         starts when every neighbour's step k-1 arrived
                                                          [BUSTLE_DISTRICT]
  --district-listen HOST:PORT  where neighbours connect (default 127.0.0.1:0,
                         any free port; printed at start) [BUSTLE_DISTRICT_LISTEN]
  --district-peers ID=HOST:PORT,...  where each neighbour with a lower index
                         listens (this server dials them; the others dial
                         it)                              [BUSTLE_DISTRICT_PEERS]
  --district-wait-s N    give up (exit 1) after waiting N s for a neighbour's
                         step (default 60; a restarted one comes back within
                         it)                             [BUSTLE_DISTRICT_WAIT_S]

Snapshots and recording:
  --snapshot-db FILE     snapshot store (SQLite; created if missing)
                         (default bustle-snapshots.db)              [BUSTLE_SNAPSHOT_DB]
  --snapshot-db-max-pages N  cap the store at N pages of 4 KiB; writes that need
                         more fail like a full disk (0 = no cap) [BUSTLE_SNAPSHOT_DB_MAX_PAGES]
  --autosave-steps N     checkpoint "autosave" every N steps (0 = off)  [BUSTLE_AUTOSAVE_STEPS]
  --resume FILE          start where this recording of the same city (and
                         district) ends: its last keyframe, then its later
                         ticks replayed with every digest checked; with
                         --steps N, run to step N                [BUSTLE_RESUME]
  --record FILE          record the session (scenario, keyframes, commands,
                         every digest) to a new SQLite file        [BUSTLE_RECORD]
  --record-keyframe-steps N  periodic keyframe interval in steps (default 300;
                         0 = initial and restore keyframes only) [BUSTLE_RECORD_KEYFRAME_STEPS]
  --steps N              batch mode: run N steps back to back, headless, then
                         exit 0 (with --record, the recording is written and
                         verifies with bustle-replay verify)
  --print-digest         with --steps: print "step <N> digest <16 hex digits>"
  --check-invariants     check every core invariant after every step (costs
                         O(entities) per step); the first broken one is logged
                         at error and the server stops with exit status 3 (in
                         batch mode too)
  --help, --version

Combinations that would do nothing are refused (exit 2), naming both:
  with --steps: --port, --bind, --token, --handshake-timeout-ms, --max-clients,
    --client-outbound-max-bytes, --net-threads (no listener), --snapshot-db,
    --snapshot-db-max-pages, --autosave-steps (no snapshot store), and --clock
    other than fast (batch steps run back to back); also when set through
    their BUSTLE_* variables. Batch mode uses --config, --seed, --rate,
    --log-level, --record, --record-keyframe-steps, --print-digest and
    --check-invariants.
  --record-keyframe-steps without --record; --print-digest without --steps.

On start the server prints one line to stdout:
  bustle-server listening on <address>:<port>
  bustle-server metrics on <address>:<port>      (with --metrics-bind)
Logs go to stderr. SIGINT/SIGTERM shut down cleanly (exit 0; a second one
exits at once with 128 + the signal number). SIGHUP is logged and ignored.
)";

}  // namespace

std::string usage_text() {
  return std::string(kUsageServer) + kUsageMore;
}

namespace {

// CLI11's complaint in the words the old parser used (tests and scripts
// match them): "--seed: missing value". A flag given a value ("--agones:
// takes no value") is refused before CLI11 parses (args::flag_given_a_value).
std::string worded(const CLI::ParseError& e) {
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr)
    return what.substr(0, what.find_first_of(": ")) + ": missing value";
  return what;  // ValidationError: "--port: expected ..., got '...'"
}

// Representation budgets (quality.hpp), kept out of settings() so the option
// table does not grow past its listed length.
Setting quality_setting() {
  using O = AppOptions;
  return {"--quality", "BUSTLE_QUALITY", true,
          [](O& o, const std::string& v) {
            const std::optional<Quality> q = parse_quality(v);
            if (!q) return "expected low, medium, high or epic, got '" + v + "'";
            o.quality = *q;
            o.server.default_budgets = quality_budgets(*q).client;
            return std::string();
          },
          kNoListener};
}

}  // namespace

ParseResult parse_options(const std::vector<std::string>& args, const EnvLookup& env) {
  ParseResult result;
  std::vector<Setting> all = settings();
  all.push_back(quality_setting());
  // Where each setting that was given came from ("--port", or "environment
  // BUSTLE_PORT (--port)"), for refusing combinations that would do nothing.
  std::map<const Setting*, std::string> given;

  // Environment first, so flags applied afterwards win.
  for (const Setting& s : all) {
    if (s.env == nullptr) continue;
    if (auto v = env(s.env)) {
      if (std::string err = s.apply(result.options, *v); !err.empty()) {
        result.error = std::string("environment ") + s.env + ": " + err;
        return result;
      }
      given[&s] = std::string("environment ") + s.env + " (" + s.flag + ")";
    }
  }
  CLI::App app("Runs the Bustle city simulation.", "bustle-server");
  app.allow_extras();  // worded below, like every other refusal
  app.set_help_flag();
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag("-h,--help", result.options.show_help);
  app.add_flag("--version", result.options.show_version);
  std::vector<std::pair<const Setting*, const CLI::Option*>> declared;
  for (const Setting& s : all) {
    AppOptions& o = result.options;
    CLI::Option* op = s.takes_value ? app.add_option(s.flag)->check(args::storing(
                                          [&s, &o](const std::string& v) { return s.apply(o, v); }))
                                    : app.add_flag(s.flag);
    declared.emplace_back(&s, op);
  }
  // Like every flag: `--help=no` is an error, never a help page or a server.
  if (std::string err = args::flag_given_a_value(app, args); !err.empty()) {
    result.error = err;
    return result;
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11's order
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    result.error = worded(e);
    return result;
  }
  if (const auto rest = app.remaining(); !rest.empty()) {
    result.error = "unknown option '" + rest.front() + "' (see --help)";
    return result;
  }
  for (const auto& [setting, option] : declared) {
    if (option->count() == 0) continue;
    if (!setting->takes_value) setting->apply(result.options, "");
    given[setting] = setting->flag;
  }
  result.error = check_combinations(result.options, given).message();
  return result;
}

}  // namespace bustle::app
