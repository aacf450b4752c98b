// The engine's single-threaded core: one step = schedule -> execute -> update.
//
//   add_request()  tokenized prompt + sampling settings -> waiting queue
//   step()         scheduler picks this step's tokens under the budget; the
//                  runner runs one forward pass over all of them and samples;
//                  the scheduler appends tokens and finishes requests
//   abort_request() frees the request's KV blocks at once
//
// With speculative decoding (EngineConfig::speculative), after a step's
// tokens are appended each request still decoding gets the drafts its
// DraftController proposes (n-gram lookup over its prompt + output, or, with
// a draft model, that model's greedy continuation, all such requests'
// draft passes batched: runner/draft_model_proposer.h); the scheduler puts
// them in the request's next step, the runner verifies them in that one
// forward pass, and only accepted tokens become the request's.
//
// KV pool size: kv_cache_memory_bytes / bytes per block (all layers, K+V).
// Prefix-cache keys chain from a root hash over the model fingerprint, the KV
// dtype and the request's cache_salt (kv/block_hash.h).
//
// Not thread-safe: the Engine front (engine.h) owns the thread that calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/cpu_backend.h"
#include "backend/kv_memory.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "engine/types.h"
#include "events/kv_event_publisher.h"
#include "kv/kv_cache_manager.h"
#include "model/layers/expert_load.h"
#include "model/model.h"
#include "offload/transfer/offload_config.h"
#include "offload/transfer/offloading_connector.h"
#include "runner/draft_model_proposer.h"
#include "runner/model_runner.h"
#include "sampling/sampler.h"
#include "scheduler/scheduler.h"
#include "spec_decode/draft_controller.h"
#include "spec_decode/speculative_config.h"

namespace strata::engine {

struct EngineConfig {
  scheduler::SchedulerConfig scheduler;
  int64_t block_size = 16;
  int64_t kv_cache_memory_bytes = int64_t{1} << 30;
  int64_t num_blocks = 0;  // when > 0, overrides kv_cache_memory_bytes
  // The KV pool's element type (--kv-cache-dtype, resolved): it sizes the
  // pool, and it is part of every block hash and chunk namespace, so caches
  // of different dtypes never mix.
  tensor::KvCacheDtype kv_cache_dtype = tensor::KvCacheDtype::kF32;
  bool enable_prefix_caching = true;
  offload::OffloadConfig offload;  // the tiered KV cache (off unless enabled)
  // KV events for routers (--kv-events-config); null or disabled = none. The
  // engine thread publishes one batch per step that changed the caches.
  std::shared_ptr<events::KvEventPublisher> kv_events;
  // Speculative decoding (--speculative-config); off unless a method is set.
  spec_decode::SpeculativeConfig speculative;
  // Method kDraftModel: the loaded draft model (speculative.model), which
  // outlives the engine; its vocabulary must be the target's. Its KV pool
  // has draft_num_blocks blocks of block_size tokens (0: as many blocks as
  // the target's pool, so every token the target holds fits; the bytes are
  // the draft model's kv_bytes_per_block each).
  const model::Model* draft_model = nullptr;
  int64_t draft_num_blocks = 0;
};

// Tokens per engine step, as vLLM's vllm:iteration_tokens_total buckets.
inline const std::vector<int64_t>& iteration_token_buckets() {
  static const std::vector<int64_t> kBuckets = {1,   8,    16,   32,   64,   128,  256,
                                                512, 1024, 2048, 4096, 8192, 16384};
  return kBuckets;
}

// Where the engine thread's time goes, summed over all steps (seconds).
struct StepTimes {
  double schedule_s = 0;     // scheduler (and connector lookups it asks for)
  double forward_s = 0;      // model forward pass and sampling (runner)
  double update_s = 0;       // appending tokens, finishing requests, outputs, KV events
  double kv_transfer_s = 0;  // polling and submitting tier copies
};

// Speculative decoding's counters (vllm:spec_decode_*), over verify steps:
// a "draft" is one request's proposal verified in one step.
struct SpecDecodeStats {
  int64_t num_drafts = 0;
  int64_t num_draft_tokens = 0;
  int64_t num_accepted_tokens = 0;
  // [num_speculative_tokens]: drafts whose token at position i was accepted.
  std::vector<int64_t> num_accepted_tokens_per_pos;
};

struct EngineStats {
  int64_t num_steps = 0;
  int64_t num_forward_tokens = 0;        // tokens run through the model
  int64_t num_prompt_tokens_computed = 0;
  int64_t num_generation_tokens = 0;
  int64_t num_preemptions = 0;
  int64_t prefix_cache_queries = 0;      // tokens looked up
  int64_t prefix_cache_hits = 0;         // tokens found
  int64_t num_running = 0;
  int64_t num_waiting = 0;
  double kv_cache_usage = 0.0;
  // Tiered KV cache (zero without it): tokens asked of / served by the tiers,
  // prompt tokens by origin, and each tier's counters ("cpu" first).
  int64_t external_prefix_cache_queries = 0;
  int64_t external_prefix_cache_hits = 0;
  int64_t prompt_tokens_local_compute = 0;
  int64_t prompt_tokens_local_cache_hit = 0;
  int64_t prompt_tokens_external = 0;
  bool offload_enabled = false;
  offload::ConnectorStats offload;
  // Steps by tokens computed: counts[i] = steps with at most
  // iteration_token_buckets()[i] tokens (not cumulative; last = above all).
  std::vector<int64_t> iteration_tokens_counts;
  int64_t iteration_tokens_sum = 0;
  StepTimes step_times;
  bool spec_decode_enabled = false;
  SpecDecodeStats spec_decode;
  // Tokens routed to each expert of each MoE layer (empty for dense models).
  model::ExpertLoad expert_load;
};

class EngineCore {
 public:
  // Errors: a KV budget too small for one max_model_len sequence; method
  // kDraftModel without a draft model, or with another vocabulary size.
  static StatusOr<std::unique_ptr<EngineCore>> create(const model::Model& model,
                                                      const EngineConfig& config,
                                                      ThreadPool& pool);

  // Errors (nothing queued): empty or too long prompt, token ids outside the
  // vocabulary, duplicate id.
  Status add_request(EngineRequest request);
  // Returns false for unknown or finished ids; the request's output is a
  // final RequestOutput with FinishReason::kAbort in the next step().
  bool abort_request(const std::string& request_id) {
    return finish_request(request_id, FinishReason::kAbort);
  }
  // Finishes a request with `reason` (kStop when the server matched a stop
  // string, kAbort) and frees its blocks; the next step() reports it.
  bool finish_request(const std::string& request_id, FinishReason reason);

  std::vector<RequestOutput> step();
  // Requests not finished yet, or KV copies to the tiers still in flight (the
  // engine keeps stepping until they land).
  bool has_unfinished_requests() const {
    return scheduler_.has_unfinished_requests() ||
           (connector_ != nullptr && connector_->has_pending_work());
  }
  // Waits for every KV copy and tier write in flight (tests, shutdown).
  void wait_for_offload();
  EngineStats stats() const;
  int64_t num_kv_blocks() const { return kv_.pool().num_blocks(); }
  // The draft model's KV pool (0 without a draft model).
  int64_t num_draft_kv_blocks() const { return draft_ ? draft_->num_blocks() : 0; }
  const std::string& model_fingerprint() const { return extra_keys_.model_fingerprint; }
  // Drops every cached prefix from the KV pool and the host tier (secondary
  // tiers keep theirs); false while requests hold blocks.
  bool reset_prefix_cache();

 private:
  EngineCore(const model::Model& model, const EngineConfig& config, int64_t num_blocks,
             ThreadPool& pool);
  void enable_kv_events();
  void publish_kv_events();

  const model::Model& model_;
  EngineConfig config_;
  kv::KvCacheManager kv_;
  scheduler::Scheduler scheduler_;
  // The KV pool's memory lives beside its accounting (kv_); the runner and
  // the connector's transfer worker share it and the backend by handle.
  std::shared_ptr<backend::Backend> backend_;
  backend::KvMemoryHandle kv_memory_;
  runner::ModelRunner runner_;
  kv::ExtraKeys extra_keys_;
  kv::RequestKey next_key_ = 1;
  std::vector<RequestOutput> aborted_;
  // Prompt logprobs gathered over prefill chunks, until the first token.
  std::unordered_map<std::string, std::vector<PromptLogprob>> pending_prompt_logprobs_;
  // r's output without tokens: counts, and once finished its reason and the
  // connector's KV transfer params.
  RequestOutput output_for(const scheduler::Request& r) const;
  void record_step(int64_t num_tokens);
  // Counts entry i's verified drafts and feeds its controller.
  void record_verify(const scheduler::ScheduledRequest& s, size_t num_sampled);
  // Drafts for r's next step (n-gram lookup over its tokens, per its
  // controller); with a draft model, queues r in draft_queue_ instead.
  void propose_drafts(const scheduler::Request& r);
  // Runs the draft model over draft_queue_ and hands the drafts to the scheduler.
  void propose_queued_drafts();
  void forget_request(kv::RequestKey key);
  void time_outputs(std::vector<RequestOutput>& outputs);

  // Per request: when it arrived, was first scheduled and produced its first
  // token (for the queue / prefill / decode / inference histograms).
  struct RequestTimes {
    std::chrono::steady_clock::time_point arrival, scheduled, first_token;
    bool is_scheduled = false, has_first_token = false, reported_start = false;
  };
  std::unordered_map<std::string, RequestTimes> times_;
  int64_t num_steps_ = 0;
  std::vector<int64_t> iteration_tokens_counts_;
  int64_t iteration_tokens_sum_ = 0;
  StepTimes step_times_;
  // Per running request with speculation on: its draft policy.
  std::unordered_map<kv::RequestKey, spec_decode::DraftController> drafters_;
  SpecDecodeStats spec_stats_;
  // Method kDraftModel: the draft model's proposer, and this step's requests for it.
  std::unique_ptr<runner::DraftModelProposer> draft_;
  std::vector<std::pair<const scheduler::Request*, int64_t>> draft_queue_;
  // Declared last: destroyed first, while the block accounting (kv_) it
  // references still exists; the KV memory it copies is held by handle.
  std::unique_ptr<offload::OffloadingConnector> connector_;
};

// A content fingerprint of the model (architecture, shapes, dtypes and a
// sample of every tensor's bytes): equal for the same weights on any machine.
std::string model_fingerprint(const model::Model& model);

}  // namespace strata::engine
