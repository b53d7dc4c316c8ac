// Child processes for tests (process.hpp): start with stdout on a pipe, read
// lines with a deadline, stop with SIGTERM and a bounded wait, or run to
// completion capturing stdout and stderr. POSIX only.
#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace bustle::test {
namespace {

using Clock = std::chrono::steady_clock;

ExitInfo decode(int status) {
  ExitInfo e;
  if (WIFEXITED(status)) {
    e.exited = true;
    e.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    e.signal = WTERMSIG(status);
  }
  return e;
}

// Waits for pid up to `bound`; nullopt if still running.
std::optional<ExitInfo> wait_bounded(pid_t pid, std::chrono::milliseconds bound) {
  const auto deadline = Clock::now() + bound;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return decode(status);
    if (r < 0 && errno != EINTR) return ExitInfo{};
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string ExitInfo::describe() const {
  std::ostringstream s;
  if (exited)
    s << "exit code " << exit_code;
  else if (signal != 0)
    s << "killed by signal " << signal;
  else
    s << "unknown end";
  if (timed_out) s << " (did not end in time; killed)";
  return s.str();
}

ChildProcess::~ChildProcess() {
  reset();
}

void ChildProcess::reset() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  if (stdout_fd_ >= 0) {
    close(stdout_fd_);
    stdout_fd_ = -1;
  }
  pending_.clear();
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), stdout_fd_(other.stdout_fd_), pending_(std::move(other.pending_)) {
  other.pid_ = -1;
  other.stdout_fd_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    reset();
    pid_ = other.pid_;
    stdout_fd_ = other.stdout_fd_;
    pending_ = std::move(other.pending_);
    other.pid_ = -1;
    other.stdout_fd_ = -1;
  }
  return *this;
}

bool ChildProcess::start(const std::vector<std::string>& argv, const std::string& stderr_path,
                         std::string& error) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  int err_fd = -1;
  if (!stderr_path.empty()) {
    err_fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (err_fd < 0) {
      error = "open " + stderr_path + ": " + std::strerror(errno);
      close(fds[0]);
      close(fds[1]);
      return false;
    }
  }
  auto args = c_argv(argv);
  const pid_t pid = fork();
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  if (err_fd >= 0) close(err_fd);
  pid_ = pid;
  stdout_fd_ = fds[0];
  return true;
}

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (const auto nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (stdout_fd_ < 0) return std::nullopt;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return std::nullopt;
    pollfd p{stdout_fd_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return std::nullopt;
    char buf[4096];
    const ssize_t n = read(stdout_fd_, buf, sizeof buf);
    if (n <= 0) {
      close(stdout_fd_);
      stdout_fd_ = -1;
      continue;
    }
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

ExitInfo ChildProcess::terminate(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return ExitInfo{};
  kill(pid_, SIGTERM);
  std::optional<ExitInfo> e = wait_bounded(pid_, grace);
  if (!e) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    e = decode(status);
    e->timed_out = true;
  }
  pid_ = -1;
  return *e;
}

RunResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                      const std::vector<std::string>& env) {
  RunResult result;
  // The child's environment: ours, minus overridden or removed names, plus env.
  std::vector<std::string> child_env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& over : env) replaced = replaced || over.substr(0, over.find('=')) == name;
    if (!replaced) child_env.push_back(entry);
  }
  for (const auto& over : env) {
    if (over.find('=') != std::string::npos) child_env.push_back(over);
  }
  auto envp = c_argv(child_env);
  int out_fds[2];
  int err_fds[2];
  if (pipe2(out_fds, O_CLOEXEC) != 0) return result;
  if (pipe2(err_fds, O_CLOEXEC) != 0) {
    close(out_fds[0]);
    close(out_fds[1]);
    return result;
  }
  auto args = c_argv(argv);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fds[1], STDOUT_FILENO);
    dup2(err_fds[1], STDERR_FILENO);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out_fds[1]);
  close(err_fds[1]);
  const auto deadline = Clock::now() + timeout;
  pollfd fds[2] = {{out_fds[0], POLLIN, 0}, {err_fds[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  bool timed_out = false;
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    const int r = poll(fds, 2, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  if (timed_out) kill(pid, SIGKILL);
  std::optional<ExitInfo> e = wait_bounded(pid, std::chrono::milliseconds(2000));
  if (!e) {
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    e = decode(status);
  }
  result.exit = *e;
  result.exit.timed_out = timed_out;
  return result;
}

std::string file_tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  return text.size() <= max_bytes ? text : text.substr(text.size() - max_bytes);
}

ServerUnderTest::~ServerUnderTest() {
  if (process.running()) process.terminate(std::chrono::milliseconds(3000));
  if (!stderr_path.empty()) unlink(stderr_path.c_str());
  if (!snapshot_dir.empty()) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      unlink((snapshot_db + suffix).c_str());
    }
    rmdir(snapshot_dir.c_str());
  }
}

std::unique_ptr<ServerUnderTest> start_server(const std::string& server_path,
                                              const std::vector<std::string>& extra_args,
                                              std::string& error) {
  auto owned = std::make_unique<ServerUnderTest>();
  ServerUnderTest& s = *owned;
  char tmpl[] = "/tmp/bustle-server-stderr-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd >= 0) close(fd);
  s.stderr_path = fd >= 0 ? tmpl : "";
  std::vector<std::string> argv = {server_path, "--port", "0"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  bool has_db = false;
  for (const std::string& a : extra_args) {
    if (a == "--snapshot-db" || a.rfind("--snapshot-db=", 0) == 0) has_db = true;
  }
  if (!has_db) {
    // Never the server's default file in the working directory: a private
    // store per server, removed with it.
    char dir[] = "/tmp/bustle-server-snapshots-XXXXXX";
    if (mkdtemp(dir) == nullptr) {
      error = std::string("mkdtemp: ") + std::strerror(errno);
      return nullptr;
    }
    s.snapshot_dir = dir;
    s.snapshot_db = s.snapshot_dir + "/snapshots.db";
    argv.insert(argv.end(), {"--snapshot-db", s.snapshot_db});
  }
  if (!s.process.start(argv, s.stderr_path, error)) return nullptr;

  const std::string prefix = "bustle-server listening on ";
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto line = s.process.read_line(left);
    if (!line) break;
    if (line->rfind(prefix, 0) != 0) continue;
    const std::string addr = line->substr(prefix.size());
    const auto colon = addr.rfind(':');
    if (colon == std::string::npos) {
      error = "cannot parse address in: " + *line;
      break;
    }
    s.host = addr.substr(0, colon);
    if (s.host.size() >= 2 && s.host.front() == '[' && s.host.back() == ']') {
      s.host = s.host.substr(1, s.host.size() - 2);
    }
    const long port = std::strtol(addr.c_str() + colon + 1, nullptr, 10);
    if (port <= 0 || port > 65535) {
      error = "cannot parse port in: " + *line;
      break;
    }
    s.port = static_cast<std::uint16_t>(port);
    s.listening_line = *line;
    return owned;
  }
  if (error.empty()) {
    error = "no \"" + prefix + "<addr>:<port>\" line on stdout within 10 s";
  }
  const ExitInfo e = s.process.terminate(std::chrono::milliseconds(3000));
  error += "; server " + e.describe() + "; stderr tail:\n" + file_tail(s.stderr_path);
  return nullptr;
}

}  // namespace bustle::test
