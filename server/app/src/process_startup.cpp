// Process start-up shared by bustle-server and bustle-replay serve
// (process_startup.hpp): log set-up, the core's log sink, and the SIGHUP /
// SIGTERM / SIGINT handling in the order that header describes.
#include "bustle/app/process_startup.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <memory>

#include "bustle/ops/logging.hpp"

namespace bustle::app {
namespace {

extern "C" void exit_now(int sig) {
  _exit(128 + sig);
}

}  // namespace

void start_logging(const std::string& format, const std::string& level) {
  ops::setup_logging(format, level);
}

void SpdlogSink::log(core::LogLevel level, std::string_view message) {
  switch (level) {
    case core::LogLevel::Debug:
      spdlog::debug("{}{}", prefix_, message);
      break;
    case core::LogLevel::Info:
      spdlog::info("{}{}", prefix_, message);
      break;
    case core::LogLevel::Warn:
      spdlog::warn("{}{}", prefix_, message);
      break;
    case core::LogLevel::Error:
      spdlog::error("{}{}", prefix_, message);
      break;
  }
}

void ignore_hangup() {
  std::signal(SIGHUP, SIG_IGN);
}

void exit_on_next_signal() {
  std::signal(SIGTERM, exit_now);
  std::signal(SIGINT, exit_now);
  std::signal(SIGHUP, SIG_IGN);
}

std::function<void(int)> shutdown_handler(std::string hangup_note,
                                          std::function<void()> on_shutdown,
                                          std::function<void()> arm) {
  auto stopping = std::make_shared<std::atomic<bool>>(false);
  return [hangup_note = std::move(hangup_note), on_shutdown = std::move(on_shutdown),
          arm = std::move(arm), stopping](int sig) {
    if (sig == SIGHUP) {
      spdlog::info("signal_hup: SIGHUP ignored{}",
                   hangup_note.empty() ? "" : " (" + hangup_note + ")");
      return;
    }
    if (stopping->exchange(true)) exit_now(sig);  // a second one queued before `arm` took over
    spdlog::info("shutdown_requested: signal {}: shutting down", sig);
    arm();
    on_shutdown();
  };
}

}  // namespace bustle::app
