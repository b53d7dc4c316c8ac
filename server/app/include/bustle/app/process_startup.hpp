// Process start-up shared by bustle-server and bustle-replay serve: logging,
// the core's log sink, and the signal set both programs install. Like the
// FixedStepClock beside it, one tested piece instead of a copy per program.
//
// Signals, in order of a run:
//   1. ignore_hangup() at start: SIGHUP is ignored silently until the network
//      thread handles signals (net::Server::on_signal).
//   2. on_signal(shutdown_handler(...)): SIGHUP is logged and ignored
//      ("signal_hup: ..."); the first SIGTERM/SIGINT logs
//      "shutdown_requested: signal N: shutting down", arms step 3 and calls
//      the program's stop callback once.
//   3. exit_on_next_signal(): from then on a second SIGTERM/SIGINT ends the
//      process at once with status 128 + signal (async-signal-safe _exit),
//      and SIGHUP stays ignored after the network thread stops handling it.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "bustle/core/log_sink.hpp"

namespace bustle::app {

// Installs the default logger (stderr, ops::setup_logging's text or JSON
// lines) [Limit: format and level already checked by the program's option
// parser].
void start_logging(const std::string& format, const std::string& level);

// Routes the core's log lines into spdlog (the core cannot include it), each
// prefixed with `prefix` (bustle-server: none, its lines carry their own
// event names; bustle-replay: "core: ").
class SpdlogSink final : public core::LogSink {
 public:
  explicit SpdlogSink(std::string prefix = {}) : prefix_(std::move(prefix)) {}
  void log(core::LogLevel level, std::string_view message) override;

 private:
  std::string prefix_;
};

// Step 1 above.
void ignore_hangup();
// Step 3 above. Changes this process's signal dispositions.
void exit_on_next_signal();

// Step 2 above: the callback for net::Server::on_signal. `hangup_note` ends
// the SIGHUP line (why nothing is reopened); `on_shutdown` runs on the first
// SIGTERM/SIGINT only; a second one that reaches the callback (queued before
// step 3 took over) exits at once like step 3. `arm` is called before
// on_shutdown (exit_on_next_signal in the programs; tests pass their own).
std::function<void(int)> shutdown_handler(std::string hangup_note,
                                          std::function<void()> on_shutdown,
                                          std::function<void()> arm = exit_on_next_signal);

}  // namespace bustle::app
