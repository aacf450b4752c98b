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

int32_t Sampler::sample(const float* logits, int64_t vocab) {
  if (params_.temperature <= 0.0) return argmax(logits, vocab);
  candidates_.resize(vocab);
  for (int64_t i = 0; i < vocab; ++i) {
    candidates_[i] = {static_cast<float>(logits[i] / params_.temperature),
                      static_cast<int32_t>(i)};
  }
  int64_t keep = vocab;
  if (params_.top_k > 0 && params_.top_k < vocab) keep = params_.top_k;
  std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), better);
  // Probabilities of the kept candidates, renormalised.
  const float max = candidates_[0].first;
  std::vector<double> probs(keep);
  double sum = 0.0;
  for (int64_t i = 0; i < keep; ++i) sum += probs[i] = std::exp(candidates_[i].first - max);
  int64_t cut = keep;
  if (params_.top_p < 1.0) {
    double cumulative = 0.0;
    for (int64_t i = 0; i < keep; ++i) {
      cumulative += probs[i] / sum;
      if (cumulative >= params_.top_p) {
        cut = i + 1;
        break;
      }
    }
  }
  if (params_.min_p > 0.0) {
    const double threshold = params_.min_p * probs[0];
    int64_t i = 1;
    while (i < cut && probs[i] >= threshold) ++i;
    cut = i;
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
