#include "spec_decode/ngram_proposer.h"

#include <gtest/gtest.h>

#include <random>

namespace strata::spec_decode {
namespace {

using Tokens = std::vector<int32_t>;

TEST(NgramProposerTest, ProposesWhatFollowedTheLatestMatch) {
  // "1 2" occurs at 0 (followed by 3 4) and at 4 (followed by 7 8 9): the latest wins.
  const Tokens t = {1, 2, 3, 4, 1, 2, 7, 8, 9, 5, 1, 2};
  EXPECT_EQ(propose_ngram(t, {.min_n = 2, .max_n = 2, .k = 3}), (Tokens{7, 8, 9}));
  EXPECT_EQ(propose_ngram(t, {.min_n = 2, .max_n = 2, .k = 1}), (Tokens{7}));
}

TEST(NgramProposerTest, LongestNgramFirst) {
  // The 3-gram "5 1 2" matches at 1 (-> 6); the 2-gram "1 2" would match later (-> 9).
  const Tokens t = {0, 5, 1, 2, 6, 6, 1, 2, 9, 5, 1, 2};
  EXPECT_EQ(propose_ngram(t, {.min_n = 2, .max_n = 3, .k = 1}), (Tokens{6}));
  EXPECT_EQ(propose_ngram(t, {.min_n = 2, .max_n = 2, .k = 1}), (Tokens{9}));
}

TEST(NgramProposerTest, NothingBelowMinN) {
  const Tokens t = {1, 2, 3, 4, 5, 3};  // only the 1-gram "3" recurs
  EXPECT_TRUE(propose_ngram(t, {.min_n = 2, .max_n = 4, .k = 3}).empty());
  EXPECT_EQ(propose_ngram(t, {.min_n = 1, .max_n = 4, .k = 2}), (Tokens{4, 5}));
  EXPECT_TRUE(propose_ngram(Tokens{7}, {.min_n = 1, .max_n = 1, .k = 2}).empty());
  EXPECT_TRUE(propose_ngram(Tokens{}, {.min_n = 1, .max_n = 1, .k = 2}).empty());
}

TEST(NgramProposerTest, ShortLoopsRepeatIntoTheDrafts) {
  // Period 1 and period 3: the continuation runs past the end and repeats.
  EXPECT_EQ(propose_ngram(Tokens{4, 4, 4}, {.min_n = 2, .max_n = 2, .k = 4}),
            (Tokens{4, 4, 4, 4}));
  EXPECT_EQ(propose_ngram(Tokens{9, 1, 2, 3, 1, 2}, {.min_n = 2, .max_n = 2, .k = 5}),
            (Tokens{3, 1, 2, 3, 1}));
}

TEST(NgramProposerTest, WindowBoundsTheSearch) {
  Tokens t = {1, 2, 3};
  for (int i = 0; i < 100; ++i) t.push_back(50 + i);
  t.push_back(1);
  t.push_back(2);
  EXPECT_EQ(propose_ngram(t, {.min_n = 2, .max_n = 2, .k = 1}), (Tokens{3}));
  EXPECT_TRUE(propose_ngram(t, {.min_n = 2, .max_n = 2, .k = 1, .max_window = 50}).empty());
}

// Against a brute-force reading of the definition over random short sequences.
TEST(NgramProposerTest, MatchesBruteForce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const int len = 1 + static_cast<int>(rng() % 24);
    Tokens t(len);
    for (int32_t& x : t) x = static_cast<int32_t>(rng() % 3);
    const NgramParams p{.min_n = 1 + static_cast<int64_t>(rng() % 2),
                        .max_n = 2 + static_cast<int64_t>(rng() % 3),
                        .k = 1 + static_cast<int64_t>(rng() % 4)};
    Tokens expected;
    for (int64_t n = std::min<int64_t>(p.max_n, len - 1); n >= p.min_n && expected.empty(); --n) {
      for (int64_t s = len - n - 1; s >= 0; --s) {
        bool eq = true;
        for (int64_t i = 0; i < n; ++i) eq &= t[s + i] == t[len - n + i];
        if (!eq) continue;
        Tokens ext = t;
        for (int64_t j = 0; j < p.k; ++j) ext.push_back(ext[s + n + j]);
        expected.assign(ext.begin() + len, ext.end());
        break;
      }
    }
    ASSERT_EQ(propose_ngram(t, p), expected) << "trial " << trial;
  }
}

}  // namespace
}  // namespace strata::spec_decode
