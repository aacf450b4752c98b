#include "engine/step_budget.h"

#include <gtest/gtest.h>

namespace strata::engine {
namespace {

// (FLOPs per prompt token, weight bytes per step) of the benchmark models, as
// `strata serve` logs them.
constexpr int64_t kBenchSmallFlops = 50'331'648, kBenchSmallBytes = 58'000'000;
constexpr int64_t kQwen05BFlops = 715'653'000, kQwen05BBytes = 988'000'000;

TEST(StepBudget, TheBenchmarkModelsGetTheirMeasuredBest) {
  // bench-small: (12 x 58e6 + 1e9) / 0.1 / 5.03e7 = 337 tokens -> 512.
  EXPECT_EQ(auto_max_num_batched_tokens(kBenchSmallFlops, kBenchSmallBytes), 512);
  // Qwen2.5-0.5B BF16: 180 tokens -> 256; Q8_0 reads half the bytes, still 256.
  EXPECT_EQ(auto_max_num_batched_tokens(kQwen05BFlops, kQwen05BBytes), 256);
  EXPECT_EQ(auto_max_num_batched_tokens(kQwen05BFlops, kQwen05BBytes / 2), 256);
}

TEST(StepBudget, TinyModelsGetTheLargestBudgetAndHugeOnesTheFloor) {
  EXPECT_EQ(auto_max_num_batched_tokens(1'000'000, 1'000'000), 2048);
  EXPECT_EQ(auto_max_num_batched_tokens(0, 0), 2048);  // no layers: nothing to bound
  EXPECT_EQ(auto_max_num_batched_tokens(14'000'000'000, 14'000'000'000), 256);
}

TEST(StepBudget, FewerFlopsPerTokenOrMoreBytesPerStepNeverShrinkIt) {
  int64_t previous = kMaxAutoStepTokens;
  for (int64_t flops = 1'000'000; flops < 100'000'000'000; flops += flops / 7) {
    const int64_t b = auto_max_num_batched_tokens(flops, flops);
    EXPECT_LE(b, previous) << flops;
    EXPECT_EQ(b % kStepTokenGrain, 0) << flops;
    EXPECT_GE(b, kStepTokenGrain);
    EXPECT_LE(b, kMaxAutoStepTokens);
    EXPECT_GE(auto_max_num_batched_tokens(flops, 4 * flops), b) << flops;
    previous = b;
  }
}

}  // namespace
}  // namespace strata::engine
