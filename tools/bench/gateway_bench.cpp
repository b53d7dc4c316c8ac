// `bustle-bench gateway` (gateway_bench.hpp).
//
// Processes: K bustle-server --district dK (realtime clock, one sim thread,
// every client entry allowed per step), each dialling the one below it,
// and one bustle-gateway subscribed to all of them; their stderr goes to
// log files in --dir. The bench then waits until the gateway streams the
// populated city, and for each round and client count connects that many
// SDK clients to the gateway (whole city, the server's default budgets: what
// a game client asks for), lets them read for --warmup-seconds, and
// measures for --seconds the CPU (utime + stime from /proc/PID/stat) of the
// gateway and the districts per step the gateway published.
#include "gateway_bench.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "bench_support.hpp"
#include "bustle/citygen/cities.hpp"
#include "bustle/client/client.hpp"
#include "report.hpp"

extern char** environ;

namespace bustle::bench {
// Named, not anonymous: in a unity build this file may share a translation
// unit with the other process benches, whose helpers have the same names.
namespace gateway_bench_detail {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A child process: stdout on a pipe (its first lines name its ports),
// stderr into a log file; SIGTERM, then SIGKILL, when it goes.
struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  std::string out_buf;
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      for (int i = 0; i < 50 && waitpid(pid, nullptr, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(100ms);
      if (kill(pid, 0) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
    if (out_fd >= 0) close(out_fd);
  }
};

std::string spawn(Child& c, std::vector<std::string> args, const std::string& log) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = posix_spawn(&c.pid, args[0].c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  c.out_fd = out[0];
  if (rc != 0) {
    c.pid = -1;
    return "cannot start " + args[0] + ": " + std::strerror(rc);
  }
  return "";
}

// The port at the end of the child's first stdout line containing `marker`
// (0: it ended or said nothing of the kind in time).
std::uint16_t port_line(Child& c, const std::string& marker, Clock::time_point deadline) {
  char chunk[4096];
  for (;;) {
    for (std::size_t nl; (nl = c.out_buf.find('\n')) != std::string::npos;) {
      const std::string line = c.out_buf.substr(0, nl);
      c.out_buf.erase(0, nl + 1);
      if (line.find(marker) != std::string::npos)
        return static_cast<std::uint16_t>(
            std::strtoul(line.c_str() + line.rfind(':') + 1, nullptr, 10));
    }
    if (Clock::now() > deadline) return 0;
    const ssize_t n = read(c.out_fd, chunk, sizeof chunk);
    if (n <= 0) return 0;
    c.out_buf.append(chunk, static_cast<std::size_t>(n));
  }
}

// utime + stime of a process, seconds.
double cpu_seconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream rest(text.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i)
    if (i == 14 || i == 15) ticks += std::strtod(field.c_str(), nullptr);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

struct City {
  std::string path;
  std::vector<std::unique_ptr<Child>> districts;
  std::unique_ptr<Child> gateway;
  std::uint16_t gateway_port = 0;
};

// Starts the districts and the gateway; "" or why not.
std::string start_city(const GatewayBenchOptions& o, City& city) {
  const auto deadline = Clock::now() + std::chrono::seconds(o.start_timeout_s);
  const std::string tag = std::to_string(getpid());
  city.path = o.dir + "/bustle-gateway-bench-" + tag + ".json";
  // Validated and size-checked as bustle-bench writes every city file.
  if (write_scenario_file(citygen::district_city(o.grid, o.districts, o.agents, 0), city.path) == 0)
    return "cannot write the city to " + city.path;
  std::vector<std::uint16_t> links, ports;
  std::string districts_arg;
  for (std::uint32_t d = 0; d < o.districts; ++d) {
    const std::string id = "d" + std::to_string(d);
    std::vector<std::string> args = {o.server,
                                     "--config",
                                     city.path,
                                     "--district",
                                     id,
                                     "--port",
                                     "0",
                                     "--sim-threads",
                                     "1",
                                     "--client-entries-per-step",
                                     "1000000",
                                     "--snapshot-db",
                                     o.dir + "/bustle-gateway-bench-" + tag + "-" + id + ".db"};
    if (d > 0)
      args.insert(args.end(), {"--district-peers", "d" + std::to_string(d - 1) + "=127.0.0.1:" +
                                                       std::to_string(links[d - 1])});
    auto& c = city.districts.emplace_back(std::make_unique<Child>());
    const std::string log = o.dir + "/bustle-gateway-bench-" + tag + "-" + id + ".log";
    if (std::string e = spawn(*c, args, log); !e.empty()) return e;
    links.push_back(port_line(*c, " links on ", deadline));
    ports.push_back(port_line(*c, " listening on ", deadline));
    if (links.back() == 0 || ports.back() == 0) return id + " did not start (see " + log + ")";
    districts_arg += (d == 0 ? "" : ",") + id + "=127.0.0.1:" + std::to_string(ports.back());
  }
  city.gateway = std::make_unique<Child>();
  const std::string log = o.dir + "/bustle-gateway-bench-" + tag + "-gateway.log";
  if (std::string e = spawn(
          *city.gateway,
          {o.gateway, "--config", city.path, "--districts", districts_arg, "--port", "0"}, log);
      !e.empty())
    return e;
  city.gateway_port = port_line(*city.gateway, " listening on ", deadline);
  return city.gateway_port == 0 ? "the gateway did not start (see " + log + ")" : "";
}

// Waits until the gateway streams every district with the city populated.
std::string wait_populated(const GatewayBenchOptions& o, const City& city) {
  client::ClientOptions co;
  co.port = city.gateway_port;
  client::Client c(co);
  if (auto w = c.connect(); !w.ok()) return "gateway: " + w.message;
  const auto deadline = Clock::now() + std::chrono::seconds(o.start_timeout_s);
  while (Clock::now() < deadline) {
    auto r = c.command(client::QueryStatsCmd{}, 5s);
    if (r.ok() && r.value.stats && r.value.stats->pedestrians >= o.agents * 99ull / 100) return "";
    std::this_thread::sleep_for(500ms);
  }
  return "the gateway's city never reached 99 % of --agents";
}

struct Run {
  std::uint32_t clients = 0;
  double gateway_ms_per_step = 0;
  double district_ms_per_step = 0;  // the busiest district
  double bytes_per_client_s = 0;
  double steps_per_s = 0;
};

std::uint64_t gateway_step(std::uint16_t port) {
  client::ClientOptions co;
  co.port = port;
  client::Client c(co);
  if (!c.connect().ok()) return 0;
  auto r = c.command(client::QueryStatsCmd{}, 5s);
  return r.ok() && r.value.stats ? r.value.stats->step : 0;
}

Run measure(const GatewayBenchOptions& o, const City& city, std::uint32_t clients) {
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<bool> measuring{false};
  std::vector<std::thread> readers;
  for (std::uint32_t k = 0; k < clients; ++k) {
    readers.emplace_back([&, k] {
      client::ClientOptions co;
      co.port = city.gateway_port;
      co.client_name = "gateway-bench-" + std::to_string(k);
      client::Client c(co);
      if (!c.connect().ok() || !c.subscribe().ok()) return;
      std::uint64_t start = 0;
      bool counting = false;
      while (!stop.load()) {
        (void)c.next_delta(100ms);
        if (measuring.load() && !counting) {
          start = c.connection().bytes_received();
          counting = true;
        }
      }
      if (counting) bytes.fetch_add(c.connection().bytes_received() - start);
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(o.warmup_seconds));
  const std::uint64_t step0 = gateway_step(city.gateway_port);
  const double g0 = cpu_seconds(city.gateway->pid);
  std::vector<double> d0;
  for (const auto& d : city.districts) d0.push_back(cpu_seconds(d->pid));
  const auto t0 = Clock::now();
  measuring.store(true);
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  const double window_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::uint64_t steps = std::max<std::uint64_t>(1, gateway_step(city.gateway_port) - step0);
  Run r;
  r.clients = clients;
  r.gateway_ms_per_step = (cpu_seconds(city.gateway->pid) - g0) * 1e3 / static_cast<double>(steps);
  for (std::size_t i = 0; i < city.districts.size(); ++i)
    r.district_ms_per_step =
        std::max(r.district_ms_per_step,
                 (cpu_seconds(city.districts[i]->pid) - d0[i]) * 1e3 / static_cast<double>(steps));
  r.steps_per_s = static_cast<double>(steps) / window_s;
  stop.store(true);
  for (std::thread& t : readers) t.join();
  if (clients > 0) r.bytes_per_client_s = static_cast<double>(bytes.load()) / clients / window_s;
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace gateway_bench_detail

int run_gateway_bench(const GatewayBenchOptions& given) {
  using namespace gateway_bench_detail;
  GatewayBenchOptions o = given;
  if (o.clients.empty()) o.clients = {0, 1, 4, 16};
  City city;
  std::string e = start_city(o, city);
  if (e.empty()) e = wait_populated(o, city);
  if (!e.empty()) {
    std::fprintf(stderr, "bustle-bench gateway: %s\n", e.c_str());
    std::remove(city.path.c_str());
    return 1;
  }
  std::printf("%u districts, %u pedestrians, grid %u, 10 Hz; %u s windows after %u s warm-up\n",
              o.districts, o.agents, o.grid, o.seconds, o.warmup_seconds);
  std::printf("%6s %8s %22s %22s %18s %10s\n", "round", "clients", "gateway CPU ms/step",
              "district CPU ms/step", "bytes/client/s", "steps/s");
  std::map<std::uint32_t, std::vector<Run>> runs;
  for (std::uint32_t round = 1; round <= o.repeat; ++round) {
    for (const std::uint32_t c : o.clients) {
      const Run r = measure(o, city, c);
      runs[c].push_back(r);
      std::printf("%6u %8u %22.2f %22.2f %18.0f %10.2f\n", round, c, r.gateway_ms_per_step,
                  r.district_ms_per_step, r.bytes_per_client_s, r.steps_per_s);
      std::fflush(stdout);
    }
  }
  nlohmann::json per = nlohmann::json::array();
  for (const auto& [c, list] : runs) {
    std::vector<double> g, d, b;
    for (const Run& r : list) {
      g.push_back(r.gateway_ms_per_step);
      d.push_back(r.district_ms_per_step);
      b.push_back(r.bytes_per_client_s);
    }
    std::printf(
        "RESULT gateway districts=%u pedestrians=%u clients=%u gateway_cpu_ms_per_step=%.2f "
        "(%.2f..%.2f) district_cpu_ms_per_step=%.2f bytes_per_client_s=%.0f\n",
        o.districts, o.agents, c, median(g), *std::min_element(g.begin(), g.end()),
        *std::max_element(g.begin(), g.end()), median(d), median(b));
    per.push_back({{"clients", c},
                   {"gateway_cpu_ms_per_step", median(g)},
                   {"gateway_cpu_ms_per_step_min", *std::min_element(g.begin(), g.end())},
                   {"gateway_cpu_ms_per_step_max", *std::max_element(g.begin(), g.end())},
                   {"district_cpu_ms_per_step", median(d)},
                   {"bytes_per_client_s", median(b)}});
  }
  figures()["gateway"] = {
      {"districts", o.districts}, {"pedestrians", o.agents}, {"grid", o.grid}, {"runs", per}};
  std::remove(city.path.c_str());
  return 0;
}

}  // namespace bustle::bench
