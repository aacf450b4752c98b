#include "bench_serve/fake_server_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata::bench::testing {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string http_chunk(const std::string& data) {
  char size[20];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return size + data + "\r\n";
}

}  // namespace

std::string FakeRequest::header(const std::string& name) const {
  const std::string h = lower(head);
  const size_t at = h.find("\r\n" + lower(name) + ":");
  if (at == std::string::npos) return "";
  const size_t start = at + 3 + name.size();
  std::string v = head.substr(start, head.find("\r\n", start) - start);
  v.erase(0, v.find_first_not_of(' '));
  return v;
}

FakeServer::FakeServer(Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 128) != 0) {
    std::abort();
  }
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FakeServer::~FakeServer() {
  stop_ = true;
  acceptor_.join();
  for (std::thread& t : threads_) t.join();
  ::close(listen_fd_);
}

std::vector<FakeRequest> FakeServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void FakeServer::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

void FakeServer::serve(int fd) {
  const int now_open = ++open_;
  bool counted = true;
  for (int m = max_open_.load(); now_open > m && !max_open_.compare_exchange_weak(m, now_open);) {
  }
  std::string data;
  char buf[4096];
  FakeRequest r;
  size_t head_end = std::string::npos;
  size_t body_len = 0;
  while (true) {
    if (head_end == std::string::npos && (head_end = data.find("\r\n\r\n")) != std::string::npos) {
      r.head = data.substr(0, head_end);
      body_len = std::strtoul(r.header("Content-Length").c_str(), nullptr, 10);
    }
    if (head_end != std::string::npos && data.size() >= head_end + 4 + body_len) break;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  if (head_end != std::string::npos) {
    r.method = r.head.substr(0, r.head.find(' '));
    const size_t p0 = r.head.find(' ') + 1;
    r.path = r.head.substr(p0, r.head.find(' ', p0) - p0);
    r.body = data.substr(head_end + 4, body_len);
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(r);
    }
    const std::vector<FakeWrite> writes = handler_(r);
    for (size_t i = 0; i < writes.size(); ++i) {
      const FakeWrite& w = writes[i];
      if (w.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(w.delay_ms));
      // The connection stops counting as open before its last bytes leave:
      // the client may finish and connect again before this thread runs on.
      if (i + 1 == writes.size() && counted) {
        --open_;
        counted = false;
      }
      if (::send(fd, w.bytes.data(), w.bytes.size(), MSG_NOSIGNAL) < 0) break;
    }
  }
  if (counted) --open_;
  ::close(fd);
}

std::vector<FakeWrite> sse_response(const std::vector<std::string>& events, int delay_ms) {
  std::vector<FakeWrite> out;
  out.push_back({0,
                 "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                 "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"});
  for (const std::string& e : events) out.push_back({delay_ms, http_chunk("data: " + e + "\n\n")});
  out.push_back({0, http_chunk("data: [DONE]\n\n") + "0\r\n\r\n"});
  return out;
}

std::vector<FakeWrite> json_response(int status, const std::string& body) {
  return {{0, "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n" +
                  "Content-Length: " + std::to_string(body.size()) +
                  "\r\nConnection: close\r\n\r\n" + body}};
}

}  // namespace strata::bench::testing
