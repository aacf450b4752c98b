#include "structured/regex_to_gbnf.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "structured/builtin_grammars.h"
#include "structured/grammar_compiler.h"
#include "structured/grammar_matcher.h"
#include "structured/testing.h"
#include "structured/token_vocabulary.h"

namespace strata::structured {
namespace {


// Compiles GBNF with the engine; accepts() = the whole text is a sentence.
class Language {
 public:
  explicit Language(const std::string& gbnf) {
    auto compiled = compile_gbnf(gbnf, testing::byte_vocabulary());
    EXPECT_TRUE(compiled.ok()) << compiled.status().to_string() << "\n" << gbnf;
    if (compiled.ok()) grammar_ = std::move(compiled).value();
  }
  bool accepts(std::string_view text) const {
    if (grammar_ == nullptr) return false;
    GrammarMatcher matcher(grammar_);
    return matcher.accept_string(text) && matcher.can_terminate();
  }

 private:
  std::shared_ptr<const CompiledGrammar> grammar_;
};

Language regex_language(const std::string& pattern) {
  StatusOr<std::string> gbnf = regex_to_gbnf(pattern);
  EXPECT_TRUE(gbnf.ok()) << pattern << ": " << gbnf.status().to_string();
  return Language(gbnf.ok() ? *gbnf : "root ::= \"\\x00never\"");
}

std::string regex_or_error(const std::string& pattern) {
  StatusOr<std::string> gbnf = regex_to_gbnf(pattern);
  return gbnf.ok() ? *gbnf : "ERROR " + gbnf.status().message();
}

TEST(GbnfLiteral, EscapesQuotesBackslashesAndControlBytes) {
  EXPECT_EQ(gbnf_literal("ab"), "\"ab\"");
  EXPECT_EQ(gbnf_literal("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(gbnf_literal("\n\t\r"), "\"\\n\\t\\r\"");
  EXPECT_EQ(gbnf_literal(std::string("\x01\x7F", 2)), "\"\\x01\\x7F\"");
  EXPECT_EQ(gbnf_literal("\xC3\xA9"), "\"\xC3\xA9\"");  // valid UTF-8 stays raw
  EXPECT_EQ(gbnf_literal("\xC3"), "\"\\xC3\"");         // a broken sequence does not
  EXPECT_EQ(gbnf_literal(""), "\"\"");
}

TEST(RegexToGbnf, GoldenOutput) {
  EXPECT_EQ(regex_or_error("abc"), "root ::= \"abc\"\n");
  EXPECT_EQ(regex_or_error("^a|b$"), "root ::= \"a\" | \"b\"\n");
  EXPECT_EQ(regex_or_error("[a-z0-9_]+"), "root ::= [0-9_a-z]+\n");
  EXPECT_EQ(regex_or_error("[^\"\\\\]*"), "root ::= [^\"\\\\]*\n");
  EXPECT_EQ(regex_or_error("\\d{3}-\\d{2,4}"), "root ::= [0-9]{3} \"-\" [0-9]{2,4}\n");
  EXPECT_EQ(regex_or_error("(ab|c)?x{2,}"), "root ::= ( \"ab\" | \"c\" )? \"x\"{2,}\n");
  EXPECT_EQ(regex_or_error("ab*?"), "root ::= \"a\" \"b\"*\n");
  EXPECT_EQ(regex_or_error("a.b"), "root ::= \"a\" [^\\x0A] \"b\"\n");
  EXPECT_EQ(regex_or_error("[-a\\]]"), "root ::= [\\x2D\\x5Da]\n");
  EXPECT_EQ(regex_or_error("(?P<year>\\d{4})"), "root ::= [0-9]{4}\n");
  EXPECT_EQ(regex_or_error(""), "root ::= \"\"\n");
  EXPECT_EQ(regex_or_error("a|"), "root ::= \"a\"?\n");
  EXPECT_EQ(regex_or_error("(a*)*(b?|)+()*"), "root ::= ( \"a\"+ )* \"b\"*\n");
  EXPECT_EQ(regex_or_error("\\u00e9|\\x41"), "root ::= \"\xC3\xA9\" | \"A\"\n");
}

TEST(RegexToGbnf, NamesUnsupportedConstructs) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"(a)\\1", "backreference"},
      {"(?P<x>a)(?P=x)", "backreference"},
      {"a(?=b)", "lookahead"},
      {"a(?!b)", "lookahead"},
      {"(?<=a)b", "lookbehind"},
      {"(?<!a)b", "lookbehind"},
      {"\\bword", "word boundary"},
      {"(?i)abc", "inline flags"},
      {"\\p{L}", "Unicode property"},
      {"a^b", "'^' anchor"},
      {"a$b", "'$' anchor"},
      {"*a", "nothing to repeat"},
      {"a**", "multiple repeat"},
      {"a++", "possessive"},
      {"(ab", "missing ')'"},
      {"ab)", "unbalanced ')'"},
      {"[abc", "unterminated character class"},
      {"[z-a]", "bad character range"},
      {"a{5,2}", "m > n"},
      {"a{20000}", "repetition bound above 10000"},
      {"\\q", "unknown escape"},
      {"abc\\", "trailing backslash"},
      {"\xFF", "invalid UTF-8"},
      {"(a?b?c?d?e?f?g?h?i?j?k?l?m?n?o?p?q?)*", "parts that can all be empty"},
  };
  for (const auto& [pattern, expected] : cases) {
    StatusOr<std::string> gbnf = regex_to_gbnf(pattern);
    ASSERT_FALSE(gbnf.ok()) << pattern;
    EXPECT_EQ(gbnf.status().code(), StatusCode::kInvalidArgument) << pattern;
    EXPECT_NE(gbnf.status().message().find(expected), std::string::npos)
        << pattern << " -> " << gbnf.status().message();
  }
}

TEST(RegexToGbnf, RejectsDeepNestingWithoutCrashing) {
  std::string deep(200, '(');
  deep += "a";
  deep += std::string(200, ')');
  StatusOr<std::string> gbnf = regex_to_gbnf(deep);
  ASSERT_FALSE(gbnf.ok());
  EXPECT_NE(gbnf.status().message().find("nested deeper"), std::string::npos);
}

TEST(RegexToGbnf, DeepestAllowedNestingCompiles) {
  std::string pattern;
  for (int idx = 0; idx < kMaxRegexDepth; ++idx) pattern += "(a|";
  pattern += "b";
  for (int idx = 0; idx < kMaxRegexDepth; ++idx) pattern += ")*";
  const Language language = regex_language(pattern);
  EXPECT_TRUE(language.accepts("aab"));
  EXPECT_FALSE(language.accepts("c"));
  EXPECT_FALSE(regex_to_gbnf("(" + pattern + ")").ok());
}

TEST(RegexToGbnf, LanguageMatchesFullMatchSemantics) {
  const Language phone = regex_language("^\\(\\d{3}\\) \\d{3}-\\d{4}$");
  EXPECT_TRUE(phone.accepts("(555) 123-4567"));
  EXPECT_FALSE(phone.accepts("(555) 123-456"));
  EXPECT_FALSE(phone.accepts("x(555) 123-4567"));
  EXPECT_FALSE(phone.accepts("(555) 123-45678"));

  const Language alternation = regex_language("(cat|dog)s?|bird");
  for (const char* text : {"cat", "cats", "dog", "dogs", "bird"})
    EXPECT_TRUE(alternation.accepts(text)) << text;
  for (const char* text : {"", "birds", "ca", "catdog"})
    EXPECT_FALSE(alternation.accepts(text)) << text;

  const Language bounded = regex_language("a{2,3}b{2}c{1,}");
  EXPECT_TRUE(bounded.accepts("aabbc"));
  EXPECT_TRUE(bounded.accepts("aaabbccc"));
  EXPECT_FALSE(bounded.accepts("abbc"));
  EXPECT_FALSE(bounded.accepts("aaaabbc"));
  EXPECT_FALSE(bounded.accepts("aabc"));
  EXPECT_FALSE(bounded.accepts("aabb"));

  const Language negated = regex_language("[^a-c\\d]+");
  EXPECT_TRUE(negated.accepts("xyz\n\xC3\xA9"));
  EXPECT_FALSE(negated.accepts("xbz"));
  EXPECT_FALSE(negated.accepts("x1"));

  const Language dot = regex_language("a.c");
  EXPECT_TRUE(dot.accepts("abc"));
  EXPECT_TRUE(
      dot.accepts("a\xE4\xBD\xA0"
                  "c"));  // one code point, three bytes
  EXPECT_FALSE(dot.accepts("a\nc"));
  EXPECT_FALSE(dot.accepts("ac"));

  const Language classes = regex_language("\\w+\\s\\S\\W");
  EXPECT_TRUE(classes.accepts("ab_9\tx!"));
  EXPECT_FALSE(classes.accepts("ab_9\tx_"));

  const Language nullable_parts = regex_language("(a?b?)+c");
  for (const char* text : {"c", "ac", "bc", "abbac", "bbbc"})
    EXPECT_TRUE(nullable_parts.accepts(text)) << text;
  for (const char* text : {"", "ab", "cc", "abcc"})
    EXPECT_FALSE(nullable_parts.accepts(text)) << text;

  const Language nested_repeat = regex_language("(a*b)*(c|)+");
  EXPECT_TRUE(nested_repeat.accepts(""));
  EXPECT_TRUE(nested_repeat.accepts("babaabcc"));
  EXPECT_FALSE(nested_repeat.accepts("aba"));

  const Language optional_group = regex_language("(?:ab)*c?");
  EXPECT_TRUE(optional_group.accepts(""));
  EXPECT_TRUE(optional_group.accepts("ababc"));
  EXPECT_FALSE(optional_group.accepts("abac"));

  const Language specials = regex_language("[\"\\\\\\]\\-]{2}");
  EXPECT_TRUE(specials.accepts("\"\\"));
  EXPECT_TRUE(specials.accepts("]-"));
  EXPECT_FALSE(specials.accepts("a-"));
}

TEST(JsonCodePointSet, EncodesEveryMemberAndNothingElse) {
  CodePointSet set = CodePointSet::range('a', 'c');
  set.add('"', '"');
  set.add('\n', '\n');
  set.add(0x01, 0x01);
  const std::string expr = json_char_set_gbnf(set);
  EXPECT_EQ(expr, R"([a-c] | "\\\"" | "\\u0001" | "\\n")");
  const Language language("root ::= ( " + expr + " )+\n");
  EXPECT_TRUE(language.accepts("ab\\\"\\n\\u0001c"));
  EXPECT_FALSE(language.accepts("\""));       // a raw quote would end the JSON string
  EXPECT_FALSE(language.accepts("\n"));       // raw control characters are invalid JSON
  EXPECT_FALSE(language.accepts("\\t"));      // not in the set
  EXPECT_FALSE(language.accepts("\\u0061"));  // 'a' only in its canonical form
  EXPECT_FALSE(language.accepts("d"));
}

TEST(JsonCodePointSet, WholeSetAcceptsEveryControlEscape) {
  const Language language("root ::= ( " + json_char_set_gbnf(CodePointSet::all()) + " )*\n");
  EXPECT_TRUE(language.accepts("a\\\"\\\\\\n\\u001f\\u0000\xF0\x9F\x98\x80"));
  EXPECT_FALSE(language.accepts("\\"));
  EXPECT_FALSE(language.accepts("\x01"));
}

TEST(CodePointSetTest, AddMergesAndComplementInverts) {
  CodePointSet set = CodePointSet::range('a', 'c');
  set.add('d', 'f');
  set.add('x', 'x');
  ASSERT_EQ(set.ranges().size(), 2u);
  EXPECT_EQ(set.ranges()[0].first, uint32_t{'a'});
  EXPECT_EQ(set.ranges()[0].last, uint32_t{'f'});
  EXPECT_EQ(set.size(), 7u);
  const CodePointSet inverse = set.complement();
  EXPECT_FALSE(inverse.contains('a'));
  EXPECT_TRUE(inverse.contains('g'));
  EXPECT_TRUE(inverse.contains(kLastCodePoint));
  EXPECT_EQ(inverse.size() + set.size(), uint64_t{kLastCodePoint} + 1);
  EXPECT_EQ(set.intersect(CodePointSet::range('e', 'z')).size(), 3u);  // e f x
}

TEST(ChoiceToGbnf, ExactlyOneOfTheChoices) {
  StatusOr<std::string> gbnf = choice_to_gbnf({"yes", "no", "maybe \"so\"", "no"});
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().to_string();
  EXPECT_EQ(*gbnf, "root ::= \"yes\" | \"no\" | \"maybe \\\"so\\\"\"\n");
  const Language language(*gbnf);
  EXPECT_TRUE(language.accepts("yes"));
  EXPECT_TRUE(language.accepts("maybe \"so\""));
  EXPECT_FALSE(language.accepts("ye"));
  EXPECT_FALSE(language.accepts("yesno"));
  EXPECT_FALSE(choice_to_gbnf({}).ok());
  EXPECT_EQ(choice_to_gbnf({}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ChoiceToGbnf, EmptyStringChoiceAllowsEmptyOutput) {
  StatusOr<std::string> gbnf = choice_to_gbnf({"a", ""});
  ASSERT_TRUE(gbnf.ok());
  const Language language(*gbnf);
  EXPECT_TRUE(language.accepts(""));
  EXPECT_TRUE(language.accepts("a"));
  EXPECT_FALSE(language.accepts("b"));
}

TEST(JsonObjectGbnf, AcceptsObjectsOnly) {
  const Language spaced(json_object_gbnf());
  EXPECT_TRUE(spaced.accepts("{}"));
  EXPECT_TRUE(spaced.accepts("{\"a\": [1, {\"b\": null}], \"c\": \"\\u00e9\"}"));
  EXPECT_TRUE(spaced.accepts("{\n  \"a\": true\n}"));
  EXPECT_FALSE(spaced.accepts("[]"));
  EXPECT_FALSE(spaced.accepts("\"x\""));
  EXPECT_FALSE(spaced.accepts("{\"a\": 01}"));
  EXPECT_FALSE(
      spaced.accepts(std::string("{") + std::string(40, ' ') + "}"));  // bounded whitespace
  const Language compact(json_object_gbnf({.any_whitespace = false}));
  EXPECT_TRUE(compact.accepts("{\"a\":[1,2]}"));
  EXPECT_FALSE(compact.accepts("{\"a\": 1}"));
}

}  // namespace
}  // namespace strata::structured
