// One entry point per `bustle` subcommand (or small family of them), each in
// its own file of this folder; commands.cpp picks one by CliOptions::command.
// Each returns the exit code (cli.hpp) after printing to `out` and `err`.
#pragma once

#include <cstdio>
#include <string>

#include "bustle/cli/cli.hpp"
#include "bustle/client/client.hpp"

namespace bustle::cli::commands {

int run_status(const CliOptions& o, std::FILE* out, std::FILE* err);  // status.cpp
int run_watch(const CliOptions& o, std::FILE* out, std::FILE* err);   // watch.cpp

// snapshots.cpp: checkpoint / restore / save / load, snapshots, delete, job.
int run_snapshot_job(const CliOptions& o, std::FILE* out, std::FILE* err);
int run_snapshots(const CliOptions& o, std::FILE* out, std::FILE* err);
int run_delete(const CliOptions& o, std::FILE* out, std::FILE* err);
int run_job_query(const CliOptions& o, std::FILE* out, std::FILE* err);

// vehicles.cpp: garages, signals, vehicle.
int run_garages(const CliOptions& o, std::FILE* out, std::FILE* err);
int run_signals(const CliOptions& o, std::FILE* out, std::FILE* err);
int run_vehicle(const CliOptions& o, std::FILE* out, std::FILE* err);

int run_zones(const CliOptions& o, std::FILE* out, std::FILE* err);       // zones.cpp
int run_population(const CliOptions& o, std::FILE* out, std::FILE* err);  // population.cpp
int run_lifecycle(const CliOptions& o, std::FILE* out, std::FILE* err);   // lifecycle.cpp
int run_entity(const CliOptions& o, std::FILE* out, std::FILE* err);      // entity.cpp

// spawn.cpp: spawn, cancel-spawn, spawn-status.
int run_spawn(const CliOptions& o, std::FILE* out, std::FILE* err);
int run_cancel_spawn(const CliOptions& o, std::FILE* out, std::FILE* err);
int run_spawn_status(const CliOptions& o, std::FILE* out, std::FILE* err);

// world.cpp: the world commands that print their acceptance (target, hour,
// observers, ...: is_world), and the clock commands pause, resume, step.
bool is_world(const std::string& command);
client::CommandSpec world_spec(const CliOptions& o);
int run_world(const CliOptions& o, const client::CommandSpec& spec, std::FILE* out, std::FILE* err);
int run_operator(const CliOptions& o, std::FILE* out, std::FILE* err);

}  // namespace bustle::cli::commands
