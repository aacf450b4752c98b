#include "bench_serve/arrival.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata::bench {
namespace {

TEST(ArrivalTest, InfiniteRateSendsEverythingAtOnce) {
  for (double t : make_arrival_times(5, INFINITY, 1.0, 0)) EXPECT_EQ(t, 0.0);
}

TEST(ArrivalTest, PoissonScheduleEndsAtNOverRate) {
  const std::vector<double> t = make_arrival_times(1000, 20.0, 1.0, 3);
  ASSERT_EQ(t.size(), 1000u);
  EXPECT_NEAR(t.back(), 1000 / 20.0, 1e-9);
  for (size_t i = 1; i < t.size(); ++i) EXPECT_GE(t[i], t[i - 1]);
  // Exponential gaps: coefficient of variation near 1.
  double sum = 0, sq = 0;
  for (size_t i = 1; i < t.size(); ++i) {
    const double g = t[i] - t[i - 1];
    sum += g;
    sq += g * g;
  }
  const double n = static_cast<double>(t.size() - 1), mean = sum / n;
  EXPECT_NEAR(std::sqrt(sq / n - mean * mean) / mean, 1.0, 0.15);
  EXPECT_EQ(t, make_arrival_times(1000, 20.0, 1.0, 3));  // deterministic by seed
}

TEST(ArrivalTest, HighBurstinessIsNearlyUniform) {
  const std::vector<double> t = make_arrival_times(100, 10.0, INFINITY, 0);
  for (size_t i = 0; i < t.size(); ++i) EXPECT_NEAR(t[i], (i + 1) / 10.0, 1e-9);
}

}  // namespace
}  // namespace strata::bench
