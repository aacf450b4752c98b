// The serving metrics of `vllm bench serve`, computed from per-request
// records exactly as vLLM defines them (all latencies reported in ms):
//   request_throughput = completed / duration
//   output_throughput  = sum(output tokens) / duration
//   total_token_throughput = (sum(input tokens) + sum(output tokens)) / duration
//   TTFT  per request;  TPOT = (E2EL - TTFT) / (output tokens - 1), only when
//   output tokens > 1;  ITL = every gap between token chunks, pooled;  E2EL.
//   max_output_tokens_per_s: token chunks in the busiest 1-s bucket since the
//   first request left; max_concurrent_requests: most requests active in one
//   such bucket. Goodput: requests meeting every given SLO (TPOT counted as
//   0 for one-token outputs) / duration.
// Failed requests count zero output tokens and add nothing to the
// distributions.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <vector>

#include "bench_serve/request_record.h"
#include "bench_serve/stats.h"

namespace strata::bench {

struct GoodputSlo {  // milliseconds; unset = not constrained
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool empty() const { return !ttft_ms && !tpot_ms && !e2el_ms; }
};

struct ServingMetrics {
  double duration_s = 0;
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t total_input = 0;
  int64_t total_output = 0;
  double request_throughput = 0;
  std::optional<double> request_goodput;  // only with SLOs
  double output_throughput = 0;
  double total_token_throughput = 0;
  double max_output_tokens_per_s = 0;
  int64_t max_concurrent_requests = 0;
  Distribution ttft_ms, tpot_ms, itl_ms, e2el_ms;
};

// TPOT of one request in seconds, or nullopt when it has fewer than 2 tokens.
std::optional<double> request_tpot_s(const RequestRecord& r);

ServingMetrics compute_serving_metrics(const std::vector<RequestRecord>& records, double duration_s,
                                       const std::vector<double>& percentiles,
                                       const GoodputSlo& slo);

}  // namespace strata::bench
