#include "server/http_server.h"

// Before Boost 1.74's asio headers: awaitable.hpp uses std::exchange.
// clang-format off
#include <utility>
// clang-format on

#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "base/log.h"
#include "server/json_writer.h"

namespace strata::server {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
constexpr int kLingerSeconds = 2;

// A request the parser rejected (as opposed to a client that went away or
// timed out): it gets a 400 (431 for an oversized header) before the close.
bool is_malformed_request(beast::error_code ec) {
  static const auto& http_category = http::make_error_code(http::error::bad_version).category();
  return ec && ec.category() == http_category && ec != http::error::end_of_stream &&
         ec != http::error::partial_message && ec != http::error::need_more;
}

std::string status_line(int status) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
}

std::string chunk(const std::string& data) {
  char size[20];
  int n = std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  std::string out(size, static_cast<size_t>(n));
  out.append(data).append("\r\n");
  return out;
}

class Session;

// The answer channel of one request on a Session.
class SessionResponder : public HttpResponder {
 public:
  SessionResponder(std::shared_ptr<Session> session, uint64_t seq)
      : session_(std::move(session)), seq_(seq) {}
  void reply(int status, std::string_view content_type, std::string body) override;
  void begin_stream(std::string_view content_type) override;
  void write(std::string data) override;
  void end_stream() override;
  void on_disconnect(std::function<void()> callback) override;
  bool is_open() const override;

 private:
  std::shared_ptr<Session> session_;
  uint64_t seq_;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpServerOptions& options, const HttpHandler& handler)
      : stream_(std::move(socket)), options_(options), handler_(handler) {}

  void start() { do_read(); }

  // Responder operations, valid for the current request `seq` only.
  bool is_current(uint64_t seq) const { return seq == seq_ && !response_done_ && !closed_; }
  void reply(uint64_t seq, int status, std::string_view content_type, std::string body);
  void begin_stream(uint64_t seq, std::string_view content_type);
  void write(uint64_t seq, std::string data) {
    if (is_current(seq) && streaming_) enqueue(chunk(data));
  }
  void end_stream(uint64_t seq);
  void set_disconnect(uint64_t seq, std::function<void()> cb) {
    if (is_current(seq)) on_disconnect_ = std::move(cb);
  }

 private:
  void do_read();
  void on_header(beast::error_code ec, size_t bytes);
  void read_body();
  void on_read(beast::error_code ec, size_t bytes);
  void reply_too_large();
  void reply_malformed(beast::error_code ec);
  void reply_unparsed(int status, const std::string& type, const std::string& message);
  void linger_then_close();
  void dispatch();
  void start_watch();
  void on_watch(beast::error_code ec, size_t bytes);
  void enqueue(std::string bytes);
  void flush();
  void on_write(beast::error_code ec, size_t bytes);
  void finish_response();
  void client_gone();
  void close();

  beast::tcp_stream stream_;
  const HttpServerOptions& options_;
  const HttpHandler& handler_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  uint64_t seq_ = 0;
  bool keep_alive_ = true;
  bool is_head_ = false;  // HEAD: headers only
  bool response_done_ = true;
  bool streaming_ = false;
  bool closed_ = false;
  bool linger_on_close_ = false;  // the client may still be sending (unread request bytes)
  std::array<char, 4096> drain_buf_;
  bool watching_ = false;
  bool want_next_read_ = false;
  bool close_after_write_ = false;
  std::function<void()> on_disconnect_;
  std::deque<std::string> queue_;
  std::string writing_;
  bool write_in_flight_ = false;
};

void Session::do_read() {
  parser_.emplace();
  parser_->body_limit(static_cast<uint64_t>(options_.max_body_bytes));
  parser_->header_limit(kMaxHeaderBytes);
  stream_.expires_after(std::chrono::seconds(options_.idle_timeout_s));
  http::async_read_header(stream_, buffer_, *parser_,
                          beast::bind_front_handler(&Session::on_header, shared_from_this()));
}

// curl sends `Expect: 100-continue` with larger bodies and waits a second
// for the interim answer unless it gets one.
void Session::on_header(beast::error_code ec, size_t) {
  if (ec == http::error::body_limit) return reply_too_large();
  if (is_malformed_request(ec)) return reply_malformed(ec);
  if (ec) return close();
  if (!beast::iequals(parser_->get()[http::field::expect], "100-continue")) return read_body();
  static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  net::async_write(stream_, net::buffer(kContinue),
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     if (ec) return self->close();
                     self->read_body();
                   });
}

void Session::read_body() {
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&Session::on_read, shared_from_this()));
}

void Session::reply_too_large() {
  reply_unparsed(413, "RequestEntityTooLargeError",
                 "request body exceeds " + std::to_string(options_.max_body_bytes) + " bytes");
}

void Session::reply_malformed(beast::error_code ec) {
  if (ec == http::error::header_limit) {
    return reply_unparsed(431, "BadRequestError",
                          "request header exceeds " + std::to_string(kMaxHeaderBytes) + " bytes");
  }
  reply_unparsed(400, "BadRequestError", "malformed HTTP request: " + ec.message());
}

// An answer to a request that was never fully read: the connection closes
// after it (the rest of the request cannot be found in the byte stream).
void Session::reply_unparsed(int status, const std::string& type, const std::string& message) {
  ++seq_;
  response_done_ = false;
  keep_alive_ = false;
  is_head_ = false;
  linger_on_close_ = true;
  JsonWriter body;
  body.begin_object().key("error").begin_object();
  body.key("message").value(message).key("type").value(type).key("param").null();
  body.key("code").value(status).end_object().end_object();
  reply(seq_, status, "application/json", body.str());
}

// Closing a socket whose receive queue holds unread bytes makes the kernel
// send a reset, which can destroy the answer before the client reads it. So
// stop sending, read and discard what the client still sends for a bounded
// time, then close.
void Session::linger_then_close() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream_.expires_after(std::chrono::seconds(kLingerSeconds));
  stream_.async_read_some(net::buffer(drain_buf_),
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            if (ec) return self->close();
                            self->linger_then_close();
                          });
}

void Session::on_read(beast::error_code ec, size_t) {
  if (ec == http::error::body_limit) return reply_too_large();
  if (is_malformed_request(ec)) return reply_malformed(ec);
  if (ec) return close();
  dispatch();
}

void Session::dispatch() {
  http::request<http::string_body> msg = parser_->release();
  HttpRequest req;
  req.method = std::string(msg.method_string());
  std::string_view target(msg.target().data(), msg.target().size());
  size_t q = target.find('?');
  req.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) req.query = std::string(target.substr(q + 1));
  req.authorization = std::string(msg[http::field::authorization]);
  req.request_id = std::string(msg["x-request-id"]);
  req.body = std::move(msg.body());
  keep_alive_ = msg.keep_alive();
  is_head_ = msg.method() == http::verb::head;
  ++seq_;
  response_done_ = false;
  streaming_ = false;
  on_disconnect_ = nullptr;
  stream_.expires_never();
  handler_(std::move(req), std::make_shared<SessionResponder>(shared_from_this(), seq_));
  if (!response_done_ && !closed_ && !watching_) start_watch();
}

// Reads while an answer is pending, to notice a client that goes away.
// Bytes that arrive (a pipelined request) stay in buffer_ for do_read().
void Session::start_watch() {
  if (buffer_.size() > 64 * 1024) return;
  watching_ = true;
  stream_.async_read_some(buffer_.prepare(4096),
                          beast::bind_front_handler(&Session::on_watch, shared_from_this()));
}

void Session::on_watch(beast::error_code ec, size_t bytes) {
  watching_ = false;
  if (!ec) buffer_.commit(bytes);
  if (ec && ec != net::error::operation_aborted) return client_gone();
  if (response_done_) {
    if (want_next_read_) {
      want_next_read_ = false;
      do_read();
    }
    return;
  }
  if (!ec) start_watch();
}

void Session::reply(uint64_t seq, int status, std::string_view content_type, std::string body) {
  if (!is_current(seq) || streaming_) return;
  std::string head = status_line(status);
  head.append("content-type: ").append(content_type).append("\r\n");
  head.append("content-length: ").append(std::to_string(body.size())).append("\r\n");
  head.append(keep_alive_ ? "connection: keep-alive\r\n" : "connection: close\r\n");
  head.append("server: strata\r\n\r\n");
  if (!is_head_) head.append(body);
  enqueue(std::move(head));
  finish_response();
}

void Session::begin_stream(uint64_t seq, std::string_view content_type) {
  if (!is_current(seq) || streaming_) return;
  streaming_ = true;
  std::string head = status_line(200);
  head.append("content-type: ").append(content_type).append("\r\n");
  head.append("cache-control: no-cache\r\ntransfer-encoding: chunked\r\n");
  head.append(keep_alive_ ? "connection: keep-alive\r\n" : "connection: close\r\n");
  head.append("server: strata\r\n\r\n");
  enqueue(std::move(head));
}

void Session::end_stream(uint64_t seq) {
  if (!is_current(seq) || !streaming_) return;
  enqueue("0\r\n\r\n");
  finish_response();
}

void Session::finish_response() {
  response_done_ = true;
  on_disconnect_ = nullptr;
  if (!keep_alive_) close_after_write_ = true;
  if (!write_in_flight_ && queue_.empty()) on_write({}, 0);
}

void Session::enqueue(std::string bytes) {
  queue_.push_back(std::move(bytes));
  if (!write_in_flight_) flush();
}

void Session::flush() {
  writing_.clear();
  while (!queue_.empty()) {
    writing_.append(queue_.front());
    queue_.pop_front();
  }
  write_in_flight_ = true;
  net::async_write(stream_, net::buffer(writing_),
                   beast::bind_front_handler(&Session::on_write, shared_from_this()));
}

void Session::on_write(beast::error_code ec, size_t) {
  write_in_flight_ = false;
  if (ec) return client_gone();
  if (!queue_.empty()) return flush();
  if (!response_done_ || closed_) return;
  if (close_after_write_) return linger_on_close_ ? linger_then_close() : close();
  // The answer is out: read the next request once the watch read is cancelled.
  if (watching_) {
    want_next_read_ = true;
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
  } else {
    do_read();
  }
}

void Session::client_gone() {
  if (closed_) return;
  std::function<void()> cb = std::move(on_disconnect_);
  on_disconnect_ = nullptr;
  close();
  if (cb && !response_done_) cb();
}

void Session::close() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.socket().close(ec);
}

void SessionResponder::reply(int status, std::string_view content_type, std::string body) {
  session_->reply(seq_, status, content_type, std::move(body));
}
void SessionResponder::begin_stream(std::string_view content_type) {
  session_->begin_stream(seq_, content_type);
}
void SessionResponder::write(std::string data) { session_->write(seq_, std::move(data)); }
void SessionResponder::end_stream() { session_->end_stream(seq_); }
void SessionResponder::on_disconnect(std::function<void()> callback) {
  session_->set_disconnect(seq_, std::move(callback));
}
bool SessionResponder::is_open() const { return session_->is_current(seq_); }

}  // namespace

// Work other threads hand to the I/O thread (HttpServer::post). Not
// net::post: Asio's post takes the scheduler's mutex and, with the I/O thread
// in epoll_wait, re-arms its interrupter with epoll_ctl while holding it, so
// the woken I/O thread blocks on that mutex at once. One engine output per
// token made that two futex calls and four context switches per streamed
// token, the I/O thread's and the compute threads' time on a 2-core host
// (BENCHMARKS.md, "A served stream"). Here a poster takes a mutex only to
// append, and writes an eventfd only when the I/O thread has not been woken
// for earlier work yet; the I/O thread reads the eventfd (resetting it) and
// then takes every queued function in one swap.
class Mailbox {
 public:
  explicit Mailbox(net::io_context& io) : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), wake_(io) {
    if (fd_ >= 0) wake_.assign(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  // Any thread.
  void post(std::function<void()> fn) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queued_.push_back(std::move(fn));
      wake = !wake_pending_;
      wake_pending_ = true;
    }
    if (wake) {
      const uint64_t one = 1;
      ssize_t n;
      do {
        n = ::write(fd_, &one, sizeof(one));
      } while (n < 0 && errno == EINTR);  // EAGAIN: the counter is already set
    }
  }

  // I/O thread: waits for the eventfd, runs what was queued, waits again.
  void arm() {
    wake_.async_read_some(net::buffer(&counter_, sizeof(counter_)),
                          [this](beast::error_code ec, size_t) {
                            if (ec == net::error::operation_aborted) return;
                            std::vector<std::function<void()>> batch;
                            {
                              std::lock_guard<std::mutex> lock(mu_);
                              batch.swap(queued_);
                              wake_pending_ = false;
                            }
                            for (auto& fn : batch) fn();
                            arm();
                          });
  }

 private:
  int fd_;
  net::posix::stream_descriptor wake_;  // owns fd_ once assigned
  uint64_t counter_ = 0;
  std::mutex mu_;
  std::vector<std::function<void()>> queued_;
  bool wake_pending_ = false;
};

struct HttpServer::Impl {
  HttpServerOptions options;
  HttpHandler handler;
  net::io_context io{1};
  tcp::acceptor acceptor{io};
  net::signal_set signals{io};
  Mailbox mailbox{io};
  bool accepting = true;

  void accept() {
    acceptor.async_accept(net::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
      if (!accepting) return;
      if (!ec) {
        socket.set_option(tcp::no_delay(true), ec);
        std::make_shared<Session>(std::move(socket), options, handler)->start();
      }
      accept();
    });
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() = default;

StatusOr<std::unique_ptr<HttpServer>> HttpServer::create(const HttpServerOptions& options,
                                                         HttpHandler handler) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->handler = std::move(handler);
  beast::error_code ec;
  net::ip::address address = net::ip::make_address(options.host, ec);
  if (ec) return invalid_argument("--host '" + options.host + "' is not an IP address");
  tcp::endpoint endpoint(address, static_cast<unsigned short>(options.port));
  auto& acc = impl->acceptor;
  if (!acc.open(endpoint.protocol(), ec) &&
      !acc.set_option(net::socket_base::reuse_address(true), ec) && !acc.bind(endpoint, ec) &&
      !acc.listen(net::socket_base::max_listen_connections, ec)) {
    if (!impl->mailbox.ok()) {
      return unavailable(std::string("cannot create the I/O thread's eventfd: ") +
                         std::strerror(errno));
    }
    impl->accept();
    impl->mailbox.arm();
    return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
  }
  return unavailable("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                     ": " + ec.message());
}

int HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::run() { impl_->io.run(); }

void HttpServer::stop_accepting() {
  net::post(impl_->io, [impl = impl_.get()] {
    impl->accepting = false;
    beast::error_code ec;
    impl->acceptor.close(ec);
  });
}

void HttpServer::stop() { impl_->io.stop(); }

void HttpServer::post(std::function<void()> fn) { impl_->mailbox.post(std::move(fn)); }

void HttpServer::post_after(int delay_ms, std::function<void()> fn) {
  auto timer = std::make_shared<net::steady_timer>(impl_->io);
  timer->expires_after(std::chrono::milliseconds(delay_ms));
  timer->async_wait([timer, fn = std::move(fn)](beast::error_code) { fn(); });
}

void HttpServer::on_signal(std::function<void(int)> fn) {
  impl_->signals.add(SIGINT);
  impl_->signals.add(SIGTERM);
  impl_->signals.async_wait([fn = std::move(fn)](beast::error_code ec, int sig) {
    if (!ec) fn(sig);
  });
}

}  // namespace strata::server
