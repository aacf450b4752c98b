#include "offload/tiers/testing/s3_test_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#ifndef STRATA_SOURCE_DIR_DEFAULT
#define STRATA_SOURCE_DIR_DEFAULT "."
#endif

namespace strata::offload::testing {
namespace {

using Clock = std::chrono::steady_clock;

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool in_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

std::string tools_dir() { return source_dir() + "/tools/s3-server"; }

}  // namespace

std::string source_dir() {
  const char* env = std::getenv("STRATA_SOURCE_DIR");
  return env != nullptr && env[0] != '\0' ? env : STRATA_SOURCE_DIR_DEFAULT;
}

std::string s3_server_missing() {
  if (!in_path("node")) return "node is not in PATH (scripts/install-deps.sh installs nodejs)";
  if (!is_file(tools_dir() + "/node_modules/@20minutes/s3rver/package.json")) {
    return tools_dir() + "/node_modules lacks @20minutes/s3rver; run scripts/install-deps.sh";
  }
  return "";
}

StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::start(
    const std::vector<std::string>& argv, std::chrono::milliseconds ready_timeout) {
  ::signal(SIGPIPE, SIG_IGN);  // a child that died must fail send_line, not kill the test
  int in_pipe[2];
  int out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) {
    return unavailable("pipe2: " + std::string(strerror(errno)));
  }
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    return unavailable("pipe2: " + std::string(strerror(errno)));
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(in_pipe[0], STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (pid < 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    return unavailable("fork: " + std::string(strerror(errno)));
  }
  std::unique_ptr<ChildProcess> child(new ChildProcess(pid, in_pipe[1], out_pipe[0]));
  StatusOr<std::string> line = child->read_line(ready_timeout);
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  if (!line.ok()) return line.status().with_prefix("starting " + command);
  if (std::sscanf(line->c_str(), "listening %d", &child->port_) != 1 || child->port_ <= 0) {
    return unavailable("starting " + command + ": it printed '" + *line +
                       "', expected 'listening <port>'");
  }
  return child;
}

ChildProcess::~ChildProcess() { stop(); }

Status ChildProcess::send_line(const std::string& line) {
  const std::string text = line + "\n";
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(stdin_fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return unavailable("writing to child: " + std::string(strerror(errno)));
    done += static_cast<size_t>(n);
  }
  return Status::ok_status();
}

StatusOr<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    const size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return unavailable("no line from the child within the timeout");
    pollfd pfd{stdout_fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buf[512];
    const ssize_t n = ::read(stdout_fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return unavailable("the child closed its stdout (did it fail to start?)");
    buffered_.append(buf, static_cast<size_t>(n));
  }
}

void ChildProcess::kill_now() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void ChildProcess::stop() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  stdin_fd_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(3);
    while (::waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        kill_now();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pid_ = -1;
  }
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdout_fd_ = -1;
}

StatusOr<std::unique_ptr<ChildProcess>> start_s3_server(const std::string& dir,
                                                        const std::vector<std::string>& buckets,
                                                        int port) {
  const std::string missing = s3_server_missing();
  if (!missing.empty()) return unavailable(missing);
  std::vector<std::string> argv = {"node", "--openssl-legacy-provider", tools_dir() + "/serve.cjs",
                                   std::to_string(port), dir};
  argv.insert(argv.end(), buckets.begin(), buckets.end());
  return ChildProcess::start(argv, std::chrono::seconds(20));
}

StatusOr<std::unique_ptr<ChildProcess>> start_fault_proxy(int upstream_port) {
  return ChildProcess::start(
      {"python3", tools_dir() + "/fault_proxy.py", "0", std::to_string(upstream_port)},
      std::chrono::seconds(10));
}

Status set_fault_mode(ChildProcess& proxy, const std::string& mode) {
  STRATA_RETURN_IF_ERROR(proxy.send_line("mode " + mode));
  StatusOr<std::string> ack = proxy.read_line(std::chrono::seconds(5));
  if (!ack.ok()) return ack.status();
  if (*ack != "ok " + mode) return unavailable("fault proxy answered '" + *ack + "'");
  return Status::ok_status();
}

}  // namespace strata::offload::testing
