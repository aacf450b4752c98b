#include "structured/gbnf_parser.h"

#include <gtest/gtest.h>

#include <string>

#include "structured/grammar_compiler.h"
#include "structured/grammar_matcher.h"

namespace strata::structured {
namespace {

std::shared_ptr<const TokenVocabulary> tiny_vocab() {
  static const auto vocab = make_token_vocabulary({"a", "b"}, {}, {});
  return vocab;
}

// Whether the grammar's language contains `text` (fed one byte at a time).
bool matches(const std::string& gbnf, std::string_view text) {
  auto compiled = compile_gbnf(gbnf, tiny_vocab());
  EXPECT_TRUE(compiled.ok()) << compiled.status().to_string();
  if (!compiled.ok()) return false;
  GrammarMatcher m(*compiled);
  for (char c : text) {
    if (!m.accept_string(std::string_view(&c, 1))) return false;
  }
  return m.can_terminate();
}

std::string error_of(const std::string& gbnf, const GbnfLimits& limits = GbnfLimits()) {
  auto g = parse_gbnf(gbnf, "root", limits);
  EXPECT_FALSE(g.ok()) << "accepted: " << gbnf;
  if (g.ok()) return "";
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  return g.status().message();
}

TEST(GbnfParser, LiteralsAndEscapes) {
  EXPECT_TRUE(matches(R"(root ::= "ab\n\t\r\\\"")", "ab\n\t\r\\\""));
  EXPECT_TRUE(matches(R"(root ::= "\x41\u00e9\U0001F600")", "A\xC3\xA9\xF0\x9F\x98\x80"));
  EXPECT_TRUE(matches("root ::= \"\xC3\xA9t\xC3\xA9\"", "\xC3\xA9t\xC3\xA9"));
  EXPECT_FALSE(matches(R"(root ::= "ab")", "a"));
  EXPECT_FALSE(matches(R"(root ::= "ab")", "abb"));
  EXPECT_TRUE(matches(R"(root ::= "")", ""));
}

TEST(GbnfParser, CharacterClasses) {
  const std::string g = R"(root ::= [a-c0-9_] [^"\\] [\]\-] .)";
  EXPECT_TRUE(matches(g, "b7]x"));
  EXPECT_TRUE(matches(g, "_z-\xE4\xBD\xA0"));
  EXPECT_FALSE(matches(g, "d7]x"));
  EXPECT_FALSE(matches(g, "a\"]x"));
  EXPECT_FALSE(matches(g, "a\\]x"));
  EXPECT_FALSE(matches(g, "aaax"));
  EXPECT_TRUE(matches(R"(root ::= [\x00-\x1F\u00e9])", "\xC3\xA9"));
  EXPECT_TRUE(matches(R"(root ::= [^a])", "\xF0\x9F\x98\x80"));
}

TEST(GbnfParser, AlternativesGroupsAndRules) {
  const std::string g =
      "# leading comment\n"
      "root ::= greeting (\" \" name)?  # trailing comment\n"
      "greeting ::= \"hi\" | \"hello\"\n"
      "name ::= (\n"
      "    \"bob\" |\n"
      "    \"al\" \"ice\"\n"
      "  )\n"
      "  | \"eve\"\n";
  EXPECT_TRUE(matches(g, "hi"));
  EXPECT_TRUE(matches(g, "hello bob"));
  EXPECT_TRUE(matches(g, "hi alice"));
  EXPECT_TRUE(matches(g, "hi eve"));
  EXPECT_FALSE(matches(g, "hi al"));
  EXPECT_FALSE(matches(g, "hey"));
}

TEST(GbnfParser, RepetitionOperators) {
  EXPECT_TRUE(matches(R"(root ::= "a"*)", ""));
  EXPECT_TRUE(matches(R"(root ::= "a"*)", "aaaa"));
  EXPECT_FALSE(matches(R"(root ::= "a"+)", ""));
  EXPECT_TRUE(matches(R"(root ::= "a"+)", "aaa"));
  EXPECT_TRUE(matches(R"(root ::= "ab"? "c")", "abc"));
  EXPECT_TRUE(matches(R"(root ::= "ab"? "c")", "c"));
  EXPECT_FALSE(matches(R"(root ::= "ab"? "c")", "ac"));
  EXPECT_TRUE(matches(R"(root ::= ("x" | "y")+ "!")", "xyyx!"));
}

TEST(GbnfParser, BoundedRepetitionIsExact) {
  const std::string g = R"(root ::= "x"{2,3})";
  EXPECT_FALSE(matches(g, "x"));
  EXPECT_TRUE(matches(g, "xx"));
  EXPECT_TRUE(matches(g, "xxx"));
  EXPECT_FALSE(matches(g, "xxxx"));
  EXPECT_TRUE(matches(R"(root ::= "ab"{2})", "abab"));
  EXPECT_FALSE(matches(R"(root ::= "ab"{2})", "ababab"));
  EXPECT_FALSE(matches(R"(root ::= [0-9]{ 3 , })", "12"));
  EXPECT_TRUE(matches(R"(root ::= [0-9]{3,})", "123456"));
  EXPECT_TRUE(matches(R"(root ::= "a"{0,2} "b")", "b"));
  EXPECT_TRUE(matches(R"(root ::= "a"{0} "b")", "b"));
  EXPECT_FALSE(matches(R"(root ::= "a"{0} "b")", "ab"));
}

TEST(GbnfParser, RuleNamesWithDashesAndDigits) {
  EXPECT_TRUE(matches("root ::= my-rule_2\nmy-rule_2 ::= \"ok\"", "ok"));
  EXPECT_TRUE(matches("root ::= x\r\nx ::= \"y\"\r\n", "y"));  // CRLF line ends
}

TEST(GbnfParser, ErrorsNameLineAndColumn) {
  EXPECT_NE(error_of("root ::= \"a\"\nfoo = \"b\"").find("line 2, column 5: expected '::='"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= \"abc").find("line 1, column 10: unterminated string"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= [abc").find("line 1, column 10: unterminated character class"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\" | \"b\"").find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\" )").find("line 1, column 14: expected end of line"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\xZZ\"").find("hex digits"), std::string::npos);
  EXPECT_NE(error_of("root ::= [z-a]").find("backwards"), std::string::npos);
  EXPECT_NE(error_of("root ::= * \"a\"").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{3,2}").find("n < m"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{x}").find("repetition count"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{2").find("expected '}'"), std::string::npos);
  EXPECT_NE(error_of("::= \"a\"").find("line 1, column 1: expected a rule name"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= \"\xFF\"").find("invalid UTF-8"), std::string::npos);
}

TEST(GbnfParser, GrammarLevelErrors) {
  EXPECT_NE(error_of("root ::= \"a\" missing")
                .find("line 1, column 14: rule 'missing' is "
                      "referenced but never defined"),
            std::string::npos);
  EXPECT_NE(error_of("other ::= \"a\"").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(error_of("").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\nroot ::= \"b\"").find("defined twice"), std::string::npos);
  EXPECT_NE(error_of("root ::= root \"a\" | \"b\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= a\na ::= b \"x\"\nb ::= c? a\nc ::= \"c\"").find("left-recursive"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
  // Right recursion is fine.
  EXPECT_TRUE(matches("root ::= \"a\" root | \"b\"", "aaab"));
}

TEST(GbnfParser, HostileInputsAreRejectedCleanly) {
  EXPECT_NE(error_of("root ::= " + std::string(200, '(')).find("nest deeper"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{1000000}").find("exceeds"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{99999999999999999999}").find("exceeds"), std::string::npos);
  GbnfLimits small;
  small.max_elements = 1000;
  EXPECT_NE(error_of("root ::= \"a\"{2000}", small).find("elements"), std::string::npos);
  small.max_rules = 10;
  EXPECT_NE(error_of("root ::= \"a\"{0,50}", small).find("rules"), std::string::npos);
  GbnfLimits tiny_text;
  tiny_text.max_text_bytes = 16;
  EXPECT_NE(error_of("root ::= \"aaaaaaaaaaaaaaaaaaaa\"", tiny_text).find("bytes"),
            std::string::npos);
  // Nested bounded repetitions stay linear.
  auto g = parse_gbnf("root ::= ((\"ab\"{0,100}){0,100}){0,100}");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_LT(g->elements.size(), 5000u);
  // A long chain of rules does not recurse on the C++ stack.
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 20000; ++i) {
    chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  }
  chain += "r20000 ::= \"z\"\n";
  EXPECT_TRUE(matches(chain, "z"));
}

}  // namespace
}  // namespace strata::structured
