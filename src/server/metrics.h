// Prometheus text exposition (format 0.0.4) of the vLLM V1 metric set, so
// dashboards, autoscalers and `vllm bench` read Strata unchanged. Every series
// carries model_name="<first served name>" and engine="0".
//
//   gauges     vllm:num_requests_running, vllm:num_requests_waiting,
//              vllm:kv_cache_usage_perc (0..1), vllm:cache_config_info
//   counters   vllm:prefix_cache_queries, vllm:prefix_cache_hits,
//              vllm:num_preemptions (engine snapshot);
//              vllm:prompt_tokens, vllm:generation_tokens,
//              vllm:request_success{finished_reason} (server side)
//              named with the _total suffix (as prometheus_client writes them)
//   tiered KV  vllm:external_prefix_cache_{queries,hits}_total,
//              vllm:prompt_tokens_by_source_total{source}, vllm:kv_offload_{load,store}_
//              {bytes,time}_total (KV pool <-> host), vllm:kv_offload_cpu_cache_usage_perc,
//              per tier{tier="cpu"|"fs"}: vllm:kv_offload_tiering_chunk_{queries,hits}_total,
//              vllm:kv_offload_tiering_{read,write}_{bytes,time}_total,
//              strata:kv_tier_{hit_tokens,load_failures,store_failures,evictions,
//              stores_skipped,start_failures,remote_peers_refused}_total, strata:kv_tier_{used_bytes,
//              capacity_bytes,chunks}, strata:kv_tier_up (0 while a tier that could not
//              start is retried);
//              vllm:kv_offload_tiering_{promotion,cascade}_job_failures_total;
//              per-tier histograms vllm:kv_offload_tiering_lookup_{sync,async}_delay_seconds
//              (vLLM's names), strata:kv_tier_{read,write}_seconds (per job)
//   histograms vllm:time_to_first_token_seconds, vllm:inter_token_latency_seconds,
//              vllm:e2e_request_latency_seconds, vllm:request_prompt_tokens,
//              vllm:request_generation_tokens, vllm:request_{queue,prefill,decode,
//              inference}_time_seconds, vllm:iteration_tokens_total (vLLM's buckets)
//   spec decode (only with --speculative-config) vllm:spec_decode_num_drafts_total,
//              vllm:spec_decode_num_draft_tokens_total, vllm:spec_decode_num_accepted_tokens_total,
//              vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0".."k-1"}
//   engine     strata:engine_step_seconds_total{phase="schedule"|"forward"|"update"|
//              "kv_transfer"}: where the engine thread's time goes
//   MoE        strata:moe_expert_tokens_total{layer="i",expert="j"}: tokens routed to
//              each expert of each mixture-of-experts layer (MoE models only)
//
// Thread-safety: record_* and render are called on the server's I/O thread;
// a mutex makes them safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine_core.h"

namespace strata::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  // A histogram already counted elsewhere (counts per bucket, last = above all).
  static Histogram from_counts(std::vector<double> bounds, std::vector<int64_t> counts,
                               double sum);

  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<int64_t>& counts() const { return counts_; }  // per bucket, not cumulative
  double sum() const { return sum_; }
  int64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // [bounds.size() + 1], last = above every bound
  double sum_ = 0;
  int64_t count_ = 0;
};

struct CacheConfigInfo {
  int64_t block_size = 16;
  int64_t num_gpu_blocks = 0;
  bool enable_prefix_caching = true;
  double gpu_memory_utilization = 0.9;
  std::string cache_dtype = "auto";  // --kv-cache-dtype as given (vLLM's label)
  std::string kv_dtype = "f32";      // what it resolved to (tensor::kv_cache_dtype_name)
};

class Metrics {
 public:
  Metrics(std::string model_name, int64_t max_model_len, CacheConfigInfo cache);

  // A request (one choice) finished: reason is stop|length|abort|error.
  void record_finished(const std::string& reason, int64_t prompt_tokens, int64_t generation_tokens,
                       double e2e_seconds);
  void record_first_token(double ttft_seconds);
  // A request's phases as the engine timed them (engine::RequestOutput's
  // *_time_s fields; negative = not on this output): WAITING, PREFILL,
  // DECODE and RUNNING (prefill + decode) time.
  void record_request_phases(const engine::RequestOutput& out);
  void record_inter_token(double seconds);
  void add_generation_tokens(int64_t n);
  void add_prompt_tokens(int64_t n);

  std::string render(const engine::EngineStats& stats) const;

 private:
  std::string labels(const std::string& extra = "") const;
  void render_offload(std::string* out, const engine::EngineStats& s) const;
  void render_spec_decode(std::string* out, const engine::EngineStats& s) const;
  // One histogram's _bucket/_count/_sum lines, with `label` (e.g. tier="fs") on each.
  void render_histogram_series(std::string* out, const std::string& name, const Histogram& h,
                               const std::string& label) const;
  void render_histogram(std::string* out, const std::string& name, const std::string& help,
                        const Histogram& h) const;

  std::string model_name_;
  CacheConfigInfo cache_;
  mutable std::mutex mu_;
  int64_t prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
  std::map<std::string, int64_t> finished_;  // finished_reason -> count
  Histogram ttft_;
  Histogram queue_time_;
  Histogram prefill_time_;
  Histogram decode_time_;
  Histogram inference_time_;
  Histogram itl_;
  Histogram e2e_;
  Histogram prompt_len_;
  Histogram generation_len_;
};

// vLLM's 1-2-5 buckets up to `max`: 1, 2, 5, 10, 20, 50, ... <= max.
std::vector<double> build_1_2_5_buckets(int64_t max);

}  // namespace strata::server
