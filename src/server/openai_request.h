// The request bodies of the OpenAI-compatible endpoints, parsed and checked
// for types and ranges as vLLM does (unknown fields ignored, null = absent).
// Semantic checks that need the model (prompt length, vocabulary) happen in
// the handlers.
//
//   parse_completion_request   POST /v1/completions
//   parse_chat_request         POST /v1/chat/completions
//   parse_tokenize_request     POST /tokenize (prompt or chat form)
//   parse_detokenize_request   POST /detokenize
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat_template/value.h"
#include "engine/request_limits.h"
#include "engine/types.h"
#include "server/api_error.h"

namespace strata::server {

// The bounds on n, logprobs and list fields are engine::RequestLimits'.
using Limits = engine::RequestLimits;

// A structured-output constraint, from vLLM's `structured_outputs` (json,
// regex, choice, grammar, json_object), the older `guided_*` fields, or
// OpenAI's `response_format` (json_object, json_schema).
struct StructuredOutputRequest {
  enum class Kind { kNone, kJsonSchema, kJsonObject, kRegex, kChoice, kGrammar };
  Kind kind = Kind::kNone;
  std::string text;                  // schema JSON, regex or GBNF grammar
  std::vector<std::string> choices;  // kChoice
  bool strict = false;               // response_format json_schema.strict
  std::string param;                 // the request field it came from (errors)
};

// Fields shared by completions and chat (OpenAI + vLLM extras). Absent
// optionals take the server's defaults (generation_config.json, then neutral).
struct SamplingFields {
  std::optional<double> temperature, top_p, min_p;
  std::optional<double> presence_penalty, frequency_penalty, repetition_penalty;
  std::optional<int64_t> top_k, seed, max_tokens, min_tokens, prompt_logprobs;
  std::optional<int64_t> truncate_prompt_tokens;  // keep the last k prompt tokens; -1 = max
  int n = 1;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::pair<int32_t, float>> logit_bias;
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  bool spaces_between_special_tokens = true;
  bool include_stop_str_in_output = false;
  bool return_token_ids = false;  // vLLM: generated token ids in each choice
  StructuredOutputRequest structured;
  std::vector<int32_t> allowed_token_ids;  // vLLM: only these may be generated
  std::vector<std::string> bad_words;      // vLLM: never generated
  std::string cache_salt;
  engine::KvTransferHints kv_transfer;  // kv_transfer_params
  bool stream = false;
  bool include_usage = false;           // stream_options.include_usage
  bool continuous_usage_stats = false;  // stream_options.continuous_usage_stats
};

struct PromptInput {
  bool is_text = true;
  std::string text;
  std::vector<int32_t> token_ids;
};

struct CompletionRequest {
  std::string model;  // "" = the first served name
  std::vector<PromptInput> prompts;
  bool echo = false;
  std::optional<int> logprobs;  // top-N alternatives per token
  bool add_special_tokens = true;
  SamplingFields sampling;
};

// tool_choice: "none", "auto", "required" or {"type":"function","function":{"name"}}.
struct ToolChoice {
  enum class Mode { kNone, kAuto, kRequired, kNamed };
  Mode mode = Mode::kNone;
  std::string name;    // kNamed
  bool given = false;  // present in the request (else: auto with tools, none without)
};

// What the chat template renders, converted once, straight from the request
// body's DOM into the template's values.
struct ChatTemplateInputs {
  // A list of dicts: content parts joined into strings (null content = ""),
  // assistant tool-call arguments parsed from their JSON strings.
  chat_template::Value messages = chat_template::Value::list({});
  chat_template::Value tools = chat_template::Value::none();  // None when absent or []
  chat_template::Value kwargs =
      chat_template::Value::none();  // chat_template_kwargs: None or a dict
};

struct ChatRequest {
  std::string model;
  ChatTemplateInputs template_inputs;
  // The tools again for the tool-calling side, whose consumers take nlohmann
  // (tool_choice schemas, parsers' parameter types): null when absent or [].
  nlohmann::ordered_json tools;
  bool add_generation_prompt = true;
  bool continue_final_message = false;
  bool add_special_tokens = false;  // the template emits BOS
  bool logprobs = false;
  int top_logprobs = 0;
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  bool echo = false;  // prepend the last message's content when it is the assistant's
  std::optional<std::string> chat_template;  // request-level template
  SamplingFields sampling;
};

struct TokenizeRequest {
  std::string model;
  bool is_chat = false;
  std::string prompt;
  ChatTemplateInputs template_inputs;
  bool add_generation_prompt = true;
  bool add_special_tokens = true;  // default false for the chat form
  bool return_token_strs = false;
};

struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;
};

ApiOr<CompletionRequest> parse_completion_request(std::string_view body);
ApiOr<ChatRequest> parse_chat_request(std::string_view body);
ApiOr<TokenizeRequest> parse_tokenize_request(std::string_view body);
ApiOr<DetokenizeRequest> parse_detokenize_request(std::string_view body);

}  // namespace strata::server
