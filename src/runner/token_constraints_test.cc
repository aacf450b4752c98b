#include "runner/token_constraints.h"

#include <gtest/gtest.h>

#include <cmath>

#include "structured/grammar_compiler.h"
#include "structured/token_vocabulary.h"

namespace strata::runner {
namespace {

// Tokens: 0 "a", 1 "b", 2 "ab", 3 "</t>", 4 stop (EOS), 5 "c".
std::shared_ptr<const structured::CompiledGrammar> grammar(const char* gbnf) {
  auto vocab = structured::make_token_vocabulary({"a", "b", "ab", "</t>", "<eos>", "c"}, {4}, {});
  auto g = structured::compile_gbnf(gbnf, vocab);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

std::vector<bool> allowed(TokenConstraints& c, std::span<const int32_t> generated,
                          int64_t vocab = 6) {
  std::vector<float> raw(static_cast<size_t>(vocab), 0.0f), logits(raw.size());
  c.apply(raw.data(), logits.data(), vocab, generated);
  std::vector<bool> out;
  for (float l : logits) out.push_back(!std::isinf(l));
  return out;
}

TEST(TokenConstraints, GrammarMasksAndAdvances) {
  TokenConstraintSpec spec;
  spec.grammar = grammar(R"(root ::= "ab" "c")");
  spec.stop_token_ids = {4};
  TokenConstraints c(spec);
  std::vector<int32_t> out;
  EXPECT_EQ(allowed(c, out), (std::vector<bool>{true, false, true, false, false, false}));
  c.accept(2, out);  // "ab"
  out.push_back(2);
  EXPECT_EQ(allowed(c, out), (std::vector<bool>{false, false, false, false, false, true}));
  c.accept(5, out);
  out.push_back(5);
  // Complete: only the stop token.
  EXPECT_EQ(allowed(c, out), (std::vector<bool>{false, false, false, false, true, false}));
  // Rows past the tokenizer's vocabulary (model padding) are never allowed.
  std::vector<bool> padded = allowed(c, out, 9);
  EXPECT_FALSE(padded[7]);
  // Complete and still generating (ignore_eos, min_tokens): stop tokens only.
  c.accept(4, out);
  out.push_back(4);
  EXPECT_EQ(allowed(c, out), (std::vector<bool>{false, false, false, false, true, false}));
  EXPECT_EQ(c.num_rejected(), 0);
  EXPECT_EQ(c.num_fallbacks(), 0);
}

// Masks that together allow nothing never leave every logit at -inf (the
// sampler would have nothing to pick): the grammar alone decides, else the
// stop tokens.
TEST(TokenConstraints, MasksThatExcludeEverythingFallBack) {
  TokenConstraintSpec spec;
  spec.grammar = grammar(R"(root ::= "c")");
  spec.allowed_token_ids = {0, 1};  // none of them is "c"
  spec.stop_token_ids = {4};
  TokenConstraints c(spec);
  std::vector<int32_t> out;
  EXPECT_EQ(allowed(c, out), (std::vector<bool>{false, false, false, false, false, true}));
  EXPECT_EQ(c.num_fallbacks(), 1);
  TokenConstraintSpec only_bad;
  only_bad.allowed_token_ids = {1};
  only_bad.bad_words = {{1}};
  only_bad.stop_token_ids = {4};
  TokenConstraints d(only_bad);
  EXPECT_EQ(allowed(d, out), (std::vector<bool>{false, false, false, false, true, false}));
}

TEST(TokenConstraints, GrammarStartsAfterTheReasoningMarker) {
  TokenConstraintSpec spec;
  spec.grammar = grammar(R"(root ::= "c")");
  spec.grammar_starts_after = {3};  // "</t>"
  TokenConstraints c(spec);
  std::vector<int32_t> out;
  EXPECT_FALSE(c.grammar_active());
  EXPECT_EQ(allowed(c, out), std::vector<bool>(6, true));
  c.accept(0, out);
  out.push_back(0);
  EXPECT_FALSE(c.grammar_active());
  c.accept(3, out);
  out.push_back(3);
  EXPECT_TRUE(c.grammar_active());
  EXPECT_EQ(allowed(c, out), (std::vector<bool>{false, false, false, false, false, true}));
}

TEST(TokenConstraints, AllowedTokenIdsAndBadWords) {
  TokenConstraintSpec spec;
  spec.allowed_token_ids = {0, 1, 2};
  spec.bad_words = {{1}, {0, 2}};  // "b" always; "ab" right after "a"
  TokenConstraints c(spec);
  std::vector<int32_t> out;
  EXPECT_EQ(allowed(c, out), (std::vector<bool>{true, false, true, false, false, false}));
  out.push_back(0);
  EXPECT_EQ(allowed(c, out), (std::vector<bool>{true, false, false, false, false, false}));
}

}  // namespace
}  // namespace strata::runner
