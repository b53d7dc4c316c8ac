// bustle-replay's command line (options.hpp): verify, diff and serve with
// their flags, parsed with CLI11, every value checked as it is parsed.
#include "bustle/replay/options.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <system_error>

#include "bustle/args/checks.hpp"

#ifndef BUSTLE_VERSION
#define BUSTLE_VERSION "unknown"
#endif

namespace bustle::replay {
namespace {

bool parse_u64(const std::string& text, std::uint64_t& out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && p == end && !text.empty();
}

bool parse_rate(const std::string& text, double& out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && p == end && std::isfinite(out) && out > 0.0 && out <= 1e6;
}

// Validators return "" when the value is good, else the message CLI11 prints
// after the option's name ("--port: expected 0..65535, got 'x'").
std::function<std::string(const std::string&)> u64_in(std::uint64_t lo, std::uint64_t hi,
                                                      std::string what) {
  return [lo, hi, what](const std::string& v) -> std::string {
    std::uint64_t n = 0;
    if (parse_u64(v, n) && n >= lo && n <= hi) return "";
    return "expected " + what + ", got '" + v + "'";
  };
}

std::function<std::string(const std::string&)> one_of(std::vector<std::string> allowed) {
  return [allowed](const std::string& v) -> std::string {
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return "";
    std::string list;
    for (std::size_t k = 0; k < allowed.size(); ++k)
      list += (k == 0 ? "" : k + 1 == allowed.size() ? " or " : ", ") + allowed[k];
    return "expected " + list + ", got '" + v + "'";
  };
}

constexpr const char* kSynopsis =
    "usage: bustle-replay verify FILE [--from-step K] [--to-step K2] [--check-invariants]\n"
    "                            [--jobs N] [--json] [--progress auto|always|never]\n"
    "       bustle-replay serve FILE [--port P] [--bind ADDR] [--token T]\n"
    "                            [--rate HZ | --clock fast|realtime] [--from-step K] [--loop]\n"
    "                            [--log-level L]\n"
    "       bustle-replay diff A B [--json] [--limit N]\n"
    "       bustle-replay --version | --help | COMMAND --help";

constexpr const char* kFooter =
    "verify  re-simulates the recording headless, as fast as possible, comparing the\n"
    "        digest after every tick with the recorded one, and the state at every\n"
    "        periodic keyframe with the keyframe's stored digest. It starts at the\n"
    "        latest keyframe at or before the first tick whose step is >= K (default:\n"
    "        the initial keyframe) and ends with the first tick whose step is >= K2\n"
    "        (default: the last tick). Keyframe-to-keyframe segments run on --jobs\n"
    "        threads (default: one per core); the first divergence reported is the\n"
    "        earliest, whatever the number of jobs.\n"
    "        exit 0: 'OK verified N ticks ...'; exit 1: 'DIVERGED at tick T step S: ...'\n"
    "        (the first diverging tick or keyframe); exit 2: the file cannot be read\n"
    "        or replayed. --check-invariants also checks every core invariant after\n"
    "        every tick; exit 3: 'INVARIANT BROKEN at tick T step S: <invariant>'.\n"
    "serve   re-simulates the recording and streams it like a live bustle-server\n"
    "        (default 127.0.0.1:7777, paced at the recorded rate; --rate HZ paces at HZ,\n"
    "        --clock fast steps back to back). Clients may query stats and pause or\n"
    "        resume (operator role); every other command is rejected: the replay is\n"
    "        read-only. At the end it keeps serving the last frame, or with --loop\n"
    "        starts again. Digests are verified while serving; a divergence is logged.\n"
    "        SIGINT/SIGTERM stop it (exit 0).\n"
    "diff    finds the first tick where two recordings' steps or digests differ,\n"
    "        replays both to it and reports what differs there: that tick's commands,\n"
    "        clocks and counters, entities per axis, queues. exit 0: no difference;\n"
    "        exit 1: the report; exit 2: a file cannot be read or replayed.\n"
    "exit codes: 0 ok, 1 diverged / differ, 2 usage or file error, 3 invariant broken.";

constexpr const char* kExitCodes =
    "exit codes: 0 ok, 1 diverged / differ, 2 usage or file error, 3 invariant broken\n"
    "(bustle-replay --help describes each command).";

struct Cli {
  CLI::App app{kSynopsis, "bustle-replay"};
  CLI::App* verify = nullptr;
  CLI::App* serve = nullptr;
  CLI::App* diff = nullptr;
  // Raw values, converted after a successful parse (the validators ran).
  std::string from_step, to_step, port, rate, clock, jobs, progress = "auto", limit;
  std::string file, file_a, file_b;
  bool check_invariants = false, json = false, loop = false;
  std::string bind_address = "127.0.0.1", token, log_level = "info";

  Cli() {
    app.footer(kFooter);
    app.set_version_flag("--version", std::string("bustle-replay ") + BUSTLE_VERSION);
    app.require_subcommand(1);
    app.get_formatter()->column_width(30);

    verify = app.add_subcommand("verify", "re-simulate a recording and compare every digest");
    verify->footer(kExitCodes);
    verify->add_option("FILE", file, "the recording")->required();
    add_step(*verify, "--from-step", from_step,
             "start at the keyframe before the first tick whose step is >= K");
    add_step(*verify, "--to-step", to_step, "stop after the first tick whose step is >= K");
    verify->add_flag("--check-invariants", check_invariants,
                     "also check every core invariant after every tick (exit 3)");
    verify->add_option("--jobs,-j", jobs, "segments replayed at once (default: one per core)")
        ->type_name("N")
        ->check(u64_in(1, 256, "a number of jobs in 1..256"));
    verify->add_flag("--json", json, "print one JSON object with the verdict on stdout");
    verify
        ->add_option("--progress", progress,
                     "progress line on stderr (default auto: only on a terminal)")
        ->type_name("auto|always|never")
        ->check(one_of({"auto", "always", "never"}));

    serve = app.add_subcommand("serve", "stream a recording to clients like a live server");
    serve->footer(kExitCodes);
    serve->add_option("FILE", file, "the recording")->required();
    serve->add_option("--port", port, "TCP port (0 = ephemeral; default 7777)")
        ->type_name("P")
        ->check(u64_in(0, 65535, "0..65535"));
    serve->add_option("--bind", bind_address, "address to listen on (default 127.0.0.1)")
        ->type_name("ADDR");
    serve->add_option("--token", token, "operator token (default: none)")->type_name("T");
    serve->add_option("--rate", rate, "pace at HZ steps per second")
        ->type_name("HZ")
        ->check([](const std::string& v) -> std::string {
          double hz = 0.0;
          return parse_rate(v, hz) ? "" : "expected a rate in (0, 1000000] Hz, got '" + v + "'";
        });
    serve->add_option("--clock", clock, "fast or realtime (default realtime)")
        ->type_name("fast|realtime")
        ->check(one_of({"fast", "realtime"}));
    add_step(*serve, "--from-step", from_step,
             "start at the keyframe before the first tick whose step is >= K");
    serve->add_flag("--loop", loop, "start again at the end");
    serve->add_option("--log-level", log_level, "log level (default info)")
        ->type_name("L")
        ->check(one_of({"trace", "debug", "info", "warn", "error", "critical", "off"}));

    diff =
        app.add_subcommand("diff", "report the first tick where two recordings differ, and what");
    diff->footer(kExitCodes);
    diff->add_option("A", file_a, "the first recording")->required();
    diff->add_option("B", file_b, "the second recording")->required();
    diff->add_flag("--json", json, "print one JSON object on stdout");
    diff->add_option("--limit", limit, "differing entities listed (default 20; all are counted)")
        ->type_name("N")
        ->check(u64_in(0, 1'000'000, "0..1000000"));
  }

  static void add_step(CLI::App& sub, const char* name, std::string& out, const char* what) {
    sub.add_option(name, out, what)->type_name("K")->check([](const std::string& v) -> std::string {
      std::uint64_t n = 0;
      return parse_u64(v, n) ? "" : "expected a step number, got '" + v + "'";
    });
  }
};

std::uint64_t to_u64(const std::string& v) {
  std::uint64_t n = 0;
  parse_u64(v, n);
  return n;
}

}  // namespace

std::string usage_text() {
  Cli cli;
  return cli.app.help();
}

std::string version_text() {
  return std::string("bustle-replay ") + BUSTLE_VERSION + "\n";
}

ParsedOptions parse_options(const std::vector<std::string>& args) {
  ParsedOptions r;
  ReplayOptions& o = r.options;
  if (!args.empty() && args[0] == "help") {
    o.command = ReplayCommand::Help;
    r.help = usage_text();
    return r;
  }
  Cli cli;
  if (std::string why = args::flag_given_a_value(cli.app, args); !why.empty()) {
    r.error = why;
    return r;
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them back to front
  try {
    cli.app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    o.command = ReplayCommand::Help;
    const auto subs = cli.app.get_subcommands();
    r.help = subs.empty() ? cli.app.help() : subs.front()->help();
    return r;
  } catch (const CLI::CallForVersion&) {
    o.command = ReplayCommand::Version;
    return r;
  } catch (const CLI::ParseError& e) {
    const auto subs = cli.app.get_subcommands();
    std::string what = e.what();
    if (args.empty()) what = "missing command (verify, serve or diff)";
    r.error = subs.empty() ? what : subs.front()->get_name() + ": " + what;
    return r;
  }

  if (cli.verify->parsed()) {
    o.command = ReplayCommand::Verify;
  } else if (cli.serve->parsed()) {
    o.command = ReplayCommand::Serve;
  } else {
    o.command = ReplayCommand::Diff;
  }
  o.file = o.command == ReplayCommand::Diff ? cli.file_a : cli.file;
  o.file_b = cli.file_b;
  if (!cli.from_step.empty()) o.from_step = to_u64(cli.from_step);
  if (!cli.to_step.empty()) o.to_step = to_u64(cli.to_step);
  o.check_invariants = cli.check_invariants;
  if (!cli.jobs.empty()) o.jobs = static_cast<std::uint32_t>(to_u64(cli.jobs));
  o.progress = cli.progress == "always"  ? ProgressMode::Always
               : cli.progress == "never" ? ProgressMode::Never
                                         : ProgressMode::Auto;
  o.json = cli.json;
  if (!cli.limit.empty()) o.diff_entities_max = static_cast<std::uint32_t>(to_u64(cli.limit));
  if (!cli.port.empty()) o.port = static_cast<std::uint16_t>(to_u64(cli.port));
  o.bind_address = cli.bind_address;
  o.token = cli.token;
  o.log_level = cli.log_level;
  o.loop = cli.loop;
  if (!cli.rate.empty()) {
    double hz = 0.0;
    parse_rate(cli.rate, hz);
    o.rate_hz = hz;
  }
  if (!cli.clock.empty()) o.clock = cli.clock == "fast" ? ReplayClock::Fast : ReplayClock::Realtime;

  if (o.rate_hz && o.clock == ReplayClock::Fast && !cli.clock.empty()) {
    r.error = "serve: --rate and --clock fast contradict each other";
    return r;
  }
  if (o.from_step && o.to_step && *o.to_step < *o.from_step) {
    r.error = "verify: --to-step must be >= --from-step";
    return r;
  }
  return r;
}

}  // namespace bustle::replay
