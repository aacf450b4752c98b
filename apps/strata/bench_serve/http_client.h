// A small blocking HTTP/1.1 client for the serving benchmark. One TCP
// connection per request (`Connection: close`), plain http only. The body is
// handed to the caller as it arrives, de-chunked, together with the time the
// socket read that produced it returned: SSE chunk gaps are measured where
// the bytes land, as an asyncio client would.
//
//   parse_base_url   "http://host:port[/prefix]" -> BaseUrl
//   http_stream      one request; head and body pieces go to a ResponseSink
//   http_fetch       one request; the whole body as a string
//
// Thread-safety: free functions, callable from many threads at once.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace strata::bench {

using Clock = std::chrono::steady_clock;

struct BaseUrl {
  std::string host;
  int port = 80;
  std::string path_prefix;  // "" or "/something" (no trailing slash)
  std::string to_string() const;
};

// Accepts "http://host[:port][/prefix]" and "host:port"; https is refused
// with a message saying so.
StatusOr<BaseUrl> parse_base_url(const std::string& url);

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // appended to BaseUrl::path_prefix
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond Host/Content-Length
};

struct ResponseSink {
  std::function<void(int status)> on_head;  // optional
  // Required. Returns false to stop reading (the connection is closed).
  std::function<bool(std::string_view bytes, Clock::time_point when)> on_body;
};

// Sends `request` and streams the response. `timeout_s` bounds the connect
// and every single read (an idle stream), not the whole response. Returns
// the HTTP status; transport failures (refused, reset, timeout, malformed
// response) are errors.
StatusOr<int> http_stream(const BaseUrl& base, const HttpRequest& request, double timeout_s,
                          const ResponseSink& sink);

struct HttpResponse {
  int status = 0;
  std::string body;
};
StatusOr<HttpResponse> http_fetch(const BaseUrl& base, const HttpRequest& request,
                                  double timeout_s);

}  // namespace strata::bench
