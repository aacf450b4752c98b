#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace strata::sampling {
namespace {

// log(sum(exp(logits))) computed stably in double.
double log_sum_exp(const float* logits, int64_t vocab) {
  float max = *std::max_element(logits, logits + vocab);
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - max));
  return max + std::log(sum);
}

bool better(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

}  // namespace

int32_t argmax(const float* logits, int64_t vocab) {
  STRATA_CHECK(vocab > 0);
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

float token_logprob(const float* logits, int64_t vocab, int32_t token) {
  return static_cast<float>(logits[token] - log_sum_exp(logits, vocab));
}

std::vector<std::pair<int32_t, float>> top_logprobs(const float* logits, int64_t vocab, int k) {
  k = static_cast<int>(std::min<int64_t>(k, vocab));
  std::vector<std::pair<float, int32_t>> all(vocab);
  for (int64_t i = 0; i < vocab; ++i) all[i] = {logits[i], static_cast<int32_t>(i)};
  std::partial_sort(all.begin(), all.begin() + k, all.end(), better);
  double lse = log_sum_exp(logits, vocab);
  std::vector<std::pair<int32_t, float>> out;
  for (int i = 0; i < k; ++i) {
    out.emplace_back(all[i].second, static_cast<float>(all[i].first - lse));
  }
  return out;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

const float* Sampler::process(const float* logits, int64_t vocab,
                              std::span<const int32_t> prompt_ids,
                              std::span<const int32_t> output_ids) {
  if (params_.logit_bias.empty() && !params_.has_penalties()) return logits;
  processed_.assign(logits, logits + vocab);
  for (const auto& [token, bias] : params_.logit_bias) {
    if (token >= 0 && token < vocab) processed_[token] += bias;
  }
  if (params_.repetition_penalty != 1.0) {
    const float p = static_cast<float>(params_.repetition_penalty);
    std::vector<bool> seen(vocab, false);
    for (std::span<const int32_t> ids : {prompt_ids, output_ids}) {
      for (int32_t t : ids) {
        if (t < 0 || t >= vocab || seen[t]) continue;
        seen[t] = true;
        processed_[t] = processed_[t] > 0 ? processed_[t] / p : processed_[t] * p;
      }
    }
  }
  if (params_.frequency_penalty != 0.0 || params_.presence_penalty != 0.0) {
    std::vector<int32_t> counts(vocab, 0);
    for (int32_t t : output_ids) {
      if (t >= 0 && t < vocab) ++counts[t];
    }
    for (int64_t t = 0; t < vocab; ++t) {
      if (counts[t] == 0) continue;
      processed_[t] -= static_cast<float>(params_.frequency_penalty * counts[t] +
                                          params_.presence_penalty);
    }
  }
  return processed_.data();
}

int32_t Sampler::sample(const float* raw_logits, int64_t vocab,
                        std::span<const int32_t> prompt_ids,
                        std::span<const int32_t> output_ids) {
  const float* logits = process(raw_logits, vocab, prompt_ids, output_ids);
  if (params_.temperature <= 0.0) return argmax(logits, vocab);
  candidates_.resize(vocab);
  for (int64_t i = 0; i < vocab; ++i) {
    candidates_[i] = {static_cast<float>(logits[i] / params_.temperature),
                      static_cast<int32_t>(i)};
  }
  int64_t keep = vocab;
  if (params_.top_k > 0 && params_.top_k < vocab) keep = params_.top_k;
  std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), better);
  // Unnormalised probabilities of the kept candidates, best first.
  const float max = candidates_[0].first;
  std::vector<double> probs(keep);
  for (int64_t i = 0; i < keep; ++i) probs[i] = std::exp(candidates_[i].first - max);
  int64_t cut = keep;
  if (params_.min_p > 0.0) {
    // probs[0] is the most likely token of the whole distribution.
    int64_t i = 1;
    while (i < cut && probs[i] >= params_.min_p * probs[0]) ++i;
    cut = i;
  }
  if (params_.top_p < 1.0) {
    double total = 0.0;
    for (int64_t i = 0; i < cut; ++i) total += probs[i];
    double cumulative = 0.0;
    for (int64_t i = 0; i < cut; ++i) {
      cumulative += probs[i] / total;
      if (cumulative >= params_.top_p) {
        cut = i + 1;
        break;
      }
    }
  }
  double total = 0.0;
  for (int64_t i = 0; i < cut; ++i) total += probs[i];
  double r = std::uniform_real_distribution<double>(0.0, total)(rng_);
  for (int64_t i = 0; i < cut; ++i) {
    r -= probs[i];
    if (r < 0.0) return candidates_[i].second;
  }
  return candidates_[cut - 1].second;
}

}  // namespace strata::sampling
