// Token bitmasks: the per-step "which token ids may come next" sets that a
// GrammarMatcher fills and the sampler applies to logits.
//
// Format: words[i / 32] bit (i % 32), least significant bit first, is token
// i; a mask for a vocabulary of V ids has bitmask_words(V) = ceil(V / 32)
// uint32 words. A mask may be longer than the TokenVocabulary (the model's
// embedding table can have padding rows): those ids are always 0.
//
// Thread-safety: pure functions over caller-owned memory.
#pragma once

#include <cstdint>
#include <span>

namespace strata::structured {

inline int64_t token_bitmask_words(int64_t vocab_size) { return (vocab_size + 31) / 32; }

inline void set_token_bit(std::span<uint32_t> words, int32_t id) {
  words[static_cast<size_t>(id) >> 5] |= uint32_t{1} << (id & 31);
}

inline bool test_token_bit(std::span<const uint32_t> words, int32_t id) {
  return (words[static_cast<size_t>(id) >> 5] >> (id & 31)) & 1u;
}

// logits[i] = -inf for every i in [0, vocab_size) whose bit is 0 (or lies
// beyond words). Cost: O(vocab_size), skipping all-ones words.
void apply_token_bitmask(std::span<const uint32_t> words, float* logits, int64_t vocab_size);

// Number of set bits among the first vocab_size ids.
int64_t count_allowed_tokens(std::span<const uint32_t> words, int64_t vocab_size);

}  // namespace strata::structured
