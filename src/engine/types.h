// The engine's boundary: what callers (server/, apps/, benchmarks) hand to
// the engine and what comes back. Plain values with no engine-internal
// types, so a caller includes this (and engine.h) and nothing from
// scheduler/ or runner/; EngineCore converts to and from the scheduler's and
// the runner's own types.
//
//   EngineRequest   a tokenized prompt, sampling settings, stop conditions,
//                   constraints and KV transfer hints (Engine::add_request)
//   RequestOutput   what one step produced for one request: new tokens (one,
//                   or several after a multi-token step), and on the final
//                   output a FinishReason and the connector's KvTransferParams
//
// Strings for clients (OpenAI's "stop", "length", "abort") are the server's
// business: FinishReason stays an enum up to output formatting.
// Values only; no thread affinity.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sampling/sampler.h"

namespace strata::structured {
class CompiledGrammar;
}

namespace strata::engine {

// Why a request ended (vLLM's FinishReason).
enum class FinishReason {
  kNone,    // not finished
  kStop,    // EOS, a stop token, or a stop string the server matched
  kLength,  // max_tokens or max_model_len
  kAbort,   // the client went away, or the engine rejected or dropped it
};

// One generated token with its logprob and the most likely alternatives
// (best first; empty unless the request asked for top logprobs).
struct SampledToken {
  int32_t token_id = -1;
  float logprob = 0.0f;  // 0 unless the request asked for logprobs
  std::vector<std::pair<int32_t, float>> top_logprobs;
};
// Prompt token i (i >= 1) with its logprob given the tokens before it.
using PromptLogprob = SampledToken;

// When generation ends, on token ids (stop strings are matched on text by
// the server, which then calls Engine::finish_stopped).
struct StopConditions {
  int64_t max_tokens = 16;
  bool ignore_eos = false;
  int64_t min_tokens = 0;  // stop tokens are ignored before this many
  std::vector<int32_t> eos_token_ids;
  std::vector<int32_t> stop_token_ids;  // in addition to EOS
};

// A request's kv_transfer_params as a KV-aware router or a P/D proxy sets
// them: instructions for the tiered KV cache.
struct KvTransferHints {
  bool do_remote_decode = false;  // this instance prefills for a decoder elsewhere
  // A peer instance that holds this prompt's KV (a P/D prefiller, or where a
  // router saw it): the peer tier fetches from it.
  std::string remote_host;
  int64_t remote_port = 0;
  int64_t max_load_tokens = -1;     // cap on tokens loaded from tiers; 0 = none, -1 = no cap
  int64_t max_offload_tokens = -1;  // offload only the first N tokens; 0 = none, -1 = all
};

// What the KV connector hands back when a request finishes (vLLM's
// request_finished): for a do_remote_decode prefill, where a decoder loads
// this prompt's KV from. The server writes it as the response's
// kv_transfer_params.
struct KvTransferParams {
  bool do_remote_prefill = false;
  bool do_remote_decode = false;
  std::string remote_host;
  int64_t remote_port = 0;
};

// What a request may generate beyond its sampling settings (structured
// outputs, allowed_token_ids, bad_words): a mask on the logits.
struct TokenConstraints {
  std::shared_ptr<const structured::CompiledGrammar> grammar;  // null = none
  std::vector<int32_t> grammar_starts_after;  // the reasoning end marker; empty = from the start
  std::vector<int32_t> allowed_token_ids;     // empty = any token
  // Token sequences; the last token of each is banned right after the others.
  std::vector<std::vector<int32_t>> bad_words;
};

struct EngineRequest {
  std::string request_id;
  std::vector<int32_t> prompt_token_ids;
  sampling::SamplingParams sampling;
  StopConditions stop;
  int num_top_logprobs = -1;    // -1 off; k >= 0: each sampled token's logprob + top k
  int num_prompt_logprobs = -1;  // -1 off; k >= 0: each prompt token's logprob + top k
  std::string cache_salt;
  KvTransferHints kv_transfer;  // from kv_transfer_params
  TokenConstraints constraints;
};

// What one step produced for one request.
struct RequestOutput {
  std::string request_id;
  // Usually one token; a step that verified draft tokens adds the accepted
  // ones and one more. Empty on a final output without a token (abort).
  std::vector<SampledToken> new_tokens;
  // Prompt tokens 1..n-1 (token 0 has no logprob), delivered with the first
  // generated token when the request asked for prompt logprobs.
  std::vector<PromptLogprob> prompt_logprobs;
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;  // set once finished
  // On the final output: what the KV connector returned (P/D prefill), if any.
  std::optional<KvTransferParams> kv_transfer_params;
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_tokens = 0;  // prompt tokens served from the prefix cache
  int64_t num_output_tokens = 0;
  // On the request's first output: seconds from add_request() to its first
  // scheduling (vllm:request_queue_time_seconds) and from then to the end of
  // the step that sampled its first token (vllm:request_prefill_time_seconds);
  // -1 on later outputs.
  double queue_time_s = -1.0;
  double prefill_time_s = -1.0;
  // On the final output of a request that produced a token: first token to
  // the end (vllm:request_decode_time_seconds) and first scheduling to the end
  // (vllm:request_inference_time_seconds); -1 otherwise.
  double decode_time_s = -1.0;
  double inference_time_s = -1.0;
};

}  // namespace strata::engine
