#include "bench_serve/http_client.h"

#include <gtest/gtest.h>

#include "bench_serve/fake_server_test_util.h"

namespace strata::bench {
namespace {

using testing::FakeRequest;
using testing::FakeServer;
using testing::FakeWrite;

TEST(ParseBaseUrlTest, Forms) {
  auto a = parse_base_url("http://127.0.0.1:8000");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8000);
  EXPECT_EQ(a->path_prefix, "");
  auto b = parse_base_url("http://example.com/v1/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port, 80);
  EXPECT_EQ(b->path_prefix, "/v1");
  auto c = parse_base_url("localhost:9");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "localhost");
  EXPECT_EQ(c->to_string(), "http://localhost:9");
  EXPECT_FALSE(parse_base_url("https://x").ok());
  EXPECT_FALSE(parse_base_url("http://x:notaport").ok());
}

TEST(HttpClientTest, ChunkedBodyArrivesInPiecesWithTimes) {
  // The chunk header and payload arrive split across writes 30 ms apart.
  FakeServer server([](const FakeRequest&) {
    return std::vector<FakeWrite>{
        {0, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"},
        {30, "lo\r\n"},
        {30, "6\r\n world\r\n0\r\n\r\n"}};
  });
  auto base = parse_base_url(server.base_url());
  ASSERT_TRUE(base.ok());
  HttpRequest req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = R"({"x":1})";
  std::string body;
  std::vector<Clock::time_point> times;
  int head_status = 0;
  ResponseSink sink;
  sink.on_head = [&](int status) { head_status = status; };
  sink.on_body = [&](std::string_view bytes, Clock::time_point when) {
    body.append(bytes);
    times.push_back(when);
    return true;
  };
  StatusOr<int> status = http_stream(*base, req, 5, sink);
  ASSERT_TRUE(status.ok()) << status.status().message();
  EXPECT_EQ(*status, 200);
  EXPECT_EQ(head_status, 200);
  EXPECT_EQ(body, "hello world");
  ASSERT_GE(times.size(), 3u);
  EXPECT_GE(times.back() - times.front(), std::chrono::milliseconds(50));
  const std::vector<FakeRequest> seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/v1/completions");
  EXPECT_EQ(seen[0].body, R"({"x":1})");
  EXPECT_EQ(seen[0].header("Content-Length"), "7");
}

TEST(HttpClientTest, ContentLengthAndErrorStatus) {
  FakeServer server([](const FakeRequest&) { return testing::json_response(404, "{\"e\":1}"); });
  auto base = parse_base_url(server.base_url());
  HttpRequest req;
  req.path = "/missing";
  StatusOr<HttpResponse> r = http_fetch(*base, req, 5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, "{\"e\":1}");
}

TEST(HttpClientTest, TruncatedChunkedBodyIsAnError) {
  FakeServer server([](const FakeRequest&) {
    return std::vector<FakeWrite>{
        {0, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe"}};
  });
  auto base = parse_base_url(server.base_url());
  StatusOr<HttpResponse> r = http_fetch(*base, HttpRequest{}, 5);
  EXPECT_FALSE(r.ok());
}

TEST(HttpClientTest, RefusedConnectionIsUnavailable) {
  int port = 0;
  {
    FakeServer gone([](const FakeRequest&) { return std::vector<FakeWrite>{}; });
    port = gone.port();
  }
  auto base = parse_base_url("http://127.0.0.1:" + std::to_string(port));
  StatusOr<HttpResponse> r = http_fetch(*base, HttpRequest{}, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace strata::bench
