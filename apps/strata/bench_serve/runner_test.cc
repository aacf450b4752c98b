// The runners against a scripted OpenAI-style server: concurrency limits,
// measured records, and how multi-turn prompts grow.
#include "bench_serve/runner.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench_serve/conversation_runner.h"
#include "bench_serve/fake_server_test_util.h"
#include "bench_serve/server_probe.h"
#include "bench_serve/serving_metrics.h"

namespace strata::bench {
namespace {

using nlohmann::json;
using testing::FakeRequest;
using testing::FakeServer;
using testing::FakeWrite;

constexpr int32_t kFirstAnswerId = 9000;

// Streams max_tokens completion chunks 2 ms apart (token ids 9000, 9001, ...
// when `with_ids`), then usage. /tokenize answers two ids per request.
std::vector<FakeWrite> completion_server(const FakeRequest& r, bool with_ids) {
  if (r.path == "/tokenize") return testing::json_response(200, R"({"count":2,"tokens":[7,8]})");
  const json body = json::parse(r.body);
  const int64_t n = body["max_tokens"].get<int64_t>();
  const bool chat = body.contains("messages");
  const int64_t prompt_len = chat ? 3 : static_cast<int64_t>(body["prompt"].size());
  std::vector<std::string> events;
  for (int64_t i = 0; i < n; ++i) {
    json choice = chat ? json{{"index", 0}, {"delta", {{"content", "w"}}}}
                       : json{{"index", 0}, {"text", "w"}};
    if (with_ids) choice["token_ids"] = {kFirstAnswerId + i};
    events.push_back(json{{"choices", {choice}}}.dump());
  }
  events.push_back(json{{"choices", json::array()},
                        {"usage", {{"prompt_tokens", prompt_len}, {"completion_tokens", n}}}}
                       .dump());
  return testing::sse_response(events, 2);
}

RunOptions options_for(const FakeServer& server, bool chat) {
  RunOptions o;
  o.client.base_url = *parse_base_url(server.base_url());
  o.client.model = "m";
  o.client.is_chat = chat;
  o.client.endpoint_path = chat ? "/v1/chat/completions" : "/v1/completions";
  o.show_progress = false;
  return o;
}

const PromptSource kIds(false, TokenRange{100, 4000}, 1.0);

TEST(RunnerTest, RespectsConcurrencyAndMeasuresEveryRequest) {
  FakeServer server([](const FakeRequest& r) { return completion_server(r, false); });
  RunOptions o = options_for(server, false);
  o.max_concurrency = 2;
  RandomDatasetConfig c;
  c.num_prompts = 6;
  c.input_len = 12;
  c.output_len = 5;
  const RunResult run = run_prompts(o, make_random_dataset(c, kIds));
  ASSERT_EQ(run.records.size(), 6u);
  EXPECT_LE(server.max_open_connections(), 2);
  for (const RequestRecord& r : run.records) {
    ASSERT_TRUE(r.success) << r.error;
    EXPECT_EQ(r.prompt_len, 12);
    EXPECT_EQ(r.output_tokens, 5);
    EXPECT_EQ(r.itl_s.size(), 4u);
    EXPECT_GT(r.ttft_s, 0);
    EXPECT_GE(r.latency_s, r.ttft_s);
  }
  const ServingMetrics m = compute_serving_metrics(run.records, run.duration_s, {99}, {});
  EXPECT_EQ(m.completed, 6);
  EXPECT_EQ(m.total_output, 30);
  EXPECT_GT(m.output_throughput, 0);
  const std::vector<FakeRequest> seen = server.requests();
  ASSERT_EQ(seen.size(), 6u);
  const json body = json::parse(seen[0].body);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["model"], "m");
  EXPECT_TRUE(body["prompt"].is_array());
  EXPECT_FALSE(seen[0].header("x-request-id").empty());
}

TEST(RunnerTest, FiniteRateSpreadsDispatch) {
  FakeServer server([](const FakeRequest& r) { return completion_server(r, false); });
  RunOptions o = options_for(server, false);
  o.request_rate = 20;  // 4 requests: the last leaves at 4 / 20 = 0.2 s
  RandomDatasetConfig c;
  c.num_prompts = 4;
  c.input_len = 4;
  c.output_len = 2;
  const RunResult run = run_prompts(o, make_random_dataset(c, kIds));
  double last_start = 0;
  for (const RequestRecord& r : run.records) last_start = std::max(last_start, r.start_s);
  EXPECT_GE(last_start, 0.19);
}

// Each turn's prompt must be exactly the previous turn's prompt, then the
// answer's ids, then the new user turn.
void expect_prompts_grow(const std::vector<FakeRequest>& seen,
                         const std::vector<Conversation>& convs,
                         const std::vector<int32_t>& answer) {
  for (size_t c = 0; c < convs.size(); ++c) {
    std::vector<int32_t> expected;
    for (size_t t = 0; t < convs[c].user_turns.size(); ++t) {
      if (t > 0) expected.insert(expected.end(), answer.begin(), answer.end());
      const auto& user = convs[c].user_turns[t].token_ids;
      expected.insert(expected.end(), user.begin(), user.end());
      const std::string id = "strata-bench-c" + std::to_string(c) + "-t" + std::to_string(t);
      bool found = false;
      for (const FakeRequest& r : seen) {
        if (r.header("x-request-id") != id) continue;
        found = true;
        EXPECT_EQ(json::parse(r.body)["prompt"].get<std::vector<int32_t>>(), expected) << id;
      }
      EXPECT_TRUE(found) << id;
    }
  }
}

std::vector<Conversation> small_conversations(int64_t n) {
  MultiTurnConfig c;
  c.num_conversations = n;
  c.first_turn_len = 20;
  c.num_rounds = 2;
  c.round_len = 5;
  c.output_len = 4;
  return make_multi_turn_dataset(c, kIds);
}

TEST(ConversationRunnerTest, PromptsGrowWithStreamedAnswerIds) {
  FakeServer server([](const FakeRequest& r) { return completion_server(r, true); });
  RunOptions o = options_for(server, false);
  o.max_concurrency = 2;
  const std::vector<Conversation> convs = small_conversations(3);
  const ConversationRunResult run = run_conversations(o, ConversationOptions{}, convs);
  ASSERT_EQ(run.run.records.size(), 9u);
  EXPECT_LE(server.max_open_connections(), 2);
  EXPECT_EQ(run.num_answers_streamed_ids, 9);
  expect_prompts_grow(server.requests(), convs, {9000, 9001, 9002, 9003});
  for (const RequestRecord& r : run.run.records) {
    EXPECT_TRUE(r.success);
    EXPECT_EQ(r.prompt_len, 20 + r.turn_idx * (4 + 5));
  }
}

TEST(ConversationRunnerTest, FallsBackToTokenizeAndTruncatesAtMaxModelLen) {
  FakeServer server([](const FakeRequest& r) { return completion_server(r, false); });
  RunOptions o = options_for(server, false);
  ConversationOptions c;
  c.max_model_len = 38;  // turn 2 would need 20 + 2 + 5 + 2 + 5 + 4 = 38: fits; 37 would not
  const std::vector<Conversation> convs = small_conversations(2);
  ConversationRunResult run = run_conversations(o, c, convs);
  EXPECT_EQ(run.num_truncated_conversations, 0);
  EXPECT_EQ(run.num_answers_tokenized, 6);
  expect_prompts_grow(server.requests(), convs, {7, 8});  // the ids /tokenize returned
  c.max_model_len = 37;
  run = run_conversations(o, c, convs);
  EXPECT_EQ(run.num_truncated_conversations, 2);
  EXPECT_EQ(run.run.records.size(), 4u);  // two turns each
}

TEST(ConversationRunnerTest, ChatHistoryCarriesAssistantMessages) {
  FakeServer server([](const FakeRequest& r) { return completion_server(r, false); });
  RunOptions o = options_for(server, true);
  const std::vector<Conversation> convs =
      make_multi_turn_dataset({1, 6, 1, 3, 4, 0, 5}, PromptSource(true, TokenRange{}, 1.0));
  const ConversationRunResult run = run_conversations(o, ConversationOptions{}, convs);
  ASSERT_EQ(run.run.records.size(), 2u);
  for (const FakeRequest& r : server.requests()) {
    if (r.header("x-request-id") != "strata-bench-c0-t1") continue;
    const json messages = json::parse(r.body)["messages"];
    ASSERT_EQ(messages.size(), 3u);
    EXPECT_EQ(messages[0]["content"], convs[0].user_turns[0].text);
    EXPECT_EQ(messages[1]["role"], "assistant");
    EXPECT_EQ(messages[1]["content"], "wwww");
    EXPECT_EQ(messages[2]["content"], convs[0].user_turns[1].text);
  }
}

TEST(ConversationRunnerTest, RoundRobinInterleavesConversations) {
  FakeServer server([](const FakeRequest& r) { return completion_server(r, true); });
  RunOptions o = options_for(server, false);
  o.max_concurrency = 1;  // one request at a time: the order is the schedule
  run_conversations(o, ConversationOptions{}, small_conversations(3));
  std::vector<std::string> order;
  for (const FakeRequest& r : server.requests()) order.push_back(r.header("x-request-id"));
  ASSERT_EQ(order.size(), 9u);
  EXPECT_EQ(order[0], "strata-bench-c0-t0");
  EXPECT_EQ(order[1], "strata-bench-c1-t0");
  EXPECT_EQ(order[2], "strata-bench-c2-t0");
  EXPECT_EQ(order[3], "strata-bench-c0-t1");
  EXPECT_EQ(order[8], "strata-bench-c2-t2");
}

TEST(ServerProbeTest, TokenizeFallsBackToLlamaCppForm) {
  // llama-server answers the vLLM form with 200 and no tokens.
  FakeServer server([](const FakeRequest& r) {
    const json body = json::parse(r.body);
    if (body.contains("content")) return testing::json_response(200, R"({"tokens":[4,5,6]})");
    return testing::json_response(200, R"({"tokens":[]})");
  });
  RunOptions o = options_for(server, false);
  StatusOr<std::vector<int32_t>> ids = tokenize_text(o.client, "some text");
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  EXPECT_EQ(*ids, (std::vector<int32_t>{4, 5, 6}));
  StatusOr<double> tpw = measure_tokens_per_word(o.client, 0);
  ASSERT_TRUE(tpw.ok());
  EXPECT_NEAR(*tpw, 3.0 / 2000, 1e-12);
}

TEST(ServerProbeTest, ModelInfoFromV1Models) {
  FakeServer server([](const FakeRequest&) {
    return testing::json_response(
        200, R"({"object":"list","data":[{"id":"a","root":"org/a","max_model_len":4096},)"
             R"({"id":"b"}]})");
  });
  RunOptions o = options_for(server, false);
  o.client.model = "";
  StatusOr<ModelInfo> info = fetch_model_info(o.client, 0);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->id, "a");
  EXPECT_EQ(info->root, "org/a");
  EXPECT_EQ(info->max_model_len, 4096);
  o.client.model = "b";
  info = fetch_model_info(o.client, 0);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->id, "b");
  EXPECT_EQ(info->max_model_len, 0);  // not reported
}

}  // namespace
}  // namespace strata::bench
