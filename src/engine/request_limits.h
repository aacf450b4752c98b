// RequestLimits: every limit one request must fit, in one place. The values
// are the API's per-request bounds (n, logprobs, list sizes; documented in
// SECURITY.md) and what the engine was built with (context length,
// vocabulary, KV cache size, one step's token budget).
//
// The checks say which limit a request breaks and with which numbers
// (`PromptLimitBreach`) and word it in the engine's own terms, without CLI
// flag names: the server, which knows the flags, words the error its clients
// see from the same facts. The scheduler checks its own KV pool again when it
// admits a request (it sits below the engine), with the same wording.
//
//   RequestLimits::of(config, vocab_size, num_kv_blocks)
//   check_prompt_length(limits, num_prompt_tokens, num_new_tokens)
//   validate_request(limits, request)   the engine's check before queueing
//
// Thread-safety: plain data and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace strata::engine {

struct EngineConfig;
struct EngineRequest;

struct RequestLimits {
  // Per-request bounds of the API, so one request cannot make the server do
  // unbounded work per token.
  static constexpr int kMaxLogprobs = 20;  // vLLM's --max-logprobs default
  static constexpr int kMaxN = 128;
  static constexpr size_t kMaxStopStrings = 64;
  static constexpr size_t kMaxStopStringBytes = 4096;  // also each bad word
  static constexpr size_t kMaxStopTokenIds = 1024;
  static constexpr size_t kMaxLogitBias = 4096;
  static constexpr size_t kMaxBadWords = 1024;
  static constexpr size_t kMaxAllowedTokenIds = 1 << 20;

  // From the engine's configuration.
  int64_t max_model_len = 0;       // prompt + generated tokens
  int64_t vocab_size = 0;          // token ids are in [0, vocab_size)
  int64_t kv_capacity_tokens = 0;  // the whole KV cache; 0 = not checked
  int64_t max_prefill_tokens = 0;  // a prompt's tokens must fit one step; 0 = chunked prefill

  static RequestLimits of(const EngineConfig& config, int64_t vocab_size, int64_t num_kv_blocks);
};

// The first length limit a prompt breaks (kNone: it fits), with the numbers.
struct PromptLimitBreach {
  enum class Kind { kNone, kEmpty, kModelLen, kKvCache, kStepBudget };
  Kind kind = Kind::kNone;
  int64_t num_tokens = 0;  // the prompt's
  int64_t limit = 0;       // the limit broken, in tokens

  explicit operator bool() const { return kind != Kind::kNone; }
  // The engine's words, e.g. "prompt has 600 tokens; the maximum model length is 512".
  Status to_status() const;
};

// `num_new_tokens`: how many generated tokens must fit after the prompt
// within max_model_len (the engine asks 0, the OpenAI API 1).
PromptLimitBreach check_prompt_length(const RequestLimits& limits, int64_t num_prompt_tokens,
                                      int64_t num_new_tokens = 0);

// Prompt length, prompt token ids in the vocabulary, max_tokens at least 1.
Status validate_request(const RequestLimits& limits, const EngineRequest& request);

}  // namespace strata::engine
