#include "structured/grammar_compiler.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "structured/grammar_matcher.h"

namespace strata::structured {
namespace {

std::shared_ptr<const TokenVocabulary> vocab() {
  return make_token_vocabulary({"a", "b", "ab", "</s>"}, {3}, {});
}

TEST(GrammarCompiler, SameTextCompilesOnce) {
  GrammarCompiler compiler(vocab(), /*capacity=*/2);
  auto first = compiler.compile_gbnf("root ::= \"a\"+");
  auto second = compiler.compile_gbnf("root ::= \"a\"+");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ(compiler.num_compiles(), 1);
  EXPECT_EQ(compiler.num_hits(), 1);
  EXPECT_EQ(compiler.vocab().size(), 4);
}

TEST(GrammarCompiler, EvictsLeastRecentlyUsedAndDoesNotCacheErrors) {
  GrammarCompiler compiler(vocab(), /*capacity=*/2);
  ASSERT_TRUE(compiler.compile_gbnf("root ::= \"a\"").ok());
  ASSERT_TRUE(compiler.compile_gbnf("root ::= \"b\"").ok());
  ASSERT_TRUE(compiler.compile_gbnf("root ::= \"a\"").ok());   // hit; "b" is now oldest
  ASSERT_TRUE(compiler.compile_gbnf("root ::= \"ab\"").ok());  // evicts "b"
  EXPECT_EQ(compiler.num_compiles(), 3);
  ASSERT_TRUE(compiler.compile_gbnf("root ::= \"a\"").ok());
  EXPECT_EQ(compiler.num_compiles(), 3);
  ASSERT_TRUE(compiler.compile_gbnf("root ::= \"b\"").ok());
  EXPECT_EQ(compiler.num_compiles(), 4);
  EXPECT_FALSE(compiler.compile_gbnf("root ::= (").ok());
  EXPECT_FALSE(compiler.compile_gbnf("root ::= (").ok());
  EXPECT_EQ(compiler.num_compiles(), 6);
}

TEST(GrammarCompiler, MatchersOnManyThreadsShareTheMaskCache) {
  GrammarCompiler compiler(vocab());
  auto compiled = compiler.compile_gbnf("root ::= (\"a\" | \"b\")* \"ab\"");
  ASSERT_TRUE(compiled.ok());
  std::vector<std::thread> threads;
  std::vector<int> allowed_counts(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      GrammarMatcher m(*compiled);
      std::vector<uint32_t> mask(1);
      for (int step = 0; step < 50; ++step) {
        m.fill_next_token_bitmask(mask);
        allowed_counts[t] += __builtin_popcount(mask[0]);
        if (!m.accept_token(step % 2)) break;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < 4; ++t) EXPECT_EQ(allowed_counts[t], allowed_counts[0]);
  // a, b, ab at every step, plus the stop token after each complete "...ab".
  EXPECT_GT(allowed_counts[0], 50 * 3);
  EXPECT_GT((*compiled)->num_cached_masks(), 0);
}

}  // namespace
}  // namespace strata::structured
