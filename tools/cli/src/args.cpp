// bustle's command line, declared with CLI11: the global options, then one
// subcommand per command with its operands and options. Values are checked
// as they are parsed (bustle/args/checks.hpp); what CLI11 cannot know (an
// option that belongs to another command, a missing operand) is worded here.
#include <CLI/CLI.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "bustle/args/checks.hpp"
#include "bustle/cli/cli.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::cli {
namespace {

using args::expected;
using args::storing;
using args::whole;
constexpr auto kU32Max = std::numeric_limits<std::uint32_t>::max();
constexpr auto kU64Max = std::numeric_limits<std::uint64_t>::max();

// Lower case without '_' and '-': "Ready_For-Gameplay" -> "readyforgameplay".
std::string folded(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    if (ch == '_' || ch == '-') continue;
    out.push_back(ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch);
  }
  return out;
}

// One of `names` (compared folded, so snake_case and the wire's CamelCase
// both match), stored as its index.
template <class T>
CLI::Validator one_of(T& out, std::vector<std::string> names, std::string listed) {
  return storing([&out, names = std::move(names), listed](const std::string& text) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (folded(text) != folded(names[i])) continue;
      out = static_cast<T>(i);
      return std::string();
    }
    return expected(listed, text);
  });
}

// INDEX:GEN, both unsigned 32-bit.
CLI::Validator entity_id(CliOptions& o) {
  return storing([&o](const std::string& text) {
    const auto colon = text.find(':');
    const std::string_view t = text;
    if (colon != std::string::npos &&
        args::parse_whole<std::uint32_t>(t.substr(0, colon), 0, kU32Max, o.entity_index) &&
        args::parse_whole<std::uint32_t>(t.substr(colon + 1), 0, kU32Max, o.entity_generation)) {
      return std::string();
    }
    return expected("an entity id INDEX:GEN (e.g. 12:1)", text);
  });
}

// Up to `most` finite numbers separated by commas, at least `least`.
bool parse_numbers(std::string_view text, std::size_t least, std::size_t most,
                   std::vector<double>& out) {
  out.clear();
  for (;;) {
    const auto comma = text.find(',');
    double v = 0.0;
    if (out.size() == most || !args::parse_finite(text.substr(0, comma), v)) return false;
    out.push_back(v);
    if (comma == std::string_view::npos) return out.size() >= least;
    text.remove_prefix(comma + 1);
  }
}

// observers X,Y (float metres), appended.
CLI::Validator point(CliOptions& o) {
  return storing([&o](const std::string& text) {
    std::vector<double> v;
    const double fmax = std::numeric_limits<float>::max();
    if (!parse_numbers(text, 2, 2, v) || std::fabs(v[0]) > fmax || std::fabs(v[1]) > fmax) {
      return expected("an observer point X,Y in metres (e.g. 25,25)", text);
    }
    o.observers.emplace_back(static_cast<float>(v[0]), static_cast<float>(v[1]));
    return std::string();
  });
}

// watch --observer X,Y[,R]: R in (0, 100000] (the server's range), appended.
CLI::Validator watch_observer(CliOptions& o) {
  return storing([&o](const std::string& text) {
    std::vector<double> v;
    if (!parse_numbers(text, 2, 3, v) || (v.size() == 3 && !(v[2] > 0.0 && v[2] <= 100000.0))) {
      return expected("X,Y or X,Y,RADIUS in metres (radius in (0, 100000])", text);
    }
    o.watch_observers.push_back({v[0], v[1], v.size() == 3 ? v[2] : 150.0});
    return std::string();
  });
}

// A,B,C: lane ids, none empty. The server judges the ids, their succession
// and their number (at most 256).
CLI::Validator route(CliOptions& o) {
  return storing([&o](const std::string& text) {
    o.route.clear();
    for (std::string_view rest = text;;) {
      const auto comma = rest.find(',');
      if (rest.substr(0, comma).empty()) {
        return expected("lane ids separated by commas (e.g. market.loop,x.market.office)", text);
      }
      o.route.emplace_back(rest.substr(0, comma));
      if (comma == std::string_view::npos) return std::string();
      rest.remove_prefix(comma + 1);
    }
  });
}

CLI::Validator hour(double& out) {
  return storing([&out](const std::string& text) {
    // The server checks the range [0, 24).
    return args::parse_finite(text, out) ? "" : expected("a number of hours, e.g. 12 or 7.5", text);
  });
}

// The wire SpawnState values a spawn can be waited for, in order: the
// non-terminal ones and ReadyForGameplay (the successful end).
const std::vector<std::string> kWaitStates = {"queued",     "identity_created",
                                              "registered", "representation_requested",
                                              "attached",   "ready_for_gameplay"};
constexpr std::uint8_t kAttachedState = 4;  // wire SpawnState::Attached

// The command line being declared: `o` receives every value.
struct Declared {
  explicit Declared(CliOptions& options) : o(options) {}
  CliOptions& o;
  CLI::App app{"Talks to a running bustle-server over its TCP protocol.", "bustle"};
  // What each command's operands are called in "needs" errors.
  std::map<std::string, std::string> needs;
  std::uint8_t wait_state = 0;  // spawn --wait, when `wait` was given
  CLI::Option* wait = nullptr;
  std::vector<std::string> points;  // observers POINTS (stored by their check)

  CLI::App* command(const std::string& name, const std::string& summary) {
    CLI::App* sub = app.add_subcommand(name, summary);
    sub->allow_extras();  // worded by check_extras
    sub->parse_complete_callback([this, sub] { o.command = sub->get_name(); });
    return sub;
  }
  CLI::Option* operand(CLI::App* sub, const std::string& name, CLI::Validator check,
                       const std::string& what) {
    needs[sub->get_name() + " " + name] = what;
    return sub->add_option(name, CLI::callback_t{}, what)->required()->check(std::move(check));
  }
  void step_flag(CLI::App* sub) {
    sub->add_flag("--step", o.step_after,
                  "under the manual clock: send one Step after the command and wait for its "
                  "result (without it the command is only queued)");
  }
  void name_operand(CLI::App* sub) {
    operand(sub, "NAME", args::non_empty(o.name, "a snapshot name"), "a snapshot name");
  }

  void declare() {
    global();
    stream_and_clock();
    snapshots();
    vehicles();
    population();
    spawn();
    help();
  }
  void global();
  void help();
  void stream_and_clock();
  void snapshots();
  void vehicles();
  void population();
  void spawn();
};

void Declared::global() {
  app.footer(
      "World commands (target, garage-request, cancel-request, strategy, observers, hour,\n"
      "time-scale, mask, prevention, kill, close-lane, open-lane, lifecycle, spawn,\n"
      "cancel-spawn) are answered when the next step applies them: at once under a\n"
      "realtime or fast clock. Under the manual clock (or while paused) pass --step to\n"
      "send a Step right after the command; without it the command is only queued\n"
      "(\"queued\" is printed, exit 0).\n"
      "\n"
      "--json: every command prints JSON instead of text: one object (watch, the jobs of\n"
      "checkpoint/restore/save/load and spawn --wait: one object per line). Errors stay\n"
      "text on stderr. See docs/cli.md.\n"
      "\n"
      "Environment: BUSTLE_HOST, BUSTLE_PORT, BUSTLE_TOKEN give the defaults of --host,\n"
      "--port, --token (flags win; an empty variable counts as unset).\n"
      "\n"
      "exit codes:\n"
      "  0 success\n"
      "  1 server unreachable, timed out, closed the connection or sent an error\n"
      "  2 usage error (bad arguments, bad BUSTLE_* variable)\n"
      "  3 the server rejected the command, or a job or spawn failed (reason printed)\n"
      "\n"
      "'bustle COMMAND --help' shows a command's operands and options.");
  app.fallthrough();             // the global options work after the command too
  app.require_subcommand(0, 1);  // none: worded by check_extras
  app.allow_extras();
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("--version", std::string("bustle ") + BUSTLE_VERSION + " (protocol " +
                                        std::to_string(proto::kProtocolVersion) + ")");
  app.add_option("--host", "server address or name (default: BUSTLE_HOST, else 127.0.0.1)")
      ->type_name("ADDR")
      ->check(args::non_empty(o.host, "a non-empty address"));
  app.add_option("--port", "server port (default: BUSTLE_PORT, else 7777)")
      ->type_name("N")
      ->check(whole<std::uint16_t>(o.port, 1, 65535, "a port number"));
  app.add_option("--token", o.token, "access token (default: BUSTLE_TOKEN)")->type_name("TOKEN");
  app.add_option("--timeout-ms",
                 "connect, handshake and command timeout, and the longest wait between two "
                 "states of a job or spawn (default 3000)")
      ->type_name("N")
      ->check(whole<std::uint32_t>(o.timeout_ms, 1, 3'600'000, "milliseconds"));
  app.add_flag("--json", o.json, "print JSON instead of text (docs/cli.md)");
}

// Declared last: it knows every other command.
void Declared::help() {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  CLI::App* sub = command("help", "print this text (help COMMAND: that command's)");
  sub->add_option("COMMAND", o.help_topic, "a command")->check(CLI::IsMember(names));
}

void Declared::stream_and_clock() {
  command("status",
          "handshake, query the server's stats and print them (exit 0 when the server "
          "answers: usable as a health check)");
  CLI::App* watch =
      command("watch",
              "subscribe and print one line per interval: step, entities in the local mirror, "
              "entered/moved/left per second (moved: motion corrections), entities left out by the "
              "budgets, digest");
  watch->add_option("--count", "stop after N lines (default 0: until interrupted)")
      ->type_name("N")
      ->check(whole<std::uint32_t>(o.count, 0, kU32Max, "a line count"));
  watch->add_option("--interval-ms", "milliseconds between lines (default 1000)")
      ->type_name("N")
      ->check(whole<std::uint32_t>(o.interval_ms, 10, 3'600'000, "milliseconds"));
  watch
      ->add_option("--observer",
                   "only what is within R metres (default 150) of X,Y (repeatable); none: "
                   "the whole city")
      ->type_name("X,Y[,R]")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(watch_observer(o));
  command("pause", "pause the simulation clock (operator)");
  command("resume", "resume the simulation clock (operator)");
  operand(command("step", "advance N steps; manual clock only (operator)"), "N",
          whole<std::uint32_t>(o.argument, 1, kU32Max, "a step count"), "a number");
  CLI::App* target = command("target", "set the pedestrian population target to N (operator)");
  operand(target, "N", whole<std::uint32_t>(o.argument, 0, kU32Max, "a count"), "a number");
  step_flag(target);
}

void Declared::snapshots() {
  const char* jobs =
      "These start a job and print each state as it arrives: checkpoint/save: Copied -> "
      "Committed; restore: Queued -> Validated -> Applied; load: Queued -> Validated -> "
      "SnapshotApplied -> ScheduleReconciled -> RepresentationRebuilt. Exit 0 when it ends "
      "Committed/Applied/RepresentationRebuilt, 3 when it ends Failed or is rejected "
      "(reason printed).";
  const std::pair<const char*, const char*> kinds[] = {
      {"checkpoint", "write a checkpoint (the complete state) named NAME (operator)"},
      {"restore", "replace the running world with checkpoint NAME (operator)"},
      {"save", "write a save (persistent facts only) named NAME (operator)"},
      {"load", "replace the running world with save NAME (operator)"}};
  for (const auto& [name, summary] : kinds) {
    CLI::App* sub = command(name, summary);
    sub->footer(jobs);
    name_operand(sub);
    sub->add_flag("--no-wait", o.no_wait,
                  "print the first result and exit (0 when accepted) without waiting for the "
                  "job to end");
  }
  command("snapshots",
          "list the stored snapshots: name, kind, step, sim time, pedestrians, digest, created "
          "(UTC)");
  name_operand(command("delete", "delete snapshot NAME (operator; exit 3 if there is none)"));
  operand(command("job", "print the current state of job ID (exit 3 if unknown)"), "ID",
          whole<std::uint64_t>(o.job_id, 0, kU64Max, "a job id"), "a job id");
}

void Declared::vehicles() {
  command("garages",
          "table of garages: id, queued, dispatched, managed/capacity, last dispatch gate, "
          "turnarounds, rejected invalid/duplicate/full; then each queued request (ordinal, "
          "priority, prototype) and the dispatched request ids");
  command("signals", "table of signals: id, lane, phase, time in phase, cycles");
  operand(command("vehicle", "every field of one vehicle (exit 3 if it is not a vehicle)"),
          "INDEX:GEN", entity_id(o), "an entity id");
  CLI::App* request =
      command("garage-request",
              "queue a vehicle request at GARAGE; LANE is the garage's entrance lane id (operator; "
              "exit 3 when rejected: InvalidArgument, Duplicate, QueueFull)");
  // The server judges the strings (and names the field it refuses).
  operand(request, "GARAGE", args::non_empty(o.garage, "a garage id"), "a garage id");
  operand(request, "REQUEST_ID", args::non_empty(o.request_id, "a request id"), "a request id");
  operand(request, "PROTOTYPE", args::non_empty(o.prototype, "a prototype"), "a prototype");
  operand(request, "LANE", args::non_empty(o.lane, "a lane id"), "a lane id");
  request->add_option("--priority", "dispatch priority, higher first (default 10)")
      ->type_name("P")
      ->check(whole<std::int32_t>(o.priority, std::numeric_limits<std::int32_t>::min(),
                                  std::numeric_limits<std::int32_t>::max(), "an integer"));
  step_flag(request);
  CLI::App* cancel =
      command("cancel-request", "remove a queued request (operator; exit 3 if not queued)");
  operand(cancel, "GARAGE", args::non_empty(o.garage, "a garage id"), "a garage id");
  operand(cancel, "REQUEST_ID", args::non_empty(o.request_id, "a request id"), "a request id");
  step_flag(cancel);
  CLI::App* strategy = command("strategy", "set a vehicle's strategy (operator)");
  operand(strategy, "INDEX:GEN", entity_id(o), "an entity id");
  operand(strategy, "STRATEGY",
          one_of(o.strategy, {"route_follow", "lane_follow", "parked", "manual"},
                 "route_follow, lane_follow, parked or manual"),
          "route_follow|lane_follow|parked|manual");
  step_flag(strategy);
  CLI::App* observers =
      command("observers",
              "replace the observers that drive simulation tiers (metres, at most 64); none clears "
              "them (operator)");
  observers->add_option("POINTS", points, "observer points X,Y (metres)")->check(point(o));
  observers
      ->add_option_function<std::string>(
          "--follow", [this](const std::string&) { o.follow = true; },
          "follow entity INDEX:GEN (a walking pedestrian or a vehicle) instead of points; when it "
          "leaves, the observer stays at its last position")
      ->type_name("INDEX:GEN")
      ->check(entity_id(o))
      ->excludes(observers->get_option("POINTS"));
  step_flag(observers);
}

void Declared::population() {
  CLI::App* hour_cmd = command("hour", "set the time of day, 0 <= H < 24 (operator)");
  operand(hour_cmd, "H", hour(o.hour), "an hour");
  step_flag(hour_cmd);
  CLI::App* scale = command("time-scale", "game seconds per simulated second, 1..3600 (operator)");
  // The server checks the range 1..3600.
  operand(scale, "S", whole<std::uint32_t>(o.time_scale, 0, kU32Max, "game seconds per second"),
          "a time scale");
  step_flag(scale);
  command("zones",
          "table of zones: id, target, active, dormant, pending spawn/recycle, deferred by "
          "quota, rejected by capacity");
  command("population",
          "communities, residents, lifecycle settings, spawn pipeline, retiring and faded "
          "counts, despawns by reason, tiers, lane density ledger");
  CLI::App* life = command(
      "lifecycle",
      "change the lifecycle settings (operator); the ones not given keep their current value");
  // The server checks the ranges.
  auto setting = [&](const char* flag, std::optional<std::uint32_t>& out, const char* help,
                     std::uint32_t most) {
    life->add_option(flag, CLI::callback_t{}, help)
        ->type_name("N")
        ->check(storing([&out, most](const std::string& t) {
          std::uint32_t n = 0;
          const std::string why = args::store_whole<std::uint32_t>(t, 0, most, n, "an integer");
          if (why.empty()) out = n;
          return why;
        }));
  };
  setting("--growth", o.growth_quota, "growth quota per interval", kU32Max);
  setting("--recycle", o.recycle_quota, "recycle quota per interval", kU32Max);
  setting("--interval-ms", o.lifecycle_interval_ms, "the lifecycle interval", 3'600'000);
  setting("--migration-budget", o.migration_budget, "migration budget per interval", kU32Max);
  step_flag(life);
  CLI::App* cancel =
      command("cancel-spawn",
              "cancel a spawn not yet registered (operator; exit 3 if it is not live or already "
              "registered); prints the id given back");
  operand(cancel, "HANDLE", whole<std::uint64_t>(o.handle, 1, kU64Max, "a spawn handle"),
          "a spawn handle");
  step_flag(cancel);
  operand(command("spawn-status",
                  "the state of a spawn handle (live or recently ended; exit 3 if unknown)"),
          "HANDLE", whole<std::uint64_t>(o.handle, 1, kU64Max, "a spawn handle"), "a spawn handle");
  operand(command("entity",
                  "every axis of one entity: identity, lifecycle, tier, representation, "
                  "priority/origin, community/zone/work point, lane/position, effective "
                  "distance, spawn, retiring (exit 3 if it is not alive)"),
          "INDEX:GEN", entity_id(o), "an entity id");
  CLI::App* mask = command("mask",
                           "hold a walking pedestrian's movement: the admission mask (operator); "
                           "its tier and lifecycle are left as they are");
  operand(mask, "INDEX:GEN", entity_id(o), "an entity id");
  mask->add_flag("--off", o.unmask, "release the pedestrian instead (it moves again)");
  step_flag(mask);
  CLI::App* level = command("prevention",
                            "set the prevention (response) level (operator): raising queues "
                            "response units, lowering cancels and despawns them");
  operand(level, "LEVEL", whole<std::uint32_t>(o.argument, 0, kU32Max, "a level"), "a level");
  step_flag(level);
  CLI::App* kill = command("kill",
                           "a pedestrian death event (operator): a walking, non-resident "
                           "pedestrian becomes a corpse until corpse cleanup removes it");
  operand(kill, "INDEX:GEN", entity_id(o), "an entity id");
  step_flag(kill);
  for (const char* name : {"close-lane", "open-lane"}) {
    const bool close = name[0] == 'c';
    CLI::App* sub = command(name, close ? "close lane LANE or --index N (operator): nobody enters "
                                          "it; who reaches it takes another lane or waits; spawns "
                                          "avoid it"
                                        : "open closed lane LANE or --index N again (operator)");
    // LANE or --index: exactly one (check_combinations).
    CLI::Option* lane = sub->add_option("LANE", CLI::callback_t{}, "a lane id")
                            ->check(args::non_empty(o.lane, "a lane id"));
    sub->add_option("--index", "the lane by index (as QueryPopulation's closed_lane_indices)")
        ->type_name("N")
        ->check(whole<std::uint32_t>(o.lane_index, 0, kU32Max - 1, "a lane index"))
        ->excludes(lane);
    step_flag(sub);
  }
}

void Declared::spawn() {
  CLI::App* sub = command("spawn", "request a pedestrian (operator); prints its spawn handle");
  sub->footer(
      "--route: up to 256 lane ids, each a pedestrian successor of the one before; it starts\n"
      "at the beginning of A (--lane, if given, must be A; with --zone, A must be a lane of\n"
      "the zone), walks the route, then wanders; the server names a bad entry\n"
      "(\"route[1]: ...\", exit 3).\n"
      "--wait prints each state until STATE or an end: exit 0 at STATE or ReadyForGameplay,\n"
      "3 when it ends Failed, Canceled or TimedOut, 1 when --timeout-ms passes without a new\n"
      "state. ReadyForGameplay needs a client holding an actor to report it; --attach makes\n"
      "bustle report it when RepresentationRequested arrives. Under the manual clock pass\n"
      "--step, which then sends one Step at a time (at most one per step length) until the\n"
      "awaited state arrives.");
  // The server judges ids (and names the field).
  sub->add_option("--zone", o.zone, "zone id (default: any)")->type_name("Z");
  sub->add_option("--lane", o.spawn_lane, "pedestrian lane id (default: any)")->type_name("L");
  sub->add_option("--route", "lane ids to walk, in order")->type_name("A,B,...")->check(route(o));
  sub->add_option("--priority", "priority class (default quest)")
      ->type_name("story|quest|community|background")
      ->check(one_of(o.spawn_priority, {"story", "quest", "community", "background"},
                     "story, quest, community or background"));
  sub->add_option("--spawn-timeout-ms",
                  "how long it may stay queued (default 0: the scenario's spawn.timeout_ms; "
                  "the server checks the range)")
      ->type_name("N")
      ->check(whole<std::uint32_t>(o.spawn_timeout_ms, 0, kU32Max, "milliseconds"));
  wait = sub->add_option("--wait", "print each state until STATE")
             ->type_name("STATE")
             ->check(one_of(wait_state, kWaitStates,
                            "queued, identity_created, registered, representation_requested, "
                            "attached or ready_for_gameplay"));
  sub->add_flag("--attach", o.attach,
                "report the actor attached when RepresentationRequested arrives (needs --wait "
                "attached or ready_for_gameplay)");
  step_flag(sub);
}

// "garage-request GARAGE REQUEST_ID PROTOTYPE LANE": the command and its operands.
std::string synopsis(const CLI::App& sub) {
  std::string out = sub.get_name();
  for (const CLI::Option* op : sub.get_options()) {
    if (op->get_positional()) out += " " + op->get_name();
  }
  return out;
}

// The commands that have option `flag`, "a, b or c".
std::string owners(const CLI::App& app, const std::string& flag) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_option_no_throw(flag) != nullptr) names.push_back(sub->get_name());
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return out;
}

// Why the arguments CLI11 left over are wrong ("" when none are left).
std::string check_extras(const CLI::App& app, const CLI::App* sub) {
  const std::vector<std::string> rest = app.remaining(true);
  if (rest.empty()) return {};
  const std::string& first = rest.front();
  if (first.size() < 2 || first[0] != '-') {
    if (sub == nullptr) return "unknown command \"" + first + "\"";
    return "unexpected argument \"" + first + "\" after " + sub->get_name();
  }
  const std::string flag = first.substr(0, first.find('='));
  const std::string owner = owners(app, flag);
  if (owner.empty() || sub == nullptr) return "unknown option " + flag;
  if (sub->get_option_no_throw(flag) != nullptr) {
    return "option " + flag + " belongs to " + sub->get_name() + ": put it after the command";
  }
  return "option " + flag + " is only for " + owner + ", not " + sub->get_name();
}

// CLI11's complaint in bustle's words: which command, which operand.
std::string worded(const Declared& d, const CLI::App* sub, const CLI::ParseError& e) {
  const std::string what = e.what();
  const std::string name = what.substr(0, what.find(':'));
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && sub != nullptr) {
    for (const CLI::Option* op : sub->get_options()) {
      if (!op->get_positional() || op->count() > 0) continue;
      const auto need = d.needs.find(sub->get_name() + " " + op->get_name());
      if (need == d.needs.end()) continue;
      return sub->get_name() + " needs " + need->second + ": bustle " + synopsis(*sub);
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && name.rfind("--", 0) == 0) {
    return "option " + name + " needs a value";
  }
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr && sub != nullptr &&
      name.rfind("-", 0) != 0) {
    return sub->get_name() + " " + what;  // an operand: "step N: expected ..."
  }
  return what;
}

// Rules between options that CLI11 does not express.
std::string check_combinations(const Declared& d) {
  const CliOptions& o = d.o;
  if (o.command == "lifecycle" && !o.growth_quota && !o.recycle_quota && !o.lifecycle_interval_ms &&
      !o.migration_budget) {
    return "lifecycle needs at least one setting: bustle lifecycle [--growth N] [--recycle N] "
           "[--interval-ms N] [--migration-budget N]";
  }
  if ((o.command == "close-lane" || o.command == "open-lane") && o.lane.empty() &&
      o.lane_index == CliOptions::kNoLaneIndex) {
    return o.command + " needs a lane: bustle " + o.command + " LANE | --index N";
  }
  if (o.attach && !(o.wait_state && *o.wait_state >= kAttachedState)) {
    return "--attach needs --wait attached or --wait ready_for_gameplay";
  }
  return {};
}

// BUSTLE_TOKEN, BUSTLE_HOST, BUSTLE_PORT: defaults the flags override.
std::string apply_environment(CliOptions& o, const char* token, const char* host,
                              const char* port) {
  if (token != nullptr) o.token = token;
  if (host != nullptr && *host != '\0') o.host = host;
  if (port == nullptr || *port == '\0') return {};
  const std::string why = args::store_whole<std::uint16_t>(port, 1, 65535, o.port, "a port number");
  return why.empty() ? why : "environment BUSTLE_PORT: " + why;
}

}  // namespace

ParseResult parse_args(std::span<const std::string_view> arguments, const char* env_token,
                       const char* env_host, const char* env_port) {
  ParseResult r;
  auto fail = [&r](std::string why) {
    r.status = ParseStatus::Error;
    r.error = std::move(why);
    return r;
  };
  if (std::string why = apply_environment(r.options, env_token, env_host, env_port); !why.empty()) {
    return fail(why);
  }
  Declared d(r.options);
  d.declare();
  std::vector<std::string> reversed(arguments.rbegin(), arguments.rend());  // CLI11's order
  const std::vector<std::string> given(arguments.begin(), arguments.end());
  if (std::string why = args::flag_given_a_value(d.app, given); !why.empty()) return fail(why);
  const CLI::App* sub = nullptr;
  try {
    d.app.parse(reversed);
    if (const auto chosen = d.app.get_subcommands(); !chosen.empty()) sub = chosen.front();
  } catch (const CLI::CallForHelp&) {
    r.status = ParseStatus::Help;
    r.text = d.app.help();
    return r;
  } catch (const CLI::CallForVersion& e) {
    r.status = ParseStatus::Version;
    r.text = std::string(e.what()) + "\n";
    return r;
  } catch (const CLI::ParseError& e) {
    const auto chosen = d.app.get_subcommands();
    return fail(worded(d, chosen.empty() ? nullptr : chosen.front(), e));
  }
  if (std::string why = check_extras(d.app, sub); !why.empty()) return fail(why);
  if (sub == nullptr) return fail("no command given");
  if (d.wait->count() > 0) r.options.wait_state = d.wait_state;
  if (std::string why = check_combinations(d); !why.empty()) return fail(why);
  if (r.options.command == "help") {
    r.status = ParseStatus::Help;
    const std::string& topic = r.options.help_topic;
    r.text = topic.empty() ? d.app.help() : d.app.get_subcommand(topic)->help("bustle");
    return r;
  }
  r.status = ParseStatus::Ok;
  return r;
}

}  // namespace bustle::cli
