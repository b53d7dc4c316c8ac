#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "bustle/cli/cli.hpp"

namespace bustle::cli {
namespace {

bool parse_u32(std::string_view text, std::uint32_t max, std::uint32_t& out) {
  if (text.empty()) return false;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > max) return false;
  out = static_cast<std::uint32_t>(value);
  return true;
}

bool parse_u64(std::string_view text, std::uint64_t& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool parse_i32(std::string_view text, std::int32_t& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

// A finite decimal number (strtod syntax, nothing after it).
bool parse_double(std::string_view text, double& out) {
  if (text.empty() || text.size() > 64) return false;
  const std::string copy(text);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(value)) return false;
  out = value;
  return true;
}

// INDEX:GEN, both unsigned 32-bit.
bool parse_entity(std::string_view text, std::uint32_t& index, std::uint32_t& generation) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  const auto max = std::numeric_limits<std::uint32_t>::max();
  return parse_u32(text.substr(0, colon), max, index) &&
         parse_u32(text.substr(colon + 1), max, generation);
}

bool parse_strategy(std::string_view text, std::uint8_t& out) {
  constexpr std::string_view names[] = {"route_follow", "lane_follow", "parked", "manual"};
  for (std::uint8_t i = 0; i < 4; ++i) {
    if (text == names[i]) {
      out = i;
      return true;
    }
  }
  return false;
}

// Lower case without '_' and '-': "Ready_For-Gameplay" -> "readyforgameplay".
std::string folded(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    if (ch == '_' || ch == '-') continue;
    out.push_back(ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch);
  }
  return out;
}

// Index of `text` in `names`, compared folded (so snake_case and the wire's
// CamelCase both match).
template <std::size_t N>
bool parse_name(std::string_view text, const std::string_view (&names)[N], std::uint8_t& out) {
  const std::string key = folded(text);
  for (std::size_t i = 0; i < N; ++i) {
    if (key == folded(names[i])) {
      out = static_cast<std::uint8_t>(i);
      return true;
    }
  }
  return false;
}

// wire PriorityClass values, in order.
constexpr std::string_view kPriorityNames[] = {"story", "quest", "community", "background"};
// The wire SpawnState values a spawn can be waited for (the non-terminal ones
// and ReadyForGameplay, the successful end), in order.
constexpr std::uint8_t kAttachedState = 4;  // wire SpawnState::Attached
constexpr std::string_view kWaitStateNames[] = {"queued",     "identity_created",
                                                "registered", "representation_requested",
                                                "attached",   "ready_for_gameplay"};

// Options that belong to one command; naming them with another is an error.
std::string_view option_owner(std::string_view option) {
  if (option == "--zone" || option == "--lane" || option == "--route" ||
      option == "--spawn-timeout-ms" || option == "--wait" || option == "--attach") {
    return "spawn";
  }
  if (option == "--growth" || option == "--recycle" || option == "--migration-budget") {
    return "lifecycle";
  }
  if (option == "--observer") return "watch";
  return {};
}

// X,Y as two finite floats.
bool parse_point(std::string_view text, std::pair<float, float>& out) {
  const auto comma = text.find(',');
  if (comma == std::string_view::npos) return false;
  double x = 0.0;
  double y = 0.0;
  if (!parse_double(text.substr(0, comma), x) || !parse_double(text.substr(comma + 1), y)) {
    return false;
  }
  const double fmax = std::numeric_limits<float>::max();
  if (std::fabs(x) > fmax || std::fabs(y) > fmax) return false;
  out = {static_cast<float>(x), static_cast<float>(y)};
  return true;
}

// X,Y or X,Y,R: finite metres, R in (0, 100000] (the server's range).
bool parse_watch_observer(std::string_view text, CliOptions::WatchObserver& out) {
  double v[3] = {0.0, 0.0, 150.0};
  std::size_t n = 0;
  for (;;) {
    if (n == 3) return false;
    const auto comma = text.find(',');
    if (!parse_double(text.substr(0, comma), v[n++])) return false;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (n < 2 || !(v[2] > 0.0 && v[2] <= 100000.0)) return false;
  out = {v[0], v[1], v[2]};
  return true;
}

// A,B,C: lane ids separated by commas, none empty. The server judges the ids
// and their succession (and the count: at most 256).
bool parse_route(std::string_view text, std::vector<std::string>& out) {
  out.clear();
  for (;;) {
    const auto comma = text.find(',');
    const std::string_view id = text.substr(0, comma);
    if (id.empty()) return false;
    out.emplace_back(id);
    if (comma == std::string_view::npos) return true;
    text.remove_prefix(comma + 1);
  }
}

bool takes_name(std::string_view s) {
  return s == "checkpoint" || s == "restore" || s == "save" || s == "load" || s == "delete";
}

bool is_command(std::string_view s) {
  return s == "status" || s == "watch" || s == "pause" || s == "resume" || s == "step" ||
         s == "target" || s == "snapshots" || s == "job" || s == "help" || s == "garages" ||
         s == "signals" || s == "vehicle" || s == "garage-request" || s == "cancel-request" ||
         s == "strategy" || s == "observers" || s == "hour" || s == "time-scale" || s == "zones" ||
         s == "population" || s == "spawn" || s == "cancel-spawn" || s == "spawn-status" ||
         s == "entity" || s == "lifecycle" || takes_name(s);
}

}  // namespace

void print_usage(std::FILE* out) {
  std::fputs(
      "usage: bustle [options] <command> [arguments]\n"
      "\n"
      "Talks to a running bustle-server over its TCP protocol.\n"
      "\n"
      "commands:\n"
      "  status          handshake, query the server's stats and print them\n"
      "                  (exit 0 when the server answers: usable as a health check)\n"
      "  watch [--observer X,Y[,R] ...]\n"
      "                  subscribe and print one line per interval: step, entities in\n"
      "                  the local mirror, entered/moved/left per second (moved: motion\n"
      "                  corrections), entities left out by the budgets, digest;\n"
      "                  with --observer only what is within R metres (default 150)\n"
      "                  of the given points, else the whole city\n"
      "  pause           pause the simulation clock (operator)\n"
      "  resume          resume the simulation clock (operator)\n"
      "  step N          advance N steps; manual clock mode only (operator, N >= 1)\n"
      "  target N        set the pedestrian population target to N (operator)\n"
      "  checkpoint NAME write a checkpoint (the complete state) named NAME (operator)\n"
      "  restore NAME    replace the running world with checkpoint NAME (operator)\n"
      "  save NAME       write a save (persistent facts only) named NAME (operator)\n"
      "  load NAME       replace the running world with save NAME (operator)\n"
      "                  These four start a job and print each state as it arrives:\n"
      "                  checkpoint/save: Copied -> Committed; restore: Queued ->\n"
      "                  Validated -> Applied; load: Queued -> Validated ->\n"
      "                  SnapshotApplied -> ScheduleReconciled -> RepresentationRebuilt.\n"
      "                  Exit 0 when it ends Committed/Applied/RepresentationRebuilt,\n"
      "                  3 when it ends Failed or is rejected (reason printed).\n"
      "  snapshots       list the stored snapshots: name, kind, step, sim time,\n"
      "                  pedestrians, digest, created (UTC)\n"
      "  delete NAME     delete snapshot NAME (operator; exit 3 if there is none)\n"
      "  job ID          print the current state of job ID (exit 3 if unknown)\n"
      "\n"
      "  vehicles:\n"
      "  garages         table of garages: id, queued, dispatched, managed/capacity,\n"
      "                  last dispatch gate, turnarounds, rejected invalid/duplicate/full\n"
      "  signals         table of signals: id, lane, phase, time in phase, cycles\n"
      "  vehicle INDEX:GEN\n"
      "                  every field of one vehicle (exit 3 if it is not a vehicle)\n"
      "  garage-request GARAGE REQUEST_ID PROTOTYPE LANE [--priority P]\n"
      "                  queue a vehicle request at GARAGE; LANE is the garage's\n"
      "                  entrance lane id; P default 10, higher first (operator;\n"
      "                  exit 3 when rejected: InvalidArgument, Duplicate, QueueFull)\n"
      "  cancel-request GARAGE REQUEST_ID\n"
      "                  remove a queued request (operator; exit 3 if not queued)\n"
      "  strategy INDEX:GEN route_follow|lane_follow|parked|manual\n"
      "                  set a vehicle's strategy (operator)\n"
      "  observers [X,Y ...]\n"
      "                  replace the observers that drive simulation tiers (metres,\n"
      "                  at most 64); none clears them (operator)\n"
      "\n"
      "  population:\n"
      "  hour H          set the time of day, 0 <= H < 24 (operator)\n"
      "  time-scale S    game seconds per simulated second, 1..3600 (operator)\n"
      "  zones           table of zones: id, target, active, dormant, pending\n"
      "                  spawn/recycle, deferred by quota, rejected by capacity\n"
      "  population      communities table (base, target, zone, active, dormant),\n"
      "                  residents active/retiring/dormant, lifecycle settings, spawn\n"
      "                  pipeline (live and total per state, deferred), retiring and\n"
      "                  faded counts, despawns by reason, tiers, lane density ledger\n"
      "  lifecycle [--growth N] [--recycle N] [--interval-ms N] [--migration-budget N]\n"
      "                  change the lifecycle settings (operator); the ones not given\n"
      "                  keep their current value (read with a population query first)\n"
      "  spawn [--zone Z] [--lane L] [--route A,B,...]\n"
      "        [--priority story|quest|community|background]\n"
      "        [--spawn-timeout-ms N] [--wait STATE [--attach]]\n"
      "                  request a pedestrian (operator); prints its spawn handle.\n"
      "                  Z: zone id, L: pedestrian lane id (default: any); priority\n"
      "                  default quest; N: how long it may stay queued (default 0:\n"
      "                  the scenario's spawn.timeout_ms). --route: up to 256 lane\n"
      "                  ids, each a pedestrian successor of the one before; it\n"
      "                  starts at the beginning of A (L, if given, must be A; with\n"
      "                  Z, A must be a lane of Z), walks the route, then wanders;\n"
      "                  the server names a bad entry (\"route[1]: ...\", exit 3).\n"
      "                  --wait prints each state until STATE (queued,\n"
      "                  identity_created, registered, representation_requested,\n"
      "                  attached, ready_for_gameplay) or an end: exit 0 at STATE or\n"
      "                  ReadyForGameplay, 3 when it ends Failed, Canceled or TimedOut,\n"
      "                  1 when --timeout-ms passes without a new state.\n"
      "                  ReadyForGameplay needs a client holding an actor to report it;\n"
      "                  --attach makes bustle report it when RepresentationRequested\n"
      "                  arrives\n"
      "  cancel-spawn HANDLE\n"
      "                  cancel a spawn not yet registered (operator; exit 3 if it\n"
      "                  is not live or already registered); prints the id given back\n"
      "  spawn-status HANDLE\n"
      "                  the state of a spawn handle (live or recently ended; exit 3\n"
      "                  if unknown)\n"
      "  entity INDEX:GEN\n"
      "                  every axis of one entity: identity, lifecycle, tier,\n"
      "                  representation, priority/origin, community/zone/work point,\n"
      "                  lane/position, effective distance, spawn, retiring (exit 3\n"
      "                  if it is not alive)\n"
      "\n"
      "  target, garage-request, cancel-request, strategy, observers, hour,\n"
      "  time-scale, lifecycle, spawn and cancel-spawn change the world: the server\n"
      "  answers them when the next step applies them. With a realtime or fast\n"
      "  clock that is within a step and the result is printed. Under the manual\n"
      "  clock (or while paused) there is no next step until someone sends one:\n"
      "  pass --step to send a Step right after the command and print its result;\n"
      "  without it the command is only queued (\"queued\" is printed, exit 0) and\n"
      "  applies at the next step. spawn --wait always waits for the answer: under\n"
      "  the manual clock pass --step, which then also sends one Step at a time (at\n"
      "  most one per step length) until the awaited state arrives.\n"
      "  help            print this text\n"
      "\n"
      "options:\n"
      "  --host ADDR       server address or name (default: BUSTLE_HOST, else 127.0.0.1)\n"
      "  --port N          server port (default: BUSTLE_PORT, else 7777)\n"
      "  --token TOKEN     access token; default: the BUSTLE_TOKEN environment variable\n"
      "  --timeout-ms N    connect, handshake and command timeout, and the longest wait\n"
      "                    between two states of a job or spawn (default 3000)\n"
      "  --count N         watch: stop after N lines (default 0: until interrupted)\n"
      "  --interval-ms N   watch: milliseconds between lines (default 1000);\n"
      "                    lifecycle: the lifecycle interval (the server checks it)\n"
      "  --no-wait         checkpoint/restore/save/load: print the first result and exit\n"
      "                    (0 when accepted) without waiting for the job to end\n"
      "  --priority P      garage-request: dispatch priority (default 10);\n"
      "                    spawn: story, quest, community or background (default quest)\n"
      "  --step            world commands under the manual clock: send one Step after\n"
      "                    the command and wait for the command's result\n"
      "  --zone Z, --lane L, --route A,B,..., --spawn-timeout-ms N, --wait STATE,\n"
      "  --attach          spawn only (see spawn above)\n"
      "  --growth N, --recycle N, --migration-budget N\n"
      "                    lifecycle only: growth and recycle quotas per interval,\n"
      "                    migration budget (the server checks the ranges)\n"
      "  -h, --help        print this text\n"
      "\n"
      "exit codes:\n"
      "  0 success\n"
      "  1 server unreachable, timed out, closed the connection or sent an error\n"
      "  2 usage error\n"
      "  3 the server rejected the command, or a job or spawn failed (reason printed)\n",
      out);
}

ParseResult parse_args(std::span<const std::string_view> args, const char* env_token, const char* env_host,
                       const char* env_port) {
  ParseResult r;
  CliOptions& o = r.options;
  if (env_token != nullptr) o.token = env_token;
  if (env_host != nullptr && *env_host != '\0') o.host = env_host;
  if (env_port != nullptr && *env_port != '\0') {
    std::uint32_t port = 0;
    if (!parse_u32(env_port, std::numeric_limits<std::uint16_t>::max(), port) || port == 0) {
      r.status = ParseStatus::Error;
      r.error = std::string("invalid BUSTLE_PORT ") + env_port + ": expected a port number 1..65535";
      return r;
    }
    o.port = static_cast<std::uint16_t>(port);
  }
  std::vector<std::string_view> positional;
  // Judged once the command is known: --priority and --interval-ms mean
  // different things to different commands; some options belong to one.
  std::optional<std::string_view> priority_text;
  std::optional<std::uint32_t> interval_ms;
  std::vector<std::string_view> scoped;  // options with an owner (option_owner)
  auto error = [&](std::string message) {
    r.status = ParseStatus::Error;
    r.error = std::move(message);
    return r;
  };

  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") {
      r.status = ParseStatus::Help;
      return r;
    }
    if (arg.size() < 2 || arg.substr(0, 2) != "--") {
      positional.push_back(arg);
      continue;
    }
    if (arg == "--no-wait") {
      o.no_wait = true;
      continue;
    }
    if (arg == "--step") {
      o.step_after = true;
      continue;
    }
    if (arg == "--attach") {
      o.attach = true;
      scoped.push_back(arg);
      continue;
    }
    std::string_view name = arg;
    std::string_view value;
    bool has_value = false;
    if (const auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    const bool known = name == "--host" || name == "--port" || name == "--token" ||
                       name == "--timeout-ms" || name == "--count" || name == "--interval-ms" ||
                       name == "--priority" || !option_owner(name).empty();
    if (!known) return error("unknown option " + std::string(name));
    if (!option_owner(name).empty()) scoped.push_back(name);
    if (!has_value) {
      if (i + 1 >= args.size()) return error("option " + std::string(name) + " needs a value");
      value = args[++i];
    }
    const std::string shown = std::string(name) + " " + std::string(value);
    if (name == "--host") {
      if (value.empty()) return error("--host needs a non-empty value");
      o.host = std::string(value);
    } else if (name == "--token") {
      o.token = std::string(value);
    } else if (name == "--port") {
      std::uint32_t port = 0;
      if (!parse_u32(value, std::numeric_limits<std::uint16_t>::max(), port) || port == 0) {
        return error("invalid " + shown + ": expected a port number 1..65535");
      }
      o.port = static_cast<std::uint16_t>(port);
    } else if (name == "--timeout-ms") {
      if (!parse_u32(value, 3'600'000, o.timeout_ms) || o.timeout_ms == 0) {
        return error("invalid " + shown + ": expected 1..3600000");
      }
    } else if (name == "--count") {
      if (!parse_u32(value, std::numeric_limits<std::uint32_t>::max(), o.count)) {
        return error("invalid " + shown + ": expected a non-negative integer");
      }
    } else if (name == "--priority") {
      priority_text = value;
    } else if (name == "--interval-ms") {
      std::uint32_t ms = 0;
      if (!parse_u32(value, 3'600'000, ms)) {
        return error("invalid " + shown + ": expected 10..3600000");
      }
      interval_ms = ms;
    } else if (name == "--zone") {
      o.zone = std::string(value);  // the server judges ids (and names the field)
    } else if (name == "--lane") {
      o.spawn_lane = std::string(value);
    } else if (name == "--route") {
      if (!parse_route(value, o.route)) {
        return error("invalid " + shown +
                     ": expected lane ids separated by commas (e.g. market.loop,x.market.office)");
      }
    } else if (name == "--spawn-timeout-ms") {
      // The server checks the range (at most an hour).
      if (!parse_u32(value, std::numeric_limits<std::uint32_t>::max(), o.spawn_timeout_ms)) {
        return error("invalid " + shown +
                     ": expected milliseconds (0: the scenario's spawn.timeout_ms)");
      }
    } else if (name == "--observer") {
      CliOptions::WatchObserver w;
      if (!parse_watch_observer(value, w)) {
        return error("invalid " + shown + ": expected X,Y or X,Y,RADIUS in metres (radius in (0, 100000])");
      }
      o.watch_observers.push_back(w);
    } else if (name == "--wait") {
      std::uint8_t state = 0;
      if (!parse_name(value, kWaitStateNames, state)) {
        return error("invalid " + shown +
                     ": expected queued, identity_created, registered, "
                     "representation_requested, attached or ready_for_gameplay");
      }
      o.wait_state = state;
    } else {
      // --growth, --recycle, --migration-budget: the server checks the ranges.
      std::uint32_t n = 0;
      if (!parse_u32(value, std::numeric_limits<std::uint32_t>::max(), n)) {
        return error("invalid " + shown + ": expected a non-negative integer");
      }
      auto& field = name == "--growth"    ? o.growth_quota
                    : name == "--recycle" ? o.recycle_quota
                                          : o.migration_budget;
      field = n;
    }
  }

  if (positional.empty()) return error("no command given");
  const std::string_view command = positional[0];
  if (!is_command(command)) return error("unknown command \"" + std::string(command) + "\"");
  o.command = std::string(command);
  if (command == "help") {
    r.status = ParseStatus::Help;
    return r;
  }
  for (const std::string_view option : scoped) {
    const std::string_view owner = option_owner(option);
    if (command != owner) {
      return error("option " + std::string(option) + " is only for " + std::string(owner) +
                   ", not " + std::string(command));
    }
  }
  if (priority_text) {
    const std::string shown = "--priority " + std::string(*priority_text);
    if (command == "spawn") {
      if (!parse_name(*priority_text, kPriorityNames, o.spawn_priority)) {
        return error("invalid " + shown + ": expected story, quest, community or background");
      }
    } else if (!parse_i32(*priority_text, o.priority)) {
      return error("invalid " + shown + ": expected an integer (higher dispatches first)");
    }
  }
  if (interval_ms) {
    if (command == "lifecycle") {
      o.lifecycle_interval_ms = *interval_ms;  // the server checks the range
    } else if (*interval_ms < 10) {
      return error("invalid --interval-ms " + std::to_string(*interval_ms) +
                   ": expected 10..3600000");
    } else {
      o.interval_ms = *interval_ms;
    }
  }
  if (o.attach && !(o.wait_state && *o.wait_state >= kAttachedState)) {
    return error("--attach needs --wait attached or --wait ready_for_gameplay");
  }
  if (command == "lifecycle" && !o.growth_quota && !o.recycle_quota && !o.lifecycle_interval_ms &&
      !o.migration_budget) {
    return error(
        "lifecycle needs at least one setting: bustle lifecycle [--growth N] [--recycle N] "
        "[--interval-ms N] [--migration-budget N]");
  }
  if (command == "observers") {
    // Any number of X,Y points; none clears every observer.
    for (std::size_t k = 1; k < positional.size(); ++k) {
      std::pair<float, float> p;
      if (!parse_point(positional[k], p)) {
        return error("invalid observer point \"" + std::string(positional[k]) +
                     "\": expected X,Y in metres (e.g. 25,25)");
      }
      o.observers.push_back(p);
    }
    r.status = ParseStatus::Ok;
    return r;
  }
  struct Shape {
    std::string_view command;
    std::size_t words;       // arguments after the command
    std::string_view usage;  // shown when some are missing
  };
  static constexpr Shape shapes[] = {
      {"vehicle", 1, "vehicle INDEX:GEN"},
      {"garage-request", 4, "garage-request GARAGE REQUEST_ID PROTOTYPE LANE [--priority P]"},
      {"cancel-request", 2, "cancel-request GARAGE REQUEST_ID"},
      {"strategy", 2, "strategy INDEX:GEN route_follow|lane_follow|parked|manual"},
      {"hour", 1, "hour H"},
      {"time-scale", 1, "time-scale S"},
      {"entity", 1, "entity INDEX:GEN"},
      {"cancel-spawn", 1, "cancel-spawn HANDLE"},
      {"spawn-status", 1, "spawn-status HANDLE"},
  };
  for (const Shape& shape : shapes) {
    if (command != shape.command) continue;
    if (positional.size() < shape.words + 1) {
      return error(std::string(command) + " needs " + std::to_string(shape.words) + " argument" +
                   (shape.words == 1 ? "" : "s") + ": bustle " + std::string(shape.usage));
    }
    if (positional.size() > shape.words + 1) {
      return error("unexpected argument \"" + std::string(positional[shape.words + 1]) +
                   "\" after " + std::string(command));
    }
    if (command == "vehicle" || command == "strategy" || command == "entity") {
      if (!parse_entity(positional[1], o.entity_index, o.entity_generation)) {
        return error("invalid entity id \"" + std::string(positional[1]) +
                     "\": expected INDEX:GEN (e.g. 12:1)");
      }
      if (command == "strategy" && !parse_strategy(positional[2], o.strategy)) {
        return error("invalid strategy \"" + std::string(positional[2]) +
                     "\": expected route_follow, lane_follow, parked or manual");
      }
    } else if (command == "garage-request") {
      // The server judges the strings (and names the field it refuses).
      o.garage = std::string(positional[1]);
      o.request_id = std::string(positional[2]);
      o.prototype = std::string(positional[3]);
      o.lane = std::string(positional[4]);
    } else if (command == "cancel-request") {
      o.garage = std::string(positional[1]);
      o.request_id = std::string(positional[2]);
    } else if (command == "cancel-spawn" || command == "spawn-status") {
      if (!parse_u64(positional[1], o.handle) || o.handle == 0) {
        return error("invalid spawn handle \"" + std::string(positional[1]) +
                     "\": expected the number spawn printed (1 or more)");
      }
    } else if (command == "hour") {
      // The server checks the range [0, 24).
      if (!parse_double(positional[1], o.hour)) {
        return error("invalid hour \"" + std::string(positional[1]) +
                     "\": expected a number of hours, e.g. 12 or 7.5");
      }
    } else if (command == "time-scale") {
      // The server checks the range 1..3600.
      if (!parse_u32(positional[1], std::numeric_limits<std::uint32_t>::max(), o.time_scale)) {
        return error("invalid time scale \"" + std::string(positional[1]) +
                     "\": expected a whole number of game seconds per second");
      }
    }
    r.status = ParseStatus::Ok;
    return r;
  }

  const bool takes_number = command == "step" || command == "target";
  const bool named = takes_name(command);
  const bool takes_id = command == "job";
  const std::size_t expected = takes_number || named || takes_id ? 2 : 1;
  if (positional.size() < expected) {
    if (named) {
      return error(std::string(command) + " needs a snapshot name: bustle " + std::string(command) +
                   " NAME");
    }
    if (takes_id) return error("job needs a job id: bustle job ID");
    return error(std::string(command) + " needs a number: bustle " + std::string(command) + " N");
  }
  if (positional.size() > expected) {
    return error("unexpected argument \"" + std::string(positional[expected]) + "\" after " +
                 std::string(command));
  }
  if (takes_number) {
    if (!parse_u32(positional[1], std::numeric_limits<std::uint32_t>::max(), o.argument)) {
      return error("invalid number \"" + std::string(positional[1]) + "\" for " +
                   std::string(command));
    }
    if (command == "step" && o.argument == 0) return error("step needs N >= 1");
  }
  if (named) {
    // The server judges the name (and names the rule it breaks).
    o.name = std::string(positional[1]);
  }
  if (takes_id && !parse_u64(positional[1], o.job_id)) {
    return error("invalid job id \"" + std::string(positional[1]) + "\"");
  }
  r.status = ParseStatus::Ok;
  return r;
}

}  // namespace bustle::cli
