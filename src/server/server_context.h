// What every handler of the API server shares: the engine, tokenizer, chat
// template, configuration and metrics, plus the HTTP server used to hand
// engine output back to the I/O thread.
//
// Thread-safety: the members are set at start-up and then only read, except
// num_in_flight and rng, which only the I/O thread touches. Engine, Tokenizer,
// ChatTemplate and Metrics are themselves thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "chat_template/chat_template.h"
#include "engine/engine.h"
#include "output_parsers/reasoning_parser.h"
#include "output_parsers/tool_call_parser.h"
#include "structured/grammar_compiler.h"
#include "server/metrics.h"
#include "tokenizer/tokenizer.h"

namespace strata::server {

class HttpServer;

// Server-side sampling defaults: generation_config.json (--generation-config
// auto), else vLLM's neutral values. Request fields always win.
struct SamplingDefaults {
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = 0;
  double min_p = 0.0;
  double repetition_penalty = 1.0;
  std::optional<int64_t> max_new_tokens;  // default max_tokens cap for chat
};

struct ServerConfig {
  std::vector<std::string> served_model_names;  // first = canonical name
  std::string model_root;                       // what /v1/models reports as root
  int64_t max_model_len = 0;
  std::vector<std::string> api_keys;  // empty = no authentication
  int64_t max_pending_requests = 0;   // in-flight engine requests before 503; 0 = unlimited
  SamplingDefaults defaults;
  std::vector<int32_t> eos_token_ids;
  uint64_t seed = 0;    // seeds per-request RNG seeds when a request gives none
  int64_t created = 0;  // server start (Unix seconds)
  std::string version;
  int shutdown_grace_s = 10;
  int log_stats_interval_s = 5;  // vLLM-style throughput line; 0 = off (--disable-log-stats)
  // --kv-transfer-config / --kv-events-config as given (validated JSON
  // objects), kept for the KV tiers and KV events that arrive later.
  std::string kv_transfer_config_json;
  std::string kv_events_config_json;
  // Agents: --enable-auto-tool-choice (tool_choice "auto" parses the output
  // with the --tool-call-parser) and --trust-request-chat-template.
  bool enable_auto_tool_choice = false;
  bool trust_request_chat_template = false;
  // --structured-outputs-config: enable_in_reasoning (constraints apply
  // inside the reasoning section too), disable_any_whitespace.
  bool structured_in_reasoning = false;
  bool structured_any_whitespace = true;
};

struct ServerContext {
  engine::Engine* engine = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  std::optional<chat_template::ChatTemplate> chat_template;
  std::string bos_token;  // the template's bos_token / eos_token strings
  std::string eos_token;
  ServerConfig config;
  std::unique_ptr<Metrics> metrics;
  HttpServer* http = nullptr;
  // Structured outputs: compiled grammars over the tokenizer's vocabulary,
  // cached by grammar text (thread-safe).
  std::shared_ptr<structured::GrammarCompiler> grammars;
  // --tool-call-parser and --reasoning-parser (null = none); immutable.
  std::unique_ptr<output_parsers::ToolCallParser> tool_parser;
  std::unique_ptr<output_parsers::ReasoningParser> reasoning_parser;
  // The token ids of the reasoning end marker ("</think>"): structured
  // outputs start after them.
  std::vector<int32_t> reasoning_end_ids;

  int64_t num_in_flight = 0;         // I/O thread only
  std::mt19937_64 rng;               // I/O thread only: seeds of unseeded requests
};

}  // namespace strata::server
