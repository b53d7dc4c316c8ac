// Machine, load and JSON line of a bustle-bench run (report.hpp).
#include "report.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#ifndef BUSTLE_VERSION
#define BUSTLE_VERSION "unknown"
#endif

namespace bustle::bench {
namespace {

struct RunInfo {
  std::string mode;
  std::string command;
  nlohmann::json machine;
  std::array<double, 3> load_before{};
};

RunInfo& run_info() {
  static RunInfo info;
  return info;
}

// The first value of the /proc/cpuinfo or /proc/meminfo line starting with `key`.
std::string proc_field(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::size_t begin = line.find_first_not_of(" \t", colon + 1);
    return begin == std::string::npos ? std::string() : line.substr(begin);
  }
  return {};
}

std::string load_text(const std::array<double, 3>& l) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %.2f %.2f", l[0], l[1], l[2]);
  return buf;
}

}  // namespace

std::array<double, 3> load_average() {
  std::array<double, 3> l{};
  std::ifstream in("/proc/loadavg");
  in >> l[0] >> l[1] >> l[2];
  if (!in) l = {};
  return l;
}

nlohmann::json machine_info() {
  utsname u{};
  const bool named = uname(&u) == 0;
  const std::string mem_kb = proc_field("/proc/meminfo", "MemTotal");
  const double mem_gib = std::strtod(mem_kb.c_str(), nullptr) / (1024.0 * 1024.0);
  const std::string model = proc_field("/proc/cpuinfo", "model name");
  return {{"cores", sysconf(_SC_NPROCESSORS_ONLN)},
          {"cpu", model.empty() ? "unknown" : model},
          {"kernel", named ? std::string(u.sysname) + " " + u.release : "unknown"},
          {"memory_gib", static_cast<double>(static_cast<long>(mem_gib * 10.0 + 0.5)) / 10.0}};
}

std::string machine_line(const nlohmann::json& m) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%ld cores, %s, %s, %.1f GiB", m.at("cores").get<long>(),
                m.at("cpu").get<std::string>().c_str(), m.at("kernel").get<std::string>().c_str(),
                m.at("memory_gib").get<double>());
  return buf;
}

nlohmann::json& figures() {
  static nlohmann::json f = nlohmann::json::object();
  return f;
}

void print_header(const std::string& mode, const std::string& command) {
  RunInfo& info = run_info();
  info.mode = mode;
  info.command = command;
  info.machine = machine_info();
  info.load_before = load_average();
  std::printf("%s (version %s)\n", command.c_str(), BUSTLE_VERSION);
  std::printf("machine: %s\n", machine_line(info.machine).c_str());
  std::printf("load average before: %s\n", load_text(info.load_before).c_str());
  std::fflush(stdout);
}

void print_footer(bool json) {
  const RunInfo& info = run_info();
  const std::array<double, 3> after = load_average();
  std::printf("load average after: %s\n", load_text(after).c_str());
  if (json) {
    const nlohmann::json line = {
        {"bench", info.mode},      {"version", BUSTLE_VERSION},       {"command", info.command},
        {"machine", info.machine}, {"load_before", info.load_before}, {"load_after", after},
        {"figures", figures()}};
    std::printf("%s\n", line.dump().c_str());
  }
  std::fflush(stdout);
}

}  // namespace bustle::bench
