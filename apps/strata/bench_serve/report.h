// What `strata bench serve` prints and saves:
//   print_summary       vLLM's "Serving Benchmark Result" table
//   result_json         vLLM's result JSON (same key names), plus
//                       `dataset_name`, and for multi-turn runs `per_turn`
//                       and `prefix_cache` (hit rates by tier)
//   per_turn_stats / print_turn_table   TTFT by turn index (multi-turn)
//   print_cache_report  hit rates by tier from /metrics deltas
//
// Thread-safety: pure functions (printing writes to the given FILE).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench_serve/cache_report.h"
#include "bench_serve/request_record.h"
#include "bench_serve/serving_metrics.h"

namespace strata::bench {

struct RunDescription {
  std::string date;     // YYYYMMDD-HHMMSS, as vLLM writes it
  std::string backend;  // "openai" (completions) or "openai-chat"
  std::string label;
  std::string model_id;
  std::string tokenizer_id;
  std::string base_url;
  std::string endpoint;
  std::string dataset_name;
  int64_t num_prompts = 0;
  double request_rate = 0;  // inf allowed
  double burstiness = 1.0;
  int64_t max_concurrency = 0;                  // 0 = unlimited (null in the JSON)
  std::vector<std::string> percentile_metrics;  // subset of ttft, tpot, itl, e2el
};

void print_summary(std::FILE* out, const RunDescription& d, const ServingMetrics& m);

struct TurnStats {
  int64_t turn_idx = 0;
  int64_t num_requests = 0;
  double mean_ttft_ms = 0;
  double median_ttft_ms = 0;
  double mean_prompt_tokens = 0;
  double cached_fraction = -1;  // sum(cached_tokens) / sum(prompt tokens); -1 = not reported
};
std::vector<TurnStats> per_turn_stats(const std::vector<RequestRecord>& records);
void print_turn_table(std::FILE* out, const std::vector<TurnStats>& turns);
void print_cache_report(std::FILE* out, const CacheReport& report);

nlohmann::ordered_json result_json(const RunDescription& d, const ServingMetrics& m,
                                   const std::vector<RequestRecord>& records, bool detailed);
nlohmann::ordered_json turn_stats_json(const std::vector<TurnStats>& turns);
nlohmann::ordered_json cache_report_json(const CacheReport& report);

// "20250102-030405" for now (local time).
std::string timestamp_now();

}  // namespace strata::bench
