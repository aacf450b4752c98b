#include "bench_serve/openai_stream.h"

#include <gtest/gtest.h>

namespace strata::bench {
namespace {

Clock::time_point at_ms(Clock::time_point t0, int ms) { return t0 + std::chrono::milliseconds(ms); }

std::string event(const std::string& json) { return "data: " + json + "\n\n"; }

TEST(OpenAiStreamTest, CompletionTimingAndUsage) {
  const Clock::time_point t0 = Clock::now();
  StreamAccumulator s(false, t0);
  s.on_bytes(event(R"({"choices":[{"index":0,"text":"He","finish_reason":null}]})"),
             at_ms(t0, 100));
  // Two events in one read share its timestamp: a zero gap, as in vLLM.
  s.on_bytes(event(R"({"choices":[{"index":0,"text":"l"}]})") +
                 event(R"({"choices":[{"index":0,"text":"lo","finish_reason":"length"}]})"),
             at_ms(t0, 150));
  s.on_bytes(event(R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":4,)"
                   R"("total_tokens":16,"prompt_tokens_details":{"cached_tokens":8}}})"),
             at_ms(t0, 160));
  s.on_bytes("data: [DONE]\n\n", at_ms(t0, 170));
  RequestRecord r;
  r.prompt_len = 10;
  s.finish(200, "", &r);
  ASSERT_TRUE(r.success) << r.error;
  EXPECT_NEAR(r.ttft_s, 0.100, 1e-9);
  EXPECT_NEAR(r.latency_s, 0.150, 1e-9);  // the last chunk with choices, not the usage chunk
  ASSERT_EQ(r.itl_s.size(), 2u);
  EXPECT_NEAR(r.itl_s[0], 0.050, 1e-9);
  EXPECT_NEAR(r.itl_s[1], 0.0, 1e-9);
  EXPECT_EQ(r.output_tokens, 4);  // usage wins over the 3 chunks
  EXPECT_EQ(r.prompt_len, 12);
  EXPECT_EQ(r.cached_tokens, 8);
  EXPECT_EQ(r.generated_text, "Hello");
}

TEST(OpenAiStreamTest, ChatDeltasWithoutUsageCountChunks) {
  const Clock::time_point t0 = Clock::now();
  StreamAccumulator s(true, t0);
  s.on_bytes(event(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})"),
             at_ms(t0, 30));
  s.on_bytes(event(R"({"choices":[{"index":0,"delta":{"content":"Hi"},"token_ids":[5]}]})"),
             at_ms(t0, 40));
  s.on_bytes(
      event(R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop","token_ids":[6]}]})"),
      at_ms(t0, 45));
  RequestRecord r;
  r.prompt_len = 7;
  s.finish(200, "", &r);
  ASSERT_TRUE(r.success);
  EXPECT_NEAR(r.ttft_s, 0.030, 1e-9);  // the role chunk counts (vLLM's rule)
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_EQ(r.prompt_len, 7);
  EXPECT_EQ(r.cached_tokens, -1);
  EXPECT_EQ(r.generated_text, "Hi");
  EXPECT_EQ(r.output_token_ids, (std::vector<int32_t>{5, 6}));
}

TEST(OpenAiStreamTest, Failures) {
  const Clock::time_point t0 = Clock::now();
  {
    StreamAccumulator s(false, t0);
    s.on_bytes(R"({"error":{"message":"bad","code":400}})", t0);
    RequestRecord r;
    s.finish(400, "", &r);
    EXPECT_FALSE(r.success);
    EXPECT_NE(r.error.find("HTTP 400"), std::string::npos);
    EXPECT_NE(r.error.find("bad"), std::string::npos);
  }
  {
    StreamAccumulator s(false, t0);
    s.on_bytes(event(R"({"choices":[{"text":"a"}]})") +
                   event(R"({"error":{"message":"engine died","code":500}})"),
               t0);
    RequestRecord r;
    s.finish(200, "", &r);
    EXPECT_FALSE(r.success);
    EXPECT_NE(r.error.find("engine died"), std::string::npos);
  }
  {
    StreamAccumulator s(false, t0);
    s.on_bytes(event(R"({"choices":[],"usage":{"completion_tokens":0}})"), t0);
    RequestRecord r;
    s.finish(200, "", &r);
    EXPECT_FALSE(r.success);  // no token chunk: no TTFT
  }
  {
    StreamAccumulator s(false, t0);
    RequestRecord r;
    s.finish(0, "cannot connect", &r);
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.error, "cannot connect");
  }
}

}  // namespace
}  // namespace strata::bench
