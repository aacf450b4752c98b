// Streamed requests to an OpenAI-compatible server, as `vllm bench serve`
// sends them: `stream: true`, `stream_options: {include_usage: true}`,
// `max_tokens` (chat: also `max_completion_tokens`), `ignore_eos` when asked,
// plus the user's --extra-body fields. Headers: `Authorization: Bearer KEY`
// when a key is set, `x-request-id`.
//
//   make_completion_body  /v1/completions body (token-id array or text prompt)
//   make_chat_body        /v1/chat/completions body
//   send_streamed         one request, measured (TTFT, ITL, E2EL, usage)
//
// Thread-safety: free functions; ClientOptions is read-only while in use.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench_serve/datasets.h"
#include "bench_serve/http_client.h"
#include "bench_serve/request_record.h"

namespace strata::bench {

struct ClientOptions {
  BaseUrl base_url;
  std::string endpoint_path = "/v1/completions";
  bool is_chat = false;
  std::string model;
  std::string api_key;
  bool ignore_eos = false;
  std::optional<double> temperature;
  std::string extra_body_json;    // a JSON object merged into every body, or ""
  bool return_token_ids = false;  // vLLM extra: stream the generated token ids
  double request_timeout_s = 600;
};

struct ChatMessage {
  std::string role;
  std::string content;
};

std::string make_completion_body(const ClientOptions& o, const PromptText& prompt,
                                 int64_t max_tokens);
std::string make_chat_body(const ClientOptions& o, const std::vector<ChatMessage>& messages,
                           int64_t max_tokens);

// Posts `body` to o.endpoint_path and measures the stream. `prompt_len` is
// the client's count (replaced by usage.prompt_tokens when reported);
// `epoch` is the start of the run (RequestRecord::start_s counts from it).
RequestRecord send_streamed(const ClientOptions& o, const std::string& body, int64_t prompt_len,
                            Clock::time_point epoch, const std::string& request_id);

// Headers every request carries (auth).
std::vector<std::pair<std::string, std::string>> auth_headers(const ClientOptions& o);

}  // namespace strata::bench
