// `bustle-bench district-servers` (issue 34): the district city of
// tools/citygen run by K real bustle-server processes on loopback, in batch
// mode (--steps), linked in neighbour lockstep (docs/districts.md).
//
// For each K: the city is written (bustle-bench districts --write-scenario's
// writer), district d0 started, its links port read from its stdout, d1
// started dialling it, and so on (districts are strips: dK dials d(K-1)
// only); K = 1 is the plain server without --district. The bench reads
// every server's stderr as it comes, with its own steady clock:
//   - "sim threads: ..." (logged once the world is built): the server is
//     ready; lockstep starts when the last one is (T0);
//   - "batch: S steps ... N pedestrians ... digest D": its last step is done;
//   - "district links: waited W s ...; sent B bytes, received R bytes".
// Per district: wall = its batch line - T0; wait = W minus what it waited
// for the later districts to start (T0 - its ready time: a district cannot
// step before its neighbours exist), clamped to [0, wall]; compute = wall -
// wait; efficiency = compute / wall; step mean = wall / S; border bytes per
// step = B / S and R / S; CPU per step = the process's CPU time (wait4) / S.
// With --record, the pedestrians each district received across its borders,
// from its recording's border_arrivals.
//
// Processes beyond the machine's cores share them: the figures then show the
// lockstep's overhead, not a speed-up (the report says so).
#include "district_servers.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "bench_support.hpp"
#include "bustle/persist/sqlite.hpp"
#include "report.hpp"

extern char** environ;

namespace bustle::bench {
// Named, not anonymous: in a unity build this file shares a translation unit
// with fanout.cpp, whose unnamed namespace has helpers of the same names.
namespace district_servers_detail {

double seconds_since(Clock::time_point t0, Clock::time_point t) {
  return std::chrono::duration<double>(t - t0).count();
}

// One bustle-server child: stdout and stderr read through pipes, each stderr
// line copied to its log file; what the bench needs is parsed from the
// lines, timed by the bench's clock when they are read.
struct Server {
  std::string id;  // the district's id ("d0"); "city" for K = 1
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;
  std::string out_buf, err_buf;
  std::FILE* log = nullptr;
  std::string log_path, record_path;
  std::uint16_t links_port = 0;  // "bustle-server district ID links on HOST:PORT"
  double ready_s = -1;           // "sim threads:" read, seconds since the first spawn
  double end_s = -1;             // "batch:" read
  double waited_s = 0;           // "district links: waited W s"
  std::uint64_t sent = 0, received = 0, pedestrians = 0;
  std::string digest;
  int status = -1;   // wait4's
  double cpu_s = 0;  // user + system CPU of the whole process (wait4's rusage)
};

// The servers of one K; any still running when it goes are killed.
struct Servers {
  std::vector<Server> list;
  ~Servers() {
    for (Server& s : list) {
      if (s.pid > 0) {
        kill(s.pid, SIGKILL);
        waitpid(s.pid, nullptr, 0);
      }
      for (const int fd : {s.out_fd, s.err_fd})
        if (fd >= 0) close(fd);
      if (s.log != nullptr) std::fclose(s.log);
    }
  }
};

std::uint64_t number_before(const std::string& line, std::size_t at) {
  const std::size_t begin = line.rfind(' ', at - 1);
  return begin == std::string::npos ? 0 : std::strtoull(line.c_str() + begin + 1, nullptr, 10);
}

void on_stderr_line(Server& s, const std::string& line, double t) {
  if (s.log != nullptr) std::fprintf(s.log, "%s\n", line.c_str());
  if (s.ready_s < 0 && line.find(" sim threads: ") != std::string::npos) s.ready_s = t;
  if (line.find(" batch: ") != std::string::npos) {
    s.end_s = t;
    const std::size_t peds = line.find(" pedestrians, ");
    if (peds != std::string::npos) s.pedestrians = number_before(line, peds);
    const std::size_t digest = line.rfind("digest ");
    if (digest != std::string::npos) s.digest = line.substr(digest + 7);
  }
  const std::size_t waited = line.find("district links: waited ");
  if (waited != std::string::npos) {
    std::uint64_t steps = 0;
    std::sscanf(line.c_str() + waited,
                "district links: waited %lf s for neighbours over %" SCNu64 " steps; sent %" SCNu64
                " bytes, received %" SCNu64 " bytes",
                &s.waited_s, &steps, &s.sent, &s.received);
  }
}

void on_line(Server& s, bool from_stderr, const std::string& line, double t) {
  if (from_stderr) {
    on_stderr_line(s, line, t);
    return;
  }
  const std::size_t colon = line.rfind(':');
  if (line.rfind("bustle-server district ", 0) == 0 &&
      line.find(" links on ") != std::string::npos && colon != std::string::npos)
    s.links_port = static_cast<std::uint16_t>(std::strtoul(line.c_str() + colon + 1, nullptr, 10));
}

// Reads one pipe's ready bytes into whole lines; closes it at its end.
void drain(Server& s, bool from_stderr, double t) {
  int& fd = from_stderr ? s.err_fd : s.out_fd;
  std::string& buf = from_stderr ? s.err_buf : s.out_buf;
  char chunk[8192];
  const ssize_t n = read(fd, chunk, sizeof chunk);
  if (n < 0 && errno == EINTR) return;
  if (n <= 0) {
    close(fd);
    fd = -1;
    if (!buf.empty()) on_line(s, from_stderr, buf, t);
    buf.clear();
    return;
  }
  buf.append(chunk, static_cast<std::size_t>(n));
  for (std::size_t nl; (nl = buf.find('\n')) != std::string::npos; buf.erase(0, nl + 1))
    on_line(s, from_stderr, buf.substr(0, nl), t);
}

// Reads the servers' output until `done()`, every pipe closed (true) or the
// deadline (false).
template <class Done>
bool pump(Servers& servers, Clock::time_point t0, Clock::time_point deadline, Done&& done) {
  while (!done()) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Server*, bool>> whose;
    for (Server& s : servers.list) {
      for (const bool err : {false, true}) {
        const int fd = err ? s.err_fd : s.out_fd;
        if (fd < 0) continue;
        fds.push_back({fd, POLLIN, 0});
        whose.emplace_back(&s, err);
      }
    }
    if (fds.empty()) return true;
    if (Clock::now() > deadline) return false;
    if (poll(fds.data(), fds.size(), 100) <= 0) continue;
    const double t = seconds_since(t0, Clock::now());
    for (std::size_t i = 0; i < fds.size(); ++i)
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0)
        drain(*whose[i].first, whose[i].second, t);
  }
  return true;
}

// Starts `args` with stdout and stderr on pipes (close-on-exec, so that no
// later server holds them open); "" or why not.
std::string spawn(Server& s, std::vector<std::string> args) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return std::string("pipe: ") + std::strerror(errno);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = posix_spawn(&s.pid, args[0].c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(err[1]);
  s.out_fd = out[0];
  s.err_fd = err[0];
  if (rc != 0) {
    s.pid = -1;
    return "cannot start " + args[0] + ": " + std::strerror(rc);
  }
  s.log = std::fopen(s.log_path.c_str(), "w");
  return "";
}

std::vector<std::string> server_args(const DistrictServersOptions& o, const std::string& city,
                                     const Servers& servers, std::uint32_t k) {
  std::vector<std::string> args = {o.server,
                                   "--config",
                                   city,
                                   "--steps",
                                   std::to_string(o.steps),
                                   "--seed",
                                   std::to_string(o.seed),
                                   "--sim-threads",
                                   std::to_string(o.sim_threads),
                                   "--log-level",
                                   "info"};
  if (servers.list.size() > 1) {
    args.insert(args.end(), {"--district", servers.list[k].id});
    if (k > 0)
      args.insert(args.end(), {"--district-peers",
                               servers.list[k - 1].id +
                                   "=127.0.0.1:" + std::to_string(servers.list[k - 1].links_port)});
  }
  if (o.record)
    args.insert(args.end(),
                {"--record", servers.list[k].record_path, "--record-keyframe-steps", "0"});
  return args;
}

// A file of this run in --dir, named by the bench's process id and K.
std::string run_file(const DistrictServersOptions& o, std::uint32_t districts,
                     const std::string& name) {
  return o.dir + "/bustle-district-servers-" + std::to_string(::getpid()) + "-k" +
         std::to_string(districts) + "-" + name;
}

// The last lines of a server's log, for a failure message.
std::string log_tail(const Server& s) {
  std::ifstream in(s.log_path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (std::size_t i = lines.size() > 6 ? lines.size() - 6 : 0; i < lines.size(); ++i)
    out += "\n    | " + lines[i];
  return out;
}

struct DistrictFigures {
  std::string id;
  std::uint64_t pedestrians = 0;  // at the end
  double wall_s = 0, wait_s = 0, start_skew_s = 0, compute_s = 0;
  double step_ms = 0, wait_ms_per_step = 0, efficiency = 1;
  // The server's CPU over its whole life (loading included) per step: below
  // the step's compute share when other processes held the cores.
  double cpu_ms_per_step = 0;
  double sent_per_step = 0, received_per_step = 0;
  std::int64_t crossings_in = -1;   // pedestrians; -1: not recorded
  std::int64_t cars_in = -1;        // vehicles crossing in
  double ghost_rows_per_step = -1;  // other districts' cars read per step
  std::string digest;
};

struct RunFigures {
  std::uint32_t districts = 0, grid = 0, pedestrians = 0, vehicles = 0;
  std::size_t lanes = 0;
  double startup_s = 0;  // first spawn to the last server ready
  double wall_s = 0;     // the last server ready to the last batch line
  double total_s = 0;    // first spawn to every server gone
  std::vector<DistrictFigures> per_district;
  std::string error;
};

// What a district received across its borders (the border_arrivals
// commands of its recording): pedestrians, cars and ghost rows; false when
// the recording cannot be read.
struct BorderCounts {
  std::int64_t pedestrians = 0, vehicles = 0, ghosts = 0;
};
bool border_counts(const std::string& path, BorderCounts& n) {
  persist::Database db;
  if (!persist::Database::open(path, persist::Database::Mode::ReadOnly, db).ok()) return false;
  persist::SqlError err;
  persist::Statement st =
      db.prepare("SELECT args FROM recording_commands WHERE kind = 'border_arrivals'", err);
  if (!err.ok()) return false;
  const auto rows = [](const nlohmann::json& args, const char* key) {
    return args.contains(key) ? static_cast<std::int64_t>(args[key].size()) : 0;
  };
  while (st.step()) {
    const nlohmann::json args = nlohmann::json::parse(st.column_text(0), nullptr, false);
    if (args.is_discarded() || !args.contains("pedestrians")) return false;
    n.pedestrians += rows(args, "pedestrians");
    n.vehicles += rows(args, "vehicles");
    n.ghosts += rows(args, "ghosts");
  }
  return st.error().ok();
}

void compute_figures(const DistrictServersOptions& o, const Servers& servers, RunFigures& r) {
  double t0 = 0, end = 0;
  for (const Server& s : servers.list) t0 = std::max(t0, s.ready_s);
  const double steps = static_cast<double>(o.steps);
  for (const Server& s : servers.list) {
    DistrictFigures d;
    d.id = s.id;
    d.pedestrians = s.pedestrians;
    d.digest = s.digest;
    d.wall_s = s.end_s - t0;
    d.start_skew_s = t0 - s.ready_s;
    d.wait_s = std::clamp(s.waited_s - d.start_skew_s, 0.0, std::max(d.wall_s, 0.0));
    d.compute_s = d.wall_s - d.wait_s;
    d.step_ms = d.wall_s * 1e3 / steps;
    d.wait_ms_per_step = d.wait_s * 1e3 / steps;
    d.cpu_ms_per_step = s.cpu_s * 1e3 / steps;
    d.efficiency = d.wall_s > 0 ? d.compute_s / d.wall_s : 1.0;
    d.sent_per_step = static_cast<double>(s.sent) / steps;
    d.received_per_step = static_cast<double>(s.received) / steps;
    if (BorderCounts n; o.record && border_counts(s.record_path, n)) {
      d.crossings_in = n.pedestrians;
      d.cars_in = n.vehicles;
      d.ghost_rows_per_step = static_cast<double>(n.ghosts) / steps;
    }
    end = std::max(end, s.end_s);
    r.per_district.push_back(d);
  }
  r.startup_s = t0;
  r.wall_s = end - t0;
}

// Starts the servers in district order, each dialling the one before.
bool start_servers(const DistrictServersOptions& o, const std::string& city, Servers& servers,
                   Clock::time_point t0, RunFigures& r) {
  for (std::uint32_t k = 0; k < servers.list.size(); ++k) {
    Server& s = servers.list[k];
    if (const std::string why = spawn(s, server_args(o, city, servers, k)); !why.empty()) {
      r.error = why;
      return false;
    }
    if (servers.list.size() == 1) break;
    const auto deadline = Clock::now() + std::chrono::seconds(o.start_timeout_s);
    const bool in_time = pump(servers, t0, deadline, [&] { return s.links_port != 0; });
    if (s.links_port == 0) {
      r.error = "district " + s.id + " did not print its links port " +
                (in_time ? std::string("before its output ended") : "within the start timeout") +
                " (log " + s.log_path + ")" + log_tail(s);
      return false;
    }
  }
  return true;
}

// Waits for every server; false with r.error when one failed or ran late.
bool finish_servers(const DistrictServersOptions& o, Servers& servers, Clock::time_point t0,
                    RunFigures& r) {
  const auto deadline = Clock::now() + std::chrono::seconds(o.run_timeout_s);
  const bool in_time = pump(servers, t0, deadline, [] { return false; });
  if (!in_time) {
    r.error = "the servers did not finish within " + std::to_string(o.run_timeout_s) + " s";
    return false;
  }
  for (Server& s : servers.list) {
    rusage ru{};
    wait4(s.pid, &s.status, 0, &ru);
    s.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
              static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    s.pid = -1;
  }
  r.total_s = seconds_since(t0, Clock::now());
  for (Server& s : servers.list) {
    if (s.log != nullptr) std::fflush(s.log);
    const bool ok = WIFEXITED(s.status) && WEXITSTATUS(s.status) == 0;
    if (!ok || s.ready_s < 0 || s.end_s < 0) {
      r.error = "server " + s.id + " " +
                (ok ? std::string("exited without its ready and batch lines")
                    : "exited with status " + std::to_string(WEXITSTATUS(s.status))) +
                " (log " + s.log_path + ")" + log_tail(s);
      return false;
    }
  }
  return true;
}

void remove_files(const Servers& servers, const std::string& city) {
  std::error_code ec;
  std::filesystem::remove(city, ec);
  for (const Server& s : servers.list) {
    std::filesystem::remove(s.log_path, ec);
    if (s.record_path.empty()) continue;
    for (const char* suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(s.record_path + suffix, ec);
  }
}

// One run: the city of K districts on K servers.
RunFigures run_once(const DistrictServersOptions& o, std::uint32_t districts) {
  RunFigures r;
  r.districts = districts;
  r.grid = district_servers_grid(o, districts);
  r.pedestrians = o.weak ? o.agents * districts : o.agents;
  r.vehicles = o.weak ? o.vehicles * districts : o.vehicles;
  const core::Scenario city = bench::district_city(r.grid, districts, r.pedestrians, r.vehicles);
  r.lanes = city.lanes.size();
  const std::string city_path = run_file(o, districts, "city.json");
  if (write_scenario_file(city, city_path) == 0) {
    r.error = "cannot write the city " + city_path;
    return r;
  }
  Servers servers;
  for (std::uint32_t k = 0; k < districts; ++k) {
    Server s;
    s.id = districts > 1 ? city.districts[k].id : "city";
    s.log_path = run_file(o, districts, s.id + ".log");
    if (o.record) s.record_path = run_file(o, districts, s.id + ".rec");
    servers.list.push_back(std::move(s));
  }
  const Clock::time_point t0 = Clock::now();
  if (!start_servers(o, city_path, servers, t0, r) || !finish_servers(o, servers, t0, r))
    return r;  // the city and the logs are kept for a look
  compute_figures(o, servers, r);
  remove_files(servers, city_path);
  return r;
}

unsigned cores() {
  return std::max(1u, std::thread::hardware_concurrency());
}

void print_run(const DistrictServersOptions& o, const RunFigures& r) {
  std::uint64_t alive = 0;
  for (const DistrictFigures& d : r.per_district) alive += d.pedestrians;
  std::printf(
      "K = %u: %u x %u grid, %zu lanes, %u pedestrians (%" PRIu64
      " at the end), %u vehicles; servers ready after %.2f s, lockstep %.3f s (%.1f steps per s), "
      "all gone after %.2f s%s\n",
      r.districts, r.grid, r.grid, r.lanes, r.pedestrians, alive, r.vehicles, r.startup_s, r.wall_s,
      r.wall_s > 0 ? static_cast<double>(o.steps) / r.wall_s : 0.0, r.total_s,
      r.districts * o.sim_threads > cores() ? " (oversubscribed: more threads than cores)" : "");
  std::printf(
      "  district  pedestrians   wall s  step ms  wait ms/step  efficiency  CPU ms/step  border "
      "B/step out  in  crossings in  cars in  ghost rows/step\n");
  const auto count = [](std::int64_t n) { return n < 0 ? std::string("-") : std::to_string(n); };
  for (const DistrictFigures& d : r.per_district) {
    char ghosts[32] = "-";
    if (d.ghost_rows_per_step >= 0)
      std::snprintf(ghosts, sizeof ghosts, "%.1f", d.ghost_rows_per_step);
    std::printf("  %-8s  %11" PRIu64
                "  %7.3f  %7.3f  %12.3f  %9.1f%%  %11.3f  %17.0f  %3.0f  %12s  %7s  "
                "%15s\n",
                d.id.c_str(), d.pedestrians, d.wall_s, d.step_ms, d.wait_ms_per_step,
                d.efficiency * 100.0, d.cpu_ms_per_step, d.sent_per_step, d.received_per_step,
                count(d.crossings_in).c_str(), count(d.cars_in).c_str(), ghosts);
  }
}

nlohmann::json run_json(const DistrictServersOptions& o, const RunFigures& r) {
  nlohmann::json per = nlohmann::json::array();
  for (const DistrictFigures& d : r.per_district) {
    per.push_back({{"id", d.id},
                   {"pedestrians", d.pedestrians},
                   {"wall_s", d.wall_s},
                   {"step_ms", d.step_ms},
                   {"wait_ms_per_step", d.wait_ms_per_step},
                   {"start_wait_s", d.start_skew_s},
                   {"efficiency", d.efficiency},
                   {"cpu_ms_per_step", d.cpu_ms_per_step},
                   {"border_bytes_sent_per_step", d.sent_per_step},
                   {"border_bytes_received_per_step", d.received_per_step},
                   {"crossings_in", d.crossings_in},
                   {"vehicle_crossings_in", d.cars_in},
                   {"ghost_rows_per_step", d.ghost_rows_per_step},
                   {"digest", d.digest}});
  }
  return {{"districts", r.districts},
          {"grid", r.grid},
          {"lanes", r.lanes},
          {"pedestrians", r.pedestrians},
          {"vehicles", r.vehicles},
          {"startup_s", r.startup_s},
          {"wall_s", r.wall_s},
          {"steps_per_s", r.wall_s > 0 ? static_cast<double>(o.steps) / r.wall_s : 0.0},
          {"total_s", r.total_s},
          {"oversubscribed", r.districts * o.sim_threads > cores()},
          {"per_district", per}};
}

// "RESULT district-servers ..." for K, against K = 1 when it ran first.
// Returns the pedestrians that crossed a border (-1: not recorded).
std::int64_t print_result(const DistrictServersOptions& o, const RunFigures& r,
                          const RunFigures* one) {
  double step_max = 0, wait_max = 0, efficiency_min = 1, bytes = 0;
  std::int64_t crossings = o.record ? 0 : -1;
  for (const DistrictFigures& d : r.per_district) {
    step_max = std::max(step_max, d.step_ms);
    wait_max = std::max(wait_max, d.wait_ms_per_step);
    efficiency_min = std::min(efficiency_min, d.efficiency);
    bytes += d.sent_per_step;
    if (crossings >= 0) crossings = d.crossings_in < 0 ? -1 : crossings + d.crossings_in;
  }
  // Strong: the speed-up over one server; weak: the scaled efficiency.
  const double against_one = one != nullptr && r.wall_s > 0 ? one->wall_s / r.wall_s : 0.0;
  std::printf(
      "RESULT district-servers scaling=%s districts=%u pedestrians=%u wall_s=%.3f step_ms_max=%.3f "
      "wait_ms_per_step_max=%.3f efficiency_min=%.3f border_bytes_per_step=%.0f crossings=%" PRId64
      " %s=%.3f\n",
      o.weak ? "weak" : "strong", r.districts, r.pedestrians, r.wall_s, step_max, wait_max,
      efficiency_min, bytes, crossings, o.weak ? "weak_efficiency" : "speedup", against_one);
  return crossings;
}

}  // namespace district_servers_detail

std::uint32_t district_servers_grid(const DistrictServersOptions& o, std::uint32_t districts) {
  if (!o.weak) return o.grid;
  const double grown = std::round(o.grid * std::sqrt(static_cast<double>(districts)));
  return std::max(districts, static_cast<std::uint32_t>(grown));
}

int run_district_servers(const DistrictServersOptions& given) {
  using namespace district_servers_detail;
  DistrictServersOptions o = given;
  if (o.districts.empty())
    o.districts =
        o.weak ? std::vector<std::uint32_t>{1, 2, 3, 4} : std::vector<std::uint32_t>{1, 2, 4};
  if (access(o.server.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "bustle-bench: --server %s: not an executable (%s)\n", o.server.c_str(),
                 std::strerror(errno));
    return 2;
  }
  std::printf("district-servers: %s scaling, %u pedestrians %s, %" PRIu64
              " steps in batch mode, --sim-threads %u per server, %u cores here; server %s\n",
              o.weak ? "weak" : "strong", o.agents, o.weak ? "per district" : "in the city",
              o.steps, o.sim_threads, cores(), o.server.c_str());
  std::fflush(stdout);
  nlohmann::json runs = nlohmann::json::array();
  std::vector<RunFigures> done;
  for (const std::uint32_t k : o.districts) {
    done.push_back(run_once(o, k));
    const RunFigures& r = done.back();
    if (!r.error.empty()) {
      std::printf("K = %u: FAILED: %s\n", k, r.error.c_str());
      return 1;
    }
    print_run(o, r);
    const std::int64_t crossed =
        print_result(o, r, done.front().districts == 1 ? &done.front() : nullptr);
    runs.push_back(run_json(o, r));
    std::fflush(stdout);
    if (k > 1 && crossed == 0) {
      std::printf("DISTRICT CHECK FAILED: K = %u: no pedestrian crossed a border\n", k);
      return 1;
    }
  }
  figures()["scaling"] = o.weak ? "weak" : "strong";
  figures()["steps"] = o.steps;
  figures()["agents"] = o.agents;
  figures()["vehicles"] = o.vehicles;
  figures()["sim_threads"] = o.sim_threads;
  figures()["cores"] = cores();
  figures()["runs"] = runs;
  return 0;
}

}  // namespace bustle::bench
