// The flags of `strata bench serve`, named as `vllm bench serve` names them
// where vLLM has the option.
#include "bench_serve.h"

namespace strata::app {

namespace {

void register_target_flags(FlagSet& flags, ServeBenchFlags& f) {
  flags.add_string("base-url", &f.base_url,
                   "server URL, e.g. http://127.0.0.1:8000 (default: --host/--port)");
  flags.add_string("host", &f.host, "server host when --base-url is not given");
  flags.add_int("port", &f.port, "server port when --base-url is not given");
  flags.add_string("model", &f.model,
                   "model name to request (default: the first of GET /v1/models)");
  flags.add_string("endpoint", &f.endpoint, "/v1/completions or /v1/chat/completions");
  flags.add_string("backend", &f.backend,
                   "vLLM's names: openai or vllm (completions), openai-chat (chat endpoint)");
  flags.add_string("api-key", &f.api_key, "bearer token (default: $OPENAI_API_KEY)");
  flags.add_int("max-model-len", &f.max_model_len,
                "context length for multi-turn truncation; 0 = max_model_len from GET /v1/models");
  flags.add_double("ready-check-timeout-sec", &f.ready_check_timeout_sec,
                   "keep polling GET /v1/models this long until the server answers");
  flags.add_double("request-timeout-sec", &f.request_timeout_sec,
                   "fail a request whose stream is silent this long");
}

void register_dataset_flags(FlagSet& flags, ServeBenchFlags& f) {
  flags.add_string("dataset-name", &f.dataset, "random | prefix-repetition | multi-turn");
  flags.add_string("dataset", &f.dataset, "same as --dataset-name");
  flags.add_int("num-prompts", &f.num_prompts,
                "requests (random, prefix-repetition); conversations (multi-turn) unless "
                "--multi-turn-num-conversations");
  flags.add_int("random-input-len", &f.random_input_len, "prompt tokens (random)");
  flags.add_int("random-output-len", &f.random_output_len, "output tokens (random)");
  flags.add_double("random-range-ratio", &f.random_range_ratio,
                   "lengths uniform in [L(1-r), L(1+r)] (random)");
  flags.add_int(
      "random-prefix-len", &f.random_prefix_len,
      "shared prefix tokens before every prompt (random) / every first turn (multi-turn)");
  flags.add_int("prefix-repetition-prefix-len", &f.prefix_repetition_prefix_len, "prefix tokens");
  flags.add_int("prefix-repetition-suffix-len", &f.prefix_repetition_suffix_len, "suffix tokens");
  flags.add_int("prefix-repetition-num-prefixes", &f.prefix_repetition_num_prefixes,
                "distinct prefixes");
  flags.add_int("prefix-repetition-output-len", &f.prefix_repetition_output_len, "output tokens");
  flags.add_int("multi-turn-num-conversations", &f.multi_turn_num_conversations,
                "conversations (0 = --num-prompts)");
  flags.add_int("multi-turn-first-len", &f.multi_turn_first_len, "tokens of each first user turn");
  flags.add_int("multi-turn-num-rounds", &f.multi_turn_num_rounds, "user turns after the first");
  flags.add_int("multi-turn-round-len", &f.multi_turn_round_len,
                "tokens each later user turn adds");
  flags.add_int("multi-turn-output-len", &f.multi_turn_output_len, "max_tokens of every answer");
  flags.add_int("multi-turn-max-active-conversations", &f.multi_turn_max_active_conversations,
                "conversations open at once, turns interleaved round-robin (0 = all)");
  flags.add_bool("multi-turn-return-token-ids", &f.multi_turn_return_token_ids,
                 "ask for the answers' token ids (vLLM return_token_ids) to extend the history");
  flags.add_int("vocab-size", &f.vocab_size,
                "random token ids are drawn below this (token-id prompts; default fits any "
                "vocabulary of 4000+ tokens)");
  flags.add_int("min-token-id", &f.min_token_id, "smallest random token id");
  flags.add_int("seed", &f.seed, "seed for datasets and arrival times");
}

void register_load_flags(FlagSet& flags, ServeBenchFlags& f) {
  flags.add_int("max-concurrency", &f.max_concurrency,
                "requests in flight at most (multi-turn: concurrent turns); 0 = unlimited");
  flags.add_string("request-rate", &f.request_rate,
                   "requests/s: inf (all at once) or a Poisson rate");
  flags.add_double("burstiness", &f.burstiness, "gamma shape of inter-arrival gaps (1 = Poisson)");
  flags.add_bool("ignore-eos", &f.ignore_eos, "send ignore_eos (always on for --dataset random)");
  flags.add_int("num-warmups", &f.num_warmups, "unmeasured requests sent first");
  flags.add_string("temperature", &f.temperature,
                   "sampling temperature to send (default: server's)");
  flags.add_string("extra-body", &f.extra_body, "JSON object merged into every request body");
  flags.add_bool("reset-prefix-cache", &f.reset_prefix_cache,
                 "POST /reset_prefix_cache before each run (vLLM servers)");
}

void register_output_flags(FlagSet& flags, ServeBenchFlags& f) {
  flags.add_string("percentile-metrics", &f.percentile_metrics,
                   "metrics reported with percentiles");
  flags.add_string("metric-percentiles", &f.metric_percentiles, "percentiles reported");
  flags.add_string("goodput", &f.goodput, "SLOs for goodput, e.g. ttft:500,tpot:50,e2el:2000 (ms)");
  flags.add_bool("save-result", &f.save_result, "save the result JSON");
  flags.add_bool("save-detailed", &f.save_detailed,
                 "also save per-request lists (input_lens, ttfts, itls, generated_texts, ...)");
  flags.add_string("result-dir", &f.result_dir, "directory for --save-result");
  flags.add_string("result-filename", &f.result_filename, "file name for --save-result");
  flags.add_string("result-file", &f.result_file,
                   "path of the result JSON (implies --save-result; the sweep JSON in sweep mode)");
  flags.add_string("label", &f.label, "label written into the result (and plot legend)");
  flags.add_bool("disable-tqdm", &f.disable_tqdm, "no progress bar");
  flags.add_string("sweep-max-concurrency", &f.sweep_max_concurrency,
                   "sweep: run once per value, e.g. 1,4,16");
  flags.add_string("sweep-request-rate", &f.sweep_request_rate, "sweep over request rates");
  flags.add_string("sweep-num-prompts", &f.sweep_num_prompts, "sweep over --num-prompts");
  flags.add_string("sweep-num-conversations", &f.sweep_num_conversations,
                   "sweep over multi-turn conversations, e.g. 4,8,16,32");
  flags.add_string("plot", &f.plot,
                   "sweep: draw throughput and TTFT against the swept value (PNG)");
  flags.add_string("plot-title", &f.plot_title, "sweep: plot title");
}

}  // namespace

void register_serve_bench_flags(FlagSet& flags, ServeBenchFlags& f) {
  register_target_flags(flags, f);
  register_dataset_flags(flags, f);
  register_load_flags(flags, f);
  register_output_flags(flags, f);
}

}  // namespace strata::app
