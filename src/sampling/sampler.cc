#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/check.h"
#include "ops/ops.h"

namespace strata::sampling {
namespace {

bool better(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

bool better_value(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first < b.first;  // for max_element
}

// Lanes of independent partial results: plain loops the compiler turns into
// SIMD without reassociating anything (each lane keeps its own order).
constexpr int kLanes = 16;

float max_value(const float* x, int64_t n) {
  float part[kLanes];
  for (float& p : part) p = -INFINITY;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) part[l] = x[i + l] > part[l] ? x[i + l] : part[l];
  }
  float m = -INFINITY;
  for (float p : part) m = p > m ? p : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// Σ x[i] over [0, n) (only the x[i] >= floor), in f32 lanes per 4096
// values and double across them.
double sum(const float* x, int64_t n, float floor = -INFINITY) {
  double total = 0.0;
  for (int64_t b = 0; b < n; b += 4096) {
    const int64_t e = std::min<int64_t>(n, b + 4096);
    float part[kLanes] = {};
    int64_t i = b;
    for (; i + kLanes <= e; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) part[l] += x[i + l] >= floor ? x[i + l] : 0.0f;
    }
    float block = 0.0f;
    for (float p : part) block += p;
    const int tail = static_cast<int>(e - i);  // < kLanes
    for (int t = 0; t < tail; ++t) block += x[i + t] >= floor ? x[i + t] : 0.0f;
    total += block;
  }
  return total;
}

// Index of the entry of p [n] where the running sum first exceeds r (the
// last entry when rounding leaves r unspent): blocks of 4096 are skipped by
// their sums, so only one block is scanned value by value.
int64_t locate(const float* p, int64_t n, double r) {
  constexpr int64_t kBlock = 4096;
  int64_t b = 0;
  for (; b + kBlock < n; b += kBlock) {
    const double block = sum(p + b, kBlock);
    if (r < block) break;
    r -= block;
  }
  const int64_t end = std::min(n, b + kBlock);
  for (int64_t i = b; i < end; ++i) {
    r -= p[i];
    if (r < 0.0) return i;
  }
  for (int64_t i = n - 1; i > 0; --i) {
    if (p[i] > 0.0f) return i;
  }
  return 0;
}

}  // namespace

int32_t argmax(const float* logits, int64_t vocab) {
  STRATA_CHECK(vocab > 0);
  const float m = max_value(logits, vocab);
  for (int64_t i = 0; i < vocab; ++i) {
    if (logits[i] == m) return static_cast<int32_t>(i);
  }
  return 0;  // all NaN
}

namespace {

// The f32 softmax of logits [vocab] (vectorized, ~6x faster than a double
// loop), in a per-thread buffer.
const float* softmax_copy(const float* logits, int64_t vocab) {
  thread_local std::vector<float> p;
  p.assign(logits, logits + vocab);
  ops::softmax(p.data(), vocab);
  return p.data();
}

// log Σ e^x over logits from their softmax p and the index of a largest
// logit: that term of Σ e^(x - max) is e^0 = 1, so the sum is 1 / p[top].
double log_sum_exp(const float* logits, const float* p, int32_t top) {
  return static_cast<double>(logits[top]) - std::log(static_cast<double>(p[top]));
}

// The k best (logit, id) of logits [vocab], best first, ties by lower id
// (fewer only where logits are NaN). One pass keeps the k best so far: past
// the first few, a logit is compared with the k-th best alone.
std::vector<std::pair<float, int32_t>> best_logits(const float* logits, int64_t vocab, int k) {
  std::vector<std::pair<float, int32_t>> best;
  k = static_cast<int>(std::min<int64_t>(k, vocab));
  if (k <= 0) return best;
  best.reserve(static_cast<size_t>(k) + 1);
  for (int64_t i = 0; i < vocab; ++i) {
    const bool full = static_cast<int>(best.size()) == k;
    if (full && !(logits[i] >= best.back().first)) continue;  // below the k-th (or NaN)
    const std::pair<float, int32_t> c{logits[i], static_cast<int32_t>(i)};
    if (full && !better(c, best.back())) continue;  // a tie with a lower id
    best.insert(std::upper_bound(best.begin(), best.end(), c, better), c);
    if (static_cast<int>(best.size()) > k) best.pop_back();
  }
  return best;
}

}  // namespace

TokenLogprobs token_logprobs(const float* logits, int64_t vocab, int32_t token, int k) {
  const std::vector<std::pair<float, int32_t>> best = best_logits(logits, vocab, k);
  const float* p = softmax_copy(logits, vocab);
  TokenLogprobs out;
  if (best.empty()) {
    // Where p is too small for f32, the log taken apart, in double.
    out.logprob = p[token] > 1e-30f
                      ? std::log(p[token])
                      : static_cast<float>(logits[token] -
                                           log_sum_exp(logits, p, argmax(logits, vocab)));
    return out;
  }
  const double lse = log_sum_exp(logits, p, best[0].second);
  out.logprob = static_cast<float>(logits[token] - lse);
  for (const auto& [value, id] : best) out.top.emplace_back(id, static_cast<float>(value - lse));
  return out;
}

float token_logprob(const float* logits, int64_t vocab, int32_t token) {
  return token_logprobs(logits, vocab, token, 0).logprob;
}

std::vector<std::pair<int32_t, float>> top_logprobs(const float* logits, int64_t vocab, int k) {
  return token_logprobs(logits, vocab, 0, k).top;
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

int64_t Sampler::num_candidates(int64_t) {
  // Sorting the whole vocabulary (150K entries for Qwen) would cost more than
  // a decode step: only min-p's survivors are sorted (top-k goes through
  // select_top_k, top-p alone through sample_nucleus).
  const float max = std::max_element(candidates_.begin(), candidates_.end(), better_value)->first;
  const float floor = max + static_cast<float>(std::log(params_.min_p));
  int64_t n = 0;
  for (const auto& c : candidates_) n += c.first >= floor;
  return std::max<int64_t>(n, 1);
}

int32_t Sampler::sample(const float* raw_logits, int64_t vocab,
                        std::span<const int32_t> prompt_ids,
                        std::span<const int32_t> output_ids) {
  const float* logits = process(raw_logits, vocab, prompt_ids, output_ids);
  if (params_.temperature <= 0.0) return argmax(logits, vocab);
  if ((params_.top_k <= 0 || params_.top_k >= vocab) && params_.min_p <= 0.0) {
    softmax(logits, vocab);
    return params_.top_p >= 1.0 ? sample_unsorted() : sample_nucleus();
  }
  int64_t keep;
  if (params_.top_k > 0 && params_.top_k < vocab) {
    keep = params_.top_k;
    select_top_k(logits, vocab, keep);
  } else {
    candidates_.resize(vocab);
    for (int64_t i = 0; i < vocab; ++i) {
      candidates_[i] = {static_cast<float>(logits[i] / params_.temperature),
                        static_cast<int32_t>(i)};
    }
    keep = num_candidates(vocab);
  }
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
    // Mass is relative to what top-k / min-p kept.
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

void Sampler::select_top_k(const float* logits, int64_t vocab, int64_t k) {
  // Buckets by the top bits of an order-preserving key of each logit; the
  // buckets from the top down until they hold k logits bound the top k, so
  // only their members become candidates (k plus one bucket's worth).
  auto key = [](float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
  };
  constexpr int kShift = 20;
  constexpr int kBuckets = 1 << (32 - kShift);
  bucket_count_.assign(kBuckets, 0);
  for (int64_t i = 0; i < vocab; ++i) ++bucket_count_[key(logits[i]) >> kShift];
  int64_t above = 0;
  uint32_t edge = kBuckets - 1;
  for (; edge > 0 && above + bucket_count_[edge] < k; --edge) above += bucket_count_[edge];
  candidates_.clear();
  for (int64_t i = 0; i < vocab; ++i) {
    if ((key(logits[i]) >> kShift) >= edge) {
      candidates_.push_back(
          {static_cast<float>(logits[i] / params_.temperature), static_cast<int32_t>(i)});
    }
  }
}

void Sampler::softmax(const float* logits, int64_t vocab) {
  probs_.resize(static_cast<size_t>(vocab));
  // x / 1 is x: temperature 1 (the OpenAI default) is a copy. Otherwise the
  // same double division, from locals so the loop vectorizes.
  float* out = probs_.data();
  const double t = params_.temperature;
  if (t == 1.0) {
    std::memcpy(out, logits, static_cast<size_t>(vocab) * sizeof(float));
  } else {
    for (int64_t i = 0; i < vocab; ++i) out[i] = static_cast<float>(logits[i] / t);
  }
  ops::softmax(out, vocab);
}

int32_t Sampler::sample_unsorted() {
  // Plain temperature sampling: the order of the scan does not change the
  // distribution, so the vocabulary is not sorted at all.
  const int64_t n = static_cast<int64_t>(probs_.size());
  const double r = std::uniform_real_distribution<double>(0.0, sum(probs_.data(), n))(rng_);
  return static_cast<int32_t>(locate(probs_.data(), n, r));
}

int32_t Sampler::sample_nucleus() {
  // The nucleus is the shortest prefix of the vocabulary sorted by
  // probability (ties: lower id first) holding top_p of the mass. No sort:
  // one pass buckets the mass by the top bits of each probability's float
  // (for p >= 0 the bit order is the value order), the scan from the top
  // bucket finds the boundary bucket, and only that bucket is sorted.
  const int64_t n = static_cast<int64_t>(probs_.size());
  const float* p = probs_.data();
  const double need = params_.top_p * sum(p, n);
  constexpr int kShift = 19;                         // 8 exponent + 4 mantissa bits
  constexpr int kBuckets = 1 << (31 - kShift);       // probabilities are >= 0
  bucket_mass_.assign(kBuckets, 0.0);
  auto bucket = [](float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return static_cast<int>(bits >> kShift);
  };
  // Bucket 0 (zeros and subnormals) is never read: the scan below stops at
  // it. A confident distribution over a large vocabulary is mostly exact
  // zeros (exp underflows), and adding them into bucket 0 was one long chain
  // of dependent adds, most of the time here (BENCHMARKS.md).
  for (int64_t i = 0; i < n; ++i) {
    const int b = bucket(p[i]);
    if (b != 0) bucket_mass_[b] += p[i];
  }
  double above = 0.0;  // mass of the buckets above the boundary
  int edge = kBuckets - 1;
  for (; edge > 0 && above + bucket_mass_[edge] < need; --edge) above += bucket_mass_[edge];
  // The boundary bucket's members, best first, until the nucleus is full.
  candidates_.clear();
  for (int64_t i = 0; i < n; ++i) {
    if (bucket(p[i]) == edge) candidates_.push_back({p[i], static_cast<int32_t>(i)});
  }
  std::sort(candidates_.begin(), candidates_.end(), better);
  size_t taken = 0;
  double mass = above;
  while (taken < candidates_.size() && (mass < need || taken == 0)) {
    mass += candidates_[taken++].first;
  }
  // The nucleus: every bucket above the edge, plus the taken members.
  const std::pair<float, int32_t> last = candidates_[taken - 1];
  double r = std::uniform_real_distribution<double>(0.0, mass)(rng_);
  int32_t chosen = last.second;
  for (int64_t i = 0; i < n; ++i) {
    const int b = bucket(p[i]);
    if (b < edge) continue;
    if (b == edge && better(last, {p[i], static_cast<int32_t>(i)})) continue;
    chosen = static_cast<int32_t>(i);
    r -= p[i];
    if (r < 0.0) break;
  }
  return chosen;
}

}  // namespace strata::sampling
