// The start-up both programs share: the core's log sink,
// the shutdown handler's steps, and the second-signal exit (in a forked
// child, so the test runner's own signal dispositions are never changed).
#include "bustle/app/process_startup.hpp"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <sstream>

using namespace bustle;

namespace {

// Captures spdlog's default logger into a string for the test's lifetime.
struct CapturedLog {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  CapturedLog() {
    auto logger = std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
    logger->set_pattern("%l %v");
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous); }
  std::string text() {
    spdlog::default_logger()->flush();
    return out.str();
  }
};

// Runs `body` in a forked child and returns its wait status.
template <class F>
int in_child(F body) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return status;
}

}  // namespace

TEST_CASE("the core's log sink keeps the level and adds the program's prefix") {
  CapturedLog log;
  app::SpdlogSink plain;
  app::SpdlogSink prefixed("core: ");
  plain.log(core::LogLevel::Warn, "spawn_state: handle 3 failed");
  prefixed.log(core::LogLevel::Debug, "despawn: 1:1");
  prefixed.log(core::LogLevel::Error, "x");
  const std::string text = log.text();
  CHECK(text.find("warning spawn_state: handle 3 failed\n") != std::string::npos);
  CHECK(text.find("debug core: despawn: 1:1\n") != std::string::npos);
  CHECK(text.find("error core: x\n") != std::string::npos);
}

TEST_CASE("the shutdown handler ignores SIGHUP, and stops once on SIGTERM or SIGINT after arming") {
  CapturedLog log;
  std::vector<std::string> calls;
  auto handler = app::shutdown_handler(
      "nothing to reopen", [&] { calls.push_back("stop"); }, [&] { calls.push_back("arm"); });
  handler(SIGHUP);
  handler(SIGHUP);
  CHECK(calls.empty());
  CHECK(log.text().find("signal_hup: SIGHUP ignored (nothing to reopen)") != std::string::npos);
  handler(SIGTERM);
  CHECK(calls == std::vector<std::string>{"arm", "stop"});
  CHECK(log.text().find("shutdown_requested: signal 15: shutting down") != std::string::npos);
  handler(SIGHUP);  // still only logged after the shutdown began
  CHECK(calls.size() == 2);
}

TEST_CASE("a second shutdown signal ends the process at once with 128 + signal") {
  SECTION("one that reaches the handler (queued before arming took over)") {
    const int status = in_child([] {
      auto handler = app::shutdown_handler(
          "", [] {}, [] {});
      handler(SIGINT);
      handler(SIGTERM);
      _exit(0);  // not reached
    });
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
  }
  SECTION("one delivered after exit_on_next_signal, with SIGHUP still ignored") {
    const int status = in_child([] {
      app::exit_on_next_signal();
      raise(SIGHUP);  // ignored: the child carries on
      raise(SIGINT);
      _exit(0);  // not reached
    });
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 128 + SIGINT);
  }
  SECTION("SIGHUP is ignored from ignore_hangup on") {
    const int status = in_child([] {
      app::ignore_hangup();
      raise(SIGHUP);
      _exit(7);
    });
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 7);
  }
}
