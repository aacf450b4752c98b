#include "bench_serve/http_client.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

#include "bench_serve/chunked_decoder.h"

namespace strata::bench {
namespace {

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void set_timeouts(int fd, double timeout_s) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_s);
  tv.tv_usec = static_cast<suseconds_t>((timeout_s - static_cast<double>(tv.tv_sec)) * 1e6);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

StatusOr<int> connect_to(const BaseUrl& base, double timeout_s) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(base.port);
  if (int rc = getaddrinfo(base.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return unavailable("cannot resolve " + base.host + ": " + gai_strerror(rc));
  }
  std::string last_error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    set_timeouts(fd, timeout_s);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      freeaddrinfo(found);
      return fd;
    }
    last_error = std::strerror(errno);
    ::close(fd);
  }
  freeaddrinfo(found);
  return unavailable("cannot connect to " + base.to_string() + ": " + last_error +
                     " (is the server running?)");
}

Status send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return unavailable(std::string("send failed: ") + std::strerror(errno));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status();
}

std::string format_request(const BaseUrl& base, const HttpRequest& r) {
  std::string out = r.method + " " + base.path_prefix + r.path + " HTTP/1.1\r\n";
  out += "Host: " + base.host + ":" + std::to_string(base.port) + "\r\n";
  out += "Connection: close\r\n";
  if (!r.body.empty() || r.method == "POST") {
    out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  }
  for (const auto& [name, value] : r.headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  return out + r.body;
}

struct ResponseHead {
  int status = 0;
  bool chunked = false;
  std::optional<size_t> content_length;
};

StatusOr<ResponseHead> parse_head(std::string_view head) {
  ResponseHead h;
  size_t eol = head.find("\r\n");
  std::string_view status_line = head.substr(0, eol);
  size_t sp = status_line.find(' ');
  if (status_line.rfind("HTTP/1.", 0) != 0 || sp == std::string_view::npos) {
    return data_loss("not an HTTP/1.x response: '" + std::string(status_line.substr(0, 80)) + "'");
  }
  std::string_view code = status_line.substr(sp + 1, 3);
  if (std::from_chars(code.data(), code.data() + code.size(), h.status).ec != std::errc()) {
    return data_loss("bad HTTP status line '" + std::string(status_line) + "'");
  }
  while (eol != std::string_view::npos && eol + 2 < head.size()) {
    size_t start = eol + 2;
    eol = head.find("\r\n", start);
    std::string_view line = head.substr(start, eol == std::string_view::npos ? eol : eol - start);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string name = lower(std::string(line.substr(0, colon)));
    std::string value(line.substr(colon + 1));
    value.erase(0, value.find_first_not_of(" \t"));
    if (name == "transfer-encoding" && lower(value).find("chunked") != std::string::npos) {
      h.chunked = true;
    } else if (name == "content-length") {
      h.content_length = static_cast<size_t>(std::strtoull(value.c_str(), nullptr, 10));
    }
  }
  return h;
}

// Reads the rest of the response after the head; `pending` holds body bytes
// already received with the head.
Status read_body(int fd, const ResponseHead& head, std::string pending, Clock::time_point when,
                 const ResponseSink& sink) {
  ChunkedDecoder chunked;
  size_t body_left = head.content_length.value_or(SIZE_MAX);
  std::string decoded;
  std::vector<char> buf(64 * 1024);
  while (true) {
    if (!pending.empty()) {
      std::string_view piece = pending;
      if (head.chunked) {
        decoded.clear();
        STRATA_RETURN_IF_ERROR(chunked.feed(piece, &decoded));
        piece = decoded;
      } else if (head.content_length) {
        piece = piece.substr(0, std::min(piece.size(), body_left));
        body_left -= piece.size();
      }
      if (!piece.empty() && !sink.on_body(piece, when)) return Status();
      pending.clear();
    }
    if ((head.chunked && chunked.done()) || (!head.chunked && body_left == 0)) return Status();
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    when = Clock::now();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return unavailable(std::string("read failed: ") + std::strerror(errno));
    if (n == 0) {
      if (head.chunked || head.content_length) {
        return data_loss("connection closed before the end of the HTTP body");
      }
      return Status();
    }
    pending.assign(buf.data(), static_cast<size_t>(n));
  }
}

}  // namespace

std::string BaseUrl::to_string() const {
  return "http://" + host + ":" + std::to_string(port) + path_prefix;
}

StatusOr<BaseUrl> parse_base_url(const std::string& url) {
  std::string rest = url;
  if (rest.rfind("https://", 0) == 0) {
    return invalid_argument("--base-url " + url + ": https is not supported; use http://");
  }
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  BaseUrl b;
  size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    b.path_prefix = rest.substr(slash);
    rest = rest.substr(0, slash);
    while (!b.path_prefix.empty() && b.path_prefix.back() == '/') b.path_prefix.pop_back();
  }
  size_t colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']') == std::string::npos) {
    std::string port = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), b.port);
    if (ec != std::errc() || ptr != port.data() + port.size() || b.port <= 0 || b.port > 65535) {
      return invalid_argument("--base-url " + url + ": bad port '" + port + "'");
    }
  }
  if (rest.size() > 2 && rest.front() == '[' && rest.back() == ']')
    rest = rest.substr(1, rest.size() - 2);
  if (rest.empty()) return invalid_argument("--base-url " + url + ": no host");
  b.host = rest;
  return b;
}

StatusOr<int> http_stream(const BaseUrl& base, const HttpRequest& request, double timeout_s,
                          const ResponseSink& sink) {
  STRATA_ASSIGN_OR_RETURN(int fd, connect_to(base, timeout_s));
  Socket socket(fd);
  STRATA_RETURN_IF_ERROR(send_all(fd, format_request(base, request)));
  std::string received;
  std::vector<char> buf(16 * 1024);
  while (true) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    Clock::time_point when = Clock::now();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return unavailable(std::string("read failed: ") + std::strerror(errno));
    if (n == 0) return unavailable("connection closed before an HTTP response arrived");
    received.append(buf.data(), static_cast<size_t>(n));
    size_t end = received.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (received.size() > 64 * 1024) return data_loss("HTTP response head over 64 KiB");
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(ResponseHead head,
                            parse_head(std::string_view(received).substr(0, end)));
    if (sink.on_head) sink.on_head(head.status);
    STRATA_RETURN_IF_ERROR(read_body(fd, head, received.substr(end + 4), when, sink));
    return head.status;
  }
}

StatusOr<HttpResponse> http_fetch(const BaseUrl& base, const HttpRequest& request,
                                  double timeout_s) {
  HttpResponse response;
  ResponseSink sink;
  sink.on_body = [&response](std::string_view bytes, Clock::time_point) {
    response.body.append(bytes);
    return true;
  };
  STRATA_ASSIGN_OR_RETURN(response.status, http_stream(base, request, timeout_s, sink));
  return response;
}

}  // namespace strata::bench
