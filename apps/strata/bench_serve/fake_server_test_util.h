// Test helper: a scripted HTTP server on 127.0.0.1 (ephemeral port). Each
// connection is read up to the end of its body (Content-Length), recorded,
// and answered with the handler's writes, each after its delay, then closed.
// Tracks the most connections open at once.
//
// Thread-safety: the handler runs on one thread per connection.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strata::bench::testing {

struct FakeRequest {
  std::string head;  // request line and headers
  std::string method, path, body;
  std::string header(const std::string& name) const;  // "" when absent
};

struct FakeWrite {
  int delay_ms = 0;
  std::string bytes;
};

class FakeServer {
 public:
  using Handler = std::function<std::vector<FakeWrite>(const FakeRequest&)>;
  explicit FakeServer(Handler handler);
  ~FakeServer();
  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<FakeRequest> requests() const;
  int max_open_connections() const { return max_open_.load(); }

 private:
  void accept_loop();
  void serve(int fd);

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> open_{0}, max_open_{0};
  mutable std::mutex mu_;
  std::vector<FakeRequest> requests_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// A chunked text/event-stream response: one HTTP chunk per event
// ("data: <event>\n\n"), each after `delay_ms`, then [DONE].
std::vector<FakeWrite> sse_response(const std::vector<std::string>& events, int delay_ms);
// A plain 200 JSON response with Content-Length.
std::vector<FakeWrite> json_response(int status, const std::string& body);

}  // namespace strata::bench::testing
