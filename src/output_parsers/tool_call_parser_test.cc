#include "output_parsers/tool_call_parser.h"

#include <gtest/gtest.h>

#include "output_parsers/recorded_outputs.h"

namespace strata::output_parsers {
namespace {

std::unique_ptr<ToolCallParser> parser_named(const std::string& name) {
  auto parser = make_tool_call_parser(name);
  EXPECT_TRUE(parser.ok()) << parser.status().to_string();
  return std::move(parser).value();
}

TEST(ToolCallParserTest, RecordedOutputsParseExactly) {
  for (const testing::RecordedOutput& rec : testing::recorded_outputs()) {
    SCOPED_TRACE(rec.parser + ": " + rec.label);
    const auto parser = parser_named(rec.parser);
    const ToolParseResult result = parser->parse(rec.text);
    EXPECT_EQ(result.content, rec.content);
    ASSERT_EQ(result.calls.size(), rec.calls.size());
    for (size_t i = 0; i < rec.calls.size(); ++i) {
      EXPECT_EQ(result.calls[i].name, rec.calls[i].name) << "call " << i;
      EXPECT_EQ(result.calls[i].arguments, rec.calls[i].arguments) << "call " << i;
      // Every reported arguments text is valid JSON.
      EXPECT_TRUE(nlohmann::json::accept(result.calls[i].arguments)) << result.calls[i].arguments;
    }
  }
}

TEST(ToolCallParserTest, ArgumentsMatchJsonDumpsOfTheParsedValue) {
  // Python's json.dumps(obj, ensure_ascii=False) of the model's arguments.
  const auto parser = parser_named("hermes");
  const ToolParseResult r = parser->parse(
      "<tool_call>\n{\"name\":\"f\",\"arguments\":{\"s\":\"tab\\there\\u0001\",\"e\":[],\"o\":{}}}"
      "\n</tool_call>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"s": "tab\there\u0001", "e": [], "o": {}})");
}

TEST(ToolCallParserTest, UnknownParserListsKnownNames) {
  const auto parser = make_tool_call_parser("nope");
  ASSERT_FALSE(parser.ok());
  EXPECT_EQ(parser.status().code(), StatusCode::kInvalidArgument);
  for (const std::string& name : tool_call_parser_names()) {
    EXPECT_NE(parser.status().message().find(name), std::string::npos) << name;
    EXPECT_TRUE(make_tool_call_parser(name).ok()) << name;
  }
  EXPECT_TRUE(make_tool_call_parser("qwen3_coder").ok());
}

TEST(ToolCallParserTest, CallIds) {
  const auto hermes = parser_named("hermes");
  const std::string id = hermes->make_call_id();
  EXPECT_EQ(id.size(), 5u + 24u);
  EXPECT_EQ(id.rfind("call_", 0), 0u);
  EXPECT_NE(id, hermes->make_call_id());
  const auto mistral = parser_named("mistral");
  const std::string mid = mistral->make_call_id();
  ASSERT_EQ(mid.size(), 9u);
  for (char c : mid) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << mid;
}

TEST(ToolCallParserTest, MarkersAreReported) {
  EXPECT_EQ(parser_named("hermes")->call_markers(), std::vector<std::string>{"<tool_call>"});
  EXPECT_EQ(parser_named("mistral")->call_markers(), std::vector<std::string>{"[TOOL_CALLS]"});
}

TEST(ToolCallParserTest, PartialHoldsBackPossibleMarkerAndUndecidedCall) {
  const auto parser = parser_named("hermes");
  EXPECT_EQ(parser->parse_partial("Hello <tool_").content, "Hello ");
  EXPECT_EQ(parser->parse("Hello <tool_").content, "Hello <tool_");
  // A call whose name is not complete yet is neither content nor a call.
  ToolParseResult r = parser->parse_partial("Hi<tool_call>\n{\"name\": \"get_wea");
  EXPECT_EQ(r.content, "Hi");
  EXPECT_TRUE(r.calls.empty());
  // Once the name is complete the call appears, with the certain part of its arguments.
  r = parser->parse_partial("Hi<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"n\": 12");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, "{");  // 12 may still grow
  r = parser->parse_partial(
      "Hi<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"n\": 12, \"c\": \"Par");
  EXPECT_EQ(r.calls[0].arguments, R"({"n": 12, "c": "Par)");
}

TEST(ToolCallParserTest, PartialHoldsBackTruncatedUtf8) {
  const auto parser = parser_named("hermes");
  const std::string text = "caf\xC3";  // first byte of "é"
  EXPECT_EQ(parser->parse_partial(text).content, "caf");
}

TEST(ToolCallParserTest, Qwen3XmlConvertsByDeclaredTypes) {
  const auto tools = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "book", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "nights": {"type": "integer"},
                     "ratio": {"type": "number"}, "price": {"type": "number"},
                     "late": {"type": "boolean"}, "opts": {"type": "object"},
                     "ids": {"type": "array"}, "bad": {"type": "integer"}}}}}])");
  const auto parser = parser_named("qwen3_xml");
  const std::string text =
      "<tool_call>\n<function=book>\n"
      "<parameter=city>\n3\n</parameter>\n"
      "<parameter=nights>\n 2 \n</parameter>\n"
      "<parameter=ratio>\n2.0\n</parameter>\n"
      "<parameter=price>\n0.25\n</parameter>\n"
      "<parameter=late>\nTrue\n</parameter>\n"
      "<parameter=opts>\n{\"a\":1}\n</parameter>\n"
      "<parameter=ids>\n[1, 'x']\n</parameter>\n"
      "<parameter=bad>\nmany\n</parameter>\n"
      "<parameter=extra>\n5\n</parameter>\n"
      "</function>\n</tool_call>";
  const ToolParseResult r = parser->parse(text, &tools);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments,
            R"({"city": "3", "nights": 2, "ratio": 2, "price": 0.25, "late": true, )"
            R"("opts": {"a": 1}, "ids": [1, "x"], "bad": "many", "extra": "5"})");
  // Without tools: JSON-looking values are JSON, the rest strings.
  const ToolParseResult guessed = parser->parse(text);
  EXPECT_EQ(guessed.calls[0].arguments,
            R"({"city": 3, "nights": 2, "ratio": 2.0, "price": 0.25, "late": "True", )"
            R"("opts": {"a": 1}, "ids": "[1, 'x']", "bad": "many", "extra": 5})");
  // Numbers print as Python would: integers exactly, fractions by repr().
  const auto numbers = parser->parse(
      "<function=book>\n<parameter=ratio>\n0.0001\n</parameter>\n<parameter=price>\n1e20\n"
      "</parameter>\n<parameter=nights>\n1_000\n</parameter>\n<parameter=late>\nno\n"
      "</parameter>\n</function><function=book>\n<parameter=ratio>\n1.5e-7\n</parameter>\n"
      "<parameter=price>\nnan\n</parameter>\n</function>",
      &tools);
  ASSERT_EQ(numbers.calls.size(), 2u);
  EXPECT_EQ(numbers.calls[0].arguments,
            R"({"ratio": 0.0001, "price": 100000000000000000000, "nights": 1000, "late": false})");
  EXPECT_EQ(numbers.calls[1].arguments, R"({"ratio": 1.5e-07, "price": "nan"})");
  // A tool that is not declared: every value is a string (vLLM).
  const ToolParseResult other =
      parser->parse("<function=unknown>\n<parameter=n>\n1\n</parameter>\n</function>", &tools);
  EXPECT_EQ(other.calls[0].arguments, R"({"n": "1"})");
}

TEST(ToolCallParserTest, MalformedInputsNeverCrashAndKeepText) {
  const std::vector<std::string> inputs = {"",
                                           "<tool_call>",
                                           "<tool_call>{",
                                           "<tool_call>{\"name\"",
                                           "<tool_call>{\"name\": 5}",
                                           "[TOOL_CALLS]",
                                           "[TOOL_CALLS][",
                                           "[TOOL_CALLS]f[ARGS]",
                                           "[",
                                           "[f(",
                                           "[f(a=",
                                           "{",
                                           "<function=",
                                           "<function=f>",
                                           "<tool_call><function=f><parameter=a>",
                                           std::string(5000, '['),
                                           std::string(5000, '{'),
                                           "\xFF\xFE<tool_call>\x80",
                                           "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}, 7]"};
  for (const std::string& name : tool_call_parser_names()) {
    const auto parser = parser_named(name);
    for (const std::string& input : inputs) {
      const ToolParseResult r = parser->parse(input);
      if (r.calls.empty()) {
        // Nothing became a call, so nothing may be lost (whitespace-only aside).
        EXPECT_EQ(r.content, input) << name << " on " << input.substr(0, 40);
      }
      for (const ToolCall& c : r.calls) EXPECT_FALSE(c.name.empty());
      (void)parser->parse_partial(input);
    }
  }
}

}  // namespace
}  // namespace strata::output_parsers
