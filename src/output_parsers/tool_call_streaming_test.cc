// Streaming equivalence: feeding any recorded output through ToolCallStreamer,
// a character at a time or in random chunks, yields exactly parse()'s content
// and calls, with a stable id per call and the name in its first delta.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "output_parsers/recorded_outputs.h"
#include "output_parsers/tool_call_streamer.h"
#include "output_parsers/value_scanner.h"

namespace strata::output_parsers {
namespace {

// Chunk ends at UTF-8 character boundaries (detokenized text never splits a
// character), `max_chunk` bytes at most; 1 = every character.
std::vector<size_t> chunk_ends(const std::string& text, size_t max_chunk, std::mt19937* rng) {
  std::vector<size_t> ends;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t len = max_chunk == 1 ? 1 : std::uniform_int_distribution<size_t>(1, max_chunk)(*rng);
    size_t end = std::min(text.size(), pos + len);
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    ends.push_back(end);
    pos = end;
  }
  return ends;
}

struct Reassembled {
  std::string content;
  std::vector<ToolCall> calls;
  std::vector<std::string> ids;
};

void apply(const StreamDelta& delta, Reassembled* out) {
  out->content += delta.content;
  for (const ToolCallDelta& d : delta.tool_calls) {
    ASSERT_GE(d.index, 0);
    const size_t idx = static_cast<size_t>(d.index);
    if (idx == out->calls.size()) {
      // First delta of a call: id and name, and calls start in index order.
      ASSERT_FALSE(d.id.empty());
      ASSERT_FALSE(d.name.empty());
      out->calls.push_back(ToolCall{d.name, ""});
      out->ids.push_back(d.id);
    } else {
      ASSERT_LT(idx, out->calls.size());
      EXPECT_TRUE(d.id.empty());
      EXPECT_TRUE(d.name.empty());
    }
    out->calls[idx].arguments += d.arguments_fragment;
  }
}

Reassembled stream(const ToolCallParser& parser, const std::string& text,
                   const std::vector<size_t>& ends, bool* diverged) {
  int next_id = 0;
  ToolCallStreamer streamer(parser, [&] { return "id" + std::to_string(next_id++); });
  Reassembled out;
  for (size_t end : ends) apply(streamer.update(std::string_view(text).substr(0, end)), &out);
  apply(streamer.finish(text), &out);
  *diverged = streamer.diverged();
  EXPECT_EQ(streamer.call_ids(), out.ids);
  EXPECT_EQ(streamer.result().calls, out.calls);
  return out;
}

void expect_stream_matches_parse(const testing::RecordedOutput& rec, size_t max_chunk,
                                 uint32_t seed) {
  SCOPED_TRACE(rec.parser + ": " + rec.label + " chunk<=" + std::to_string(max_chunk));
  auto parser = make_tool_call_parser(rec.parser);
  ASSERT_TRUE(parser.ok());
  const ToolParseResult whole = (*parser)->parse(rec.text);
  std::mt19937 rng(seed);
  bool diverged = false;
  const Reassembled got =
      stream(**parser, rec.text, chunk_ends(rec.text, max_chunk, &rng), &diverged);
  EXPECT_FALSE(diverged);
  EXPECT_EQ(got.content, whole.content);
  EXPECT_EQ(got.calls, whole.calls);
  for (size_t i = 0; i < got.ids.size(); ++i) EXPECT_EQ(got.ids[i], "id" + std::to_string(i));
}

TEST(ToolCallStreamingTest, EveryCharacterMatchesParse) {
  for (const auto& rec : testing::recorded_outputs()) expect_stream_matches_parse(rec, 1, 0);
}

TEST(ToolCallStreamingTest, RandomChunksMatchParse) {
  for (const auto& rec : testing::recorded_outputs()) {
    for (uint32_t seed = 1; seed <= 8; ++seed) expect_stream_matches_parse(rec, 2 + seed, seed);
  }
}

TEST(ToolCallStreamingTest, WholeTextInOneUpdate) {
  for (const auto& rec : testing::recorded_outputs()) {
    expect_stream_matches_parse(rec, rec.text.size() + 1, 0);
  }
}

TEST(ToolCallStreamingTest, ContentNeverShowsMarkerOfALaterCall) {
  // Every partial content is a prefix of the final content; here the final
  // content is "Hi " and the marker arrives byte by byte.
  auto parser = make_tool_call_parser("hermes");
  ASSERT_TRUE(parser.ok());
  const std::string text =
      "Hi <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"x\"}}\n</tool_call>";
  for (size_t end = 0; end <= text.size(); ++end) {
    const std::string content = (*parser)->parse_partial(text.substr(0, end)).content;
    EXPECT_EQ(std::string("Hi ").substr(0, content.size()), content) << end;
    EXPECT_EQ(content.find('<'), std::string::npos) << end;
  }
}

TEST(ToolCallStreamingTest, ArgumentsStreamBeforeTheCallEnds) {
  auto parser = make_tool_call_parser("hermes");
  ASSERT_TRUE(parser.ok());
  ToolCallStreamer streamer(**parser, [] { return std::string("call_1"); });
  StreamDelta d = streamer.update("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"ci");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].id, "call_1");
  EXPECT_EQ(d.tool_calls[0].name, "get_weather");
  EXPECT_EQ(d.tool_calls[0].arguments_fragment, "{");
  d = streamer.update("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_TRUE(d.tool_calls[0].id.empty());
  EXPECT_EQ(d.tool_calls[0].arguments_fragment, R"("city": "Pa)");
  d = streamer.finish(
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].arguments_fragment, R"(ris"})");
  EXPECT_EQ(streamer.result().calls[0].arguments, R"({"city": "Paris"})");
}

TEST(ToolCallStreamingTest, Qwen3XmlWithToolsStreamsTheTypedArguments) {
  const auto tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {
    "name": "f", "parameters": {"properties": {"n": {"type": "integer"}, "s": {"type": "string"}}}}}])");
  auto parser = make_tool_call_parser("qwen3_xml");
  ASSERT_TRUE(parser.ok());
  const std::string text =
      "<tool_call>\n<function=f>\n<parameter=n>\n42\n</parameter>\n<parameter=s>\n42\n"
      "</parameter>\n</function>\n</tool_call>";
  ToolCallStreamer streamer(**parser, nullptr, &tools);
  std::string arguments;
  for (size_t end = 1; end <= text.size(); ++end) {
    for (const ToolCallDelta& d : streamer.update(text.substr(0, end)).tool_calls) {
      arguments += d.arguments_fragment;
    }
  }
  for (const ToolCallDelta& d : streamer.finish(text).tool_calls) arguments += d.arguments_fragment;
  EXPECT_FALSE(streamer.diverged());
  EXPECT_EQ(arguments, R"({"n": 42, "s": "42"})");
  EXPECT_EQ(streamer.result().calls, (*parser)->parse(text, &tools).calls);
}

TEST(ToolCallStreamingTest, DefaultIdsComeFromTheParser) {
  auto parser = make_tool_call_parser("mistral");
  ASSERT_TRUE(parser.ok());
  ToolCallStreamer streamer(**parser);
  const StreamDelta d = streamer.finish(R"([TOOL_CALLS]f[ARGS]{"a": 1})");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].id.size(), 9u);
  EXPECT_EQ(d.tool_calls[0].arguments_fragment, R"({"a": 1})");
}

TEST(ToolCallStreamingTest, EveryPrefixIsConsistentForEveryParser) {
  // Prefixes of each recorded output, each finished as if generation stopped
  // there (max_tokens): still no divergence, valid JSON arguments.
  for (const auto& rec : testing::recorded_outputs()) {
    auto parser = make_tool_call_parser(rec.parser);
    ASSERT_TRUE(parser.ok());
    for (size_t cut = 0; cut <= rec.text.size(); cut += 3) {
      const std::string text = rec.text.substr(0, cut);
      std::mt19937 rng(static_cast<uint32_t>(cut));
      bool diverged = false;
      const Reassembled got = stream(**parser, text, chunk_ends(text, 4, &rng), &diverged);
      EXPECT_FALSE(diverged) << rec.parser << ": " << rec.label << " cut " << cut;
      for (const ToolCall& c : got.calls) {
        EXPECT_TRUE(nlohmann::json::accept(c.arguments))
            << rec.parser << ": " << rec.label << " cut " << cut << ": " << c.arguments;
      }
    }
  }
}

}  // namespace
}  // namespace strata::output_parsers
