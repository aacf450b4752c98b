// HttpServer: HTTP/1.1 on Boost.Beast/Asio with keep-alive, chunked
// streaming (SSE) and client-disconnect detection, run by one I/O thread.
//
// Requests are parsed by Beast (header and body limits; an oversized body is
// answered 413) and handed to one HttpHandler together with an HttpResponder,
// the answer channel for that request. The handler may answer at once or
// later (after engine output arrives): every HttpResponder call must happen
// on the I/O thread, so other threads hand work over with post().
//
// While an answer is pending the connection is watched: when the client goes
// away, the responder's disconnect callback runs (once) on the I/O thread,
// and later writes are dropped.
//
// Thread-safety: start()/stop_accepting()/stop()/post()/post_after() may be
// called from any thread; run() blocks the thread that becomes the I/O thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace strata::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string
  std::string query;
  std::string body;
  std::string authorization;  // the Authorization header, "" if absent
  std::string request_id;     // X-Request-Id, "" if absent
};

class HttpResponder {
 public:
  virtual ~HttpResponder() = default;
  // A complete answer (Content-Length). Ends the response.
  virtual void reply(int status, std::string_view content_type, std::string body) = 0;
  // 200 with chunked transfer encoding; then write()s, then end_stream().
  virtual void begin_stream(std::string_view content_type) = 0;
  virtual void write(std::string data) = 0;
  virtual void end_stream() = 0;
  // Runs once if the client disconnects before the response ends.
  virtual void on_disconnect(std::function<void()> callback) = 0;
  // False once the response ended or the client went away.
  virtual bool is_open() const = 0;
};

using HttpHandler = std::function<void(HttpRequest, std::shared_ptr<HttpResponder>)>;

struct HttpServerOptions {
  std::string host = "0.0.0.0";
  int port = 8000;  // 0 = any free port
  int64_t max_body_bytes = 32 << 20;
  int idle_timeout_s = 120;  // keep-alive connections idle this long are closed
};

class HttpServer {
 public:
  // Binds and listens (errors: bad address, port in use); serves once run().
  static StatusOr<std::unique_ptr<HttpServer>> create(const HttpServerOptions& options,
                                                      HttpHandler handler);
  ~HttpServer();

  int port() const;  // the bound port
  void run();        // serves until stop(); the calling thread is the I/O thread
  void stop_accepting();
  void stop();
  void post(std::function<void()> fn);
  void post_after(int delay_ms, std::function<void()> fn);
  // Calls `fn(signal)` on the I/O thread for SIGINT and SIGTERM.
  void on_signal(std::function<void(int)> fn);

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::server
