// Executes one scheduled engine step: turns the scheduler's plan into a flat
// ForwardBatch (token ids, positions, slot mapping, block tables), runs the
// model once over all of it, and samples for every request whose step
// reaches the end of its sequence: one token, or, when the step verifies
// draft tokens (ScheduledRequest::draft_token_ids), a logits row at the last
// own position and at every draft position, and the accepted drafts plus one
// token: a draft is accepted while it equals the token sampled at its
// position (greedy: the argmax), which for a point-mass draft is rejection
// sampling that keeps the target distribution (sample_verified).
//
// Runs on a backend, over the KV pool's memory (a KvMemoryHandle shared with
// the engine core, which allocates it next to the KV accounting, and with the
// tiered cache's transfer side). Owns the forward pass's Workspace and each
// request's sampler, whose
// seeded RNG lives as long as the request, so a seed gives the same tokens
// whatever the batch around it and across preemptions.
// Engine thread only. With a pool, a step's requests are sampled in parallel
// on it (each request's rows on one thread, in order): sampling a 152K
// vocabulary takes 0.1-0.7 ms per row, serial across 16 streams otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_memory.h"
#include "base/thread_pool.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "runner/token_constraints.h"
#include "sampling/sampler.h"
#include "scheduler/scheduler.h"

namespace strata::runner {

struct SampledToken {
  int32_t token_id = -1;  // -1: this entry did not sample
  float logprob = 0.0f;  // 0 when the request's num_top_logprobs < 0
  std::vector<std::pair<int32_t, float>> top_logprobs;  // best first
};

// Logprob of prompt token i (i >= 1) given tokens before it, plus the top-k.
struct PromptLogprob {
  int32_t token_id = -1;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top_logprobs;
};

// What one step produced for scheduled entry i.
struct StepResult {
  // [num_scheduled][n]: the tokens sampled for entry i: none when the entry
  // does not sample; one for an ordinary step; for a verify step with k
  // drafts the accepted drafts (a prefix of them) then the correction or
  // bonus token (1..k+1).
  std::vector<std::vector<SampledToken>> tokens;
  // [num_scheduled]: prompt logprobs of the prompt positions computed this step.
  std::vector<std::vector<PromptLogprob>> prompt_logprobs;
};

class ModelRunner {
 public:
  // `kv_memory`: the KV pool (model.make_kv_memory), whose blocks the
  // scheduler's block tables address. `backend` outlives the runner, and so
  // does `sampling_pool` (null: every row is sampled on the calling thread).
  ModelRunner(const model::Model& model, backend::KvMemoryHandle kv_memory,
              backend::Backend& backend, ThreadPool* sampling_pool = nullptr);

  // Registers a request's sampling settings before it is first scheduled.
  // num_top_logprobs < 0 turns logprobs off (saving a full-vocabulary
  // softmax per sampled token); k >= 0 reports each sampled token's logprob
  // and the k most likely alternatives. num_prompt_logprobs < 0 turns prompt
  // logprobs off; k >= 0 reports each prompt token's logprob and the k most
  // likely alternatives.
  // `constraints` (grammar, allowed_token_ids, bad_words) mask the logits
  // before sampling; reported logprobs stay raw.
  void add_request(kv::RequestKey key, const sampling::SamplingParams& params,
                   int num_top_logprobs, int num_prompt_logprobs = -1,
                   TokenConstraintSpec constraints = {});
  void remove_request(kv::RequestKey key);

  // One forward pass over `output`; entries of the result belong to
  // output.scheduled[i].
  StepResult execute(const scheduler::SchedulerOutput& output, const kv::KvCacheManager& kv);

  int64_t num_forward_tokens() const { return num_forward_tokens_; }
  // Tokens routed to each expert of each MoE layer by the steps run so far.
  const model::ExpertLoad& expert_load() const { return workspace_.expert_load(); }

 private:
  struct RequestState {
    sampling::Sampler sampler;
    int num_top_logprobs;
    int num_prompt_logprobs;
    int64_t num_prompt_logprobs_done = 0;  // survives preemption: no duplicates
    std::unique_ptr<TokenConstraints> constraints;  // null = unconstrained
  };
  // A row of logits the step computes: for sampling (the token after
  // `position`), or a prompt logprob of the token after `position`.
  struct LogitsRow {
    size_t entry;
    int64_t position;
    bool samples;
  };
  // The rows [begin, end) of one scheduled entry (consecutive in build_batch's order).
  struct EntryRows {
    size_t begin, end;
    RequestState* state;
  };
  model::ForwardBatch build_batch(const scheduler::SchedulerOutput& output,
                                  const kv::KvCacheManager& kv,
                                  std::vector<LogitsRow>& rows) const;
  void add_token(model::ForwardBatch& batch, const std::vector<int32_t>& blocks, int32_t token_id,
                 int64_t pos) const;
  // Samples and scores one entry's rows of `logits` [rows, vocab] into
  // result's entry; `thread` picks the masking scratch (a pool thread index).
  void process_entry(const scheduler::SchedulerOutput& output, const std::vector<LogitsRow>& rows,
                     const EntryRows& entry, const float* logits, int thread, StepResult& result);
  // Samples one token from `logits` [vocab]; `generated`: the output tokens before it.
  void sample_row(const scheduler::ScheduledRequest& s, RequestState& state, const float* logits,
                  std::span<const int32_t> generated, int thread, SampledToken& out);
  // Samples s's token list from its 1 + num_draft_tokens rows at `logits`.
  void sample_verified(const scheduler::ScheduledRequest& s, RequestState& state,
                       const float* logits, int thread, std::vector<SampledToken>& out);
  void prompt_logprob_row(const scheduler::ScheduledRequest& s, RequestState& state,
                          int64_t position, const float* logits,
                          std::vector<PromptLogprob>& out);

  const model::Model& model_;
  backend::KvMemoryHandle kv_memory_;
  backend::Backend& backend_;
  model::Workspace workspace_;  // the forward pass's activations, reused every step
  std::unordered_map<kv::RequestKey, RequestState> requests_;
  ThreadPool* sampling_pool_;
  // Scratch [vocab] for constrained rows, one per pool thread.
  std::vector<std::vector<float>> masked_logits_;
  int64_t num_forward_tokens_ = 0;
};

}  // namespace strata::runner
