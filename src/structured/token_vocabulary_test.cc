#include "structured/token_vocabulary.h"

#include <gtest/gtest.h>

namespace strata::structured {
namespace {

TEST(TokenVocabulary, TrieIsPreorderOfSortedGrammarTokens) {
  auto v = make_token_vocabulary({"ab", "a", "b", "<eos>", "abc", "", "<x>", "ab"}, {3}, {6});
  EXPECT_EQ(v->size(), 8);
  EXPECT_TRUE(v->is_stop_token(3));
  EXPECT_FALSE(v->is_grammar_token(3));
  EXPECT_FALSE(v->is_grammar_token(5));  // empty
  EXPECT_FALSE(v->is_grammar_token(6));  // special
  EXPECT_TRUE(v->is_grammar_token(7));
  EXPECT_EQ(v->sorted_ids(), (std::vector<int32_t>{1, 0, 7, 4, 2}));  // a ab ab abc b
  const auto& trie = v->trie();
  // root, a, ab, abc, b
  ASSERT_EQ(trie.size(), 5u);
  EXPECT_EQ(trie[0].subtree_end, 5u);
  EXPECT_EQ(trie[0].tokens_end, 5u);
  EXPECT_EQ(trie[1].byte, 'a');
  EXPECT_EQ(trie[1].subtree_end, 4u);
  EXPECT_EQ(trie[1].tokens_begin, 0u);
  EXPECT_EQ(trie[1].own_end, 1u);
  EXPECT_EQ(trie[1].tokens_end, 4u);
  EXPECT_EQ(trie[2].depth, 2);
  EXPECT_EQ(trie[2].tokens_begin, 1u);
  EXPECT_EQ(trie[2].own_end, 3u);  // both "ab" ids end here
  EXPECT_EQ(trie[3].own_end, 4u);
  EXPECT_EQ(trie[4].byte, 'b');
  EXPECT_EQ(trie[4].tokens_begin, 4u);
  EXPECT_EQ(trie[4].tokens_end, 5u);
}

}  // namespace
}  // namespace strata::structured
