#include "server/openai_format.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace strata::server {
namespace {

nlohmann::json event_json(const std::string& event) {
  EXPECT_EQ(event.rfind("data: ", 0), 0u);
  EXPECT_EQ(event.substr(event.size() - 2), "\n\n");
  std::string body = event.substr(6, event.size() - 8);
  EXPECT_EQ(body.find('\n'), std::string::npos);  // one line
  return nlohmann::json::parse(body);
}

TEST(SseFormat, ChatRoleChunkThenContentThenFinish) {
  ResponseMeta meta{"chatcmpl-1", 100, "m", true};
  ChoiceOutput role;
  role.with_role = true;
  nlohmann::json j = event_json(format_stream_chunk(meta, role, nullptr));
  EXPECT_EQ(j["object"], "chat.completion.chunk");
  EXPECT_EQ(j["choices"][0]["delta"], nlohmann::json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(j["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(j.contains("usage"));

  ChoiceOutput last;
  last.text = "x\"y";
  last.finish_reason = "stop";
  last.stop_reason_json = "\"###\"";
  j = event_json(format_stream_chunk(meta, last, nullptr));
  EXPECT_EQ(j["choices"][0]["delta"]["content"], "x\"y");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["stop_reason"], "###");

  ChoiceOutput empty_finish;
  empty_finish.finish_reason = "length";
  j = event_json(format_stream_chunk(meta, empty_finish, nullptr));
  EXPECT_EQ(j["choices"][0]["delta"], nlohmann::json::object());
}

TEST(SseFormat, UsageChunkAndDone) {
  ResponseMeta meta{"cmpl-1", 100, "m", false};
  Usage u{5, 3, 2};
  nlohmann::json j = event_json(format_usage_chunk(meta, u));
  EXPECT_TRUE(j["choices"].empty());
  EXPECT_EQ(j["usage"]["total_tokens"], 8);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
  EXPECT_STREQ(sse_done(), "data: [DONE]\n\n");
}

TEST(ResponseFormat, CompletionWithLogprobs) {
  ResponseMeta meta{"cmpl-1", 100, "m", false};
  ChoiceOutput c;
  c.text = "ab";
  c.has_logprobs = true;
  c.logprobs = {{"a", -0.5f, {{"a", -0.5f}, {"b", -1.0f}}, 0}, {"b", -0.25f, {}, 1}};
  c.finish_reason = "length";
  nlohmann::json j = nlohmann::json::parse(format_response(meta, {c}, Usage{3, 2, 0}));
  EXPECT_EQ(j["object"], "text_completion");
  const auto& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], nlohmann::json({"a", "b"}));
  EXPECT_EQ(lp["text_offset"], nlohmann::json({0, 1}));
  EXPECT_EQ(lp["token_logprobs"][1], -0.25);
  EXPECT_EQ(lp["top_logprobs"][0]["b"], -1.0);
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
}

TEST(ResponseFormat, ChatMessageAndLogprobs) {
  ResponseMeta meta{"chatcmpl-1", 100, "m", true};
  ChoiceOutput c;
  c.text = "hé";
  c.has_logprobs = true;
  c.logprobs = {{"hé", -0.5f, {{"hé", -0.5f}}, 0}};
  c.finish_reason = "stop";
  nlohmann::json j = nlohmann::json::parse(format_response(meta, {c}, Usage{3, 1, 0}));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "hé");
  const auto& content = j["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(content["bytes"], nlohmann::json({104, 195, 169}));
  EXPECT_EQ(content["top_logprobs"][0]["token"], "hé");
}

TEST(ResponseFormat, EchoedFirstTokenAndPromptLogprobs) {
  ResponseMeta meta{"cmpl-1", 100, "m", false};
  ChoiceOutput c;
  c.has_logprobs = true;
  c.logprobs = {{"a", 0.0f, {}, 0, true}, {"b", -1.5f, {{"b", -1.5f}}, 1}};
  c.prompt_logprobs_json =
      format_prompt_logprobs({PromptTokenLogprobs{{{7, "b", -1.5f, 2}, {9, "c", -0.5f, 1}}}});
  nlohmann::json j = nlohmann::json::parse(format_response(meta, {c}, Usage{}));
  const auto& lp = j["choices"][0]["logprobs"];
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["token_logprobs"][1], -1.5);
  const auto& pl = j["choices"][0]["prompt_logprobs"];
  EXPECT_TRUE(pl[0].is_null());
  EXPECT_EQ(pl[1]["7"]["rank"], 2);
  EXPECT_EQ(pl[1]["9"]["decoded_token"], "c");
}

}  // namespace
}  // namespace strata::server

namespace strata::server {
namespace {

TEST(ResponseFormat, ReturnTokenIds) {
  ResponseMeta meta{"cmpl-1", 100, "m", false};
  const std::vector<int32_t> prompt = {5, 6, 7};
  ChoiceOutput c;
  c.text = "ab";
  c.has_token_ids = true;
  c.token_ids = {11, 12};
  c.prompt_token_ids = &prompt;
  nlohmann::json j = nlohmann::json::parse(format_response(meta, {c}, Usage{3, 2, 0}));
  EXPECT_EQ(j["choices"][0]["token_ids"], nlohmann::json({11, 12}));
  EXPECT_EQ(j["choices"][0]["prompt_token_ids"], nlohmann::json({5, 6, 7}));
  c.prompt_token_ids = nullptr;  // a later stream chunk
  j = event_json(format_stream_chunk(meta, c, nullptr));
  EXPECT_EQ(j["choices"][0]["token_ids"], nlohmann::json({11, 12}));
  EXPECT_FALSE(j["choices"][0].contains("prompt_token_ids"));
  c.has_token_ids = false;  // not asked for: no fields
  j = event_json(format_stream_chunk(meta, c, nullptr));
  EXPECT_FALSE(j["choices"][0].contains("token_ids"));
}

TEST(ResponseFormat, EngineValuesInOpenAiTerms) {
  EXPECT_STREQ(openai_finish_reason(engine::FinishReason::kStop), "stop");
  EXPECT_STREQ(openai_finish_reason(engine::FinishReason::kLength), "length");
  EXPECT_STREQ(openai_finish_reason(engine::FinishReason::kAbort), "abort");
  EXPECT_STREQ(openai_finish_reason(engine::FinishReason::kNone), "");
  engine::KvTransferParams p{
      .do_remote_prefill = true, .remote_host = "10.0.0.7", .remote_port = 5710};
  EXPECT_EQ(format_kv_transfer_params(p),
            R"({"do_remote_prefill":true,"do_remote_decode":false,"remote_host":"10.0.0.7",)"
            R"("remote_port":5710})");
}

TEST(ResponseFormat, KvTransferParamsForPrefillDecode) {
  ResponseMeta meta{"cmpl-1", 100, "m", false};
  ChoiceOutput c;
  c.text = "a";
  c.finish_reason = "length";
  // Absent unless the request asked for a remote decode.
  nlohmann::json j = nlohmann::json::parse(format_response(meta, {c}, Usage{}));
  EXPECT_FALSE(j.contains("kv_transfer_params"));

  meta.kv_transfer_params_json = R"({"do_remote_prefill":true,"remote_port":5710})";
  j = nlohmann::json::parse(format_response(meta, {c}, Usage{}));
  EXPECT_EQ(j["kv_transfer_params"]["do_remote_prefill"], true);
  EXPECT_EQ(j["kv_transfer_params"]["remote_port"], 5710);

  // Streams: only the chunk that finishes the choice.
  ChoiceOutput middle;
  middle.text = "b";
  nlohmann::json chunk = event_json(format_stream_chunk(meta, middle, nullptr));
  EXPECT_FALSE(chunk.contains("kv_transfer_params"));
  EXPECT_EQ(event_json(format_stream_chunk(meta, c, nullptr))["kv_transfer_params"]["remote_port"],
            5710);
}

}  // namespace
}  // namespace strata::server
