// Turns the parsed OpenAI sampling fields into what a GenerationJob runs with:
// server defaults applied (request > generation_config.json > neutral),
// token ids checked against the vocabulary, max_tokens resolved per prompt
// against the engine's RequestLimits with vLLM's error messages, ids and
// timestamps.
//
// Thread-safety: I/O thread (uses the context's RNG and request counter).
#pragma once

#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/generation_job.h"
#include "server/openai_request.h"
#include "server/server_context.h"

namespace strata::server {

// The canonical served name for `requested` ("" = the first), else 404.
ApiOr<std::string> resolve_model(const ServerContext& ctx, const std::string& requested);

int64_t unix_now();  // seconds since the epoch

// "cmpl-<32 hex digits>" / "chatcmpl-<32 hex digits>": 128 random bits, unique
// across restarts and replicas (vLLM's ids). Any thread.
std::string new_response_id(const std::string& prefix);

// Sampling, stop conditions, detokenization, streaming flags and n.
ApiOr<JobOptions> make_job_options(ServerContext& ctx, const SamplingFields& fields);

// The constraint of structured outputs, compiled (cached by grammar text) into
// options->base.constraints.grammar. Errors (400): unsupported schema
// keywords (named), malformed regex or grammar, no vocabulary.
std::optional<ApiError> add_structured_output(ServerContext& ctx,
                                              const StructuredOutputRequest& request,
                                              JobOptions* options);

// Checks every prompt against the engine's limits (engine/request_limits.h:
// max_model_len, the KV cache, the step budget), worded for HTTP clients
// with vLLM's messages and the flags that raise each limit, and sets
// options->max_tokens.
// Default when the request gives none: 16 (completions) or the remaining
// context (chat; capped by generation_config's max_new_tokens).
std::optional<ApiError> resolve_max_tokens(const ServerContext& ctx, const SamplingFields& fields,
                                           bool is_chat, const std::vector<JobPrompt>& prompts,
                                           JobOptions* options);

// 500 when the engine died; 503 when the request's engine requests would exceed
// --max-pending-requests.
std::optional<ApiError> check_capacity(const ServerContext& ctx, size_t num_requests);

// truncate_prompt_tokens: keeps the last k tokens (k = -1: max_model_len).
void truncate_prompt(const ServerContext& ctx, const SamplingFields& fields,
                     std::vector<int32_t>* ids);

// Token ids outside the vocabulary -> 400 naming them.
std::optional<ApiError> check_token_ids(const ServerContext& ctx, const std::vector<int32_t>& ids,
                                        const std::string& param);

}  // namespace strata::server
