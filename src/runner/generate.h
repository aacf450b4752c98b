// Single-sequence generation: prefill the prompt, then decode token by token.
// This is what `strata generate`, `strata bench` and the golden tests run: the
// same Model::forward serving's runner calls, over a paged KV cache of
// 16-token blocks (serving's default block size) addressed through a block
// table, so the tools and serving exercise one forward pass.
//
// Called from one thread; the forward pass runs on the given backend.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/status.h"
#include "backend/backend.h"
#include "model/layers/expert_load.h"
#include "model/model.h"
#include "sampling/sampler.h"

namespace strata::runner {

struct GenerateOptions {
  int64_t max_tokens = 16;
  sampling::SamplingParams sampling;
  std::vector<int32_t> stop_token_ids;  // generation ends after emitting one of these
  int num_top_logprobs = 0;             // per generated position
  bool keep_all_logits = false;         // fill GenerateResult::logits
  tensor::KvCacheDtype kv_dtype = tensor::KvCacheDtype::kF32;  // the KV arena's element type
};

struct GenerateResult {
  std::vector<int32_t> output_ids;
  // [num_output][num_top_logprobs] (token_id, logprob), best first.
  std::vector<std::vector<std::pair<int32_t, float>>> top_logprobs;
  // When keep_all_logits: [prompt + output - 1, vocab]; row i predicts token i + 1
  // of prompt ++ output.
  std::vector<float> logits;
  int64_t num_logit_rows = 0;
  bool stopped_on_token = false;
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;
};

// Errors: empty prompt, a token id outside the vocabulary, or prompt +
// max_tokens beyond the model's max_position_embeddings.
StatusOr<GenerateResult> generate(const model::Model& model, const std::vector<int32_t>& prompt,
                                  const GenerateOptions& options, backend::Backend& backend);

// llama-bench style throughput: pp = prefill of `num_prompt_tokens` random
// tokens in one pass; tg = `num_gen_tokens` single-token decode steps from an
// empty context (as llama-bench measures pp512 and tg128), or after `depth`
// prefilled context tokens (llama-bench -d).
struct BenchResult {
  double prefill_tokens_per_s = 0.0;
  double decode_tokens_per_s = 0.0;
  model::ExpertLoad expert_load;  // tokens per expert over the decode steps (MoE models)
};
BenchResult bench(const model::Model& model, int64_t num_prompt_tokens, int64_t num_gen_tokens,
                  int64_t depth, tensor::KvCacheDtype kv_dtype, backend::Backend& backend);

}  // namespace strata::runner
