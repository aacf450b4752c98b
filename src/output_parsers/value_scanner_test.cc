#include "output_parsers/value_scanner.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace strata::output_parsers {
namespace {

std::string normalized(std::string_view text) {
  std::string out;
  EXPECT_TRUE(normalize_json(text, &out)) << text;
  return out;
}

TEST(ValueScannerTest, NormalizesLikeJsonDumps) {
  EXPECT_EQ(normalized(R"({"a":1,"b":[true,false,null],"c":{"d":"x"},"e":[],"f":{}})"),
            R"({"a": 1, "b": [true, false, null], "c": {"d": "x"}, "e": [], "f": {}})");
  EXPECT_EQ(normalized(R"("\u00e9\n\"\\\/\ud83d\ude00")"), "\"é\\n\\\"\\\\/😀\"");
  EXPECT_EQ(normalized(" -0.5e+3 "), "-0.5e+3");
  EXPECT_EQ(normalized(R"("\ud800")"), "\"\xEF\xBF\xBD\"");  // lone surrogate -> U+FFFD
  EXPECT_EQ(normalized("\"a\x83"
                       "b\xC3\xA9\xED\xA0\x80\""),  // invalid UTF-8 -> U+FFFD
            "\"a\xEF\xBF\xBD"
            "b\xC3\xA9\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
}

TEST(ValueScannerTest, RejectsInvalidJson) {
  std::string out;
  for (const char* bad : {"{\"a\": 1,}", "[1,]", "01", "1.", "-", "tru", "nul!", "\"a\nb\"", "'x'",
                          "{'a': 1}", "\"\\x41\"", "[1 2]", "{\"a\" 1}", "1 2"}) {
    EXPECT_FALSE(normalize_json(bad, &out)) << bad;
  }
}

TEST(ValueScannerTest, PartialValuesGiveCertainPrefixAndClosers) {
  ValueScan s = scan_value(R"({"a": 12)", 0, Dialect::kJson);
  EXPECT_EQ(s.state, ScanState::kIncomplete);
  EXPECT_EQ(s.certain, "{");
  EXPECT_EQ(s.repaired(), "{}");
  s = scan_value(R"({"a": [1, {"b": "he)", 0, Dialect::kJson);
  EXPECT_EQ(s.certain, R"({"a": [1, {"b": "he)");
  EXPECT_EQ(s.repaired(), R"({"a": [1, {"b": "he"}]})");
  s = scan_value(R"({"a": "x\u00)", 0, Dialect::kJson);  // half an escape is not emitted
  EXPECT_EQ(s.certain, R"({"a": "x)");
  s = scan_value(R"({"a": 1,})", 0, Dialect::kJson);
  EXPECT_EQ(s.state, ScanState::kInvalid);
  EXPECT_EQ(s.end, 8u);
  EXPECT_EQ(s.repaired(), R"({"a": 1})");
  s = scan_value("7", 0, Dialect::kJson, /*at_end=*/true);
  EXPECT_EQ(s.state, ScanState::kComplete);
  EXPECT_EQ(s.certain, "7");
}

TEST(ValueScannerTest, CertainPrefixGrowsMonotonically) {
  const std::vector<std::pair<std::string, Dialect>> docs = {
      {R"({"q": "a}b \"x\" é", "n": [1, 2.5e-3, -0], "o": {"k": null, "t": true}})",
       Dialect::kJson},
      {R"({'s': 'it\'s', 'l': [1, .5, 5., 1_000, (2,)], 'd': {'k': None}, 'b': False})",
       Dialect::kPython},
  };
  for (const auto& [doc, dialect] : docs) {
    std::string previous;
    for (size_t end = 0; end <= doc.size(); ++end) {
      const ValueScan s = scan_value(std::string_view(doc).substr(0, end), 0, dialect);
      ASSERT_NE(s.state, ScanState::kInvalid) << doc.substr(0, end);
      ASSERT_EQ(s.certain.substr(0, previous.size()), previous) << doc.substr(0, end);
      EXPECT_TRUE(nlohmann::json::accept(s.repaired())) << s.repaired();
      previous = s.certain;
    }
    EXPECT_EQ(scan_value(doc, 0, dialect).state, ScanState::kComplete);
  }
}

TEST(ValueScannerTest, PythonLiteralsBecomeJson) {
  const ValueScan s = scan_value(
      R"({'k': None, 't': (1, 2,), 'f': .5, 'g': 5., 'h': 1_000, 'e': 5.e3, "s": 'a\x41\u00e9\n', 'z': 007,})",
      0, Dialect::kPython);
  EXPECT_EQ(s.state, ScanState::kComplete);
  EXPECT_EQ(
      s.certain,
      R"({"k": null, "t": [1, 2], "f": 0.5, "g": 5.0, "h": 1000, "e": 5.0e3, "s": "aAé\n", "z": 7})");
}

TEST(ValueScannerTest, DeepNestingIsInvalidNotACrash) {
  const std::string deep(100000, '[');
  EXPECT_EQ(scan_value(deep, 0, Dialect::kJson).state, ScanState::kInvalid);
}

TEST(ValueScannerTest, Utf8Helpers) {
  EXPECT_EQ(complete_utf8_length("abc"), 3u);
  EXPECT_EQ(complete_utf8_length("ab\xC3"), 2u);
  EXPECT_EQ(complete_utf8_length("ab\xC3\xA9"), 4u);
  EXPECT_EQ(complete_utf8_length("\xF0\x9F\x98"), 0u);
  EXPECT_EQ(complete_utf8_length("\xF0\x9F\x98\x80"), 4u);
  EXPECT_TRUE(is_partial_prefix("x<tool", 1, "<tool_call>"));
  EXPECT_FALSE(is_partial_prefix("x<tool_call>", 1, "<tool_call>"));
}

}  // namespace
}  // namespace strata::output_parsers
