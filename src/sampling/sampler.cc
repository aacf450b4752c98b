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

bool better_value(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first < b.first;  // for max_element
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

int64_t Sampler::num_candidates(int64_t vocab) {
  // Without top-k, sorting the whole vocabulary (150K entries for Qwen) would
  // cost more than a decode step. Only a prefix of the sorted order is ever
  // used: min-p's survivors, or the top-p nucleus.
  if (params_.top_k > 0 && params_.top_k < vocab) return params_.top_k;
  const float max = std::max_element(candidates_.begin(), candidates_.end(), better_value)->first;
  if (params_.min_p > 0.0) {
    const float floor = max + static_cast<float>(std::log(params_.min_p));
    int64_t n = 0;
    for (const auto& c : candidates_) n += c.first >= floor;
    return std::max<int64_t>(n, 1);
  }
  if (params_.top_p >= 1.0) return vocab;
  double total = 0.0;
  for (const auto& c : candidates_) total += std::exp(static_cast<double>(c.first - max));
  // Grow a sorted prefix until it holds top_p of the mass.
  for (int64_t k = std::min<int64_t>(64, vocab);; k = std::min<int64_t>(k * 4, vocab)) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + k, candidates_.end(), better);
    double mass = 0.0;
    for (int64_t i = 0; i < k; ++i) mass += std::exp(static_cast<double>(candidates_[i].first - max));
    if (mass / total >= params_.top_p || k == vocab) {
      nucleus_total_ = total;
      return k;
    }
  }
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
  nucleus_total_ = 0.0;
  const int64_t keep = num_candidates(vocab);
  if (keep == vocab && params_.top_p >= 1.0 && params_.min_p <= 0.0) return sample_unsorted();
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
    // Mass is relative to what top-k / min-p kept, or to the whole
    // vocabulary when only the nucleus was sorted.
    double total = nucleus_total_;
    if (total == 0.0) {
      for (int64_t i = 0; i < cut; ++i) total += probs[i];
    }
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

int32_t Sampler::sample_unsorted() {
  // Plain temperature sampling: the order of the scan does not change the
  // distribution, so the vocabulary is not sorted at all.
  const float max = std::max_element(candidates_.begin(), candidates_.end(), better_value)->first;
  probs_.resize(candidates_.size());
  double total = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    probs_[i] = std::exp(static_cast<double>(candidates_[i].first - max));
    total += probs_[i];
  }
  double r = std::uniform_real_distribution<double>(0.0, total)(rng_);
  for (size_t i = 0; i < candidates_.size(); ++i) {
    r -= probs_[i];
    if (r < 0.0) return candidates_[i].second;
  }
  return candidates_.back().second;
}

}  // namespace strata::sampling
