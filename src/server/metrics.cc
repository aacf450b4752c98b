#include "server/metrics.h"

#include <algorithm>

#include "server/json_writer.h"

namespace strata::server {
namespace {

const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kLatencyBuckets = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                             5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                             60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const char* const kFinishReasons[] = {"abort", "error", "length", "repetition", "stop"};

// Prometheus label values escape \, " and newline.
std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out.append("\\n");
      continue;
    }
    out.push_back(c);
  }
  return out;
}

// Prometheus numbers: Go's float formatting; json_number is compatible.
std::string num(double v) { return json_number(v); }

void header(std::string* out, const std::string& name, const char* type, const std::string& help) {
  out->append("# HELP ").append(name).append(" ").append(help).append("\n");
  out->append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

Histogram Histogram::from_counts(std::vector<double> bounds, std::vector<int64_t> counts,
                                 double sum) {
  Histogram h(std::move(bounds));
  if (counts.size() == h.counts_.size()) h.counts_ = std::move(counts);
  for (int64_t c : h.counts_) h.count_ += c;
  h.sum_ = sum;
  return h;
}

void Histogram::observe(double v) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  ++counts_[i];
  sum_ += v;
  ++count_;
}

std::vector<double> build_1_2_5_buckets(int64_t max) {
  std::vector<double> out;
  for (int64_t scale = 1; scale <= max; scale *= 10) {
    for (int64_t m : {1, 2, 5}) {
      if (m * scale <= max) out.push_back(static_cast<double>(m * scale));
    }
  }
  return out;
}

Metrics::Metrics(std::string model_name, int64_t max_model_len, CacheConfigInfo cache)
    : model_name_(std::move(model_name)),
      cache_(cache),
      ttft_(kTtftBuckets),
      queue_time_(kLatencyBuckets),
      prefill_time_(kLatencyBuckets),
      decode_time_(kLatencyBuckets),
      inference_time_(kLatencyBuckets),
      itl_(kItlBuckets),
      e2e_(kLatencyBuckets),
      prompt_len_(build_1_2_5_buckets(max_model_len)),
      generation_len_(build_1_2_5_buckets(max_model_len)) {
  for (const char* r : kFinishReasons) finished_[r] = 0;
}

void Metrics::record_finished(const std::string& reason, int64_t prompt_tokens,
                              int64_t generation_tokens, double e2e_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_[reason];
  e2e_.observe(e2e_seconds);
  prompt_len_.observe(static_cast<double>(prompt_tokens));
  generation_len_.observe(static_cast<double>(generation_tokens));
}

void Metrics::record_first_token(double ttft_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ttft_.observe(ttft_seconds);
}

void Metrics::record_request_phases(const engine::RequestOutput& out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (out.queue_time_s >= 0) queue_time_.observe(out.queue_time_s);
  if (out.prefill_time_s >= 0) prefill_time_.observe(out.prefill_time_s);
  if (out.decode_time_s >= 0) decode_time_.observe(out.decode_time_s);
  if (out.inference_time_s >= 0) inference_time_.observe(out.inference_time_s);
}

void Metrics::record_inter_token(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  itl_.observe(seconds);
}

void Metrics::add_generation_tokens(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  generation_tokens_ += n;
}

void Metrics::add_prompt_tokens(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += n;
}

std::string Metrics::labels(const std::string& extra) const {
  std::string out = "{model_name=\"" + escape_label(model_name_) + "\",engine=\"0\"";
  if (!extra.empty()) out += "," + extra;
  return out + "}";
}

void Metrics::render_histogram(std::string* out, const std::string& name, const std::string& help,
                               const Histogram& h) const {
  header(out, name, "histogram", help);
  render_histogram_series(out, name, h, "");
}

void Metrics::render_histogram_series(std::string* out, const std::string& name,
                                      const Histogram& h, const std::string& label) const {
  const std::string extra = label.empty() ? "" : label + ",";
  const std::string plain = label.empty() ? labels() : labels(label);
  int64_t cumulative = 0;
  for (size_t i = 0; i < h.bounds().size(); ++i) {
    cumulative += h.counts()[i];
    out->append(name + "_bucket" + labels(extra + "le=\"" + num(h.bounds()[i]) + "\"") + " " +
                std::to_string(cumulative) + "\n");
  }
  out->append(name + "_bucket" + labels(extra + "le=\"+Inf\"") + " " +
              std::to_string(h.count()) + "\n");
  out->append(name + "_count" + plain + " " + std::to_string(h.count()) + "\n");
  out->append(name + "_sum" + plain + " " + num(h.sum()) + "\n");
}

void Metrics::render_offload(std::string* out, const engine::EngineStats& s) const {
  auto counter = [&](const std::string& name, const char* help, double v) {
    header(out, name + "_total", "counter", help);
    out->append(name + "_total" + labels() + " " + num(v) + "\n");
  };
  counter("vllm:external_prefix_cache_queries",
          "External prefix cache queries from KV connector cross-instance cache sharing, in terms "
          "of number of queried tokens.",
          static_cast<double>(s.external_prefix_cache_queries));
  counter("vllm:external_prefix_cache_hits",
          "External prefix cache hits from KV connector cross-instance cache sharing, in terms of "
          "number of cached tokens.",
          static_cast<double>(s.external_prefix_cache_hits));
  header(out, "vllm:prompt_tokens_by_source_total", "counter",
         "Number of prompt tokens by source.");
  const std::pair<const char*, int64_t> sources[] = {
      {"local_compute", s.prompt_tokens_local_compute},
      {"local_cache_hit", s.prompt_tokens_local_cache_hit},
      {"external_kv_transfer", s.prompt_tokens_external}};
  for (const auto& [source, n] : sources) {
    out->append("vllm:prompt_tokens_by_source_total" +
                labels("source=\"" + std::string(source) + "\"") + " " +
                num(static_cast<double>(n)) + "\n");
  }
  if (!s.offload_enabled) return;
  const offload::ConnectorStats& o = s.offload;
  const offload::TierStats& cpu = o.tiers.front();
  counter("vllm:kv_offload_load_bytes", "Bytes copied from the host tier into the KV pool.",
          static_cast<double>(cpu.load_bytes));
  counter("vllm:kv_offload_load_time", "Seconds spent copying host tier -> KV pool.",
          cpu.load_seconds);
  counter("vllm:kv_offload_store_bytes", "Bytes copied from the KV pool into the host tier.",
          static_cast<double>(cpu.store_bytes));
  counter("vllm:kv_offload_store_time", "Seconds spent copying KV pool -> host tier.",
          cpu.store_seconds);
  header(out, "vllm:kv_offload_cpu_cache_usage_perc", "gauge", "Host tier usage, 0..1.");
  out->append("vllm:kv_offload_cpu_cache_usage_perc" + labels() + " " +
              num(cpu.capacity_bytes > 0 ? static_cast<double>(cpu.used_bytes) /
                                               static_cast<double>(cpu.capacity_bytes)
                                         : 0.0) +
              "\n");
  counter("vllm:kv_offload_tiering_promotion_allocation_failures",
          "Secondary-tier hits not promoted for lack of a free host slot.",
          static_cast<double>(o.promotion_allocation_failures));
  counter("strata:kv_offload_load_wait_timeouts",
          "Requests that stopped waiting for a slow tier and recomputed instead.",
          static_cast<double>(o.load_wait_timeouts));
  using Field = double (*)(const offload::TierStats&);
  struct Series {
    const char* name;
    const char* type;
    const char* help;
    Field value;
  };
  static const Series kSeries[] = {
      {"vllm:kv_offload_tiering_chunk_queries_total", "counter", "Chunk lookups answered per tier.",
       [](const offload::TierStats& t) { return double(t.chunk_lookups); }},
      {"vllm:kv_offload_tiering_chunk_hits_total", "counter", "Chunk lookup hits per tier.",
       [](const offload::TierStats& t) { return double(t.chunk_hits); }},
      {"vllm:kv_offload_tiering_read_bytes_total", "counter", "Bytes read out of the tier.",
       [](const offload::TierStats& t) { return double(t.load_bytes); }},
      {"vllm:kv_offload_tiering_read_time_total", "counter", "Seconds spent reading the tier.",
       [](const offload::TierStats& t) { return t.load_seconds; }},
      {"vllm:kv_offload_tiering_write_bytes_total", "counter", "Bytes written into the tier.",
       [](const offload::TierStats& t) { return double(t.store_bytes); }},
      {"vllm:kv_offload_tiering_write_time_total", "counter", "Seconds spent writing the tier.",
       [](const offload::TierStats& t) { return t.store_seconds; }},
      {"vllm:kv_offload_tiering_promotion_job_failures_total", "counter",
       "Chunks whose load from the tier failed (recomputed).",
       [](const offload::TierStats& t) { return double(t.load_failures); }},
      {"vllm:kv_offload_tiering_cascade_job_failures_total", "counter",
       "Chunks whose store into the tier failed.",
       [](const offload::TierStats& t) { return double(t.store_failures); }},
      {"strata:kv_tier_hit_tokens_total", "counter",
       "Prompt tokens served from the tier (each token counted in exactly one tier).",
       [](const offload::TierStats& t) { return double(t.hit_tokens); }},
      {"strata:kv_tier_evictions_total", "counter", "Chunks evicted from the tier.",
       [](const offload::TierStats& t) { return double(t.evictions); }},
      {"strata:kv_tier_stores_skipped_total", "counter",
       "Chunks not stored: already present, or no room.",
       [](const offload::TierStats& t) { return double(t.stores_skipped); }},
      {"strata:kv_tier_used_bytes", "gauge", "Bytes the tier holds now.",
       [](const offload::TierStats& t) { return double(t.used_bytes); }},
      {"strata:kv_tier_capacity_bytes", "gauge", "The tier's capacity (0 = unbounded).",
       [](const offload::TierStats& t) { return double(t.capacity_bytes); }},
      {"strata:kv_tier_chunks", "gauge", "Chunks the tier holds now.",
       [](const offload::TierStats& t) { return double(t.num_chunks); }},
      {"strata:kv_tier_up", "gauge",
       "1 if the tier is serving; 0 while a tier that could not start is retried (its tokens "
       "are recomputed).",
       [](const offload::TierStats& t) { return t.is_up ? 1.0 : 0.0; }},
      {"strata:kv_tier_start_failures_total", "counter",
       "Failed starts of the tier (damaged or failing storage, 5xx, unreachable); retried with "
       "backoff.",
       [](const offload::TierStats& t) { return double(t.start_failures); }},
      {"strata:kv_tier_remote_peers_refused_total", "counter",
       "Requests whose kv_transfer_params named a peer neither configured nor allowed "
       "(allowed_remote_peers): never contacted, recomputed.",
       [](const offload::TierStats& t) { return double(t.remote_peers_refused); }},
  };
  for (const Series& series : kSeries) {
    header(out, series.name, series.type, series.help);
    for (const offload::TierStats& t : o.tiers) {
      out->append(std::string(series.name) + labels("tier=\"" + escape_label(t.tier) + "\"") +
                  " " + num(series.value(t)) + "\n");
    }
  }
  using Latency = const offload::LatencyHistogram& (*)(const offload::TierStats&);
  struct LatencySeries {
    const char* name;
    const char* help;
    Latency value;
  };
  static const LatencySeries kLatency[] = {
      {"vllm:kv_offload_tiering_lookup_sync_delay_seconds",
       "Time of the lookup calls that answered hit or miss, per tier.",
       [](const offload::TierStats& t) -> const offload::LatencyHistogram& {
         return t.lookup_sync_seconds;
       }},
      {"vllm:kv_offload_tiering_lookup_async_delay_seconds",
       "Time from a lookup's first 'retry' (an asynchronous probe) to its hit or miss, per tier.",
       [](const offload::TierStats& t) -> const offload::LatencyHistogram& {
         return t.lookup_async_seconds;
       }},
      {"strata:kv_tier_read_seconds",
       "Wall time of each job reading out of the tier (cpu: host tier -> KV pool).",
       [](const offload::TierStats& t) -> const offload::LatencyHistogram& {
         return t.read_seconds;
       }},
      {"strata:kv_tier_write_seconds",
       "Wall time of each job writing into the tier (cpu: KV pool -> host tier).",
       [](const offload::TierStats& t) -> const offload::LatencyHistogram& {
         return t.write_seconds;
       }},
  };
  const std::vector<double>& bounds = offload::LatencyHistogram::bounds();
  for (const LatencySeries& series : kLatency) {
    header(out, series.name, "histogram", series.help);
    for (const offload::TierStats& t : o.tiers) {
      const offload::LatencyHistogram& h = series.value(t);
      render_histogram_series(out, series.name, Histogram::from_counts(bounds, h.counts, h.sum),
                              "tier=\"" + escape_label(t.tier) + "\"");
    }
  }
}

void Metrics::render_spec_decode(std::string* out, const engine::EngineStats& s) const {
  if (!s.spec_decode_enabled) return;  // vLLM registers them only with speculation on
  const engine::SpecDecodeStats& d = s.spec_decode;
  auto counter = [&](const std::string& name, const char* help, int64_t v) {
    header(out, name + "_total", "counter", help);
    out->append(name + "_total" + labels() + " " + num(static_cast<double>(v)) + "\n");
  };
  counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", d.num_drafts);
  counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", d.num_draft_tokens);
  counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
          d.num_accepted_tokens);
  const std::string name = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
  header(out, name, "counter", "Accepted tokens per draft position.");
  for (size_t i = 0; i < d.num_accepted_tokens_per_pos.size(); ++i) {
    out->append(name + labels("position=\"" + std::to_string(i) + "\"") + " " +
                num(static_cast<double>(d.num_accepted_tokens_per_pos[i])) + "\n");
  }
}

std::string Metrics::render(const engine::EngineStats& s) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  auto gauge = [&](const char* name, const char* help, double v) {
    header(&out, name, "gauge", help);
    out.append(std::string(name) + labels() + " " + num(v) + "\n");
  };
  auto counter = [&](const char* name, const char* help, double v) {
    // The Python client's text format names counters with _total in HELP/TYPE too.
    header(&out, std::string(name) + "_total", "counter", help);
    out.append(std::string(name) + "_total" + labels() + " " + num(v) + "\n");
  };
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
        static_cast<double>(s.num_running));
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
        static_cast<double>(s.num_waiting));
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", s.kv_cache_usage);
  counter("vllm:prefix_cache_queries",
          "Prefix cache queries, in terms of number of queried tokens.",
          static_cast<double>(s.prefix_cache_queries));
  counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
          static_cast<double>(s.prefix_cache_hits));
  counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.",
          static_cast<double>(s.num_preemptions));
  counter("vllm:prompt_tokens", "Number of prefill tokens processed.",
          static_cast<double>(prompt_tokens_));
  counter("vllm:generation_tokens", "Number of generation tokens processed.",
          static_cast<double>(generation_tokens_));
  header(&out, "vllm:request_success_total", "counter",
         "Count of successfully processed requests.");
  for (const auto& [reason, n] : finished_) {
    out.append("vllm:request_success_total" + labels("finished_reason=\"" + reason + "\"") + " " +
               num(static_cast<double>(n)) + "\n");
  }
  render_offload(&out, s);
  render_spec_decode(&out, s);
  header(&out, "vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
  out.append("vllm:cache_config_info{block_size=\"" + std::to_string(cache_.block_size) +
             "\",cache_dtype=\"" + cache_.cache_dtype + "\",enable_prefix_caching=\"" +
             (cache_.enable_prefix_caching ? "True" : "False") + "\",engine=\"0\"" +
             ",gpu_memory_utilization=\"" + num(cache_.gpu_memory_utilization) +
             "\",kv_dtype=\"" + cache_.kv_dtype + "\",num_cpu_blocks=\"0\",num_gpu_blocks=\"" +
             std::to_string(cache_.num_gpu_blocks) + "\"} 1.0\n");
  render_histogram(&out, "vllm:time_to_first_token_seconds",
                   "Histogram of time to first token in seconds.", ttft_);
  render_histogram(&out, "vllm:request_queue_time_seconds",
                   "Histogram of time spent in WAITING phase for request.", queue_time_);
  render_histogram(&out, "vllm:request_prefill_time_seconds",
                   "Histogram of time spent in PREFILL phase for request.", prefill_time_);
  render_histogram(&out, "vllm:request_decode_time_seconds",
                   "Histogram of time spent in DECODE phase for request.", decode_time_);
  render_histogram(&out, "vllm:request_inference_time_seconds",
                   "Histogram of time spent in RUNNING phase for request.", inference_time_);
  std::vector<double> token_bounds;
  for (int64_t b : engine::iteration_token_buckets()) token_bounds.push_back(double(b));
  render_histogram(&out, "vllm:iteration_tokens_total",
                   "Histogram of number of tokens per engine_step.",
                   Histogram::from_counts(std::move(token_bounds), s.iteration_tokens_counts,
                                          double(s.iteration_tokens_sum)));
  header(&out, "strata:engine_step_seconds_total", "counter",
         "Seconds of the engine thread by step phase (schedule, forward pass and sampling, "
         "output update, tier copies).");
  for (const auto& [phase, v] :
       {std::pair<const char*, double>{"schedule", s.step_times.schedule_s},
        {"forward", s.step_times.forward_s},
        {"update", s.step_times.update_s},
        {"kv_transfer", s.step_times.kv_transfer_s}}) {
    out.append("strata:engine_step_seconds_total" + labels(std::string("phase=\"") + phase + "\"") +
               " " + num(v) + "\n");
  }
  if (!s.expert_load.empty()) {
    // vLLM has no standard name for this: strata: prefix.
    header(&out, "strata:moe_expert_tokens_total", "counter",
           "Tokens routed to each expert of each mixture-of-experts layer (shared experts, "
           "which every token runs, not counted).");
    const model::ExpertLoad& load = s.expert_load;
    for (size_t i = 0; i < load.layers().size(); ++i) {
      for (int64_t e = 0; e < load.num_experts(); ++e) {
        out.append("strata:moe_expert_tokens_total" +
                   labels("layer=\"" + std::to_string(load.layers()[i]) + "\",expert=\"" +
                          std::to_string(e) + "\"") +
                   " " + num(static_cast<double>(load.tokens(static_cast<int64_t>(i), e))) + "\n");
      }
    }
  }
  render_histogram(&out, "vllm:inter_token_latency_seconds",
                   "Histogram of inter-token latency in seconds.", itl_);
  render_histogram(&out, "vllm:e2e_request_latency_seconds",
                   "Histogram of e2e request latency in seconds.", e2e_);
  render_histogram(&out, "vllm:request_prompt_tokens", "Number of prefill tokens processed.",
                   prompt_len_);
  render_histogram(&out, "vllm:request_generation_tokens", "Number of generation tokens processed.",
                   generation_len_);
  return out;
}

}  // namespace strata::server
