#include "bench_serve/serving_metrics.h"

#include <gtest/gtest.h>

namespace strata::bench {
namespace {

RequestRecord ok_record(double start, double ttft, std::vector<double> itl, int64_t prompt,
                        int64_t output) {
  RequestRecord r;
  r.success = true;
  r.start_s = start;
  r.ttft_s = ttft;
  r.itl_s = std::move(itl);
  r.latency_s = ttft;
  for (double g : r.itl_s) r.latency_s += g;
  r.prompt_len = prompt;
  r.output_tokens = output;
  return r;
}

// Three requests, hand-computed:
//   A: start 0, TTFT 0.1, 4 gaps of 0.2 -> E2EL 0.9, 5 tokens -> TPOT 0.8/4 = 0.2
//   B: start 0.5, TTFT 0.3, one token -> no TPOT, no gaps, E2EL 0.3
//   C: failed
TEST(ServingMetricsTest, HandComputedRun) {
  std::vector<RequestRecord> records = {ok_record(0, 0.1, {0.2, 0.2, 0.2, 0.2}, 100, 5),
                                        ok_record(0.5, 0.3, {}, 50, 1), RequestRecord{}};
  records[2].prompt_len = 70;
  const ServingMetrics m = compute_serving_metrics(records, 2.0, {90, 99}, {});
  EXPECT_EQ(m.completed, 2);
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.total_input, 150);  // failed requests add nothing
  EXPECT_EQ(m.total_output, 6);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(m.output_throughput, 3.0);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 78.0);
  EXPECT_FALSE(m.request_goodput.has_value());
  EXPECT_NEAR(m.ttft_ms.mean, 200, 1e-9);
  EXPECT_NEAR(m.ttft_ms.std, 100, 1e-9);
  EXPECT_NEAR(m.ttft_ms.percentiles[0].second, 280, 1e-9);  // 100 + 0.9 * 200
  EXPECT_NEAR(m.tpot_ms.mean, 200, 1e-9);                   // only A has a TPOT
  EXPECT_NEAR(m.itl_ms.mean, 200, 1e-9);
  EXPECT_NEAR(m.itl_ms.std, 0, 1e-9);
  EXPECT_NEAR(m.e2el_ms.mean, 600, 1e-9);
  EXPECT_NEAR(m.e2el_ms.median, 600, 1e-9);
  EXPECT_NEAR(m.e2el_ms.percentiles[1].second, 300 + 0.99 * 600, 1e-9);
  // Token times: A at 0.1 0.3 0.5 0.7 0.9 (bucket 0), B at 0.8 (bucket 0).
  EXPECT_DOUBLE_EQ(m.max_output_tokens_per_s, 6);
  EXPECT_EQ(m.max_concurrent_requests, 2);
}

TEST(ServingMetricsTest, TpotDefinition) {
  RequestRecord r = ok_record(0, 0.5, {0.1, 0.3}, 10, 11);  // usage says 11 tokens in 3 chunks
  ASSERT_TRUE(request_tpot_s(r).has_value());
  EXPECT_NEAR(*request_tpot_s(r), (0.9 - 0.5) / 10, 1e-12);
  r.output_tokens = 1;
  EXPECT_FALSE(request_tpot_s(r).has_value());
}

TEST(ServingMetricsTest, GoodputCountsRequestsMeetingEverySlo) {
  std::vector<RequestRecord> records = {ok_record(0, 0.1, {0.2, 0.2}, 10, 3),    // TPOT 200 ms
                                        ok_record(0, 0.4, {0.05, 0.05}, 10, 3),  // TPOT 50 ms
                                        ok_record(0, 0.1, {}, 10, 1)};           // TPOT 0
  GoodputSlo slo;
  slo.ttft_ms = 300;
  slo.tpot_ms = 100;
  const ServingMetrics m = compute_serving_metrics(records, 4.0, {99}, slo);
  ASSERT_TRUE(m.request_goodput.has_value());
  EXPECT_DOUBLE_EQ(*m.request_goodput, 1.0 / 4.0);  // only the third
}

TEST(ServingMetricsTest, PeaksUseOneSecondBuckets) {
  // Two requests far apart: peak tokens/s is the larger bucket, concurrency 1.
  std::vector<RequestRecord> records = {ok_record(0, 0.1, {0.1, 0.1}, 1, 3),
                                        ok_record(5, 0.1, {0.1, 0.1, 0.1, 0.1}, 1, 5)};
  const ServingMetrics m = compute_serving_metrics(records, 6.0, {99}, {});
  EXPECT_DOUBLE_EQ(m.max_output_tokens_per_s, 5);
  EXPECT_EQ(m.max_concurrent_requests, 1);
}

TEST(ServingMetricsTest, NoSuccessesGiveZeros) {
  const ServingMetrics m = compute_serving_metrics({RequestRecord{}}, 1.0, {99}, {});
  EXPECT_EQ(m.completed, 0);
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.ttft_ms.mean, 0);
  EXPECT_EQ(m.max_output_tokens_per_s, 0);
}

}  // namespace
}  // namespace strata::bench
