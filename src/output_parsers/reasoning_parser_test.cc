#include "output_parsers/reasoning_parser.h"

#include <gtest/gtest.h>

#include <random>

#include "output_parsers/reasoning_streamer.h"

namespace strata::output_parsers {
namespace {

struct Case {
  std::string parser;
  bool prompt_opened_think;
  std::string text;
  std::string reasoning;
  std::string content;
  bool has_reasoning;
  bool reasoning_ended;
};

std::vector<Case> cases() {
  return {
      {"deepseek_r1", true, "Let me think.\n</think>\n\nThe answer is 4.", "Let me think.\n",
       "\n\nThe answer is 4.", true, true},
      {"deepseek_r1", false, "<think>\nHmm.\n</think>\n\n4", "\nHmm.\n", "\n\n4", true, true},
      {"deepseek_r1", false, "No tags at all", "No tags at all", "", true, false},
      {"deepseek_r1", true, "Still thinking when cut off", "Still thinking when cut off", "", true,
       false},
      {"deepseek_r1", true, "</think>Direct", "", "Direct", true, true},
      {"deepseek_r1", true, "a</think>b</think>c", "a", "b</think>c", true, true},
      {"qwen3", false, "<think>\nx < y\n</think>\n\nHi", "\nx < y\n", "\n\nHi", true, true},
      {"qwen3", false, "Hello <think> there", "", "Hello <think> there", false, false},
      {"qwen3", false, "Plain answer.", "", "Plain answer.", false, false},
      {"qwen3", true, "x\n</think>\n\nHi", "x\n", "\n\nHi", true, true},
      {"qwen3", false, "<think>\nabc", "\nabc", "", true, false},
      {"qwen3", false, "\n<think>é</think>", "é", "", true, true},
  };
}

TEST(ReasoningParserTest, WholeOutputs) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.parser + ": " + c.text);
    auto parser = make_reasoning_parser(c.parser);
    ASSERT_TRUE(parser.ok());
    const ReasoningResult r = (*parser)->parse(c.text, c.prompt_opened_think);
    EXPECT_EQ(r.reasoning, c.reasoning);
    EXPECT_EQ(r.content, c.content);
    EXPECT_EQ(r.has_reasoning, c.has_reasoning);
    EXPECT_EQ(r.reasoning_ended, c.reasoning_ended);
  }
}

TEST(ReasoningParserTest, StreamingMatchesWholeOutput) {
  for (const Case& c : cases()) {
    auto parser = make_reasoning_parser(c.parser);
    ASSERT_TRUE(parser.ok());
    for (size_t max_chunk : {1, 2, 3, 5, 9}) {
      SCOPED_TRACE(c.parser + ": " + c.text + " chunk<=" + std::to_string(max_chunk));
      std::mt19937 rng(static_cast<uint32_t>(max_chunk));
      ReasoningStreamer streamer(**parser, c.prompt_opened_think);
      std::string reasoning;
      std::string content;
      size_t pos = 0;
      while (pos < c.text.size()) {
        pos =
            std::min(c.text.size(), pos + std::uniform_int_distribution<size_t>(1, max_chunk)(rng));
        while (pos < c.text.size() && (static_cast<unsigned char>(c.text[pos]) & 0xC0) == 0x80) {
          ++pos;
        }
        const ReasoningDelta d = streamer.update(std::string_view(c.text).substr(0, pos));
        reasoning += d.reasoning_fragment;
        content += d.content_fragment;
        // Marker text never leaks into either stream.
        EXPECT_EQ(reasoning.find("</think"), std::string::npos);
      }
      const ReasoningDelta d = streamer.finish(c.text);
      reasoning += d.reasoning_fragment;
      content += d.content_fragment;
      EXPECT_FALSE(streamer.diverged());
      EXPECT_EQ(reasoning, c.reasoning);
      EXPECT_EQ(content, c.content);
      EXPECT_EQ(streamer.reasoning_ended(), c.reasoning_ended);
    }
  }
}

TEST(ReasoningParserTest, PartialHoldsBackEndMarkerPrefix) {
  auto parser = make_reasoning_parser("qwen3");
  ASSERT_TRUE(parser.ok());
  EXPECT_EQ((*parser)->parse_partial("<think>abc</th", false).reasoning, "abc");
  EXPECT_EQ((*parser)->parse_partial("<thi", false).content, "");
  EXPECT_EQ((*parser)->parse_partial("Hi", false).content, "Hi");
  EXPECT_EQ((*parser)->start_marker(), "<think>");
  EXPECT_EQ((*parser)->end_marker(), "</think>");
}

TEST(ReasoningParserTest, UnknownName) {
  const auto parser = make_reasoning_parser("nope");
  ASSERT_FALSE(parser.ok());
  EXPECT_NE(parser.status().message().find("deepseek_r1"), std::string::npos);
  EXPECT_EQ(reasoning_parser_names(), (std::vector<std::string>{"deepseek_r1", "qwen3"}));
}

}  // namespace
}  // namespace strata::output_parsers
