#include "bench_serve/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>

#include "bench_serve/cache_report.h"

namespace strata::bench {
namespace {

const char* const kBefore = R"(# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{model_name="m",engine="0"} 100.0
vllm:prefix_cache_hits_total{model_name="m",engine="0"} 40.0
vllm:prompt_tokens_by_source_total{model_name="m",engine="0",source="local_compute"} 60
vllm:prompt_tokens_by_source_total{model_name="m",engine="0",source="local_cache_hit"} 40
vllm:kv_offload_tiering_chunk_queries_total{model_name="m",tier="cpu"} 10
vllm:kv_offload_tiering_chunk_hits_total{model_name="m",tier="cpu"} 5
)";

const char* const kAfter = R"(vllm:prefix_cache_queries_total{model_name="m",engine="0"} 1100.0
vllm:prefix_cache_hits_total{model_name="m",engine="0"} 540.0
vllm:external_prefix_cache_queries_total{model_name="m",engine="0"} 560
vllm:external_prefix_cache_hits_total{model_name="m",engine="0"} 280
vllm:prompt_tokens_by_source_total{model_name="m",engine="0",source="local_compute"} 340
vllm:prompt_tokens_by_source_total{model_name="m",engine="0",source="local_cache_hit"} 540
vllm:prompt_tokens_by_source_total{model_name="m",engine="0",source="external_kv_transfer"} 280
vllm:kv_offload_tiering_chunk_queries_total{model_name="m",tier="cpu"} 30
vllm:kv_offload_tiering_chunk_hits_total{model_name="m",tier="cpu"} 15
vllm:kv_offload_tiering_chunk_queries_total{model_name="m",tier="fs"} 20
vllm:kv_offload_tiering_chunk_hits_total{model_name="m",tier="fs"} 18
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 3
)";

TEST(PrometheusTextTest, ParsesLabelsValuesAndEscapes) {
  auto samples = parse_prometheus_text(
      "# comment\n\nfoo_total 3\nbar{a=\"x\\\"y\",b=\"1\\\\2\"} -1.5e2 1700000000\n"
      "baz{le=\"+Inf\"} +Inf\n");
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  ASSERT_EQ(samples->size(), 3u);
  EXPECT_EQ((*samples)[0].name, "foo_total");
  EXPECT_EQ((*samples)[0].value, 3);
  EXPECT_EQ((*samples)[1].labels.at("a"), "x\"y");
  EXPECT_EQ((*samples)[1].labels.at("b"), "1\\2");
  EXPECT_EQ((*samples)[1].value, -150);
  EXPECT_TRUE(std::isinf((*samples)[2].value));
  EXPECT_FALSE(parse_prometheus_text("x{a=\"unterminated} 1\n").ok());
}

TEST(PrometheusTextTest, SumsWithLabelFilter) {
  auto after = parse_prometheus_text(kAfter);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(sum_samples(*after, "vllm:kv_offload_tiering_chunk_queries_total"), 50);
  EXPECT_EQ(sum_samples(*after, "vllm:kv_offload_tiering_chunk_queries_total", "tier", "fs"), 20);
  EXPECT_FALSE(has_samples(*after, "nope"));
}

TEST(CacheReportTest, DeltasByTier) {
  auto before = parse_prometheus_text(kBefore);
  auto after = parse_prometheus_text(kAfter);
  ASSERT_TRUE(before.ok() && after.ok());
  const CacheReport r = compute_cache_report(*before, *after);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].tier, "device");
  EXPECT_EQ(r.rows[0].queries, 1000);
  EXPECT_EQ(r.rows[0].hits, 500);
  EXPECT_DOUBLE_EQ(r.rows[0].hit_rate(), 0.5);
  EXPECT_EQ(r.rows[1].tier, "external");  // absent before: counted from 0
  EXPECT_EQ(r.rows[1].queries, 560);
  EXPECT_EQ(r.rows[2].tier, "cpu");
  EXPECT_EQ(r.rows[2].unit, "chunks");
  EXPECT_EQ(r.rows[2].queries, 20);
  EXPECT_EQ(r.rows[2].hits, 10);
  EXPECT_EQ(r.rows[3].tier, "fs");
  EXPECT_DOUBLE_EQ(r.rows[3].hit_rate(), 0.9);
  ASSERT_EQ(r.prompt_tokens_by_source.size(), 3u);
  EXPECT_EQ(r.prompt_tokens_by_source[0].first, "local_compute");
  EXPECT_EQ(r.prompt_tokens_by_source[0].second, 280);
  EXPECT_EQ(r.prompt_tokens_by_source[2].second, 280);
}

TEST(CacheReportTest, EmptyWhenTheServerHasNoCounters) {
  auto after = parse_prometheus_text("llamacpp:prompt_tokens_total 5\n");
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(compute_cache_report({}, *after).empty());
}

}  // namespace
}  // namespace strata::bench
