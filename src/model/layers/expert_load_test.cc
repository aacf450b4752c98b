// ExpertLoad's counters and the balance summary, on hand-made counts.
#include "model/layers/expert_load.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata::model {
namespace {

TEST(ExpertLoad, CountsRoutedExpertsPerMoeLayer) {
  ExpertLoad load({0, 2}, 3, 4);  // layer 1 is dense
  const int32_t step1[] = {3, 1, 3, 0};
  const int32_t step2[] = {1, 1};
  load.add(2, step1, 4);
  load.add(0, step2, 2);
  load.add(2, step2, 1);
  EXPECT_EQ(load.tokens(0, 1), 2);
  EXPECT_EQ(load.tokens(0, 0), 0);
  EXPECT_EQ(load.tokens(1, 0), 1);
  EXPECT_EQ(load.tokens(1, 1), 2);
  EXPECT_EQ(load.tokens(1, 2), 0);
  EXPECT_EQ(load.tokens(1, 3), 2);
  load.clear();
  EXPECT_EQ(load.tokens(1, 3), 0);
}

TEST(ExpertLoadDeathTest, DenseLayerHasNoCounters) {
  ExpertLoad load({0, 2}, 3, 4);
  const int32_t e[] = {0};
  EXPECT_DEATH(load.add(1, e, 1), "layer 1 has no expert counters");
}

TEST(ExpertLoad, BalanceSummary) {
  ExpertLoad load({5}, 6, 4);
  // Counts 6, 2, 0, 0: mean 2, max/mean 3, sd sqrt((16 + 0 + 4 + 4) / 4) = sqrt(6).
  const int32_t routed[] = {0, 0, 0, 1, 0, 0, 0, 1};
  load.add(5, routed, 8);
  const std::vector<LayerBalance> b = balance(load);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].layer, 5);
  EXPECT_EQ(b[0].total, 8);
  EXPECT_DOUBLE_EQ(b[0].max_over_mean, 3.0);
  EXPECT_NEAR(b[0].cv, std::sqrt(6.0) / 2.0, 1e-12);
  EXPECT_EQ(b[0].zero_experts, 2);
  const std::string text = format_balance(load);
  EXPECT_NE(text.find("layer  5: 8 routed rows, max/mean 3.00, cv 1.225, 2 of 4 experts idle"),
            std::string::npos)
      << text;
}

TEST(ExpertLoad, EvenLoadAndNoTokens) {
  ExpertLoad load({0, 1}, 2, 2);
  const int32_t routed[] = {0, 1, 1, 0};
  load.add(0, routed, 4);
  const std::vector<LayerBalance> b = balance(load);
  EXPECT_DOUBLE_EQ(b[0].max_over_mean, 1.0);
  EXPECT_DOUBLE_EQ(b[0].cv, 0.0);
  EXPECT_EQ(b[0].zero_experts, 0);
  EXPECT_EQ(b[1].total, 0);  // a layer no token reached: every expert idle
  EXPECT_EQ(b[1].zero_experts, 2);
}

}  // namespace
}  // namespace strata::model
