#include "bench_serve/stats.h"

#include <gtest/gtest.h>

namespace strata::bench {
namespace {

// Expected values computed with numpy 1.24 (np.mean, np.median, np.std,
// np.percentile with its default linear method).
TEST(StatsTest, MatchesNumpy) {
  const std::vector<double> v = {1, 2, 3, 4, 10};
  EXPECT_DOUBLE_EQ(mean_of(v), 4.0);
  EXPECT_DOUBLE_EQ(percentile_of(v, 50), 3.0);
  EXPECT_NEAR(std_of(v), 3.1622776601683795, 1e-12);
  EXPECT_NEAR(percentile_of(v, 90), 7.6, 1e-12);
  EXPECT_NEAR(percentile_of(v, 99), 9.76, 1e-12);
  EXPECT_NEAR(percentile_of(v, 25), 2.0, 1e-12);
}

TEST(StatsTest, UnsortedInputAndFractionalPercentiles) {
  const std::vector<double> v = {3.0, 1.0, 2.0, 7.0};
  EXPECT_NEAR(percentile_of(v, 90), 5.8, 1e-12);
  EXPECT_NEAR(percentile_of(v, 99), 6.88, 1e-12);
  EXPECT_NEAR(percentile_of(v, 99.9), 6.988, 1e-12);
  EXPECT_DOUBLE_EQ(percentile_of(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile_of(v, 100), 7.0);
}

TEST(StatsTest, SingleAndEmptySamples) {
  EXPECT_DOUBLE_EQ(percentile_of({0.5}, 99), 0.5);
  EXPECT_DOUBLE_EQ(std_of({0.5}), 0.0);
  const Distribution d = summarize({}, {99}, 1000);
  EXPECT_EQ(d.mean, 0);
  EXPECT_EQ(d.median, 0);
  ASSERT_EQ(d.percentiles.size(), 1u);
  EXPECT_EQ(d.percentiles[0].second, 0);
}

TEST(StatsTest, SummarizeScalesToMilliseconds) {
  const Distribution d = summarize({0.001, 0.002, 0.003}, {90, 99}, 1000);
  EXPECT_NEAR(d.mean, 2.0, 1e-9);
  EXPECT_NEAR(d.median, 2.0, 1e-9);
  EXPECT_NEAR(d.percentiles[0].second, 2.8, 1e-9);
  EXPECT_EQ(d.percentiles[1].first, 99);
}

TEST(StatsTest, PercentileLabels) {
  EXPECT_EQ(percentile_label(99), "99");
  EXPECT_EQ(percentile_label(99.9), "99.9");
  EXPECT_EQ(percentile_label(50), "50");
}

}  // namespace
}  // namespace strata::bench
