#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include <cmath>
#include <map>
#include <vector>

namespace strata::sampling {
namespace {

// [vocab] logits drawn from N(mean, sd) with a fixed seed.
std::vector<float> normal_logits(int64_t vocab, uint32_t seed, float mean, float sd) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> noise(mean, sd);
  std::vector<float> logits(vocab);
  for (float& l : logits) l = noise(gen);
  return logits;
}

TEST(SamplerTest, GreedyPicksArgmaxAndLowestIdOnTies) {
  std::vector<float> logits = {0.1f, 2.0f, 2.0f, -1.0f};
  Sampler s({.temperature = 0.0});
  EXPECT_EQ(s.sample(logits.data(), 4), 1);
}

TEST(SamplerTest, TopLogprobsSortedAndNormalised) {
  std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.0f};
  auto top = top_logprobs(logits.data(), 4, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 1);
  EXPECT_EQ(top[1].first, 2);
  EXPECT_EQ(top[2].first, 0);
  double z = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + std::exp(0.0);
  EXPECT_NEAR(top[0].second, 3.0 - std::log(z), 1e-5);
  EXPECT_NEAR(token_logprob(logits.data(), 4, 3), -std::log(z), 1e-5);
}

TEST(SamplerTest, SameSeedSameSequence) {
  std::vector<float> logits = {0.5f, 0.4f, 0.3f, 0.2f, 0.1f};
  Sampler a({.temperature = 1.0, .seed = 7});
  Sampler b({.temperature = 1.0, .seed = 7});
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.sample(logits.data(), 5), b.sample(logits.data(), 5));
}

TEST(SamplerTest, TopKRestrictsSupport) {
  std::vector<float> logits = {1.0f, 0.9f, 0.8f, 5.0f, 0.7f};
  Sampler s({.temperature = 1.0, .top_k = 2, .seed = 3});
  std::map<int, int> seen;
  for (int i = 0; i < 500; ++i) seen[s.sample(logits.data(), 5)]++;
  for (auto& [tok, n] : seen) EXPECT_TRUE(tok == 3 || tok == 0) << tok;
}

TEST(SamplerTest, TopPKeepsSmallestNucleus) {
  // Probabilities ~ {0.7, 0.2, 0.1}: top_p 0.75 keeps the first two.
  std::vector<float> logits = {std::log(0.7f), std::log(0.2f), std::log(0.1f)};
  Sampler s({.temperature = 1.0, .top_p = 0.75, .seed = 1});
  std::map<int, int> seen;
  for (int i = 0; i < 2000; ++i) seen[s.sample(logits.data(), 3)]++;
  EXPECT_EQ(seen.count(2), 0u);
  EXPECT_GT(seen[1], 300);
}

// The nucleus by the definition: sort by probability (ties: lower id first),
// keep the shortest prefix holding top_p of the mass.
std::set<int32_t> reference_nucleus(const std::vector<float>& logits, double top_p) {
  double total = 0.0;
  for (float l : logits) total += std::exp(double(l));
  std::vector<std::pair<double, int32_t>> sorted;
  for (size_t i = 0; i < logits.size(); ++i) {
    sorted.push_back({std::exp(double(logits[i])) / total, static_cast<int32_t>(i)});
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::set<int32_t> nucleus;
  double cumulative = 0.0;
  for (const auto& [p, id] : sorted) {
    nucleus.insert(id);
    cumulative += p;
    if (cumulative >= top_p) break;
  }
  return nucleus;
}

// A large vocabulary (as Qwen's 152K) where only the nucleus is sorted: the
// tokens sampled must be exactly those of the naive full-sort nucleus.
TEST(SamplerTest, LargeVocabularyNucleusMatchesFullSort) {
  const int64_t vocab = 50000;
  std::vector<float> logits = normal_logits(vocab, 5, 0.0f, 1.0f);
  for (int i = 0; i < 40; ++i) logits[(i * 7919) % vocab] += 16.0f - 0.1f * i;  // a peaked head
  for (double top_p : {0.5, 0.9}) {
    const std::set<int32_t> nucleus = reference_nucleus(logits, top_p);
    Sampler s({.temperature = 1.0, .top_p = top_p, .seed = 9});
    std::set<int32_t> seen;
    for (int i = 0; i < 1500; ++i) seen.insert(s.sample(logits.data(), vocab));
    for (int32_t t : seen) EXPECT_TRUE(nucleus.count(t)) << "token " << t << " top_p " << top_p;
    EXPECT_LE(nucleus.size(), 40u);
    EXPECT_GE(seen.size() * 10, nucleus.size() * 7) << "most of the nucleus is reachable";
  }
  // No truncation at all: every token may come, and the head dominates.
  Sampler plain({.temperature = 1.0, .seed = 4});
  std::map<int32_t, int> counts;
  for (int i = 0; i < 3000; ++i) counts[plain.sample(logits.data(), vocab)]++;
  EXPECT_GT(counts[0], 150);  // logits[0] got the largest boost (~10% of the mass)
}

// A spread of logits as wide as the served random-weight models' (σ 30):
// after the softmax nearly every probability is exactly zero or subnormal
// (bucket 0, which sample_nucleus leaves out of its bucket masses). Over them
// sit a head of 6 tokens (p >= 0.03 each, 91% of the mass) and a tail of 300
// with p ~ 3e-4 and distinct values, so that top-p 0.97 and 0.999 end inside the tail, in
// buckets far below the head's. The sampled tokens are exactly the naive
// nucleus's, the head is reached, and so is the tail's part of the nucleus.
TEST(SamplerTest, NucleusOfAWideSpreadMatchesFullSort) {
  const int64_t vocab = 152000;
  // Below the head and tail: the noise's max is ~4.5 σ = 75.
  std::vector<float> logits = normal_logits(vocab, 6, -60.0f, 30.0f);
  std::set<int32_t> head, tail;
  for (int i = 0; i < 306; ++i) {
    const int32_t id = static_cast<int32_t>((i * 7919) % vocab);
    (i < 6 ? head : tail).insert(id);
    logits[id] = i < 6 ? 140.0f - 0.5f * i : 134.0f - 0.01f * (i - 6);
  }
  for (double top_p : {0.5, 0.97, 0.999}) {
    const std::set<int32_t> nucleus = reference_nucleus(logits, top_p);
    Sampler s({.temperature = 1.0, .top_p = top_p, .seed = 11});
    std::set<int32_t> seen;
    int from_tail = 0;
    for (int i = 0; i < 2000; ++i) {
      const int32_t t = s.sample(logits.data(), vocab);
      seen.insert(t);
      from_tail += static_cast<int>(tail.count(t));
    }
    for (int32_t t : seen) EXPECT_TRUE(nucleus.count(t)) << "token " << t << " top_p " << top_p;
    for (int32_t t : nucleus) {
      if (head.count(t)) {
        EXPECT_TRUE(seen.count(t)) << "token " << t << " top_p " << top_p;
      }
    }
    if (top_p > 0.5) {
      EXPECT_LT(nucleus.size(), head.size() + tail.size()) << "the boundary is inside the tail";
      EXPECT_GT(from_tail, 40) << "top_p " << top_p;
    }
  }
}

// A flat distribution (the nucleus is thousands of tokens, many sharing a
// probability bucket) with exact ties: sampled tokens are all inside the
// naive nucleus (ties broken by lower id), and the boundary is respected.
TEST(SamplerTest, FlatNucleusWithTiesMatchesFullSort) {
  const int64_t vocab = 20000;
  std::vector<float> logits(vocab);
  for (int64_t i = 0; i < vocab; ++i) logits[i] = static_cast<float>(i % 100) * 0.01f;  // ties
  const double top_p = 0.3;
  const std::set<int32_t> nucleus = reference_nucleus(logits, top_p);
  Sampler s({.temperature = 1.0, .top_p = top_p, .seed = 3});
  for (int i = 0; i < 3000; ++i) {
    int32_t t = s.sample(logits.data(), vocab);
    ASSERT_TRUE(nucleus.count(t)) << "token " << t;
  }
}

// Top-k on a large vocabulary with negative logits and ties at the k-th
// value: the sampled tokens are the exact k best (ties: lower id first).
TEST(SamplerTest, LargeVocabularyTopKMatchesFullSort) {
  const int64_t vocab = 60000, k = 20;
  std::vector<float> logits = normal_logits(vocab, 8, -5.0f, 2.0f);
  for (int i = 0; i < 30; ++i) logits[(i * 1999) % vocab] = 3.0f;  // 30 tied at the top
  std::vector<int32_t> order(vocab);
  for (int64_t i = 0; i < vocab; ++i) order[i] = static_cast<int32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  std::set<int32_t> best(order.begin(), order.begin() + k);
  Sampler s({.temperature = 1.0, .top_k = k, .seed = 6});
  std::set<int32_t> seen;
  for (int i = 0; i < 2000; ++i) {
    int32_t t = s.sample(logits.data(), vocab);
    ASSERT_TRUE(best.count(t)) << "token " << t;
    seen.insert(t);
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(k));
}

// token_logprob (f32 softmax) against double math, on a large vocabulary
// with tokens far in the tail (where it falls back to double).
TEST(SamplerTest, TokenLogprobMatchesDouble) {
  const int64_t vocab = 151936;
  std::vector<float> logits = normal_logits(vocab, 2, 0.0f, 4.0f);
  logits[5] = 40.0f;
  logits[6] = -90.0f;  // p ~ e^-130: below f32's range
  double max = 40.0, sum = 0.0;
  for (float l : logits) sum += std::exp(double(l) - max);
  for (int32_t t : {0, 5, 6, 77, 151935}) {
    double want = double(logits[t]) - max - std::log(sum);
    EXPECT_NEAR(token_logprob(logits.data(), vocab, t), want, 1e-4 + 1e-6 * std::fabs(want)) << t;
  }
}

// top_logprobs on a large vocabulary with ties at the cut: the k best by
// (logit desc, id asc), exactly as a full sort orders them, with logprobs
// against double math.
TEST(SamplerTest, TopLogprobsMatchesAFullSort) {
  const int64_t vocab = 151936;
  std::vector<float> logits = normal_logits(vocab, 3, 0.0f, 30.0f);
  for (int64_t i : {9, 500, 70000, 151935}) logits[i] = 150.0f;  // a 4-way tie
  logits[42] = 151.0f;
  std::vector<std::pair<float, int32_t>> sorted;
  for (int64_t i = 0; i < vocab; ++i) sorted.push_back({logits[i], static_cast<int32_t>(i)});
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  double sum = 0.0;
  for (float l : logits) sum += std::exp(double(l) - 151.0);
  const double lse = 151.0 + std::log(sum);
  for (int k : {1, 3, 5, 20}) {
    std::vector<std::pair<int32_t, float>> top = top_logprobs(logits.data(), vocab, k);
    ASSERT_EQ(top.size(), static_cast<size_t>(k));
    for (int i = 0; i < k; ++i) {
      EXPECT_EQ(top[i].first, sorted[i].second) << k << " " << i;
      EXPECT_NEAR(top[i].second, double(sorted[i].first) - lse, 1e-4) << k << " " << i;
    }
  }
  EXPECT_TRUE(top_logprobs(logits.data(), vocab, 0).empty());
}

TEST(SamplerTest, MinPDropsUnlikelyTokens) {
  std::vector<float> logits = {std::log(0.6f), std::log(0.35f), std::log(0.05f)};
  Sampler s({.temperature = 1.0, .min_p = 0.2, .seed = 2});
  for (int i = 0; i < 1000; ++i) EXPECT_NE(s.sample(logits.data(), 3), 2);
}

}  // namespace
}  // namespace strata::sampling

namespace strata::sampling {
namespace {

TEST(SamplerPenaltyTest, LogitBiasCanForceAToken) {
  std::vector<float> logits = {5.0f, 1.0f, 0.0f};
  Sampler s({.temperature = 0.0, .logit_bias = {{2, 10.0f}}});
  EXPECT_EQ(s.sample(logits.data(), 3), 2);
}

TEST(SamplerPenaltyTest, RepetitionPenaltyDividesPositiveAndMultipliesNegative) {
  // Token 0 (logit 2) seen in the prompt: 2 / 4 = 0.5 < 1 (token 1) -> greedy picks 1.
  std::vector<float> logits = {2.0f, 1.0f, -1.0f};
  std::vector<int32_t> prompt = {0};
  Sampler s({.temperature = 0.0, .repetition_penalty = 4.0});
  EXPECT_EQ(s.sample(logits.data(), 3, prompt, {}), 1);
  // Without the token in context, no change.
  EXPECT_EQ(s.sample(logits.data(), 3, {}, {}), 0);
}

TEST(SamplerPenaltyTest, FrequencyAndPresenceUseOutputCountsOnly) {
  std::vector<float> logits = {3.0f, 2.5f};
  std::vector<int32_t> output = {0, 0};
  Sampler freq({.temperature = 0.0, .frequency_penalty = 0.3});  // 3 - 0.6 = 2.4 < 2.5
  EXPECT_EQ(freq.sample(logits.data(), 2, {}, output), 1);
  Sampler presence({.temperature = 0.0, .presence_penalty = 0.3});  // 3 - 0.3 = 2.7 > 2.5
  EXPECT_EQ(presence.sample(logits.data(), 2, {}, output), 0);
  std::vector<int32_t> prompt = {0, 0, 0};
  EXPECT_EQ(freq.sample(logits.data(), 2, prompt, {}), 0);  // prompt does not count
}

}  // namespace
}  // namespace strata::sampling
