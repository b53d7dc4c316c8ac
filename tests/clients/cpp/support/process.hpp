// Test helpers for real processes: start a child with its stdout on a pipe,
// read lines with a deadline, stop it with SIGTERM and a bounded wait, or run
// a command to completion capturing stdout and stderr. POSIX only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bustle::test {

struct ExitInfo {
  bool exited = false;  // normal exit: exit_code is valid
  int exit_code = -1;
  int signal = 0;          // killed by this signal
  bool timed_out = false;  // did not end within the bound (then killed)
  std::string describe() const;
};

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();  // SIGKILL + wait if still running
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // argv[0] is the executable path. stderr goes to `stderr_path` (truncated)
  // or is inherited when empty. Returns false with `error` set on failure.
  bool start(const std::vector<std::string>& argv, const std::string& stderr_path,
             std::string& error);

  // One line of the child's stdout (without '\n'), or nullopt on EOF/timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);

  // SIGTERM, wait up to `grace`, then SIGKILL (reported as timed_out).
  ExitInfo terminate(std::chrono::milliseconds grace);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  void reset();

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string pending_;
};

struct RunResult {
  ExitInfo exit;
  std::string out;
  std::string err;
};

// Runs argv to completion (killed after `timeout`), capturing both streams.
// `env` entries ("NAME=value") are added to (or override) the inherited
// environment; "NAME" alone removes NAME.
RunResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                      const std::vector<std::string>& env = {});

// Last `max_bytes` of a text file (for failure messages), or "" if unreadable.
std::string file_tail(const std::string& path, std::size_t max_bytes = 4000);

// A started bustle-server: `port` parsed from its "listening on" line. The
// destructor stops the server (SIGTERM, bounded) and removes the stderr file
// and the private snapshot store (if start_server made one).
struct ServerUnderTest {
  ServerUnderTest() = default;
  ~ServerUnderTest();
  ServerUnderTest(const ServerUnderTest&) = delete;
  ServerUnderTest& operator=(const ServerUnderTest&) = delete;

  ChildProcess process;
  std::string host;
  std::uint16_t port = 0;
  std::string listening_line;
  std::string stderr_path;
  std::string snapshot_dir;  // temp dir of snapshot_db, when start_server chose it
  std::string snapshot_db;   // the --snapshot-db start_server passed ("" if the caller did)
};

// Starts `server_path --port 0 <extra args>` (plus `--snapshot-db <temp dir>/
// snapshots.db` unless extra_args name one) and waits (bounded) for the line
// "bustle-server listening on <addr>:<port>". On failure returns nullptr and
// says why in `error` (including the server's stderr tail).
std::unique_ptr<ServerUnderTest> start_server(const std::string& server_path,
                                              const std::vector<std::string>& extra_args,
                                              std::string& error);

}  // namespace bustle::test
