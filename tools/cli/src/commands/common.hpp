// What the `bustle` subcommands share: connecting, reporting failures and
// rejections the same way, running a query, printing --json, and applying a
// world command whether the server's clock steps by itself or not (apply.cpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bustle/cli/cli.hpp"
#include "bustle/client/client.hpp"
#include "json_output.hpp"

namespace bustle::cli::commands {

namespace wire = bustle::wire;
using bustle::client::Client;
using bustle::client::ClientOptions;
using bustle::client::ClientStatus;
using Clock = std::chrono::steady_clock;

// The SDK client's options for this command line and `role`.
ClientOptions client_options(const CliOptions& o, wire::Role role);

// Prints why talking to the server failed and returns the exit code.
int report(std::FILE* err, const CliOptions& o, const char* what, const client::Status& s);

// Connects and shakes hands; prints why not and returns the exit code.
int connect(Client& c, const CliOptions& o, std::FILE* err);

// "HH:MM:SS" for an hour of the day in [0, 24).
std::string clock_time(double hour);

// Connects with `role`; as Operator, warns when the server granted less.
int connect_as(Client& c, const CliOptions& o, wire::Role role, std::FILE* err);

// Prints a rejection (reason and message, plus what the job says) to `err`.
int rejected(const CliOptions& o, const client::CommandReply& r, std::FILE* err,
             const std::string& subject = "");

// --json of a query: {"applied_step": N, "<key>": {object}}.
int print_object(std::FILE* out, const char* key, json::Json object, std::uint64_t applied_step);

// Runs a query answered at once (any role); on success `reply` holds it.
// Returns kExitOk, or the exit code after printing why not.
int run_query(const CliOptions& o, const client::CommandSpec& spec, client::CommandReply& reply,
              std::FILE* err);

// The server answered without `what`: says so, returns kExitServer.
int missing(const CliOptions& o, const char* what, std::FILE* err);

// Schema enum names, or the number for a value this build does not know.
std::string priority_name(wire::PriorityClass p);
std::string despawn_reason_name(wire::DespawnReason r);

// A schema enum value by its generated name ("Story"), or its number when
// this build's schema has no name for it (a newer server).
template <class Enum>
std::string enum_name(Enum value, const char* (*name_of)(Enum)) {
  const char* name = name_of(value);
  return *name != '\0' ? std::string(name) : std::to_string(static_cast<unsigned>(value));
}

// --json of a query: {"applied_step": N, "<key>": [rows]}.
template <class Row, class ToJson>
int print_list(std::FILE* out, const char* key, const std::vector<Row>& rows, ToJson to_json,
               std::uint64_t applied_step) {
  json::Json list = json::Json::array();
  for (const Row& row : rows) list.push_back(to_json(row));
  json::print(out, {{"applied_step", applied_step}, {key, list}});
  return kExitOk;
}

// Rows by value or, as the object API holds nested tables, by unique_ptr.
template <class T>
const T& row_ref(const T& row) {
  return row;
}
template <class T>
const T& row_ref(const std::unique_ptr<T>& row) {
  return *row;
}

template <class T>
int id_width(const std::vector<T>& rows, int least = 2) {
  int w = least;
  for (const auto& row : rows) w = std::max(w, static_cast<int>(row_ref(row).id.size()));
  return w;
}

// Whether a step comes by itself: world commands wait for one.
struct ClockView {
  bool manual = false;
  bool paused = false;
  bool stepping = false;  // manual and --step: this tool sends the steps
};

// "accepted at step N[: message]", the line every answered command prints.
void print_accepted(std::FILE* out, const CliOptions& o, const client::CommandReply& r);

// Connects as operator and reads the clock mode and whether paused.
int connect_operator(Client& c, const CliOptions& o, ClockView& clock, std::FILE* err);

// Sends one Step{1} and waits for its result: every SpawnUpdate of that step
// has arrived (and been buffered) by then.
int step_once(Client& c, const CliOptions& o, std::FILE* err);

// "; the clock is manual: ..." when no step comes by itself, else "".
const char* no_step_hint(const ClockView& clock);

// World commands: answered when the next step applies them. With a
// realtime/fast clock that is within a step; under the manual clock (or while
// paused) only after someone steps, so without --step the command is queued
// (printed, exit 0, `reply` left empty) unless `must_answer`, which waits up
// to --timeout-ms for someone to step. On an accepted answer `reply` holds it.
int apply_world(Client& c, const CliOptions& o, const ClockView& clock,
                const client::CommandSpec& spec, bool must_answer,
                std::optional<client::CommandReply>& reply, std::FILE* out, std::FILE* err);

}  // namespace bustle::cli::commands
