#include "server/chat_output.h"

#include <gtest/gtest.h>

#include <map>

namespace strata::server {
namespace {

struct Reassembled {
  std::string content, reasoning;
  std::map<int, ToolCallOutput> calls;
};

std::function<std::string()> counter_ids() {
  auto n = std::make_shared<int>(0);
  return [n] { return "call_" + std::to_string((*n)++); };
}

// Streams `text` in pieces of `step` bytes and reassembles the deltas as a
// client library does.
Reassembled stream(const ChatOutputOptions& options, const std::string& text, size_t step) {
  ChatOutputSplitter splitter(options, counter_ids());
  Reassembled out;
  auto take = [&](ChoiceOutput& d) {
    out.content += d.text;
    out.reasoning += d.reasoning;
    for (const ToolCallOutput& t : d.tool_calls) {
      ToolCallOutput& call = out.calls[t.index];
      if (!t.id.empty()) {
        EXPECT_TRUE(call.id.empty()) << "a call's id comes once";
        call.id = t.id;
        call.name = t.name;
      } else {
        EXPECT_FALSE(call.id.empty()) << "argument fragments follow the call's first delta";
      }
      call.arguments += t.arguments;
    }
  };
  for (size_t i = 0; i < text.size(); i += step) {
    ChoiceOutput d;
    splitter.add(std::string_view(text).substr(i, step), d);
    take(d);
  }
  ChoiceOutput last;
  last.finish_reason = "stop";
  splitter.finish(last);
  take(last);
  return out;
}

class ChatOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto hermes = output_parsers::make_tool_call_parser("hermes");
    ASSERT_TRUE(hermes.ok());
    hermes_ = std::shared_ptr<const output_parsers::ToolCallParser>(std::move(*hermes));
    auto qwen3 = output_parsers::make_reasoning_parser("qwen3");
    ASSERT_TRUE(qwen3.ok());
    qwen3_ = std::move(*qwen3);
  }
  std::shared_ptr<const output_parsers::ToolCallParser> hermes_;
  std::unique_ptr<output_parsers::ReasoningParser> qwen3_;
};

TEST_F(ChatOutputTest, ReasoningContentAndToolCallsWholeAndStreamedAgree) {
  ChatOutputOptions options;
  options.reasoning = qwen3_.get();
  options.tool_parser = hermes_;
  const std::string text =
      "<think>\nThe user wants weather.\n</think>\n\nLet me check."
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  ChatOutputSplitter whole_splitter(options, counter_ids());
  ChoiceOutput whole;
  whole_splitter.split_whole(text, whole);
  EXPECT_TRUE(whole_splitter.has_tool_calls());
  EXPECT_TRUE(whole.has_reasoning);
  EXPECT_NE(whole.reasoning.find("The user wants weather."), std::string::npos);
  ASSERT_EQ(whole.tool_calls.size(), 1u);
  EXPECT_EQ(whole.tool_calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(whole.tool_calls[0].arguments),
            nlohmann::json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(whole.text.find("<tool_call>"), std::string::npos);
  EXPECT_NE(whole.text.find("Let me check."), std::string::npos);
  for (size_t step : {1u, 3u, 7u, 1000u}) {
    Reassembled s = stream(options, text, step);
    EXPECT_EQ(s.reasoning, whole.reasoning) << step;
    EXPECT_EQ(s.content, whole.text) << step;
    ASSERT_EQ(s.calls.size(), 1u) << step;
    EXPECT_EQ(s.calls[0].name, "get_weather");
    EXPECT_EQ(s.calls[0].arguments, whole.tool_calls[0].arguments) << step;
  }
}

TEST_F(ChatOutputTest, ReasoningOnlyHasNullContent) {
  ChatOutputOptions options;
  options.reasoning = qwen3_.get();
  ChatOutputSplitter splitter(options, counter_ids());
  ChoiceOutput whole;
  splitter.split_whole("<think>still thinking", whole);
  EXPECT_TRUE(whole.has_reasoning);
  EXPECT_EQ(whole.reasoning, "still thinking");
  EXPECT_TRUE(whole.content_null);  // vLLM: content or None
}

TEST_F(ChatOutputTest, PlainTextPassesThrough) {
  ChatOutputOptions options;
  options.tool_parser = hermes_;
  ChatOutputSplitter splitter(options, counter_ids());
  ChoiceOutput whole;
  splitter.split_whole("just words < and > here", whole);
  EXPECT_FALSE(splitter.has_tool_calls());
  EXPECT_EQ(whole.text, "just words < and > here");
  EXPECT_FALSE(whole.content_null);
  EXPECT_EQ(stream(options, "just words < and > here", 2).content, "just words < and > here");
}

TEST_F(ChatOutputTest, OnlyCallsMeansNullContentInAutoMode) {
  ChatOutputOptions options;
  options.tool_parser = hermes_;
  ChatOutputSplitter splitter(options, counter_ids());
  ChoiceOutput whole;
  splitter.split_whole("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", whole);
  ASSERT_EQ(whole.tool_calls.size(), 1u);
  EXPECT_TRUE(whole.content_null);
  EXPECT_EQ(whole.tool_calls[0].id, "call_0");
}

}  // namespace
}  // namespace strata::server
