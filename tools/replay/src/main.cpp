// bustle-replay: verify a session recording, stream it to clients, or diff
// two recordings. See usage_text(); exit codes in options.hpp.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "bustle/replay/commands.hpp"
#include "bustle/replay/options.hpp"

int main(int argc, char** argv) {
  try {
    const bustle::replay::ParsedOptions parsed =
        bustle::replay::parse_options(std::vector<std::string>(argv + 1, argv + argc));
    if (!parsed.error.empty()) {
      std::fprintf(stderr,
                   "bustle-replay: %s\n(bustle-replay --help lists the commands and flags)\n",
                   parsed.error.c_str());
      return 2;
    }
    switch (parsed.options.command) {
      case bustle::replay::ReplayCommand::Help:
        std::fputs(parsed.help.c_str(), stdout);
        return 0;
      case bustle::replay::ReplayCommand::Version:
        std::fputs(bustle::replay::version_text().c_str(), stdout);
        return 0;
      case bustle::replay::ReplayCommand::Verify:
        return bustle::replay::run_verify(parsed.options, stdout, stderr);
      case bustle::replay::ReplayCommand::Serve:
        return bustle::replay::run_serve(parsed.options);
      case bustle::replay::ReplayCommand::Diff:
        return bustle::replay::run_diff(parsed.options, stdout, stderr);
    }
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bustle-replay: fatal: %s\n", e.what());
    return 2;
  }
}
