#include "server/metrics.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Metrics, NamesLabelsAndCounters) {
  Metrics m("my-model", 100, CacheConfigInfo{16, 64, true, 0.9});
  m.add_prompt_tokens(7);
  m.add_generation_tokens(3);
  m.record_first_token(0.015);
  m.record_inter_token(0.02);
  m.record_finished("stop", 7, 3, 0.4);
  engine::EngineStats s;
  s.num_running = 2;
  s.num_waiting = 1;
  s.kv_cache_usage = 0.25;
  s.prefix_cache_queries = 10;
  s.prefix_cache_hits = 4;
  std::string text = m.render(s);
  const std::string l = "{model_name=\"my-model\",engine=\"0\"}";
  EXPECT_TRUE(contains(text, "# TYPE vllm:num_requests_running gauge\n"));
  EXPECT_TRUE(contains(text, "vllm:num_requests_running" + l + " 2.0\n"));
  EXPECT_TRUE(contains(text, "vllm:num_requests_waiting" + l + " 1.0\n"));
  EXPECT_TRUE(contains(text, "vllm:kv_cache_usage_perc" + l + " 0.25\n"));
  EXPECT_TRUE(contains(text, "# TYPE vllm:prefix_cache_queries_total counter\n"));
  EXPECT_TRUE(contains(text, "vllm:prefix_cache_queries_total" + l + " 10.0\n"));
  EXPECT_TRUE(contains(text, "vllm:prefix_cache_hits_total" + l + " 4.0\n"));
  EXPECT_TRUE(contains(text, "vllm:prompt_tokens_total" + l + " 7.0\n"));
  EXPECT_TRUE(contains(text, "vllm:generation_tokens_total" + l + " 3.0\n"));
  EXPECT_TRUE(contains(text,
                       "vllm:request_success_total{model_name=\"my-model\",engine=\"0\",finished_"
                       "reason=\"stop\"} 1.0\n"));
  EXPECT_TRUE(contains(text,
                       "vllm:request_success_total{model_name=\"my-model\",engine=\"0\",finished_"
                       "reason=\"abort\"} 0.0\n"));
  EXPECT_TRUE(contains(text, "vllm:num_preemptions_total" + l + " 0.0\n"));
}

TEST(Metrics, MoeExpertTokensPerLayerAndExpert) {
  Metrics m("m", 100, CacheConfigInfo{});
  EXPECT_FALSE(contains(m.render(engine::EngineStats{}), "strata:moe_expert_tokens_total"));
  engine::EngineStats s;
  s.expert_load = model::ExpertLoad({1, 3}, 4, 3);
  const int32_t routed[] = {2, 0, 2};
  s.expert_load.add(3, routed, 3);
  const std::string text = m.render(s);
  const std::string p = "strata:moe_expert_tokens_total{model_name=\"m\",engine=\"0\",layer=\"";
  EXPECT_TRUE(contains(text, "# TYPE strata:moe_expert_tokens_total counter\n"));
  EXPECT_TRUE(contains(text, p + "1\",expert=\"2\"} 0.0\n"));
  EXPECT_TRUE(contains(text, p + "3\",expert=\"0\"} 1.0\n"));
  EXPECT_TRUE(contains(text, p + "3\",expert=\"1\"} 0.0\n"));
  EXPECT_TRUE(contains(text, p + "3\",expert=\"2\"} 2.0\n"));
  EXPECT_FALSE(contains(text, "layer=\"0\""));  // dense layers have no series
}

TEST(Metrics, HistogramBucketsAreCumulativeWithVllmBounds) {
  Metrics m("m", 100, CacheConfigInfo{});
  m.record_first_token(0.015);
  m.record_first_token(3.0);
  std::string text = m.render(engine::EngineStats{});
  const std::string p = "vllm:time_to_first_token_seconds_bucket{model_name=\"m\",engine=\"0\",";
  EXPECT_TRUE(contains(text, p + "le=\"0.001\"} 0\n"));
  EXPECT_TRUE(contains(text, p + "le=\"0.02\"} 1\n"));
  EXPECT_TRUE(contains(text, p + "le=\"2560.0\"} 2\n"));
  EXPECT_TRUE(contains(text, p + "le=\"+Inf\"} 2\n"));
  EXPECT_TRUE(
      contains(text, "vllm:time_to_first_token_seconds_count{model_name=\"m\",engine=\"0\"} 2\n"));
  EXPECT_TRUE(contains(text, "# TYPE vllm:inter_token_latency_seconds histogram\n"));
  EXPECT_TRUE(contains(
      text,
      "vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",engine=\"0\",le=\"7680.0\"} 0\n"));
}

TEST(Metrics, RequestPhasesIterationTokensAndStepTimes) {
  Metrics m("m", 100, CacheConfigInfo{});
  engine::RequestOutput first;
  first.queue_time_s = 0.2;
  first.prefill_time_s = 0.6;
  m.record_request_phases(first);
  engine::RequestOutput last;
  last.decode_time_s = 1.2;
  last.inference_time_s = 1.8;
  m.record_request_phases(last);
  engine::EngineStats s;
  s.iteration_tokens_counts.assign(engine::iteration_token_buckets().size() + 1, 0);
  s.iteration_tokens_counts[0] = 3;  // three 1-token steps
  s.iteration_tokens_counts[9] = 1;  // one step of 1025..2048 tokens
  s.iteration_tokens_sum = 3 + 1500;
  s.step_times.forward_s = 2.5;
  const std::string text = m.render(s);
  const std::string l = "model_name=\"m\",engine=\"0\"";
  EXPECT_TRUE(contains(text, "vllm:request_queue_time_seconds_bucket{" + l + ",le=\"0.3\"} 1\n"));
  EXPECT_TRUE(contains(text, "vllm:request_prefill_time_seconds_bucket{" + l + ",le=\"0.5\"} 0\n"));
  EXPECT_TRUE(contains(text, "vllm:request_prefill_time_seconds_bucket{" + l + ",le=\"0.8\"} 1\n"));
  EXPECT_TRUE(contains(text, "vllm:request_decode_time_seconds_sum{" + l + "} 1.2\n"));
  EXPECT_TRUE(contains(text, "vllm:request_inference_time_seconds_count{" + l + "} 1\n"));
  EXPECT_TRUE(contains(text, "vllm:iteration_tokens_total_bucket{" + l + ",le=\"1.0\"} 3\n"));
  EXPECT_TRUE(contains(text, "vllm:iteration_tokens_total_bucket{" + l + ",le=\"1024.0\"} 3\n"));
  EXPECT_TRUE(contains(text, "vllm:iteration_tokens_total_bucket{" + l + ",le=\"2048.0\"} 4\n"));
  EXPECT_TRUE(contains(text, "vllm:iteration_tokens_total_sum{" + l + "} 1503.0\n"));
  EXPECT_TRUE(contains(text, "strata:engine_step_seconds_total{" + l + ",phase=\"forward\"} 2.5\n"));
}

TEST(Metrics, OneTwoFiveBuckets) {
  EXPECT_EQ(build_1_2_5_buckets(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(build_1_2_5_buckets(30), (std::vector<double>{1, 2, 5, 10, 20}));
}

}  // namespace
}  // namespace strata::server

namespace strata::server {
namespace {

TEST(Metrics, SpecDecodeCountersOnlyWithSpeculation) {
  Metrics m("my-model", 100, CacheConfigInfo{16, 64, true, 0.9});
  engine::EngineStats s;
  EXPECT_EQ(m.render(s).find("vllm:spec_decode"), std::string::npos);
  s.spec_decode_enabled = true;
  s.spec_decode = {.num_drafts = 7,
                   .num_draft_tokens = 20,
                   .num_accepted_tokens = 11,
                   .num_accepted_tokens_per_pos = {6, 4, 1}};
  const std::string text = m.render(s);
  const std::string l = "{model_name=\"my-model\",engine=\"0\"";
  EXPECT_NE(text.find("# TYPE vllm:spec_decode_num_drafts_total counter"), std::string::npos);
  EXPECT_NE(text.find("vllm:spec_decode_num_drafts_total" + l + "} 7"), std::string::npos);
  EXPECT_NE(text.find("vllm:spec_decode_num_draft_tokens_total" + l + "} 20"), std::string::npos);
  EXPECT_NE(text.find("vllm:spec_decode_num_accepted_tokens_total" + l + "} 11"), std::string::npos);
  for (const char* series : {",position=\"0\"} 6", ",position=\"1\"} 4", ",position=\"2\"} 1"}) {
    EXPECT_NE(text.find("vllm:spec_decode_num_accepted_tokens_per_pos_total" + l + series),
              std::string::npos)
        << series;
  }
}

}  // namespace
}  // namespace strata::server
