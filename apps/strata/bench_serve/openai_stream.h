// Turns one streamed OpenAI-style response (SSE over HTTP) into a
// RequestRecord, with `vllm bench serve`'s rules:
//   - TTFT: the first event whose `choices` is non-empty (even with empty
//     text); ITL: the gaps between later such events; E2EL: the last one.
//   - output tokens: `usage.completion_tokens` from the usage chunk when the
//     server sent one, else the number of such events (one token each, as
//     llama.cpp and Strata stream);
//   - prompt tokens: `usage.prompt_tokens` when present (the caller's count
//     otherwise); cached tokens: `usage.prompt_tokens_details.cached_tokens`.
//   - `data: [DONE]` ends the stream; an event with an `error` key, a non-200
//     status, an unparseable event or no token event at all fail the request.
// Generated text (`text` or `delta.content`) and streamed `token_ids` (vLLM's
// `return_token_ids`) are kept for multi-turn conversations.
//
// Thread-safety: one accumulator per request, used by one thread.
#pragma once

#include <string>
#include <string_view>

#include "bench_serve/http_client.h"
#include "bench_serve/request_record.h"
#include "bench_serve/sse_reader.h"

namespace strata::bench {

class StreamAccumulator {
 public:
  StreamAccumulator(bool is_chat, Clock::time_point start) : is_chat_(is_chat), start_(start) {}

  void on_bytes(std::string_view bytes, Clock::time_point when);
  // Fills the measured fields of *record (prompt_len is kept unless the
  // server reported usage). `http_status` 0 = the transport failed with
  // `transport_error`.
  void finish(int http_status, const std::string& transport_error, RequestRecord* record);

 private:
  void on_event(const std::string& data, Clock::time_point when);
  void on_token_chunk(Clock::time_point when);

  bool is_chat_;
  Clock::time_point start_;
  SseReader reader_;
  std::string raw_prefix_;  // the first bytes, for error messages
  std::string error_;
  bool got_token_ = false;
  Clock::time_point first_token_, last_token_;
  RequestRecord partial_;
  int64_t usage_prompt_tokens_ = -1;
  int64_t usage_completion_tokens_ = -1;
};

}  // namespace strata::bench
