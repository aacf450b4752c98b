// What a request may generate beyond its sampling settings: a grammar
// (structured outputs: JSON schema, regex, choice, GBNF), vLLM's
// allowed_token_ids and bad_words. They act as a mask on a copy of the logits
// before sampling; the logprobs reported to clients stay the model's raw ones
// (vLLM's default), and the KV cache never sees any of it (a constrained
// request caches and reuses the same blocks as any other).
//
// Reasoning models: with `grammar_starts_after` set (the token ids of the
// reasoning end marker, e.g. "</think>"), the grammar applies only once the
// request has generated that sequence, as vLLM's structured outputs start
// after the reasoning section. The server leaves it empty when the prompt
// already closed the reasoning section (Qwen3 with enable_thinking=false).
//
// Thread-safety: a TokenConstraints belongs to one request; engine thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "structured/grammar_matcher.h"

namespace strata::runner {

struct TokenConstraintSpec {
  std::shared_ptr<const structured::CompiledGrammar> grammar;  // null = none
  std::vector<int32_t> grammar_starts_after;                   // empty = from the first token
  std::vector<int32_t> allowed_token_ids;                      // empty = any token
  // Token sequences; the last token of each is banned right after the others.
  std::vector<std::vector<int32_t>> bad_words;
  // The request's stop tokens (EOS and stop_token_ids; set by the engine):
  // once the grammar is complete only they remain, and they are the way out
  // when the masks together leave nothing.
  std::vector<int32_t> stop_token_ids;

  bool empty() const {
    return grammar == nullptr && allowed_token_ids.empty() && bad_words.empty();
  }
};

class TokenConstraints {
 public:
  explicit TokenConstraints(TokenConstraintSpec spec);

  // logits [vocab] = raw [vocab] with the disallowed entries at -inf.
  // `generated`: the request's output tokens so far. Never leaves every entry
  // at -inf: when the masks together allow nothing (e.g. allowed_token_ids
  // outside the grammar), the grammar alone decides, else the stop tokens
  // (the request ends).
  // `raw` and `logits` must not overlap.
  void apply(const float* raw, float* logits, int64_t vocab, std::span<const int32_t> generated);
  // Advances the grammar by the sampled token; `generated`: the output tokens
  // before it.
  void accept(int32_t token, std::span<const int32_t> generated);

  bool grammar_active() const { return grammar_active_; }
  // The grammar rejected a sampled token (only possible when every allowed
  // token had -inf logits); later steps keep masking from the last good state.
  int64_t num_rejected() const { return num_rejected_; }
  // Steps where the masks together allowed nothing and a fallback decided.
  int64_t num_fallbacks() const { return num_fallbacks_; }

 private:
  void mask_grammar(float* logits, int64_t vocab);
  void mask_to_stop_tokens(float* logits, int64_t vocab) const;

  TokenConstraintSpec spec_;
  std::unique_ptr<structured::GrammarMatcher> matcher_;
  bool grammar_active_ = false;
  int64_t num_rejected_ = 0;
  int64_t num_fallbacks_ = 0;
  std::vector<uint32_t> words_;    // grammar bitmask scratch
  std::vector<uint32_t> allowed_words_;  // allowed_token_ids as a bitmask, built on first use
};

}  // namespace strata::runner
