// `strata bench serve`: the serving benchmark client (vLLM's `vllm bench
// serve` plus its multi-turn benchmark) against any OpenAI-compatible server,
// and its sweep mode with plots. The measuring lives in bench_serve/; this is
// the flag handling and the order of a run:
//   probe the server (GET /v1/models) -> build the dataset -> warm-ups ->
//   scrape /metrics -> measured run -> scrape /metrics -> print and save.
//
// Used on the main thread.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench_serve/runner.h"
#include "bench_serve/server_probe.h"
#include "bench_serve/serving_metrics.h"
#include "flags.h"

namespace strata::app {

struct ServeBenchFlags {
  std::string base_url;
  std::string host = "127.0.0.1";
  int64_t port = 8000;
  std::string model;
  std::string endpoint = "/v1/completions";
  std::string backend;  // vLLM's --backend: openai-chat picks the chat endpoint
  std::string dataset = "random";
  int64_t num_prompts = 1000;
  int64_t max_concurrency = 0;
  std::string request_rate = "inf";
  double burstiness = 1.0;
  int64_t random_input_len = 1024;
  int64_t random_output_len = 128;
  double random_range_ratio = 0;
  int64_t random_prefix_len = 0;
  int64_t prefix_repetition_prefix_len = 256;
  int64_t prefix_repetition_suffix_len = 256;
  int64_t prefix_repetition_num_prefixes = 10;
  int64_t prefix_repetition_output_len = 128;
  int64_t multi_turn_num_conversations = 0;
  int64_t multi_turn_first_len = 2000;
  int64_t multi_turn_num_rounds = 8;
  int64_t multi_turn_round_len = 400;
  int64_t multi_turn_output_len = 128;
  int64_t multi_turn_max_active_conversations = 0;
  bool multi_turn_return_token_ids = true;
  bool ignore_eos = false;
  int64_t num_warmups = 0;
  int64_t seed = 0;
  std::string temperature;
  std::string extra_body;
  std::string api_key;
  int64_t vocab_size = 4000;
  int64_t min_token_id = 100;
  int64_t max_model_len = 0;
  double ready_check_timeout_sec = 0;
  double request_timeout_sec = 600;
  std::string percentile_metrics = "ttft,tpot,itl,e2el";
  std::string metric_percentiles = "90,99";
  std::string goodput;
  bool save_result = false;
  bool save_detailed = false;
  std::string result_dir = ".";
  std::string result_filename;
  std::string result_file;
  std::string label;
  bool reset_prefix_cache = false;
  bool disable_tqdm = false;
  std::string sweep_max_concurrency;
  std::string sweep_request_rate;
  std::string sweep_num_prompts;
  std::string sweep_num_conversations;
  std::string plot;
  std::string plot_title;
};

// `strata bench serve ARGS...`; returns the exit code.
int run_serve_bench(const std::vector<std::string>& args);

void register_serve_bench_flags(FlagSet& flags, ServeBenchFlags& f);

// Everything a run needs that does not change between sweep points.
struct BenchSetup {
  bench::RunOptions run;  // client, rate, concurrency, seed (per point)
  bench::ModelInfo model;
  bench::TokenRange token_range;
  double tokens_per_word = 1.0;
  std::vector<std::string> percentile_metrics;
  std::vector<double> percentiles;
  bench::GoodputSlo goodput;
};
StatusOr<BenchSetup> prepare_bench(const ServeBenchFlags& f);

// The values one sweep point changes.
struct PointParams {
  int64_t max_concurrency = 0;
  double request_rate = INFINITY;
  int64_t num_prompts = 0;
  int64_t num_conversations = 0;
  uint64_t seed = 0;
};
PointParams base_point(const ServeBenchFlags& f);

// One benchmark run: prints its report and returns the result JSON.
StatusOr<nlohmann::ordered_json> run_bench_point(const ServeBenchFlags& f, const BenchSetup& s,
                                                 const PointParams& p);

// Sweep mode (bench_sweep.cc): runs every value of the one --sweep-* flag
// given, saves the sweep JSON and draws --plot.
bool is_sweep(const ServeBenchFlags& f);
int run_bench_sweep(const ServeBenchFlags& f, const BenchSetup& s);
// `strata bench plot SWEEP.json... --output FILE.png`: one series per file.
int run_bench_plot(const std::vector<std::string>& args);

Status write_json_file(const std::string& path, const nlohmann::ordered_json& j);
StatusOr<double> parse_rate(const std::string& text);

}  // namespace strata::app
