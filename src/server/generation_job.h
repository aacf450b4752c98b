// GenerationJob: one /v1/completions or /v1/chat/completions request after
// parsing and templating. It fans out into one engine request per (prompt,
// choice) pair — ids "<response id>-<choice index>" — and turns their token
// outputs into text: incremental detokenization (never split UTF-8), stop
// strings (held back while partial, finished with engine.finish_stopped),
// logprobs, usage and metrics. It answers either as an SSE stream (chunks as
// tokens arrive) or with one JSON body when every choice has finished.
//
// A client that disconnects aborts every unfinished engine request at once,
// so their KV blocks are freed.
//
// Thread-safety: created and driven on the I/O thread; engine callbacks only
// post (a copy of) their output to the I/O thread.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/types.h"
#include "server/api_error.h"
#include "server/chat_output.h"
#include "server/http_server.h"
#include "server/openai_format.h"
#include "server/server_context.h"
#include "server/stop_matcher.h"
#include "tokenizer/incremental_detokenizer.h"

namespace strata::server {

struct JobPrompt {
  std::vector<int32_t> token_ids;
  std::string echo_text;  // prepended to each choice's text when echo is on
};

struct JobOptions {
  ResponseMeta meta;
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage = false;
  int n = 1;
  bool echo = false;
  int num_logprobs = -1;         // -1: no logprobs; k >= 0: logprobs with k alternatives
  int num_prompt_logprobs = -1;  // vLLM's prompt_logprobs (non-streamed responses)
  std::vector<std::string> stop;
  bool include_stop_str = false;
  bool return_token_ids = false;  // token_ids per choice (and prompt_token_ids)
  tokenizer::DetokenizerOptions detokenize;
  // Sampling and stop conditions shared by all choices; per-choice id, prompt
  // and seed are filled in by the job. max_tokens per prompt below.
  engine::EngineRequest base;
  std::optional<uint64_t> seed;     // the request's seed (choice i uses seed + i)
  std::vector<int64_t> max_tokens;  // [num prompts]
  // Chat: reasoning and tool-call parsing of each choice's text.
  ChatOutputOptions chat_output;
};

class GenerationJob : public std::enable_shared_from_this<GenerationJob> {
 public:
  GenerationJob(ServerContext& ctx, JobOptions options, std::vector<JobPrompt> prompts,
                std::shared_ptr<HttpResponder> responder);

  // Queues every choice's engine request. On error (e.g. the engine rejects
  // one) nothing stays queued and the caller answers with the error.
  std::optional<ApiError> start();

 private:
  struct Choice {
    std::string request_id;
    size_t prompt_idx = 0;
    std::optional<tokenizer::IncrementalDetokenizer> detokenizer;
    StopMatcher stop;
    std::string text;                    // non-streamed: accumulated text
    std::vector<TokenLogprob> logprobs;  // non-streamed: accumulated logprobs
    std::vector<int32_t> token_ids;      // non-streamed, return_token_ids: generated ids
    int64_t text_offset = 0;             // bytes of text produced so far (incl. echo)
    bool finished = false;               // no more output for the client
    bool engine_done = false;            // the engine delivered its final output
    bool sent_first = false;             // streamed: first chunk sent
    bool got_prompt_logprobs = false;
    std::string prompt_logprobs_json;
    std::string finish_reason;
    std::string stop_reason_json = "null";
    int64_t num_output_tokens = 0;
    int64_t num_cached_tokens = 0;
    int32_t last_token = -1;
    std::chrono::steady_clock::time_point last_token_time;
    std::unique_ptr<ChatOutputSplitter> splitter;  // chat_output active
  };

  void on_output(size_t choice_idx, const engine::RequestOutput& out);
  void record_metrics(Choice& c, const engine::RequestOutput& out);
  void consume_tokens(Choice& c, const engine::RequestOutput& out, ChoiceOutput& delta);
  void finish_choice(Choice& c, const engine::RequestOutput& out, ChoiceOutput& delta);
  void add_logprob(Choice& c, const engine::SampledToken& tok, ChoiceOutput& delta);
  void take_prompt_logprobs(Choice& c, const engine::RequestOutput& out, ChoiceOutput& delta);
  void add_echo_logprobs(const Choice& c, const engine::RequestOutput& out, ChoiceOutput& delta);
  PromptTokenLogprobs prompt_position(const engine::PromptLogprob& p) const;
  void emit(Choice& c, ChoiceOutput delta);
  // Streaming with a splitter: the delta's text becomes content, reasoning
  // and tool-call pieces; the final one gets finish_reason "tool_calls".
  void split_delta(Choice& c, ChoiceOutput& delta);
  void split_whole(Choice& c, ChoiceOutput& out);
  void complete();
  void cancel();
  Usage usage() const;
  std::string token_text(int32_t id) const;

  ServerContext& ctx_;
  JobOptions options_;
  std::vector<JobPrompt> prompts_;
  std::shared_ptr<HttpResponder> responder_;
  std::vector<Choice> choices_;
  std::chrono::steady_clock::time_point arrival_;
  size_t num_finished_ = 0;
  bool completed_ = false;
  bool cancelled_ = false;
};

}  // namespace strata::server
