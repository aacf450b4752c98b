#include "engine/request_limits.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/engine_core.h"

namespace strata::engine {

RequestLimits RequestLimits::of(const EngineConfig& config, int64_t vocab_size,
                                int64_t num_kv_blocks) {
  RequestLimits limits;
  limits.max_model_len = config.scheduler.max_model_len;
  limits.vocab_size = vocab_size;
  limits.kv_capacity_tokens = num_kv_blocks * config.block_size;
  if (!config.scheduler.enable_chunked_prefill) {
    limits.max_prefill_tokens = config.scheduler.max_num_batched_tokens;
  }
  return limits;
}

Status PromptLimitBreach::to_status() const {
  const std::string prompt = "prompt has " + std::to_string(num_tokens) + " tokens; ";
  switch (kind) {
    case Kind::kNone:
      return Status();
    case Kind::kEmpty:
      return invalid_argument("the prompt is empty");
    case Kind::kModelLen:
      return invalid_argument(prompt + "the maximum model length is " + std::to_string(limit));
    case Kind::kKvCache:
      return invalid_argument(prompt + "the KV cache holds " + std::to_string(limit) + " tokens");
    case Kind::kStepBudget:
      return invalid_argument(prompt + "a step computes at most " + std::to_string(limit) +
                              " tokens and chunked prefill is off");
  }
  return Status();
}

PromptLimitBreach check_prompt_length(const RequestLimits& limits, int64_t num_prompt_tokens,
                                      int64_t num_new_tokens) {
  using Kind = PromptLimitBreach::Kind;
  const int64_t n = num_prompt_tokens;
  if (n == 0) return {Kind::kEmpty, n, 0};
  if (n + num_new_tokens > limits.max_model_len) return {Kind::kModelLen, n, limits.max_model_len};
  // The first generated token needs a slot too.
  if (limits.kv_capacity_tokens > 0 && n + 1 > limits.kv_capacity_tokens) {
    return {Kind::kKvCache, n, limits.kv_capacity_tokens};
  }
  if (limits.max_prefill_tokens > 0 && n > limits.max_prefill_tokens) {
    return {Kind::kStepBudget, n, limits.max_prefill_tokens};
  }
  return {};
}

Status validate_request(const RequestLimits& limits, const EngineRequest& request) {
  const int64_t n = static_cast<int64_t>(request.prompt_token_ids.size());
  if (PromptLimitBreach breach = check_prompt_length(limits, n)) return breach.to_status();
  const std::vector<int32_t>& ids = request.prompt_token_ids;
  const auto outside = std::find_if(ids.begin(), ids.end(),
                                    [&](int32_t id) { return id < 0 || id >= limits.vocab_size; });
  if (outside != ids.end()) {
    return invalid_argument("prompt token " + std::to_string(outside - ids.begin()) + " is " +
                            std::to_string(*outside) + "; the vocabulary has " +
                            std::to_string(limits.vocab_size) + " tokens");
  }
  if (request.stop.max_tokens < 1) {
    return invalid_argument("max_tokens must be at least 1, got " +
                            std::to_string(request.stop.max_tokens));
  }
  return Status();
}

}  // namespace strata::engine
