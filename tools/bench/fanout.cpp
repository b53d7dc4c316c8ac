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
//   - server step time p50/p99/max over every step of the run (the metrics
//     endpoint's exact quantiles, bustle_step_duration_recent_seconds);
//   - server RSS (VmRSS at the end, VmHWM), dropped steps (the realtime
//     clock's catch-up cap), and how many stalled clients the server closed.
// A stalled client is a raw socket with a 4 KiB receive buffer that sends
// Hello and Subscribe and then never reads; the server's per-client soft cap
// (--outbound-max-bytes, 256 KiB by default here so that the cap is reached
// within a run) makes it coalesce, stop reading and finally close it.
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
#include <sstream>
#include <thread>
#include <vector>

#include "bustle/client/client.hpp"
#include "bustle/client/messages.hpp"
#include "bustle/scenario/scenario_loader.hpp"
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

// The city: the embedded default city with `agents` pedestrians.
std::string write_city(const FanoutOptions& o) {
  nlohmann::json city = nlohmann::json::parse(scenario::embedded_default_scenario_text());
  city["id"] = "bustle.bench.fanout." + std::to_string(o.agents);
  city["pedestrians"]["count"] = o.agents;
  city["pedestrians"]["spawn_per_step_max"] = std::max<std::uint32_t>(o.agents, 1);
  std::uint32_t capacity = 1024;
  while (capacity < o.agents + o.agents / 4) capacity *= 2;
  city["entity_capacity"] = std::max<std::uint32_t>(capacity, city.value("entity_capacity", 1024u));
  const std::string path = o.dir + "/bustle-fanout-city.json";
  std::ofstream(path) << city.dump(2);
  return path;
}

// A bustle-server child process; SIGTERM and reaped on destruction.
struct ServerProcess {
  pid_t pid = -1;
  std::uint16_t port = 0;
  std::uint16_t metrics_port = 0;
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
        o.dir + "/bustle-fanout-snapshots.db",
        "--log-level",
        "warn",
        "--metrics-bind",
        "127.0.0.1:0",
        "--client-outbound-max-bytes",
        std::to_string(o.outbound_max_bytes ? o.outbound_max_bytes : 262144)};
    int out[2];
    if (pipe(out) != 0) {
      error = "pipe: " + std::string(std::strerror(errno));
      return;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    const std::string log = o.dir + "/bustle-fanout-server.log";
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
    const auto deadline = Clock::now() + 20s;
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
        break;
      }
      line.clear();
    }
    close(out[0]);
    if (port == 0 || metrics_port == 0) {
      error = "the server did not report its ports within 20 s (see " + log + ")";
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
// every step of this run, up to 8192), in ms; empty on failure.
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
};

client::SubscribeParams subscription(const FanoutOptions& o) {
  client::SubscribeParams p;
  p.motion_tolerance_mm = o.motion_tolerance_mm;
  return p;
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
  if (auto s = c.subscribe(subscription(o)); !s.ok()) {
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
    if (measuring && now_measuring) {
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
  const client::Frame subscribe = client::build_subscribe(1, subscription(o));
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
  double bytes_per_client_s = 0;            // median over reading clients
  double lag_p50_ms = 0, lag_p99_ms = 0;
  double step_p50_ms = 0, step_p99_ms = 0, step_max_ms = 0;  // server side, every step of the run
  std::uint64_t step_gaps = 0, deltas = 0, dropped_steps = 0;
  long rss_kb = 0, hwm_kb = 0;
  std::string error;
};

RunResult run_once(const FanoutOptions& o, const std::string& city, std::uint32_t stalled,
                   const char* label) {
  RunResult out;
  out.label = label;
  ServerProcess server(o, city);
  if (!server.error.empty()) {
    out.error = server.error;
    return out;
  }
  const std::uint32_t readers = o.clients - stalled;
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
  const auto cpu0 = thread_cpu_seconds(server.pid);
  const auto t0 = Clock::now();
  phase.store(static_cast<int>(Phase::Measuring));
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  const auto cpu1 = thread_cpu_seconds(server.pid);
  const double window = seconds_since(t0, Clock::now());
  out.rss_kb = proc_status_kb(std::to_string(server.pid), "VmRSS:");
  out.hwm_kb = proc_status_kb(std::to_string(server.pid), "VmHWM:");
  const auto q = step_quantiles_ms(server.metrics_port);
  if (q.count("0.5") && q.count("0.99") && q.count("1")) {
    out.step_p50_ms = q.at("0.5");
    out.step_p99_ms = q.at("0.99");
    out.step_max_ms = q.at("1");
  } else {
    out.error = "could not read the step quantiles from the metrics endpoint";
  }
  {
    client::ClientOptions opts;
    opts.port = server.port;
    opts.client_name = "fanout-stats";
    client::Client stats(opts);
    if (stats.connect().ok()) {
      if (auto r = stats.command(client::QueryStatsCmd{}, 3s); r.ok() && r.value.stats) {
        out.dropped_steps = r.value.stats->dropped_steps;
        // The server's FIN to a stalled client cannot pass its full receive
        // window, so the socket cannot tell; the server's client count can
        // (readers and this stats client are connected).
        const std::uint32_t expected = readers + 1 + stalled - out.failed;
        out.stalled_closed =
            expected > r.value.stats->clients ? expected - r.value.stats->clients : 0;
      }
    }
  }
  phase.store(static_cast<int>(Phase::Done));
  for (std::thread& t : threads) t.join();
  for (const int fd : stalled_fds) {
    if (fd >= 0) close(fd);
  }
  for (const auto& [name, seconds] : cpu1) {
    const auto before = cpu0.find(name);
    out.cpu_share[name] = (seconds - (before != cpu0.end() ? before->second : 0.0)) / window;
  }
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
    // Each client's offsets relative to its own best case (clock offsets cancel).
    if (!r.lag_ms.empty()) {
      const double best = *std::min_element(r.lag_ms.begin(), r.lag_ms.end());
      for (const double l : r.lag_ms) lags.push_back(l - best);
    }
  }
  out.bytes_per_client_s = percentile(rates, 0.5);
  out.lag_p50_ms = percentile(lags, 0.5);
  out.lag_p99_ms = percentile(lags, 0.99);
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
  std::printf(
      "\n           server step p50 %.3f ms p99 %.3f ms max %.3f ms (every step of the run)",
      r.step_p50_ms, r.step_p99_ms, r.step_max_ms);
  std::printf(
      "\n           bytes per client per second %.0f; delivery lag p50 %.2f ms p99 %.2f ms; "
      "%" PRIu64 " deltas (%" PRIu64 " coalesced), %" PRIu64
      " dropped steps; RSS %ld KiB (peak %ld KiB)\n",
      r.bytes_per_client_s, r.lag_p50_ms, r.lag_p99_ms, r.deltas, r.step_gaps, r.dropped_steps,
      r.rss_kb, r.hwm_kb);
}

std::vector<double> runs_of(const std::vector<RunResult>& runs, double (*get)(const RunResult&)) {
  std::vector<double> v;
  for (const RunResult& r : runs) v.push_back(get(r));
  return v;
}

double median_of(const std::vector<RunResult>& runs, double (*get)(const RunResult&)) {
  return percentile(runs_of(runs, get), 0.5);
}

}  // namespace

int run_fanout(const FanoutOptions& o) {
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
    plain.push_back(run_once(o, city, 0, "no-stall"));
    print_run(plain.back());
    with_stalled.push_back(run_once(o, city, stalled, "stalled"));
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
