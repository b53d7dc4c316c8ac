#include "bustle/replay/options.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

namespace bustle::replay {
namespace {

bool parse_u64(const std::string& text, std::uint64_t& out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && p == end && !text.empty();
}

}  // namespace

std::string usage_text() {
  return "usage: bustle-replay verify FILE [--from-step K] [--to-step K2] [--check-invariants]\n"
         "       bustle-replay serve FILE [--port P] [--bind ADDR] [--token T]\n"
         "                                [--rate HZ | --clock fast|realtime] [--from-step K] "
         "[--loop]\n"
         "                                [--log-level L]\n"
         "\n"
         "verify  re-simulates the recording headless, as fast as possible, comparing the\n"
         "        digest after every tick with the recorded one. It starts at the latest\n"
         "        keyframe at or before the first tick whose step is >= K (default: the\n"
         "        initial keyframe) and ends with the first tick whose step is >= K2\n"
         "        (default: the last tick).\n"
         "        exit 0: 'OK verified N ticks ...'; exit 1: 'DIVERGED at tick T step S: ...'\n"
         "        (the first diverging tick); exit 2: the file cannot be read or replayed.\n"
         "        --check-invariants also checks every core invariant after every tick;\n"
         "        exit 3: 'INVARIANT BROKEN at tick T step S: <invariant>' (the first one).\n"
         "serve   re-simulates the recording and streams it like a live bustle-server\n"
         "        (default 127.0.0.1:7777, paced at the recorded rate; --rate HZ paces at HZ,\n"
         "        --clock fast steps back to back). Clients may query stats and pause or\n"
         "        resume (operator role); every other command is rejected: the replay is\n"
         "        read-only. At the end it keeps serving the last frame, or with --loop\n"
         "        starts again. Digests are verified while serving; a divergence is logged.\n"
         "        SIGINT/SIGTERM stop it (exit 0).\n";
}

ParsedOptions parse_options(const std::vector<std::string>& args) {
  ParsedOptions r;
  ReplayOptions& o = r.options;
  if (args.empty()) {
    r.error = "missing command (verify or serve)";
    return r;
  }
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    o.command = ReplayCommand::Help;
    return r;
  }
  if (args[0] == "verify") {
    o.command = ReplayCommand::Verify;
  } else if (args[0] == "serve") {
    o.command = ReplayCommand::Serve;
  } else {
    r.error = "unknown command '" + args[0] + "' (expected verify or serve)";
    return r;
  }
  const bool serve = o.command == ReplayCommand::Serve;
  bool clock_given = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= args.size()) {
        r.error = a + " needs a value";
        return false;
      }
      out = args[++i];
      return true;
    };
    std::string v;
    if (a == "-h" || a == "--help") {
      o.command = ReplayCommand::Help;
      return r;
    } else if (a == "--from-step" || a == "--to-step") {
      if (!value(v)) return r;
      std::uint64_t step = 0;
      if (!parse_u64(v, step)) {
        r.error = a + ": expected a step number, got '" + v + "'";
        return r;
      }
      (a == "--from-step" ? o.from_step : o.to_step) = step;
      if (a == "--to-step" && serve) {
        r.error = "--to-step is only valid with verify";
        return r;
      }
    } else if (!serve && a == "--check-invariants") {
      o.check_invariants = true;
    } else if (serve && a == "--port") {
      if (!value(v)) return r;
      std::uint64_t port = 0;
      if (!parse_u64(v, port) || port > 65535) {
        r.error = "--port: expected 0..65535, got '" + v + "'";
        return r;
      }
      o.port = static_cast<std::uint16_t>(port);
    } else if (serve && a == "--bind") {
      if (!value(o.bind_address)) return r;
    } else if (serve && a == "--token") {
      if (!value(o.token)) return r;
    } else if (serve && a == "--log-level") {
      if (!value(o.log_level)) return r;
    } else if (serve && a == "--loop") {
      o.loop = true;
    } else if (serve && a == "--rate") {
      if (!value(v)) return r;
      double hz = 0.0;
      const char* end = v.data() + v.size();
      auto [p, ec] = std::from_chars(v.data(), end, hz);
      if (ec != std::errc() || p != end || !std::isfinite(hz) || hz <= 0.0 || hz > 1e6) {
        r.error = "--rate: expected a rate in (0, 1000000] Hz, got '" + v + "'";
        return r;
      }
      o.rate_hz = hz;
    } else if (serve && a == "--clock") {
      if (!value(v)) return r;
      if (v == "fast") {
        o.clock = ReplayClock::Fast;
      } else if (v == "realtime") {
        o.clock = ReplayClock::Realtime;
      } else {
        r.error = "--clock: expected fast or realtime, got '" + v + "'";
        return r;
      }
      clock_given = true;
    } else if (!a.empty() && a[0] == '-') {
      r.error = "unknown option '" + a + "' for " + args[0];
      return r;
    } else if (o.file.empty()) {
      o.file = a;
    } else {
      r.error = "unexpected argument '" + a + "' (only one FILE)";
      return r;
    }
  }
  if (o.file.empty()) {
    r.error = args[0] + ": missing FILE";
    return r;
  }
  if (o.rate_hz && clock_given && o.clock == ReplayClock::Fast) {
    r.error = "--rate and --clock fast contradict each other";
    return r;
  }
  if (o.from_step && o.to_step && *o.to_step < *o.from_step) {
    r.error = "--to-step must be >= --from-step";
    return r;
  }
  return r;
}

}  // namespace bustle::replay
