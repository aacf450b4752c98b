#include "structured/token_bitmask.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace strata::structured {
namespace {

TEST(TokenBitmask, ApplySetsMinusInfinityWhereBitsAreClear) {
  EXPECT_EQ(token_bitmask_words(0), 0);
  EXPECT_EQ(token_bitmask_words(32), 1);
  EXPECT_EQ(token_bitmask_words(33), 2);
  const int64_t v = 100;
  std::vector<uint32_t> words(static_cast<size_t>(token_bitmask_words(v)), 0);
  words[1] = ~0u;  // ids 32..63 all allowed
  set_token_bit(words, 3);
  set_token_bit(words, 99);
  EXPECT_EQ(count_allowed_tokens(words, v), 34);
  std::vector<float> logits(v, 0.5f);
  apply_token_bitmask(words, logits.data(), v);
  for (int64_t i = 0; i < v; ++i) {
    const bool allowed = i == 3 || i == 99 || (i >= 32 && i < 64);
    EXPECT_EQ(std::isinf(logits[i]), !allowed) << i;
  }
  // A mask shorter than the logits row disallows the rest.
  std::vector<float> wide(v + 40, 0.5f);
  apply_token_bitmask(words, wide.data(), v + 40);
  EXPECT_TRUE(std::isinf(wide[v + 39]) && std::isinf(wide[130]));
  EXPECT_FALSE(std::isinf(wide[99]));
}

}  // namespace
}  // namespace strata::structured
