// Response bodies and SSE events of the OpenAI-compatible endpoints, in the
// exact shapes vLLM emits and the OpenAI SDKs parse:
//   completions: object "text_completion", choices[{index,text,logprobs,
//                finish_reason,stop_reason}]
//   chat:        object "chat.completion" / "chat.completion.chunk",
//                choices[{index,message|delta,logprobs,finish_reason,stop_reason}]
// SSE events are exactly `data: <one-line JSON>\n\n`; the stream ends with
// `data: [DONE]\n\n`.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/types.h"

namespace strata::server {

struct ResponseMeta {
  std::string id;  // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;
  std::string model;
  bool is_chat = false;
  // vLLM's response-level kv_transfer_params (a JSON object), or "" = omitted.
  // Streams carry it in the chunk that finishes a choice.
  std::string kv_transfer_params_json;
};

struct TokenLogprob {
  std::string token;  // the token's text
  float logprob = 0.0f;
  std::vector<std::pair<std::string, float>> top;  // best first
  int64_t text_offset = 0;  // completions: offset of the token in the choice's text
  bool is_null = false;     // echoed first prompt token: logprob and top are null
};

// One prompt position of vLLM's prompt_logprobs: the prompt token and the
// top alternatives, each {"<id>": {"logprob", "rank", "decoded_token"}}.
struct PromptTokenLogprobs {
  struct Entry {
    int32_t token_id = 0;
    std::string token;
    float logprob = 0.0f;
    int64_t rank = 1;
  };
  std::vector<Entry> entries;  // the prompt token first, then alternatives
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

// A tool call in a chat message, or (streamed) a piece of one: `id` and
// `name` only in a call's first delta, `arguments` a fragment; the fragments
// of a call concatenate to its JSON arguments.
struct ToolCallOutput {
  int index = 0;
  std::string id;
  std::string name;
  std::string arguments;
};

// One choice's piece of output: a stream delta, or the whole choice.
struct ChoiceOutput {
  int index = 0;
  std::string text;
  bool with_role = false;     // chat stream: the first delta carries the role
  bool has_logprobs = false;  // emit a logprobs object (else null)
  std::vector<TokenLogprob> logprobs;
  // vLLM's return_token_ids: the generated ids this chunk (or response)
  // carries, and, on the first chunk / a whole response, the prompt's.
  bool has_token_ids = false;
  std::vector<int32_t> token_ids;
  const std::vector<int32_t>* prompt_token_ids = nullptr;
  // Chat: the reasoning text (message.reasoning and reasoning_content, as
  // vLLM and older clients read it; streamed as delta.reasoning), and tool
  // calls (message.tool_calls; streamed as delta.tool_calls).
  std::string reasoning;
  bool has_reasoning = false;
  std::vector<ToolCallOutput> tool_calls;
  bool content_null = false;  // whole message: "content": null (tool calls only)
  std::string finish_reason;              // "" -> null
  std::string stop_reason_json = "null";  // null | "stop string" | token id
  // Non-streamed only: [null, {...}, ...] or "" (field omitted / null).
  std::string prompt_logprobs_json;
};

// vLLM's prompt_logprobs list; position 0 (no context) is null.
std::string format_prompt_logprobs(const std::vector<PromptTokenLogprobs>& positions);

// OpenAI's finish_reason for the engine's: "stop", "length", "abort"; "" for
// kNone (null in the output).
const char* openai_finish_reason(engine::FinishReason reason);
// vLLM's kv_transfer_params object for a response (P/D prefill).
std::string format_kv_transfer_params(const engine::KvTransferParams& params);

std::string sse_event(const std::string& json);
inline const char* sse_done() { return "data: [DONE]\n\n"; }

// A stream chunk for one choice (chat or completion per meta.is_chat);
// `usage` non-null adds cumulative usage (continuous_usage_stats).
std::string format_stream_chunk(const ResponseMeta& meta, const ChoiceOutput& choice,
                                const Usage* usage);
// The trailing usage-only chunk (choices: []).
std::string format_usage_chunk(const ResponseMeta& meta, const Usage& usage);
// A whole non-streamed response.
std::string format_response(const ResponseMeta& meta, const std::vector<ChoiceOutput>& choices,
                            const Usage& usage);

}  // namespace strata::server
