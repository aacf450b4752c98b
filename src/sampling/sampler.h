// Turns one row of logits into the next token, with a per-request seeded RNG
// so the same seed reproduces the same text. Temperature 0 is greedy (argmax,
// lowest id on exact ties). Filtering order follows vLLM: temperature, then
// top-k, top-p and min-p on the resulting distribution.
//
// Thread-safety: a Sampler belongs to one request; not shared.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace strata::sampling {

struct SamplingParams {
  double temperature = 1.0;  // 0 = greedy
  int64_t top_k = 0;         // 0 or -1 = off
  double top_p = 1.0;        // 1 = off
  double min_p = 0.0;        // 0 = off
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // Picks the next token from logits [vocab]. Does not modify `logits`.
  int32_t sample(const float* logits, int64_t vocab);

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;  // scratch
};

int32_t argmax(const float* logits, int64_t vocab);

// log_softmax of logits [vocab] at `token`.
float token_logprob(const float* logits, int64_t vocab, int32_t token);

// The k most likely tokens as (token_id, logprob), best first; ties by lower id.
std::vector<std::pair<int32_t, float>> top_logprobs(const float* logits, int64_t vocab, int k);

}  // namespace strata::sampling
