// Synthetic workloads for `strata bench serve`, deterministic for a seed.
//
// Prompts are made without the server's tokenizer:
//   - for /v1/completions as token-id arrays (OpenAI's `prompt: [int, ...]`),
//     ids uniform in [min_token_id, max_token_id): exact lengths on any
//     server; the default range [100, 4000) fits every vocabulary of at least
//     4000 entries (Strata's bundled model has 4096) and stays clear of the
//     low ids where special tokens usually sit;
//   - for chat endpoints as words from a fixed English word list, so lengths
//     are only approximate: `tokens_per_word` (measured through the server's
//     /tokenize when it has one) converts a token count into words; the
//     server's usage.prompt_tokens is what gets reported.
//
//   make_random_dataset              vLLM's `random`
//   make_prefix_repetition_dataset   vLLM's `prefix_repetition`
//   make_multi_turn_dataset          long first turn + K rounds, per conversation
//
// Thread-safety: pure functions; PromptSource is immutable after construction.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace strata::bench {

// A prompt or a piece of one: ids (completions) or text (chat).
struct PromptText {
  std::vector<int32_t> token_ids;
  std::string text;
  int64_t num_tokens = 0;  // exact for ids, the target for text
  void append(const PromptText& other);
};

struct TokenRange {
  int32_t min_token_id = 100;
  int32_t max_token_id = 4000;  // exclusive
};

class PromptSource {
 public:
  PromptSource(bool use_text, TokenRange range, double tokens_per_word)
      : use_text_(use_text), range_(range), tokens_per_word_(tokens_per_word) {}
  PromptText make(int64_t num_tokens, std::mt19937_64& rng) const;
  bool use_text() const { return use_text_; }

 private:
  bool use_text_;
  TokenRange range_;
  double tokens_per_word_;
};

struct DatasetPrompt {
  PromptText prompt;
  int64_t output_len = 0;
};

struct RandomDatasetConfig {
  int64_t num_prompts = 1000;
  int64_t input_len = 1024;
  int64_t output_len = 128;
  double range_ratio = 0;  // lengths uniform in [L(1-r), L(1+r)]
  int64_t prefix_len = 0;  // one shared prefix before every prompt
  uint64_t seed = 0;
};
std::vector<DatasetPrompt> make_random_dataset(const RandomDatasetConfig& c,
                                               const PromptSource& source);

struct PrefixRepetitionConfig {
  int64_t num_prompts = 1000;
  int64_t prefix_len = 256;
  int64_t suffix_len = 256;
  int64_t num_prefixes = 10;
  int64_t output_len = 128;
  uint64_t seed = 0;
};
// Prompt i uses prefix i % num_prefixes; the order is then shuffled.
std::vector<DatasetPrompt> make_prefix_repetition_dataset(const PrefixRepetitionConfig& c,
                                                          const PromptSource& source);

struct MultiTurnConfig {
  int64_t num_conversations = 16;
  int64_t first_turn_len = 2000;  // tokens of the first user turn
  int64_t num_rounds = 8;         // further user turns after the first
  int64_t round_len = 400;        // tokens each further user turn adds
  int64_t output_len = 128;       // max_tokens of every answer
  int64_t shared_prefix_len = 0;  // one prefix shared by every first turn
  uint64_t seed = 0;
};
struct Conversation {
  std::vector<PromptText> user_turns;  // [1 + num_rounds]
  std::vector<int64_t> output_lens;    // [1 + num_rounds]
};
std::vector<Conversation> make_multi_turn_dataset(const MultiTurnConfig& c,
                                                  const PromptSource& source);

// The number of words the word list needs for ~num_tokens tokens.
int64_t words_for_tokens(int64_t num_tokens, double tokens_per_word);
// `num_words` words from the list, space-separated (used for calibration).
std::string sample_words(int64_t num_words, std::mt19937_64& rng);

}  // namespace strata::bench
