// What the benchmark asks a server besides completions, each answer optional
// (servers differ; callers fall back when a call fails):
//   fetch_model_info     GET /v1/models: served name, max_model_len (vLLM,
//                        Strata; 0 when absent, e.g. llama-server), polled
//                        until the server answers or the timeout passes
//   tokenize_text        POST /tokenize, vLLM/Strata form {prompt, ...} ->
//                        tokens, else (an error, or no tokens for non-empty
//                        text, as llama-server answers that form) llama.cpp
//                        form {content} -> tokens
//   measure_tokens_per_word  tokens per word of the chat word list, through
//                        tokenize_text
//   fetch_metrics_text   GET /metrics (Prometheus text)
//   reset_prefix_cache   POST /reset_prefix_cache (vLLM; absent on some servers)
//
// Thread-safety: free functions, callable from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench_serve/openai_client.h"

namespace strata::bench {

struct ModelInfo {
  std::string id;
  std::string root;
  int64_t max_model_len = 0;  // 0 = the server did not say
};

StatusOr<ModelInfo> fetch_model_info(const ClientOptions& o, double ready_timeout_s);
StatusOr<std::vector<int32_t>> tokenize_text(const ClientOptions& o, const std::string& text);
StatusOr<double> measure_tokens_per_word(const ClientOptions& o, uint64_t seed);
StatusOr<std::string> fetch_metrics_text(const ClientOptions& o);
Status reset_prefix_cache(const ClientOptions& o);

}  // namespace strata::bench
