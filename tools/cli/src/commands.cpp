// `bustle`'s dispatch: runs the subcommand CliOptions::command names (each
// in its own file under commands/), and main_entry, the whole program with
// the environment read (BUSTLE_TOKEN, BUSTLE_HOST, BUSTLE_PORT).
#include "commands/commands.hpp"

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "bustle/cli/cli.hpp"

namespace bustle::cli {

using namespace commands;  // NOLINT: the run_* entry points, one per file

int run(const CliOptions& options, std::FILE* out, std::FILE* err) {
  if (options.command == "status") return run_status(options, out, err);
  if (options.command == "watch") return run_watch(options, out, err);
  if (options.command == "pause" || options.command == "resume" || options.command == "step") {
    return run_operator(options, out, err);
  }
  if (is_world(options.command)) return run_world(options, world_spec(options), out, err);
  if (options.command == "garages") return run_garages(options, out, err);
  if (options.command == "signals") return run_signals(options, out, err);
  if (options.command == "zones") return run_zones(options, out, err);
  if (options.command == "vehicle") return run_vehicle(options, out, err);
  if (options.command == "population") return run_population(options, out, err);
  if (options.command == "entity") return run_entity(options, out, err);
  if (options.command == "spawn") return run_spawn(options, out, err);
  if (options.command == "cancel-spawn") return run_cancel_spawn(options, out, err);
  if (options.command == "spawn-status") return run_spawn_status(options, out, err);
  if (options.command == "lifecycle") return run_lifecycle(options, out, err);
  if (options.command == "checkpoint" || options.command == "restore" ||
      options.command == "save" || options.command == "load") {
    return run_snapshot_job(options, out, err);
  }
  if (options.command == "snapshots") return run_snapshots(options, out, err);
  if (options.command == "delete") return run_delete(options, out, err);
  if (options.command == "job") return run_job_query(options, out, err);
  std::fprintf(err, "bustle: unknown command \"%s\"\n", options.command.c_str());
  return kExitUsage;
}

int main_entry(int argc, char** argv) {
  std::vector<std::string_view> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  const ParseResult parsed = parse_args(args, std::getenv("BUSTLE_TOKEN"),
                                        std::getenv("BUSTLE_HOST"), std::getenv("BUSTLE_PORT"));
  switch (parsed.status) {
    case ParseStatus::Help:
    case ParseStatus::Version:
      std::fputs(parsed.text.c_str(), stdout);
      return kExitOk;
    case ParseStatus::Error:
      std::fprintf(stderr, "bustle: %s\nTry 'bustle --help'.\n", parsed.error.c_str());
      return kExitUsage;
    case ParseStatus::Ok:
      break;
  }
  return run(parsed.options, stdout, stderr);
}

}  // namespace bustle::cli
