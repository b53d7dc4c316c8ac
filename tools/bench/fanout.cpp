// `bustle-bench fanout`: N real clients on loopback against a real
// bustle-server process, in pairs of runs (no client stalled; a share of
// them stalled), interleaved so that machine load hits both alike.
//
// What a run does: start a fresh server (realtime clock, the default city's
// geometry with --agents pedestrians), connect every client, subscribe each
// to the whole city (so every client has all moving entities in interest),
// wait --warmup-seconds, then measure for --seconds:
//   - server CPU per thread (sim = the main thread, bustle-net, ...), from
//     /proc/PID/task/TID/stat, as a share of one core;
//   - bytes per reading client per second (what its socket delivered);
//   - delivery lag per Delta: (receive time - first receive time) -
//     (sim time - first sim time), minus its minimum, p50/p99 over every
//     reading client: how late a step's Delta reaches a client relative to
//     the best case; stalled neighbours must not move it;
//   - server step time p50/p99/max over the window's steps (QueryStats with
//     step_time_window: exact, start-up and warm-up left out), beside the
//     p99 over every step of the run (bustle_step_duration_recent_seconds);
//   - server RSS (VmRSS at the end, VmHWM), dropped steps (the realtime
//     clock's catch-up cap), and how many stalled clients the server closed.
// A stalled client is a raw socket with a 4 KiB receive buffer that sends
// Hello and Subscribe and then never reads; the server's per-client soft cap
// (--outbound-max-bytes, 256 KiB by default here so that the cap is reached
// within a run) makes it coalesce, stop reading and finally close it.
//
// --city-scale N (district mode, issue 17): the city is the generated
// district city of fanout_city.hpp with N pedestrians; the pairs are a run
// without any client and a run with every client (at most 8) subscribed to
// its own district (one observer, a radius holding --share pedestrians,
// generous budgets). Besides the figures above it reports CPU per executed
// step, the window's steps per second, dropped / late / over-100-ms steps,
// start-up time and RSS once every pedestrian is spawned, and the entities
// each client holds; it fails when a client holds far more or fewer than its
// share (interest not applied).
#include "fanout.hpp"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>
#include <vector>

#include "bustle/client/client.hpp"
#include "bustle/client/messages.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "fanout_city.hpp"
#include "measure.hpp"
#include "report.hpp"

extern char** environ;

namespace bustle::bench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double seconds_since(Clock::time_point t0, Clock::time_point t) {
  return std::chrono::duration<double>(t - t0).count();
}

bool district_mode(const FanoutOptions& o) {
  return o.district_pedestrians > 0;
}

// The district city's geometry and districts (district mode only).
DistrictCity& district_city() {
  static DistrictCity city;
  return city;
}

// A file of this run in --dir, named by the bench's process id (as the
// snapshot bench names its file), so two benches sharing a folder never
// overwrite each other's city, snapshot store or server log.
std::string run_file(const FanoutOptions& o, const char* name) {
  return o.dir + "/bustle-fanout-" + std::to_string(::getpid()) + "-" + name;
}

// Removes this run's files when the bench ends: the city and the snapshot
// store always, the server log only when the server wrote nothing to it.
struct RunFiles {
  const FanoutOptions& o;
  ~RunFiles() {
    std::error_code ec;
    for (const char* name : {"city.json", "snapshots.db", "snapshots.db-wal", "snapshots.db-shm"})
      std::filesystem::remove(run_file(o, name), ec);
    const std::string log = run_file(o, "server.log");
    if (std::filesystem::exists(log, ec) && std::filesystem::file_size(log, ec) == 0)
      std::filesystem::remove(log, ec);
  }
};

// The city: the embedded default city with `agents` pedestrians, or the
// generated district city (district mode).
std::string write_city(const FanoutOptions& o) {
  const std::string path = run_file(o, "city.json");
  if (district_mode(o)) {
    std::ofstream(path) << district_city().scenario_json;
    return path;
  }
  nlohmann::json city = nlohmann::json::parse(scenario::embedded_default_scenario_text());
  city["id"] = "bustle.bench.fanout." + std::to_string(o.agents);
  city["pedestrians"]["count"] = o.agents;
  city["pedestrians"]["spawn_per_step_max"] = std::max<std::uint32_t>(o.agents, 1);
  std::uint32_t capacity = 1024;
  while (capacity < o.agents + o.agents / 4) capacity *= 2;
  city["entity_capacity"] = std::max<std::uint32_t>(capacity, city.value("entity_capacity", 1024u));
  std::ofstream(path) << city.dump(2);
  return path;
}

// A bustle-server child process; SIGTERM and reaped on destruction.
struct ServerProcess {
  pid_t pid = -1;
  std::uint16_t port = 0;
  std::uint16_t metrics_port = 0;
  double listening_s = 0;  // from spawn to the metrics port line
  std::string error;

  ServerProcess(const FanoutOptions& o, const std::string& city) {
    std::vector<std::string> args = {
        o.server,
        "--config",
        city,
        "--port",
        "0",
        "--clock",
        "realtime",
        "--max-clients",
        std::to_string(o.clients + 8),
        "--max-clients-per-address",
        std::to_string(o.clients + 8),
        "--snapshot-db",
        run_file(o, "snapshots.db"),
        "--log-level",
        "warn",
        "--metrics-bind",
        "127.0.0.1:0",
        "--client-outbound-max-bytes",
        std::to_string(o.outbound_max_bytes ? o.outbound_max_bytes : 262144)};
    if (o.sim_threads > 0) {
      args.push_back("--sim-threads");
      args.push_back(std::to_string(o.sim_threads));
    }
    if (o.net_threads > 0) {
      args.push_back("--net-threads");
      args.push_back(std::to_string(o.net_threads));
    }
    const auto started = Clock::now();
    int out[2];
    if (pipe(out) != 0) {
      error = "pipe: " + std::string(std::strerror(errno));
      return;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    const std::string log = run_file(o, "server.log");
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid, o.server.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (rc != 0) {
      error = "cannot start " + o.server + ": " + std::strerror(rc);
      pid = -1;
      close(out[0]);
      return;
    }
    // "bustle-server listening on <address>:<port>", then
    // "bustle-server metrics on <address>:<port>"
    std::string line;
    const auto deadline = Clock::now() + 60s;
    while (Clock::now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char c;
      if (read(out[0], &c, 1) != 1) break;
      if (c != '\n') {
        line += c;
        continue;
      }
      const auto colon = line.rfind(':');
      if (colon != std::string::npos && line.rfind("bustle-server listening on ", 0) == 0) {
        port = static_cast<std::uint16_t>(std::stoi(line.substr(colon + 1)));
      } else if (colon != std::string::npos && line.rfind("bustle-server metrics on ", 0) == 0) {
        metrics_port = static_cast<std::uint16_t>(std::stoi(line.substr(colon + 1)));
        listening_s = seconds_since(started, Clock::now());
        break;
      }
      line.clear();
    }
    close(out[0]);
    if (port == 0 || metrics_port == 0) {
      error = "the server did not report its ports within 60 s (see " + log + ")";
    }
  }
  ~ServerProcess() {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100 && waitpid(pid, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(50ms);
    if (waitpid(pid, &status, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  }
};

// CPU ticks per thread name ("sim" for the main thread).
std::map<std::string, double> thread_cpu_seconds(pid_t pid) {
  std::map<std::string, double> out;
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(task, ec)) {
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto open = stat.find('(');
    const auto close_paren = stat.rfind(')');
    if (open == std::string::npos || close_paren == std::string::npos) continue;
    std::string name = stat.substr(open + 1, close_paren - open - 1);
    if (entry.path().filename() == std::to_string(pid)) name = "sim";
    std::istringstream rest(stat.substr(close_paren + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int k = 3; k <= 15 && rest >> field; ++k) {  // field 3 is the state
      if (k == 14) utime = std::stod(field);
      if (k == 15) stime = std::stod(field);
    }
    out[name] += (utime + stime) / hz;
  }
  return out;
}

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// The server's exact step-time quantiles (bustle_step_duration_recent_seconds:
// every step of this run, up to 8192), in ms, and that summary's "sum" (ms)
// and "count"; "late" (bustle_steps_late_total) and "over_100ms" (steps of
// the bustle_step_duration_seconds histogram above its 0.1 s bound); empty on
// failure.
std::map<std::string, double> step_quantiles_ms(std::uint16_t metrics_port) {
  std::map<std::string, double> out;
  std::string body;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return out;
  const std::string url = "http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics";
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 3000L);
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) return out;
  std::istringstream lines(body);
  std::string line;
  const std::string prefix = "bustle_step_duration_recent_seconds{quantile=\"";
  while (std::getline(lines, line)) {
    for (const char* total : {"sum", "count"}) {
      const std::string name = std::string("bustle_step_duration_recent_seconds_") + total + " ";
      if (line.rfind(name, 0) == 0)
        out[total] = std::stod(line.substr(name.size())) * (total[0] == 's' ? 1e3 : 1.0);
    }
    const auto value = [&] { return std::stod(line.substr(line.rfind(' ') + 1)); };
    if (line.rfind("bustle_steps_late_total ", 0) == 0) out["late"] = value();
    if (line.rfind("bustle_frame_entities ", 0) == 0) out["frame_entities"] = value();
    if (line.rfind("bustle_step_duration_seconds_bucket{le=\"+Inf\"}", 0) == 0)
      out["over_100ms"] += value();
    if (line.rfind("bustle_step_duration_seconds_bucket{le=\"0.1\"}", 0) == 0)
      out["over_100ms"] -= value();
    if (line.rfind(prefix, 0) != 0) continue;
    const auto end = line.find('"', prefix.size());
    const auto space = line.rfind(' ');
    if (end == std::string::npos || space == std::string::npos) continue;
    out[line.substr(prefix.size(), end - prefix.size())] = std::stod(line.substr(space + 1)) * 1e3;
  }
  return out;
}

enum class Phase : int { Connecting, Warmup, Measuring, Done };

struct ReaderResult {
  bool subscribed = false;
  std::string error;
  double window_s = 0;
  std::uint64_t window_bytes = 0;
  std::uint64_t deltas = 0;
  std::uint64_t step_gaps = 0;  // Deltas whose step is not the previous + 1 (coalesced)
  std::vector<double> lag_ms;   // raw (receive - sim) offsets in the window, ms
  // Entities this client holds (entered and not left) at the end of the
  // window, and the most Delta.interest_truncated said in the window.
  std::uint64_t held = 0;
  std::uint32_t truncated_max = 0;
};

client::SubscribeParams subscription(const FanoutOptions& o, std::uint32_t index) {
  client::SubscribeParams p;
  p.motion_tolerance_mm = o.motion_tolerance_mm;
  if (district_mode(o)) {
    const District& d = district_city().districts.at(index);
    client::InterestObserver observer;
    observer.x_m = d.x_m;
    observer.y_m = d.y_m;
    observer.radius_m = d.radius_m;
    p.observers = {observer};
    p.budgets = {kDistrictActors, kDistrictInstances, kDistrictMarkers};
  }
  return p;
}

std::uint64_t id_key(const client::EntityId& id) {
  return (static_cast<std::uint64_t>(id.generation) << 32) | id.index;
}

// What a Delta does to the set of entities a client holds.
void apply_to_held(const client::Delta& d, std::set<std::uint64_t>& held) {
  if (d.baseline) held.clear();
  for (const client::EnteredEntity& e : d.entered) held.insert(id_key(e.id));
  for (const client::EntityId& id : d.left) held.erase(id_key(id));
}

void run_reader(const FanoutOptions& o, std::uint16_t port, std::uint32_t index,
                const std::atomic<int>& phase, std::atomic<std::uint32_t>& ready, ReaderResult& r) {
  client::ClientOptions opts;
  opts.port = port;
  opts.client_name = "fanout-" + std::to_string(index);
  client::Client c(opts);
  if (auto w = c.connect(); !w.ok()) {
    r.error = "connect: " + w.message;
    ready.fetch_add(1);
    return;
  }
  if (auto s = c.subscribe(subscription(o, index)); !s.ok()) {
    r.error = "subscribe: " + s.message;
    ready.fetch_add(1);
    return;
  }
  r.subscribed = true;
  ready.fetch_add(1);
  std::uint64_t last_step = 0, bytes0 = 0;
  Clock::time_point t0;
  const Clock::time_point epoch = Clock::now();
  bool measuring = false;
  std::set<std::uint64_t> held;
  while (phase.load() != static_cast<int>(Phase::Done)) {
    auto d = c.next_delta(100ms);
    const bool now_measuring = phase.load() == static_cast<int>(Phase::Measuring);
    if (now_measuring && !measuring) {
      t0 = Clock::now();
      bytes0 = c.connection().bytes_received();
      measuring = true;
    }
    if (d.status == client::ClientStatus::Timeout) continue;
    if (!d.ok()) {
      r.error = std::string(client::to_string(d.status)) + ": " + d.message;
      break;
    }
    apply_to_held(d.value, held);
    if (measuring && now_measuring) {
      r.held = held.size();
      r.truncated_max = std::max(r.truncated_max, d.value.interest_truncated);
      ++r.deltas;
      if (last_step != 0 && d.value.step != last_step + 1) ++r.step_gaps;
      r.lag_ms.push_back(seconds_since(epoch, Clock::now()) * 1e3 -
                         static_cast<double>(d.value.sim_time_us) / 1e3);
    }
    last_step = d.value.step;
  }
  if (measuring) {
    r.window_s = seconds_since(t0, Clock::now());
    r.window_bytes = c.connection().bytes_received() - bytes0;
  }
}

// A client that subscribes and never reads again (4 KiB receive buffer).
// Returns the socket (closed by the caller) or -1.
int open_stalled(const FanoutOptions& o, std::uint16_t port, std::uint32_t index) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  const int rcvbuf = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  client::HelloParams hello;
  hello.client_name = "fanout-stalled-" + std::to_string(index);
  client::Frame frames = client::build_hello(hello);
  const client::Frame subscribe = client::build_subscribe(1, subscription(o, index));
  frames.insert(frames.end(), subscribe.begin(), subscribe.end());
  if (write(fd, frames.data(), frames.size()) != static_cast<ssize_t>(frames.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

struct RunResult {
  std::string label;
  std::uint32_t readers = 0, stalled = 0, failed = 0, stalled_closed = 0;
  std::map<std::string, double> cpu_share;  // per server thread, share of one core
  double cpu_total_share = 0;               // every server thread, share of one core
  double cpu_ms_per_step = 0;               // every server thread, CPU ms per executed step
  double steps_per_s = 0;                   // steps executed in the window per second
  double step_mean_ms = 0;                  // server side, mean over the window's steps
  double bytes_per_client_s = 0;            // median over reading clients
  double lag_p50_ms = 0, lag_p99_ms = 0;
  double step_p50_ms = 0, step_p99_ms = 0, step_max_ms = 0;  // server side, the window's steps
  std::uint64_t step_timed = 0;  // steps those cover (the last executed, at most 1024)
  double run_step_p99_ms = 0;    // server side, every step of the run (start-up too)
  std::uint64_t step_gaps = 0, deltas = 0, dropped_steps = 0;
  std::uint64_t window_steps = 0, window_dropped = 0;
  double window_late = 0, window_over_100ms = 0;  // catch-up steps; steps over the 100 ms period
  double startup_s = 0, populated_s = 0;  // server start to its ports; to every pedestrian spawned
  long populated_rss_kb = 0;              // VmRSS once every pedestrian is spawned
  long rss_kb = 0, hwm_kb = 0;
  std::vector<std::uint64_t> held;  // per reading client, entities held at the end
  std::uint32_t truncated_max = 0;  // the most interest_truncated any client was told
  double frame_entities = -1;       // posed in the server's last frame (metrics; -1: unknown)
  std::string error;
};

// QueryStats over `c`, its step timing over the last `step_time_window`
// steps (0: 1024); nullopt on failure.
std::optional<client::StatsInfo> query_stats(client::Client& c,
                                             std::uint32_t step_time_window = 0) {
  auto r = c.command(client::QueryStatsCmd{step_time_window}, 3s);
  if (!r.ok() || !r.value.stats) return std::nullopt;
  return *r.value.stats;
}

// QueryStats at the end of the window begun at `s0`, its step timing over
// exactly the steps executed since s0 (the last 1024 when more), so
// start-up and warm-up do not count; fills out.step_*.
std::optional<client::StatsInfo> query_window_stats(client::Client& c,
                                                    const std::optional<client::StatsInfo>& s0,
                                                    RunResult& out) {
  auto s1 = query_stats(c);
  if (s0 && s1) {
    const std::uint64_t timed = s1->steps_timed_total - s0->steps_timed_total;
    s1 = query_stats(c, static_cast<std::uint32_t>(std::clamp<std::uint64_t>(timed, 1, 1024)));
  }
  if (s1) {
    out.step_p50_ms = s1->step_time_p50_us / 1e3;
    out.step_p99_ms = s1->step_time_p99_us / 1e3;
    out.step_max_ms = s1->step_time_max_us / 1e3;
    out.step_timed = s1->step_time_window;
  }
  return s1;
}

// The server's step figures of the run (scrape q, at its end) and of the
// window since the scrape m0.
void read_step_metrics(const std::map<std::string, double>& m0,
                       const std::map<std::string, double>& q, RunResult& out) {
  if (!(q.count("0.99") && q.count("sum") && m0.count("sum"))) {
    out.error = "could not read the step quantiles from the metrics endpoint";
    return;
  }
  out.frame_entities = q.count("frame_entities") ? q.at("frame_entities") : -1;
  out.run_step_p99_ms = q.at("0.99");
  const double n = q.at("count") - m0.at("count");
  out.step_mean_ms = n > 0 ? (q.at("sum") - m0.at("sum")) / n : 0.0;
  out.window_late = q.count("late") && m0.count("late") ? q.at("late") - m0.at("late") : -1;
  out.window_over_100ms = q.count("over_100ms") && m0.count("over_100ms")
                              ? q.at("over_100ms") - m0.at("over_100ms")
                              : -1;
}

// Waits (at most 120 s) until the server has spawned every pedestrian of the
// city; false on time-out.
bool wait_populated(const FanoutOptions& o, client::Client& stats) {
  const std::uint32_t want = district_mode(o) ? o.district_pedestrians : o.agents;
  const auto deadline = Clock::now() + 120s;
  while (Clock::now() < deadline) {
    const auto s = query_stats(stats);
    if (s && s->pedestrians >= want) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

// The readers' figures, summed into `out`.
void collect_readers(const std::vector<ReaderResult>& results, RunResult& out) {
  std::vector<double> rates, lags;
  for (const ReaderResult& r : results) {
    if (!r.subscribed || !r.error.empty()) {
      ++out.failed;
      if (out.error.empty()) out.error = r.error;
      continue;
    }
    if (r.window_s > 0) rates.push_back(static_cast<double>(r.window_bytes) / r.window_s);
    out.step_gaps += r.step_gaps;
    out.deltas += r.deltas;
    out.held.push_back(r.held);
    out.truncated_max = std::max(out.truncated_max, r.truncated_max);
    // Each client's offsets relative to its own best case (clock offsets cancel).
    if (!r.lag_ms.empty()) {
      const double best = *std::min_element(r.lag_ms.begin(), r.lag_ms.end());
      for (const double l : r.lag_ms) lags.push_back(l - best);
    }
  }
  out.bytes_per_client_s = percentile(rates, 0.5);
  out.lag_p50_ms = percentile(lags, 0.5);
  out.lag_p99_ms = percentile(lags, 0.99);
}

RunResult run_once(const FanoutOptions& o, const std::string& city, std::uint32_t readers,
                   std::uint32_t stalled, const char* label) {
  RunResult out;
  out.label = label;
  const auto started = Clock::now();
  ServerProcess server(o, city);
  if (!server.error.empty()) {
    out.error = server.error;
    return out;
  }
  out.startup_s = server.listening_s;
  client::ClientOptions stats_opts;
  stats_opts.port = server.port;
  stats_opts.client_name = "fanout-stats";
  client::Client stats(stats_opts);
  if (!stats.connect().ok()) {
    out.error = "the stats client could not connect";
    return out;
  }
  if (!wait_populated(o, stats)) {
    out.error = "the server did not spawn every pedestrian within 120 s";
    return out;
  }
  out.populated_s = seconds_since(started, Clock::now());
  out.populated_rss_kb = proc_status_kb(std::to_string(server.pid), "VmRSS:");
  out.readers = readers;
  out.stalled = stalled;
  std::atomic<int> phase{static_cast<int>(Phase::Connecting)};
  std::atomic<std::uint32_t> ready{0};
  std::vector<ReaderResult> results(readers);
  std::vector<std::thread> threads;
  threads.reserve(readers);
  for (std::uint32_t k = 0; k < readers; ++k) {
    threads.emplace_back(run_reader, std::cref(o), server.port, k, std::cref(phase),
                         std::ref(ready), std::ref(results[k]));
  }
  std::vector<int> stalled_fds;
  for (std::uint32_t k = 0; k < stalled; ++k) {
    const int fd = open_stalled(o, server.port, k);
    if (fd < 0) ++out.failed;
    stalled_fds.push_back(fd);
  }
  const auto connect_deadline = Clock::now() + 30s;
  while (ready.load() < readers && Clock::now() < connect_deadline)
    std::this_thread::sleep_for(20ms);
  phase.store(static_cast<int>(Phase::Warmup));
  std::this_thread::sleep_for(std::chrono::seconds(o.warmup_seconds));
  const auto s0 = query_stats(stats);
  const auto m0 = step_quantiles_ms(server.metrics_port);
  const auto cpu0 = thread_cpu_seconds(server.pid);
  const auto t0 = Clock::now();
  phase.store(static_cast<int>(Phase::Measuring));
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  const auto cpu1 = thread_cpu_seconds(server.pid);
  const double window = seconds_since(t0, Clock::now());
  const auto s1 = query_window_stats(stats, s0, out);
  out.rss_kb = proc_status_kb(std::to_string(server.pid), "VmRSS:");
  out.hwm_kb = proc_status_kb(std::to_string(server.pid), "VmHWM:");
  read_step_metrics(m0, step_quantiles_ms(server.metrics_port), out);
  if (s0 && s1) {
    out.window_steps = s1->step - s0->step;
    out.window_dropped = s1->dropped_steps - s0->dropped_steps;
    out.dropped_steps = s1->dropped_steps;
    // The server's FIN to a stalled client cannot pass its full receive
    // window, so the socket cannot tell; the server's client count can
    // (readers and the stats client are connected).
    const std::uint32_t expected = readers + 1 + stalled - out.failed;
    out.stalled_closed = expected > s1->clients ? expected - s1->clients : 0;
  } else if (out.error.empty()) {
    out.error = "QueryStats failed around the measured window";
  }
  phase.store(static_cast<int>(Phase::Done));
  for (std::thread& t : threads) t.join();
  for (const int fd : stalled_fds) {
    if (fd >= 0) close(fd);
  }
  double total = 0;
  for (const auto& [name, seconds] : cpu1) {
    const auto before = cpu0.find(name);
    const double used = seconds - (before != cpu0.end() ? before->second : 0.0);
    out.cpu_share[name] = used / window;
    total += used;
  }
  out.cpu_total_share = total / window;
  out.steps_per_s = static_cast<double>(out.window_steps) / window;
  out.cpu_ms_per_step =
      out.window_steps > 0 ? total * 1e3 / static_cast<double>(out.window_steps) : 0.0;
  collect_readers(results, out);
  return out;
}

void print_run(const RunResult& r) {
  std::printf("  %-8s readers %u stalled %u (closed by the server: %u) failed %u\n",
              r.label.c_str(), r.readers, r.stalled, r.stalled_closed, r.failed);
  if (!r.error.empty()) std::printf("           first error: %s\n", r.error.c_str());
  std::printf("           server CPU (share of one core):");
  for (const auto& [name, share] : r.cpu_share) {
    std::printf(" %s %.2f%%", name.c_str(), share * 100.0);
  }
  std::printf(" (all %.2f%%, %.2f ms per step)", r.cpu_total_share * 100.0, r.cpu_ms_per_step);
  std::printf(
      "\n           server step p50 %.3f ms p99 %.3f ms max %.3f ms mean %.3f ms over the window's "
      "last %" PRIu64 " steps (p99 %.3f ms over every step of the run, start-up too); %" PRIu64
      " steps in the window (%.2f per s, %" PRIu64 " dropped, %.0f late, %.0f over 100 ms)",
      r.step_p50_ms, r.step_p99_ms, r.step_max_ms, r.step_mean_ms, r.step_timed, r.run_step_p99_ms,
      r.window_steps, r.steps_per_s, r.window_dropped, r.window_late, r.window_over_100ms);
  std::printf(
      "\n           bytes per client per second %.0f; delivery lag p50 %.2f ms p99 %.2f ms; "
      "%" PRIu64 " deltas (%" PRIu64 " coalesced), %" PRIu64
      " dropped steps; RSS %ld KiB (peak %ld KiB)\n",
      r.bytes_per_client_s, r.lag_p50_ms, r.lag_p99_ms, r.deltas, r.step_gaps, r.dropped_steps,
      r.rss_kb, r.hwm_kb);
  std::printf(
      "           start-up: ports after %.2f s, every pedestrian spawned after %.2f s, RSS then "
      "%ld KiB\n",
      r.startup_s, r.populated_s, r.populated_rss_kb);
  if (!r.held.empty()) {
    std::printf("           entities held per client:");
    for (const std::uint64_t h : r.held) std::printf(" %" PRIu64, h);
    std::printf(" (interest_truncated at most %u)\n", r.truncated_max);
  }
  if (r.frame_entities >= 0)
    std::printf("           entities posed in the server's last frame: %.0f\n", r.frame_entities);
}

std::vector<double> runs_of(const std::vector<RunResult>& runs, double (*get)(const RunResult&)) {
  std::vector<double> v;
  for (const RunResult& r : runs) v.push_back(get(r));
  return v;
}

double median_of(const std::vector<RunResult>& runs, double (*get)(const RunResult&)) {
  return percentile(runs_of(runs, get), 0.5);
}

// "median [min-max]" of a figure over runs.
std::string spread(const std::vector<RunResult>& runs, double (*get)(const RunResult&),
                   const char* format = "%.3f") {
  const std::vector<double> v = runs_of(runs, get);
  char m[32], lo[32], hi[32];
  std::snprintf(m, sizeof m, format, percentile(v, 0.5));
  std::snprintf(lo, sizeof lo, format, *std::min_element(v.begin(), v.end()));
  std::snprintf(hi, sizeof hi, format, *std::max_element(v.begin(), v.end()));
  return std::string(m) + " [" + lo + "-" + hi + "]";
}

double thread_share(const RunResult& r, const char* name) {
  return r.cpu_share.count(name) ? r.cpu_share.at(name) : 0.0;
}

// A thread's CPU ms per executed step of the window.
double thread_ms_per_step(const RunResult& r, const char* name) {
  return r.steps_per_s > 0 ? thread_share(r, name) * 1e3 / r.steps_per_s : 0.0;
}

// Every district client of every run must hold about its share: at least
// 0.8 x what its radius covers, at most 1.2 x what 1.1 x its radius covers
// (where received entities may stay). Prints each miss; false if any.
bool check_shares(const FanoutOptions& o, const std::vector<RunResult>& runs) {
  bool ok = true;
  for (const RunResult& r : runs) {
    if (r.held.size() != o.clients) {
      std::printf("INTEREST CHECK FAILED: %s run: %zu of %u clients reported\n", r.label.c_str(),
                  r.held.size(), o.clients);
      ok = false;
    }
    for (std::size_t k = 0; k < r.held.size(); ++k) {
      const District& d = district_city().districts.at(k);
      const double held = static_cast<double>(r.held[k]);
      if (!d.holds_its_share(held)) {
        std::printf(
            "INTEREST CHECK FAILED: client %zu (district at %.0f, %.0f, radius %.1f m) holds %.0f "
            "entities, expected %.0f to %.0f (its share %.0f): interest not applied\n",
            k, d.x_m, d.y_m, d.radius_m, held, d.held_min(), d.held_max(), d.expected);
        ok = false;
      }
    }
  }
  return ok;
}

// Medians [min-max] over the runs of one kind, and its RESULT line.
void print_summary(const char* label, const std::vector<RunResult>& runs) {
  std::printf(
      "%s: server CPU per step %s ms (all threads), %s of one core; sim %s, net %s\n", label,
      spread(runs, [](const RunResult& r) { return r.cpu_ms_per_step; }).c_str(),
      spread(
          runs, [](const RunResult& r) { return r.cpu_total_share * 100; }, "%.1f%%")
          .c_str(),
      spread(
          runs, [](const RunResult& r) { return thread_share(r, "sim") * 100; }, "%.1f%%")
          .c_str(),
      spread(
          runs, [](const RunResult& r) { return thread_share(r, "bustle-net") * 100; }, "%.1f%%")
          .c_str());
  std::printf(
      "%s: CPU ms per step: sim thread %s, network thread %s\n", label,
      spread(runs, [](const RunResult& r) { return thread_ms_per_step(r, "sim"); }).c_str(),
      spread(runs, [](const RunResult& r) { return thread_ms_per_step(r, "bustle-net"); }).c_str());
  std::printf(
      "%s: step mean %s ms in the window, p50 %s ms, p99 %s ms (window); %s steps per s; bytes per "
      "client per s %s\n",
      label, spread(runs, [](const RunResult& r) { return r.step_mean_ms; }).c_str(),
      spread(runs, [](const RunResult& r) { return r.step_p50_ms; }).c_str(),
      spread(runs, [](const RunResult& r) { return r.step_p99_ms; }).c_str(),
      spread(
          runs, [](const RunResult& r) { return r.steps_per_s; }, "%.2f")
          .c_str(),
      spread(
          runs, [](const RunResult& r) { return r.bytes_per_client_s; }, "%.0f")
          .c_str());
}

// Per client: the streaming cost (every thread, clients - idle) and the
// network thread's CPU, each divided by the clients (issue 31's target: at
// most 1 ms per client per step at 20 000 held entities); printed.
struct PerClient {
  std::vector<double> streaming, network;  // per pair / per clients run
  double streaming_median = 0;
};
PerClient per_client_figures(const FanoutOptions& o, const std::vector<double>& cost,
                             const std::vector<RunResult>& clients, double held_median) {
  PerClient pc;
  for (const double c : cost) pc.streaming.push_back(c / o.clients);
  for (const RunResult& r : clients)
    pc.network.push_back(thread_ms_per_step(r, "bustle-net") / o.clients);
  pc.streaming_median = percentile(pc.streaming, 0.5);
  const double median = pc.streaming_median;
  std::printf(
      "per client: %.3f ms of server CPU per step (streaming cost / clients; runs %.3f-%.3f), "
      "network thread %.3f ms; %.0f ns per held entity\n",
      median, *std::min_element(pc.streaming.begin(), pc.streaming.end()),
      *std::max_element(pc.streaming.begin(), pc.streaming.end()), percentile(pc.network, 0.5),
      held_median > 0 ? median * 1e6 / held_median : 0.0);
  return pc;
}

int run_districts(const FanoutOptions& o, const std::string& city) {
  const DistrictCity& dc = district_city();
  std::printf(
      "fanout: district city %u x %u loops (%.0f m of sidewalk), %u pedestrians; %u clients each "
      "subscribed to its own district holding %u; %u s measured after %u s, %u pairs of runs "
      "(no client, %u district clients), server %s\n",
      kGrid, kGrid, dc.sidewalk_m, o.district_pedestrians, o.clients, o.district_share, o.seconds,
      o.warmup_seconds, o.repeat, o.clients, o.server.c_str());
  for (std::size_t k = 0; k < o.clients; ++k) {
    const District& d = dc.districts[k];
    std::printf(
        "  district %zu: centre (%.0f, %.0f) radius %.1f m: %.0f expected (%.0f within "
        "1.1 x radius)\n",
        k, d.x_m, d.y_m, d.radius_m, d.expected, d.expected_hold);
  }
  std::vector<RunResult> idle, clients;
  for (std::uint32_t k = 0; k < o.repeat; ++k) {
    std::printf("pair %u\n", k + 1);
    idle.push_back(run_once(o, city, 0, 0, "idle"));
    print_run(idle.back());
    clients.push_back(run_once(o, city, o.clients, 0, "clients"));
    print_run(clients.back());
  }
  bool ok = true;
  for (const auto* runs : {&idle, &clients}) {
    for (const RunResult& r : *runs) ok = ok && r.error.empty() && r.failed == 0;
  }
  print_summary("idle", idle);
  print_summary("clients", clients);
  const auto cpu = [](const RunResult& r) { return r.cpu_ms_per_step; };
  std::vector<double> cost;
  for (std::size_t k = 0; k < idle.size(); ++k) cost.push_back(cpu(clients[k]) - cpu(idle[k]));
  const double cost_median = percentile(cost, 0.5);
  std::vector<double> held;
  for (const RunResult& r : clients) {
    for (const std::uint64_t h : r.held) held.push_back(static_cast<double>(h));
  }
  std::printf(
      "streaming cost: %+.3f ms of server CPU per step for %u clients (per pair: clients - idle, "
      "median [min-max] %.3f [%.3f-%.3f]); entities held per client median %.0f [%.0f-%.0f]\n",
      cost_median, o.clients, cost_median, *std::min_element(cost.begin(), cost.end()),
      *std::max_element(cost.begin(), cost.end()), percentile(held, 0.5),
      held.empty() ? 0.0 : *std::min_element(held.begin(), held.end()),
      held.empty() ? 0.0 : *std::max_element(held.begin(), held.end()));
  const PerClient pc = per_client_figures(o, cost, clients, percentile(held, 0.5));
  const bool shares = check_shares(o, clients);
  bool schedule = true;
  for (const auto* runs : {&idle, &clients}) {
    for (const RunResult& r : *runs)
      schedule = schedule && r.window_dropped == 0 && r.window_late == 0 &&
                 r.window_over_100ms == 0 && std::abs(r.steps_per_s - 10.0) <= 0.5;
  }
  std::printf(
      "  10 Hz schedule kept in every run's window (no step dropped, late or over 100 ms; 9.5-10.5 "
      "steps per s): %s\n",
      schedule ? "yes" : "NO");
  std::printf(
      "  interest applied (every client holds 0.8 x its share to 1.2 x what 1.1 x its radius "
      "covers): %s\n",
      shares ? "yes" : "NO");
  const auto med = [](const std::vector<RunResult>& runs, double (*get)(const RunResult&)) {
    return median_of(runs, get);
  };
  std::printf(
      "RESULT fanout city=districts pedestrians=%u clients=%u held_per_client=%.0f "
      "idle_cpu_ms_per_step=%.3f clients_cpu_ms_per_step=%.3f streaming_cpu_ms_per_step=%.3f "
      "streaming_cpu_ms_per_client=%.3f clients_cpu_share=%.4f bytes_per_client_s=%.0f "
      "step_p99_ms=%.3f schedule_kept=%d\n",
      o.district_pedestrians, o.clients, percentile(held, 0.5), med(idle, cpu), med(clients, cpu),
      cost_median, pc.streaming_median,
      med(clients, [](const RunResult& r) { return r.cpu_total_share; }),
      med(clients, [](const RunResult& r) { return r.bytes_per_client_s; }),
      med(clients, [](const RunResult& r) { return r.step_p99_ms; }), schedule ? 1 : 0);
  figures()["districts"] = {
      {"pedestrians", o.district_pedestrians},
      {"clients", o.clients},
      {"held_per_client", percentile(held, 0.5)},
      {"frame_entities", runs_of(clients, [](const RunResult& r) { return r.frame_entities; })},
      {"idle_cpu_ms_per_step", runs_of(idle, cpu)},
      {"clients_cpu_ms_per_step", runs_of(clients, cpu)},
      {"streaming_cpu_ms_per_step", cost},
      {"streaming_cpu_ms_per_client", pc.streaming},
      {"network_cpu_ms_per_client", pc.network},
      {"clients_cpu_share", runs_of(clients, [](const RunResult& r) { return r.cpu_total_share; })},
      {"bytes_per_client_s",
       runs_of(clients, [](const RunResult& r) { return r.bytes_per_client_s; })},
      {"step_p99_ms", runs_of(clients, [](const RunResult& r) { return r.step_p99_ms; })},
      {"startup_s", runs_of(clients, [](const RunResult& r) { return r.populated_s; })},
      {"populated_rss_kib",
       runs_of(clients,
               [](const RunResult& r) { return static_cast<double>(r.populated_rss_kb); })},
      {"schedule_kept", schedule},
      {"interest_applied", shares}};
  return ok && shares ? 0 : 1;
}

}  // namespace

int run_fanout(const FanoutOptions& given) {
  FanoutOptions o = given;
  if (o.clients < 1 || o.clients > 1000) {
    std::fprintf(stderr, "bustle-bench: --clients must be in [1, 1000]\n");
    return 2;
  }
  if (o.stalled_percent > 100) {
    std::fprintf(stderr, "bustle-bench: --stalled-percent must be in [0, 100]\n");
    return 2;
  }
  if (access(o.server.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "bustle-bench: --server %s: not an executable (%s)\n", o.server.c_str(),
                 std::strerror(errno));
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  const RunFiles files{o};
  if (district_mode(o)) {
    if (o.district_share == 0)
      o.district_share = std::max<std::uint32_t>(1, o.district_pedestrians / 50);
    district_city() = make_district_city(o.district_pedestrians, o.clients, o.district_share);
    return run_districts(o, write_city(o));
  }
  const std::string city = write_city(o);
  const std::uint32_t stalled = (o.clients * o.stalled_percent + 50) / 100;
  std::printf(
      "fanout: %u clients (%u stalled in the stalled runs), %u pedestrians, motion tolerance %u "
      "mm, "
      "%u s measured after %u s, %u pairs of runs, server %s\n",
      o.clients, stalled, o.agents, o.motion_tolerance_mm, o.seconds, o.warmup_seconds, o.repeat,
      o.server.c_str());
  std::vector<RunResult> plain, with_stalled;
  for (std::uint32_t k = 0; k < o.repeat; ++k) {
    std::printf("pair %u\n", k + 1);
    plain.push_back(run_once(o, city, o.clients, 0, "no-stall"));
    print_run(plain.back());
    with_stalled.push_back(run_once(o, city, o.clients - stalled, stalled, "stalled"));
    print_run(with_stalled.back());
  }
  bool ok = true;
  for (const auto* runs : {&plain, &with_stalled}) {
    const char* label = runs == &plain ? "no-stall" : "stalled";
    const double sim = median_of(*runs, [](const RunResult& r) {
      return r.cpu_share.count("sim") ? r.cpu_share.at("sim") : 0.0;
    });
    const double net = median_of(*runs, [](const RunResult& r) {
      return r.cpu_share.count("bustle-net") ? r.cpu_share.at("bustle-net") : 0.0;
    });
    const double rate = median_of(*runs, [](const RunResult& r) { return r.bytes_per_client_s; });
    const double p99 = median_of(*runs, [](const RunResult& r) { return r.lag_p99_ms; });
    const double rss =
        median_of(*runs, [](const RunResult& r) { return static_cast<double>(r.hwm_kb); });
    const double step99 = median_of(*runs, [](const RunResult& r) { return r.step_p99_ms; });
    for (const RunResult& r : *runs) ok = ok && r.error.empty() && r.failed == 0;
    std::printf(
        "RESULT fanout run=%s clients=%u sim_cpu=%.4f net_cpu=%.4f bytes_per_client_s=%.0f "
        "lag_p99_ms=%.3f step_p99_ms=%.3f peak_rss_kib=%.0f\n",
        label, o.clients, sim, net, rate, p99, step99, rss);
    figures()["runs"][label] = {
        {"clients", o.clients},
        {"sim_cpu", sim},
        {"net_cpu", net},
        {"bytes_per_client_s", rate},
        {"lag_p99_ms", p99},
        {"step_p99_ms", step99},
        {"step_p99_ms_runs", runs_of(*runs, [](const RunResult& r) { return r.step_p99_ms; })},
        {"peak_rss_kib", rss}};
  }
  return ok ? 0 : 1;
}

}  // namespace bustle::bench
