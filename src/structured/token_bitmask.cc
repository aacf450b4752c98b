#include "structured/token_bitmask.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace strata::structured {

void apply_token_bitmask(std::span<const uint32_t> words, float* logits, int64_t vocab_size) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t covered = std::min<int64_t>(vocab_size, static_cast<int64_t>(words.size()) * 32);
  for (int64_t base = 0; base < covered; base += 32) {
    const uint32_t word = words[static_cast<size_t>(base >> 5)];
    if (word == ~uint32_t{0}) continue;
    const int64_t end = std::min<int64_t>(base + 32, covered);
    for (int64_t i = base; i < end; ++i) {
      if (!((word >> (i - base)) & 1u)) logits[i] = kNegInf;
    }
  }
  for (int64_t i = covered; i < vocab_size; ++i) logits[i] = kNegInf;
}

int64_t count_allowed_tokens(std::span<const uint32_t> words, int64_t vocab_size) {
  int64_t n = 0;
  const int64_t full = std::min<int64_t>(vocab_size / 32, static_cast<int64_t>(words.size()));
  for (int64_t w = 0; w < full; ++w) n += std::popcount(words[static_cast<size_t>(w)]);
  for (int64_t i = full * 32; i < vocab_size && (i >> 5) < static_cast<int64_t>(words.size());
       ++i) {
    n += test_token_bit(words, static_cast<int32_t>(i));
  }
  return n;
}

}  // namespace strata::structured
