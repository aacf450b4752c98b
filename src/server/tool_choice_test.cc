#include "server/tool_choice.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

using Json = nlohmann::ordered_json;

Json weather_tools() {
  return Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"$ref": "#/$defs/city"}},
                     "required": ["city"], "$defs": {"city": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "ping"}}
  ])");
}

TEST(ToolChoiceSchema, RequiredIsAnArrayOfNamedCallsWithRootDefs) {
  ApiOr<std::string> s = required_tools_schema(weather_tools(), true);
  ASSERT_TRUE(s.ok());
  Json schema = Json::parse(*s);
  EXPECT_EQ(schema["type"], "array");
  EXPECT_EQ(schema["minItems"], 1);
  EXPECT_FALSE(schema.contains("maxItems"));
  const Json& any_of = schema["items"]["anyOf"];
  ASSERT_EQ(any_of.size(), 2u);
  EXPECT_EQ(any_of[0]["properties"]["name"]["enum"][0], "get_weather");
  EXPECT_EQ(any_of[0]["required"], Json::parse(R"(["name", "parameters"])"));
  // $defs moved to the root so "#/$defs/city" resolves there.
  EXPECT_FALSE(any_of[0]["properties"]["parameters"].contains("$defs"));
  EXPECT_EQ(schema["$defs"]["city"]["type"], "string");
  // A tool without parameters takes an empty object.
  EXPECT_EQ(any_of[1]["properties"]["parameters"]["type"], "object");
}

TEST(ToolChoiceSchema, NoParallelCallsMeansOneItem) {
  ApiOr<std::string> s = required_tools_schema(weather_tools(), false);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Json::parse(*s)["maxItems"], 1);
}

TEST(ToolChoiceSchema, NamedToolIsItsParameters) {
  ApiOr<std::string> s = named_tool_schema(weather_tools(), "get_weather");
  ASSERT_TRUE(s.ok());
  Json schema = Json::parse(*s);
  EXPECT_EQ(schema["required"][0], "city");
  EXPECT_EQ(schema["$defs"]["city"]["type"], "string");
  ApiOr<std::string> missing = named_tool_schema(weather_tools(), "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().status, 400);
  EXPECT_NE(missing.error().message.find("nope"), std::string::npos);
}

TEST(ToolChoiceSchema, ConflictingDefsAndNamelessToolsAreErrors) {
  Json tools = Json::parse(R"([
    {"type": "function", "function": {"name": "a", "parameters": {"$defs": {"x": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "b", "parameters": {"$defs": {"x": {"type": "integer"}}}}}
  ])");
  EXPECT_FALSE(required_tools_schema(tools, true).ok());
  EXPECT_FALSE(required_tools_schema(Json::parse(R"([{"type": "function"}])"), true).ok());
}

TEST(RequiredToolCallsParser, WholeOutput) {
  auto parser = make_required_tool_calls_parser();
  auto r = parser->parse(
      R"([{"name":"get_weather","parameters":{"city":"Paris \"}\" x"}}, {"name": "ping", "parameters": {}}])");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris \"}\" x"})");
  EXPECT_EQ(r.calls[1].name, "ping");
  EXPECT_EQ(r.calls[1].arguments, "{}");
  EXPECT_EQ(r.content, "");
}

TEST(RequiredToolCallsParser, CutOffOutputKeepsTheCallsItBegan) {
  auto parser = make_required_tool_calls_parser();
  // max_tokens ended it inside the arguments: the call was begun (and streamed).
  auto r = parser->parse(R"([{"name":"get_weather","parameters":{"city":"Par)");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Par)");
  // Ended before any call's name was complete: content.
  auto early = parser->parse(R"([{"na)");
  EXPECT_TRUE(early.calls.empty());
  EXPECT_EQ(early.content, R"([{"na)");
}

// Every prefix: a call appears once its name is complete, and its arguments
// so far are a prefix of the final ones.
TEST(RequiredToolCallsParser, PartialOutputsArePrefixesOfTheWhole) {
  auto parser = make_required_tool_calls_parser();
  const std::string text =
      R"([{"name": "get_weather", "parameters": {"city": "a]}b", "n": [1, {"x": 2}]}},{"name":"ping","parameters":{}}])";
  auto whole = parser->parse(text);
  ASSERT_EQ(whole.calls.size(), 2u);
  size_t max_calls = 0;
  for (size_t n = 0; n <= text.size(); ++n) {
    auto part = parser->parse_partial(std::string_view(text).substr(0, n));
    ASSERT_LE(part.calls.size(), whole.calls.size()) << n;
    ASSERT_GE(part.calls.size(), max_calls) << n;
    max_calls = part.calls.size();
    for (size_t i = 0; i < part.calls.size(); ++i) {
      EXPECT_EQ(part.calls[i].name, whole.calls[i].name) << n;
      EXPECT_EQ(whole.calls[i].arguments.rfind(part.calls[i].arguments, 0), 0u)
          << n << ": " << part.calls[i].arguments;
    }
  }
  EXPECT_EQ(max_calls, 2u);
}

TEST(NamedToolCallParser, TheOutputIsTheArguments) {
  auto parser = make_named_tool_call_parser("get_weather");
  auto r = parser->parse(R"({"city":"Oslo"})");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Oslo"})");
}

}  // namespace
}  // namespace strata::server
