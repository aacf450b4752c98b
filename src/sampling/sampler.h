// Turns one row of logits into the next token, with a per-request seeded RNG
// so the same seed reproduces the same text whatever the batch around it.
//
// Processing order follows vLLM: logit_bias, then penalties (repetition on
// prompt + output tokens; frequency and presence on output tokens), then
// temperature (0 = greedy: argmax, lowest id on exact ties), min-p (relative
// to the most likely token), top-k, and top-p over what remains.
// Logprobs reported to clients are computed from the raw model logits.
//
// Thread-safety: a Sampler belongs to one request; not shared.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace strata::sampling {

struct SamplingParams {
  double temperature = 1.0;  // 0 = greedy
  int64_t top_k = 0;         // 0 or -1 = off
  double top_p = 1.0;        // 1 = off
  double min_p = 0.0;        // 0 = off
  uint64_t seed = 0;
  double presence_penalty = 0.0;    // subtracted once if the token was generated
  double frequency_penalty = 0.0;   // subtracted per generated occurrence
  double repetition_penalty = 1.0;  // HF style on prompt and generated tokens; 1 = off
  std::vector<std::pair<int32_t, float>> logit_bias;  // added to the raw logits

  bool has_penalties() const {
    return presence_penalty != 0.0 || frequency_penalty != 0.0 || repetition_penalty != 1.0;
  }
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // Picks the next token from logits [vocab]. `prompt_ids` and `output_ids`
  // (the request's tokens so far) feed the penalties. Does not modify logits.
  int32_t sample(const float* logits, int64_t vocab, std::span<const int32_t> prompt_ids = {},
                 std::span<const int32_t> output_ids = {});

  const SamplingParams& params() const { return params_; }

 private:
  // logits after logit_bias and penalties (into processed_).
  const float* process(const float* logits, int64_t vocab, std::span<const int32_t> prompt_ids,
                       std::span<const int32_t> output_ids);

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<float> processed_;                       // scratch [vocab]
  // How many best candidates the sorted path needs with min-p (its survivors).
  int64_t num_candidates(int64_t vocab);
  // candidates_ = (logit / temperature, id) for a superset of the k best
  // logits (whole buckets of them), unsorted.
  void select_top_k(const float* logits, int64_t vocab, int64_t k);
  // probs_ = softmax(logits / temperature) over the whole vocabulary (f32,
  // the vectorized ops::softmax).
  void softmax(const float* logits, int64_t vocab);
  // Plain temperature sampling from probs_.
  int32_t sample_unsorted();
  // Top-p sampling from probs_ (no top-k, no min-p).
  int32_t sample_nucleus();

  std::vector<std::pair<float, int32_t>> candidates_;  // scratch
  std::vector<float> probs_;                           // scratch [vocab]
  std::vector<double> bucket_mass_;                    // scratch (sample_nucleus)
  std::vector<int64_t> bucket_count_;                  // scratch (select_top_k)
};

int32_t argmax(const float* logits, int64_t vocab);

// log_softmax of logits [vocab] at `token`, and the k >= 0 most likely
// tokens as (token_id, logprob), best first, ties by lower id: one f32
// softmax for both (~1e-6 absolute error; below p = 1e-30, (x - max) +
// log p[argmax] in double).
struct TokenLogprobs {
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;
};
TokenLogprobs token_logprobs(const float* logits, int64_t vocab, int32_t token, int k);

// token_logprobs' parts alone.
float token_logprob(const float* logits, int64_t vocab, int32_t token);
std::vector<std::pair<int32_t, float>> top_logprobs(const float* logits, int64_t vocab, int k);

}  // namespace strata::sampling
