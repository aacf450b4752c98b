// Test and benchmark helper (not part of the product): runs an S3-compatible
// server and a fault-injecting proxy as child processes on 127.0.0.1.
//
//   start_s3_server   node --openssl-legacy-provider tools/s3-server/serve.cjs
//                     PORT DIR BUCKET... (s3rver,
//                     verifies SigV4; credentials kTestAccessKey / kTestSecretKey)
//   start_fault_proxy python3 tools/s3-server/fault_proxy.py 0 UPSTREAM_PORT
//   set_fault_mode    "pass" | "error500" | "truncate" | "stall" (see fault_proxy.py)
//
// Both print "listening <port>" when ready; start_* waits for it. A child
// dies with the thread that started it (PR_SET_PDEATHSIG) and with its
// ChildProcess (stdin closed, SIGTERM, SIGKILL after 3 s), so a failed test
// leaves nothing running. The tools come from $STRATA_SOURCE_DIR (set by
// ctest) or the source tree this was built from.
//
// Threads: one ChildProcess is driven by one thread at a time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::offload::testing {

inline constexpr char kTestAccessKey[] = "STRATA-TEST-KEY";
inline constexpr char kTestSecretKey[] = "strata-test-secret";

class ChildProcess {
 public:
  // Runs argv[0] (searched in PATH) with stdin and stdout as pipes, and waits
  // up to `ready_timeout` for a stdout line "listening <port>".
  static StatusOr<std::unique_ptr<ChildProcess>> start(const std::vector<std::string>& argv,
                                                       std::chrono::milliseconds ready_timeout);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }

  Status send_line(const std::string& line);
  StatusOr<std::string> read_line(std::chrono::milliseconds timeout);
  // SIGKILL and reap (a server that dies mid-run).
  void kill_now();

 private:
  ChildProcess(pid_t pid, int stdin_fd, int stdout_fd)
      : pid_(pid), stdin_fd_(stdin_fd), stdout_fd_(stdout_fd) {}
  void stop();

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int port_ = 0;
  std::string buffered_;  // stdout read past the last line returned
};

std::string source_dir();

// "" when node and tools/s3-server/node_modules are there; else what is missing.
std::string s3_server_missing();

// s3rver on `port` (0 = a free one) keeping objects under `dir`, with `buckets` created.
StatusOr<std::unique_ptr<ChildProcess>> start_s3_server(const std::string& dir,
                                                        const std::vector<std::string>& buckets,
                                                        int port = 0);
StatusOr<std::unique_ptr<ChildProcess>> start_fault_proxy(int upstream_port);
// Sets the proxy's mode and waits for its acknowledgement.
Status set_fault_mode(ChildProcess& proxy, const std::string& mode);

}  // namespace strata::offload::testing
